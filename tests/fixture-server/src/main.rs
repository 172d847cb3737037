//! An MCP stdio server that misbehaves on purpose, driven by flags, for harness9's tests.
//!
//! Tools: echo {text}, add {a,b}, sleep {ms}, big {bytes}, fail, rich, progress {steps, gap_ms},
//! both {order} (result and error in one reply),
//! remove {path} (annotated destructive), write {path, text} (really writes), connect {addr}
//! (a TCP connect), unix_connect {path}, udp_send {addr}, read {path, parent}, kill {pid, signal},
//! env, exit {code}, pid, symlink {link, target} (plants a symlink; `{ppid}` in `link` is the
//! client's pid), plus `--tools N` synthetic ones. `big` streams its reply, so the fixture
//! stays small whatever it sends. Flags: see `usage()`;
//! `--daemonize PIDFILE` leaves a `setsid` grandchild that sleeps forever (its pid in PIDFILE).
//! `--ticking-resource` offers one resource, `tick://counter` ("tick N"), that changes three
//! times (every 50 ms) after a `resources/subscribe`, each change announced with
//! `notifications/resources/updated`. `--blob-resource BYTES` offers `blob://big`, BYTES
//! zero bytes (rounded up to a multiple of 3) as a streamed base64 blob. `--start-delay-ms MS`
//! reads nothing for MS first (a slow start); `--tools-file FILE` takes `--tools N` from FILE.
//!
//! Unix only (fork, setsid, signals): the integration suite that runs it drives real Unix
//! processes (`tests/tests.rs` is `cfg(unix)` too); elsewhere the binary only says so.

#[cfg(unix)]
mod fixture;

#[cfg(unix)]
fn main() {
    fixture::main();
}

#[cfg(not(unix))]
fn main() {
    eprintln!("fixture-server: runs on Unix only (it forks daemons and sends signals)");
    std::process::exit(2);
}
