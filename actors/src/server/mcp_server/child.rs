//! The child process of a stdio server: spawned in its own process group (in its sandbox if it
//! has one), stdin written by a separate task fed by the write queue, stdout read as a stream of
//! NDJSON frames, stderr drained into tracing (rate-limited, the last lines kept for the exit
//! report), and its exit.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use super::requests::WRITE_QUEUE;
use super::McpServer;
use crate::protocol::codec::{Frame, NdjsonCodec};
use crate::server::process::{
    describe_exit, plain_io_error, register_group, signal_group, unregister_group,
};
use crate::server::sandbox::Scratch;
use crate::spec::TransportSpec;

/// stderr lines kept for the exit report (`Exited { stderr_tail }`).
const STDERR_TAIL: usize = 100;
/// stderr lines logged per server: a burst of this many, refilled at this many a second.
pub(super) const STDERR_BURST: f64 = 200.0;
const STDERR_PER_SEC: f64 = 50.0;
const STDERR_LINE_MAX: usize = 64 * 1024;
/// After the child exits, how long to wait for the rest of its stderr.
const STDERR_DRAIN: Duration = Duration::from_millis(200);

struct StderrItem(Result<Frame, io::Error>);

/// The variables of harness9's environment every server gets (as codex does): who and where
/// the user is, how text is shown. Nothing else: no API keys, no tokens, no `$TMUX`, no
/// `$SSH_AUTH_SOCK`, no `$DBUS_SESSION_BUS_ADDRESS`. An entry's `env` (and `envFile`) adds more,
/// `${VAR}` taking a value from harness9's environment.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "LANG", "TERM", "TMPDIR", "TZ",
];

/// Whether `key` passes from harness9's environment to a server: [`INHERITED_ENV`] and `LC_*`.
fn inherited(key: &std::ffi::OsStr) -> bool {
    let Some(k) = key.to_str() else {
        return false;
    };
    INHERITED_ENV.contains(&k) || k.starts_with("LC_")
}

impl McpServer {
    pub(super) fn spawn_child(&mut self, ctx: &mut Context<Self>) -> Result<(), String> {
        let TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } = &self.spec.transport
        else {
            return Err("not a stdio server".to_owned());
        };
        if let Some(dir) = cwd {
            if !dir.is_dir() {
                return Err(format!("cwd {} is not a directory", dir.display()));
            }
        }
        let mut cmd = Command::new(command);
        // Only the allowlisted part of harness9's environment (no API keys), then the entry's.
        cmd.env_clear()
            .envs(std::env::vars_os().filter(|(k, _)| inherited(k)))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        // Built here, enforced by the child between fork and exec; dropped after the spawn.
        let not_applied =
            |e: String| format!("sandbox cannot be applied, so the server is not started: {e}");
        let sandbox = match &self.spec.sandbox {
            Some(sb) => {
                let scratch = Scratch::create().map_err(not_applied)?;
                let prepared = crate::server::sandbox::prepare(sb, cwd.as_deref(), scratch.path())
                    .map_err(not_applied)?;
                prepared.install(&mut cmd);
                cmd.env("TMPDIR", scratch.path());
                self.scratch = Some(scratch);
                Some(prepared)
            }
            None => None,
        };
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let spawned = cmd.spawn();
        drop(sandbox);
        let mut child = spawned.map_err(|e| match &self.spec.sandbox {
            Some(_) => format!("spawn {command} in its sandbox: {}", plain_io_error(&e)),
            None => format!("spawn {command}: {}", plain_io_error(&e)),
        })?;
        self.pgid = child.id().map(|p| p as i32).unwrap_or(0);
        register_group(self.pgid);
        tracing::debug!(target: "mcp", server = %self.name, pid = self.pgid, %command, "spawned");

        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("spawn {command}: stdio pipes missing"));
        };
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        actix_rt::spawn(write_loop(stdin, rx));
        self.writer = Some(tx);
        ctx.add_stream(FramedRead::with_capacity(
            stdout,
            NdjsonCodec::new(self.spec.max_message_bytes),
            64 * 1024,
        ));
        self.stderr_done = false;
        ctx.add_stream(FramedRead::new(stderr, NdjsonCodec::new(STDERR_LINE_MAX)).map(StderrItem));
        let wait = async move { child.wait().await };
        ctx.spawn(
            wait.into_actor(self)
                .map(|res, act, ctx| act.on_child_exit(res, ctx)),
        );
        Ok(())
    }

    /// A server's stderr is its log, not ours: it goes to tracing at debug (`-vv`, or
    /// `RUST_LOG=mcp::stderr=debug`), at most [`STDERR_BURST`] lines at once and
    /// [`STDERR_PER_SEC`] a second per server; what is cut is counted in one line. The tail
    /// for the status keeps every line.
    fn log_stderr(&mut self, line: &str) {
        if !tracing::enabled!(target: "mcp::stderr", tracing::Level::DEBUG) {
            return;
        }
        let now = Instant::now();
        let refill = now.duration_since(self.stderr_refilled).as_secs_f64() * STDERR_PER_SEC;
        self.stderr_refilled = now;
        self.stderr_budget = (self.stderr_budget + refill).min(STDERR_BURST);
        if self.stderr_budget < 1.0 {
            self.stderr_suppressed += 1;
            return;
        }
        self.stderr_budget -= 1.0;
        if self.stderr_suppressed > 0 {
            tracing::debug!(target: "mcp::stderr", server = %self.name,
                "({} stderr lines not logged: over {STDERR_PER_SEC} a second)", self.stderr_suppressed);
            self.stderr_suppressed = 0;
        }
        tracing::debug!(target: "mcp::stderr", server = %self.name, "{line}");
    }

    fn on_child_exit(&mut self, res: io::Result<ExitStatus>, ctx: &mut Context<Self>) {
        let status = match res {
            Ok(s) => describe_exit(&s),
            Err(e) => format!("could not be waited for: {e}"),
        };
        tracing::info!(target: "mcp", server = %self.name, "process {status}");
        // The leader is reaped; sweep anything it left in its group.
        signal_group(self.pgid, libc::SIGKILL);
        unregister_group(self.pgid);
        // Its scratch directory goes with it (its group is gone, nothing writes there now).
        self.scratch = None;
        self.child_exited = true;
        self.writer = None;
        let reason = self.exit_reason.get_or_insert(status).clone();
        self.fail_all(&reason);
        if self.stderr_done {
            ctx.stop();
        } else {
            ctx.run_later(STDERR_DRAIN, |_, ctx| ctx.stop());
        }
    }
}

async fn write_loop(mut stdin: ChildStdin, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut buf = Vec::with_capacity(8 * 1024);
    while let Some(first) = rx.recv().await {
        buf.clear();
        buf.extend_from_slice(&first);
        while buf.len() < 1024 * 1024 {
            match rx.try_recv() {
                Ok(more) => buf.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        if stdin.write_all(&buf).await.is_err() {
            return;
        }
    }
    let _ = stdin.shutdown().await;
}

impl StreamHandler<Result<Frame, io::Error>> for McpServer {
    fn handle(&mut self, item: Result<Frame, io::Error>, ctx: &mut Context<Self>) {
        match item {
            Ok(Frame::Line(line)) => self.on_line(line, ctx),
            Ok(Frame::TooLong { prefix, max }) => self.on_too_long(prefix, max),
            Err(e) => tracing::debug!(target: "mcp", server = %self.name, "stdout read error: {e}"),
        }
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        // The child's exit, not stdout's end, ends the actor (its exit status is the better
        // reason). A child that closes stdout but lives on cannot answer any more: after the
        // grace period it is told to go.
        if self.child_exited {
            return;
        }
        tracing::debug!(target: "mcp", server = %self.name, "stdout closed");
        let (pgid, grace) = (self.pgid, self.spec.shutdown_grace);
        ctx.run_later(grace, move |act, ctx| {
            if act.child_exited {
                return;
            }
            act.exit_reason
                .get_or_insert_with(|| "closed its stdout but kept running".to_owned());
            act.fail_all("closed its stdout");
            signal_group(pgid, libc::SIGTERM);
            ctx.run_later(grace, move |act, _| {
                if !act.child_exited {
                    signal_group(pgid, libc::SIGKILL);
                }
            });
        });
    }
}

impl StreamHandler<StderrItem> for McpServer {
    fn handle(&mut self, item: StderrItem, _ctx: &mut Context<Self>) {
        let line = match item.0 {
            Ok(Frame::Line(l)) => String::from_utf8_lossy(&l).into_owned(),
            Ok(Frame::TooLong { .. }) => "[stderr line too long, dropped]".to_owned(),
            Err(_) => return,
        };
        self.log_stderr(&line);
        if self.stderr_tail.len() == STDERR_TAIL {
            self.stderr_tail.pop_front();
        }
        self.stderr_tail.push_back(line);
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        self.stderr_done = true;
        if self.child_exited {
            ctx.stop();
        }
    }
}
