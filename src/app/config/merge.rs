//! The last stage, the session's specs: the project config and the user's merged. A name in
//! both files, or two names whose tool names would collide, hold their servers with an error
//! naming both files (a server's name is its identity: what permission rules name).
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

use super::types::{Config, Written};

/// The project config with the user file's servers (`user`, if any) merged under it, clashes
/// held; until the project is [`trusted`], the user's servers without a `cwd` run in their
/// [`neutral_dir`].
pub(super) fn merged(project: Config, user: Option<Config>, approve_project: bool) -> Config {
    let mut cfg = match user {
        Some(mut u) => {
            if !trusted(&project, approve_project) {
                let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                away_from(&mut u, &crate::stores::state_dir(), &here);
            }
            merge(project, u)
        }
        None => project,
    };
    hold_clashes(&mut cfg);
    cfg
}

/// The project config with the user's servers added after its own. A name both files hold is
/// a clash, not a shadowing: the project's entry is kept held as invalid, with an error naming
/// both files (a user server whose name the project disables is held so), and the user's is
/// left out; nothing runs under a name a repository took from one of yours (both disabled:
/// nothing to say).
pub fn merge(mut project: Config, user: Config) -> Config {
    let both = |name: &str, user_file: &Path, project_file: &Path| {
        format!(
            "server \"{name}\" is defined both in {} and in your {}: a project cannot take the name of one of your servers, so neither is used; rename one of them or remove one entry",
            project_file.display(),
            user_file.display()
        )
    };
    for mut s in user.servers {
        let message = both(&s.name, &user.path, &project.path);
        if let Some(p) = project.servers.iter_mut().find(|p| p.name == s.name) {
            hold(p, message);
        } else if project.disabled.contains(&s.name) {
            // Shown once, as the held server.
            project.disabled.retain(|d| *d != s.name);
            hold(&mut s, message);
            project.sources.push((s.name.clone(), user.path.clone()));
            project.servers.push(s);
        } else {
            project.sources.push((s.name.clone(), user.path.clone()));
            project.servers.push(s);
        }
    }
    for d in user.disabled {
        let message = both(&d, &user.path, &project.path);
        if let Some(p) = project.servers.iter_mut().find(|p| p.name == d) {
            hold(p, message);
        } else if !project.disabled.contains(&d) {
            project.disabled.push(d);
        }
    }
    // The written form of each user server that is in (not clashing).
    let mine: Vec<String> = project.sources.iter().map(|(n, _)| n.clone()).collect();
    let theirs: Vec<(String, Written)> = user
        .written
        .into_iter()
        .filter(|(n, _)| mine.contains(n) && project.written(n).is_none())
        .collect();
    project.written.extend(theirs);
    project.secrets.extend(user.secrets);
    project.expansions.extend(user.expansions);
    project.inputs.extend(user.inputs);
    project.warnings.extend(user.warnings);
    project
}

/// Holds `spec` as invalid with `message` (after the reason it is already invalid for, if it
/// is).
fn hold(spec: &mut harness9_actors::ServerSpec, message: String) {
    spec.hold = Some(harness9_actors::Hold::Invalid(match spec.hold.take() {
        Some(harness9_actors::Hold::Invalid(first)) => format!("{first}; {message}"),
        _ => message,
    }));
}

/// Holds every two servers of `cfg` whose tools would be registered under the same names
/// (their sanitized names are equal, `brave.search` and `brave_search`, or one's prefix
/// starts the other's: `harness9_actors::naming::collide`), each with an error naming both
/// and the files they come from: neither takes the other's tool names, whichever connects
/// first.
pub fn hold_clashes(cfg: &mut Config) {
    let names: Vec<&str> = cfg.servers.iter().map(|s| s.name.as_str()).collect();
    let pairs = harness9_actors::naming::collisions(&names);
    if pairs.is_empty() {
        return;
    }
    let file = |name: &str| {
        cfg.sources
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&cfg.path, |(_, p)| p)
            .display()
            .to_string()
    };
    let mut messages: Vec<(usize, String)> = Vec::new();
    for (a, b) in pairs {
        let (na, nb) = (&cfg.servers[a].name, &cfg.servers[b].name);
        let message = format!(
            "server \"{na}\" ({}) and server \"{nb}\" ({}) would register their tools under the same names ({}...), so neither is used; rename one of them",
            file(na),
            file(nb),
            harness9_actors::naming::server_prefix(na)
        );
        tracing::warn!("{message}");
        messages.push((a, message.clone()));
        messages.push((b, message));
    }
    for (i, message) in messages {
        hold(&mut cfg.servers[i], message);
    }
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
    use crate::config;

    /// `text` parsed as the config at `path`, no variable set.
    fn parse(text: &str, path: &str) -> Config {
        config::parse(
            text,
            path,
            Path::new("/"),
            &|_| None,
            &config::EntryDefaults::in_memory(),
        )
        .unwrap()
    }

    #[test]
    fn a_name_in_both_files_is_a_clash_and_the_user_file_adds_the_rest() {
        let project = parse(
            r#"{"mcpServers": {"a": {"command": "p"}, "off": {"command": "x", "disabled": true}, "gone": {"command": "x", "disabled": true}}}"#,
            "/p/.mcp.json",
        );
        let user = parse(
            r#"{"mcpServers": {"a": {"command": "u"}, "b": {"command": "u"}, "off": {"command": "u"}, "gone": {"command": "u", "disabled": true}}}"#,
            "/home/u/.config/harness9/mcp.json",
        );
        let m = merge(project, user);
        let names: Vec<&str> = m.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "off"]);
        assert_eq!(m.servers[0].transport.command_line(), "p");
        for held in [&m.servers[0], &m.servers[2]] {
            let Some(harness9_actors::Hold::Invalid(why)) = &held.hold else {
                panic!("{held:?}")
            };
            assert!(
                why.contains("/p/.mcp.json")
                    && why.contains("/home/u/.config/harness9/mcp.json")
                    && why.contains("neither is used"),
                "{why}"
            );
        }
        assert_eq!(m.servers[1].hold, None);
        assert_eq!(m.disabled, ["gone"]);
        let user_file = PathBuf::from("/home/u/.config/harness9/mcp.json");
        assert_eq!(
            m.sources,
            [
                ("b".to_owned(), user_file.clone()),
                ("off".to_owned(), user_file)
            ]
        );
    }

    #[test]
    fn names_that_collide_once_sanitized_hold_both_naming_their_files() {
        let mut project = config::parse(
            r#"{"mcpServers": {"brave.search": {"command": "p"}, "ok": {"command": "p"}}}"#,
            "/p/.mcp.json",
            Path::new("/"),
            &|_| None,
            &config::EntryDefaults::in_memory(),
        )
        .unwrap();
        let user = config::parse(
            r#"{"mcpServers": {"brave_search": {"command": "u"}}}"#,
            "/u/mcp.json",
            Path::new("/"),
            &|_| None,
            &config::EntryDefaults::in_memory(),
        )
        .unwrap();
        project = merge(project, user);
        hold_clashes(&mut project);
        let why = |n: &str| match &project.servers.iter().find(|s| s.name == n).unwrap().hold {
            Some(harness9_actors::Hold::Invalid(w)) => w.clone(),
            other => panic!("{n}: {other:?}"),
        };
        for n in ["brave.search", "brave_search"] {
            let w = why(n);
            assert!(
                w.contains("server \"brave.search\" (/p/.mcp.json)")
                    && w.contains("server \"brave_search\" (/u/mcp.json)"),
                "{w}"
            );
        }
        assert_eq!(project.servers[1].hold, None);
    }

    #[test]
    fn an_untrusted_project_moves_the_users_servers_without_cwd_and_keeps_their_roots() {
        let mut user = parse(
            r#"{"mcpServers": {"a.b": {"command": "npx"}, "here": {"command": "x", "cwd": "/w"},
                "r": {"command": "y", "roots": ["/r"]}, "h": {"url": "http://127.0.0.1:1/"}}}"#,
            "/home/u/.config/harness9/mcp.json",
        );
        let state = std::env::temp_dir().join(format!("h9-neutral-{}", std::process::id()));
        away_from(&mut user, &state, Path::new("/proj"));
        let cwd = |i: usize| match &user.servers[i].transport {
            TransportSpec::Stdio { cwd, .. } => cwd.clone(),
            _ => None,
        };
        let dir = neutral_dir(&state, "a.b");
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
