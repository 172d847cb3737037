//! The `harness9` binary: parses the command line and runs it on an actix system.

use std::process::ExitCode;

use clap::Parser;
use harness9::cli::{run_mcp, Cli, Command};
use harness9_actors::server::kill_all_groups;

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all_groups();
        default_hook(info);
        std::process::exit(101);
    }));
    let sys = actix::System::new();
    let code = sys.block_on(async {
        match &cli.command {
            Some(Command::Mcp(cmd)) => match run_mcp(&cli, cmd).await {
                Ok(code) => code,
                Err(e) if is_broken_pipe(&e) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("harness9: {e:#}");
                    ExitCode::from(1)
                }
            },
            None => {
                eprintln!("harness9: the interactive session is not built yet; use `harness9 mcp list`, `harness9 mcp get <server>` or `harness9 mcp call <server> <tool>`");
                ExitCode::from(2)
            }
        }
    });
    kill_all_groups();
    code
}
