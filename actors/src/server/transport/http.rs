//! The HTTP transport of a server actor: Streamable HTTP (POST per message, JSON or SSE replies,
//! `Mcp-Session-Id`, the optional GET stream) and the legacy HTTP+SSE transport of 2024-11-05.
//!
//! It runs as one local task per connection (the `awc::Client` holds an `Rc`, so it is built
//! here, on the actor's arbiter). The actor hands it [`Outgoing`] messages (their line, and a
//! call's `Mcp-Param-*` headers) and gets back incoming messages as [`TransportEvent::Message`],
//! exactly as stdout would give them, so every protocol rule lives in one place. [`redirects`] keeps the credentials on their origin; [`legacy`] is the
//! HTTP+SSE transport.
//!
//! What it does on the wire:
//! - One POST per message, the body's mirrors as headers (`Mcp-Method`, `Mcp-Name`,
//!   `MCP-Protocol-Version`, and an `x-mcp-header` call's `Mcp-Param-*`, carried by its
//!   [`Outgoing`]); at most [`MAX_IN_FLIGHT`] at once, incoming messages handed to the actor
//!   with `try_send`, then `send` (never `do_send` past its mailbox).
//! - The reply is JSON or an SSE stream; a stream that ends early is resumed with
//!   `Last-Event-ID` (at most [`MAX_RESUMES`] times, after a `retry` of at most
//!   [`MAX_RETRY_MS`]). A JSON-RPC error in a 4xx body is delivered as the reply.
//! - `Mcp-Session-Id` is kept; `notifications/initialized` is answered (202) before the next
//!   line is taken; on a session loss the connection initializes again, one re-initialization
//!   at a time (a request that lost the same session only retries, new requests wait).
//! - The GET stream opens after `initialized`, before the next request (which waits at most
//!   [`GET_OPEN_WAIT`]). In the stateless era a call is cancelled by closing its POST.
//! - Every request carries a timeout of the larger of the server's startup and tool timeouts
//!   plus 5 s, and a connect timeout of its startup timeout, at most 10 s.
//! - The HTTP status, headers and error bodies go to the trace
//!   ([`TransportEvent::Exchange`]). A broken stream is followed by a bare TCP connect to the
//!   server (refused: gone), so a cut event on a live server fails one request, not the
//!   connection; a connection that is gone is a fatal failure, which stops the actor like a
//!   child's exit.

mod auth;
mod legacy;
mod meta;
mod redirects;

use auth::{Auth, AuthNeeded};

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::dev::SendError;
use awc::http::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{mpsc, Mutex, Semaphore};
use tokio_util::sync::CancellationToken;

use super::{
    budget, Attach, Events, HttpStatus, Opened, Outgoing, Transport, TransportEvent,
    TransportFailed, WRITE_QUEUE,
};
use crate::net::{install_crypto, snippet};
use crate::protocol::jsonrpc::{self, Incoming, RequestId};
use crate::protocol::methods::{
    Cancelled, Discover, Initialize, Initialized, Notification, Request,
};
use crate::protocol::sse::SseParser;
use crate::spec::{ServerSpec, TransportSpec};
use meta::{header_list, request_headers, Peek};

/// Streamable HTTP (or legacy HTTP+SSE): one local task per connection.
pub(in crate::server) struct Http;

impl Transport for Http {
    fn open(spec: &ServerSpec, to: &mut impl Attach) -> Result<Opened, String> {
        let TransportSpec::Http { url, headers, sse } = &spec.transport else {
            return Err("not an HTTP server".to_owned());
        };
        let target = HttpTarget {
            name: Arc::from(spec.name.as_str()),
            url: url.clone(),
            headers: headers.clone(),
            legacy: *sse,
            max: spec.max_message_bytes,
            request_timeout: spec.startup_timeout.max(spec.tool_timeout) + Duration::from_secs(5),
            connect_timeout: spec.startup_timeout.min(Duration::from_secs(10)),
            oauth: spec.oauth.clone(),
        };
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        actix_rt::spawn(run(target, rx, to.mailbox()));
        Ok(Opened {
            writer: tx,
            process: None,
            headers: true,
        })
    }
}

/// Where and how to connect.
struct HttpTarget {
    pub name: Arc<str>,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub legacy: bool,
    pub max: usize,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub oauth: Option<crate::oauth::OAuthSpec>,
}

struct Failure {
    error: String,
    fatal: bool,
    reissue: bool,
    /// The request failed for want of an OAuth login.
    needs_login: bool,
    /// The request failed for want of a scope (`403 insufficient_scope`).
    step_up: bool,
    /// The server asked for authorization (`401`, or `403` `insufficient_scope`).
    auth: Option<AuthNeeded>,
}

/// A failure; its text as it may be shown (`telemetry::written_form`): a URL that carries a
/// `${VAR}` value (`?key=...`) names the variable, in the status, the error a call gets and the
/// log.
fn fail(error: impl Into<String>, fatal: bool) -> Failure {
    let error: String = error.into();
    Failure {
        error: crate::telemetry::written_form(&error).into_owned(),
        fatal,
        reissue: false,
        needs_login: false,
        step_up: false,
        auth: None,
    }
}

/// POSTs in flight at once; past it, lines wait in the actor's bounded write queue.
const MAX_IN_FLIGHT: usize = 256;
/// How many times one SSE reply that ended early is resumed with `Last-Event-ID`.
const MAX_RESUMES: usize = 5;
/// The longest `retry` a server may ask us to wait before resuming.
const MAX_RETRY_MS: u64 = 30_000;
/// How long the request after `initialized` waits for the GET stream to open.
const GET_OPEN_WAIT: Duration = Duration::from_secs(2);

struct Conn {
    client: awc::Client,
    target: HttpTarget,
    actor: Events,
    session: RefCell<Option<String>>,
    protocol: RefCell<Option<String>>,
    init_line: RefCell<Option<Vec<u8>>>,
    endpoint: RefCell<Option<String>>,
    get_started: Cell<bool>,
    /// The connection speaks the stateless era (a request carried its `_meta` revision).
    stateless: Cell<bool>,
    /// Stateless era: the POSTs in flight by request id, so a cancel can close one.
    inflight: RefCell<std::collections::HashMap<i64, CancellationToken>>,
    /// Held while a re-initialization runs, so concurrent session losses initialize once.
    reinit: Mutex<()>,
    token: CancellationToken,
    /// OAuth: the grant in use and the login flow (when the server has an OAuth spec).
    auth: Option<Auth>,
}

/// Runs one HTTP connection until the actor drops its sender.
async fn run(target: HttpTarget, mut rx: mpsc::Receiver<Outgoing>, actor: Events) {
    install_crypto();
    // A configured `Authorization` header is the user's own credential: no OAuth then (a 401
    // says to check the headers).
    let static_auth = target
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    let auth = target
        .oauth
        .clone()
        .filter(|_| !static_auth)
        .map(|spec| Auth::new(spec, &target.url));
    // Redirects are followed by `send_following`, which keeps credentials on their origin.
    let client = awc::Client::builder()
        .connector(
            awc::Connector::new()
                .connector(crate::server::close_bodies_tcp())
                .rustls_0_23(crate::net::tls_config())
                .timeout(target.connect_timeout),
        )
        .disable_timeout()
        .disable_redirects()
        .finish();
    let conn = Rc::new(Conn {
        client,
        target,
        actor,
        session: RefCell::new(None),
        protocol: RefCell::new(None),
        init_line: RefCell::new(None),
        endpoint: RefCell::new(None),
        get_started: Cell::new(false),
        stateless: Cell::new(false),
        inflight: RefCell::new(std::collections::HashMap::new()),
        reinit: Mutex::new(()),
        token: CancellationToken::new(),
        auth,
    });
    if conn.target.legacy {
        if let Err(f) = conn.clone().open_legacy().await {
            conn.actor
                .do_send(TransportEvent::Failed(Box::new(TransportFailed {
                    id: None,
                    error: f.error,
                    fatal: true,
                    reissue: false,
                    needs_login: false,
                    step_up: false,
                })));
            return;
        }
    }
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    while let Some(out) = rx.recv().await {
        let c = conn.clone();
        let token = conn.token.clone();
        // One parse per line: its method and mirrored fields (the id comes with the message).
        let peek = Peek::of(&out.line);
        if peek.method == Initialized::METHOD {
            // `initialized` reaches the server (its 202) before any later request is sent.
            token.run_until_cancelled(c.send(out, peek)).await;
            continue;
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break;
        };
        actix_rt::spawn(async move {
            token.run_until_cancelled(c.send(out, peek)).await;
            drop(permit);
        });
    }
    conn.close().await;
    conn.token.cancel();
    conn.actor.do_send(TransportEvent::Closed);
}

impl Conn {
    /// Keeps the server's `Mcp-Session-Id`; a new one goes to the actor, hashed, for the
    /// spans' `mcp.session.id` (only while telemetry is exported).
    fn set_session(&self, id: &str) {
        let changed = self.session.borrow().as_deref() != Some(id);
        *self.session.borrow_mut() = Some(id.to_owned());
        if changed && crate::telemetry::tracing_on() {
            self.actor
                .do_send(TransportEvent::Session(crate::telemetry::hash_session(id)));
        }
    }

    fn send_error(&self, e: awc::error::SendRequestError) -> Failure {
        use awc::error::SendRequestError as E;
        match e {
            E::Connect(c) => fail(
                format!(
                    "cannot connect to {}: {c}{}",
                    self.target.url,
                    crate::net::certificate_hint(&c.to_string())
                ),
                true,
            ),
            E::Timeout => fail(
                format!(
                    "no response headers from {} within {} s",
                    self.target.url,
                    self.target.request_timeout.as_secs()
                ),
                false,
            ),
            other => fail(
                format!("request to {} failed: {other}", self.target.url),
                true,
            ),
        }
    }

    fn report(&self, id: Option<i64>, f: Failure) {
        if id.is_none() && !f.fatal {
            tracing::warn!(target: "mcp", server = %self.target.name, "{}", f.error);
            return;
        }
        self.actor
            .do_send(TransportEvent::Failed(Box::new(TransportFailed {
                id,
                error: f.error,
                fatal: f.fatal,
                reissue: f.reissue,
                needs_login: f.needs_login,
                step_up: f.step_up,
            })));
    }

    /// Hands an incoming message to the actor; remembers the negotiated version.
    async fn deliver(&self, data: Bytes, is_init: bool) {
        if is_init {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&data) {
                if let Some(p) = v
                    .pointer("/result/protocolVersion")
                    .and_then(|p| p.as_str())
                {
                    *self.protocol.borrow_mut() = Some(p.to_owned());
                }
            }
        }
        // Backpressure: past the actor's mailbox capacity the stream waits instead of queueing.
        match self.actor.try_send(TransportEvent::Message(data)) {
            Ok(()) | Err(SendError::Closed(_)) => {}
            Err(SendError::Full(msg)) => {
                let _ = self.actor.send(msg).await;
            }
        }
    }

    async fn send(self: Rc<Self>, out: Outgoing, peek: Peek) {
        let Outgoing { id, line, headers } = out;
        let method = peek.method.as_str();
        if method == Initialize::METHOD {
            *self.init_line.borrow_mut() = Some(line.clone());
        }
        let stateless = peek
            .params
            .as_ref()
            .and_then(|p| p.meta.as_ref())
            .is_some_and(|m| m.protocol_version.is_some());
        // The discovery probe carries `_meta` whatever the server turns out to speak.
        if stateless && method != Discover::METHOD {
            self.stateless.set(true);
        }
        if method == Cancelled::METHOD && self.stateless.get() {
            // Stateless HTTP: closing the request's response stream is the cancellation.
            let target = peek
                .params
                .as_ref()
                .and_then(|p| p.request_id.as_ref())
                .and_then(|v| v.as_i64());
            if let Some(t) = target.and_then(|t| self.inflight.borrow_mut().remove(&t)) {
                t.cancel();
            }
            return;
        }
        let mut extra = request_headers(method, &peek);
        extra.extend(headers);
        let endpoint = self.endpoint.borrow().clone();
        let result = match endpoint {
            Some(ep) => self.post_legacy(&ep, line).await,
            None => {
                let token = CancellationToken::new();
                if let Some(n) = id.filter(|_| self.stateless.get()) {
                    self.inflight.borrow_mut().insert(n, token.clone());
                }
                let posted = token
                    .run_until_cancelled(self.clone().post_authorized(line, id, method, &extra))
                    .await;
                if let Some(n) = id {
                    self.inflight.borrow_mut().remove(&n);
                }
                posted.unwrap_or(Ok(()))
            }
        };
        if let Err(f) = result {
            self.report(id, f);
        }
    }

    async fn post(
        self: Rc<Self>,
        line: Vec<u8>,
        id: Option<i64>,
        method: &str,
        may_reinit: bool,
        extra: &[(String, String)],
    ) -> Result<(), Failure> {
        let is_init = method == Initialize::METHOD;
        if !is_init {
            // A re-initialization in progress: wait for its new session rather than send
            // without one.
            drop(self.reinit.lock().await);
        }
        let sent_session = self.session.borrow().clone();
        let url = self.target.url.clone();
        let mut resp = self
            .send_following(awc::http::Method::POST, &url, Some(&line), !is_init, extra)
            .await?;
        let status = resp.status();
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.set_session(s);
        }
        let needed = self.auth_needed(&resp);
        let error_body = if status.is_success() && needed.is_none() {
            None
        } else {
            Some(resp.body().limit(64 * 1024).await.unwrap_or_default())
        };
        self.actor
            .do_send(TransportEvent::Exchange(Box::new(HttpStatus {
                id,
                method: method.to_owned(),
                status: status.as_u16(),
                session: self.session.borrow().clone(),
                request_headers: extra.to_vec(),
                response_headers: header_list(resp.headers()),
                body: error_body.clone(),
            })));
        if let Some(needed) = needed {
            let mut f = fail(self.needs_login(&needed), false);
            f.auth = Some(needed);
            f.needs_login = true;
            return Err(f);
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            if method == Initialized::METHOD && !self.get_started.replace(true) {
                // The GET stream is open (or refused) before any later request is sent, so a
                // request the server sends right after `initialized` has a stream to go on.
                let (ready, opened) = tokio::sync::oneshot::channel();
                let c = self.clone();
                let token = self.token.clone();
                actix_rt::spawn(async move {
                    token.run_until_cancelled(c.get_stream(Some(ready))).await;
                });
                let _ = tokio::time::timeout(GET_OPEN_WAIT, opened).await;
            }
            return Ok(());
        }
        if let Some(body) = error_body {
            let text = snippet(&body);
            let had_session = sent_session.is_some();
            let session_lost = !is_init
                && had_session
                && (status == StatusCode::NOT_FOUND
                    || (status == StatusCode::BAD_REQUEST
                        && text.to_ascii_lowercase().contains("session")));
            if session_lost && may_reinit {
                self.reinit(sent_session).await?;
                return Box::pin(self.clone().post(line, id, method, false, extra)).await;
            }
            // A JSON-RPC error answering this very request (a stateless server's -32022
            // unsupported version, -32601 unknown method, -32020 header mismatch): it is the
            // reply, not a transport failure.
            if let (
                Some(want),
                Ok(Incoming::Response {
                    id: RequestId::Number(got),
                    outcome: Err(_),
                }),
            ) = (id, Incoming::parse(&body))
            {
                if want == got {
                    self.deliver(body, false).await;
                    return Ok(());
                }
            }
            let legacy_hint = matches!(status.as_u16(), 400 | 404 | 405);
            if is_init && legacy_hint && !self.target.legacy {
                tracing::info!(target: "mcp", server = %self.target.name, "initialize got HTTP {}; trying the legacy HTTP+SSE transport", status.as_u16());
                self.clone().open_legacy().await.map_err(|f| {
                    fail(format!("initialize got HTTP {status} and the legacy SSE fallback failed too: {}", f.error), f.fatal)
                })?;
                let ep = self.endpoint.borrow().clone().unwrap_or_default();
                return self.post_legacy(&ep, line).await;
            }
            let hint = match status.as_u16() {
                401 | 403 => format!(
                    "; check the headers of server \"{}\" in .mcp.json",
                    self.target.name
                ),
                _ => String::new(),
            };
            return Err(fail(format!("HTTP {status}: {text}{hint}"), false));
        }
        let ctype = crate::net::content_type(resp.headers());
        if ctype.starts_with("text/event-stream") {
            return self.clone().pump_reply(resp, id, is_init).await;
        }
        if ctype.starts_with("application/json") {
            let body = self.read_body(resp).await?;
            if !body.is_empty() {
                self.deliver(body, is_init).await;
            }
            return Ok(());
        }
        let body = resp.body().limit(64 * 1024).await.unwrap_or_default();
        Err(fail(
            format!(
                "expected JSON or an SSE stream, got {}: {}",
                if ctype.is_empty() {
                    "no content type"
                } else {
                    &ctype
                },
                snippet(&body)
            ),
            false,
        ))
    }

    /// A JSON reply's body, at most `maxMessageBytes`, its bytes held against the read budget
    /// as they arrive (`budget.rs`) and until the reply is parsed.
    async fn read_body<S>(&self, mut resp: awc::ClientResponse<S>) -> Result<Bytes, Failure>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let max = self.target.max;
        let too_big = |e: &dyn std::fmt::Display| {
            fail(
                format!("reading the reply failed: {e} (maximum message size {max} bytes)"),
                false,
            )
        };
        let mut lease = budget::Lease::new();
        let mut buf = bytes::BytesMut::new();
        if let Some(n) = resp
            .headers()
            .get(awc::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
        {
            if n > max {
                return Err(too_big(&"payload reached size limit"));
            }
            lease
                .hold(n)
                .map_err(|()| fail(budget::over_budget(&self.target.name), false))?;
            buf.reserve(n);
        }
        while let Some(chunk) = resp.next().await {
            let chunk = chunk.map_err(|e| too_big(&e))?;
            if buf.len() + chunk.len() > max {
                return Err(too_big(&"payload reached size limit"));
            }
            buf.reserve(chunk.len());
            // What the buffer takes in memory: its capacity, which grows by doubling.
            lease
                .hold(buf.capacity())
                .map_err(|()| fail(budget::over_budget(&self.target.name), false))?;
            buf.extend_from_slice(&chunk);
        }
        Ok(budget::leased(buf.freeze(), lease))
    }

    /// Reads an SSE reply to one POST. A handshake-era stream that ends before the reply but
    /// gave event ids is resumed: after its `retry` (bounded), a GET with `Last-Event-ID`
    /// carries on, at most [`MAX_RESUMES`] times; any other end before the reply is an error.
    async fn pump_reply<S>(
        self: Rc<Self>,
        resp: awc::ClientResponse<S>,
        id: Option<i64>,
        is_init: bool,
    ) -> Result<(), Failure>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let mut parser = SseParser::new(self.target.max);
        match self.pump_events(resp, &mut parser, id, is_init).await? {
            true => return Ok(()),
            false if id.is_none() => return Ok(()),
            false => {}
        }
        for _ in 0..MAX_RESUMES {
            let Some(last) = parser.last_event_id().map(str::to_owned) else {
                break;
            };
            if self.stateless.get() || self.session.borrow().is_none() {
                break;
            }
            let wait = parser.retry_ms.unwrap_or(1000).min(MAX_RETRY_MS);
            tokio::time::sleep(Duration::from_millis(wait)).await;
            tracing::debug!(target: "mcp", server = %self.target.name, last_event_id = %last, "resuming an SSE reply that ended early");
            let url = self.target.url.clone();
            let req = self
                .request(awc::http::Method::GET, &url, true, &[])
                .insert_header(("Accept", "text/event-stream"))
                .insert_header(("Last-Event-ID", last))
                .timeout(self.target.request_timeout);
            let resp = req.send().await.map_err(|e| self.send_error(e))?;
            if !resp.status().is_success() {
                return Err(fail(
                    format!(
                        "the SSE reply ended before the response and resuming it got HTTP {}",
                        resp.status()
                    ),
                    false,
                ));
            }
            if self.pump_events(resp, &mut parser, id, is_init).await? {
                return Ok(());
            }
        }
        let dead = !self.alive().await;
        let why = if dead {
            "the server went away"
        } else {
            "the event was cut short"
        };
        let mut f = fail(
            format!("the SSE reply ended before the response ({why})"),
            dead,
        );
        // The stateless era has no resumption: the caller sends the request again.
        f.reissue = !dead && self.stateless.get();
        Err(f)
    }

    /// Delivers one SSE stream's messages until it ends; `true` once the reply to `id` came.
    async fn pump_events<S>(
        &self,
        mut resp: awc::ClientResponse<S>,
        parser: &mut SseParser,
        id: Option<i64>,
        is_init: bool,
    ) -> Result<bool, Failure>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let mut answered = false;
        // The event being read holds its bytes against the read budget (`budget.rs`).
        let mut lease = budget::Lease::new();
        while let Some(chunk) = resp.next().await {
            let chunk = chunk.map_err(|e| fail(format!("the SSE reply broke off: {e}"), false))?;
            let events = parser
                .feed(&chunk)
                .map_err(|e| fail(e.to_string(), false))?;
            lease
                .hold(parser.buffered())
                .map_err(|()| fail(budget::over_budget(&self.target.name), false))?;
            for ev in events {
                if !(ev.event.is_empty() || ev.event == "message") || ev.data.trim().is_empty() {
                    continue;
                }
                if let (
                    Some(want),
                    Ok(Incoming::Response {
                        id: RequestId::Number(got),
                        ..
                    }),
                ) = (id, Incoming::parse(ev.data.as_bytes()))
                {
                    answered |= want == got;
                }
                let data = budget::leased(Bytes::from(ev.data), budget::Lease::new());
                self.deliver(data, is_init).await;
            }
            if answered {
                // Servers close the stream after the response; reading to its end (bounded)
                // lets the connection go back to the pool instead of being dropped.
                let drain = async {
                    while let Some(Ok(chunk)) = resp.next().await {
                        if let Ok(events) = parser.feed(&chunk) {
                            for ev in events.into_iter().filter(|e| !e.data.trim().is_empty()) {
                                self.deliver(Bytes::from(ev.data), false).await;
                            }
                        }
                    }
                };
                let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A bare TCP connect to the server: tells a server that is gone from a stream that ended.
    async fn alive(&self) -> bool {
        let Ok(uri) = self.target.url.parse::<awc::http::Uri>() else {
            return true;
        };
        let host = uri
            .host()
            .unwrap_or("127.0.0.1")
            .trim_matches(['[', ']'])
            .to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        matches!(
            tokio::time::timeout(
                Duration::from_secs(1),
                tokio::net::TcpStream::connect((host.as_str(), port))
            )
            .await,
            Ok(Ok(_))
        )
    }

    /// Session `stale` lost: initialize again with the remembered initialize request. One at a
    /// time: a request that lost the same session while another re-initialized only retries.
    async fn reinit(&self, stale: Option<String>) -> Result<(), Failure> {
        let _one = self.reinit.lock().await;
        if *self.session.borrow() != stale {
            return Ok(());
        }
        tracing::info!(target: "mcp", server = %self.target.name, "session expired; initializing again");
        let init = self
            .init_line
            .borrow()
            .clone()
            .ok_or_else(|| fail("session lost before initialize", false))?;
        *self.session.borrow_mut() = None;
        let url = self.target.url.clone();
        let mut resp = self
            .send_following(awc::http::Method::POST, &url, Some(&init), false, &[])
            .await?;
        if !resp.status().is_success() {
            return Err(fail(
                format!(
                    "re-initialize after session loss got HTTP {}",
                    resp.status()
                ),
                false,
            ));
        }
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.set_session(s);
        }
        // Drain the reply (JSON or a short SSE stream); its id is stale and not delivered.
        let mut drained = 0usize;
        while let Some(Ok(chunk)) = resp.next().await {
            drained += chunk.len();
            if drained > self.target.max || chunk.windows(2).any(|w| w == b"}\n" || w == b"\n\n") {
                break;
            }
        }
        let note = jsonrpc::notification::<Initialized>(None);
        let note = note.strip_suffix(b"\n").unwrap_or(&note);
        let _ = self
            .send_following(awc::http::Method::POST, &url, Some(note), true, &[])
            .await;
        Ok(())
    }

    /// The optional GET stream for server-initiated messages; resumed with `Last-Event-ID`.
    async fn get_stream(self: Rc<Self>, mut ready: Option<tokio::sync::oneshot::Sender<()>>) {
        let mut parser = SseParser::new(self.target.max);
        // One retry with a DPoP nonce the server asks for (`use_dpop_nonce`), as for a POST.
        let mut nonce_retried = false;
        loop {
            let mut req = self.request(awc::http::Method::GET, &self.target.url, true, &[]);
            req = req.insert_header(("Accept", "text/event-stream"));
            if let Some(last) = parser.last_event_id() {
                req = req.insert_header(("Last-Event-ID", last));
            }
            let sent = req.timeout(Duration::from_secs(3600 * 24)).send().await;
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            let mut resp = match sent {
                Ok(r) if r.status().is_success() => {
                    nonce_retried = false;
                    r
                }
                Ok(r) if !nonce_retried && self.auth_needed(&r).is_some_and(|n| n.nonce) => {
                    if let Some(a) = &self.auth {
                        a.note_nonce(&self.target.url, r.headers());
                    }
                    nonce_retried = true;
                    continue;
                }
                Ok(r) => {
                    tracing::debug!(target: "mcp", server = %self.target.name, status = r.status().as_u16(), "no GET stream");
                    return;
                }
                Err(e) => {
                    let f = self.send_error(e);
                    if f.fatal {
                        self.report(None, f);
                    }
                    return;
                }
            };
            while let Some(Ok(chunk)) = resp.next().await {
                let Ok(events) = parser.feed(&chunk) else {
                    break;
                };
                for ev in events {
                    if (ev.event.is_empty() || ev.event == "message") && !ev.data.trim().is_empty()
                    {
                        self.deliver(Bytes::from(ev.data), false).await;
                    }
                }
            }
            if !self.alive().await {
                self.report(
                    None,
                    fail(
                        "the server went away (its event stream closed and it refuses connections)",
                        true,
                    ),
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(
                parser.retry_ms.unwrap_or(1000).min(30_000),
            ))
            .await;
        }
    }

    async fn close(&self) {
        if self.endpoint.borrow().is_some() || self.session.borrow().is_none() {
            return;
        }
        let req = self
            .request(awc::http::Method::DELETE, &self.target.url, true, &[])
            .send();
        match tokio::time::timeout(Duration::from_secs(2), req).await {
            Ok(Ok(r)) => {
                tracing::debug!(target: "mcp", server = %self.target.name, status = r.status().as_u16(), "session deleted")
            }
            _ => {
                tracing::debug!(target: "mcp", server = %self.target.name, "DELETE of the session failed")
            }
        }
    }
}
