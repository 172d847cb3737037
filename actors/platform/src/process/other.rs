//! Process groups and signals where they are not written yet (Windows: Job Objects, issue
//! 25): spawning in a group fails clearly, signals do nothing.

use super::Signal;

/// Not available yet: the spawn itself fails with the stub's error (see [`output_pipe`]).
pub fn new_group(_cmd: &mut tokio::process::Command) {}

/// Nothing to do: the group exists from the spawn on.
pub(super) fn adopt(_pgid: i32) {}

/// Nothing to do: a group is gone with its last process.
pub(super) fn release(_pgid: i32) {}

pub(super) fn signal_group(_pgid: i32, _sig: Signal) {}

pub(super) fn signal(_pid: i32, _sig: Signal) {}

/// No pipe settings here.
pub fn widen_pipe(_stdout: &tokio::process::ChildStdout) -> Option<usize> {
    None
}

/// The signal that ended a process: there are none here.
pub fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// No signal names here.
pub fn signal_name(_sig: i32) -> Option<&'static str> {
    None
}

/// Not known here.
pub fn group_alive(_pgid: i32) -> bool {
    false
}

/// The reading end of a child's output pipe (none yet).
pub type PipeReader = tokio::io::Empty;

/// Not available yet.
pub fn output_pipe() -> std::io::Result<(PipeReader, std::process::Stdio, std::process::Stdio)> {
    Err(crate::not_available("a child's output pipe"))
}

/// Not known here: 0.
pub fn open_fd_count() -> usize {
    0
}

/// Not known here: 0.
pub fn rss_kib() -> u64 {
    0
}
