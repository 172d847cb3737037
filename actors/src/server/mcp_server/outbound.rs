//! Outbound, client to server: what the actor sends and waits for ([`Outbound`]): the pending
//! map's entries (inserted before their request is written), the bounded write queue of
//! [`Outgoing`] messages (our requests wait for room, answers and notifications are dropped and
//! counted when it is full), the internal messages that send a request or a notification from
//! a future (the handshake, a re-list), and cancellation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::McpServer;
use crate::messages::ProgressSink;
use crate::protocol::jsonrpc::{self, ErrorObject, LineError, RequestId};
use crate::protocol::methods::{Cancelled, Discover, Initialize, Notification, Request};
use crate::protocol::types::{CancelledParams, StatelessMeta};
use crate::protocol::version::{Era, ProtocolVersion};
use crate::server::server_requests;
use crate::server::transport::{Outgoing, Writer, WRITE_QUEUE};
use crate::telemetry::{Op, Outcome, TraceContext};
use crate::trace::Direction;

/// Why a pending request ended without a result.
#[derive(Debug)]
pub(in crate::server) enum ReplyError {
    Rpc(ErrorObject),
    Gone(String),
    TooLarge(usize),
    Transport(String),
    /// Stateless era: the response stream broke before the response (send it again).
    StreamBroken(String),
}

pub(in crate::server) type Reply = Result<Payload, ReplyError>;

/// A successful reply: its result split out by the envelope parser, or (fast path) the whole
/// line, whose `result` the waiter parses once into its own type.
#[derive(Debug)]
pub(in crate::server) enum Payload {
    Raw(Box<RawValue>),
    Line(Bytes),
}

impl Payload {
    pub(in crate::server) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, LineError> {
        match self {
            Payload::Raw(r) => Ok(serde_json::from_str(r.get())?),
            Payload::Line(l) => jsonrpc::line_result(l),
        }
    }

    /// A `tools/call` result: through its fast reader where the text is a common result it is
    /// sure of (text blocks), else (and for every error) as [`parse`](Self::parse) does.
    pub(in crate::server) fn parse_call(
        &self,
    ) -> Result<crate::protocol::types::CallToolResult, LineError> {
        self.read_or_parse(crate::protocol::call_result::call_result_at)
    }

    /// A list page: through the page type's own fast path where it has one and is sure of the
    /// text (`tools/list`), else (and for every error) as [`parse`](Self::parse) does.
    pub(in crate::server) fn parse_page<P>(&self) -> Result<P, LineError>
    where
        P: crate::protocol::types::Page + serde::de::DeserializeOwned,
    {
        if !P::SKIMS {
            return self.parse();
        }
        self.read_or_parse(P::skim)
    }

    /// The result read by `read` (a fast reader: given the text and where the result starts,
    /// what it read and where it ends, or `None` to decline), else parsed by serde_json.
    fn read_or_parse<T: serde::de::DeserializeOwned>(
        &self,
        read: fn(&crate::protocol::rawjson::ByteString, usize) -> Option<(T, usize)>,
    ) -> Result<T, LineError> {
        let fast = match self {
            Payload::Raw(r) => {
                let text = crate::protocol::rawjson::ByteString::from(r.get());
                read(&text, 0).and_then(|(value, end)| (end == text.len()).then_some(value))
            }
            Payload::Line(l) => crate::protocol::tools_page::plain_result(l, read),
        };
        match fast {
            Some(value) => Ok(value),
            None => self.parse(),
        }
    }
}

/// A request of ours waiting for its reply: who waits, its method (for the trace) and when it
/// was written (for the latency).
pub(super) struct Pending {
    pub(super) tx: oneshot::Sender<Reply>,
    pub(super) method: &'static str,
    pub(super) sent: Instant,
    /// Its span and duration (inert when nothing is exported; a tool call's is its waiter's).
    pub(super) op: Op,
}

impl Pending {
    /// Ends its span with what became of it and hands the reply to its waiter.
    pub(super) fn settle(mut self, reply: Reply) {
        self.op.end(match &reply {
            Ok(_) => Outcome::Ok,
            Err(ReplyError::Rpc(e)) => Outcome::Rpc {
                code: e.code,
                message: &e.message,
            },
            Err(e) => Outcome::Failed(e.kind()),
        });
        let _ = self.tx.send(reply);
    }
}

impl ReplyError {
    /// The low-cardinality `error.type` of a request that got no result.
    pub(in crate::server) fn kind(&self) -> &'static str {
        match self {
            ReplyError::Rpc(_) => "rpc_error",
            ReplyError::Gone(_) => "server_gone",
            ReplyError::TooLarge(_) => "too_large",
            ReplyError::Transport(_) => "transport",
            ReplyError::StreamBroken(_) => "stream_broken",
        }
    }
}

/// Send a request from inside the runtime (discovery, handshake, tools/list); replies with the
/// receiver. In the stateless era (the actor's, or `stateless` for the discovery probe) the
/// params carry the request `_meta`.
#[derive(Message)]
#[rtype(result = "(oneshot::Receiver<Reply>, Option<Backlog>)")]
pub(in crate::server) struct Rpc {
    method: &'static str,
    /// Serialized once, here: written into the line as it is unless a `_meta` is merged in.
    params: Option<Box<RawValue>>,
    stateless: Option<ProtocolVersion>,
}

impl Rpc {
    /// A request of `R` with `params` (serialized now; the stateless `_meta` goes in later).
    pub(in crate::server) fn new<'p, R: Request>(
        params: Option<&R::Params<'p>>,
        stateless: Option<ProtocolVersion>,
    ) -> Result<Self, serde_json::Error>
    where
        R::Params<'p>: serde::Serialize,
    {
        Ok(Self {
            method: R::METHOD,
            params: params.map(serde_json::value::to_raw_value).transpose()?,
            stateless,
        })
    }

    /// The method it sends.
    pub(in crate::server) fn method(&self) -> &'static str {
        self.method
    }
}

/// The era the connection speaks from now on (set by the connect future before any request
/// that depends on it).
#[derive(Message)]
#[rtype(result = "()")]
pub(in crate::server) struct SetEra(pub(in crate::server) Era);

/// What a server actor says about itself in every stateless request: its capabilities (from
/// its spec and its front end, serialized once per process) and the log level it asks for.
#[derive(Debug)]
pub(in crate::server) struct ClientSide {
    declared: Arc<server_requests::Declared>,
    pub(in crate::server) log_level: Option<String>,
}

impl ClientSide {
    /// Our side for a server: what it is declared, the log level it asks for.
    pub(in crate::server) fn new(
        declared: Arc<server_requests::Declared>,
        log_level: Option<String>,
    ) -> Self {
        Self {
            declared,
            log_level,
        }
    }

    /// What `initialize` declares.
    pub(in crate::server) fn capabilities(&self) -> &serde_json::value::RawValue {
        &self.declared.capabilities
    }

    /// The `_meta` of a request at `version`, with `progress_token` when the caller wants
    /// progress.
    pub(in crate::server) fn meta(
        &self,
        version: ProtocolVersion,
        progress_token: Option<i64>,
    ) -> StatelessMeta<'_> {
        StatelessMeta {
            progress_token,
            version: version.as_str(),
            capabilities: &self.declared.stateless,
            info: server_requests::client_info(),
            log_level: self.log_level.as_deref(),
        }
    }

    /// `params` (a serialized object, or none) with the stateless era's request `_meta`
    /// written before its members, as text: what [`ClientSide::stamp`] gives, without a tree
    /// of values. `None` when `params` is not an object or may hold a `_meta` of its own (left
    /// to `stamp`, which replaces it).
    pub(in crate::server) fn stamp_raw(
        &self,
        params: Option<&RawValue>,
        version: ProtocolVersion,
    ) -> Option<Box<RawValue>> {
        let rest = match params.map(|p| p.get()) {
            None => "",
            Some(p) if p.contains("\"_meta\"") => return None,
            Some(p) => p.strip_prefix('{')?.strip_suffix('}')?.trim(),
        };
        let mut out = String::with_capacity(256 + rest.len());
        out.push_str("{\"_meta\":");
        out.push_str(&serde_json::to_string(&self.meta(version, None)).ok()?);
        if !rest.is_empty() {
            out.push(',');
            out.push_str(rest);
        }
        out.push('}');
        RawValue::from_string(out).ok()
    }

    /// `params` (an object, or none) with the stateless era's request `_meta`.
    pub(in crate::server) fn stamp(
        &self,
        params: Option<Value>,
        version: ProtocolVersion,
    ) -> Value {
        let mut p = match params {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let meta = serde_json::to_value(self.meta(version, None)).unwrap_or(Value::Null);
        p.insert("_meta".to_owned(), meta);
        Value::Object(p)
    }
}

/// Send a notification without params.
#[derive(Message)]
#[rtype(result = "Option<Backlog>")]
pub(in crate::server) struct Notify {
    method: &'static str,
    line: Vec<u8>,
}

impl Notify {
    /// The notification `N`, without params.
    pub(in crate::server) fn new<N: Notification>() -> Self
    where
        N::Params<'static>: serde::Serialize,
    {
        Self {
            method: N::METHOD,
            line: jsonrpc::notification::<N>(None),
        }
    }
}

/// Drop a pending request and tell the server.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct CancelRequest {
    pub(super) id: i64,
    pub(super) reason: &'static str,
}

/// A message that found the write queue full, and the writer to wait for room on.
pub(in crate::server) struct Backlog {
    writer: Writer,
    msg: Outgoing,
}

impl Backlog {
    /// Waits for room and writes; `false` if the writer went away. Unbounded by itself: every
    /// caller waits inside its own bound (the call's timeout, the startup timeout, the re-list's).
    pub(in crate::server) async fn send(self) -> bool {
        self.writer.send(self.msg).await.is_ok()
    }
}

/// What became of a line handed to the writer.
enum Queued {
    Sent,
    Full(Outgoing),
    Closed,
}

/// What the actor sends and waits for. Invariants: a request is in `pending` before its line
/// is queued (a reply can never come first); `progress` holds a sink only for a request still
/// pending (both leave together, [`Outbound::take`]); ids are never reused; once the writer is
/// closed nothing is queued again (the transport has ended or is ending).
#[derive(Default)]
pub(in crate::server) struct Outbound {
    /// The transport's write queue (`None` once closed: that ends the transport).
    writer: Option<Writer>,
    /// Answers and notifications dropped because the write queue was full.
    dropped: u64,
    pending: HashMap<i64, Pending, OwnIds>,
    pub(super) progress: HashMap<i64, ProgressSink, OwnIds>,
    next_id: i64,
}

/// The hashing of the maps keyed by the ids of our own requests (and progress tokens, which
/// are those ids): the keys are ours and sequential, a server's message only looks one up and
/// never inserts, so a multiply spreads them and SipHash's resistance to chosen keys buys
/// nothing (it was two SipHash rounds a call).
#[derive(Default, Clone, Copy)]
pub(super) struct OwnIds;

impl std::hash::BuildHasher for OwnIds {
    type Hasher = OwnIdHasher;

    fn build_hasher(&self) -> OwnIdHasher {
        OwnIdHasher(0)
    }
}

/// See [`OwnIds`].
pub(super) struct OwnIdHasher(u64);

/// 2^64 / the golden ratio: an odd multiplier whose high bits (hashbrown's tags) and low bits
/// (its buckets) both vary with sequential keys.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

impl std::hash::Hasher for OwnIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(SPREAD);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(SPREAD);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Outbound {
    /// Whether the write queue is open.
    pub(super) fn is_open(&self) -> bool {
        self.writer.is_some()
    }

    /// The write queue of the transport just opened.
    pub(super) fn open(&mut self, writer: Writer) {
        self.writer = Some(writer);
    }

    /// A sender on the write queue while it is open (a call's future waits for room on it).
    pub(super) fn sender(&self) -> Option<Writer> {
        self.writer.clone()
    }

    /// Closes the write queue: that ends the transport once it has written what is queued.
    pub(super) fn close(&mut self) {
        self.writer = None;
    }

    /// The next request id (never reused).
    fn alloc_id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// The pending request `id`, taken out with its progress sink.
    pub(super) fn take(&mut self, id: i64) -> Option<Pending> {
        let p = self.pending.remove(&id)?;
        self.progress.remove(&id);
        Some(p)
    }

    /// Fails every pending request with `reason`; whether our `server/discover` probe was
    /// among them.
    fn fail_all(&mut self, reason: &str) -> bool {
        let mut probing = false;
        for (_, p) in self.pending.drain() {
            probing |= p.method == Discover::METHOD;
            p.settle(Err(ReplyError::Gone(reason.to_owned())));
        }
        self.progress.clear();
        probing
    }

    /// The ids of the requests in flight that a shutdown tells the server it abandons (all but
    /// `initialize`).
    fn abandoned(&self) -> Vec<i64> {
        self.pending
            .iter()
            .filter(|(_, p)| p.method != Initialize::METHOD)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Queues one message for the writer. A full queue hands it back (`Full`).
    fn enqueue(&self, msg: Outgoing) -> Queued {
        let Some(w) = &self.writer else {
            return Queued::Closed;
        };
        match w.try_send(msg) {
            Ok(()) => Queued::Sent,
            Err(mpsc::error::TrySendError::Full(msg)) => Queued::Full(msg),
            Err(mpsc::error::TrySendError::Closed(_)) => Queued::Closed,
        }
    }

    /// Counts an answer or notification dropped for a full queue; whether to say so (at each
    /// power of two).
    fn count_dropped(&mut self) -> bool {
        self.dropped += 1;
        self.dropped.is_power_of_two()
    }

    /// Queues `msg`; a full queue hands it back with the writer, to wait for room on.
    fn backlog(&self, msg: Outgoing) -> Option<Backlog> {
        match self.enqueue(msg) {
            Queued::Full(msg) => self.writer.clone().map(|writer| Backlog { writer, msg }),
            Queued::Sent | Queued::Closed => None,
        }
    }
}

impl McpServer {
    /// The stateless revision requests carry in `_meta`, when the connection speaks one.
    pub(super) fn stateless(&self) -> Option<ProtocolVersion> {
        self.session.stateless()
    }

    /// The next request id.
    pub(super) fn alloc_id(&mut self) -> i64 {
        self.out.alloc_id()
    }

    /// Writes an answer or a notification, or drops it (counted) when the queue is full.
    pub(super) fn write(&mut self, line: Vec<u8>, id: Option<RequestId>, method: &str) -> bool {
        self.trace(Direction::Send, &line, id.clone(), Some(method), None);
        match self.out.enqueue(Outgoing::line(line)) {
            Queued::Sent => true,
            Queued::Closed => false,
            Queued::Full(_) => {
                if self.out.count_dropped() {
                    tracing::warn!(target: "mcp", server = %self.name, dropped = self.out.dropped, method,
                        "the server is not reading its input: its write queue ({WRITE_QUEUE} messages) is full; answers and notifications are dropped");
                }
                false
            }
        }
    }

    /// Inserts into the pending map, then queues the request `id` (its `line`, and the
    /// `headers` a transport with headers sends with it) in that order. When the write queue is
    /// full the message comes back as a [`Backlog`], for the caller's future to wait for room
    /// within the caller's own bound.
    pub(super) fn request(
        &mut self,
        method: &'static str,
        id: i64,
        line: Vec<u8>,
        headers: Vec<(String, String)>,
        op: Op,
    ) -> (oneshot::Receiver<Reply>, Option<Backlog>) {
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            tx,
            method,
            sent: Instant::now(),
            op,
        };
        if !self.out.is_open() {
            pending.settle(Err(ReplyError::Gone(self.life.gone_reason())));
            return (rx, None);
        }
        self.out.pending.insert(id, pending);
        self.trace(
            Direction::Send,
            &line,
            Some(RequestId::Number(id)),
            Some(method),
            None,
        );
        let msg = Outgoing {
            id: Some(id),
            line,
            headers,
        };
        (rx, self.out.backlog(msg))
    }

    /// [`request`](Self::request) of `R`, its line built from the type (the params serialized
    /// in place), with `trace` (its span's context) in its `params._meta` when exported.
    pub(super) fn send_request<'p, R: Request>(
        &mut self,
        id: i64,
        params: Option<&R::Params<'p>>,
        headers: Vec<(String, String)>,
        (trace, op): (Option<TraceContext>, Op),
    ) -> (oneshot::Receiver<Reply>, Option<Backlog>)
    where
        R::Params<'p>: serde::Serialize,
    {
        let line = match trace {
            None => jsonrpc::request::<R>(id, params),
            // Exported: through a JSON value, to add the context beside the `_meta` there is.
            Some(tc) => {
                let value = params.map(serde_json::to_value).and_then(Result::ok);
                jsonrpc::request_line(id, R::METHOD, tc.stamp(value).as_ref())
            }
        };
        self.request(R::METHOD, id, line, headers, op)
    }

    /// The line of notification `N`, with its span's trace context in `params._meta` when
    /// exported.
    pub(super) fn notification_line<'p, N: Notification>(&self, params: &N::Params<'p>) -> Vec<u8>
    where
        N::Params<'p>: serde::Serialize,
    {
        match Op::notification(N::METHOD, &tracing::Span::none(), &self.session.otel) {
            None => jsonrpc::notification::<N>(Some(params)),
            Some(tc) => {
                let value = serde_json::to_value(params).ok();
                jsonrpc::notification_line(N::METHOD, tc.stamp(value).as_ref())
            }
        }
    }

    /// A request's span (`CLIENT`, under `parent` or the session's) and its trace context.
    pub(super) fn op(
        &self,
        method: &'static str,
        target: Option<&str>,
        id: i64,
        parent: &tracing::Span,
    ) -> (Option<TraceContext>, Op) {
        let op = Op::client(method, target, Some(id), parent, &self.session.otel);
        (op.trace_context(), op)
    }

    /// Tells the server that every request still in flight is abandoned (graceful shutdown:
    /// a server may be in the middle of long work it can stop), then fails them.
    pub(super) fn cancel_all(&mut self, reason: &str) {
        for id in self.out.abandoned() {
            let params = CancelledParams {
                request_id: id,
                reason: "the client is shutting down",
            };
            let line = self.notification_line::<Cancelled>(&params);
            self.write(line, None, Cancelled::METHOD);
        }
        self.fail_all(reason);
    }

    pub(super) fn fail_all(&mut self, reason: &str) {
        self.life.died_probing |= self.out.fail_all(reason);
    }
}

impl Handler<Rpc> for McpServer {
    type Result = MessageResult<Rpc>;

    fn handle(&mut self, msg: Rpc, _ctx: &mut Context<Self>) -> Self::Result {
        let id = self.alloc_id();
        let stateless = msg.stateless.or_else(|| self.stateless());
        let (trace, op) = self.op(msg.method, None, id, &tracing::Span::none());
        let line = match (stateless, trace.as_ref()) {
            // The params as serialized (the handshake era, not exported: the common case).
            (None, None) => jsonrpc::request_line(id, msg.method, msg.params.as_deref()),
            // The stateless `_meta` written before the params' members.
            (Some(v), None) => match self.client.stamp_raw(msg.params.as_deref(), v) {
                Some(p) => jsonrpc::request_line(id, msg.method, Some(&*p)),
                None => self.merged_line(id, &msg, Some(v), None),
            },
            // Exported: the span's context merged into the `_meta` too.
            (_, Some(tc)) => self.merged_line(id, &msg, stateless, Some(tc)),
        };
        MessageResult(self.request(msg.method, id, line, Vec::new(), op))
    }
}

impl McpServer {
    /// `msg`'s request line with its params as a tree of values, the stateless `_meta` (at
    /// `stateless`) and the span's context (`trace`) merged in.
    fn merged_line(
        &self,
        id: i64,
        msg: &Rpc,
        stateless: Option<ProtocolVersion>,
        trace: Option<&TraceContext>,
    ) -> Vec<u8> {
        // Our own serialization: it parses.
        let params: Option<Value> = msg
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok());
        let params = match stateless {
            Some(v) => Some(self.client.stamp(params, v)),
            None => params,
        };
        let params = match trace {
            Some(tc) => tc.stamp(params),
            None => params,
        };
        jsonrpc::request_line(id, msg.method, params.as_ref())
    }
}

impl Handler<SetEra> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: SetEra, _ctx: &mut Context<Self>) {
        self.session.era = Some(msg.0);
    }
}

impl Handler<Notify> for McpServer {
    type Result = Option<Backlog>;

    fn handle(&mut self, msg: Notify, _ctx: &mut Context<Self>) -> Option<Backlog> {
        let line = match Op::notification(msg.method, &tracing::Span::none(), &self.session.otel) {
            None => msg.line,
            // Exported: the notification (it has no params) carries its span's context.
            Some(tc) => jsonrpc::notification_line(msg.method, tc.stamp(None).as_ref()),
        };
        self.trace(Direction::Send, &line, None, Some(msg.method), None);
        self.out.backlog(Outgoing::line(line))
    }
}

impl Handler<CancelRequest> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: CancelRequest, _ctx: &mut Context<Self>) {
        let Some(mut p) = self.out.take(msg.id) else {
            return;
        };
        p.op.end(Outcome::Failed("cancelled"));
        let params = CancelledParams {
            request_id: msg.id,
            reason: msg.reason,
        };
        let line = self.notification_line::<Cancelled>(&params);
        self.write(line, None, Cancelled::METHOD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::fast_response_id;

    /// The `_meta` written as text before a request's members is what merging it into the
    /// params as values gives; params that may hold a `_meta` of their own are left to that.
    #[test]
    fn the_stateless_meta_written_as_text_is_the_merged_one() {
        let spec = crate::spec::ServerSpec::stdio("s", "x", vec![]);
        let caps = server_requests::InputCaps::default();
        let client = ClientSide::new(server_requests::declared(&spec, caps), Some("info".into()));
        let v = crate::protocol::version::MODERN;
        let raw = |t: &str| RawValue::from_string(t.to_owned()).unwrap();
        for params in [
            None,
            Some(raw("{}")),
            Some(raw(" { } ")),
            Some(raw(r#"{"cursor":"c2","a":{"b":[1,{"_m":2}]}}"#)),
            Some(raw(
                r#"{"protocolVersion":"2025-11-25","capabilities":{"x":{}}}"#,
            )),
        ] {
            let text = client.stamp_raw(params.as_deref(), v).unwrap();
            let got: Value = serde_json::from_str(text.get()).unwrap();
            let value = params
                .as_ref()
                .map(|p| serde_json::from_str(p.get()).unwrap());
            assert_eq!(got, client.stamp(value, v), "{params:?}");
        }
        let own = raw(r#"{"_meta":{"progressToken":1}}"#);
        assert!(client.stamp_raw(Some(&own), v).is_none());
        assert!(client.stamp_raw(Some(&raw("[1]")), v).is_none());
    }

    /// A pending request and its progress sink leave together; ids are never reused; failing
    /// all of them says whether the discovery probe was among them.
    #[test]
    fn outbound_keeps_pending_and_progress_in_step() {
        let mut out = Outbound::default();
        let (a, b) = (out.alloc_id(), out.alloc_id());
        assert_ne!(a, b);
        let mut waiting = Vec::new();
        for (id, method) in [(a, Discover::METHOD), (b, "tools/call")] {
            let (tx, rx) = oneshot::channel();
            waiting.push(rx);
            let sent = Instant::now();
            let op = Op::default();
            out.pending.insert(
                id,
                Pending {
                    tx,
                    method,
                    sent,
                    op,
                },
            );
            out.progress.insert(id, ProgressSink::new(|_| {}));
        }
        assert!(out.take(b).is_some());
        assert!(!out.progress.contains_key(&b));
        assert!(out.take(b).is_none());
        assert!(out.fail_all("gone"));
        assert!(out.progress.is_empty() && out.abandoned().is_empty());
        assert!(!out.is_open());
    }

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
