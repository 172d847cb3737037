//! Descendants on a system without a process listing written here (Windows): no subreaper, no
//! process listed; on Windows each server's Job Object kills every descendant, so no subreaper
//! is needed there.

use std::io;

use super::Proc;

/// Windows needs none: every child is in a Job Object that dies with harness9
/// (`process/windows.rs`).
pub(super) fn become_subreaper() -> io::Result<()> {
    if cfg!(windows) {
        return Ok(());
    }
    Err(crate::not_available("a child subreaper"))
}

pub(super) fn all_processes() -> Vec<Proc> {
    Vec::new()
}

pub(super) fn me() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(i32::MAX)
}

pub(super) fn reap(_pid: i32) -> bool {
    false
}
