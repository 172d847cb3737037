//! OpenTelemetry spans and metrics of the MCP client, after the GenAI semantic conventions for
//! MCP: a `CLIENT` span per request and notification we send (`{mcp.method.name} {target}`,
//! `mcp.method.name`, `jsonrpc.request.id`, `mcp.protocol.version`, `mcp.session.id` hashed,
//! `gen_ai.tool.name`/`gen_ai.prompt.name`, `gen_ai.operation.name = execute_tool`,
//! `network.transport`, `server.address`/`server.port`, `error.type` and the `ERROR` status),
//! a `SERVER` span per request a server sends us (parented by the trace context in its
//! `params._meta`), the W3C `traceparent`/`tracestate` of each request's span written into its
//! `params._meta`, and the metrics `mcp.client.operation.duration` and
//! `mcp.client.session.duration`.
//!
//! Spans are `tracing` spans of target [`TARGET`], turned into OpenTelemetry spans by the
//! `tracing-opentelemetry` layer the binary installs only when export is on; with it off a span
//! is `Span::none()` (the callsite is disabled: one cached check) and nothing here allocates or
//! formats ([`tracing_on`], [`metrics_on`] are one atomic load each). What is never recorded:
//! argument values and results (unless the user opts in, and then only on the agent's tool
//! span), header values, tokens; the exporter also redacts the session's known secrets from
//! every string it sends.
#![warn(missing_docs)]

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{OnceLock, RwLock};
use std::time::Instant;

use opentelemetry::trace::{
    SpanContext, SpanId, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use opentelemetry::KeyValue;
use serde_json::{Map, Value};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

pub mod breaker;
pub mod export;
mod http;
mod redact;

pub use redact::{
    header_list_values, redact_also, redact_text, secret_parts, url_credentials,
    without_credentials, worth_hiding, written_also, written_form, MIN_SECRET_LEN, PUBLIC_VARS,
};

/// The `tracing` target of every span and event meant for export; the exporter's layer takes
/// this target only (no log line becomes a span event), the log's filter leaves it out.
pub const TARGET: &str = "harness9::otel";

const TRACES: u8 = 1;
const METRICS: u8 = 2;
const CONTENT: u8 = 4;

/// Which signals are exported: set once, by the binary, before any server starts.
static ON: AtomicU8 = AtomicU8::new(0);

/// The session's span, the parent of what has no other (a server's handshake, its re-lists);
/// taken out at exit so that it ends and is exported.
static ROOT: RwLock<Option<Span>> = RwLock::new(None);

/// Turns the signals on (the binary, after it installed the exporters); `content` is the
/// user's opt-in to tool arguments and results on the agent's tool spans.
pub fn enable(traces: bool, metrics: bool, content: bool) {
    let mut v = 0;
    if traces {
        v |= TRACES;
    }
    if metrics {
        v |= METRICS;
    }
    if traces && content {
        v |= CONTENT;
    }
    ON.store(v, Ordering::Relaxed);
}

/// Whether tool arguments and results go on the agent's tool spans (opted in).
pub fn record_content() -> bool {
    ON.load(Ordering::Relaxed) & CONTENT != 0
}

/// Whether spans are exported.
pub fn tracing_on() -> bool {
    ON.load(Ordering::Relaxed) & TRACES != 0
}

/// Whether metrics are exported.
pub fn metrics_on() -> bool {
    ON.load(Ordering::Relaxed) & METRICS != 0
}

/// Sets the session's span.
pub fn set_root(span: Span) {
    if let Ok(mut r) = ROOT.write() {
        *r = Some(span);
    }
}

/// Ends the session's span (at exit, before the last export).
pub fn end_root() {
    if let Ok(mut r) = ROOT.write() {
        r.take();
    }
}

/// `parent` if it is a span, else the session's.
pub fn parent_or_root(parent: &Span) -> Span {
    if !parent.is_none() {
        return parent.clone();
    }
    if !tracing_on() {
        return Span::none();
    }
    ROOT.read()
        .ok()
        .and_then(|r| r.clone())
        .unwrap_or_else(Span::none)
}

/// A span handed to another actor as the parent of its own: boxed, so that a message that
/// carries none (nothing exported) grows by one word only.
#[derive(Debug, Default)]
pub struct Parent(Option<Box<Span>>);

impl Parent {
    /// `span` as a parent (nothing when it is not recorded).
    pub fn of(span: &Span) -> Parent {
        Parent((!span.is_none()).then(|| Box::new(span.clone())))
    }

    /// The span (`Span::none()` when there is none).
    pub fn span(&self) -> Span {
        self.0.as_deref().cloned().unwrap_or_else(Span::none)
    }
}

/// The span name `{method} {target}`, formatted only when the span is recorded.
struct SpanName<'a>(&'a str, Option<&'a str>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(t) => write!(f, "{} {}", self.0, t),
            None => f.write_str(self.0),
        }
    }
}

/// What every span and metric of one server connection carries.
#[derive(Debug, Clone, Default)]
pub struct Conn {
    /// The server's name in the config (`harness9.mcp.server`, ours: the conventions have none).
    pub server: String,
    /// `pipe` (stdio) or `tcp` (HTTP).
    pub transport: &'static str,
    /// The HTTP server's host and port.
    pub address: Option<(String, u16)>,
    /// The negotiated protocol revision, once known.
    pub version: Option<&'static str>,
    /// The hashed `Mcp-Session-Id`, once known.
    pub session: Option<String>,
}

impl Conn {
    fn attributes(&self) -> Vec<KeyValue> {
        let mut a = vec![KeyValue::new("network.transport", self.transport)];
        if let Some(v) = self.version {
            a.push(KeyValue::new("mcp.protocol.version", v));
        }
        if let Some((host, port)) = &self.address {
            a.push(KeyValue::new("server.address", host.clone()));
            a.push(KeyValue::new("server.port", i64::from(*port)));
        }
        a
    }
}

/// One MCP span (`kind` `client` or `server`) with every attribute given at its creation (one
/// pass; nothing is formatted when it is not recorded).
fn mcp_span(
    kind: &'static str,
    parent: &Span,
    method: &'static str,
    target: Option<&str>,
    id: Option<&dyn tracing::Value>,
    conn: &Conn,
) -> Span {
    let tool = target.filter(|_| method == "tools/call");
    tracing::info_span!(target: TARGET, parent: parent, "mcp",
        otel.name = %SpanName(method, target), otel.kind = kind,
        mcp.method.name = method,
        jsonrpc.request.id = id,
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        gen_ai.prompt.name = target.filter(|_| method == "prompts/get"),
        network.transport = conn.transport,
        harness9.mcp.server = conn.server.as_str(),
        server.address = conn.address.as_ref().map(|a| a.0.as_str()),
        server.port = conn.address.as_ref().map(|a| i64::from(a.1)),
        mcp.protocol.version = conn.version,
        mcp.session.id = conn.session.as_deref())
}

/// `Mcp-Session-Id` as exported: the first 32 hex digits of its SHA-256 (the id itself is a
/// bearer of the session).
pub fn hash_session(id: &str) -> String {
    use sha2::Digest as _;
    let d = sha2::Sha256::digest(id.as_bytes());
    d.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// How a request ended, for its span and its duration.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// A result (not a tool error).
    Ok,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// A JSON-RPC error.
    Rpc {
        /// Its code.
        code: i64,
        /// Its message (the span status's description).
        message: &'a str,
    },
    /// No reply: `timeout`, `cancelled`, `transport`, `too_large`, `invalid_result`, ...
    Failed(&'static str),
}

/// One operation we started (a request we sent, or a request a server sent us): its span and
/// its start, ended once with its [`Outcome`]. Inert (no span, no clock) when nothing is
/// exported.
#[derive(Debug, Default)]
pub struct Op(Option<Box<OpInner>>);

#[derive(Debug)]
struct OpInner {
    span: Span,
    started: Instant,
    method: &'static str,
    target: Option<String>,
    conn_attrs: Vec<KeyValue>,
    ended: bool,
}

impl Op {
    /// A `CLIENT` span for `method` (with a tool's or prompt's name as `target`) under
    /// `parent` (else the session's span).
    pub fn client(
        method: &'static str,
        target: Option<&str>,
        id: Option<i64>,
        parent: &Span,
        conn: &Conn,
    ) -> Op {
        if !tracing_on() && !metrics_on() {
            return Op(None);
        }
        let parent = parent_or_root(parent);
        if parent.is_none() && tracing_on() {
            // After the session's span ended (the exit's last shutdown notifications): no
            // span of a trace of its own.
            return Op(None);
        }
        let id = id.map(tracing::field::display);
        let span = mcp_span(
            "client",
            &parent,
            method,
            target,
            id.as_ref().map(|d| d as _),
            conn,
        );
        Op::start(span, method, target, conn)
    }

    /// A `SERVER` span for a request the server sent us, parented by the trace context in its
    /// `params._meta` when it carries one, else the session's span.
    pub fn incoming(method: &str, params: Option<&Value>, id: Option<String>, conn: &Conn) -> Op {
        if !tracing_on() && !metrics_on() {
            return Op(None);
        }
        // A method we do not know is named `other`: a server's string never becomes a name.
        let method: &'static str =
            harness9_protocol::methods::static_name(method).unwrap_or("other");
        let root = parent_or_root(&Span::none());
        let id = id.as_deref().map(tracing::field::display);
        let span = mcp_span(
            "server",
            &root,
            method,
            None,
            id.as_ref().map(|d| d as _),
            conn,
        );
        if let Some(cx) = params.and_then(|p| p.get("_meta")).and_then(remote_parent) {
            let _ = span.set_parent(cx);
        }
        Op::start(span, method, None, conn)
    }

    fn start(span: Span, method: &'static str, target: Option<&str>, conn: &Conn) -> Op {
        Op(Some(Box::new(OpInner {
            span,
            started: Instant::now(),
            method,
            // What only the duration metric needs, kept only when it is exported.
            target: target.filter(|_| metrics_on()).map(str::to_owned),
            conn_attrs: if metrics_on() {
                conn.attributes()
            } else {
                Vec::new()
            },
            ended: false,
        })))
    }

    /// A notification we send: its span, ended at once, and its trace context for the
    /// notification's `params._meta` (the server's span for it joins the trace).
    pub fn notification(method: &'static str, parent: &Span, conn: &Conn) -> Option<TraceContext> {
        let mut op = Op::client(method, None, None, parent, conn);
        let tc = op.trace_context();
        op.end(Outcome::Ok);
        tc
    }

    /// Whether it records nothing (nothing exported).
    pub fn is_inert(&self) -> bool {
        self.0.is_none()
    }

    /// Sets a string attribute on the span (nothing when off).
    pub fn set_attribute(&self, key: &'static str, value: &str) {
        if let Some(i) = &self.0 {
            i.span.set_attribute(key, value.to_owned());
        }
    }

    /// Sets `jsonrpc.request.id` (formatted only when recorded).
    pub fn set_request_id(&self, id: i64) {
        if let Some(i) = &self.0 {
            i.span.set_attribute("jsonrpc.request.id", id.to_string());
        }
    }

    /// The span, to parent another or to read its trace context (`Span::none()` when off).
    pub fn span(&self) -> Span {
        self.0.as_ref().map_or_else(Span::none, |i| i.span.clone())
    }

    /// The W3C trace context of this operation's span, for the request's `params._meta`.
    pub fn trace_context(&self) -> Option<TraceContext> {
        self.0.as_ref().and_then(|i| TraceContext::of(&i.span))
    }

    /// Ends the operation: `error.type`, `rpc.response.status_code` and the status on the span,
    /// the duration in `mcp.client.operation.duration`. A second call does nothing.
    pub fn end(&mut self, outcome: Outcome<'_>) {
        let Some(inner) = self.0.as_mut() else {
            return;
        };
        if std::mem::replace(&mut inner.ended, true) {
            return;
        }
        let error: Option<String> = match &outcome {
            Outcome::Ok => None,
            Outcome::ToolError => Some("tool_error".to_owned()),
            Outcome::Rpc { code, .. } => Some(code.to_string()),
            Outcome::Failed(kind) => Some((*kind).to_owned()),
        };
        if let Some(e) = &error {
            inner.span.set_attribute("error.type", e.clone());
            let description = match &outcome {
                Outcome::Rpc { code, message } => {
                    inner
                        .span
                        .set_attribute("rpc.response.status_code", code.to_string());
                    (*message).to_owned()
                }
                _ => String::new(),
            };
            inner.span.set_status(Status::error(description));
        }
        if metrics_on() {
            let mut attrs = inner.conn_attrs.clone();
            attrs.push(KeyValue::new("mcp.method.name", inner.method));
            if let Some(e) = error {
                attrs.push(KeyValue::new("error.type", e));
            }
            if let Some(t) = &inner.target {
                match inner.method {
                    "tools/call" => {
                        attrs.push(KeyValue::new("gen_ai.tool.name", t.clone()));
                        attrs.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                    }
                    "prompts/get" => attrs.push(KeyValue::new("gen_ai.prompt.name", t.clone())),
                    _ => {}
                }
            }
            instruments()
                .operation
                .record(inner.started.elapsed().as_secs_f64(), &attrs);
        }
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        // A request whose waiter went away before it ended it.
        self.end(Outcome::Failed("cancelled"));
    }
}

/// One server connection's lifetime, for `mcp.client.session.duration`.
#[derive(Debug, Default)]
pub struct SessionClock(Option<Instant>);

impl SessionClock {
    /// Starts counting (when metrics are exported).
    pub fn start() -> Self {
        Self(metrics_on().then(Instant::now))
    }

    /// Records the session's duration once, with `error` when it ended by a failure.
    pub fn end(&mut self, conn: &Conn, error: Option<&'static str>) {
        let Some(started) = self.0.take() else {
            return;
        };
        let mut attrs = conn.attributes();
        if let Some(e) = error {
            attrs.push(KeyValue::new("error.type", e));
        }
        instruments()
            .session
            .record(started.elapsed().as_secs_f64(), &attrs);
    }
}

struct Instruments {
    operation: opentelemetry::metrics::Histogram<f64>,
    session: opentelemetry::metrics::Histogram<f64>,
}

/// The conventions' bucket boundaries for both durations, in seconds.
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

fn instruments() -> &'static Instruments {
    static I: OnceLock<Instruments> = OnceLock::new();
    I.get_or_init(|| {
        let meter = opentelemetry::global::meter("harness9");
        Instruments {
            operation: meter
                .f64_histogram("mcp.client.operation.duration")
                .with_unit("s")
                .with_description("The duration of an MCP request or notification as observed on the sender, from the time it was sent until the response or ack is received")
                .with_boundaries(BOUNDARIES.to_vec())
                .build(),
            session: meter
                .f64_histogram("mcp.client.session.duration")
                .with_unit("s")
                .with_description("The duration of the MCP session as observed on the MCP client")
                .with_boundaries(BOUNDARIES.to_vec())
                .build(),
        }
    })
}

/// A span's W3C trace context, as written into a request's `params._meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// `00-{trace id}-{span id}-{flags}`.
    pub traceparent: String,
    /// The vendors' state, when there is any.
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The context of `span`, when it is recorded and valid.
    pub fn of(span: &Span) -> Option<TraceContext> {
        if !tracing_on() || span.is_none() {
            return None;
        }
        let cx = span.context();
        let otel = cx.span();
        let sc = otel.span_context();
        if !sc.is_valid() {
            return None;
        }
        let state = sc.trace_state().header();
        Some(TraceContext {
            traceparent: format!(
                "00-{}-{}-{:02x}",
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags().to_u8()
            ),
            tracestate: (!state.is_empty()).then_some(state),
        })
    }

    /// `params` (an object, or none) with this context in its `_meta` (unprefixed keys, as
    /// SEP-414 and the conventions say), next to what `_meta` already holds.
    pub fn stamp(&self, params: Option<Value>) -> Option<Value> {
        let mut p = match params {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            // Not an object: no place for `_meta`; sent as it is.
            Some(other) => return Some(other),
        };
        let meta = p
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.insert(
                "traceparent".to_owned(),
                Value::from(self.traceparent.clone()),
            );
            if let Some(s) = &self.tracestate {
                m.insert("tracestate".to_owned(), Value::from(s.clone()));
            }
        }
        Some(Value::Object(p))
    }
}

/// The remote parent a `_meta` carries (`traceparent`, and `tracestate`), strictly parsed: a
/// malformed or all-zero one is none.
pub fn remote_parent(meta: &Value) -> Option<opentelemetry::Context> {
    let sc = parse_traceparent(
        meta.get("traceparent")?.as_str()?,
        meta.get("tracestate").and_then(Value::as_str),
    )?;
    Some(opentelemetry::Context::new().with_remote_span_context(sc))
}

/// `00-<32 hex>-<16 hex>-<2 hex>` (version 00; a later version's first four fields).
fn parse_traceparent(tp: &str, state: Option<&str>) -> Option<SpanContext> {
    if tp.len() > 512 || !tp.is_ascii() {
        return None;
    }
    let mut parts = tp.split('-');
    let version = parts.next()?;
    let trace = parts.next()?;
    let span = parts.next()?;
    let flags = parts.next()?;
    if version.len() != 2 || version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    if !hex(version, 2) || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()? & 1;
    let state = state
        .filter(|s| s.len() <= 512)
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(flags),
        true,
        state,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_traceparent_is_parsed_strictly() {
        let ok = parse_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            None,
        );
        let sc = ok.map(|s| {
            (
                s.trace_id().to_string(),
                s.span_id().to_string(),
                s.is_sampled(),
            )
        });
        assert_eq!(
            sc,
            Some((
                "4bf92f3577b34da6a3ce929d0e0e4736".to_owned(),
                "00f067aa0ba902b7".to_owned(),
                true
            ))
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad, None).is_none(), "{bad}");
        }
        // A later version may carry more fields.
        assert!(parse_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what",
            None
        )
        .is_some());
    }

    #[test]
    fn the_context_goes_into_meta_beside_what_is_there() {
        let tc = TraceContext {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
            tracestate: Some("rojo=00f067aa0ba902b7".to_owned()),
        };
        let p = tc.stamp(Some(json!({"name": "echo", "_meta": {"progressToken": 3}})));
        assert_eq!(
            p,
            Some(json!({"name": "echo", "_meta": {"progressToken": 3,
                "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "tracestate": "rojo=00f067aa0ba902b7"}}))
        );
        assert_eq!(
            tc.stamp(None),
            Some(json!({"_meta": {
                "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "tracestate": "rojo=00f067aa0ba902b7"}}))
        );
    }

    #[test]
    fn off_means_inert() {
        // Nothing enabled in unit tests: no span, no context, ending does nothing.
        let mut op = Op::client(
            "tools/call",
            Some("echo"),
            Some(1),
            &Span::none(),
            &Conn::default(),
        );
        assert!(op.span().is_none());
        assert!(op.trace_context().is_none());
        op.end(Outcome::ToolError);
        assert_eq!(hash_session("abc").len(), 32);
    }
}
