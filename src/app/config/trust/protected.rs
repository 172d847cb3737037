//! What the agent's sandboxed `bash` gets read-only ([`protected`]): every config and settings
//! file harness9 reads inside the project, its stores there, and the programs and scripts of
//! the configured stdio servers (what runs unsandboxed later), listed cheaply before each run.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use harness9_agent::builtins::ProtectedPaths;

use std::path::{Path, PathBuf};

use harness9_actors::TransportSpec;
use harness9_base::path::resolved;

use super::{entry_path, files_in, found_program, repository_root, resolved_cwd, store_path};
use crate::config;

/// Where a session's configuration comes from: what [`protected`] watches.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The project's config (or the `--config` file).
    pub config: PathBuf,
    /// The user's `mcp.json` merged under it.
    pub user: Option<PathBuf>,
    /// The settings files (`./harness9.toml`, the user's `config.toml`, a `--settings` file).
    pub settings: Vec<PathBuf>,
    /// What the entries get that they do not say (as the session loads them).
    pub defaults: config::EntryDefaults,
    /// The project: harness9's working directory.
    pub root: PathBuf,
}

/// The files of `sources` [`list`] reads, each with its modification time and length: the
/// list is computed again only when one of them changed.
type Generation = Vec<(PathBuf, Option<(SystemTime, u64)>)>;

/// The last list and the generation it was computed for.
type Cache = Arc<Mutex<Option<(Generation, Vec<PathBuf>)>>>;

/// The provider of the paths `bash` may not write: [`list`], cached until a config or
/// settings file changes.
pub fn protected(sources: Sources) -> ProtectedPaths {
    let cache: Cache = Arc::new(Mutex::new(None));
    ProtectedPaths::new(move || {
        let now = generation(&sources);
        let mut cached = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((g, paths)) = cached.as_ref() {
            if *g == now {
                return paths.clone();
            }
        }
        let paths = list(&sources);
        *cached = Some((now, paths.clone()));
        paths
    })
}

fn generation(sources: &Sources) -> Generation {
    std::iter::once(&sources.config)
        .chain(sources.user.as_ref())
        .chain(&sources.settings)
        .map(|p| {
            let m = std::fs::metadata(p).ok();
            let stamp = m.and_then(|m| Some((m.modified().ok()?, m.len())));
            (p.clone(), stamp)
        })
        .collect()
}

/// The existing files inside the project (`sources.root`, or the repository the project
/// config is in) that harness9 reads as configuration or runs unsandboxed: the config files,
/// the settings files, the `envFile`s, the approvals and permissions stores, and for every
/// stdio server of the configs its program (a symlink such as a `node_modules/.bin` entry and
/// the file it resolves to) and each file an argument names.
pub fn list(sources: &Sources) -> Vec<PathBuf> {
    let mut roots = vec![resolved(&sources.root)];
    roots.extend(repository_root(&sources.config));
    let mut found = Found {
        roots,
        out: Vec::new(),
    };
    let configs: Vec<&PathBuf> = std::iter::once(&sources.config)
        .chain(sources.user.as_ref())
        .collect();
    for f in configs.iter().copied().chain(&sources.settings) {
        found.add(absolute(f, &sources.root));
    }
    found.add(store_path());
    found.add(crate::stores::permission_store::path());
    for path in configs {
        let Ok(cfg) = config::load(path, false, &sources.defaults) else {
            continue;
        };
        for f in &cfg.read_files {
            found.add(absolute(f, &sources.root));
        }
        for s in &cfg.servers {
            if let TransportSpec::Stdio {
                command,
                args,
                env,
                cwd,
            } = &s.transport
            {
                found.add_server(command, args, env, cwd.as_deref());
            }
        }
    }
    found.out
}

/// The files [`list`] found so far, inside the project's `roots`.
struct Found {
    roots: Vec<PathBuf>,
    out: Vec<PathBuf>,
}

impl Found {
    /// Whether `p` is inside a root: where it leads, and where it is (a symlink in the project
    /// can be re-pointed).
    fn inside(&self, p: &Path) -> bool {
        let mut places = vec![resolved(p)];
        if let (Some(parent), Some(name)) = (p.parent(), p.file_name()) {
            places.push(resolved(parent).join(name));
        }
        places
            .iter()
            .any(|r| self.roots.iter().any(|root| r.starts_with(root)))
    }

    /// Adds `p` when it exists inside a root, by the file it resolves to: a symlink itself
    /// cannot be kept read-only (the shell's sandbox refuses to run with one listed), and
    /// re-pointing one changes what the approval and the spawn's pins see.
    fn add(&mut self, p: PathBuf) {
        if !(p.exists() && self.inside(&p)) {
            return;
        }
        let Ok(real) = std::fs::canonicalize(&p) else {
            return;
        };
        if self.inside(&real) && !self.out.contains(&real) {
            self.out.push(real);
        }
    }

    /// Adds what a stdio server runs: its program as found (a symlink) and what it resolves
    /// to, each file an argument names, and the repository's files it runs.
    fn add_server(
        &mut self,
        command: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&Path>,
    ) {
        let dir = resolved_cwd(cwd);
        if command.contains('/') {
            self.add(dir.join(command));
        } else if let Some(path) = entry_path(env) {
            if let Some(found) = std::env::split_paths(&path)
                .map(|d| dir.join(d).join(command))
                .find(|p| p.is_file())
            {
                self.add(found);
            }
        }
        let program = found_program(command, env, &dir);
        for a in args.iter().filter(|a| !a.is_empty()) {
            let p = dir.join(a);
            if p.is_file() {
                self.add(p);
            }
        }
        for root in self.roots.clone() {
            for f in files_in(&root, program.as_deref(), args, &dir) {
                self.add(f);
            }
        }
    }
}

/// `p` made absolute against `root`.
fn absolute(p: &Path, root: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configs_and_the_servers_programs_in_the_project_are_listed_once() {
        let base = std::env::temp_dir().join(format!("h9-protected-{}", std::process::id()));
        let root = base.join("proj");
        for d in ["dist", "node_modules/.bin", "node_modules/pkg", "sub"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let root = std::fs::canonicalize(&root).unwrap();
        let write = |p: &str, text: &str| std::fs::write(root.join(p), text).unwrap();
        write("run.sh", "#!/bin/sh\n");
        write("dist/index.js", "");
        write("node_modules/pkg/cli.js", "");
        write("server.env", "K=v\n");
        write("harness9.toml", "");
        harness9_platform::fs::symlink("../pkg/cli.js", root.join("node_modules/.bin/cli"))
            .unwrap();
        std::fs::write(base.join("outside.py"), "").unwrap();
        let cwd = root.display().to_string();
        let config = serde_json::json!({"mcpServers": {
            "script": {"command": "./run.sh", "cwd": cwd},
            "node": {"command": "node", "args": ["dist/index.js", "--flag", "missing.js"], "cwd": cwd},
            "bin": {"command": "node_modules/.bin/cli", "cwd": cwd, "envFile": "server.env"},
            "out": {"command": "python3", "args": ["../outside.py"], "cwd": cwd},
            "web": {"url": "http://127.0.0.1:1/"},
        }});
        write(".mcp.json", &config.to_string());
        let sources = Sources {
            config: root.join(".mcp.json"),
            user: Some(base.join("no-such-user-file.json")),
            settings: vec![root.join("harness9.toml"), base.join("config.toml")],
            defaults: config::EntryDefaults::in_memory(),
            root: root.clone(),
        };
        let got = list(&sources);
        let want: Vec<PathBuf> = [
            ".mcp.json",
            "harness9.toml",
            "run.sh",
            "dist/index.js",
            "server.env",
            // The link itself cannot be kept read-only: the file it leads to is.
            "node_modules/pkg/cli.js",
        ]
        .iter()
        .map(|p| root.join(p))
        .collect();
        for w in &want {
            assert!(got.contains(w), "{w:?} missing from {got:?}");
        }
        assert_eq!(got.len(), want.len(), "{got:?}");
        // The provider caches by the config files' generation, and sees a change.
        let provider = protected(sources);
        assert_eq!(provider.get().len(), want.len());
        std::fs::write(root.join("server.py"), "").unwrap();
        let config = serde_json::json!({"mcpServers": {
            "py": {"command": "python3", "args": ["server.py"], "cwd": cwd}}});
        write(".mcp.json", &format!("{config}\n"));
        assert!(provider.get().contains(&root.join("server.py")));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
