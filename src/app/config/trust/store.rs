//! The approvals store: a private (0600) JSON file, `$HARNESS9_APPROVALS`, else the state
//! directory's `approvals.json`, keyed by the config file's canonical path ([`config_key`]),
//! the server's name and the spec's hash; and the files marked exposed.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// The variable that names the approvals file (tests point it at a temp file).
pub const ENV: &str = "HARNESS9_APPROVALS";

/// Where approvals are kept: `$HARNESS9_APPROVALS`, else the state directory's `approvals.json`.
pub fn store_path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::stores::state_dir().join("approvals.json"),
    }
}

/// The key of a config file in the store: its canonical path (absolute when it cannot be
/// resolved).
pub fn config_key(path: &Path) -> String {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// One approved server spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Approval {
    pub(super) config: String,
    pub(super) server: String,
    pub(super) spec: String,
}

/// The approvals file as written.
#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    approved: Vec<Approval>,
    /// Config and settings files (canonical paths) a sandboxed server was once allowed to
    /// write: their servers always need approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exposed: Vec<String>,
}

/// The approvals file, loaded.
#[derive(Debug)]
pub struct Approvals {
    pub(super) path: PathBuf,
    pub(super) entries: Vec<Approval>,
    pub(super) exposed: Vec<String>,
}

impl Approvals {
    /// Reads `path`; a missing file has no approvals, an unreadable or invalid one is an error
    /// naming the file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let file = match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str::<StoreFile>(&text).with_context(|| {
                format!(
                    "the approvals file {} is not valid; fix or delete it",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => StoreFile::default(),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot read the approvals file {}", path.display()))
            }
        };
        Ok(Approvals {
            path: path.to_owned(),
            entries: file.approved,
            exposed: file.exposed,
        })
    }

    /// Whether the file keyed `config` was ever writable by a sandboxed server.
    pub fn is_exposed(&self, config: &str) -> bool {
        self.exposed.iter().any(|e| e == config)
    }

    /// Whether server `server`, from the config keyed `config`, is approved with the
    /// fingerprint `hash` ([`fingerprint`]).
    pub fn is_approved(&self, config: &str, server: &str, hash: &str) -> bool {
        self.entries
            .iter()
            .any(|a| a.config == config && a.server == server && a.spec == hash)
    }

    /// Approves server `server` with the fingerprint `hash` (replacing an approval of an
    /// earlier spec of that server).
    pub fn approve(&mut self, config: &str, server: &str, hash: String) {
        self.entries
            .retain(|a| !(a.config == config && a.server == server));
        self.entries.push(Approval {
            config: config.to_owned(),
            server: server.to_owned(),
            spec: hash,
        });
    }

    /// Writes the file: private (0600), through a temp file and a rename.
    pub fn save(&self) -> anyhow::Result<()> {
        let body = serde_json::to_vec_pretty(&StoreFile {
            approved: self.entries.clone(),
            exposed: self.exposed.clone(),
        })?;
        crate::edit::write_private(&self.path, &body)
            .with_context(|| format!("cannot write the approvals file {}", self.path.display()))
    }
}
