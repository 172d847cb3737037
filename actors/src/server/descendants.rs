//! No child outlives harness9, daemons included. harness9 is a child subreaper, so a process
//! that a server double-forks away (`setsid`, parent exits) is reparented to harness9 instead of
//! init. At shutdown [`end_descendants`] finds every process whose parent chain leads to us
//! (in `/proc`), sends SIGTERM, then SIGKILL after a short grace, and reaps those that are our
//! children. [`spawn_orphan_reaper`] reaps orphans that exit during a long session.
//!
//! tokio owns the exit status of every child it spawned (servers, bash, the editor), so nothing
//! here calls `waitpid(-1)`: only given pids are reaped, never a registered group's leader, and
//! the periodic reaper takes only zombies that stayed unreaped for a whole period (tokio reaps
//! its own children within milliseconds of SIGCHLD).

use std::collections::{HashMap, HashSet};
use std::io;
use std::time::{Duration, Instant};

use super::process::registered_groups;

/// How often the periodic reaper looks for orphan zombies.
pub const REAP_PERIOD: Duration = Duration::from_secs(5);

/// How long [`end_descendants`] waits after SIGKILL for the processes to die.
const KILL_WAIT: Duration = Duration::from_secs(1);

/// Makes this process a child subreaper: orphaned descendants are reparented to it.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) has no memory-safety preconditions.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One line of `/proc/PID/stat`.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: i32,
    ppid: i32,
    session: i32,
    zombie: bool,
}

fn spared() -> &'static std::sync::Mutex<HashSet<i32>> {
    static SPARED: std::sync::OnceLock<std::sync::Mutex<HashSet<i32>>> = std::sync::OnceLock::new();
    SPARED.get_or_init(Default::default)
}

/// Leaves the session `sid` alone at exit: for a program the user asked harness9 to open (a
/// GUI editor via `xdg-open`, started in a session of its own), which may outlive harness9. A
/// server cannot join such a session (`setsid` only makes new ones).
pub fn spare_session(sid: i32) {
    if let Ok(mut s) = spared().lock() {
        s.insert(sid);
    }
}

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

fn all_processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

fn me() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// Every process whose parent chain leads to `root`, zombies included, except those of a
/// spared session (and what they started).
fn descendants_of(root: i32, procs: &[Proc]) -> Vec<Proc> {
    let spared: HashSet<i32> = match spared().lock() {
        Ok(s) => s.clone(),
        Err(e) => e.into_inner().clone(),
    };
    let mut children: HashMap<i32, Vec<Proc>> = HashMap::new();
    for p in procs.iter().filter(|p| !spared.contains(&p.session)) {
        children.entry(p.ppid).or_default().push(*p);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    let mut seen = HashSet::from([root]);
    while let Some(pid) = todo.pop() {
        for c in children.get(&pid).into_iter().flatten() {
            if seen.insert(c.pid) {
                out.push(*c);
                todo.push(c.pid);
            }
        }
    }
    out
}

/// The pids of every live (not zombie) descendant of this process.
pub fn live_descendants() -> Vec<i32> {
    descendants_of(me(), &all_processes())
        .into_iter()
        .filter(|p| !p.zombie)
        .map(|p| p.pid)
        .collect()
}

/// Reaps the zombies among our children that are not a registered group's leader (those belong
/// to tokio) and, when `only` is given, are in it. Returns the pids reaped.
fn reap_zombies(only: Option<&HashSet<i32>>) -> Vec<i32> {
    let me = me();
    let leaders: HashSet<i32> = registered_groups().into_iter().collect();
    let mut reaped = Vec::new();
    for p in all_processes() {
        if p.ppid != me || !p.zombie || leaders.contains(&p.pid) {
            continue;
        }
        if only.is_some_and(|o| !o.contains(&p.pid)) {
            continue;
        }
        let mut status = 0;
        // SAFETY: waitpid on one given pid that is our child; WNOHANG never blocks.
        if unsafe { libc::waitpid(p.pid, &mut status, libc::WNOHANG) } == p.pid {
            reaped.push(p.pid);
        }
    }
    reaped
}

/// Ends every descendant still alive: SIGTERM, then SIGKILL to those alive after `grace`, and
/// reaps those that are our children. Bounded by `grace` plus one second. Returns how many
/// processes it signalled.
pub fn end_descendants(grace: Duration) -> usize {
    let first = live_descendants();
    if first.is_empty() {
        reap_zombies(None);
        return 0;
    }
    let mut signalled: HashSet<i32> = HashSet::new();
    for &pid in &first {
        // SAFETY: kill has no memory-safety preconditions; pid is a live descendant (> 1).
        unsafe { libc::kill(pid, libc::SIGTERM) };
        signalled.insert(pid);
    }
    let wait = |until: Instant| loop {
        // Look first, reap second: a process that dies between the two is reaped now, not
        // left a zombie because the look found nothing alive.
        let live = live_descendants();
        reap_zombies(None);
        if live.is_empty() || Instant::now() >= until {
            return live;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let left = wait(Instant::now() + grace);
    for &pid in &left {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        signalled.insert(pid);
    }
    if !left.is_empty() {
        wait(Instant::now() + KILL_WAIT);
    }
    signalled.len()
}

/// Starts a thread that, every [`REAP_PERIOD`], reaps orphans (reparented to us because we are
/// a subreaper) that exited and stayed unreaped since the previous look, so a long session does
/// not collect zombies.
pub fn spawn_orphan_reaper() {
    let spawned = std::thread::Builder::new()
        .name("orphan-reaper".to_owned())
        .spawn(|| {
            let mut before: HashSet<i32> = HashSet::new();
            loop {
                std::thread::sleep(REAP_PERIOD);
                let me = me();
                let leaders: HashSet<i32> = registered_groups().into_iter().collect();
                let now: HashSet<i32> = all_processes()
                    .into_iter()
                    .filter(|p| p.ppid == me && p.zombie && !leaders.contains(&p.pid))
                    .map(|p| p.pid)
                    .collect();
                let old: HashSet<i32> = now.intersection(&before).copied().collect();
                let reaped = reap_zombies(Some(&old));
                if !reaped.is_empty() {
                    tracing::debug!(target: "mcp", count = reaped.len(), "reaped orphans");
                }
                before = now;
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(target: "mcp", "cannot start the orphan reaper: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_line_is_read_past_odd_command_names() {
        let p = read_stat(me()).expect("own stat");
        // SAFETY: getppid has no preconditions.
        assert_eq!(p.ppid, unsafe { libc::getppid() });
        assert!(!p.zombie);
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
