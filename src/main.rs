//! The `harness9` binary: parses the command line and runs it on an actix system.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use harness9::cli::{run_mcp, Cli, Command};
use harness9_actors::server::{
    become_subreaper, end_descendants, kill_all_groups, spawn_orphan_reaper,
};

/// How long a descendant still alive at exit has between SIGTERM and SIGKILL.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Every exit path ends here, after the terminal is restored: every child group killed, then
/// every other descendant (a server's daemon reparented to us) ended and reaped.
fn end_children() {
    kill_all_groups();
    end_descendants(EXIT_GRACE);
}

/// Where the interactive session logs: `$HARNESS9_LOG`, else
/// `$XDG_STATE_HOME/harness9/harness9.log` (`~/.local/state/...`), else the temp dir.
fn tui_log_path() -> PathBuf {
    if let Some(p) = std::env::var_os("HARNESS9_LOG") {
        return PathBuf::from(p);
    }
    harness9::tui::history::state_dir().join("harness9.log")
}

fn init_logging(verbose: u8, to_file: bool) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 if to_file => "info",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    if to_file {
        // The screen belongs to the TUI: logs go to a file, or nowhere if it cannot be opened.
        let path = tui_log_path();
        if let Ok(file) =
            harness9::app::log_file::CappedLog::open(&path, harness9::app::log_file::MAX_BYTES)
        {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::sync::Mutex::new(file))
                .with_ansi(false)
                .with_target(true)
                .try_init();
        }
        return;
    }
    // Plain text through the sanitizer: tracing escapes a message's controls but not its field
    // values (a server's log level, a server name from a config file).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| CleanStderr)
        .with_target(true)
        .with_ansi(false)
        .try_init();
}

/// Stderr for headless logs: each formatted event (one `write_all` of a whole line) goes out
/// through `sanitize::clean_text`.
struct CleanStderr;

impl std::io::Write for CleanStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let clean = harness9::sanitize::clean_text(&text);
        std::io::stderr().lock().write_all(clean.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = Cli::parse();
    if let Some(Command::Completions { shell }) = &cli.command {
        use clap::CommandFactory as _;
        clap_complete::generate(
            *shell,
            &mut Cli::command(),
            "harness9",
            &mut std::io::stdout(),
        );
        return ExitCode::SUCCESS;
    }
    let interactive = cli.command.is_none();
    init_logging(cli.verbose, interactive);
    harness9_actors::server::input::set_elicitation(cli.elicitation.policy());
    // Before any child exists: a server's double-forked daemon is reparented to us, not init,
    // so it is found and ended at exit.
    if let Err(e) = become_subreaper() {
        tracing::warn!(
            "cannot become a child subreaper ({e}); a server's daemon may outlive harness9"
        );
    }
    spawn_orphan_reaper();
    // The command line, resolved once: every front end runs on these options.
    let opts = harness9::app::SessionOptions::from_cli(&cli);
    match harness9::agent::model::settings::mcp_sandbox_default(&opts.model) {
        Ok(Some(default)) => harness9::app::config::set_sandbox_default(default),
        Ok(None) => {}
        Err(e) => {
            eprintln!("harness9: {e}");
            return ExitCode::from(1);
        }
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Terminal first, so the message below is readable; then no child outlives us.
        harness9::tui::restore_terminal();
        end_children();
        tracing::error!("panic: {info}");
        default_hook(info);
        std::process::exit(101);
    }));
    let sys = actix::System::new();
    let code = sys.block_on(async {
        let result = match &cli.command {
            Some(Command::Mcp(cmd)) => run_mcp(&opts, cmd).await,
            Some(Command::Run(args)) => harness9::cli::run::run(&opts, args).await,
            Some(Command::Conformance(args)) => harness9::cli::conformance::run(&opts, args).await,
            // Answered before the runtime starts.
            Some(Command::Completions { .. }) => Ok(ExitCode::SUCCESS),
            Some(Command::ConformanceBrowser { url }) => {
                harness9::cli::conformance::browser(url).await
            }
            None => harness9::tui::run(&opts, started).await,
        };
        match result {
            Ok(code) => code,
            Err(e) if is_broken_pipe(&e) => ExitCode::from(1),
            Err(e) => {
                harness9::tui::restore_terminal();
                // Error chains carry server text (a CallError embeds the server's message).
                eprintln!(
                    "harness9: {}",
                    harness9::sanitize::clean_text(&format!("{e:#}"))
                );
                // Usage and config mistakes: 2; failures: 1.
                let usage = e.downcast_ref::<harness9::cli::UsageError>().is_some()
                    || e.downcast_ref::<harness9::app::config::ConfigError>()
                        .is_some();
                ExitCode::from(if usage { 2 } else { 1 })
            }
        }
    });
    harness9::tui::restore_terminal();
    end_children();
    code
}
