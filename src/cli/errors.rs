//! How a failed command ends: `UsageError`, the exit code of an error and its JSON form
//! with `--json` (`JsonErrors`).

use super::{Cli, Command};

impl Cli {
    /// Where this command line's errors go besides stderr (`--json`: JSON on stdout too).
    pub fn json_errors(&self) -> JsonErrors {
        match &self.command {
            Some(Command::Run(a)) if a.json_events() => JsonErrors::RunEvent,
            Some(Command::Mcp(m)) if m.json() => JsonErrors::Object,
            Some(Command::Doctor(d)) if d.json.json => JsonErrors::Object,
            _ => JsonErrors::No,
        }
    }
}

/// A mistake in how harness9 was called or configured (exit code 2, like clap's own usage
/// errors).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Where a failed command's error goes besides stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonErrors {
    /// Nowhere: text output.
    No,
    /// `--json` of an `mcp` command: `{"error": "...", "code": N}` on stdout.
    Object,
    /// `run --json`: an `error` event on stdout (`event`, `t_ms`, `message`, `code`).
    RunEvent,
}

impl JsonErrors {
    /// The JSON line for an error `message` ending the command with exit code `code`,
    /// `elapsed` after the start; `None` for text output.
    pub fn line(self, message: &str, code: u8, elapsed: std::time::Duration) -> Option<String> {
        let v = match self {
            JsonErrors::No => return None,
            JsonErrors::Object => serde_json::json!({"error": message, "code": code}),
            JsonErrors::RunEvent => serde_json::json!({
                "event": "error",
                "t_ms": (elapsed.as_secs_f64() * 1e6).round() / 1e3,
                "message": message,
                "code": code,
            }),
        };
        crate::sanitize::to_json(&v, false).ok()
    }

    /// The kind for a command line clap could not parse: `--json` anywhere (or `--stream` for
    /// `run`), `run` when the first word that is no flag is `run`.
    pub fn of_raw_args(args: &[std::ffi::OsString]) -> JsonErrors {
        let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
        if !words.contains(&"--json") && !words.contains(&"--stream") {
            return JsonErrors::No;
        }
        let at = |name: &str| words.iter().position(|w| *w == name);
        let run_first = match (at("run"), at("mcp")) {
            (Some(r), Some(m)) => r < m,
            (run, _) => run.is_some(),
        };
        // `--stream` implies `--json` for `run` only.
        match (run_first, words.contains(&"--json")) {
            (true, _) => JsonErrors::RunEvent,
            (false, true) => JsonErrors::Object,
            (false, false) => JsonErrors::No,
        }
    }
}

/// The exit code of a failed command: 2 for a usage or config mistake (a [`UsageError`], an
/// invalid `.mcp.json` or settings file), 1 for any other failure.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    let usage = e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<crate::app::config::ConfigError>()
            .is_some()
        || e.downcast_ref::<crate::agent::model::settings::SettingsError>()
            .is_some();
    if usage {
        2
    } else {
        1
    }
}
