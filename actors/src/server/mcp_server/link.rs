//! The actor's end of the transport seam (`server/transport/`): opening its transport, and every
//! [`TransportEvent`] it reports, whether polled as a stream (stdio) or received as a message
//! (HTTP): incoming lines, failed requests, HTTP exchanges for the trace, the transport in use,
//! the server's own log (rate-limited, the last lines kept for the exit report), and the end of
//! its output, its process or its task. A fatal failure stops the actor like a child's exit, so
//! the supervisor's restarts are shared.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use actix::prelude::*;

use super::{McpServer, ReplyError};
use crate::protocol::jsonrpc::RequestId;
use crate::server::process::{signal_group, unregister_group, Signal};
use crate::server::transport::{self, Attach, Events, HttpStatus, TransportEvent, TransportFailed};
use crate::trace::{Direction, HttpExchange, WireRecord};

/// stderr lines kept for the exit report (`Exited { stderr_tail }`).
const STDERR_TAIL: usize = 100;
/// stderr lines logged per server: a burst of this many, refilled at this many a second.
const STDERR_BURST: f64 = 200.0;
const STDERR_PER_SEC: f64 = 50.0;
/// After the child exits, how long to wait for the rest of its stderr.
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// The server's own log (a child's stderr). Invariants: `tail` keeps at most [`STDERR_TAIL`]
/// lines, every line whether logged or not; tracing gets at most [`STDERR_BURST`] lines at once
/// and [`STDERR_PER_SEC`] a second, what is cut counted in one line; `done` is `true` unless a
/// process's log is still being read.
pub(super) struct StderrLog {
    budget: f64,
    refilled: Instant,
    suppressed: u64,
    tail: VecDeque<String>,
    /// The log has ended (or there is none).
    pub(super) done: bool,
}

impl Default for StderrLog {
    fn default() -> Self {
        Self {
            budget: STDERR_BURST,
            refilled: Instant::now(),
            suppressed: 0,
            tail: VecDeque::new(),
            done: true,
        }
    }
}

impl StderrLog {
    /// One line of `server`'s log: logged (within the rate) and kept in the tail.
    fn push(&mut self, server: &str, line: String) {
        self.log(server, &line);
        if self.tail.len() == STDERR_TAIL {
            self.tail.pop_front();
        }
        self.tail.push_back(line);
    }

    /// The lines kept for the exit report, taken out.
    pub(super) fn take_tail(&mut self) -> Vec<String> {
        self.tail.drain(..).collect()
    }

    /// A server's stderr is its log, not ours: it goes to tracing at debug (`-vv`, or
    /// `RUST_LOG=mcp::stderr=debug`), at most [`STDERR_BURST`] lines at once and
    /// [`STDERR_PER_SEC`] a second per server; what is cut is counted in one line. The tail
    /// for the status keeps every line.
    fn log(&mut self, server: &str, line: &str) {
        if !tracing::enabled!(target: "mcp::stderr", tracing::Level::DEBUG) {
            return;
        }
        let now = Instant::now();
        let refill = now.duration_since(self.refilled).as_secs_f64() * STDERR_PER_SEC;
        self.refilled = now;
        self.budget = (self.budget + refill).min(STDERR_BURST);
        if self.budget < 1.0 {
            self.suppressed += 1;
            return;
        }
        self.budget -= 1.0;
        if self.suppressed > 0 {
            tracing::debug!(target: "mcp::stderr", server = %server,
                "({} stderr lines not logged: over {STDERR_PER_SEC} a second)", self.suppressed);
            self.suppressed = 0;
        }
        tracing::debug!(target: "mcp::stderr", server = %server, "{line}");
    }
}

impl McpServer {
    /// Opens the transport the spec names; its events come back to [`Self::on_event`].
    pub(super) fn open_transport(&mut self, ctx: &mut Context<Self>) -> Result<(), String> {
        let opened = transport::open(&self.spec, ctx)?;
        self.out.open(opened.writer);
        self.tools.mirror_headers = opened.headers;
        if opened.process.is_some() {
            self.stderr.done = false;
        }
        self.process = opened.process;
        Ok(())
    }

    /// One event from the transport.
    fn on_event(&mut self, ev: TransportEvent, ctx: &mut Context<Self>) {
        match ev {
            TransportEvent::Message(line) => self.on_line(line, ctx),
            TransportEvent::TooLong { prefix, max } => self.on_too_long(prefix, max),
            TransportEvent::OverBudget { prefix } => self.on_over_budget(prefix),
            TransportEvent::ReadFailed(e) => {
                tracing::debug!(target: "mcp", server = %self.name, "stdout read error: {e}")
            }
            TransportEvent::Failed(f) => self.on_failed(*f, ctx),
            TransportEvent::Exchange(x) => self.on_exchange(*x),
            TransportEvent::Kind(kind) => self.session.kind = kind,
            TransportEvent::Session(hashed) => self.session.otel.session = Some(hashed),
            TransportEvent::Log(line) => self.stderr.push(&self.name, line),
            TransportEvent::LogClosed => {
                self.stderr.done = true;
                if self.exited() {
                    ctx.stop();
                }
            }
            TransportEvent::OutputClosed => self.on_output_closed(ctx),
            TransportEvent::Exited(status) => self.on_exit(status, ctx),
            TransportEvent::Closed => ctx.stop(),
        }
    }

    /// Whether the server's process has exited (`false` without a process).
    pub(super) fn exited(&self) -> bool {
        self.process.as_ref().is_some_and(|p| p.exited)
    }

    /// The server's process group while it runs (`None` once it exited, or without a process).
    pub(super) fn live_group(&self) -> Option<i32> {
        self.process
            .as_ref()
            .filter(|p| !p.exited && p.pgid > 0)
            .map(|p| p.pgid)
    }

    fn on_failed(&mut self, msg: TransportFailed, ctx: &mut Context<Self>) {
        // A missing scope fails one request of a connected server; before it is connected
        // (`server/discover`, `initialize`, the first `tools/list`) there is no connection
        // without it: the server needs a login, never a fallback to the other era.
        let needs_login = msg.needs_login || (msg.step_up && !self.session.connected);
        self.life.needs_login |= needs_login;
        if let Some(p) = msg.id.and_then(|id| self.out.take(id)) {
            let err = if msg.reissue {
                ReplyError::StreamBroken(msg.error.clone())
            } else {
                ReplyError::Transport(msg.error.clone())
            };
            p.settle(Err(err));
        }
        // A refused token ends the connection too: the server then shows `needs login` (and
        // its tools leave the table) instead of failing every call while it looks connected.
        if (msg.fatal || needs_login) && !self.life.closing {
            tracing::info!(target: "mcp", server = %self.name, "connection lost: {}", msg.error);
            let lost = format!("lost its connection ({})", msg.error);
            self.life.exit_reason.get_or_insert(msg.error);
            self.fail_all(&lost);
            self.out.close();
            ctx.stop();
        }
    }

    fn on_exchange(&mut self, msg: HttpStatus) {
        tracing::debug!(target: "mcp::wire", server = %self.name, dir = "recv", id = ?msg.id,
            method = %msg.method, http_status = msg.status, session = msg.session.as_deref().unwrap_or(""));
        self.wire.send(&self.name, || WireRecord {
            ts: SystemTime::now(),
            server: self.name.clone(),
            dir: Direction::Recv,
            id: msg.id.map(RequestId::Number),
            method: Some(msg.method),
            latency_us: None,
            // An error reply's body: a failed handshake reads from the trace alone.
            message: msg.body.unwrap_or_default(),
            http_status: Some(msg.status),
            session: msg.session,
            http: Some(std::sync::Arc::new(HttpExchange {
                request_headers: msg.request_headers,
                response_headers: msg.response_headers,
            })),
            era: self.session.era.map(|e| e.label()),
        });
    }

    fn on_exit(&mut self, status: String, ctx: &mut Context<Self>) {
        tracing::info!(target: "mcp", server = %self.name, "process {status}");
        if let Some(p) = &mut self.process {
            // The leader is reaped; sweep anything it left in its group.
            signal_group(p.pgid, Signal::Kill);
            unregister_group(p.pgid);
            // Its scratch directory goes with it (its group is gone, nothing writes there now).
            p.scratch = None;
            p.exited = true;
        }
        self.out.close();
        let reason = self.life.exit_reason.get_or_insert(status).clone();
        self.fail_all(&reason);
        if self.stderr.done {
            ctx.stop();
        } else {
            ctx.run_later(STDERR_DRAIN, |_, ctx| ctx.stop());
        }
    }

    /// The process's exit, not its output's end, ends the actor (its exit status is the better
    /// reason). A process that closes its output but lives on cannot answer any more: after
    /// the grace period it is told to go.
    fn on_output_closed(&mut self, ctx: &mut Context<Self>) {
        let Some(pgid) = self.live_group() else {
            return;
        };
        tracing::debug!(target: "mcp", server = %self.name, "stdout closed");
        let grace = self.spec.shutdown_grace;
        ctx.run_later(grace, move |act, ctx| {
            if act.exited() {
                return;
            }
            act.life
                .note_exit(|| "closed its stdout but kept running".to_owned());
            act.fail_all("closed its stdout");
            signal_group(pgid, Signal::Term);
            ctx.run_later(grace, move |act, _| {
                if !act.exited() {
                    signal_group(pgid, Signal::Kill);
                }
            });
        });
    }
}

/// The actor's side of the transport seam: a transport's streams are polled by the actor, its
/// task's messages come to its mailbox.
impl Attach for Context<McpServer> {
    fn attach<S: Stream<Item = TransportEvent> + 'static>(&mut self, events: S) {
        self.add_stream(events);
    }

    fn mailbox(&self) -> Events {
        self.address().recipient()
    }
}

/// HTTP: the task's events, in the actor's mailbox.
impl Handler<TransportEvent> for McpServer {
    type Result = ();

    fn handle(&mut self, ev: TransportEvent, ctx: &mut Context<Self>) {
        self.on_event(ev, ctx);
    }
}

/// stdio: the child's stdout, stderr and exit, each a stream the actor polls.
impl StreamHandler<TransportEvent> for McpServer {
    fn handle(&mut self, ev: TransportEvent, ctx: &mut Context<Self>) {
        self.on_event(ev, ctx);
    }

    /// Each stream tells of its own end (`OutputClosed`, `LogClosed`, `Exited`).
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

#[cfg(test)]
mod tests {
    use super::{StderrLog, STDERR_TAIL};

    /// The tail keeps the last lines, at most `STDERR_TAIL` of them, and is taken once.
    #[test]
    fn the_stderr_tail_keeps_the_last_lines() {
        let mut log = StderrLog::default();
        for n in 0..STDERR_TAIL + 5 {
            log.push("s", format!("line {n}"));
        }
        let tail = log.take_tail();
        assert_eq!(tail.len(), STDERR_TAIL);
        assert_eq!(tail[0], "line 5");
        assert!(log.take_tail().is_empty());
    }
}
