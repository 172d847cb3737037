//! The `Tui` actor: glue between the terminal, the runtime's actors and the pure state. It owns
//! the terminal, turns inputs into [`Event`]s, runs [`update`], carries out the [`Effect`](super::state::Effect)s and
//! draws at most one frame per [`FRAME`]. It sets `State::now` before each event it applies; a
//! 100 ms tick drives the spinner and the running turn's time while busy, and ends a new
//! question's marker once its grace is over.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use actix::prelude::*;
use crossterm::event::{Event as TermEvent, EventStream};
use harness9_actors::messages::{ListTools, ServerNotice, StatusChanged, ToolEntry};
use harness9_actors::trace::WireRecord;
use harness9_actors::{ServerSupervisor, ToolRegistry};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::restore_terminal;
use super::state::{update, Event, State};
use harness9_agent::engine::{CancelTurn, Engine};
use harness9_app::watcher::{ConfigChanged, ConfigOutcome, ConfigWatcher};

mod asks;
mod conversation;
mod effects;
mod opener;
mod screen;
mod servers;
mod turn;

use asks::Replies;
use screen::{Screen, FRAME};

/// What the TUI needs from the app.
pub struct TuiSetup {
    /// The tool table.
    pub registry: Addr<ToolRegistry>,
    /// The servers (for `Restart`).
    pub supervisor: Addr<ServerSupervisor>,
    /// Reloads `.mcp.json` and approves servers; its outcomes come back as `ConfigChanged`.
    pub watcher: Addr<ConfigWatcher>,
    /// `.mcp.json` (shown, and opened in the editor).
    pub config_path: PathBuf,
    /// The config's load error at start, if any.
    pub config_error: Option<String>,
    /// Servers from another file than `config_path` (the user's), with that file.
    pub sources: Vec<(String, PathBuf)>,
    /// VS Code inputs the config needs and has no value for: asked once.
    pub inputs: Vec<harness9_app::config::input_vars::InputPrompt>,
    /// What the config files have that is ignored (`Config::warnings`): shown at start.
    pub warnings: Vec<String>,
    /// Values `/trace` must not show (the config's env and header values) at start; each
    /// reload brings the new list.
    pub secrets: Vec<String>,
    /// Wire records for `/trace`.
    pub trace: mpsc::Receiver<WireRecord>,
    /// Gets the exit code when the user quits.
    pub done: oneshot::Sender<u8>,
    /// When the process started (for the first-frame measurement).
    pub started: Instant,
    /// The engine, when a model is configured.
    pub engine: Option<Addr<Engine>>,
    /// `anthropic claude-...`, when a model is configured.
    pub model: Option<String>,
    /// How to configure a model (shown while none is).
    pub model_help: String,
    /// The session's permissions (shared with the engine): `/permissions` lists them, an
    /// "always" answer adds to them, `/call` is refused by a deny rule.
    pub policy: std::sync::Arc<harness9_agent::permissions::Policy>,
    /// What the transcript starts with: a resumed conversation and notes about it.
    pub resumed: Vec<super::state::Entry>,
    /// The model a resumed conversation was saved with, to go on with (none when the command
    /// line named one).
    pub resumed_model: Option<String>,
    /// `--resume` without an id: the saved conversations' listing, for the picker.
    pub pick: Option<harness9_app::stores::conversations::Listing>,
    /// The model's context window, when the settings know it.
    pub context_window: Option<u64>,
    /// The model settings (prices, windows), when a model is configured.
    pub settings: Option<harness9_agent::model::settings::Settings>,
    /// The model flags of the command line (`/model` resolves a new provider with them).
    pub model_flags: harness9_agent::model::settings::ModelFlags,
    /// The saved conversation's id.
    pub session_id: Option<String>,
    /// Servers the config marks disabled (shown dim).
    pub disabled: Vec<String>,
}

/// Quit as if the user asked (sent on SIGTERM/SIGHUP/SIGINT).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Quit;

/// The TUI actor.
pub struct Tui {
    state: State,
    /// The terminal and its frames.
    screen: Screen,
    registry: Addr<ToolRegistry>,
    supervisor: Addr<ServerSupervisor>,
    watcher: Addr<ConfigWatcher>,
    config_path: PathBuf,
    trace: Option<mpsc::Receiver<WireRecord>>,
    done: Option<oneshot::Sender<u8>>,
    /// The user's own calls (`/call`) running, cancelled with the turn.
    calls: Vec<(u64, CancellationToken)>,
    /// The tool table is asked for, and must be asked again once it comes.
    tools_asked: bool,
    tools_again: bool,
    engine: Option<Addr<Engine>>,
    /// The input history file and how many of `state.editor.history`'s entries are in it.
    history: Option<(PathBuf, usize)>,
    /// The session's permissions (see [`TuiSetup::policy`]).
    policy: std::sync::Arc<harness9_agent::permissions::Policy>,
    /// Where the answers to the questions on screen go.
    replies: Replies,
    /// A turn's stream is being read and has not brought its outcome yet.
    turn_open: bool,
    /// When the running turn began (by the spinner's clock).
    busy_since: Option<Instant>,
    /// The command line's model flags, as `/model` last changed them.
    model_flags: harness9_agent::model::settings::ModelFlags,
    /// A resumed conversation's model, switched to once the TUI starts.
    resumed_model: Option<String>,
}

impl Tui {
    /// A TUI for `setup`; the terminal is taken already (see [`super::take_terminal`]).
    pub fn new(setup: TuiSetup) -> Self {
        let mut state = State::new(
            setup.config_path.display().to_string(),
            setup.model,
            setup.model_help,
        );
        state.trace.secrets = setup.secrets;
        state.own_settings = setup.policy.own_settings();
        state.set_sources(setup.sources);
        super::input_vars::inputs_needed(&mut state, setup.inputs);
        super::transcript::config_warnings(&mut state, setup.warnings);
        // Debug builds only (the test binary): a release build has no `/panic` whatever the env.
        state.debug_panic = cfg!(debug_assertions)
            && std::env::var_os("HARNESS9_DEBUG_PANIC").is_some_and(|v| v == "1");
        if let Some(e) = setup.config_error {
            state
                .transcript
                .entries
                .push(super::state::Entry::Error(format!(
                    "{e}\nno servers were started; fix the file and /reload (or press e in /mcp)"
                )));
        }
        state.transcript.entries.extend(setup.resumed);
        if let Some(lines) = setup.pick {
            super::resume::open(&mut state, lines);
        }
        state.model.context_window = setup.context_window;
        state.servers.disabled = setup.disabled;
        state.model.id = setup
            .settings
            .as_ref()
            .and_then(|s| s.provider.as_ref())
            .map(|p| p.model.clone());
        state.model.settings = setup.settings.map(std::sync::Arc::new);
        state.model.session_id = setup.session_id;
        if let Ok((w, h)) = crossterm::terminal::size() {
            state.size = (w, h);
        }
        let history = super::history::path().map(|p| {
            state.editor.history = super::history::load(&p);
            let n = state.editor.history.len();
            (p, n)
        });
        Tui {
            state,
            screen: Screen::new(setup.started),
            registry: setup.registry,
            supervisor: setup.supervisor,
            watcher: setup.watcher,
            config_path: setup.config_path,
            trace: Some(setup.trace),
            done: Some(setup.done),
            calls: Vec::new(),
            tools_asked: false,
            tools_again: false,
            engine: setup.engine,
            history,
            policy: setup.policy,
            replies: Replies::default(),
            turn_open: false,
            busy_since: None,
            model_flags: setup.model_flags,
            resumed_model: setup.resumed_model,
        }
    }

    /// Appends what the input history gained to its file.
    fn save_history(&mut self) {
        let Some((path, saved)) = &mut self.history else {
            return;
        };
        let all = &self.state.editor.history;
        if all.len() <= *saved {
            return;
        }
        if let Err(e) = super::history::append(path, &all[*saved..]) {
            tracing::warn!(path = %path.display(), error = %e, "cannot save the input history");
        }
        *saved = all.len();
    }

    /// Draws the state now.
    fn draw(&mut self) {
        self.screen.draw(&self.state);
    }

    /// Draws now if the last frame is old enough, else once the frame time has passed.
    pub(super) fn schedule_draw(&mut self, ctx: &mut Context<Self>) {
        self.screen.dirty = true;
        if self.screen.frame_armed {
            return;
        }
        let since = self.screen.since_last();
        if since >= FRAME {
            self.draw();
        } else {
            self.screen.frame_armed = true;
            ctx.run_later(FRAME - since, |act, _| {
                act.screen.frame_armed = false;
                if act.screen.dirty {
                    act.draw();
                }
            });
        }
    }

    /// The one way the state changes: `update` with `event`, stamped with its time (a
    /// question that just opened ignores keys for a moment), then its effects and a frame.
    fn apply(&mut self, event: Event, ctx: &mut Context<Self>) {
        self.state.now = Instant::now();
        let effects = update(&mut self.state, event);
        self.save_history();
        for e in effects {
            self.effect(e, ctx);
        }
        self.schedule_draw(ctx);
    }

    /// Says once, in the transcript, that telemetry export is failing (the exporter's one
    /// message: the endpoint without credentials, never a header).
    fn watch_telemetry(&mut self, ctx: &mut Context<Self>) {
        let mut rx = harness9_actors::telemetry::breaker::failures();
        let failing = async move {
            let said = rx.wait_for(Option::is_some).await.ok()?;
            said.clone()
        };
        ctx.spawn(failing.into_actor(self).map(|text, act, ctx| {
            if let Some(text) = text {
                let text = harness9_base::sanitize::clean_line(&text).into_owned();
                act.notice(true, text, ctx);
            }
        }));
    }

    fn notice(&mut self, error: bool, text: String, ctx: &mut Context<Self>) {
        self.apply(Event::Notice { error, text }, ctx);
    }

    fn quit(&mut self, code: u8, ctx: &mut Context<Self>) {
        // Unanswered questions are declined (their senders dropped).
        self.replies.clear();
        for (_, c) in self.calls.drain(..) {
            c.cancel();
        }
        if let Some(engine) = &self.engine {
            engine.do_send(CancelTurn);
        }
        self.screen.close();
        restore_terminal();
        if let Some(done) = self.done.take() {
            let _ = done.send(code);
        }
        ctx.stop();
    }

    fn ask_tools(&mut self, ctx: &mut Context<Self>) {
        if self.tools_asked {
            self.tools_again = true;
            return;
        }
        self.tools_asked = true;
        self.registry
            .send(ListTools)
            .into_actor(self)
            .then(
                |r: Result<std::sync::Arc<Vec<ToolEntry>>, MailboxError>, act, ctx| {
                    act.tools_asked = false;
                    if let Ok(tools) = r {
                        act.apply(Event::Tools(tools), ctx);
                    }
                    if std::mem::take(&mut act.tools_again) {
                        act.ask_tools(ctx);
                    }
                    fut::ready(())
                },
            )
            .spawn(ctx);
    }
}

impl Actor for Tui {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        match self.screen.open() {
            Ok(()) => {}
            Err(e) => {
                tracing::error!("cannot open the terminal: {e}");
                self.quit(1, ctx);
                return;
            }
        }
        if let Some(m) = self.resumed_model.take().filter(|m| !self.uses_model(m)) {
            self.set_model(&m, ctx);
        }
        self.draw();
        // The spinner and the running turn's elapsed time: a tick only matters while busy.
        ctx.run_interval(Duration::from_millis(100), |act, ctx| {
            // A new question's marker goes once its grace is over (the tick's own time,
            // stamped by `apply`, ends it).
            let marked = super::guard::is_new(&act.state);
            if !act.state.turn.busy {
                act.busy_since = None;
                if marked || act.state.turn.busy_secs != 0 {
                    act.apply(Event::Tick(None), ctx);
                }
                return;
            }
            let since = *act.busy_since.get_or_insert_with(Instant::now);
            act.apply(Event::Tick(Some(since.elapsed().as_secs())), ctx);
        });
        ctx.add_stream(EventStream::new());
        if let Some(mut rx) = self.trace.take() {
            ctx.add_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        }
        self.ask_tools(ctx);
        self.watch_telemetry(ctx);
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        restore_terminal();
        if let Some(done) = self.done.take() {
            let _ = done.send(1);
        }
    }
}

impl StreamHandler<std::io::Result<TermEvent>> for Tui {
    fn handle(&mut self, item: std::io::Result<TermEvent>, ctx: &mut Context<Self>) {
        let event = match item {
            Ok(TermEvent::Key(k)) => Event::Key(k),
            Ok(TermEvent::Paste(p)) => Event::Paste(p),
            Ok(TermEvent::Resize(w, h)) => {
                self.screen.resized();
                Event::Resize(w, h)
            }
            Ok(_) => return,
            Err(e) => {
                tracing::error!("terminal input failed: {e}");
                return;
            }
        };
        self.apply(event, ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        tracing::warn!("terminal input ended");
    }
}

impl StreamHandler<WireRecord> for Tui {
    fn handle(&mut self, item: WireRecord, ctx: &mut Context<Self>) {
        self.apply(Event::Trace(item), ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl Handler<ServerNotice> for Tui {
    type Result = ();

    fn handle(&mut self, msg: ServerNotice, ctx: &mut Context<Self>) {
        self.apply(Event::ServerNotice(msg), ctx);
    }
}

impl Handler<StatusChanged> for Tui {
    type Result = ();

    fn handle(&mut self, msg: StatusChanged, ctx: &mut Context<Self>) {
        self.apply(Event::Status(msg.snapshot), ctx);
        self.ask_tools(ctx);
    }
}

impl Handler<ConfigChanged> for Tui {
    type Result = ();

    fn handle(&mut self, ConfigChanged(outcome): ConfigChanged, ctx: &mut Context<Self>) {
        let (error, text) = match outcome {
            ConfigOutcome::Reloaded {
                path,
                summary,
                secrets,
                sources,
                inputs,
                disabled,
                warnings,
            } => {
                self.apply(
                    Event::ConfigReloaded {
                        secrets,
                        sources,
                        disabled,
                        inputs,
                    },
                    ctx,
                );
                self.notice(false, format!("reloaded {path}: {summary}"), ctx);
                self.apply(Event::ConfigWarnings(warnings), ctx);
                return;
            }
            ConfigOutcome::Invalid(e) => (
                true,
                format!("{e}\nthe running servers are kept; fix the file and it reloads by itself"),
            ),
            ConfigOutcome::ReconcileFailed(e) => (true, format!("cannot reload: {e}")),
            ConfigOutcome::Approved(done) => {
                let names: Vec<String> = done.iter().map(|n| format!("{n:?}")).collect();
                (false, format!("approved {}", names.join(", ")))
            }
            ConfigOutcome::ApprovalStale => (
                true,
                "a server changed in .mcp.json since it was shown; review it again".to_owned(),
            ),
            ConfigOutcome::ApprovalFailed(e) => (true, format!("cannot approve: {e}")),
        };
        self.notice(error, text, ctx);
    }
}

impl Handler<Quit> for Tui {
    type Result = ();

    fn handle(&mut self, _msg: Quit, ctx: &mut Context<Self>) {
        self.quit(130, ctx);
    }
}
