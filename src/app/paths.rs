//! Where harness9 keeps its own files: the state directory (approvals, remembered
//! permissions, saved conversations, the tool-list cache, OAuth tokens, input values, the
//! history, the log). One place, so the layers above ask it rather than each other.

use std::path::PathBuf;

/// Where harness9 keeps its state: `$XDG_STATE_HOME/harness9`, else
/// `~/.local/state/harness9`, else the temp dir.
pub fn state_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("harness9")
}
