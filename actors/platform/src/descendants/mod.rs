//! No child outlives harness9, daemons included. harness9 is a child subreaper, so a process
//! that a server double-forks away (`setsid`, parent exits) is reparented to harness9 instead of
//! init. At shutdown [`end_descendants`] finds every process whose parent chain leads to us,
//! sends SIGTERM, then SIGKILL after a short grace, and reaps those that are our children.
//! [`spawn_orphan_reaper`] reaps orphans that exit during a long session.
//!
//! tokio owns the exit status of every child it spawned (servers, bash, the editor), so nothing
//! here waits for any child: only given pids are reaped, never a registered group's leader, and
//! the periodic reaper takes only zombies that stayed unreaped for a whole period (tokio reaps
//! its own children within milliseconds of SIGCHLD).
//!
//! The tree walk is the same everywhere; what lists processes (`/proc` on Linux, `libproc` on
//! macOS), makes us a subreaper (Linux only: macOS has none, see `macos.rs`) and reaps one pid
//! is in the target's file.

use std::collections::{HashMap, HashSet};
use std::io;
use std::time::{Duration, Instant};

use crate::process::{registered_groups, signal, Signal};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use other as imp;

/// How often the periodic reaper looks for orphan zombies.
pub const REAP_PERIOD: Duration = Duration::from_secs(5);

/// How long [`end_descendants`] waits after SIGKILL for the processes to die.
const KILL_WAIT: Duration = Duration::from_secs(1);

/// Makes this process a child subreaper: orphaned descendants are reparented to it.
pub fn become_subreaper() -> io::Result<()> {
    imp::become_subreaper()
}

/// One process as the system lists it.
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
    descendants_of(imp::me(), &imp::all_processes())
        .into_iter()
        .filter(|p| !p.zombie)
        .map(|p| p.pid)
        .collect()
}

/// Our children still in the process table, zombies included: `(pid, zombie)`.
pub fn children() -> Vec<(i32, bool)> {
    let me = imp::me();
    imp::all_processes()
        .into_iter()
        .filter(|p| p.ppid == me)
        .map(|p| (p.pid, p.zombie))
        .collect()
}

/// Reaps the zombies among our children that are not a registered group's leader (those belong
/// to tokio) and, when `only` is given, are in it. Returns the pids reaped.
fn reap_zombies(only: Option<&HashSet<i32>>) -> Vec<i32> {
    let me = imp::me();
    let leaders: HashSet<i32> = registered_groups().into_iter().collect();
    let mut reaped = Vec::new();
    for p in imp::all_processes() {
        if p.ppid != me || !p.zombie || leaders.contains(&p.pid) {
            continue;
        }
        if only.is_some_and(|o| !o.contains(&p.pid)) {
            continue;
        }
        if imp::reap(p.pid) {
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
        signal(pid, Signal::Term);
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
        signal(pid, Signal::Kill);
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
                let me = imp::me();
                let leaders: HashSet<i32> = registered_groups().into_iter().collect();
                let now: HashSet<i32> = imp::all_processes()
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

    fn p(pid: i32, ppid: i32, session: i32) -> Proc {
        Proc {
            pid,
            ppid,
            session,
            zombie: false,
        }
    }

    #[test]
    fn the_tree_is_walked_past_reparented_and_spared_processes() {
        // 10 -> 11 -> 12, 10 -> 13 (its own session 900, spared) -> 14; 20 is no kin.
        spare_session(900);
        let procs = [
            p(11, 10, 5),
            p(12, 11, 5),
            p(13, 10, 900),
            p(14, 13, 900),
            p(20, 1, 5),
        ];
        let mut found: Vec<i32> = descendants_of(10, &procs).iter().map(|p| p.pid).collect();
        found.sort_unstable();
        assert_eq!(found, vec![11, 12]);
    }
}
