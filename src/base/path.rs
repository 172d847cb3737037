//! Paths as they really are: made absolute, symlinks resolved, also for a file not there yet.

use std::path::{Path, PathBuf};

/// `path` made absolute with symlinks resolved; for a path that does not exist (yet), its
/// nearest existing ancestor resolved and the rest appended.
pub fn resolved(path: &Path) -> PathBuf {
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
