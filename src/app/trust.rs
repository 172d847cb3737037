//! Approval of project configs: a `.mcp.json` found in the working directory (not given with
//! `--config`) runs nothing until the user approves its servers. A server is approved by the
//! SHA-256 of a canonical form of its exact spec (transport, command, args, env keys and values,
//! cwd, url, header names), so a changed spec asks again. Approvals live in a private (0600)
//! JSON file: `$HARNESS9_APPROVALS`, else `$XDG_STATE_HOME/harness9/approvals.json`
//! (`~/.local/state/...`), keyed by the config file's canonical path, the server's name and the
//! spec's hash. An unapproved server's spec gets `Hold::Unapproved`: the supervisor shows it and
//! never spawns it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use harness9_actors::spec::shell_quote;
use harness9_actors::{Hold, ServerSpec, TransportSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::app::config::{self, Config};

/// The variable that names the approvals file (tests point it at a temp file).
pub const ENV: &str = "HARNESS9_APPROVALS";

/// Where approvals are kept: `$HARNESS9_APPROVALS`, else the state directory's `approvals.json`.
pub fn store_path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::tui::history::state_dir().join("approvals.json"),
    }
}

/// `sha256:<hex>` of the spec's canonical form: everything that decides what runs or where it
/// connects (names and limits that cannot run anything are left out).
pub fn fingerprint(spec: &ServerSpec) -> String {
    let canonical = match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            env.sort();
            // The sandbox is part of what runs: a spec that drops it asks again.
            let sandbox = spec.sandbox.as_ref().map(|s| {
                json!({"project": s.project_dir.display().to_string(),
                       "writable": s.writable.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                       "network": s.network})
            });
            json!({"transport": "stdio", "command": command, "args": args, "env": env,
                   "cwd": cwd.as_ref().map(|c| c.display().to_string()), "sandbox": sandbox})
        }
        TransportSpec::Http { url, headers, sse } => {
            let mut names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
            names.sort();
            json!({"transport": if *sse { "sse" } else { "http" }, "url": url, "headers": names})
        }
        _ => json!({"transport": spec.transport.kind(), "spec": format!("{:?}", spec.transport)}),
    };
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
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
struct Approval {
    config: String,
    server: String,
    spec: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    approved: Vec<Approval>,
}

/// The approvals file, loaded.
#[derive(Debug)]
pub struct Approvals {
    path: PathBuf,
    entries: Vec<Approval>,
}

impl Approvals {
    /// Reads `path`; a missing file has no approvals, an unreadable or invalid one is an error
    /// naming the file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let entries = match std::fs::read_to_string(path) {
            Ok(text) => {
                serde_json::from_str::<StoreFile>(&text)
                    .with_context(|| {
                        format!(
                            "the approvals file {} is not valid; fix or delete it",
                            path.display()
                        )
                    })?
                    .approved
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot read the approvals file {}", path.display()))
            }
        };
        Ok(Approvals {
            path: path.to_owned(),
            entries,
        })
    }

    /// Whether `spec`, from the config keyed `config`, is approved as it is.
    pub fn is_approved(&self, config: &str, spec: &ServerSpec) -> bool {
        let hash = fingerprint(spec);
        self.entries
            .iter()
            .any(|a| a.config == config && a.server == spec.name && a.spec == hash)
    }

    /// Approves `spec` as it is (replacing an approval of an earlier spec of that server).
    pub fn approve(&mut self, config: &str, spec: &ServerSpec) {
        self.entries
            .retain(|a| !(a.config == config && a.server == spec.name));
        self.entries.push(Approval {
            config: config.to_owned(),
            server: spec.name.clone(),
            spec: fingerprint(spec),
        });
    }

    /// Writes the file: private (0600), through a temp file and a rename.
    pub fn save(&self) -> anyhow::Result<()> {
        let body = serde_json::to_vec_pretty(&StoreFile {
            approved: self.entries.clone(),
        })?;
        crate::app::edit::write_private(&self.path, &body)
            .with_context(|| format!("cannot write the approvals file {}", self.path.display()))
    }
}

/// Holds (`Hold::Unapproved`) every server of the project config `config` that is not approved
/// as it is; with `approve_all`, approves them first (and saves). Invalid entries stay as they
/// are. An approvals file that cannot be read holds every server (nothing runs unasked).
pub fn hold_unapproved(config: &mut Config, approve_all: bool) -> anyhow::Result<()> {
    if config.servers.iter().all(|s| s.hold.is_some()) {
        return Ok(());
    }
    let key = config_key(&config.path);
    let store = match Approvals::load(&store_path()) {
        Ok(s) => s,
        Err(e) if !approve_all => {
            tracing::warn!("{e:#}; every server of {key} waits for approval");
            Approvals {
                path: store_path(),
                entries: Vec::new(),
            }
        }
        Err(e) => return Err(e),
    };
    let mut store = store;
    if approve_all {
        let fresh: Vec<&ServerSpec> = config
            .servers
            .iter()
            .filter(|s| s.hold.is_none() && !store.is_approved(&key, s))
            .collect();
        if !fresh.is_empty() {
            for s in fresh {
                store.approve(&key, s);
            }
            store.save()?;
        }
    }
    for s in &mut config.servers {
        if s.hold.is_none() && !store.is_approved(&key, s) {
            s.hold = Some(Hold::Unapproved);
        }
    }
    Ok(())
}

/// Loads the config at `path`: `given` (with `--config`) is trusted as it is; otherwise it is
/// a project config and its unapproved servers are held (approved first with `approve_all`,
/// the `--approve-project` flag).
pub fn load(path: &Path, given: bool, approve_all: bool) -> anyhow::Result<Config> {
    let mut cfg = config::load(path, given)?;
    if !given {
        hold_unapproved(&mut cfg, approve_all)?;
    }
    Ok(cfg)
}

/// One line per unapproved server of `config`: what it would run and how to approve it.
pub fn hints(config: &Config) -> Vec<String> {
    config
        .servers
        .iter()
        .filter(|s| s.hold == Some(Hold::Unapproved))
        .map(|s| {
            format!(
                "server {:?} not started: {} is a project config and this server is not approved; it would run: {}; approve it with `harness9 mcp approve {}` (or run with --approve-project)",
                s.name,
                config.path.display(),
                s.transport.command_line(),
                shell_quote(&s.name)
            )
        })
        .collect()
}

/// Prints [`hints`] to stderr (headless), only for server `only` when given.
pub fn print_hints(config: &Config, only: Option<&str>) {
    let held = config
        .servers
        .iter()
        .filter(|s| s.hold == Some(Hold::Unapproved));
    for (s, line) in held.zip(hints(config)) {
        if only.is_none_or(|o| o == s.name) {
            eprintln!("[mcp] {line}");
        }
    }
}

/// `text` with every control character written as an escape (`\u{1b}`): a config's strings
/// never reach the terminal raw.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Approves the servers `names` of the config at `path` (every server when empty) as they are
/// now; returns one line per server saying what was approved.
pub fn approve(path: &Path, names: &[String]) -> anyhow::Result<Vec<String>> {
    let cfg = config::load(path, true)?;
    for n in names {
        if !cfg.servers.iter().any(|s| s.name == *n) {
            let known: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
            anyhow::bail!(
                "no server named {n:?} in {} (servers: {})",
                path.display(),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
        }
    }
    let key = config_key(path);
    let mut store = Approvals::load(&store_path())?;
    let mut out = Vec::new();
    for s in &cfg.servers {
        if !names.is_empty() && !names.contains(&s.name) {
            continue;
        }
        match &s.hold {
            Some(Hold::Invalid(e)) => {
                out.push(format!("not approved {:?}: {}", s.name, visible(e)))
            }
            _ => {
                store.approve(&key, s);
                out.push(format!(
                    "approved {:?}: {}",
                    s.name,
                    s.transport.command_line()
                ));
            }
        }
    }
    if out.is_empty() {
        out.push(format!("no servers to approve in {}", path.display()));
        return Ok(out);
    }
    store.save()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_spec_is_not_approved_and_the_file_is_private() {
        let dir = std::env::temp_dir().join(format!("h9-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("state").join("approvals.json");
        let mut store = Approvals::load(&path).expect("missing is empty");
        let spec = ServerSpec::stdio("s", "sh", vec!["-c".into(), "true".into()]);
        assert!(!store.is_approved("/p/.mcp.json", &spec));
        store.approve("/p/.mcp.json", &spec);
        store.save().expect("save");
        let store = Approvals::load(&path).expect("load");
        assert!(store.is_approved("/p/.mcp.json", &spec));
        assert!(!store.is_approved("/q/.mcp.json", &spec));
        let mut changed = spec.clone();
        changed.transport = TransportSpec::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), "false".into()],
            env: vec![],
            cwd: None,
        };
        assert!(!store.is_approved("/p/.mcp.json", &changed));
        let mut env_changed = spec.clone();
        if let TransportSpec::Stdio { env, .. } = &mut env_changed.transport {
            env.push(("NODE_OPTIONS".into(), "--require evil".into()));
        }
        assert_ne!(fingerprint(&spec), fingerprint(&env_changed));
        // Dropping (or loosening) the sandbox asks again.
        let mut sandboxed = spec.clone();
        sandboxed.sandbox = Some(harness9_actors::SandboxSpec {
            project_dir: "/p".into(),
            writable: vec![],
            network: false,
        });
        assert_ne!(fingerprint(&spec), fingerprint(&sandboxed));
        let mut networked = sandboxed.clone();
        if let Some(s) = &mut networked.sandbox {
            s.network = true;
        }
        assert_ne!(fingerprint(&sandboxed), fingerprint(&networked));
        // Limits that cannot run anything do not change the fingerprint.
        let mut limits = spec.clone();
        limits.tool_timeout = std::time::Duration::from_secs(1);
        assert_eq!(fingerprint(&spec), fingerprint(&limits));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).expect("metadata").permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, "not json").expect("write");
        let e = Approvals::load(&path).expect_err("invalid");
        assert!(format!("{e:#}").contains("fix or delete it"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
