//! The opener where a detached start is not written yet (Windows, issue 25): `explorer`, a
//! plain child.

pub(super) const SYSTEM_OPENER: &str = "explorer";

pub(super) fn detach(_cmd: &mut std::process::Command) {}
