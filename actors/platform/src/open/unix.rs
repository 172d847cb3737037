//! The opener on Unix: `setsid` before exec.

use std::os::unix::process::CommandExt as _;

#[cfg(target_os = "macos")]
pub(super) const SYSTEM_OPENER: &str = "open";
#[cfg(not(target_os = "macos"))]
pub(super) const SYSTEM_OPENER: &str = "xdg-open";

/// Starts `cmd`'s child in a new session (its sid is its pid).
pub(super) fn detach(cmd: &mut std::process::Command) {
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}
