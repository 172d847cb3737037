//! Child processes: process groups, signals, and the process-wide list of live groups that the
//! panic hook and signal handlers kill as a last resort.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

fn groups() -> &'static Mutex<HashSet<i32>> {
    static GROUPS: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    GROUPS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Remembers a live process group, so [`kill_all_groups`] kills it too (panic hook, signals).
/// Call [`unregister_group`] once the group is gone.
pub fn register_group(pgid: i32) {
    if let Ok(mut g) = groups().lock() {
        g.insert(pgid);
    }
}

/// Forgets a process group whose leader has been reaped (and whose other members are killed).
pub fn unregister_group(pgid: i32) {
    if let Ok(mut g) = groups().lock() {
        g.remove(&pgid);
    }
}

/// SIGKILLs every live child process group (panic hook, signal handlers, exit paths).
pub fn kill_all_groups() {
    let list: Vec<i32> = match groups().lock() {
        Ok(g) => g.iter().copied().collect(),
        Err(e) => e.into_inner().iter().copied().collect(),
    };
    for pgid in list {
        signal_group(pgid, libc::SIGKILL);
    }
}

/// The live child process groups (their leaders are tokio's children: never reap them here).
pub(crate) fn registered_groups() -> Vec<i32> {
    match groups().lock() {
        Ok(g) => g.iter().copied().collect(),
        Err(e) => e.into_inner().iter().copied().collect(),
    }
}

/// How many child process groups are live.
pub fn live_group_count() -> usize {
    groups().lock().map(|g| g.len()).unwrap_or(0)
}

/// Sends `sig` to the process group `pgid`; a group that is gone is not an error.
pub(crate) fn signal_group(pgid: i32, sig: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions; pgid > 1 never targets init or us.
    unsafe {
        libc::killpg(pgid, sig);
    }
}

/// `exited with status 1`, `was killed by signal 9 (SIGKILL)`.
pub(crate) fn describe_exit(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(sig) => format!(
            "was killed by signal {sig} ({})",
            signal_name(sig).unwrap_or("signal")
        ),
        None => "exited".to_owned(),
    }
}

/// The name of a signal a process commonly dies of (`SIGKILL`), if it is one of those.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGABRT => "SIGABRT",
        _ => return None,
    })
}

/// An io error without Rust's ` (os error N)` suffix: `No such file or directory`.
pub(crate) fn plain_io_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}
