//! Descendants on Linux: `prctl(PR_SET_CHILD_SUBREAPER)`, the process list from `/proc`,
//! `waitpid(WNOHANG)` on one given pid.

use std::io;

use super::Proc;

pub(super) fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) has no memory-safety preconditions.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One line of `/proc/PID/stat`.
fn read_stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ppid ...`; comm may hold spaces and parentheses: cut after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        session,
        zombie: state == "Z" || state == "X",
    })
}

pub(super) fn all_processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
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

#[cfg(test)]
mod tests {
    use super::super::{live_descendants, spare_session};
    use super::*;

    #[test]
    fn the_stat_line_is_read_past_odd_command_names() {
        let p = read_stat(me()).expect("own stat");
        // SAFETY: getppid has no preconditions.
        assert_eq!(p.ppid, unsafe { libc::getppid() });
        assert!(!p.zombie);
        // A child whose command name looks like the fields that follow it: `x) Z 1 2 (y`. Read
        // up to the first `)`, it would be a zombie whose parent is init.
        let dir = std::env::temp_dir().join(format!("h9-stat-{}", me()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let odd = dir.join("x) Z 1 2 (y");
        std::os::unix::fs::symlink("/bin/sleep", &odd).expect("symlink to sleep");
        let mut child = std::process::Command::new(&odd)
            .arg("30")
            .spawn()
            .expect("the oddly named sleep starts");
        let pid = child.id() as i32;
        // The name is the child's once it has exec'd: wait for it (bounded).
        let mut seen = None;
        for _ in 0..500 {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim_end() == "x) Z 1 2 (y" {
                seen = read_stat(pid);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = (child.kill(), child.wait());
        let _ = std::fs::remove_dir_all(&dir);
        let p = seen.expect("the child's stat line with its odd name");
        assert_eq!(p.ppid, me(), "{p:?}");
        assert!(!p.zombie, "{p:?}");
    }

    #[test]
    fn a_spared_session_is_no_descendant() {
        use std::os::unix::process::CommandExt;
        let mut plain = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        // SAFETY: setsid is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut own = cmd.spawn().expect("sleep");
        let (p, o) = (plain.id() as i32, own.id() as i32);
        spare_session(o);
        let live = live_descendants();
        let _ = (plain.kill(), own.kill(), plain.wait(), own.wait());
        assert!(live.contains(&p), "{live:?}");
        assert!(!live.contains(&o), "{live:?}");
    }
}
