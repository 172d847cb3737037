//! Where harness9 keeps its own files, and the stores in them: the state directory
//! ([`state_dir`]: approvals, remembered permissions, saved conversations, the tool-list
//! cache, OAuth tokens, input values, the history, the log), one place, so the layers above
//! ask it rather than each other; the OAuth tokens ([`oauth_store`]), the remembered "always"
//! answers ([`permission_store`]), the tasks harness9 follows ([`task_store`],
//! [`pending_tasks`]), the tool-list cache ([`tool_cache`]), the saved conversations
//! ([`conversations`]).

use std::path::PathBuf;

pub mod conversations;
pub mod oauth_store;
pub mod pending_tasks;
pub mod permission_store;
pub mod task_store;
pub mod tool_cache;

/// Where harness9 keeps its state: `$XDG_STATE_HOME/harness9`, else the system's place
/// (`~/.local/state/harness9` on Linux, `~/Library/Application Support/harness9/state` on
/// macOS: `harness9_platform::dirs`), else the temp dir.
pub fn state_dir() -> PathBuf {
    harness9_platform::dirs::state_dir()
}
