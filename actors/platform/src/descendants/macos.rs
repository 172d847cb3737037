//! Descendants on macOS: the process list from `proc_listallpids` and `proc_pidinfo`
//! (`PROC_PIDT_SHORTBSDINFO`, which zombies answer too), sessions from `getsid`,
//! `waitpid(WNOHANG)` on one given pid. macOS has no child subreaper: a daemon that leaves
//! harness9's tree (`setsid`, then its parent exits) is reparented to launchd, so the exit
//! sweep finds it only while its parent chain still leads to harness9; the process groups
//! (each server's, killed as a whole) and this sweep are what ends a server's processes.

use std::io;

use super::Proc;

pub(super) fn become_subreaper() -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "macOS has no child subreaper: a process that leaves a server's process group and whose parent exits is reparented to launchd; harness9 ends each server's process group and every descendant it still finds",
    ))
}

/// The pids of every process (a few more slots than asked, for those started meanwhile).
fn all_pids() -> Vec<i32> {
    // SAFETY: a null buffer asks only for the count.
    let n = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    if n <= 0 {
        return Vec::new();
    }
    let mut pids: Vec<i32> = vec![0; n as usize + 64];
    let bytes = i32::try_from(pids.len() * std::mem::size_of::<i32>()).unwrap_or(i32::MAX);
    // SAFETY: the buffer holds `bytes` bytes of i32 slots; the call writes at most that many.
    let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    if got <= 0 {
        return Vec::new();
    }
    pids.truncate((got as usize).min(pids.len()));
    pids.retain(|&p| p > 0);
    pids
}

/// One process's parent, group state and session.
fn info(pid: i32) -> Option<Proc> {
    // SAFETY: proc_bsdshortinfo is plain integers and chars: all zeros is a valid value.
    let mut b: libc::proc_bsdshortinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdshortinfo>() as libc::c_int;
    // SAFETY: proc_pidinfo writes at most `size` bytes into `b`.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDT_SHORTBSDINFO,
            0,
            (&mut b as *mut libc::proc_bsdshortinfo).cast(),
            size,
        )
    };
    if got != size {
        return None;
    }
    // SAFETY: getsid has no memory-safety preconditions; -1 (not ours to see) spares nothing.
    let session = unsafe { libc::getsid(pid) };
    Some(Proc {
        pid,
        ppid: i32::try_from(b.pbsi_ppid).ok()?,
        session,
        zombie: b.pbsi_status == libc::SZOMB,
    })
}

pub(super) fn all_processes() -> Vec<Proc> {
    all_pids().into_iter().filter_map(info).collect()
}

pub(super) fn me() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// Reaps `pid`, one of our children that is a zombie; whether it was reaped.
pub(super) fn reap(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on one given pid that is our child; WNOHANG never blocks.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == pid }
}
