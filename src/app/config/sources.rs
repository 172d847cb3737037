//! Stage one, sources: where the MCP config comes from. The project's `.mcp.json` (or VS
//! Code's `.vscode/mcp.json`) is found by walking up from the working directory to the
//! repository root (the directory holding `.git`), else to the filesystem root; the user's
//! `$XDG_CONFIG_HOME/harness9/mcp.json` (`~/.config/harness9/mcp.json`) holds servers wanted
//! everywhere. A `--config` file replaces both. The user file is the user's own: its servers
//! need no approval. How the two are merged is [`super::merge`].

use std::path::{Path, PathBuf};

use super::read::load;
use super::types::{Config, ConfigError, DEFAULT_PATH};
use super::EntryDefaults;

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
pub fn load_user(path: &Path, defaults: &EntryDefaults) -> Result<Option<Config>, ConfigError> {
    if !path.is_file() {
        return Ok(None);
    }
    load(path, true, defaults).map(Some)
}

/// The project folder of a config file in `dir` (its directory): `dir` itself, or the folder
/// above it for VS Code's `.vscode/mcp.json`; `None` for an empty path (the working directory).
pub fn workspace_root(dir: &Path) -> Option<PathBuf> {
    let root = match dir.file_name() {
        Some(n) if n == ".vscode" => dir.parent().unwrap_or(dir),
        _ => dir,
    };
    (!root.as_os_str().is_empty()).then(|| root.to_path_buf())
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
}
