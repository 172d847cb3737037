//! The HTTP transport of a server actor: Streamable HTTP (POST per message, JSON or SSE replies,
//! `Mcp-Session-Id`, the optional GET stream) and the legacy HTTP+SSE transport of 2024-11-05.
//!
//! It runs as one local task per connection (the `awc::Client` holds an `Rc`, so it is built
//! here, on the actor's arbiter). The actor hands it [`Outgoing`] messages (their line, and a
//! call's `Mcp-Param-*` headers) and gets back incoming messages as [`TransportEvent::Message`],
//! exactly as stdout would give them, so every protocol rule lives in one place. [`redirects`] keeps the credentials on their origin; [`legacy`] is the
//! HTTP+SSE transport; [`post`] sends one message and takes its answer, [`reply`] reads a
//! reply (JSON, SSE, resumed), [`session`] re-initializes, holds the GET stream and ends the
//! session.
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
mod post;
mod redirects;
mod reply;
mod session;

use auth::{Auth, AuthNeeded};

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::dev::SendError;
use bytes::Bytes;
use tokio::sync::{mpsc, Mutex, Semaphore};
use tokio_util::sync::CancellationToken;

use super::{
    Attach, Events, Opened, Outgoing, Transport, TransportEvent, TransportFailed, WRITE_QUEUE,
};
use crate::net::install_crypto;
use crate::protocol::methods::{
    Cancelled, Discover, Initialize, Initialized, Notification, Request,
};
use crate::spec::{ServerSpec, TransportSpec};
use meta::{request_headers, Peek};

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
}
