//! The tasks harness9 started and still tracks (`io.modelcontextprotocol/tasks` has no
//! `tasks/list`): `tasks.json` in the sessions directory, private (0600, atomic replace), at
//! most [`MAX_TRACKED`] entries and [`MAX_FILE_BYTES`]; `mcp call --no-wait` adds one,
//! `mcp tasks get` of an ended task and `mcp tasks cancel` remove it, `mcp tasks list` shows them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most tasks kept (the oldest go first).
pub const MAX_TRACKED: usize = 256;
/// A larger file is not read (its name and the limit are said).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// One task harness9 started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackedTask {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The server's id of the task.
    pub task_id: String,
    /// When it started, in seconds since the epoch.
    pub started: u64,
}

/// The store's file: `tasks.json` in the sessions directory.
pub fn path() -> PathBuf {
    crate::stores::conversations::dir().join("tasks.json")
}

/// Every tracked task in `file` (none when it does not exist).
pub fn load(file: &Path) -> anyhow::Result<Vec<TrackedTask>> {
    let text = match crate::config::read_regular(file, MAX_FILE_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => anyhow::bail!(
            "cannot read the task list {}: {e}; remove it to start a new one",
            file.display()
        ),
    };
    serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "the task list {} is not valid ({e}); remove it to start a new one",
            file.display()
        )
    })
}

fn save(file: &Path, tasks: &[TrackedTask]) -> anyhow::Result<()> {
    let body = serde_json::to_vec_pretty(tasks)?;
    crate::private_fs::write_private(file, &body)
        .map_err(|e| anyhow::anyhow!("cannot write the task list {}: {e}", file.display()))
}

/// Adds `task` (the oldest dropped past [`MAX_TRACKED`]).
pub fn add(file: &Path, task: TrackedTask) -> anyhow::Result<()> {
    let mut all = load(file)?;
    all.retain(|t| !(t.server == task.server && t.task_id == task.task_id));
    all.push(task);
    let over = all.len().saturating_sub(MAX_TRACKED);
    all.drain(..over);
    save(file, &all)
}

/// Forgets the task `task_id` of `server`; whether it was tracked.
pub fn remove(file: &Path, server: &str, task_id: &str) -> anyhow::Result<bool> {
    let mut all = load(file)?;
    let before = all.len();
    all.retain(|t| !(t.server == server && t.task_id == task_id));
    if all.len() == before {
        return Ok(false);
    }
    save(file, &all)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(server: &str, id: &str) -> TrackedTask {
        TrackedTask {
            server: server.into(),
            tool: "t".into(),
            task_id: id.into(),
            started: 1,
        }
    }

    #[test]
    fn add_remove_and_bound() {
        let dir = std::env::temp_dir().join(format!("h9-task-store-{}", std::process::id()));
        let file = dir.join("tasks.json");
        assert!(load(&file).unwrap().is_empty());
        add(&file, task("a", "1")).unwrap();
        add(&file, task("a", "1")).unwrap();
        add(&file, task("b", "2")).unwrap();
        assert_eq!(load(&file).unwrap().len(), 2);
        assert!(remove(&file, "a", "1").unwrap());
        assert!(!remove(&file, "a", "1").unwrap());
        for i in 0..MAX_TRACKED + 5 {
            add(&file, task("c", &i.to_string())).unwrap();
        }
        let all = load(&file).unwrap();
        assert_eq!(all.len(), MAX_TRACKED);
        assert_eq!(all.last().unwrap().task_id, (MAX_TRACKED + 4).to_string());
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&file).unwrap()) & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(&file, "not json").unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(e.contains("tasks.json") && e.contains("remove it"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
