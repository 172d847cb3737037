//! Child processes: a child in a process group of its own, signals to a group or a process,
//! exit statuses, and the process-wide list of live groups that the panic hook, the signal
//! handlers and the exit paths kill as a last resort.
//!
//! On Windows a "group" is a Job Object named by its first process's pid (`windows.rs`):
//! [`new_group`] starts the child suspended, [`register_group`] puts it in a job of its own
//! (kill on close: the job dies with harness9, whatever way it ends) and resumes it, a signal to
//! the group terminates the job, and [`unregister_group`] closes it.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

#[cfg(not(any(unix, windows)))]
mod other;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(not(any(unix, windows)))]
use other as imp;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
use windows as imp;

pub use imp::{
    exit_signal, group_alive, new_group, open_fd_count, output_pipe, rss_kib, signal_name,
    widen_pipe, PipeReader,
};

/// The pipe buffer asked for behind a stdio server's stdout (Linux): 256 KiB, 64 pages of the
/// user's pipe budget (64 MiB by default) per server; larger gained nothing measurable.
pub const PIPE_BYTES: usize = 256 * 1024;

/// What to tell a process or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Asks it to end (SIGTERM).
    Term,
    /// Ends it at once (SIGKILL).
    Kill,
}

/// Sends `sig` to the process group `pgid`; a group that is gone is not an error, and a
/// `pgid` of 1 or less (init, our own group, none) is never signalled.
pub fn signal_group(pgid: i32, sig: Signal) {
    if pgid <= 1 {
        return;
    }
    imp::signal_group(pgid, sig);
}

/// Sends `sig` to the process `pid` (one process, not its group); a process that is gone is
/// not an error, and a `pid` of 1 or less is never signalled.
pub fn signal(pid: i32, sig: Signal) {
    if pid <= 1 {
        return;
    }
    imp::signal(pid, sig);
}

fn groups() -> &'static Mutex<HashSet<i32>> {
    static GROUPS: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    GROUPS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Remembers a live process group, so [`kill_all_groups`] kills it too (panic hook, signals).
/// Call it right after the spawn of a child started with [`new_group`] (on Windows this puts
/// the suspended child in its job and lets it run), and [`unregister_group`] once the group is
/// gone.
pub fn register_group(pgid: i32) {
    imp::adopt(pgid);
    if let Ok(mut g) = groups().lock() {
        g.insert(pgid);
    }
}

/// Forgets a process group whose leader has been reaped (and whose other members are killed;
/// on Windows closing its job kills what is left).
pub fn unregister_group(pgid: i32) {
    if let Ok(mut g) = groups().lock() {
        g.remove(&pgid);
    }
    imp::release(pgid);
}

/// SIGKILLs every live child process group (panic hook, signal handlers, exit paths).
pub fn kill_all_groups() {
    for pgid in registered_groups() {
        signal_group(pgid, Signal::Kill);
    }
}

/// The live child process groups (their leaders are tokio's children: never reap them here).
pub fn registered_groups() -> Vec<i32> {
    match groups().lock() {
        Ok(g) => g.iter().copied().collect(),
        Err(e) => e.into_inner().iter().copied().collect(),
    }
}

/// How many child process groups are live.
pub fn live_group_count() -> usize {
    groups().lock().map(|g| g.len()).unwrap_or(0)
}

/// `exited with status 1`, `was killed by signal 9 (SIGKILL)`.
pub fn describe_exit(status: &std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match exit_signal(status) {
        Some(sig) => format!(
            "was killed by signal {sig} ({})",
            signal_name(sig).unwrap_or("signal")
        ),
        None => "exited".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_group_is_counted_until_forgotten() {
        // A pid no process has (above the kernel's maximum): killing it is a no-op.
        let pgid = i32::MAX - 7;
        let before = live_group_count();
        register_group(pgid);
        assert!(registered_groups().contains(&pgid));
        assert_eq!(live_group_count(), before + 1);
        unregister_group(pgid);
        assert!(!registered_groups().contains(&pgid));
    }

    #[cfg(unix)]
    #[test]
    fn a_group_is_killed_and_its_exit_described() {
        let mut cmd = tokio::process::Command::new("sleep");
        cmd.arg("30");
        new_group(&mut cmd);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut child = cmd.spawn().expect("sleep");
            let pgid = child.id().expect("pid") as i32;
            assert!(group_alive(pgid));
            signal_group(pgid, Signal::Kill);
            let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
                .await
                .expect("bounded")
                .expect("wait");
            assert_eq!(describe_exit(&status), "was killed by signal 9 (SIGKILL)");
            assert!(!group_alive(pgid));
        });
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_childs_stdout_pipe_is_widened() {
        use std::os::fd::AsRawFd as _;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut child = tokio::process::Command::new("sleep")
                .arg("30")
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("sleep");
            let stdout = child.stdout.take().expect("piped");
            // SAFETY: F_GETPIPE_SZ on an open descriptor reads no memory of ours.
            let size = || unsafe { libc::fcntl(stdout.as_raw_fd(), libc::F_GETPIPE_SZ) };
            assert!(
                usize::try_from(size()).is_ok_and(|s| s < PIPE_BYTES),
                "smaller first"
            );
            assert_eq!(widen_pipe(&stdout), Some(PIPE_BYTES));
            assert_eq!(usize::try_from(size()).ok(), Some(PIPE_BYTES));
            let _ = child.kill().await;
        });
    }
}
