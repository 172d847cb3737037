//! Where the MCP config comes from. The project's `.mcp.json` (or VS Code's `.vscode/mcp.json`)
//! is found by walking up from the working directory to the repository root (the directory holding `.git`), else to the
//! filesystem root; the user's `$XDG_CONFIG_HOME/harness9/mcp.json` (`~/.config/harness9/mcp.json`)
//! holds servers wanted everywhere. The two are merged by server name, the project winning; a
//! `--config` file replaces both. The user file is the user's own: its servers need no approval.

use std::path::{Path, PathBuf};

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
    project.expansions.extend(user.expansions);
    project.inputs.extend(user.inputs);
    project.warnings.extend(user.warnings);
    project
}

/// The project config (its unapproved servers held) with the user file's servers merged under
/// it: what a session starts with and what every hot reload reads. A file a sandboxed server
/// may write is held to approval (see [`crate::trust::load_guarded`]).
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
        Some(u) => merge(cfg, u),
        None => cfg,
    })
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
}
