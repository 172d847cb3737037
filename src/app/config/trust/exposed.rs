//! Files a sandboxed server may write are not the user's word any more: the grants of every
//! sandboxed server of the loaded configs, which config and settings files (and harness9's own
//! stores) they cover, and the load that holds an exposed config's servers to approval.

use std::path::{Path, PathBuf};

use harness9_actors::{Hold, TransportSpec};
use harness9_base::path::resolved;

use super::{config_key, hold_changed_given, hold_unapproved, store_path, Approvals};
use crate::config::Config;

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
pub(super) fn refuse_planted_programs(cfg: &mut Config, grants: &[(String, PathBuf)]) {
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
pub(super) fn settings_files() -> Vec<PathBuf> {
    let env = |k: &str| std::env::var(k).ok();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    harness9_agent::model::settings::candidate_paths(&Default::default(), &env, &cwd)
}

/// The config files a load read: what [`guard`] marks exposed and holds.
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    /// The project config (or the `--config` file).
    pub project: &'a Path,
    /// Whether `project` was given with `--config`.
    pub given: bool,
    /// The user's `mcp.json`, when one is merged.
    pub user: Option<&'a Path>,
}

/// The trust stage of a load: the config `cfg` read from `files.project` and the user's
/// `user_cfg` as [`super::load`] holds them, then the rule for files a sandboxed server may
/// write (see the module's doc): marks newly exposed files in the approvals store and holds the
/// servers of every exposed config (approving them first with `approve_all`).
pub fn guard(
    mut cfg: Config,
    mut user_cfg: Option<Config>,
    files: Files<'_>,
    approve_all: bool,
) -> anyhow::Result<(Config, Option<Config>)> {
    let grants = sandbox_grants(std::iter::once(&cfg).chain(user_cfg.as_ref()));
    let store_file = store_path();
    hold_store_writers(&store_file, &mut cfg, user_cfg.as_mut(), &grants);
    refuse_planted_programs(&mut cfg, &grants);
    if let Some(u) = user_cfg.as_mut() {
        refuse_planted_programs(u, &grants);
    }
    let settings = settings_files();
    let watched: Vec<&Path> = std::iter::once(files.project)
        .chain(files.user)
        .chain(settings.iter().map(PathBuf::as_path))
        .collect();
    let newly = newly_exposed(&watched, files, [Some(&cfg), user_cfg.as_ref()], &grants);
    let store = mark_exposed(store_file, &watched, newly)?;
    warn_unheld(&mut cfg, files.project, &grants);
    let settings_exposed = settings.iter().any(|p| store.is_exposed(&config_key(p)));
    if !files.given || settings_exposed || store.is_exposed(&config_key(files.project)) {
        hold_unapproved(&mut cfg, approve_all)?;
    } else {
        hold_changed_given(&mut cfg, approve_all)?;
    }
    if let (Some(u), Some(path)) = (user_cfg.as_mut(), files.user) {
        if settings_exposed || store.is_exposed(&config_key(path)) {
            hold_unapproved(u, approve_all)?;
        }
    }
    Ok((cfg, user_cfg))
}

/// Holds every sandboxed server of `cfg` and `user_cfg` that could rewrite the approvals
/// (`store_file`), the remembered "always" answers of the permissions or the tool-list cache:
/// it does not start.
fn hold_store_writers(
    store_file: &Path,
    cfg: &mut Config,
    mut user_cfg: Option<&mut Config>,
    grants: &[(String, PathBuf)],
) {
    let mut guarded = vec![
        (
            store_file.to_path_buf(),
            "approvals file",
            "approve any server",
        ),
        (
            crate::stores::permission_store::path(),
            "remembered permissions",
            "allow any tool call",
        ),
    ];
    if let Some(dir) = crate::stores::tool_cache::dir() {
        // A planted entry would offer another server's tools with annotations of its choosing
        // (`readOnlyHint` runs a call unasked) until that server connects.
        guarded.push((
            dir,
            "tool-list cache",
            "offer another server's tools as it likes",
        ));
    }
    for (file, what, could) in guarded {
        let Some(name) = writable_by_sandbox(&file, grants) else {
            continue;
        };
        let name = name.to_owned();
        for c in std::iter::once(&mut *cfg).chain(user_cfg.as_deref_mut()) {
            for s in c
                .servers
                .iter_mut()
                .filter(|s| s.name == name && s.sandbox.is_some())
            {
                s.hold = Some(Hold::Invalid(format!(
                    "its sandbox lets it write harness9's {what} {} (through its cwd or writable paths), so it could {could}; narrow its grants",
                    file.display()
                )));
            }
        }
    }
}

/// The files of `watched` a sandboxed server of `grants` may write, and the configs (the
/// project's, the user's, as in `files`) whose `envFile` one may write, each as (its key, the
/// server).
fn newly_exposed(
    watched: &[&Path],
    files: Files<'_>,
    configs: [Option<&Config>; 2],
    grants: &[(String, PathBuf)],
) -> Vec<(String, String)> {
    let mut newly: Vec<(String, String)> = watched
        .iter()
        .filter_map(|p| writable_by_sandbox(p, grants).map(|n| (config_key(p), n.to_owned())))
        .collect();
    // A config whose `envFile` a sandboxed server may write is exposed with it.
    let paths = [files.project, files.user.unwrap_or(files.project)];
    for (path, c) in paths.into_iter().zip(configs) {
        let Some(c) = c else { continue };
        if let Some(n) = c
            .read_files
            .iter()
            .find_map(|f| writable_by_sandbox(f, grants))
        {
            newly.push((config_key(path), n.to_owned()));
        }
    }
    newly
}

/// The approvals store at `store_file` with `newly` marked exposed (saved when that changed
/// it); an unreadable store treats every `watched` file as exposed.
fn mark_exposed(
    store_file: PathBuf,
    watched: &[&Path],
    newly: Vec<(String, String)>,
) -> anyhow::Result<Approvals> {
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
    Ok(store)
}

/// Warns (in `cfg`'s warnings, naming `project`) of what approvals cannot hold that a
/// sandboxed server may write: the instructions the model reads and the repository's git
/// directory (its hooks and config run commands when the user runs git). Said, every load.
fn warn_unheld(cfg: &mut Config, project: &Path, grants: &[(String, PathBuf)]) {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut unheld: Vec<PathBuf> = vec![cwd.join("AGENTS.md"), cwd.join("CLAUDE.md")];
    unheld.extend(cwd.ancestors().map(|d| d.join(".git")).find(|g| g.exists()));
    for f in unheld {
        if let Some(server) = writable_by_sandbox(&f, grants) {
            let line = format!(
                "{}: the sandboxed server {server:?} may write {} (its cwd or writable paths cover it); harness9 cannot hold a change there for approval: narrow the grant or review the file",
                project.display(),
                f.display()
            );
            tracing::warn!("{line}");
            cfg.warnings.push(line);
        }
    }
}
