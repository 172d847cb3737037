//! Approval of project configs: a `.mcp.json` found in the working directory (not given with
//! `--config`) runs nothing until the user approves its servers. A server is approved by the
//! SHA-256 of a canonical form of its exact spec (transport, command, args, env keys and values,
//! cwd, url, header names), so a changed spec asks again. Approvals live in a private (0600)
//! JSON file: `$HARNESS9_APPROVALS`, else `$XDG_STATE_HOME/harness9/approvals.json`
//! (`~/.local/state/...`), keyed by the config file's canonical path, the server's name and the
//! spec's hash. An unapproved server's spec gets `Hold::Unapproved`: the supervisor shows it and
//! never spawns it.
//!
//! A file a sandboxed server may write is not the user's word any more: when a sandbox grant
//! (`cwd`, `writable`) of any server of the loaded configs covers a config file (`--config`,
//! the project's, the user's `mcp.json`) or a settings file (`harness9.toml`,
//! `config.toml`), that file is marked "exposed" in the approvals store, for good. An exposed
//! config's servers are held to approval like a project config's; an exposed settings file
//! (it sets the sandbox default) holds every config's servers. A grant that covers the
//! approvals store itself keeps its server from starting (it could approve anything).

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
    /// Config and settings files (canonical paths) a sandboxed server was once allowed to
    /// write: their servers always need approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exposed: Vec<String>,
}

/// The approvals file, loaded.
#[derive(Debug)]
pub struct Approvals {
    path: PathBuf,
    entries: Vec<Approval>,
    exposed: Vec<String>,
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
            exposed: self.exposed.clone(),
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
                exposed: Vec::new(),
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

/// `path` made absolute with symlinks resolved; for a path that does not exist (yet), its
/// nearest existing ancestor resolved and the rest appended.
fn resolved(path: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut tail = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(c) = std::fs::canonicalize(cur) {
            return tail
                .iter()
                .rev()
                .fold(c, |acc: PathBuf, part| acc.join(part));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                cur = parent;
            }
            _ => return abs,
        }
    }
}

/// Every path a sandboxed stdio server of `configs` may write besides its private temp dir:
/// its own `cwd` and its `writable` paths, resolved.
pub fn sandbox_grants<'a>(configs: impl IntoIterator<Item = &'a Config>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for c in configs {
        for s in &c.servers {
            let Some(sb) = &s.sandbox else { continue };
            if let TransportSpec::Stdio { cwd: Some(cwd), .. } = &s.transport {
                out.push((s.name.clone(), resolved(cwd)));
            }
            out.extend(sb.writable.iter().map(|w| (s.name.clone(), resolved(w))));
        }
    }
    out
}

/// The first server of `grants` that may write `path` (a file or folder harness9 reads as
/// configuration), or `None`.
pub fn writable_by_sandbox<'a>(path: &Path, grants: &'a [(String, PathBuf)]) -> Option<&'a str> {
    // Where it leads, and where it is: a symlink in a granted folder can be re-pointed.
    let mut places = vec![resolved(path)];
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        places.push(resolved(parent).join(name));
    }
    grants
        .iter()
        .find(|(_, g)| places.iter().any(|p| p.starts_with(g)))
        .map(|(name, _)| name.as_str())
}

/// Keeps from starting every unsandboxed stdio server of `cfg` whose program (or a `PATH`
/// folder its bare name is looked up in, up to where it is found) or a file among its
/// arguments lies under a sandbox grant: the sandboxed server could choose what runs outside
/// the sandbox, and an approval covers the command line, not the file's bytes. An
/// unsandboxed server whose working directory is under a grant (a script's imports come from
/// there) gets a warning.
fn refuse_planted_programs(cfg: &mut Config, grants: &[(String, PathBuf)]) {
    if grants.is_empty() {
        return;
    }
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let shown = cfg.path.display().to_string();
    let mut warnings = Vec::new();
    for s in cfg
        .servers
        .iter_mut()
        .filter(|s| s.sandbox.is_none() && s.hold.is_none())
    {
        let TransportSpec::Stdio {
            command, args, cwd, ..
        } = &s.transport
        else {
            continue;
        };
        let dir = cwd.clone().unwrap_or_else(|| here.clone());
        let mut runs: Vec<PathBuf> = Vec::new();
        if command.contains('/') {
            runs.push(dir.join(command));
        } else {
            for d in &path_dirs {
                let p = d.join(command);
                let found = p.is_file();
                runs.push(p);
                if found {
                    break;
                }
            }
        }
        runs.extend(args.iter().map(|a| dir.join(a)).filter(|p| p.is_file()));
        if let Some((p, by)) = runs
            .iter()
            .find_map(|p| writable_by_sandbox(p, grants).map(|by| (p, by)))
        {
            s.hold = Some(Hold::Invalid(format!(
                "the sandboxed server {by:?} may write {}, which this unsandboxed server runs; sandbox this server too or narrow {by:?}'s cwd and writable paths",
                p.display()
            )));
        } else if let Some(by) = writable_by_sandbox(&dir, grants) {
            warnings.push(format!(
                "{shown}: server {:?} runs unsandboxed in {}, which the sandboxed server {by:?} may write (a script's imports come from there); sandbox it too or narrow the grant",
                s.name,
                dir.display()
            ));
        }
    }
    for w in warnings {
        tracing::warn!("{w}");
        cfg.warnings.push(w);
    }
}

/// The settings files harness9 reads from `cwd` and the user's config directory.
fn settings_files() -> Vec<PathBuf> {
    let env = |k: &str| std::env::var(k).ok();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    crate::agent::model::settings::candidate_paths(&Default::default(), &env, &cwd)
}

/// Loads the config at `project` (`given`: with `--config`) and the user file `user` the way
/// [`load`] does, then applies the rule for files a sandboxed server may write (see the
/// module's doc): marks newly exposed files in the approvals store and holds the servers of
/// every exposed config (approving them first with `approve_all`).
pub fn load_guarded(
    project: &Path,
    given: bool,
    approve_all: bool,
    user: Option<&Path>,
) -> anyhow::Result<(Config, Option<Config>)> {
    let mut cfg = config::load(project, given)?;
    let mut user_cfg = match user {
        Some(u) => crate::app::sources::load_user(u)?,
        None => None,
    };
    let grants = sandbox_grants(std::iter::once(&cfg).chain(user_cfg.as_ref()));
    // A server that could rewrite the approvals themselves does not start.
    let store_file = store_path();
    if let Some(name) = writable_by_sandbox(&store_file, &grants) {
        let name = name.to_owned();
        for c in std::iter::once(&mut cfg).chain(user_cfg.as_mut()) {
            for s in c
                .servers
                .iter_mut()
                .filter(|s| s.name == name && s.sandbox.is_some())
            {
                s.hold = Some(Hold::Invalid(format!(
                    "its sandbox lets it write harness9's approvals file {} (through its cwd or writable paths), so it could approve any server; narrow its grants",
                    store_file.display()
                )));
            }
        }
    }
    refuse_planted_programs(&mut cfg, &grants);
    if let Some(u) = user_cfg.as_mut() {
        refuse_planted_programs(u, &grants);
    }
    let settings = settings_files();
    let watched: Vec<&Path> = std::iter::once(project)
        .chain(user)
        .chain(settings.iter().map(PathBuf::as_path))
        .collect();
    let mut newly: Vec<(String, String)> = watched
        .iter()
        .filter_map(|p| writable_by_sandbox(p, &grants).map(|n| (config_key(p), n.to_owned())))
        .collect();
    // A config whose `envFile` a sandboxed server may write is exposed with it.
    let configs = [
        (project, Some(&cfg)),
        (user.unwrap_or(project), user_cfg.as_ref()),
    ];
    for (path, c) in configs {
        let Some(c) = c else { continue };
        if let Some(n) = c
            .read_files
            .iter()
            .find_map(|f| writable_by_sandbox(f, &grants))
        {
            newly.push((config_key(path), n.to_owned()));
        }
    }
    let mut store = Approvals::load(&store_file).unwrap_or_else(|e| {
        tracing::warn!("{e:#}; every config is treated as written by a sandboxed server");
        Approvals {
            path: store_file.clone(),
            entries: Vec::new(),
            exposed: watched.iter().map(|p| config_key(p)).collect(),
        }
    });
    let mut changed = false;
    for (key, server) in newly {
        if !store.is_exposed(&key) {
            tracing::warn!(
                "{key} can be written by the sandboxed server {server:?}: its servers now need approval"
            );
            store.exposed.push(key);
            changed = true;
        }
    }
    if changed {
        store.save()?;
    }
    // What approvals cannot hold: the instructions the model reads and the repository's git
    // directory (its hooks and config run commands when the user runs git). Said, every load.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut unheld: Vec<PathBuf> = vec![cwd.join("AGENTS.md"), cwd.join("CLAUDE.md")];
    unheld.extend(cwd.ancestors().map(|d| d.join(".git")).find(|g| g.exists()));
    for f in unheld {
        if let Some(server) = writable_by_sandbox(&f, &grants) {
            let line = format!(
                "{}: the sandboxed server {server:?} may write {} (its cwd or writable paths cover it); harness9 cannot hold a change there for approval: narrow the grant or review the file",
                project.display(),
                f.display()
            );
            tracing::warn!("{line}");
            cfg.warnings.push(line);
        }
    }
    let settings_exposed = settings.iter().any(|p| store.is_exposed(&config_key(p)));
    if !given || settings_exposed || store.is_exposed(&config_key(project)) {
        hold_unapproved(&mut cfg, approve_all)?;
    }
    if let (Some(u), Some(path)) = (user_cfg.as_mut(), user) {
        if settings_exposed || store.is_exposed(&config_key(path)) {
            hold_unapproved(u, approve_all)?;
        }
    }
    Ok((cfg, user_cfg))
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
    fn a_grant_covers_what_lies_under_it_links_resolved() {
        let dir = std::env::temp_dir().join(format!("h9-grants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("granted/sub")).expect("mkdir");
        std::fs::create_dir_all(dir.join("other")).expect("mkdir");
        std::os::unix::fs::symlink(dir.join("granted"), dir.join("link")).expect("symlink");
        let grants = vec![("s".to_owned(), resolved(&dir.join("link")))];
        assert_eq!(
            writable_by_sandbox(&dir.join("granted/sub/mcp.json"), &grants),
            Some("s")
        );
        // A file that does not exist yet, under a granted folder, is covered too.
        assert_eq!(
            writable_by_sandbox(&dir.join("granted/new/x.toml"), &grants),
            Some("s")
        );
        assert_eq!(
            writable_by_sandbox(&dir.join("other/mcp.json"), &grants),
            None
        );
        // `..` in the path does not escape the check.
        assert_eq!(
            writable_by_sandbox(&dir.join("other/../granted/mcp.json"), &grants),
            Some("s")
        );
        // A link in a granted folder is covered wherever it points (it can be re-pointed).
        std::os::unix::fs::symlink(dir.join("other/mcp.json"), dir.join("granted/cfg.json"))
            .expect("symlink");
        assert_eq!(
            writable_by_sandbox(&dir.join("granted/cfg.json"), &grants),
            Some("s")
        );
        // A sibling whose name starts the same is not under the grant.
        assert_eq!(
            writable_by_sandbox(&dir.join("granted2/mcp.json"), &grants),
            None
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

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
