//! A saved conversation's pending tasks (`<id>.tasks.json` beside its `<id>.jsonl`): the tasks
//! its calls became whose results are not saved yet, so `--continue` and `/resume` follow them
//! again. Private (0600, atomic replace), at most [`MAX_PENDING`] entries and
//! [`MAX_FILE_BYTES`]; a file that cannot be read is logged and taken as empty.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use harness9_agent::engine::{PendingTask, TaskJournal};

/// The most tasks kept (the oldest go first).
pub const MAX_PENDING: usize = 64;
/// A larger file is not read.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// An entry with a longer field (a server's task id, a call id) is not kept.
const MAX_FIELD: usize = 1024;

/// The pending-task file of session `id` in `dir`.
pub fn path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.tasks.json"))
}

/// One session's pending tasks, in its file.
#[derive(Debug)]
pub struct SessionTasks {
    file: PathBuf,
    /// Read-modify-write of the file, one at a time.
    lock: Mutex<()>,
}

impl SessionTasks {
    /// The pending tasks kept in `file`.
    pub fn new(file: PathBuf) -> Self {
        Self {
            file,
            lock: Mutex::new(()),
        }
    }

    fn load(&self) -> Vec<PendingTask> {
        let text = match crate::config::read_regular(&self.file, MAX_FILE_BYTES) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                tracing::warn!(
                    "cannot read the pending tasks {}: {e}; their results will not be delivered",
                    self.file.display()
                );
                return Vec::new();
            }
        };
        serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!(
                "the pending tasks {} are not valid ({e}); their results will not be delivered",
                self.file.display()
            );
            Vec::new()
        })
    }

    fn save(&self, tasks: &[PendingTask]) {
        let written = if tasks.is_empty() {
            match std::fs::remove_file(&self.file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
                _ => Ok(()),
            }
        } else {
            serde_json::to_vec_pretty(tasks)
                .map_err(|e| e.to_string())
                .and_then(|body| {
                    crate::private_fs::write_private(&self.file, &body).map_err(|e| e.to_string())
                })
        };
        if let Err(e) = written {
            tracing::warn!(
                "cannot write the pending tasks {}: {e}",
                self.file.display()
            );
        }
    }

    fn change(&self, f: impl FnOnce(&mut Vec<PendingTask>)) {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = self.load();
        let before = all.clone();
        f(&mut all);
        let over = all.len().saturating_sub(MAX_PENDING);
        all.drain(..over);
        if all != before {
            self.save(&all);
        }
    }
}

fn same(a: &PendingTask, b: &PendingTask) -> bool {
    a.server == b.server && a.task_id == b.task_id
}

impl TaskJournal for SessionTasks {
    fn started(&self, task: &PendingTask) {
        let fields = [&task.server, &task.tool, &task.task_id, &task.tool_use_id];
        if fields.iter().any(|f| f.len() > MAX_FIELD) {
            tracing::warn!(
                "task of tool \"{}\" on server \"{}\": an id over {MAX_FIELD} bytes is not kept for a restart",
                task.tool.chars().take(64).collect::<String>(),
                task.server
            );
            return;
        }
        self.change(|all| {
            all.retain(|t| !same(t, task));
            all.push(task.clone());
        });
    }

    fn settled(&self, tasks: &[PendingTask]) {
        self.change(|all| all.retain(|t| !tasks.iter().any(|s| same(s, t))));
    }

    fn pending(&self) -> Vec<PendingTask> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.load()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(server: &str, id: &str) -> PendingTask {
        PendingTask {
            server: server.into(),
            tool: "slow".into(),
            task_id: id.into(),
            tool_use_id: format!("toolu_{id}"),
        }
    }

    #[test]
    fn started_settled_bounded_and_private() {
        let dir = std::env::temp_dir().join(format!("h9-pending-{}", std::process::id()));
        crate::private_fs::private_dir(&dir).unwrap();
        let file = path(&dir, "s1");
        let j = SessionTasks::new(file.clone());
        assert!(j.pending().is_empty());
        j.started(&task("a", "1"));
        j.started(&task("a", "1"));
        j.started(&task("b", "2"));
        assert_eq!(j.pending(), vec![task("a", "1"), task("b", "2")]);
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&file).unwrap()) & 0o777;
        assert_eq!(mode, 0o600);
        j.settled(&[task("a", "1")]);
        assert_eq!(j.pending(), vec![task("b", "2")]);
        for i in 0..MAX_PENDING + 3 {
            j.started(&task("c", &i.to_string()));
        }
        let all = j.pending();
        assert_eq!(all.len(), MAX_PENDING);
        assert_eq!(all.last().unwrap().task_id, (MAX_PENDING + 2).to_string());
        // An over-long id is not kept; settling everything removes the file.
        j.started(&task("d", &"x".repeat(MAX_FIELD + 1)));
        assert!(j.pending().iter().all(|t| t.server != "d"));
        j.settled(&all);
        assert!(!file.exists());
        // A broken file is taken as empty, not fatal.
        std::fs::write(&file, "not json").unwrap();
        assert!(j.pending().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
