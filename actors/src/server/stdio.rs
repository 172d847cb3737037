//! The `McpServer` actor (stdio here; HTTP through `http.rs`): spawns the child in its own process group, writes stdin from a
//! separate task, reads stdout as a stream of NDJSON frames, drains stderr into tracing, runs the
//! handshake, answers server requests and routes replies through its internal pending map.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use actix::prelude::*;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::FramedRead;

use super::handshake::{handshake, list_tools};
use super::process::{
    describe_exit, plain_io_error, register_group, signal_group, unregister_group,
};
use crate::error::CallError;
use crate::messages::{
    CallServerTool, ConnectionInfo, ProgressSink, ServerEvent, ServerEventKind, Shutdown,
    ToolProgress,
};
use crate::protocol::codec::{Frame, NdjsonCodec};
use crate::protocol::jsonrpc::{
    self, fast_response_id, sniff_id, ErrorObject, Incoming, LineError, RequestId, METHOD_NOT_FOUND,
};
use crate::protocol::types::{
    CallToolParams, CallToolResult, CancelledParams, InitializeResult, ListRootsResult,
    LoggingMessageParams, ProgressParams, RequestMeta, Root, Tool,
};
use crate::protocol::version::Era;
use crate::spec::{ServerSpec, TransportSpec};
use crate::trace::{Direction, WireRecord, WireTap};

const STDERR_TAIL: usize = 100;
/// Messages waiting to be written to a server (stdin, or the HTTP task). When the queue is full
/// our own requests wait for room until their timeout; answers to the server's requests and our
/// notifications are dropped and counted, so a server that floods requests and reads nothing
/// cannot grow us.
pub const WRITE_QUEUE: usize = 1024;
/// stderr lines logged per server: a burst of this many, refilled at this many a second.
const STDERR_BURST: f64 = 200.0;
const STDERR_PER_SEC: f64 = 50.0;
const STDERR_LINE_MAX: usize = 64 * 1024;
/// After the child exits, how long to wait for the rest of its stderr.
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// Why a pending request ended without a result.
#[derive(Debug)]
pub(super) enum ReplyError {
    Rpc(ErrorObject),
    Gone(String),
    TooLarge(usize),
    Transport(String),
}

pub(super) type Reply = Result<Payload, ReplyError>;

/// A successful reply: its result split out by the envelope parser, or (fast path) the whole
/// line, whose `result` the waiter parses once into its own type.
#[derive(Debug)]
pub(super) enum Payload {
    Raw(Box<RawValue>),
    Line(Bytes),
}

impl Payload {
    pub(super) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, LineError> {
        match self {
            Payload::Raw(r) => Ok(serde_json::from_str(r.get())?),
            Payload::Line(l) => jsonrpc::line_result(l),
        }
    }
}

/// What a successful handshake yields.
pub(super) type Handshake = (InitializeResult, Era, Arc<[Arc<Tool>]>);

struct Pending {
    tx: oneshot::Sender<Reply>,
    method: &'static str,
    sent: Instant,
}

/// One MCP server over stdio.
pub struct McpServer {
    spec: Arc<ServerSpec>,
    name: Arc<str>,
    generation: u64,
    events: Recipient<ServerEvent>,
    tap: Option<WireTap>,
    writer: Option<mpsc::Sender<Vec<u8>>>,
    /// Answers and notifications dropped because the write queue was full.
    dropped: u64,
    /// Wire records the tap's sink was too slow to take.
    dropped_records: std::cell::Cell<u64>,
    stderr_budget: f64,
    stderr_refilled: Instant,
    stderr_suppressed: u64,
    pgid: i32,
    pending: HashMap<i64, Pending>,
    progress: HashMap<i64, ProgressSink>,
    next_id: i64,
    stderr_tail: VecDeque<String>,
    stderr_done: bool,
    child_exited: bool,
    connected: bool,
    closing: bool,
    listing: bool,
    relist_pending: bool,
    era: Option<Era>,
    exit_reason: Option<String>,
    cwd: PathBuf,
    started: Instant,
    /// `stdio`, `http` or `sse` (after a fallback).
    kind: &'static str,
    http: bool,
}

impl McpServer {
    /// A server actor for `spec`; it reports to `events` and traces to `tap`.
    pub fn new(
        spec: Arc<ServerSpec>,
        generation: u64,
        events: Recipient<ServerEvent>,
        tap: Option<WireTap>,
    ) -> Self {
        let cwd = match &spec.transport {
            TransportSpec::Stdio { cwd: Some(c), .. } => c.clone(),
            _ => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        let kind = spec.transport.kind();
        Self {
            name: Arc::from(spec.name.as_str()),
            spec,
            generation,
            events,
            tap,
            writer: None,
            dropped: 0,
            dropped_records: std::cell::Cell::new(0),
            stderr_budget: STDERR_BURST,
            stderr_refilled: Instant::now(),
            stderr_suppressed: 0,
            pgid: 0,
            pending: HashMap::new(),
            progress: HashMap::new(),
            next_id: 0,
            stderr_tail: VecDeque::new(),
            stderr_done: true,
            child_exited: false,
            connected: false,
            closing: false,
            listing: false,
            relist_pending: false,
            era: None,
            exit_reason: None,
            cwd,
            started: Instant::now(),
            kind,
            http: false,
        }
    }

    fn spawn_child(&mut self, ctx: &mut Context<Self>) -> Result<(), String> {
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
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        // Built here, enforced by the child between fork and exec; dropped after the spawn.
        let sandbox = match &self.spec.sandbox {
            Some(sb) => {
                let prepared = super::sandbox::prepare(sb, &self.cwd).map_err(|e| {
                    format!("sandbox cannot be applied, so the server is not started: {e}")
                })?;
                prepared.install(&mut cmd);
                Some(prepared)
            }
            None => None,
        };
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

    fn start_http(&mut self, ctx: &mut Context<Self>) {
        let TransportSpec::Http { url, headers, sse } = &self.spec.transport else {
            return;
        };
        let target = super::http::HttpTarget {
            name: self.name.clone(),
            url: url.clone(),
            headers: headers.clone(),
            legacy: *sse,
            max: self.spec.max_message_bytes,
            request_timeout: self.spec.startup_timeout.max(self.spec.tool_timeout)
                + Duration::from_secs(5),
            connect_timeout: self.spec.startup_timeout.min(Duration::from_secs(10)),
        };
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        self.writer = Some(tx);
        self.http = true;
        self.child_exited = true;
        self.stderr_done = true;
        actix_rt::spawn(super::http::run(target, rx, ctx.address()));
    }

    fn alloc_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn trace(
        &self,
        dir: Direction,
        line: &[u8],
        id: Option<RequestId>,
        method: Option<&str>,
        latency: Option<Duration>,
    ) {
        let latency_us = latency.map(|d| d.as_micros() as u64);
        tracing::debug!(
            target: "mcp::wire",
            server = %self.name,
            dir = dir.as_str(),
            id = ?id,
            method = method.unwrap_or(""),
            bytes = line.len(),
            latency_us = ?latency_us,
        );
        if let Some(tap) = &self.tap {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            self.tapped(tap.try_send(WireRecord {
                ts: SystemTime::now(),
                server: self.name.clone(),
                dir,
                id,
                method: method.map(str::to_owned),
                latency_us,
                message: Bytes::copy_from_slice(body),
                http_status: None,
                session: None,
            }));
        }
    }

    fn tapped(&self, sent: Result<(), mpsc::error::TrySendError<WireRecord>>) {
        if let Err(mpsc::error::TrySendError::Full(_)) = sent {
            let n = self.dropped_records.get() + 1;
            self.dropped_records.set(n);
            if n.is_power_of_two() {
                tracing::warn!(target: "mcp", server = %self.name, dropped = n,
                    "the trace sink is behind; wire records dropped");
            }
        }
    }

    /// Queues one line for the writer. A full queue hands the line back (`Full`).
    fn enqueue(&self, line: Vec<u8>) -> Queued {
        let Some(w) = &self.writer else {
            return Queued::Closed;
        };
        match w.try_send(line) {
            Ok(()) => Queued::Sent,
            Err(mpsc::error::TrySendError::Full(line)) => Queued::Full(line),
            Err(mpsc::error::TrySendError::Closed(_)) => Queued::Closed,
        }
    }

    /// Writes an answer or a notification, or drops it (counted) when the queue is full.
    fn write(&mut self, line: Vec<u8>, id: Option<RequestId>, method: &str) -> bool {
        self.trace(Direction::Send, &line, id.clone(), Some(method), None);
        match self.enqueue(line) {
            Queued::Sent => true,
            Queued::Closed => false,
            Queued::Full(_) => {
                self.dropped += 1;
                if self.dropped.is_power_of_two() {
                    tracing::warn!(target: "mcp", server = %self.name, dropped = self.dropped, method,
                        "the server is not reading its input: its write queue ({WRITE_QUEUE} messages) is full; answers and notifications are dropped");
                }
                false
            }
        }
    }

    /// Inserts into the pending map, then queues the request (in that order). When the write
    /// queue is full the line comes back as a [`Backlog`], for the caller's future to wait for
    /// room within the caller's own bound.
    fn request(
        &mut self,
        method: &'static str,
        line: Vec<u8>,
        id: i64,
    ) -> (oneshot::Receiver<Reply>, Option<Backlog>) {
        let (tx, rx) = oneshot::channel();
        if self.writer.is_none() {
            let _ = tx.send(Err(ReplyError::Gone(self.gone_reason())));
            return (rx, None);
        }
        self.pending.insert(
            id,
            Pending {
                tx,
                method,
                sent: Instant::now(),
            },
        );
        self.trace(
            Direction::Send,
            &line,
            Some(RequestId::Number(id)),
            Some(method),
            None,
        );
        (rx, self.backlog(line))
    }

    /// Queues `line`; a full queue hands it back with the writer, to wait for room on.
    fn backlog(&self, line: Vec<u8>) -> Option<Backlog> {
        match self.enqueue(line) {
            Queued::Full(line) => self.writer.clone().map(|writer| Backlog { writer, line }),
            Queued::Sent | Queued::Closed => None,
        }
    }

    fn gone_reason(&self) -> String {
        self.exit_reason
            .clone()
            .unwrap_or_else(|| "is shutting down".to_owned())
    }

    /// Tells the server that every request still in flight is abandoned (graceful shutdown:
    /// a server may be in the middle of long work it can stop), then fails them.
    fn cancel_all(&mut self, reason: &str) {
        let ids: Vec<i64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.method != "initialize")
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let params = CancelledParams {
                request_id: id,
                reason: "the client is shutting down",
            };
            let line = jsonrpc::notification_line("notifications/cancelled", Some(&params));
            self.write(line, None, "notifications/cancelled");
        }
        self.fail_all(reason);
    }

    fn fail_all(&mut self, reason: &str) {
        for (_, p) in self.pending.drain() {
            let _ = p.tx.send(Err(ReplyError::Gone(reason.to_owned())));
        }
        self.progress.clear();
    }

    fn on_line(&mut self, line: Bytes, ctx: &mut Context<Self>) {
        if let Some(n) = fast_response_id(&line) {
            if let Some(p) = self.pending.remove(&n) {
                let id = Some(RequestId::Number(n));
                self.trace(
                    Direction::Recv,
                    &line,
                    id,
                    Some(p.method),
                    Some(p.sent.elapsed()),
                );
                self.progress.remove(&n);
                let _ = p.tx.send(Ok(Payload::Line(line)));
                return;
            }
        }
        let msg = match Incoming::parse(&line) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(target: "mcp", server = %self.name, error = %e,
                    line = %String::from_utf8_lossy(&line[..line.len().min(200)]), "skipped a line that is not JSON-RPC");
                return;
            }
        };
        match msg {
            Incoming::Response { id, outcome } => {
                let pending = match id {
                    RequestId::Number(n) => self.pending.remove(&n).map(|p| (n, p)),
                    RequestId::String(_) => None,
                };
                let Some((n, p)) = pending else {
                    self.trace(Direction::Recv, &line, Some(id), None, None);
                    tracing::debug!(target: "mcp", server = %self.name, "reply to no pending request (late or cancelled)");
                    return;
                };
                self.trace(
                    Direction::Recv,
                    &line,
                    Some(id),
                    Some(p.method),
                    Some(p.sent.elapsed()),
                );
                self.progress.remove(&n);
                let reply = match outcome {
                    Ok(raw) => Ok(Payload::Raw(raw.to_owned())),
                    Err(e) => Err(ReplyError::Rpc(e)),
                };
                let _ = p.tx.send(reply);
            }
            Incoming::Request {
                id,
                method,
                params: _,
            } => {
                self.trace(
                    Direction::Recv,
                    &line,
                    Some(id.clone()),
                    Some(&method),
                    None,
                );
                let reply = match &*method {
                    "ping" => jsonrpc::result_line(&id, &json!({})),
                    "roots/list" => jsonrpc::result_line(&id, &self.roots()),
                    other => jsonrpc::error_line(
                        &id,
                        &ErrorObject {
                            code: METHOD_NOT_FOUND,
                            message: format!("method not found: {other}"),
                            data: None,
                        },
                    ),
                };
                let method = method.into_owned();
                self.write(reply, Some(id), &method);
            }
            Incoming::Notification { method, params } => {
                self.trace(Direction::Recv, &line, None, Some(&method), None);
                self.on_notification(&method, params, ctx);
            }
        }
    }

    fn roots(&self) -> ListRootsResult {
        let name = self
            .cwd
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "/".to_owned());
        ListRootsResult {
            roots: vec![Root {
                uri: format!("file://{}", self.cwd.display()),
                name,
            }],
        }
    }

    fn on_notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        ctx: &mut Context<Self>,
    ) {
        match method {
            "notifications/tools/list_changed" => self.relist(ctx),
            "notifications/progress" => {
                let Some(p) =
                    params.and_then(|p| serde_json::from_str::<ProgressParams>(p.get()).ok())
                else {
                    return;
                };
                tracing::info!(target: "mcp::progress", server = %self.name, progress = p.progress, total = ?p.total, message = ?p.message);
                if let Some(sink) = p
                    .progress_token
                    .as_i64()
                    .and_then(|t| self.progress.get(&t))
                {
                    sink.send(ToolProgress {
                        server: self.spec.name.clone(),
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    });
                }
            }
            "notifications/message" => {
                let Some(m) =
                    params.and_then(|p| serde_json::from_str::<LoggingMessageParams>(p.get()).ok())
                else {
                    return;
                };
                let data = match &m.data {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let logger = m.logger.as_deref().unwrap_or("");
                match m.level.as_str() {
                    "debug" => {
                        tracing::debug!(target: "mcp::server", server = %self.name, logger, "{data}")
                    }
                    "info" | "notice" => {
                        tracing::info!(target: "mcp::server", server = %self.name, logger, "{data}")
                    }
                    "warning" => {
                        tracing::warn!(target: "mcp::server", server = %self.name, logger, "{data}")
                    }
                    _ => {
                        tracing::error!(target: "mcp::server", server = %self.name, logger, level = %m.level, "{data}")
                    }
                }
            }
            _ => {
                tracing::debug!(target: "mcp", server = %self.name, method, "notification ignored")
            }
        }
    }

    fn relist(&mut self, ctx: &mut Context<Self>) {
        if !self.connected || self.closing {
            return;
        }
        if self.listing {
            self.relist_pending = true;
            return;
        }
        self.listing = true;
        // A re-list is bounded like the handshake.
        let bound = self.spec.startup_timeout;
        let list = list_tools(ctx.address(), self.spec.max_tools);
        let fut = async move {
            tokio::time::timeout(bound, list).await.unwrap_or_else(|_| {
                Err(format!(
                    "tools/list did not finish within {} (startupTimeoutSec)",
                    crate::error::fmt_duration(bound)
                ))
            })
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            act.listing = false;
            match res {
                Ok(tools) => act.events.do_send(ServerEvent {
                    server: act.spec.name.clone(),
                    generation: act.generation,
                    kind: ServerEventKind::ToolsChanged { tools },
                }),
                Err(e) => tracing::warn!(target: "mcp", server = %act.name, "tools/list after list_changed failed: {e}"),
            }
            if std::mem::take(&mut act.relist_pending) {
                act.relist(ctx);
            }
        }));
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

    fn on_too_long(&mut self, prefix: Bytes, max: usize) {
        let id = sniff_id(&prefix);
        tracing::warn!(target: "mcp", server = %self.name, id = ?id, max, "discarded a message over the maximum message size");
        if let Some(RequestId::Number(n)) = id {
            if let Some(p) = self.pending.remove(&n) {
                self.progress.remove(&n);
                let _ = p.tx.send(Err(ReplyError::TooLarge(max)));
            }
        }
    }

    fn on_handshake(&mut self, res: Result<Handshake, String>, ctx: &mut Context<Self>) {
        match res {
            Ok((init, era, tools)) => {
                self.connected = true;
                self.era = Some(era);
                let info = ConnectionInfo {
                    protocol_version: era.version_str().to_owned(),
                    server_info: init.server_info,
                    instructions: init.instructions,
                    connect_time: self.started.elapsed(),
                    transport: self.kind,
                    pid: u32::try_from(self.pgid).ok().filter(|p| *p > 0),
                };
                tracing::info!(target: "mcp", server = %self.name, tools = tools.len(), version = %info.protocol_version, "connected");
                self.events.do_send(ServerEvent {
                    server: self.spec.name.clone(),
                    generation: self.generation,
                    kind: ServerEventKind::Connected { info, tools },
                });
            }
            Err(e) => {
                if self.exit_reason.is_none() {
                    self.exit_reason = Some(e);
                }
                self.kill_now(ctx);
            }
        }
    }

    fn kill_now(&mut self, ctx: &mut Context<Self>) {
        self.closing = true;
        self.writer = None;
        if self.pgid > 0 && !self.child_exited {
            signal_group(self.pgid, libc::SIGKILL);
        } else {
            ctx.stop();
        }
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

// ---- internal messages ------------------------------------------------------------------------

/// Send a request from inside the runtime (handshake, tools/list); replies with the receiver.
#[derive(Message)]
#[rtype(result = "(oneshot::Receiver<Reply>, Option<Backlog>)")]
pub(super) struct Rpc {
    pub(super) method: &'static str,
    pub(super) params: Option<Value>,
}

/// Send a notification without params.
#[derive(Message)]
#[rtype(result = "Option<Backlog>")]
pub(super) struct Notify {
    pub(super) method: &'static str,
}

/// Drop a pending request and tell the server.
#[derive(Message)]
#[rtype(result = "()")]
struct CancelRequest {
    id: i64,
    reason: &'static str,
}

struct StderrItem(Result<Frame, io::Error>);

/// A line that found the write queue full, and the writer to wait for room on.
pub(super) struct Backlog {
    writer: mpsc::Sender<Vec<u8>>,
    line: Vec<u8>,
}

impl Backlog {
    /// Waits for room and writes; `false` if the writer went away. Unbounded by itself: every
    /// caller waits inside its own bound (the call's timeout, the startup timeout, the re-list's).
    pub(super) async fn send(self) -> bool {
        self.writer.send(self.line).await.is_ok()
    }
}

/// What became of a line handed to the writer.
enum Queued {
    Sent,
    Full(Vec<u8>),
    Closed,
}

impl Actor for McpServer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(crate::MAILBOX);
        if matches!(self.spec.transport, TransportSpec::Http { .. }) {
            self.start_http(ctx);
        } else if let Err(e) = self.spawn_child(ctx) {
            tracing::info!(target: "mcp", server = %self.name, "{e}");
            self.exit_reason = Some(e);
            self.child_exited = true;
            ctx.stop();
            return;
        }
        let fut = handshake(ctx.address(), self.spec.max_tools);
        ctx.spawn(
            fut.into_actor(self)
                .map(|res, act, ctx| act.on_handshake(res, ctx)),
        );
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        let reason = self.gone_reason();
        self.fail_all(&reason);
        if !self.child_exited {
            signal_group(self.pgid, libc::SIGKILL);
            unregister_group(self.pgid);
        }
        self.events.do_send(ServerEvent {
            server: self.spec.name.clone(),
            generation: self.generation,
            kind: ServerEventKind::Exited {
                connected: self.connected,
                reason,
                stderr_tail: self.stderr_tail.drain(..).collect(),
            },
        });
    }
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

impl Handler<Rpc> for McpServer {
    type Result = MessageResult<Rpc>;

    fn handle(&mut self, msg: Rpc, _ctx: &mut Context<Self>) -> Self::Result {
        let id = self.alloc_id();
        let line = jsonrpc::request_line(id, msg.method, msg.params.as_ref());
        MessageResult(self.request(msg.method, line, id))
    }
}

impl Handler<Notify> for McpServer {
    type Result = Option<Backlog>;

    fn handle(&mut self, msg: Notify, _ctx: &mut Context<Self>) -> Option<Backlog> {
        let line = jsonrpc::notification_line::<()>(msg.method, None);
        self.trace(Direction::Send, &line, None, Some(msg.method), None);
        self.backlog(line)
    }
}

impl Handler<CancelRequest> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: CancelRequest, _ctx: &mut Context<Self>) {
        if self.pending.remove(&msg.id).is_none() {
            return;
        }
        self.progress.remove(&msg.id);
        let params = CancelledParams {
            request_id: msg.id,
            reason: msg.reason,
        };
        let line = jsonrpc::notification_line("notifications/cancelled", Some(&params));
        self.write(line, None, "notifications/cancelled");
    }
}

impl Handler<Shutdown> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Context<Self>) {
        if self.http {
            self.exit_reason
                .get_or_insert_with(|| "was stopped".to_owned());
            if msg.graceful {
                self.cancel_all("is shutting down");
            } else {
                self.fail_all("is shutting down");
            }
            // Dropping the sender ends the HTTP task, which DELETEs the session and reports.
            self.writer = None;
            self.closing = true;
            if msg.graceful {
                ctx.run_later(self.spec.shutdown_grace * 2, |_, ctx| ctx.stop());
            } else {
                ctx.stop();
            }
            return;
        }
        if self.child_exited {
            ctx.stop();
            return;
        }
        if !msg.graceful {
            self.exit_reason
                .get_or_insert_with(|| "was stopped".to_owned());
            self.fail_all("was stopped");
            self.kill_now(ctx);
            return;
        }
        if self.closing {
            return;
        }
        self.closing = true;
        self.exit_reason
            .get_or_insert_with(|| "was stopped".to_owned());
        self.cancel_all("is shutting down");
        // Dropping the sender lets the writer flush and close stdin.
        self.writer = None;
        let grace = self.spec.shutdown_grace;
        let pgid = self.pgid;
        ctx.run_later(grace, move |act, ctx| {
            if act.child_exited {
                return;
            }
            tracing::debug!(target: "mcp", server = %act.name, "still running after stdin closed; SIGTERM");
            signal_group(pgid, libc::SIGTERM);
            ctx.run_later(grace, move |act, _| {
                if !act.child_exited {
                    tracing::debug!(target: "mcp", server = %act.name, "still running after SIGTERM; SIGKILL");
                    signal_group(pgid, libc::SIGKILL);
                }
            });
        });
    }
}

impl Handler<super::http::Inbound> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: super::http::Inbound, ctx: &mut Context<Self>) {
        self.on_line(msg.0, ctx);
    }
}

impl Handler<super::http::TransportFailed> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: super::http::TransportFailed, ctx: &mut Context<Self>) {
        if let Some(p) = msg.id.and_then(|id| self.pending.remove(&id)) {
            if let Some(id) = msg.id {
                self.progress.remove(&id);
            }
            let _ = p.tx.send(Err(ReplyError::Transport(msg.error.clone())));
        }
        if msg.fatal && !self.closing {
            tracing::info!(target: "mcp", server = %self.name, "connection lost: {}", msg.error);
            let lost = format!("lost its connection ({})", msg.error);
            self.exit_reason.get_or_insert(msg.error);
            self.fail_all(&lost);
            self.writer = None;
            ctx.stop();
        }
    }
}

impl Handler<super::http::HttpStatus> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: super::http::HttpStatus, _ctx: &mut Context<Self>) {
        tracing::debug!(target: "mcp::wire", server = %self.name, dir = "recv", id = ?msg.id,
            method = %msg.method, http_status = msg.status, session = msg.session.as_deref().unwrap_or(""));
        if let Some(tap) = &self.tap {
            self.tapped(tap.try_send(WireRecord {
                ts: SystemTime::now(),
                server: self.name.clone(),
                dir: Direction::Recv,
                id: msg.id.map(RequestId::Number),
                method: Some(msg.method),
                latency_us: None,
                message: Bytes::new(),
                http_status: Some(msg.status),
                session: msg.session,
            }));
        }
    }
}

impl Handler<super::http::TransportKind> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: super::http::TransportKind, _ctx: &mut Context<Self>) {
        self.kind = msg.0;
    }
}

impl Handler<super::http::TransportClosed> for McpServer {
    type Result = ();

    fn handle(&mut self, _msg: super::http::TransportClosed, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Sends `notifications/cancelled` if the call future is dropped before its reply.
struct CancelOnDrop {
    addr: Addr<McpServer>,
    id: i64,
    armed: bool,
}

impl CancelOnDrop {
    fn fire(&mut self, reason: &'static str) {
        if std::mem::take(&mut self.armed) {
            self.addr.do_send(CancelRequest {
                id: self.id,
                reason,
            });
        }
    }
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.fire("caller went away");
    }
}

impl Handler<CallServerTool> for McpServer {
    type Result = ResponseFuture<Result<CallToolResult, CallError>>;

    fn handle(&mut self, msg: CallServerTool, ctx: &mut Context<Self>) -> Self::Result {
        let server = self.spec.name.clone();
        let tool = msg.tool;
        if !self.connected || self.closing || self.writer.is_none() {
            let reason = if self.connected {
                self.gone_reason()
            } else {
                "still starting".to_owned()
            };
            return Box::pin(async move { Err(CallError::ServerUnavailable { server, reason }) });
        }
        let id = self.alloc_id();
        let meta = msg.progress.map(|sink| {
            self.progress.insert(id, sink);
            RequestMeta { progress_token: id }
        });
        let params = CallToolParams {
            name: &tool,
            arguments: msg.arguments.as_ref(),
            meta,
        };
        let line = jsonrpc::request_line(id, "tools/call", Some(&params));
        let (rx, backlog) = self.request("tools/call", line, id);
        let writer = self.writer.clone();
        // At the timeout, a full queue means the server stopped reading: say so.
        let stuck = move || writer.as_ref().is_some_and(|w| w.capacity() == 0);
        let mut guard = CancelOnDrop {
            addr: ctx.address(),
            id,
            armed: true,
        };
        let (timeout, cancel) = (msg.timeout, msg.cancel);
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            if let Some(b) = backlog {
                // The server is not reading: wait for room, within the call's own timeout.
                tokio::select! {
                    biased;
                    _ = b.send() => {}
                    _ = cancel.cancelled() => {
                        guard.fire("cancelled by the user");
                        return Err(CallError::Cancelled { server, tool });
                    }
                    _ = tokio::time::sleep_until(deadline) => {
                        guard.fire("timed out");
                        return Err(CallError::NotReading { server, tool, after: timeout });
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline {
                // Out of time before the first look at the reply: a timeout, whatever may have
                // arrived meanwhile (so a tiny timeout times out on any machine).
                guard.fire("timed out");
                return Err(CallError::Timeout {
                    server,
                    tool,
                    after: timeout,
                });
            }
            let outcome = tokio::select! {
                biased;
                r = rx => r,
                _ = cancel.cancelled() => {
                    guard.fire("cancelled by the user");
                    return Err(CallError::Cancelled { server, tool });
                }
                _ = tokio::time::sleep_until(deadline) => {
                    guard.fire("timed out");
                    if stuck() {
                        return Err(CallError::NotReading { server, tool, after: timeout });
                    }
                    return Err(CallError::Timeout { server, tool, after: timeout });
                }
            };
            guard.disarm();
            match outcome {
                Ok(Ok(raw)) => match raw.parse::<CallToolResult>() {
                    Ok(r) => Ok(r),
                    Err(LineError::Both) => Err(CallError::Rpc {
                        server,
                        tool,
                        error: jsonrpc::both_result_and_error(),
                    }),
                    Err(e) => Err(CallError::InvalidResult {
                        server,
                        tool,
                        detail: e.to_string(),
                    }),
                },
                Ok(Err(ReplyError::Rpc(error))) => Err(CallError::Rpc {
                    server,
                    tool,
                    error,
                }),
                Ok(Err(ReplyError::Gone(status))) => Err(CallError::ServerExited {
                    server,
                    tool,
                    status,
                }),
                Ok(Err(ReplyError::TooLarge(max))) => {
                    Err(CallError::TooLarge { server, tool, max })
                }
                Ok(Err(ReplyError::Transport(detail))) => Err(CallError::Transport {
                    server,
                    tool,
                    detail,
                }),
                Err(_) => Err(CallError::ServerExited {
                    server,
                    tool,
                    status: "stopped".to_owned(),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_takes_only_the_exact_prefix() {
        assert_eq!(
            fast_response_id(br#"{"jsonrpc":"2.0","id":17,"result":{}}"#),
            Some(17)
        );
        assert_eq!(
            fast_response_id(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#),
            Some(0)
        );
        assert_eq!(
            fast_response_id(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            None
        );
        assert_eq!(
            fast_response_id(br#"{"jsonrpc":"2.0","id":1,"error":{}}"#),
            None
        );
        assert_eq!(
            fast_response_id(br#"{"result":{},"jsonrpc":"2.0","id":1}"#),
            None
        );
        let line =
            Bytes::from_static(br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a"}]}}"#);
        let page: crate::protocol::types::ListToolsResult = Payload::Line(line).parse().unwrap();
        assert_eq!(page.tools[0].name, "a");
    }
}
