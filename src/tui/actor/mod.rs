//! The `Tui` actor: glue between the terminal, the runtime's actors and the pure state. It owns
//! the terminal, turns inputs into [`Event`]s, runs [`update`], carries out the [`Effect`]s and
//! draws at most one frame per [`FRAME`]. It sets `State::now` before each event it applies; a
//! 100 ms tick drives the spinner and the running turn's time while busy, and ends a new
//! question's marker once its grace is over.

use std::io::Stdout;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use actix::prelude::*;
use crossterm::event::{Event as TermEvent, EventStream};
use futures_util::StreamExt as _;
use harness9_actors::messages::{
    CallTool, Complete, CompletionRef, GetPrompt, ListPrompts, ListResourceTemplates,
    ListResources, ListTools, Login, ProgressSink, Restart, ServerNotice, StatusChanged,
    SubscribeResource, ToolEntry, ToolProgress,
};
use harness9_actors::trace::WireRecord;
use harness9_actors::{ServerSupervisor, ToolRegistry};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::state::{update, Effect, Event, State};
use super::{restore_terminal, take_terminal, EDITOR_RUNNING};
use harness9_agent::engine::{
    turn_stream, Answer, CancelTurn, ClearConversation, Compact, DisableTools, Engine, EngineError,
    ResumeConversation, RunTurn, SetProvider, TurnEvent, TurnOutcome,
};
use harness9_app::asks::{Question, UserAsk};
use harness9_app::watcher::{
    ApproveServers, ConfigChanged, ConfigOutcome, ConfigWatcher, ReloadConfig,
};

mod conversation;
mod opener;
mod servers;

/// Shortest time between two frames.
const FRAME: Duration = Duration::from_millis(16);

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
    pub inputs: Vec<harness9_app::input_vars::InputPrompt>,
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
    pub pick: Option<harness9_app::conversations::Listing>,
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

/// An item of a turn's stream, and the stream's end.
enum TurnItem {
    Event(TurnEvent),
    Ended,
}

/// The summary line of a turn that ended with an answer.
fn summary(o: &TurnOutcome) -> String {
    format!(
        "{} model call{} · {} · {} tokens in{}, {} out",
        o.steps,
        if o.steps == 1 { "" } else { "s" },
        harness9_actors::error::fmt_duration(o.elapsed),
        o.usage.input_tokens,
        match o.usage.cached_input_tokens {
            0 => String::new(),
            c => format!(" ({c} cached)"),
        },
        o.usage.output_tokens
    )
}

/// Quit as if the user asked (sent on SIGTERM/SIGHUP/SIGINT).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Quit;

/// The TUI actor.
pub struct Tui {
    state: State,
    terminal: Option<Terminal<CrosstermBackend<Stdout>>>,
    registry: Addr<ToolRegistry>,
    supervisor: Addr<ServerSupervisor>,
    watcher: Addr<ConfigWatcher>,
    config_path: PathBuf,
    trace: Option<mpsc::Receiver<WireRecord>>,
    done: Option<oneshot::Sender<u8>>,
    started: Instant,
    first_frame: bool,
    dirty: bool,
    frame_armed: bool,
    last_frame: Instant,
    calls: Vec<(u64, CancellationToken)>,
    tools_asked: bool,
    tools_again: bool,
    engine: Option<Addr<Engine>>,
    /// The input history file and how many of `state.editor.history`'s entries are in it.
    history: Option<(PathBuf, usize)>,
    /// The session's permissions (see [`TuiSetup::policy`]).
    policy: std::sync::Arc<harness9_agent::permissions::Policy>,
    /// The engine's questions waiting for the user, by key.
    asks: std::collections::HashMap<u64, oneshot::Sender<Answer>>,
    next_ask: u64,
    /// A turn's stream is being read and has not brought its outcome yet.
    turn_open: bool,
    /// When the running turn began (by the spinner's clock).
    busy_since: Option<Instant>,
    /// The command line's model flags, as `/model` last changed them.
    model_flags: harness9_agent::model::settings::ModelFlags,
    /// A resumed conversation's model, switched to once the TUI starts.
    resumed_model: Option<String>,
    /// Servers' questions waiting for the user, by key (see [`UserAsk`]).
    user_asks: std::collections::HashMap<u64, AskReply>,
}

/// Where the answer to a server's question goes.
enum AskReply {
    Elicit(oneshot::Sender<serde_json::Value>),
    Sample(oneshot::Sender<bool>),
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
            terminal: None,
            registry: setup.registry,
            supervisor: setup.supervisor,
            watcher: setup.watcher,
            config_path: setup.config_path,
            trace: Some(setup.trace),
            done: Some(setup.done),
            started: setup.started,
            first_frame: true,
            dirty: true,
            frame_armed: false,
            last_frame: Instant::now(),
            calls: Vec::new(),
            tools_asked: false,
            tools_again: false,
            engine: setup.engine,
            history,
            policy: setup.policy,
            asks: Default::default(),
            next_ask: 0,
            turn_open: false,
            busy_since: None,
            model_flags: setup.model_flags,
            resumed_model: setup.resumed_model,
            user_asks: Default::default(),
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

    fn draw(&mut self) {
        self.dirty = false;
        self.last_frame = Instant::now();
        let Some(t) = self.terminal.as_mut() else {
            return;
        };
        let state = &self.state;
        if let Err(e) = t.draw(|f| super::view::view(state, f)) {
            tracing::error!("cannot draw: {e}");
        }
        if self.first_frame {
            self.first_frame = false;
            tracing::info!(
                target: "harness9::tui",
                elapsed_ms = self.started.elapsed().as_secs_f64() * 1000.0,
                "first frame drawn"
            );
        }
    }

    /// Saves an "always" answer's rule for the project (the engine has already taken it for
    /// this session); says where, or why it could not be saved.
    fn remember(&mut self, rule: &str, ctx: &mut Context<Self>) {
        use harness9_app::permission_store as store;
        let file = store::path();
        let text = match store::remember(&file, &self.policy.place.root, rule) {
            Ok(()) => format!(
                "\"{rule}\" runs without asking in this project from now on (saved in {}; /permissions lists and forgets it)",
                file.display()
            ),
            Err(e) => format!("\"{rule}\" is allowed for this session only: {e:#}"),
        };
        self.notice(false, text, ctx);
    }

    /// Starts a turn on `prompt` (and what follows it in the user's message).
    fn submit(
        &mut self,
        prompt: String,
        attachments: Vec<harness9_agent::model::Block>,
        ctx: &mut Context<Self>,
    ) {
        let Some(engine) = self.engine.clone() else {
            self.apply(Event::TurnNotStarted, ctx);
            return;
        };
        let (events, rx) = turn_stream();
        engine.do_send(RunTurn {
            prompt,
            attachments,
            events,
            can_ask: true,
        });
        // The turn's one ordered stream; its end without an outcome means the engine is gone.
        self.turn_open = true;
        let mut rx = rx;
        let items = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
            .map(TurnItem::Event)
            .chain(futures_util::stream::once(async { TurnItem::Ended }));
        ctx.add_stream(items);
    }

    /// Draws now if the last frame is old enough, else once the frame time has passed.
    pub(super) fn schedule_draw(&mut self, ctx: &mut Context<Self>) {
        self.dirty = true;
        if self.frame_armed {
            return;
        }
        let since = self.last_frame.elapsed();
        if since >= FRAME {
            self.draw();
        } else {
            self.frame_armed = true;
            ctx.run_later(FRAME - since, |act, _| {
                act.frame_armed = false;
                if act.dirty {
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

    fn effect(&mut self, effect: Effect, ctx: &mut Context<Self>) {
        match effect {
            Effect::Quit => self.quit(0, ctx),
            Effect::Login(server) => {
                self.supervisor.do_send(Login(server.clone()));
            }
            Effect::Restart(server) => {
                self.supervisor.do_send(Restart(server.clone()));
                self.notice(false, format!("restarting server \"{server}\""), ctx);
            }
            Effect::Reload => self.watcher.do_send(ReloadConfig { forced: true }),
            Effect::SaveInput { file, id, value } => {
                let store = harness9_app::input_vars::store_path();
                match harness9_app::input_vars::save(&store, &file, &id, &value) {
                    Ok(()) => {
                        let text = format!("input \"{id}\" kept in {}", store.display());
                        self.notice(false, text, ctx);
                        self.watcher.do_send(ReloadConfig { forced: true });
                    }
                    Err(e) => self.notice(true, e, ctx),
                }
            }
            Effect::OpenEditor => self.open_editor(ctx),
            Effect::ClearConversation => {
                if let Some(engine) = &self.engine {
                    engine.do_send(ClearConversation);
                }
            }
            Effect::Resume(id) => self.resume(id, ctx),
            Effect::SetModel(spec) => self.set_model(&spec, ctx),
            Effect::DisableTools(set) => {
                if let Some(engine) = &self.engine {
                    engine.do_send(DisableTools(set));
                }
            }
            Effect::Compact(focus) => {
                let Some(engine) = self.engine.clone() else {
                    return;
                };
                let focus = (!focus.is_empty()).then_some(focus);
                ctx.spawn(
                    engine
                        .send(Compact { focus })
                        .into_actor(self)
                        .map(|r, act, ctx| {
                            let done = match r {
                                Ok(r) => r.map_err(|e| e.to_string()),
                                Err(_) => Err("the engine is gone".to_owned()),
                            };
                            act.apply(Event::CompactDone(done), ctx);
                        }),
                );
            }
            Effect::CancelTurn => {
                for (_, c) in self.calls.drain(..) {
                    c.cancel();
                }
                // The tool questions' senders are kept (see `approvals::cancel_all`): an
                // answer, even a no, could reach the engine before this cancel and let the
                // turn go on to the model.
                match &self.engine {
                    Some(engine) => engine.do_send(CancelTurn),
                    None => self.asks.clear(),
                }
            }
            Effect::Submit(prompt) => self.submit(prompt, Vec::new(), ctx),
            Effect::SubmitWith {
                prompt,
                attachments,
            } => self.submit(prompt, attachments, ctx),

            Effect::Answer { key, answer } => {
                if let Answer::Always(rule) = &answer {
                    self.remember(rule, ctx);
                }
                if let Some(tx) = self.asks.remove(&key) {
                    let _ = tx.send(answer);
                }
            }
            Effect::ListSkills => {
                self.registry
                    .send(harness9_actors::messages::GetSkills)
                    .into_actor(self)
                    .then(|r, act, ctx| {
                        if let Ok(listings) = r {
                            act.apply(Event::Skills(listings), ctx);
                        }
                        fut::ready(())
                    })
                    .spawn(ctx);
            }
            Effect::CancelTask { server, task_id } => self.cancel_task(server, task_id, ctx),
            Effect::ListPermissions => {
                let rules = self.policy.rules.all();
                self.apply(Event::Permissions(rules), ctx);
            }
            Effect::ForgetRule(text) => {
                use harness9_agent::permissions::Kind;
                use harness9_app::permission_store as store;
                self.policy.rules.forget(Kind::Allow, &text);
                let note = match store::forget(&store::path(), &self.policy.place.root, &text) {
                    Ok(()) => Event::Notice {
                        error: false,
                        text: format!("forgot \"{text}\": it asks again"),
                    },
                    Err(e) => Event::Notice {
                        error: true,
                        text: format!("{e:#}"),
                    },
                };
                self.apply(note, ctx);
                let rules = self.policy.rules.all();
                self.apply(Event::Permissions(rules), ctx);
            }
            Effect::AnswerAsk { key, answer } => {
                use super::state::AskAnswer;
                match (self.user_asks.remove(&key), answer) {
                    (Some(AskReply::Elicit(tx)), AskAnswer::Elicit(v)) => {
                        let _ = tx.send(v);
                    }
                    (Some(AskReply::Sample(tx)), AskAnswer::Sample(yes)) => {
                        let _ = tx.send(yes);
                    }
                    _ => {}
                }
            }
            Effect::OpenUrl(url) => {
                let text = match harness9_actors::opener::open_url(&url, None, true) {
                    Ok((opener, opened)) => (false, format!("opened {opened} with {opener}")),
                    Err(e) => (true, e),
                };
                self.notice(text.0, text.1, ctx);
            }
            Effect::Panic => panic!("/panic: a deliberate panic (HARNESS9_DEBUG_PANIC=1)"),
            Effect::ApproveServers(servers) => self.watcher.do_send(ApproveServers(servers)),
            e @ (Effect::CallTool { .. }
            | Effect::SubmitWithResources { .. }
            | Effect::LoadPrompts(..)
            | Effect::CompleteArgument { .. }
            | Effect::CompleteTemplate { .. }
            | Effect::GetPrompt { .. }
            | Effect::Subscribe { .. }
            | Effect::LoadResources(..)) => self.server_effect(e, ctx),
        }
    }

    fn quit(&mut self, code: u8, ctx: &mut Context<Self>) {
        // Unanswered questions are declined (their senders dropped).
        self.asks.clear();
        self.user_asks.clear();
        for (_, c) in self.calls.drain(..) {
            c.cancel();
        }
        if let Some(engine) = &self.engine {
            engine.do_send(CancelTurn);
        }
        self.terminal = None;
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

impl Handler<UserAsk> for Tui {
    type Result = ();

    fn handle(&mut self, msg: UserAsk, ctx: &mut Context<Self>) {
        let key = self.next_ask;
        self.next_ask += 1;
        let (ask, reply) = match msg.question {
            Question::Elicit { params, answer } => (
                super::elicit::elicitation(key, msg.server, &params),
                AskReply::Elicit(self.forward(key, answer, ctx)),
            ),
            Question::Sample {
                sampling,
                model,
                answer,
            } => (
                super::state::PendingAsk {
                    key,
                    server: msg.server,
                    kind: super::state::AskKind::Sampling { sampling, model },
                },
                AskReply::Sample(self.forward(key, answer, ctx)),
            ),
        };
        self.user_asks.insert(key, reply);
        self.apply(Event::Asked(ask), ctx);
    }
}

impl Tui {
    /// A sender whose answer goes on to `real`; when the server stops waiting first (`real`
    /// closes), the question is withdrawn from the screen.
    fn forward<T: Send + 'static>(
        &mut self,
        key: u64,
        mut real: oneshot::Sender<T>,
        ctx: &mut Context<Self>,
    ) -> oneshot::Sender<T> {
        let (tx, rx) = oneshot::channel();
        ctx.spawn(
            async move {
                let got = tokio::select! {
                    v = rx => Some(v),
                    _ = real.closed() => None,
                };
                match got {
                    Some(Ok(v)) => {
                        let _ = real.send(v);
                        false
                    }
                    Some(Err(_)) => false,
                    None => true,
                }
            }
            .into_actor(self)
            .map(move |withdrawn, act, ctx| {
                if withdrawn {
                    act.user_asks.remove(&key);
                    act.apply(Event::AskWithdrawn(key), ctx);
                }
            }),
        );
        tx
    }
}

impl Actor for Tui {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
            Ok(t) => self.terminal = Some(t),
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
                if let Some(t) = self.terminal.as_mut() {
                    let _ = t.autoresize();
                }
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

impl StreamHandler<TurnItem> for Tui {
    fn handle(&mut self, item: TurnItem, ctx: &mut Context<Self>) {
        match item {
            TurnItem::Event(TurnEvent::Update(e)) => self.apply(Event::Engine(e), ctx),
            TurnItem::Event(TurnEvent::Ask(q)) => {
                let key = self.next_ask;
                self.next_ask += 1;
                self.asks.insert(key, q.answer);
                // A question of a turn being cancelled is never shown: the cancel ends it.
                if self.state.turn.cancelling {
                    return;
                }
                let mut a = super::state::Approval::new(key, q.name, q.arguments.to_string());
                a.tool_rule = harness9_agent::permissions::tool_rule(
                    &a.name,
                    q.server.as_deref(),
                    &q.arguments,
                );
                a.call = Some(q.id);
                a.server = q.server;
                a.rule = q.rule;
                self.apply(Event::ApprovalAsked(a), ctx);
            }
            TurnItem::Event(TurnEvent::Done(r)) => {
                self.turn_open = false;
                // The questions a cancel left unanswered: the turn has ended them.
                self.asks.clear();
                let done = r.as_ref().map(summary).map_err(EngineError::to_string);
                self.apply(Event::TurnDone(done), ctx);
            }
            TurnItem::Ended => {
                self.asks.clear();
                if std::mem::take(&mut self.turn_open) {
                    self.apply(Event::TurnDone(Err("the engine stopped".to_owned())), ctx);
                }
            }
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
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
