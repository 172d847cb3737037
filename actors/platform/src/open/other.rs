//! The opener where a detached start is not written yet (Windows, issue 25): `explorer`, a
//! plain child.

pub(super) const SYSTEM_OPENER: &str = "explorer";

/// Windows: a desktop session is the only one.
pub(super) const ALWAYS_A_DESKTOP: bool = true;

pub(super) fn detach(_cmd: &mut std::process::Command) {}
