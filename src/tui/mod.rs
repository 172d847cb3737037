//! The interactive session: `harness9` with no subcommand. The [`Tui`] actor owns the terminal
//! on its own arbiter; it takes crossterm's `EventStream`, status snapshots and wire records as
//! streams and messages, runs the pure [`state::update`], and draws with the pure [`view::view`].

mod actor;
pub mod history;
mod markdown;
pub mod state;
mod trust;
pub mod view;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::prelude::*;
use anyhow::Context as _;
use harness9_actors::messages::{ShutdownAll, Subscribe};
use harness9_actors::trace::{WireRecord, WireTap};
use harness9_actors::RestartPolicy;
use tokio::sync::{mpsc, oneshot};

pub use actor::{Quit, Tui, TuiSetup};

use crate::app::Runtime;
use crate::cli::Cli;
use crate::config;
use crate::engine::{Engine, EngineConfig};
use crate::model::settings::how_to_configure;
use crate::model::Provider;

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

/// Forwards every wire record to the TUI and, with `--trace`, to the trace file.
/// Both ends are bounded: a sink that falls behind a flood loses records, never memory.
fn fan_out(file: Option<WireTap>) -> (WireTap, mpsc::Receiver<WireRecord>) {
    let (tap, mut rx) = harness9_actors::trace::tap_channel();
    let (tui_tx, tui_rx) = mpsc::channel(harness9_actors::trace::TAP_CAPACITY);
    actix_rt::spawn(async move {
        while let Some(r) = rx.recv().await {
            if let Some(f) = &file {
                let _ = f.try_send(r.clone());
            }
            let closed = matches!(
                tui_tx.try_send(r),
                Err(mpsc::error::TrySendError::Closed(_))
            );
            if closed && file.is_none() {
                break;
            }
        }
    });
    (tap, tui_rx)
}

/// Runs the interactive session until the user quits; every child is gone when it returns.
pub async fn run(cli: &Cli, started: std::time::Instant) -> anyhow::Result<ExitCode> {
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        anyhow::bail!(
            "the interactive session needs a terminal; for scripts use `harness9 mcp list|get|call` or `harness9 run -p`"
        );
    }
    let settings = crate::model::settings::resolve(&crate::run::model_flags(cli));
    let (path, must) = match &cli.config {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    };
    // An invalid config still opens the session (with no servers) and shows the error. A
    // project config's unapproved servers are held: the trust screen asks about them.
    let (cfg, config_error) = match crate::trust::load(&path, must, cli.approve_project) {
        Ok(c) => (c, None),
        Err(e) => (
            config::Config {
                path: path.clone(),
                ..Default::default()
            },
            Some(format!("{e:#}")),
        ),
    };
    // The trace file's redaction list follows the config through hot reloads.
    let (secrets_tx, secrets_rx) = tokio::sync::watch::channel(cfg.secrets.clone());
    let (file_tap, writer) = match &cli.trace {
        Some(p) => {
            let (tap, handle) = crate::trace_file::open_watched(p, secrets_rx)?;
            (Some(tap), Some(handle))
        }
        None => (None, None),
    };
    let (tap, trace_rx) = fan_out(file_tap);
    let rt = Runtime::start(cfg.servers.clone(), Some(tap), RestartPolicy::default());
    let root = std::env::current_dir().context("cannot read the working directory")?;
    rt.install_builtins(&root);
    let (engine, model, model_help) = match settings {
        Ok(s) => match s.provider {
            Some(p) => {
                let name = format!("{} {}", p.kind, p.model);
                let cfg = EngineConfig::new(s.max_steps, s.tool_output_budget_tokens)
                    .with_environment(&root);
                let engine = Engine::new(Provider::new(p), rt.registry.clone(), cfg).start();
                (Some(engine), Some(name), String::new())
            }
            None => (None, None, how_to_configure().to_owned()),
        },
        Err(e) => (None, None, format!("{e}\n{}", how_to_configure())),
    };
    let (done_tx, done_rx) = oneshot::channel();
    let setup = TuiSetup {
        registry: rt.registry.clone(),
        supervisor: rt.supervisor.clone(),
        config_path: path,
        config_must_exist: must,
        config_error,
        secrets: secrets_tx,
        trace: trace_rx,
        done: done_tx,
        started,
        engine,
        model,
        model_help,
        ask_first: !cli.yes,
        approve_project: cli.approve_project,
    };
    take_terminal().context("cannot set up the terminal")?;
    let arbiter = Arbiter::new();
    let tui = Tui::start_in_arbiter(&arbiter.handle(), move |_| Tui::new(setup));
    rt.supervisor.do_send(Subscribe(tui.clone().recipient()));
    let code = tokio::select! {
        code = done_rx => code.unwrap_or(1),
        _ = signalled(&tui) => 130,
    };
    restore_terminal();
    let _ = rt.supervisor.send(ShutdownAll).await;
    arbiter.stop();
    drop(rt);
    if let Some(h) = writer {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            tokio::task::spawn_blocking(move || h.join()),
        )
        .await;
    }
    Ok(ExitCode::from(code))
}

/// Resolves on SIGTERM or SIGHUP, or on SIGINT while no editor runs; asks the TUI to quit first.
async fn signalled(tui: &Addr<Tui>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = hup.recv() => break,
            _ = int.recv() => {
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
