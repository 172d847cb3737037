//! Process groups and signals on Unix: `setpgid` at spawn, `killpg`/`kill`, wait statuses.

use super::Signal;

fn number(sig: Signal) -> i32 {
    match sig {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    }
}

/// Starts `cmd`'s child as the leader of a new process group (its pgid is its pid), so the
/// group can be signalled as one without reaching harness9.
pub fn new_group(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
}

/// Nothing to do: the group exists from the spawn on.
pub(super) fn adopt(_pgid: i32) {}

/// Nothing to do: a group is gone with its last process.
pub(super) fn release(_pgid: i32) {}

pub(super) fn signal_group(pgid: i32, sig: Signal) {
    // SAFETY: killpg has no memory-safety preconditions; pgid > 1 never targets init or us.
    unsafe {
        libc::killpg(pgid, number(sig));
    }
}

pub(super) fn signal(pid: i32, sig: Signal) {
    // SAFETY: kill has no memory-safety preconditions; pid > 1 is one process, never a group.
    unsafe {
        libc::kill(pid, number(sig));
    }
}

/// The signal that ended a process, if one did.
pub fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    status.signal()
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

/// Whether any process of group `pgid` is alive (zombies waiting for a reaper don't count).
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence.
    if unsafe { libc::kill(-pgid, 0) } != 0 {
        return false;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return true;
    };
    procs.filter_map(Result::ok).any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // `pid (comm) S ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let mut fields = after.split_ascii_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        group == Some(pgid) && state != Some("Z")
    })
}

/// The reading end of a pipe a child writes its output to.
pub type PipeReader = tokio::net::unix::pipe::Receiver;

/// A pipe for a child's stdout and stderr both (one pipe keeps their output in the order it
/// was written): its reading end, and the two writing ends to hand the child. Drop the
/// command after the spawn so the end of the output comes when the child's processes are
/// done with the pipe.
pub fn output_pipe() -> std::io::Result<(PipeReader, std::process::Stdio, std::process::Stdio)> {
    let (writer, reader) = tokio::net::unix::pipe::pipe()?;
    let out = writer.into_blocking_fd()?;
    let err = out.try_clone()?;
    Ok((reader, out.into(), err.into()))
}

/// Linux: asks the kernel for a pipe buffer of [`super::PIPE_BYTES`] behind a child's stdout
/// (the default 64 KiB makes a multi-megabyte message dozens of read and wake-up rounds; a
/// 10k-tool listing was a fifth faster with a larger one); the capacity it has after, or `None`
/// where the system has no such setting or refused it (the user's pipe budget,
/// `/proc/sys/fs/pipe-user-pages-soft`, spent: the default stays).
pub fn widen_pipe(stdout: &tokio::process::ChildStdout) -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let fd = stdout.as_raw_fd();
        let want = i32::try_from(super::PIPE_BYTES).ok()?;
        // SAFETY: fcntl on a descriptor the child handle owns and keeps open for this call;
        // F_SETPIPE_SZ takes an int and touches no memory of ours.
        let got = unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, want) };
        usize::try_from(got).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = stdout;
        None
    }
}

/// How many file descriptors this process has open (0 when the system does not say).
pub fn open_fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// This process's resident set size, in KiB (0 when the system does not say).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
