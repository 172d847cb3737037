//! The command line: its flags and commands (clap), and the headless front ends:
//! `harness9 mcp list|get|call|approve` in [`mcp`], `harness9 run -p` in [`run`], `harness9
//! doctor` in [`doctor`], and the hidden
//! `harness9 conformance <URL>` (the MCP conformance suite's client) in [`conformance`].

/// `println!` that returns an error (e.g. a closed pipe) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*)?;
    }};
}

mod args;
pub mod conformance;
pub mod doctor;
mod errors;
mod flags;
mod list;
mod login;
mod manage;
pub mod mcp;
pub mod permissions;
pub mod resources;
pub mod run;
pub mod skills;
mod tasks;
pub mod trace;

pub use args::{
    Cli, Command, ConformanceArgs, DoctorArgs, JsonFlag, ListArgs, McpCommand, PermissionsCommand,
    RunArgs, Scope, SkillsAction, TraceCommand, Transport,
};
pub use errors::{exit_code, JsonErrors, UsageError};
pub use flags::{
    resume_of, AskFlags, ConfigFlag, Elicitation, Flags, ModelArgs, PermissionArgs, PermissionMode,
    Sampling, ServerFlags, SessionFlags,
};
pub use mcp::run_mcp;

/// Resolves on SIGINT, SIGTERM or SIGHUP (a closed terminal), so every exit path stops the
/// children.
pub async fn interrupted() {
    let Ok(mut signals) = harness9_platform::signal::StopSignals::new() else {
        return std::future::pending().await;
    };
    signals.recv().await;
}
