//! What a loaded config is: [`Config`] (every server's spec, held or not, with what the
//! session needs besides: secrets, expansions, inputs, warnings, the written forms), a server's
//! [`Written`] entry, [`ConfigError`], and the bounds every stage shares.

use std::path::PathBuf;
use std::time::Duration;

use harness9_actors::{ServerSpec, TransportSpec};

/// The default config file, relative to the working directory.
pub const DEFAULT_PATH: &str = ".mcp.json";

/// A loaded config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Where it was read from.
    pub path: PathBuf,
    /// Every enabled server, in file order. A server whose entry is invalid (unset variable,
    /// bad field, missing command or url, bad timeout) is here with `hold` =
    /// `Hold::Invalid(message)`: it fails alone, the others start.
    pub servers: Vec<ServerSpec>,
    /// Names of servers marked `disabled`.
    pub disabled: Vec<String>,
    /// Values that must never reach a log or trace: every `${...}` value, env, `envFile` and
    /// header values, a scheme-prefixed header's token, OAuth client secrets.
    pub secrets: Vec<String>,
    /// Every value a `${VAR}` expanded to, with its written form (`${VAR}`): what a printed
    /// URL, command or error shows instead of the value.
    pub expansions: Vec<(String, String)>,
    /// Servers that come from another file than `path` (the user file), with that file.
    pub sources: Vec<(String, PathBuf)>,
    /// VS Code inputs (`${input:ID}`) that servers need and that have no value: the TUI asks
    /// for them; their servers are held with an error naming the environment variable.
    pub inputs: Vec<super::input_vars::InputPrompt>,
    /// Other files the servers' specs were read from (`envFile`s): a sandbox grant that covers
    /// one exposes the config (see `trust::guard`).
    pub read_files: Vec<PathBuf>,
    /// One line per thing the file has that is ignored but should not be ignored silently
    /// (another tool's field, both `mcpServers` and `servers`), naming the file. Logged when
    /// parsed (stderr headless); the TUI shows them in its transcript.
    pub warnings: Vec<String>,
    /// Each server's entry as the file writes it (by server name): what a project approval
    /// covers ([`crate::config::trust::fingerprint`]) and what an unapproved server shows.
    pub written: Vec<(String, Written)>,
}

/// One server entry as its file writes it, before any of the user's values is put in.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The entry's JSON, keys sorted (every field, including those harness9 does not read).
    pub entry: serde_json::Value,
    /// The transport built from the entry with every `${VAR}` and `${input:ID}` left as
    /// written (only `${workspaceFolder}` resolved, as it names the project) and `envFile`
    /// read: what will be sent, without the user's values. `None` when the entry does not
    /// build even so (it is held as invalid).
    pub transport: Option<TransportSpec>,
    /// The `envFile` the entry names, resolved (read into `transport`'s env).
    pub env_file: Option<PathBuf>,
    /// The inputs the entry uses, as the file declares them: (id, description, password).
    pub inputs: Vec<(String, String, bool)>,
}

impl Config {
    /// The written form of server `name`'s entry, when it has one.
    pub fn written(&self, name: &str) -> Option<&Written> {
        self.written.iter().find(|(n, _)| n == name).map(|(_, w)| w)
    }
}

/// Why a config could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The io error.
        message: String,
    },
    /// Invalid JSON or an invalid field, at a position.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A `${VAR}` that cannot be expanded.
    #[error("{path}: server \"{server}\", field {field}: {message}")]
    Expand {
        /// The file.
        path: String,
        /// The server.
        server: String,
        /// The field (`args[1]`, `env.TOKEN`, ...).
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// The longest timeout a config or flag may give, in seconds (24 h): `Duration::from_secs_f64`
/// panics on huge values, and a longer bound is no bound.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A timeout in seconds from the user (config field or flag named `field`), checked: positive,
/// finite, at most [`MAX_TIMEOUT_SECS`].
pub fn timeout_secs(field: &str, t: f64) -> Result<Duration, String> {
    if t > 0.0 && t <= MAX_TIMEOUT_SECS {
        Ok(Duration::from_secs_f64(t))
    } else {
        Err(format!(
            "{field} is {t}; give a positive number of seconds up to {MAX_TIMEOUT_SECS} (24 h)"
        ))
    }
}
