//! The interactive session: `harness9` with no subcommand. The [`Tui`] actor owns the terminal
//! on its own arbiter; it takes crossterm's `EventStream`, status snapshots and wire records as
//! streams and messages, runs the pure [`state::update`], and draws with the pure [`view::view`].
//! Both dispatch to one module per feature (input, transcript, slash commands, questions about
//! tool calls, the `/mcp` panel, `/trace`, the trust screen), each holding its state types, its
//! keys and its drawing.
#![warn(missing_docs)]

mod actor;
mod approvals;
mod commands;
mod diff;
mod editor;
mod elicit;
mod guard;
pub mod history;
mod input_vars;
mod markdown;
mod mentions;
mod overview;
mod panel;
mod permissions;
mod prompts;
mod resume;
mod server_view;
pub mod state;
pub mod tasks;
mod tool_sizes;
mod trace;
mod transcript;
mod trust;
pub mod view;
mod widgets;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use anyhow::Context as _;
use harness9_actors::messages::Subscribe;
use tokio::sync::{mpsc, oneshot};

pub use actor::{Quit, Tui, TuiSetup};

use harness9_agent::model::settings::how_to_configure;
use harness9_app::config;
use harness9_app::watcher::SubscribeConfig;
use harness9_app::{Session, SessionOptions, Start};

/// Set while the terminal is in raw mode on the alternate screen: the panic hook restores it.
static TERMINAL_TAKEN: AtomicBool = AtomicBool::new(false);
/// Set while `$EDITOR` runs: SIGINT then belongs to the editor.
static EDITOR_RUNNING: AtomicBool = AtomicBool::new(false);

/// Puts the terminal into raw mode on the alternate screen, with bracketed paste.
pub fn take_terminal() -> std::io::Result<()> {
    crossterm::terminal::enable_raw_mode()?;
    TERMINAL_TAKEN.store(true, Ordering::SeqCst);
    crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::EnterAlternateScreen,
        crossterm::event::EnableBracketedPaste
    )
}

/// Gives the terminal back as it was (idempotent; safe from a panic hook).
pub fn restore_terminal() {
    if TERMINAL_TAKEN.swap(false, Ordering::SeqCst) {
        let mut out = std::io::stdout();
        let _ = crossterm::execute!(
            out,
            crossterm::event::DisableBracketedPaste,
            crossterm::terminal::LeaveAlternateScreen,
            crossterm::cursor::Show
        );
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = out.flush();
    }
}

/// Runs the interactive session until the user quits; every child is gone when it returns.
pub async fn run(opts: &SessionOptions, started: std::time::Instant) -> anyhow::Result<ExitCode> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        anyhow::bail!(
            "the interactive session needs a terminal; for scripts use `harness9 mcp list|get|call` or `harness9 run -p`"
        );
    }
    let settings = opts.model_settings();
    let (cfg, config_error) = load_config(opts);
    let (wire, trace_rx) = mpsc::channel(harness9_actors::trace::TAP_CAPACITY);
    let root = std::env::current_dir().context("cannot read the working directory")?;
    // A malformed rule stops the start, naming its file and line (or flag).
    let (policy, ignored_rules) = opts.policy(&root)?;
    let start = Start {
        wire: Some(wire),
        watch: true,
        builtins: true,
        // Quitting the TUI gives every server its own grace.
        shutdown_grace: None,
        interactive: true,
        // The first turn carries every server's cached tools without waiting for any.
        offer_cached: true,
        policy: Some(policy.clone()),
    };
    let session = Session::start(opts, &cfg, cfg.servers.clone(), start)?;
    let model = ModelPart::start(opts, &session, settings, &policy, &root);
    // Every way out of the session closes it: its actors must not outlive the runtime.
    let Some(watcher) = session.watcher.clone() else {
        session.close().await;
        anyhow::bail!("the session started without its config watcher");
    };
    let (done_tx, done_rx) = oneshot::channel();
    let warnings = start_warnings(opts, ignored_rules, &policy, &cfg);
    let setup = TuiSetup {
        registry: session.runtime.registry.clone(),
        supervisor: session.runtime.supervisor.clone(),
        watcher: watcher.clone(),
        config_path: opts.config_path.clone(),
        config_error,
        secrets: cfg.secrets.clone(),
        sources: cfg.sources.clone(),
        inputs: cfg.inputs.clone(),
        warnings,
        trace: trace_rx,
        done: done_tx,
        started,
        engine: model.engine,
        model: model.name,
        model_help: model.help,
        policy,
        resumed: model.resumed,
        resumed_model: model.resumed_model,
        pick: model.pick,
        context_window: model.context_window,
        settings: model.settings,
        model_flags: opts.model.clone(),
        session_id: model.session_id,
        disabled: cfg.disabled.clone(),
    };
    if let Err(e) = take_terminal().context("cannot set up the terminal") {
        session.close().await;
        return Err(e);
    }
    let arbiter = Arbiter::new();
    let tui = Tui::start_in_arbiter(&arbiter.handle(), move |_| Tui::new(setup));
    subscribe(&session, &watcher, &tui);
    let code = tokio::select! {
        code = done_rx => code.unwrap_or(1),
        _ = signalled(&tui) => 130,
    };
    restore_terminal();
    // The TUI's addresses go first, so the servers' actors and the trace writer can end.
    arbiter.stop();
    session.close().await;
    Ok(ExitCode::from(code))
}

/// The config, or an empty one and its error: an invalid config still opens the session (with
/// no servers) and shows the error. A project config's unapproved servers are held: the trust
/// screen asks about them.
fn load_config(opts: &SessionOptions) -> (config::Config, Option<String>) {
    match opts.load_config() {
        Ok(c) => (c, None),
        Err(e) => (
            config::Config {
                path: opts.config_path.clone(),
                ..Default::default()
            },
            Some(format!("{e:#}")),
        ),
    }
}

/// What the transcript warns about at start: the runtime's settings, ignored and unmatched
/// rules, the config's ignored parts, and bypass mode.
fn start_warnings(
    opts: &SessionOptions,
    ignored_rules: Vec<String>,
    policy: &harness9_agent::permissions::Policy,
    cfg: &config::Config,
) -> Vec<String> {
    [
        opts.runtime.warnings.clone(),
        ignored_rules,
        harness9_app::SessionOptions::unmatched_rules(policy, cfg),
        cfg.warnings.clone(),
        (policy.mode == harness9_agent::permissions::Mode::Bypass)
            .then(|| "permission mode bypass (--yes): every tool call runs without asking; only deny rules still refuse".to_owned())
            .into_iter()
            .collect(),
    ]
    .concat()
}

/// The model's side of the session: the engine (when a model is configured) and what the TUI
/// starts with about it.
#[derive(Default)]
struct ModelPart {
    engine: Option<Addr<harness9_agent::engine::Engine>>,
    /// `anthropic claude-...`.
    name: Option<String>,
    /// How to configure a model (while none is).
    help: String,
    /// The settings, when they name a provider.
    settings: Option<harness9_agent::model::settings::Settings>,
    context_window: Option<u64>,
    /// The resumed conversation's entries and notes (or why it could not be read).
    resumed: Vec<state::Entry>,
    session_id: Option<String>,
    /// The model the resumed conversation was saved with, when the command line named none.
    resumed_model: Option<String>,
    /// `--resume` without an id: the picker opens on these.
    pick: Option<harness9_app::stores::conversations::Listing>,
}

impl ModelPart {
    /// Starts the engine on the settings' provider, with the conversation to resume; without
    /// a provider (or with bad settings) no engine, and how to configure one.
    fn start(
        opts: &SessionOptions,
        session: &Session,
        settings: Result<
            harness9_agent::model::settings::Settings,
            harness9_agent::model::settings::SettingsError,
        >,
        policy: &std::sync::Arc<harness9_agent::permissions::Policy>,
        root: &std::path::Path,
    ) -> Self {
        let mut part = ModelPart {
            settings: settings
                .as_ref()
                .ok()
                .filter(|s| s.provider.is_some())
                .cloned(),
            ..Default::default()
        };
        let s = match settings {
            Ok(s) => s,
            Err(e) => {
                part.help = format!("{e}\n{}", how_to_configure());
                return part;
            }
        };
        let Some(p) = s.provider.clone() else {
            part.help = how_to_configure().to_owned();
            return part;
        };
        part.name = Some(format!("{} {}", p.kind, p.model));
        let mut ecfg = session.engine_config(s.max_steps, s.tool_output_budget_tokens);
        ecfg.context_window = s.context_window(&p.model);
        ecfg.compact_at = s.compact_at;
        ecfg.policy = policy.clone();
        ecfg.tool_search = s.tool_search.clone();
        part.context_window = ecfg.context_window;
        let saved = part.resume(opts, session, &p.model);
        if opts.resume == harness9_app::stores::conversations::Resume::Pick {
            part.pick = Some(harness9_app::stores::conversations::listing(
                &harness9_app::stores::conversations::dir(),
                root,
                50,
            ));
        }
        part.engine = Some(session.engine(p, ecfg, saved).start());
        part
    }

    /// The conversation to go on with (`--resume`, else a new one), its entries taken in.
    fn resume(
        &mut self,
        opts: &SessionOptions,
        session: &Session,
        model: &str,
    ) -> Option<harness9_app::stores::conversations::Opened> {
        match session.conversation(&opts.resume, model) {
            Ok(o) => {
                self.session_id = Some(o.file.id.clone());
                if opts.model.model.is_none() && opts.model.provider.is_none() {
                    self.resumed_model = o.model.clone();
                }
                self.resumed = state::entries_of(&o.messages);
                self.resumed.extend(o.note.clone().map(state::Entry::Info));
                Some(o)
            }
            Err(e) => {
                self.resumed.push(state::Entry::Error(e));
                None
            }
        }
    }
}

/// The TUI hears from the supervisor (statuses, notices) and the watcher, and is asked the
/// servers' questions (elicitation, sampling) from now on.
fn subscribe(
    session: &Session,
    watcher: &Addr<harness9_app::watcher::ConfigWatcher>,
    tui: &Addr<Tui>,
) {
    session
        .runtime
        .supervisor
        .do_send(Subscribe(tui.clone().recipient()));
    session
        .runtime
        .supervisor
        .do_send(harness9_actors::messages::SubscribeNotices(
            tui.clone().recipient(),
        ));
    watcher.do_send(SubscribeConfig(tui.clone().recipient()));
    session
        .desk
        .do_send(harness9_app::asks::SetUser(tui.clone().recipient()));
}

/// Resolves on SIGTERM or SIGHUP, or on SIGINT while no editor runs; asks the TUI to quit first.
async fn signalled(tui: &Addr<Tui>) {
    use harness9_platform::signal::{Stop, StopSignals};
    let Ok(mut signals) = StopSignals::new() else {
        return std::future::pending().await;
    };
    loop {
        match signals.recv().await {
            Stop::Terminate | Stop::Hangup => break,
            Stop::Interrupt => {
                if !EDITOR_RUNNING.load(Ordering::SeqCst) {
                    break;
                }
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), tui.send(Quit)).await;
}

#[cfg(test)]
mod tests;
