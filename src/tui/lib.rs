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
    // An invalid config still opens the session (with no servers) and shows the error. A
    // project config's unapproved servers are held: the trust screen asks about them.
    let (cfg, config_error) = match opts.load_config() {
        Ok(c) => (c, None),
        Err(e) => (
            config::Config {
                path: opts.config_path.clone(),
                ..Default::default()
            },
            Some(format!("{e:#}")),
        ),
    };
    let (wire, trace_rx) = mpsc::channel(harness9_actors::trace::TAP_CAPACITY);
    let start = Start {
        wire: Some(wire),
        watch: true,
        builtins: true,
        // Quitting the TUI gives every server its own grace.
        shutdown_grace: None,
        interactive: true,
        // The first turn carries every server's cached tools without waiting for any.
        offer_cached: true,
        policy: None,
    };
    let root = std::env::current_dir().context("cannot read the working directory")?;
    // A malformed rule stops the start, naming its file and line (or flag).
    let (policy, ignored_rules) = opts.policy(&root)?;
    let start = Start {
        policy: Some(policy.clone()),
        ..start
    };
    let session = Session::start(opts, &cfg, cfg.servers.clone(), start)?;
    let mut resumed = Vec::new();
    let mut context_window = None;
    let mut session_id = None;
    let mut resumed_model = None;
    // `--resume` without an id: the picker opens on these.
    let mut pick = None;
    let settings_kept = settings
        .as_ref()
        .ok()
        .filter(|s| s.provider.is_some())
        .cloned();
    let (engine, model, model_help) = match settings {
        Ok(s) => match s.provider.clone() {
            Some(p) => {
                let name = format!("{} {}", p.kind, p.model);
                let mut ecfg = session.engine_config(s.max_steps, s.tool_output_budget_tokens);
                ecfg.context_window = s.context_window(&p.model);
                ecfg.compact_at = s.compact_at;
                ecfg.policy = policy.clone();
                ecfg.tool_search = s.tool_search.clone();
                context_window = ecfg.context_window;
                let saved = match session.conversation(&opts.resume, &p.model) {
                    Ok(o) => {
                        session_id = Some(o.file.id.clone());
                        if opts.model.model.is_none() && opts.model.provider.is_none() {
                            resumed_model = o.model.clone();
                        }
                        resumed = state::entries_of(&o.messages);
                        resumed.extend(o.note.clone().map(state::Entry::Info));
                        Some(o)
                    }
                    Err(e) => {
                        resumed.push(state::Entry::Error(e));
                        None
                    }
                };
                if opts.resume == harness9_app::stores::conversations::Resume::Pick {
                    pick = Some(harness9_app::stores::conversations::listing(
                        &harness9_app::stores::conversations::dir(),
                        &root,
                        50,
                    ));
                }
                (
                    Some(session.engine(p, ecfg, saved).start()),
                    Some(name),
                    String::new(),
                )
            }
            None => (None, None, how_to_configure().to_owned()),
        },
        Err(e) => (None, None, format!("{e}\n{}", how_to_configure())),
    };
    // Every way out of the session closes it: its actors must not outlive the runtime.
    let Some(watcher) = session.watcher.clone() else {
        session.close().await;
        anyhow::bail!("the session started without its config watcher");
    };
    let (done_tx, done_rx) = oneshot::channel();
    let setup = TuiSetup {
        registry: session.runtime.registry.clone(),
        supervisor: session.runtime.supervisor.clone(),
        watcher: watcher.clone(),
        config_path: opts.config_path.clone(),
        config_error,
        secrets: cfg.secrets.clone(),
        sources: cfg.sources.clone(),
        inputs: cfg.inputs.clone(),
        warnings: [
            opts.runtime.warnings.clone(),
            ignored_rules,
            harness9_app::SessionOptions::unmatched_rules(&policy, &cfg),
            cfg.warnings.clone(),
            (policy.mode == harness9_agent::permissions::Mode::Bypass)
                .then(|| "permission mode bypass (--yes): every tool call runs without asking; only deny rules still refuse".to_owned())
                .into_iter()
                .collect(),
        ]
        .concat(),
        trace: trace_rx,
        done: done_tx,
        started,
        engine,
        model,
        model_help,
        policy,
        resumed,
        resumed_model,
        pick,
        context_window,
        settings: settings_kept,
        model_flags: opts.model.clone(),
        session_id,
        disabled: cfg.disabled.clone(),
    };
    if let Err(e) = take_terminal().context("cannot set up the terminal") {
        session.close().await;
        return Err(e);
    }
    let arbiter = Arbiter::new();
    let tui = Tui::start_in_arbiter(&arbiter.handle(), move |_| Tui::new(setup));
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
    // Servers' questions (elicitation, sampling) are asked here from now on.
    session
        .desk
        .do_send(harness9_app::asks::SetUser(tui.clone().recipient()));
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
mod test_support;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_asks;
#[cfg(test)]
mod tests_diff;
#[cfg(test)]
mod tests_views;
