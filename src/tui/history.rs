//! The input history across sessions: one JSON string per line (so multi-line inputs survive)
//! in `$HARNESS9_HISTORY`, else `$XDG_STATE_HOME/harness9/history.jsonl`
//! (`~/.local/state/...`). The last [`KEEP`] entries are loaded at start and each submitted line
//! is appended; `HARNESS9_HISTORY=` (empty) keeps no history. A file that cannot be read or
//! written costs the history, never the session. The file is created private (0600): inputs
//! can hold secrets, as shell histories do.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Entries loaded (and kept when the file is compacted).
pub const KEEP: usize = 1000;

pub use harness9_app::stores::state_dir;

/// The history file; `None` when `HARNESS9_HISTORY` is set empty.
pub fn path() -> Option<PathBuf> {
    match std::env::var_os("HARNESS9_HISTORY") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => Some(state_dir().join("history.jsonl")),
    }
}

/// The last [`KEEP`] entries of `path`, oldest first; lines that are not a JSON string are
/// skipped. A file grown past twice [`KEEP`] lines is rewritten with the last [`KEEP`].
pub fn load(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut entries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<String>(l).ok())
        .collect();
    let count = text.lines().count();
    entries.drain(..entries.len().saturating_sub(KEEP));
    if count > 2 * KEEP {
        let written =
            harness9_app::private_fs::replace_with(path, 0o600, |f| f.write_all(&lines(&entries)));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot compact the input history");
        }
    }
    entries
}

/// Appends `entries` to `path`, creating it (and its directory) private.
pub fn append(path: &Path, entries: &[String]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            harness9_app::private_fs::private_dir(dir)?;
        }
    }
    let mut f = harness9_app::private_fs::open_append(path)?;
    f.write_all(&lines(entries))
}

fn lines(entries: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        out.extend_from_slice(serde_json::Value::String(e.clone()).to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_bad_lines_are_skipped_and_the_file_is_compacted() {
        let dir = std::env::temp_dir().join(format!("h9-history-{}", std::process::id()));
        let path = dir.join("sub").join("history.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(load(&path).is_empty());
        append(&path, &["first".into(), "two\nlines".into()]).expect("append");
        append(&path, &["third \"quoted\"".into()]).expect("append");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        f.write_all(b"not json\n").expect("write");
        assert_eq!(load(&path), vec!["first", "two\nlines", "third \"quoted\""]);
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&path).expect("metadata"));
        assert_eq!(mode & 0o777, 0o600);

        let many: Vec<String> = (0..2 * KEEP + 5).map(|i| format!("line {i}")).collect();
        append(&path, &many).expect("append");
        let loaded = load(&path);
        assert_eq!(loaded.len(), KEEP);
        assert_eq!(loaded.last().map(String::as_str), Some("line 2004"));
        // Compacted to the entries it keeps.
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), KEEP);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
