//! The `harness9` binary: parses the command line and runs it on an actix system.
//!
//! Before any child exists it becomes a child subreaper and starts the orphan reaper; it
//! resolves the command line and the settings' runtime choices once (`SessionOptions`, no
//! globals); headless logs on stderr are cleaned of the known secrets and go through
//! `sanitize::clean_text`. Every exit path, and
//! the panic hook (terminal restored first, exit code 101), ends in `end_children`: every
//! child's process group killed, every other descendant ended (`EXIT_GRACE` between SIGTERM
//! and SIGKILL) and reaped, the session directories removed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use harness9::cli::{exit_code, run_mcp, Cli, Command, JsonErrors, TraceCommand};
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
    // The session's private directory (cut results, saved blobs) goes with the session.
    harness9::app::private_fs::remove_session_dirs();
}

/// Where the interactive session logs: `$HARNESS9_LOG`, else
/// `$XDG_STATE_HOME/harness9/harness9.log` (`~/.local/state/...`), else the temp dir.
fn tui_log_path() -> PathBuf {
    if let Some(p) = std::env::var_os("HARNESS9_LOG") {
        return PathBuf::from(p);
    }
    harness9::app::stores::state_dir().join("harness9.log")
}

/// The log (a file for the TUI, else stderr) and, when telemetry is on, the exporter's layer:
/// each with its own filter, so spans of `telemetry::TARGET` go only to the exporter and no
/// log line becomes a span event.
fn init_logging(verbose: u8, to_file: bool, tracer: Option<opentelemetry_sdk::trace::Tracer>) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 if to_file => "info",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    if let Ok(d) = format!("{}=off", harness9_actors::telemetry::TARGET).parse() {
        filter = filter.add_directive(d);
    }
    if to_file {
        // The screen belongs to the TUI: logs go to a file, or nowhere if it cannot be opened.
        let path = tui_log_path();
        match harness9::app::diagnostics::log_file::CappedLog::open(
            &path,
            harness9::app::diagnostics::log_file::MAX_BYTES,
        ) {
            Ok(file) => install(std::sync::Mutex::new(file), filter, tracer),
            Err(_) => install(std::io::sink, EnvFilter::new("off"), tracer),
        }
        return;
    }
    // Plain text through the sanitizer: tracing escapes a message's controls but not its field
    // values (a server's log level, a server name from a config file). At the default level a
    // user reads `harness9: warning: ...` lines; `-v` or `RUST_LOG` asks for the full format.
    let diagnostic = verbose > 0 || std::env::var_os("RUST_LOG").is_some_and(|v| !v.is_empty());
    if diagnostic {
        install(|| CleanStderr, filter, tracer);
    } else {
        install_user_lines(filter, tracer);
    }
}

fn install<W>(
    writer: W,
    filter: tracing_subscriber::EnvFilter,
    tracer: Option<opentelemetry_sdk::trace::Tracer>,
) where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::Layer as _;
    let log = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .with_target(true)
        .with_filter(filter);
    install_layer(log, tracer);
}

/// Headless stderr as a user reads it ([`harness9::app::diagnostics::log_file::UserLines`]).
fn install_user_lines(
    filter: tracing_subscriber::EnvFilter,
    tracer: Option<opentelemetry_sdk::trace::Tracer>,
) {
    use tracing_subscriber::Layer as _;
    let log = tracing_subscriber::fmt::layer()
        .with_writer(|| CleanStderr)
        .with_ansi(false)
        .event_format(harness9::app::diagnostics::log_file::UserLines)
        .with_filter(filter);
    install_layer(log, tracer);
}

/// The subscriber: the log layer and, when telemetry is on, the exporter's.
fn install_layer<L>(log: L, tracer: Option<opentelemetry_sdk::trace::Tracer>)
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let otel = tracer.map(harness9_actors::telemetry::export::layer);
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(otel)
        .try_init();
}

/// Stderr for headless logs: each formatted event (one `write_all` of a whole line) goes out
/// through `sanitize::clean_text`.
struct CleanStderr;

impl std::io::Write for CleanStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let text = harness9_actors::telemetry::redact_text(&text);
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

/// Prints a failed command's error on stderr and, with `--json`, as JSON on stdout too; its
/// exit code.
fn fail(json: JsonErrors, message: &str, code: u8, started: Instant) -> ExitCode {
    eprintln!("harness9: {}", harness9::sanitize::clean_text(message));
    if let Some(line) = json.line(message, code, started.elapsed()) {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    ExitCode::from(code)
}

fn main() -> ExitCode {
    let started = Instant::now();
    let cli = match parse(started) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let json = cli.json_errors();
    let flags = match cli.flags() {
        Ok(f) => f,
        Err(e) => return fail(json, &e.0, 2, started),
    };
    if let Some(code) = without_runtime(&cli, &flags, json, started) {
        return code;
    }
    let interactive = cli.command.is_none();
    // Telemetry: the OTEL_* environment, else the user's [telemetry]; off by default.
    let mut early_warnings = Vec::new();
    let telemetry = match telemetry(&flags, &mut early_warnings) {
        Ok(t) => t,
        Err(e) => return fail(json, &e, 2, started),
    };
    // The model's keys and the OTLP credentials never leave in a span, a trace record or a
    // log line, whatever text carries them.
    harness9::app::telemetry::redact_process_secrets();
    init_logging(
        flags.session.servers.verbose,
        interactive,
        telemetry.as_ref().and_then(|t| t.tracer.clone()),
    );
    for w in &early_warnings {
        tracing::warn!("{w}");
    }
    if let Some(t) = &telemetry {
        // A collector that is down is known (and said once) before the first export.
        t.probe();
        harness9_actors::telemetry::set_root(session_span(&cli));
    }
    // Before any child exists: a server's double-forked daemon is reparented to us, not init,
    // so it is found and ended at exit.
    if let Err(e) = become_subreaper() {
        tracing::warn!(
            "cannot become a child subreaper ({e}); a server's daemon may outlive harness9"
        );
    }
    spawn_orphan_reaper();
    // The command line, resolved once: every front end runs on these options.
    let opts = match session_options(&flags, early_warnings) {
        Ok(o) => o,
        Err(e) => return fail(json, &e, 2, started),
    };
    install_panic_hook();
    // The system lives to the end of `main`: its runtime is dropped after the exit paths.
    let sys = actix::System::new();
    let code = sys.block_on(run_command(&cli, &opts, json, started));
    harness9::tui::restore_terminal();
    end_children();
    if let Some(t) = telemetry {
        // The session's span ends, then the rest goes out, within a bound.
        harness9_actors::telemetry::end_root();
        t.shutdown();
    }
    code
}

/// The command line, or the exit code of one clap would not take: help and version shown,
/// a usage error on stderr (and with `--json` its first line as JSON on stdout).
fn parse(started: Instant) -> Result<Cli, ExitCode> {
    let e = match Cli::try_parse() {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    use clap::error::ErrorKind;
    let json = JsonErrors::of_raw_args(&std::env::args_os().collect::<Vec<_>>());
    let shown = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if shown || json == JsonErrors::No {
        e.exit();
    }
    // clap's own usage errors: its text on stderr, and with --json the first line as
    // JSON on stdout.
    let text = e.render().to_string();
    // The message is what comes before the usage line, on one line.
    let message: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    if let Some(line) = json.line(message, 2, started.elapsed()) {
        println!("{line}");
    }
    let _ = e.print();
    Err(ExitCode::from(2))
}

/// The commands answered with no runtime and no servers (shell completions, a trace file's
/// table or its replay, another agent's permissions imported); `None` for the others.
fn without_runtime(
    cli: &Cli,
    flags: &harness9::cli::Flags,
    json: JsonErrors,
    started: Instant,
) -> Option<ExitCode> {
    match &cli.command {
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory as _;
            clap_complete::generate(
                *shell,
                &mut Cli::command(),
                "harness9",
                &mut std::io::stdout(),
            );
            Some(ExitCode::SUCCESS)
        }
        // A trace file's table, or the file served as a stdio server.
        Some(Command::Trace(t)) => {
            let result = match t {
                TraceCommand::Stats { file, server, json } => {
                    harness9::cli::trace::stats(file, server.as_deref(), *json)
                }
                TraceCommand::Replay { file, server } => {
                    harness9::cli::trace::replay(file, server.as_deref())
                }
            };
            Some(result.unwrap_or_else(|e| fail(json, &format!("{e:#}"), 1, started)))
        }
        // Another agent's permission settings into the user's file.
        Some(Command::Permissions(harness9::cli::PermissionsCommand::Import {
            from,
            file,
            dry_run,
            settings,
        })) => {
            let settings = settings.clone().or_else(|| flags.model_flags().config_path);
            let result = harness9::cli::permissions::import(
                *from,
                file.as_deref(),
                settings.as_deref(),
                *dry_run,
            );
            Some(result.unwrap_or_else(|e| {
                let code = exit_code(&e);
                fail(json, &format!("{e:#}"), code, started)
            }))
        }
        _ => None,
    }
}

/// Telemetry as the settings and the environment ask for it. A settings file that does not
/// parse is a config error (as it is for every setting); an OTEL_* value harness9 cannot
/// honour is a warning, and the session runs without telemetry (a variable meant for another
/// program must not stop this one).
fn telemetry(
    flags: &harness9::cli::Flags,
    warnings: &mut Vec<String>,
) -> Result<Option<harness9::app::telemetry::Telemetry>, String> {
    let settings = harness9::agent::model::settings::telemetry(&flags.model_flags(), warnings)
        .map_err(|e| e.to_string())?;
    match harness9::app::telemetry::plan(|k| std::env::var(k).ok(), &settings)
        .and_then(|p| harness9::app::telemetry::start(&p))
    {
        Ok(t) => Ok(t),
        Err(e) => {
            warnings.push(format!("telemetry is off: {e}"));
            Ok(None)
        }
    }
}

/// The session's root span: `harness9 {command}`.
fn session_span(cli: &Cli) -> tracing::Span {
    let name = cli
        .command
        .as_ref()
        .map_or_else(|| "tui".to_owned(), Command::name);
    tracing::info_span!(
        target: harness9_actors::telemetry::TARGET, "session",
        otel.name = %format_args!("harness9 {name}"), otel.kind = "internal",
        harness9.command = %name)
}

/// The options every front end runs on, with the settings' runtime choices read once and
/// carried in them (no globals); a settings file that does not parse is a config error.
fn session_options(
    flags: &harness9::cli::Flags,
    mut early_warnings: Vec<String>,
) -> Result<harness9::app::SessionOptions, String> {
    use harness9::agent::model::settings;
    let mut opts = flags.session_options().map_err(|e| e.to_string())?;
    opts.runtime.warnings.append(&mut early_warnings);
    let warnings = &mut opts.runtime.warnings;
    opts.runtime.entries.sandbox =
        settings::mcp_sandbox_default(&opts.model, warnings).map_err(|e| e.to_string())?;
    opts.runtime.shell =
        settings::shell_sandbox(&opts.model, warnings).map_err(|e| e.to_string())?;
    // An IdP whose secret's variable is not set fails only the servers of the enterprise
    // grant (said once here).
    let idp = settings::enterprise_idp(&opts.model, warnings).map_err(|e| e.to_string())?;
    match idp.map(harness9::app::config::enterprise_idp).transpose() {
        Ok(idp) => opts.runtime.entries.enterprise_idp = idp,
        Err(e) => {
            warnings.push(e.clone());
            opts.runtime.entries.enterprise_idp_error = Some(e);
        }
    }
    // A project's `provider` and `base_url`s are ignored (`settings::resolve`): said here.
    settings::project_endpoint(&opts.model, warnings).map_err(|e| e.to_string())?;
    Ok(opts)
}

/// A panic anywhere: the terminal restored first, so the message is readable; then no child
/// outlives us; exit code 101.
fn install_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        harness9::tui::restore_terminal();
        end_children();
        tracing::error!("panic: {info}");
        default_hook(info);
        std::process::exit(101);
    }));
}

/// Runs the command (a front end) on the actix system; its exit code.
async fn run_command(
    cli: &Cli,
    opts: &harness9::app::SessionOptions,
    json: JsonErrors,
    started: Instant,
) -> ExitCode {
    let result = match &cli.command {
        Some(Command::Mcp(cmd)) => run_mcp(opts, cmd).await,
        Some(Command::Run(args)) => harness9::cli::run::run(opts, args, started).await,
        Some(Command::Doctor(args)) => harness9::cli::doctor::doctor(opts, args).await,
        Some(Command::Conformance(args)) => harness9::cli::conformance::run(opts, args).await,
        // Answered before the runtime starts.
        Some(Command::Completions { .. } | Command::Trace(_) | Command::Permissions(_)) => {
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::ConformanceBrowser { url }) => harness9::cli::conformance::browser(url).await,
        None => harness9::tui::run(opts, started).await,
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::from(1),
        Err(e) => {
            harness9::tui::restore_terminal();
            // Usage and config mistakes: 2; failures: 1. Error chains carry server text
            // (a CallError embeds the server's message): `fail` cleans it for stderr.
            fail(json, &format!("{e:#}"), exit_code(&e), started)
        }
    }
}
