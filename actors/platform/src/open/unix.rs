//! The opener on Unix: `setsid` before exec.

use std::os::unix::process::CommandExt as _;

#[cfg(target_os = "macos")]
pub(super) const SYSTEM_OPENER: &str = "open";
#[cfg(not(target_os = "macos"))]
pub(super) const SYSTEM_OPENER: &str = "xdg-open";

/// macOS: the opener always reaches the user's desktop; elsewhere only a graphical session.
pub(super) const ALWAYS_A_DESKTOP: bool = cfg!(target_os = "macos");

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
