//! The HTTP driver: [`Provider::complete`] posts one call over awc, retries transient
//! failures (see `retry.rs`), decodes the event stream as it arrives and returns the
//! connection to the per-thread pool once the reply is read. [`Model`] is the seam the engine
//! calls through: `Provider` is its one implementation in the product; the engine's tests
//! put a scripted model behind it.
//!
//! The client is one per thread and actix System (awc's holds an `Rc`), so the steps of a turn
//! share one keep-alive connection; a finished stream is read to its end in the background so
//! its connection goes back to the pool. Its connector is the MCP transport's
//! (`harness9_actors::server::close_bodies_tcp`), so a close-delimited HTTP/1.1 stream is read
//! whole.

use std::time::{Duration, Instant};

use futures_util::future::LocalBoxFuture;
use futures_util::StreamExt;
use harness9_actors::net::{install_crypto, snippet};
use harness9_actors::protocol::sse::SseParser;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::config::{ProviderConfig, ProviderKind};
use super::errors::{classify, decode_error, mid_stream_retry, send_error, ModelError};
use super::retry::{retry_after, Failure, NextTry, Retries};
use super::types::{ModelReply, ModelRequest, StreamEvent};
use super::wire::{Decoder, MAX_EVENT_BYTES};
use super::{anthropic, openai};

/// A configured model endpoint. It is `Send + Sync` and cheap to clone; the `awc::Client` (it
/// holds an `Rc`) is a per-thread one taken inside each call, so [`Provider::complete`] is a
/// `!Send` future.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    cfg: ProviderConfig,
}

/// What the engine asks of a model: its configuration (the wire format decides how tool
/// search shapes a request) and one streamed completion, with the contract of
/// [`Provider::complete`]: text pieces on `events` as they arrive, `cancel` ends it at once with
/// [`ModelError::Cancelled`]. The future is `!Send` (awc's client is per thread).
///
/// A trait rather than an enum with a scripted variant: the double stays in the tests
/// (nothing test-only is compiled into the binary, no `cfg(test)` variant is matched across
/// crates), and another kind of model is one new implementation; the cost is one boxed future
/// per model step.
pub trait Model: std::fmt::Debug + Send + Sync {
    /// The endpoint's configuration.
    fn config(&self) -> &ProviderConfig;

    /// Streams one model call.
    fn complete<'a>(
        &'a self,
        req: &'a ModelRequest,
        events: &'a UnboundedSender<StreamEvent>,
        cancel: &'a CancellationToken,
    ) -> LocalBoxFuture<'a, Result<ModelReply, ModelError>>;
}

impl Model for Provider {
    fn config(&self) -> &ProviderConfig {
        &self.cfg
    }

    fn complete<'a>(
        &'a self,
        req: &'a ModelRequest,
        events: &'a UnboundedSender<StreamEvent>,
        cancel: &'a CancellationToken,
    ) -> LocalBoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(Provider::complete(self, req, events, cancel))
    }
}

/// The most of an error body that is read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Connect (and TLS handshake) timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Provider {
    /// A provider for `cfg`.
    pub fn new(cfg: ProviderConfig) -> Self {
        Self { cfg }
    }

    /// Its configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.cfg
    }

    /// Streams one model call. Text pieces and tool-call starts go to `events` as they arrive
    /// (a closed receiver is ignored); transient failures are retried (each retry announced
    /// with [`StreamEvent::Retrying`]); `cancel` ends the call at once with
    /// [`ModelError::Cancelled`], also during a retry wait.
    ///
    /// The future is `!Send` (awc): run it with `actix::spawn` / `actix_rt::spawn`, inside an
    /// actor (`ctx.spawn(fut.into_actor(self))`), or in a `LocalSet`.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        events: &UnboundedSender<StreamEvent>,
        cancel: &CancellationToken,
    ) -> Result<ModelReply, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let body = match self.cfg.kind {
            ProviderKind::Anthropic => anthropic::request_body(&self.cfg, req),
            ProviderKind::OpenAi => openai::request_body(&self.cfg, req),
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::Protocol(format!("cannot encode the request: {e}")))?;
        let url = self.cfg.endpoint();
        let mut retries = Retries::new(&self.cfg);
        loop {
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                r = self.attempt(&url, &body, events) => r,
            };
            let (class, after, detail) = match outcome {
                Ok(reply) => return Ok(reply),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry {
                    class,
                    after,
                    detail,
                }) => (class, after, detail),
            };
            let NextTry {
                attempt,
                wait,
                reason,
            } = retries.next(class, after, &detail)?;
            tracing::info!(target: "model", attempt, wait_ms = wait.as_millis() as u64, "{reason}; retrying");
            let _ = events.send(StreamEvent::Retrying {
                attempt,
                after: wait,
                reason,
            });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ModelError::Cancelled),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Sends the request once and reads the reply.
    async fn attempt(
        &self,
        url: &str,
        body: &[u8],
        events: &UnboundedSender<StreamEvent>,
    ) -> Result<ModelReply, Failure> {
        let req = self.request(url);
        let started = Instant::now();
        let resp = req.send_body(body.to_vec()).await;
        let mut resp = match resp {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(target: "model", method = "POST", url, elapsed_ms = started.elapsed().as_millis() as u64, error = %e, "model request failed");
                return Err(send_error(&self.cfg, url, e));
            }
        };
        let status = resp.status().as_u16();
        tracing::debug!(target: "model", method = "POST", url, status, elapsed_ms = started.elapsed().as_millis() as u64, "model response");
        if !(200..300).contains(&status) {
            return Err(self.refused(url, status, &mut resp).await);
        }
        if let Some(f) = self.not_a_stream(url, &mut resp).await {
            return Err(f);
        }
        self.read_stream(url, resp, events).await
    }

    /// The request with the provider's headers (its version, the key).
    fn request(&self, url: &str) -> awc::ClientRequest {
        let mut req = client()
            .post(url)
            .timeout(self.cfg.request_timeout)
            .insert_header(("content-type", "application/json"))
            .insert_header(("accept", "text/event-stream"));
        match self.cfg.kind {
            ProviderKind::Anthropic => {
                req = req.insert_header(("anthropic-version", "2023-06-01"));
                if let Some(key) = &self.cfg.api_key {
                    req = req.insert_header(("x-api-key", key.as_str()));
                }
            }
            ProviderKind::OpenAi => {
                if let Some(key) = &self.cfg.api_key {
                    req = req.insert_header(("authorization", format!("Bearer {key}")));
                }
            }
        }
        req
    }

    /// A status other than 2xx: the error body and `Retry-After` classified.
    async fn refused(&self, url: &str, status: u16, resp: &mut awc::ClientResponse) -> Failure {
        let headers = resp.headers();
        let after = retry_after(
            headers.get("retry-after-ms").and_then(|v| v.to_str().ok()),
            headers.get("retry-after").and_then(|v| v.to_str().ok()),
        );
        let body = self.read_limited(resp).await;
        let api = match self.cfg.kind {
            ProviderKind::Anthropic => anthropic::parse_error(&body),
            ProviderKind::OpenAi => openai::parse_error(&body),
        };
        classify(&self.cfg, url, status, &api, after)
    }

    /// A 2xx reply that is JSON or a web page (a proxy's login page, a base URL that points
    /// at a web UI) instead of an event stream.
    async fn not_a_stream(&self, url: &str, resp: &mut awc::ClientResponse) -> Option<Failure> {
        let ctype = harness9_actors::net::content_type(resp.headers());
        if ctype.starts_with("application/json") {
            let body = self.read_limited(resp).await;
            return Some(Failure::Fatal(ModelError::Protocol(format!(
                "{} answered {url} with JSON instead of an event stream: {}",
                self.cfg.kind,
                snippet(&body)
            ))));
        }
        if ctype.starts_with("text/html") {
            let body = self.read_limited(resp).await;
            return Some(Failure::Fatal(ModelError::Protocol(format!(
                "{url} answered with a web page instead of an event stream: {}; check the {} base URL (and any proxy in between)",
                snippet(&body),
                self.cfg.kind
            ))));
        }
        None
    }

    /// Reads the event stream to its end marker, each piece within the idle timeout, and
    /// decodes the reply.
    async fn read_stream(
        &self,
        url: &str,
        mut resp: awc::ClientResponse,
        events: &UnboundedSender<StreamEvent>,
    ) -> Result<ModelReply, Failure> {
        let mut parser = SseParser::new(MAX_EVENT_BYTES);
        let mut decoder = Decoder::new(self.cfg.kind);
        loop {
            let next = tokio::time::timeout(self.cfg.idle_timeout, resp.next()).await;
            let chunk = match next {
                Err(_) => {
                    return Err(Failure::Fatal(ModelError::Network(format!(
                        "the stream from {url} went idle: no data for {} s; try again, or raise idle_timeout_secs under [{}] in harness9.toml for a slow model",
                        self.cfg.idle_timeout.as_secs_f64(),
                        self.cfg.kind
                    ))))
                }
                Ok(None) => {
                    return Err(Failure::Fatal(ModelError::Protocol(format!(
                        "the stream from {url} ended before {}; the reply is incomplete, try again",
                        decoder.end_marker()
                    ))))
                }
                Ok(Some(Err(e))) => {
                    return Err(Failure::Fatal(ModelError::Network(format!(
                        "the stream from {url} broke off: {e}; try again"
                    ))))
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            let evs = parser.feed(&chunk).map_err(|e| {
                Failure::Fatal(ModelError::Protocol(format!("{} sent {e}", self.cfg.kind)))
            })?;
            for ev in evs {
                match decoder.on_event(&ev, events) {
                    Ok(false) => {}
                    Ok(true) => {
                        let done = decoder
                            .finish()
                            .map_err(|e| Failure::Fatal(decode_error(&self.cfg, e, false)));
                        // Read what follows the end marker (the final empty chunk) in the
                        // background: only a body read to its end returns the connection
                        // to the pool for the next step.
                        actix_rt::spawn(drain(resp));
                        return done;
                    }
                    Err(e) => {
                        let emitted = decoder.emitted();
                        return Err(match mid_stream_retry(&e, emitted) {
                            Some(f) => f,
                            None => Failure::Fatal(decode_error(&self.cfg, e, emitted)),
                        });
                    }
                }
            }
        }
    }

    /// Reads at most 64 KiB of an error body, each piece within the idle timeout.
    async fn read_limited(&self, resp: &mut awc::ClientResponse) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() < MAX_ERROR_BODY {
            match tokio::time::timeout(self.cfg.idle_timeout, resp.next()).await {
                Ok(Some(Ok(chunk))) => out.extend_from_slice(&chunk),
                _ => break,
            }
        }
        out.truncate(MAX_ERROR_BODY);
        out
    }
}

/// Reads the rest of a finished stream, a bounded amount for a bounded time, and drops it.
async fn drain(mut resp: awc::ClientResponse) {
    let mut left = MAX_ERROR_BODY;
    let deadline = tokio::time::sleep(Duration::from_secs(5));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            next = resp.next() => match next {
                Some(Ok(chunk)) if chunk.len() < left => left -= chunk.len(),
                _ => return,
            },
        }
    }
}

thread_local! {
    /// The model client of this thread's actix System (its id, the client).
    static CLIENT: std::cell::RefCell<Option<(usize, awc::Client)>> =
        const { std::cell::RefCell::new(None) };
}

/// The awc client for a model call. Calls on one thread (the engine's arbiter) share one
/// client and so its connection pool: the steps of a turn reuse a keep-alive connection and
/// skip a TCP and TLS handshake each. The cache is keyed by the actix System, because a pool
/// belongs to the runtime that created it (tests run many Systems on one thread).
fn client() -> awc::Client {
    install_crypto();
    let build = || {
        awc::Client::builder()
            .connector(
                awc::Connector::new()
                    // An HTTP/1.1 stream with neither chunked encoding nor Content-Length runs
                    // to the close: read it whole, as the MCP transport does.
                    .connector(harness9_actors::server::close_bodies_tcp())
                    .rustls_0_23(harness9_actors::net::tls_config())
                    .timeout(CONNECT_TIMEOUT)
                    .handshake_timeout(CONNECT_TIMEOUT),
            )
            .disable_timeout()
            .finish()
    };
    let Some(system) = actix_rt::System::try_current().map(|s| s.id()) else {
        return build();
    };
    CLIENT.with(|c| {
        let mut c = c.borrow_mut();
        match &*c {
            Some((id, client)) if *id == system => client.clone(),
            _ => {
                let client = build();
                *c = Some((system, client.clone()));
                client
            }
        }
    })
}
