//! Where the MCP config comes from. The project's `.mcp.json` (or VS Code's `.vscode/mcp.json`)
//! is found by walking up from the working directory to the repository root (the directory holding `.git`), else to the
//! filesystem root; the user's `$XDG_CONFIG_HOME/harness9/mcp.json` (`~/.config/harness9/mcp.json`)
//! holds servers wanted everywhere. The two are merged by server name, the project winning; a
//! `--config` file replaces both. The user file is the user's own: its servers need no approval.
//!
//! An untrusted directory does not decide what the user's servers execute: until the project
//! is trusted ([`trusted`]: its project config's servers approved, or `--approve-project`),
//! a user server with no `cwd` runs in an empty directory of its own under the state
//! directory ([`neutral_dir`]), not in the repository, where launchers resolve code
//! (`npx` prefers `./node_modules/.bin`, `python -m mod` imports `./mod/`). Its roots stay
//! the working directory.

use std::path::{Path, PathBuf};

use harness9_actors::{Hold, Roots, TransportSpec};
use sha2::{Digest, Sha256};

use super::config::{self, Config, DEFAULT_PATH};

/// The project's `.mcp.json`: the nearest one from `start` up to the repository root (a
/// directory holding `.git`) or the filesystem root; `None` when there is none.
pub fn find_project(start: &Path) -> Option<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        // Ours first, then VS Code's.
        for candidate in [d.join(DEFAULT_PATH), d.join(".vscode").join("mcp.json")] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        if d.join(".git").exists() {
            return None;
        }
        dir = d.parent();
    }
    None
}

/// The user's config file: `$XDG_CONFIG_HOME/harness9/mcp.json`, else the system's place
/// (`~/.config/harness9/mcp.json` on Linux, `~/Library/Application Support/harness9/mcp.json`
/// on macOS: `harness9_platform::dirs`); `None` without either variable.
pub fn user_path() -> Option<PathBuf> {
    Some(harness9_platform::dirs::config_dir()?.join("mcp.json"))
}

/// Loads the user file (missing: `None`).
pub fn load_user(
    path: &Path,
    defaults: &config::EntryDefaults,
) -> Result<Option<Config>, config::ConfigError> {
    if !path.is_file() {
        return Ok(None);
    }
    config::load(path, true, defaults).map(Some)
}

/// The project config with the user's servers it does not name added after its own; a user
/// server the project names too is shadowed (kept in `shadowed`, left out).
pub fn merge(mut project: Config, user: Config) -> Config {
    let named = |c: &Config, n: &str| {
        c.servers.iter().any(|s| s.name == n) || c.disabled.iter().any(|d| d == n)
    };
    for s in user.servers {
        if named(&project, &s.name) {
            project.shadowed.push((s.name, user.path.clone()));
        } else {
            project.sources.push((s.name.clone(), user.path.clone()));
            project.servers.push(s);
        }
    }
    for d in user.disabled {
        if named(&project, &d) {
            project.shadowed.push((d, user.path.clone()));
        } else {
            project.disabled.push(d);
        }
    }
    // The written form of each user server that is in (not shadowed).
    let mine: Vec<String> = project.sources.iter().map(|(n, _)| n.clone()).collect();
    let theirs: Vec<(String, config::Written)> = user
        .written
        .into_iter()
        .filter(|(n, _)| mine.contains(n) && project.written(n).is_none())
        .collect();
    project.written.extend(theirs);
    project.secrets.extend(user.secrets);
    project.inputs.extend(user.inputs);
    project.warnings.extend(user.warnings);
    project
}

/// The project config (its unapproved servers held) with the user file's servers merged under
/// it: what a session starts with and what every hot reload reads. A file a sandboxed server
/// may write is held to approval (see [`crate::trust::load_guarded`]). Until the project is
/// [`trusted`], the user's servers without a `cwd` run in their [`neutral_dir`].
pub(crate) fn load_merged(
    project: &std::path::Path,
    must_exist: bool,
    approve_project: bool,
    user: Option<&std::path::Path>,
    defaults: &config::EntryDefaults,
) -> anyhow::Result<Config> {
    let (cfg, user) =
        crate::trust::load_guarded(project, must_exist, approve_project, user, defaults)?;
    Ok(match user {
        Some(mut u) => {
            if !trusted(&cfg, approve_project) {
                let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                away_from(&mut u, &crate::paths::state_dir(), &here);
            }
            merge(cfg, u)
        }
        None => cfg,
    })
}

/// Whether the working directory is trusted with the user's servers: `--approve-project`, or
/// a project config of which at least one server runs (the user approved it) and none waits
/// for approval. An empty or invalid project config vouches for nothing.
pub fn trusted(project: &Config, approve_project: bool) -> bool {
    approve_project
        || (project.servers.iter().any(|s| s.hold.is_none())
            && !project
                .servers
                .iter()
                .any(|s| s.hold == Some(Hold::Unapproved)))
}

/// The directory a user's server `name` with no `cwd` runs in while the project is not
/// trusted: `<state>/servers/<name, cleaned>-<hash>`, empty and its own (a sandboxed server
/// may write it; no other server runs there).
pub fn neutral_dir(state: &Path, name: &str) -> PathBuf {
    let clean: String = name
        .chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = Sha256::digest(name.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    state.join("servers").join(format!("{clean}-{hex}"))
}

/// Moves the stdio servers of the user's config `user` that have no `cwd` to their
/// [`neutral_dir`] under `state` (created private), their roots kept at `here`. A directory
/// that cannot be made holds its server with a message saying so.
fn away_from(user: &mut Config, state: &Path, here: &Path) {
    for s in &mut user.servers {
        let TransportSpec::Stdio { cwd, .. } = &mut s.transport else {
            continue;
        };
        if cwd.is_some() {
            continue;
        }
        let dir = neutral_dir(state, &s.name);
        if let Err(e) = harness9_base::private_fs::private_dir(&dir) {
            s.hold = Some(Hold::Invalid(format!(
                "server {:?} of {}: cannot make the directory it runs in outside this untrusted project, {}: {e}; fix it, or set \"cwd\" in its entry",
                s.name,
                user.path.display(),
                dir.display()
            )));
            continue;
        }
        *cwd = Some(dir);
        if s.roots == Roots::WorkingDirectory {
            s.roots = Roots::Paths(vec![here.to_path_buf()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_config_is_found_up_to_the_repository_root() {
        let root = std::env::temp_dir().join(format!("h9-sources-{}", std::process::id()));
        let deep = root.join("repo/a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        assert_eq!(find_project(&deep), None);
        std::fs::write(root.join("repo/.mcp.json"), "{}").unwrap();
        assert_eq!(find_project(&deep), Some(root.join("repo/.mcp.json")));
        std::fs::write(root.join("repo/a/.mcp.json"), "{}").unwrap();
        assert_eq!(find_project(&deep), Some(root.join("repo/a/.mcp.json")));
        // Above the repository root nothing is looked at.
        std::fs::remove_file(root.join("repo/a/.mcp.json")).unwrap();
        std::fs::remove_file(root.join("repo/.mcp.json")).unwrap();
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        assert_eq!(find_project(&deep), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_project_wins_a_name_and_the_user_file_adds_the_rest() {
        let parse = |text: &str, path: &str| {
            config::parse(
                text,
                path,
                Path::new("/"),
                &|_| None,
                &config::EntryDefaults::in_memory(),
            )
            .unwrap()
        };
        let project = parse(
            r#"{"mcpServers": {"a": {"command": "p"}, "off": {"command": "x", "disabled": true}}}"#,
            "/p/.mcp.json",
        );
        let user = parse(
            r#"{"mcpServers": {"a": {"command": "u"}, "b": {"command": "u"}, "off": {"command": "u"}}}"#,
            "/home/u/.config/harness9/mcp.json",
        );
        let m = merge(project, user);
        let names: Vec<&str> = m.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(m.servers[0].transport.command_line(), "p");
        let user_file = PathBuf::from("/home/u/.config/harness9/mcp.json");
        assert_eq!(
            m.shadowed,
            [
                ("a".to_owned(), user_file.clone()),
                ("off".to_owned(), user_file)
            ]
        );
        assert_eq!(
            m.sources,
            [(
                "b".to_owned(),
                PathBuf::from("/home/u/.config/harness9/mcp.json")
            )]
        );
    }

    #[test]
    fn an_untrusted_project_moves_the_users_servers_without_cwd_and_keeps_their_roots() {
        let parse = |text: &str, path: &str| {
            config::parse(
                text,
                path,
                Path::new("/"),
                &|_| None,
                &config::EntryDefaults::in_memory(),
            )
            .unwrap()
        };
        let mut user = parse(
            r#"{"mcpServers": {"a/b": {"command": "npx"}, "here": {"command": "x", "cwd": "/w"},
                "r": {"command": "y", "roots": ["/r"]}, "h": {"url": "http://127.0.0.1:1/"}}}"#,
            "/home/u/.config/harness9/mcp.json",
        );
        let state = std::env::temp_dir().join(format!("h9-neutral-{}", std::process::id()));
        away_from(&mut user, &state, Path::new("/proj"));
        let cwd = |i: usize| match &user.servers[i].transport {
            TransportSpec::Stdio { cwd, .. } => cwd.clone(),
            _ => None,
        };
        let dir = neutral_dir(&state, "a/b");
        assert!(
            dir.starts_with(state.join("servers")) && dir.is_dir(),
            "{dir:?}"
        );
        assert!(dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("a_b-"));
        assert_ne!(dir, neutral_dir(&state, "a_b"));
        assert_eq!(cwd(0), Some(dir));
        assert_eq!(
            user.servers[0].roots,
            Roots::Paths(vec![PathBuf::from("/proj")])
        );
        assert_eq!(cwd(1), Some(PathBuf::from("/w")));
        assert_eq!(user.servers[1].roots, Roots::WorkingDirectory);
        assert_eq!(
            user.servers[2].roots,
            Roots::Paths(vec![PathBuf::from("/r")])
        );
        assert!(user.servers.iter().all(|s| s.hold.is_none()));
        std::fs::remove_dir_all(&state).unwrap();
        // Trust: the user's word, or an approved project server and none waiting.
        let mut project = parse(
            r#"{"mcpServers": {"p": {"command": "p"}, "q": {"command": "q"}}}"#,
            "/p/.mcp.json",
        );
        assert!(trusted(&project, false));
        project.servers[1].hold = Some(Hold::Unapproved);
        assert!(!trusted(&project, false));
        assert!(trusted(&project, true));
        project.servers[0].hold = Some(Hold::Invalid("bad".into()));
        project.servers[1].hold = Some(Hold::Invalid("bad".into()));
        assert!(!trusted(&project, false));
        assert!(!trusted(&parse("{}", "/p/.mcp.json"), false));
    }
}
