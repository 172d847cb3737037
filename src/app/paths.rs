//! Where harness9 keeps its own files: the state directory (approvals, remembered
//! permissions, saved conversations, the tool-list cache, OAuth tokens, input values, the
//! history, the log). One place, so the layers above ask it rather than each other.

use std::path::PathBuf;

/// Where harness9 keeps its state: `$XDG_STATE_HOME/harness9`, else the system's place
/// (`~/.local/state/harness9` on Linux, `~/Library/Application Support/harness9/state` on
/// macOS: `harness9_platform::dirs`), else the temp dir.
pub fn state_dir() -> PathBuf {
    harness9_platform::dirs::state_dir()
}
