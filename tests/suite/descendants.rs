//! No child outlives harness9, daemons included: a server that double-forks a `setsid` daemon
//! (the fixture's `--daemonize PIDFILE`) loses it when the real binary exits, normally or on
//! SIGTERM, SIGHUP, SIGINT or an error (a daemon that ignores SIGTERM is SIGKILLed), and an
//! orphan that exits during a session does not stay a zombie.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::*;

/// Kills a pid when the test fails, so it leaves no sleeping daemon (or hung harness9) behind.
/// Only then: a pid that passed is gone and may be in use by another process already.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0 > 1 && std::thread::panicking() {
            // SAFETY: plain signal to a process this test started (directly or not).
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// Whether `pid` names no process at all (not even a zombie).
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 checks existence only.
    unsafe { libc::kill(pid, 0) != 0 }
}

/// `(state, ppid)` from `/proc/PID/stat`.
fn stat(pid: i32) -> Option<(String, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = s[s.rfind(')')? + 1..].split_ascii_whitespace();
    let state = f.next()?.to_owned();
    Some((state, f.next()?.parse().ok()?))
}

/// A project whose one server `d` daemonizes, and the daemon's pid file.
fn project(tag: &str) -> (PathBuf, PathBuf) {
    project_with_flags(tag, &[])
}

/// [`project`], the server started with `flags` first (`--ignore-sigterm` is inherited by the
/// daemon it forks after).
fn project_with_flags(tag: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("daemon.pid");
    let mut args = flags.to_vec();
    args.extend(["--daemonize", pidfile.to_str().unwrap()]);
    let d = stdio_json(fixture("d", &args));
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"d": d}}).to_string(),
    )
    .unwrap();
    (dir, pidfile)
}

fn daemon_pid(pidfile: &Path) -> i32 {
    let text = std::fs::read_to_string(pidfile).unwrap_or_else(|e| panic!("no pid file: {e}"));
    text.trim().parse().unwrap()
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_harness9"))
        // The project's .mcp.json is trusted here (approvals kept in the dir).
        .arg("--approve-project")
        .args(args)
        .current_dir(dir)
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("XDG_CONFIG_HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded) for `child` to exit; its exit code.
fn exit_code(child: &mut Child, bound: Duration) -> Option<i32> {
    let end = Instant::now() + bound;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        assert!(
            Instant::now() < end,
            "harness9 did not exit within {bound:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_servers_daemon_is_ended_when_harness9_exits() {
    let (dir, pidfile) = project("daemon-exit");
    let mut child = spawn(&dir, &["mcp", "list"]);
    let _guard = KillOnDrop(child.id() as i32);
    assert_eq!(exit_code(&mut child, Duration::from_secs(60)), Some(0));
    let pid = daemon_pid(&pidfile);
    let _daemon = KillOnDrop(pid);
    assert!(
        gone(pid),
        "the daemon {pid} outlived harness9: {:?}",
        stat(pid)
    );
}

#[test]
fn a_servers_daemon_is_ended_when_harness9_gets_sigterm() {
    daemon_ended_on(libc::SIGTERM, "daemon-term");
}

#[test]
fn a_servers_daemon_is_ended_when_harness9_gets_sighup() {
    daemon_ended_on(libc::SIGHUP, "daemon-hup");
}

#[test]
fn a_servers_daemon_is_ended_when_harness9_gets_sigint() {
    daemon_ended_on(libc::SIGINT, "daemon-int");
}

/// The error exit path: a call that fails (exit 1) still ends the server's daemon.
#[test]
fn a_servers_daemon_is_ended_when_harness9_exits_with_an_error() {
    let (dir, pidfile) = project("daemon-err");
    let mut child = spawn(&dir, &["mcp", "call", "d", "fail"]);
    let _guard = KillOnDrop(child.id() as i32);
    assert_eq!(exit_code(&mut child, Duration::from_secs(60)), Some(1));
    let pid = daemon_pid(&pidfile);
    let _daemon = KillOnDrop(pid);
    assert!(
        gone(pid),
        "the daemon {pid} outlived harness9: {:?}",
        stat(pid)
    );
}

/// Whether `pid` ignores SIGTERM (bit 15 of `SigIgn` in `/proc/PID/status`).
fn ignores_sigterm(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
}

/// A daemon that ignores SIGTERM is SIGKILLed (500 ms after the SIGTERM) and reaped when
/// harness9 gets SIGTERM: gone within the exit, not left running.
#[test]
fn a_daemon_that_ignores_sigterm_is_killed_when_harness9_exits() {
    let (dir, pidfile) = project_with_flags("daemon-stubborn", &["--ignore-sigterm"]);
    let args = json!({"steps": 600, "gap_ms": 100}).to_string();
    let mut child = spawn(&dir, &["mcp", "call", "d", "progress", "--args", &args]);
    let harness9 = child.id() as i32;
    let _guard = KillOnDrop(harness9);
    wait_for_progress(&mut child);
    let pid = daemon_pid(&pidfile);
    let _daemon = KillOnDrop(pid);
    assert!(
        ignores_sigterm(pid),
        "the daemon {pid} does not ignore SIGTERM"
    );
    assert_eq!(stat(pid).map(|s| s.1), Some(harness9));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(harness9, libc::SIGTERM) };
    assert_eq!(exit_code(&mut child, Duration::from_secs(10)), Some(130));
    assert!(
        gone(pid),
        "the daemon {pid} that ignores SIGTERM outlived harness9: {:?}",
        stat(pid)
    );
}

/// harness9 in the middle of a long `mcp call` whose server left a daemon; both are killed
/// when the test ends, whatever it asserted.
struct Session {
    child: Child,
    harness9: i32,
    daemon: i32,
    _guards: (KillOnDrop, KillOnDrop),
}

fn in_a_call(tag: &str) -> Session {
    let (dir, pidfile) = project(tag);
    let args = json!({"steps": 600, "gap_ms": 100}).to_string();
    let mut child = spawn(&dir, &["mcp", "call", "d", "progress", "--args", &args]);
    let harness9 = child.id() as i32;
    let guard = KillOnDrop(harness9);
    wait_for_progress(&mut child);
    let daemon = daemon_pid(&pidfile);
    Session {
        child,
        harness9,
        daemon,
        _guards: (guard, KillOnDrop(daemon)),
    }
}

/// A call in flight, the daemon reparented to harness9; `sig` to harness9 ends both.
fn daemon_ended_on(sig: i32, tag: &str) {
    let Session {
        mut child,
        harness9,
        daemon: pid,
        _guards,
    } = in_a_call(tag);
    // The daemon left the server's process group and was reparented to harness9.
    let (state, ppid) = stat(pid).expect("the daemon runs");
    assert_ne!(state, "Z");
    assert_eq!(ppid, harness9, "harness9 is not the daemon's subreaper");
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(harness9, sig) };
    assert_eq!(exit_code(&mut child, Duration::from_secs(10)), Some(130));
    assert!(
        gone(pid),
        "the daemon {pid} outlived harness9: {:?}",
        stat(pid)
    );
}

#[test]
fn an_orphan_that_exits_during_a_session_is_reaped() {
    let Session {
        mut child,
        harness9,
        daemon: pid,
        _guards,
    } = in_a_call("daemon-reap");
    assert_eq!(stat(pid).map(|s| s.1), Some(harness9));
    // SAFETY: SIGKILL to the daemon the fixture started for this test.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    // It is harness9's zombie until the reaper's second look (two periods at most).
    let reaped = poll_until(
        harness9_actors::server::REAP_PERIOD * 2 + Duration::from_secs(3),
        Duration::from_millis(50),
        || gone(pid),
    );
    assert!(reaped, "the orphan {pid} stayed: {:?}", stat(pid));
    // The server itself was not disturbed: the call is still running.
    assert!(child.try_wait().unwrap().is_none(), "harness9 ended early");
    // SAFETY: SIGTERM to our own child.
    unsafe { libc::kill(harness9, libc::SIGTERM) };
    assert_eq!(exit_code(&mut child, Duration::from_secs(10)), Some(130));
}
