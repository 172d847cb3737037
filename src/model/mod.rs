//! Model providers: the neutral conversation types the engine speaks, and [`Provider`], which
//! streams one call to the Anthropic Messages API or an OpenAI-compatible Chat Completions
//! endpoint (OpenAI, Ollama, vLLM, llama.cpp) over awc, with retries, timeouts and cancellation.
//!
//! ```text
//! engine --ModelRequest--> Provider::complete --POST (SSE)--> provider
//!    ^                          |   anthropic.rs / openai.rs: body building, stream decoding
//!    +---StreamEvent (mpsc)-----+
//!    +---ModelReply / ModelError
//! ```
//!
//! The wire formats live in `anthropic.rs` and `openai.rs` as pure functions (no IO); this file
//! holds the HTTP driver, the retry policy and the error classification shared by both.

mod anthropic;
mod openai;
pub mod settings;

#[cfg(test)]
mod live_tests;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use harness9_actors::protocol::sse::{Event, SseParser};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (and tool results, which the APIs carry in user turns).
    User,
    /// The model.
    Assistant,
}

/// One conversation turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said, in order.
    pub content: Vec<Block>,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Plain text.
    Text(String),
    /// The model asks for a tool call (assistant messages).
    ToolUse {
        /// The provider's call id, echoed in the matching [`Block::ToolResult`].
        id: String,
        /// The tool's name as it was offered in [`ToolDef::name`].
        name: String,
        /// The arguments: a JSON object, or, when the model's argument text was not one (cut
        /// off at `max_tokens`, or broken JSON from a small model), that raw text as a
        /// `Value::String` (see [`tool_input`]). The engine answers such a call with an error
        /// result instead of running it; the request bodies replay it as `{}`.
        input: serde_json::Value,
    },
    /// The outcome of a tool call (user messages).
    ToolResult {
        /// The id of the [`Block::ToolUse`] it answers.
        id: String,
        /// What the tool returned.
        content: Vec<ResultPart>,
        /// The tool failed; the content says why.
        is_error: bool,
    },
}

/// One part of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultPart {
    /// Text.
    Text(String),
    /// An image. Anthropic takes it inside the tool result; OpenAI-compatible providers get a
    /// note in the `tool` message and, with [`ProviderConfig::tool_images`] on, the image in a
    /// `user` message after the tool messages, else a text placeholder.
    Image {
        /// e.g. `image/png`.
        mime_type: String,
        /// Base64 data.
        data: String,
    },
}

#[cfg(test)]
impl ModelRequest {
    /// A request of `messages`, no system prompt, no tools (for tests).
    pub(crate) fn of(messages: Vec<Message>) -> Self {
        Self {
            system: None,
            messages,
            tools: std::sync::Arc::new(Vec::new()),
            max_tokens: 0,
        }
    }

    /// A request of one user message (for tests).
    pub(crate) fn user_says(text: &str, max_tokens: u32) -> Self {
        Self {
            max_tokens,
            ..Self::of(vec![Message {
                role: Role::User,
                content: vec![Block::Text(text.into())],
            }])
        }
    }
}

/// Tool calls as blocks, from (id, name, input) (for tests).
#[cfg(test)]
pub(crate) fn tool_uses(calls: &[(&str, &str, serde_json::Value)]) -> Vec<Block> {
    calls
        .iter()
        .map(|(id, name, input)| Block::ToolUse {
            id: (*id).into(),
            name: (*name).into(),
            input: input.clone(),
        })
        .collect()
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

/// One model call's input.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools on offer (shared between calls; empty = no tools).
    pub tools: Arc<Vec<ToolDef>>,
    /// The cap on output tokens; 0 means the provider's configured `max_tokens`.
    pub max_tokens: u32,
}

/// Progress of a call, sent while it streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of the model's text.
    TextDelta(String),
    /// The model began a tool call (its arguments are still streaming).
    ToolCallStarted {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// The call failed transiently and will be sent again after `after`.
    Retrying {
        /// Which retry this is (1 = the first).
        attempt: u32,
        /// How long harness9 waits before it.
        after: Duration,
        /// Why, e.g. `anthropic is overloaded (529 overloaded_error: Overloaded)`.
        reason: String,
    },
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants the tool calls in the reply run.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// Anything else, as the provider named it (`stop_sequence`, `refusal`, `content_filter`).
    Other(String),
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache (Anthropic
    /// `cache_read_input_tokens`, OpenAI `prompt_tokens_details.cached_tokens`).
    pub cached_input_tokens: u64,
}

/// One model call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// [`Block::Text`] and [`Block::ToolUse`] only, in the order the model produced them.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// What it cost.
    pub usage: Usage,
}

/// Why a model call failed. Every `message` is the complete user-facing text (lowercase, names
/// the provider or model, says what to do); `Display` prints it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// 401/403: the key is missing, wrong or lacks permission.
    #[error("{message}")]
    Auth {
        /// The HTTP status.
        status: u16,
        /// The user-facing text.
        message: String,
    },
    /// 404: the model (or the endpoint) does not exist.
    #[error("{message}")]
    ModelNotFound {
        /// The model asked for.
        model: String,
        /// The user-facing text.
        message: String,
    },
    /// 429/529/503 that outlasted the retries, or asked for a wait over 60 s.
    #[error("{message}")]
    RateLimited {
        /// How many times the request was sent.
        attempts: u32,
        /// The user-facing text, with the provider's own message.
        message: String,
    },
    /// Another 5xx that outlasted the retries (or an `api_error` mid-stream).
    #[error("{message}")]
    Server {
        /// The HTTP status (for an error event mid-stream: 500, or 529 when overloaded).
        status: u16,
        /// The user-facing text, with the provider's own message.
        message: String,
    },
    /// Another 4xx: the provider refused the request.
    #[error("{message}")]
    BadRequest {
        /// The HTTP status.
        status: u16,
        /// The user-facing text, with the provider's own message.
        message: String,
    },
    /// The provider could not be reached, the connection broke, or the stream went idle.
    #[error("{0}")]
    Network(String),
    /// The provider's reply did not follow its protocol (bad JSON, cut-off stream). Bad tool
    /// arguments are not one: they reach the engine (see [`Block::ToolUse`]).
    #[error("{0}")]
    Protocol(String),
    /// The cancellation token fired.
    #[error("the model call was cancelled")]
    Cancelled,
}

/// A tool call's streamed argument text as [`Block::ToolUse`] input: the JSON object it parses
/// to; `{}` for empty text (a call without arguments); else the raw text as a `Value::String`.
pub fn tool_input(raw: &str) -> serde_json::Value {
    if raw.trim().is_empty() {
        return serde_json::json!({});
    }
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) if v.is_object() => v,
        _ => serde_json::Value::String(raw.to_owned()),
    }
}

/// Why argument text that [`tool_input`] kept raw is not a JSON object, completing "the
/// arguments are ...": `not valid JSON (<the parser's message>)` or `an array, not a JSON
/// object`.
pub fn arguments_problem(raw: &str) -> String {
    use serde_json::Value;
    match serde_json::from_str::<Value>(raw) {
        Err(e) => format!("not valid JSON ({e})"),
        Ok(v) => {
            let kind = match v {
                Value::Object(_) => return "a JSON object".to_owned(),
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                Value::Null => "null",
            };
            format!("{kind}, not a JSON object")
        }
    }
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions and compatible servers (Ollama, vLLM, llama.cpp).
    OpenAi,
}

impl ProviderKind {
    /// `anthropic` or `openai`, as in the config and in messages.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
        }
    }

    /// The environment variable that holds the key.
    pub fn key_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::OpenAi => "OPENAI_API_KEY",
        }
    }

    /// The environment variable that overrides the base URL.
    pub fn base_url_var(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "ANTHROPIC_BASE_URL",
            ProviderKind::OpenAi => "OPENAI_BASE_URL",
        }
    }

    /// The official endpoint.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::OpenAi => "https://api.openai.com/v1",
        }
    }

    /// Parses `anthropic` / `openai` (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Some(ProviderKind::Anthropic),
            "openai" => Some(ProviderKind::OpenAi),
            _ => None,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which body field an OpenAI-compatible request carries its output cap in (`[openai]
/// max_tokens_field`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens` when the base URL's host is `api.openai.com`, else `max_tokens`.
    #[default]
    Auto,
    /// `max_tokens`: what Ollama, llama.cpp and older vLLM know.
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI's reasoning models (o-series, gpt-5) require.
    MaxCompletionTokens,
}

/// The host of an `http(s)://` URL, lowercased and without a trailing dot; `None` when it does
/// not parse.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let uri: awc::http::Uri = url.parse().ok()?;
    let host = uri.host()?.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// Everything a [`Provider`] needs. `Debug` prints the key as `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// e.g. `https://api.anthropic.com` or `http://localhost:11434/v1` (no trailing slash).
    pub base_url: String,
    /// The key; `None` sends no auth header (Ollama, local vLLM).
    pub api_key: Option<String>,
    /// The model name.
    pub model: String,
    /// The default cap on output tokens.
    pub max_tokens: u32,
    /// How often a rate-limited, overloaded or 5xx call is sent again.
    pub max_retries: u32,
    /// The longest wait for response headers.
    pub request_timeout: Duration,
    /// The longest silence inside a streaming reply.
    pub idle_timeout: Duration,
    /// Anthropic only: mark `cache_control` breakpoints (off for proxies that reject them).
    pub prompt_caching: bool,
    /// OpenAI only: which field carries the output cap.
    pub max_tokens_field: MaxTokensField,
    /// OpenAI only: send tool-result images (in a `user` message after the `tool` messages);
    /// `None` = only when the base URL's host is `api.openai.com` (`[openai] tool_images`).
    pub tool_images: Option<bool>,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("max_retries", &self.max_retries)
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("prompt_caching", &self.prompt_caching)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("tool_images", &self.tool_images)
            .finish()
    }
}

impl ProviderConfig {
    /// A config with the shipped defaults for `kind` and `model` (no key).
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: kind.default_base_url().to_owned(),
            api_key: None,
            model: model.into(),
            max_tokens: 8192,
            max_retries: 3,
            request_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            prompt_caching: true,
            max_tokens_field: MaxTokensField::Auto,
            tool_images: None,
        }
    }

    /// The URL calls are posted to.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.kind {
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
        }
    }
}

/// A configured model endpoint. It is `Send + Sync` and cheap to clone; the `awc::Client` (it
/// holds an `Rc`) is a per-thread one taken inside each call, so [`Provider::complete`] is a
/// `!Send` future.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    cfg: ProviderConfig,
}

/// The largest single SSE event accepted from a provider.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// The most of an error body that is read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// A `retry-after` longer than this fails the call instead of waiting.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
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
        let mut sends: u32 = 0;
        let mut retries: u32 = 0;
        let mut net_retries: u32 = 0;
        loop {
            sends += 1;
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
            let may_retry =
                retries < self.cfg.max_retries && (class != RetryClass::Network || net_retries < 1);
            if !may_retry {
                return Err(self.exhausted(class, &detail, sends));
            }
            if let Some(after) = after.filter(|a| *a > MAX_RETRY_AFTER) {
                return Err(ModelError::RateLimited {
                    attempts: sends,
                    message: format!(
                        "{} ({detail}) and asks to wait {} s, longer than harness9 waits ({} s); try again later",
                        self.what(class),
                        after.as_secs(),
                        MAX_RETRY_AFTER.as_secs()
                    ),
                });
            }
            let wait = after.unwrap_or_else(|| backoff(retries));
            retries += 1;
            if class == RetryClass::Network {
                net_retries += 1;
            }
            let reason = format!("{} ({detail})", self.what(class));
            tracing::info!(target: "model", attempt = retries, wait_ms = wait.as_millis() as u64, "{reason}; retrying");
            let _ = events.send(StreamEvent::Retrying {
                attempt: retries,
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

    /// What a retryable failure means, for messages: `anthropic is overloaded`.
    fn what(&self, class: RetryClass) -> String {
        let p = self.cfg.kind.name();
        let m = &self.cfg.model;
        match class {
            RetryClass::RateLimit => format!("{p} rate limit hit for model \"{m}\""),
            RetryClass::Overloaded => format!("{p} is overloaded"),
            RetryClass::Server(_) => format!("{p} server error"),
            RetryClass::Network => "network error".to_owned(),
        }
    }

    /// The error for a retryable failure once no retries are left.
    fn exhausted(&self, class: RetryClass, detail: &str, sends: u32) -> ModelError {
        let tries = if sends == 1 {
            "1 try".to_owned()
        } else {
            format!("{sends} tries")
        };
        match class {
            RetryClass::RateLimit | RetryClass::Overloaded => ModelError::RateLimited {
                attempts: sends,
                message: format!(
                    "{} ({detail}); gave up after {tries}; wait a minute and try again",
                    self.what(class)
                ),
            },
            RetryClass::Server(status) => ModelError::Server {
                status,
                message: format!(
                    "{} ({detail}); gave up after {tries}; try again later",
                    self.what(class)
                ),
            },
            RetryClass::Network => ModelError::Network(format!(
                "{detail} (after {tries}); check the network and the base URL"
            )),
        }
    }

    /// Sends the request once and reads the reply.
    async fn attempt(
        &self,
        url: &str,
        body: &[u8],
        events: &UnboundedSender<StreamEvent>,
    ) -> Result<ModelReply, Failure> {
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
        let started = Instant::now();
        let resp = req.send_body(body.to_vec()).await;
        let mut resp = match resp {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(target: "model", method = "POST", url, elapsed_ms = started.elapsed().as_millis() as u64, error = %e, "model request failed");
                return Err(self.send_error(url, e));
            }
        };
        let status = resp.status().as_u16();
        tracing::debug!(target: "model", method = "POST", url, status, elapsed_ms = started.elapsed().as_millis() as u64, "model response");
        if !(200..300).contains(&status) {
            let headers = resp.headers();
            let after = retry_after(
                headers.get("retry-after-ms").and_then(|v| v.to_str().ok()),
                headers.get("retry-after").and_then(|v| v.to_str().ok()),
            );
            let body = self.read_limited(&mut resp).await;
            let api = match self.cfg.kind {
                ProviderKind::Anthropic => anthropic::parse_error(&body),
                ProviderKind::OpenAi => openai::parse_error(&body),
            };
            return Err(self.classify(url, status, &api, after));
        }
        let ctype = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if ctype.starts_with("application/json") {
            let body = self.read_limited(&mut resp).await;
            return Err(Failure::Fatal(ModelError::Protocol(format!(
                "{} answered {url} with JSON instead of an event stream: {}",
                self.cfg.kind,
                snippet(&body)
            ))));
        }
        // A web page (a proxy's login page, a base URL that points at a web UI) is no stream.
        if ctype.starts_with("text/html") {
            let body = self.read_limited(&mut resp).await;
            return Err(Failure::Fatal(ModelError::Protocol(format!(
                "{url} answered with a web page instead of an event stream: {}; check the {} base URL (and any proxy in between)",
                snippet(&body),
                self.cfg.kind
            ))));
        }
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
                            .map_err(|e| Failure::Fatal(self.decode_error(e, false)));
                        // Read what follows the end marker (the final empty chunk) in the
                        // background: only a body read to its end returns the connection
                        // to the pool for the next step.
                        actix_rt::spawn(drain(resp));
                        return done;
                    }
                    Err(e) => {
                        let emitted = decoder.emitted();
                        return Err(match self.mid_stream_retry(&e, emitted) {
                            Some(f) => f,
                            None => Failure::Fatal(self.decode_error(e, emitted)),
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

    fn send_error(&self, url: &str, e: awc::error::SendRequestError) -> Failure {
        use awc::error::SendRequestError as E;
        match e {
            E::Connect(c) => Failure::Retry {
                class: RetryClass::Network,
                after: None,
                detail: format!("cannot reach {url}: {c}"),
            },
            E::Timeout => Failure::Fatal(ModelError::Network(format!(
                "no response from {url} within {} s; try again, or raise request_timeout_secs under [{}] in harness9.toml",
                self.cfg.request_timeout.as_secs_f64(),
                self.cfg.kind
            ))),
            E::Url(u) => Failure::Fatal(ModelError::Network(format!(
                "invalid URL {url}: {u}; check the base URL"
            ))),
            other => Failure::Retry {
                class: RetryClass::Network,
                after: None,
                detail: format!("request to {url} failed: {other}"),
            },
        }
    }

    /// Maps a non-2xx status to an error or a retry.
    fn classify(&self, url: &str, status: u16, api: &ApiError, after: Option<Duration>) -> Failure {
        let p = self.cfg.kind.name();
        let detail = api.detail(status);
        let retry = |class| Failure::Retry {
            class,
            after,
            detail: detail.clone(),
        };
        match status {
            401 | 403 => Failure::Fatal(ModelError::Auth {
                status,
                message: if status == 401 {
                    format!(
                        "{p} rejected the API key ({detail}); set {}",
                        self.cfg.kind.key_var()
                    )
                } else {
                    format!(
                        "{p} refused access to model \"{}\" ({detail}); check {} and the permissions of its account",
                        self.cfg.model,
                        self.cfg.kind.key_var()
                    )
                },
            }),
            404 => Failure::Fatal(ModelError::ModelNotFound {
                model: self.cfg.model.clone(),
                message: format!(
                    "model \"{}\" not found at {url} ({detail}); check --model or the model in harness9.toml, and the base URL",
                    self.cfg.model
                ),
            }),
            429 if api.is_quota() => Failure::Fatal(ModelError::RateLimited {
                attempts: 1,
                message: format!(
                    "{p} says the quota of this account is used up ({detail}); check the plan and billing of the key in {}",
                    self.cfg.kind.key_var()
                ),
            }),
            429 => retry(RetryClass::RateLimit),
            503 | 529 => retry(RetryClass::Overloaded),
            500..=599 => retry(RetryClass::Server(status)),
            400..=499 => Failure::Fatal(ModelError::BadRequest {
                status,
                message: format!(
                    "{p} rejected the request for model \"{}\" ({detail})",
                    self.cfg.model
                ),
            }),
            _ => Failure::Fatal(ModelError::Protocol(format!(
                "unexpected HTTP {detail} from {url}; check the base URL"
            ))),
        }
    }

    /// An error event before anything was streamed is retried like the matching status.
    fn mid_stream_retry(&self, e: &DecodeError, emitted: bool) -> Option<Failure> {
        let DecodeError::Api(api) = e else {
            return None;
        };
        if emitted {
            return None;
        }
        let class = match api.stream_status() {
            Some(429) => RetryClass::RateLimit,
            Some(529) => RetryClass::Overloaded,
            Some(s) => RetryClass::Server(s),
            None => return None,
        };
        Some(Failure::Retry {
            class,
            after: None,
            detail: api.detail_mid_stream(),
        })
    }

    fn decode_error(&self, e: DecodeError, emitted: bool) -> ModelError {
        let p = self.cfg.kind.name();
        match e {
            DecodeError::Protocol(m) => ModelError::Protocol(format!("{p}: {m}")),
            DecodeError::Api(api) => {
                let detail = api.detail_mid_stream();
                let when = if emitted {
                    "in the middle of the reply"
                } else {
                    "in the stream"
                };
                match api.stream_status() {
                    Some(429) => ModelError::RateLimited {
                        attempts: 1,
                        message: format!(
                            "{p} reported a rate limit {when} ({detail}); wait a minute and try again"
                        ),
                    },
                    Some(status) => ModelError::Server {
                        status,
                        message: format!("{p} reported an error {when} ({detail}); try again"),
                    },
                    None => ModelError::Protocol(format!(
                        "{p} reported an error {when} ({detail})"
                    )),
                }
            }
        }
    }
}

/// Exponential backoff: 1 s, 2 s, 4 s, ... capped at 30 s.
fn backoff(retries_done: u32) -> Duration {
    Duration::from_secs(1u64 << retries_done.min(5)).min(Duration::from_secs(30))
}

/// The wait a server asks for: `retry-after-ms` (milliseconds) wins over `retry-after`
/// (seconds, possibly fractional). An HTTP date or garbage means none.
pub(crate) fn retry_after(ms: Option<&str>, secs: Option<&str>) -> Option<Duration> {
    let parse = |s: &str, scale: f64| {
        let v: f64 = s.trim().parse().ok()?;
        (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64((v * scale).min(1e9)))
    };
    ms.and_then(|s| parse(s, 0.001))
        .or_else(|| secs.and_then(|s| parse(s, 1.0)))
}

/// The media type model APIs take for an image: png, jpeg, gif or webp, lowercased (`image/jpg`
/// read as jpeg); `None` for any other type (an SVG from a server, say), which would fail every
/// later request of the conversation with a 400, since the image stays in the history.
pub(crate) fn model_image_type(mime_type: &str) -> Option<&'static str> {
    match mime_type.trim().to_ascii_lowercase().as_str() {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    }
}

/// The text that stands in for an image not sent to the model; `why` defaults to the type.
pub(crate) fn image_placeholder(mime_type: &str, data: &str, why: Option<&str>) -> String {
    let mime_type = truncate_chars(mime_type, 60);
    format!(
        "[image omitted: {mime_type}, {}; {}]",
        harness9_actors::protocol::render::human_bytes(base64_len(data)),
        why.unwrap_or("the model takes png, jpeg, gif and webp images only")
    )
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let pad = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() * 3 / 4).saturating_sub(pad)
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

/// Installs the rustls ring provider once (awc panics at first TLS use without one). The same
pub(crate) use harness9_actors::net::{install_crypto, snippet, truncate_chars};

/// A provider's error, parsed from an error body or an error event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ApiError {
    /// `authentication_error`, `rate_limit_error`, `insufficient_quota`, ...
    pub kind: Option<String>,
    /// The provider's message (or a snippet of an unparseable body).
    pub message: String,
}

impl ApiError {
    /// `401 authentication_error: invalid x-api-key`.
    fn detail(&self, status: u16) -> String {
        let mut s = status.to_string();
        if let Some(k) = &self.kind {
            s.push(' ');
            s.push_str(k);
            if !self.message.is_empty() {
                s.push(':');
            }
        }
        if !self.message.is_empty() {
            s.push(' ');
            s.push_str(&self.message);
        } else if self.kind.is_none() {
            if let Some(r) = awc::http::StatusCode::from_u16(status)
                .ok()
                .and_then(|c| c.canonical_reason())
            {
                s.push(' ');
                s.push_str(r);
            }
        }
        s
    }

    /// `overloaded_error: Overloaded`.
    fn detail_mid_stream(&self) -> String {
        match &self.kind {
            Some(k) if self.message.is_empty() => k.clone(),
            Some(k) => format!("{k}: {}", self.message),
            None => self.message.clone(),
        }
    }

    fn is_quota(&self) -> bool {
        self.kind.as_deref() == Some("insufficient_quota")
    }

    /// The status an error event stands for: only transient kinds map to one.
    fn stream_status(&self) -> Option<u16> {
        match self.kind.as_deref()? {
            "overloaded_error" => Some(529),
            "rate_limit_error" | "rate_limit_exceeded" => Some(429),
            "api_error" | "server_error" | "internal_server_error" => Some(500),
            _ => None,
        }
    }
}

/// What went wrong while decoding a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The provider sent an error event.
    Api(ApiError),
    /// The stream broke the protocol.
    Protocol(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RetryClass {
    RateLimit,
    Overloaded,
    Server(u16),
    Network,
}

enum Failure {
    Fatal(ModelError),
    Retry {
        class: RetryClass,
        after: Option<Duration>,
        detail: String,
    },
}

/// The stream decoder of either format.
pub(crate) enum Decoder {
    Anthropic(anthropic::StreamDecoder),
    OpenAi(openai::StreamDecoder),
}

impl Decoder {
    pub(crate) fn new(kind: ProviderKind) -> Self {
        match kind {
            ProviderKind::Anthropic => Decoder::Anthropic(anthropic::StreamDecoder::default()),
            ProviderKind::OpenAi => Decoder::OpenAi(openai::StreamDecoder::default()),
        }
    }

    /// Handles one SSE event; `Ok(true)` when the reply is complete.
    pub(crate) fn on_event(
        &mut self,
        ev: &Event,
        tx: &UnboundedSender<StreamEvent>,
    ) -> Result<bool, DecodeError> {
        match self {
            Decoder::Anthropic(d) => d.on_event(ev, tx),
            Decoder::OpenAi(d) => d.on_event(ev, tx),
        }
    }

    /// Whether any [`StreamEvent`] was sent (then a retry would repeat output).
    pub(crate) fn emitted(&self) -> bool {
        match self {
            Decoder::Anthropic(d) => d.emitted,
            Decoder::OpenAi(d) => d.emitted,
        }
    }

    fn end_marker(&self) -> &'static str {
        match self {
            Decoder::Anthropic(_) => "message_stop",
            Decoder::OpenAi(_) => "[DONE]",
        }
    }

    /// The reply, once the end marker was seen.
    pub(crate) fn finish(self) -> Result<ModelReply, DecodeError> {
        match self {
            Decoder::Anthropic(d) => d.finish(),
            Decoder::OpenAi(d) => d.finish(),
        }
    }
}

/// Test helper: decodes a whole stream given as byte chunks; the reply (or the error, or
/// `None` when the stream ended without its end marker) and the events sent.
#[cfg(test)]
pub(crate) fn decode_chunks(
    kind: ProviderKind,
    chunks: &[&[u8]],
) -> (Option<Result<ModelReply, DecodeError>>, Vec<StreamEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut dec = Decoder::new(kind);
    let mut result = None;
    'outer: for c in chunks {
        for ev in parser.feed(c).expect("sse") {
            match dec.on_event(&ev, &tx) {
                Ok(false) => {}
                Ok(true) => {
                    result = Some(Ok(()));
                    break 'outer;
                }
                Err(e) => {
                    result = Some(Err(e));
                    break 'outer;
                }
            }
        }
    }
    let result = result.map(|r| r.and_then(|()| dec.finish()));
    let mut evs = Vec::new();
    while let Ok(e) = rx.try_recv() {
        evs.push(e);
    }
    (result, evs)
}

/// Test helper: splits `s` into chunks of `n` bytes (cutting UTF-8 sequences and lines).
#[cfg(test)]
pub(crate) fn split_every(s: &[u8], n: usize) -> Vec<&[u8]> {
    s.chunks(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_types_and_placeholders() {
        assert_eq!(base64_len("iVBORw0KGgo="), 8);
        assert_eq!(base64_len("aGk="), 2);
        assert_eq!(model_image_type(" IMAGE/JPG"), Some("image/jpeg"));
        assert_eq!(model_image_type("image/webp"), Some("image/webp"));
        assert_eq!(model_image_type("image/svg+xml"), None);
        assert_eq!(
            image_placeholder("image/svg+xml", "aGk=", None),
            "[image omitted: image/svg+xml, 2 B; the model takes png, jpeg, gif and webp images only]"
        );
    }

    #[test]
    fn retry_after_prefers_ms_and_accepts_fractions() {
        assert_eq!(
            retry_after(Some("1500"), Some("9")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_after(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after(None, Some(" 0.5 ")),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(Some("junk"), Some("3")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(retry_after(None, Some("-1")), None);
        assert_eq!(retry_after(None, None), None);
    }

    #[test]
    fn backoff_doubles_from_one_second() {
        let b: Vec<u64> = (0..4).map(|i| backoff(i).as_secs()).collect();
        assert_eq!(b, vec![1, 2, 4, 8]);
        assert_eq!(backoff(40), Duration::from_secs(30));
    }

    #[test]
    fn debug_never_prints_the_key() {
        let mut cfg = ProviderConfig::new(ProviderKind::OpenAi, "gpt-4.1");
        cfg.api_key = Some("sk-secret-123".into());
        let d = format!("{cfg:?}");
        assert!(!d.contains("sk-secret-123"), "{d}");
        assert!(d.contains("[redacted]"), "{d}");
        let d = format!("{:?}", Provider::new(cfg));
        assert!(!d.contains("sk-secret-123"), "{d}");
    }

    #[test]
    fn endpoints_join_without_double_slashes() {
        let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, "m");
        cfg.base_url = "https://api.anthropic.com/".into();
        assert_eq!(cfg.endpoint(), "https://api.anthropic.com/v1/messages");
        let mut cfg = ProviderConfig::new(ProviderKind::OpenAi, "m");
        cfg.base_url = "http://localhost:11434/v1".into();
        assert_eq!(cfg.endpoint(), "http://localhost:11434/v1/chat/completions");
    }

    fn provider(kind: ProviderKind) -> Provider {
        Provider::new(ProviderConfig::new(kind, "claude-x"))
    }

    fn fatal(f: Failure) -> ModelError {
        match f {
            Failure::Fatal(e) => e,
            Failure::Retry { detail, .. } => panic!("expected fatal, got retry: {detail}"),
        }
    }

    #[test]
    fn statuses_map_to_user_facing_errors() {
        let p = provider(ProviderKind::Anthropic);
        let url = "https://api.anthropic.com/v1/messages";
        let api = anthropic::parse_error(
            br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        );
        assert_eq!(
            fatal(p.classify(url, 401, &api, None)).to_string(),
            "anthropic rejected the API key (401 authentication_error: invalid x-api-key); set ANTHROPIC_API_KEY"
        );
        let api = anthropic::parse_error(
            br#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}"#,
        );
        assert_eq!(
            fatal(p.classify(url, 404, &api, None)).to_string(),
            "model \"claude-x\" not found at https://api.anthropic.com/v1/messages (404 not_found_error: model: claude-x); check --model or the model in harness9.toml, and the base URL"
        );
        let api = anthropic::parse_error(b"<html>bad gateway</html>");
        assert!(matches!(
            p.classify(url, 502, &api, None),
            Failure::Retry {
                class: RetryClass::Server(502),
                ..
            }
        ));
        assert!(matches!(
            p.classify(url, 529, &api, Some(Duration::from_secs(2))),
            Failure::Retry {
                class: RetryClass::Overloaded,
                after: Some(_),
                ..
            }
        ));
        let e = fatal(p.classify(url, 400, &ApiError::default(), None));
        assert_eq!(
            e,
            ModelError::BadRequest {
                status: 400,
                message: "anthropic rejected the request for model \"claude-x\" (400 Bad Request)"
                    .into()
            }
        );
        let o = provider(ProviderKind::OpenAi);
        let api = openai::parse_error(
            br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        );
        assert!(matches!(
            fatal(o.classify(url, 429, &api, None)),
            ModelError::RateLimited { attempts: 1, .. }
        ));
        let e = fatal(o.classify(url, 401, &ApiError::default(), None));
        assert!(e.to_string().ends_with("; set OPENAI_API_KEY"), "{e}");
    }

    #[test]
    fn exhausted_retries_name_the_tries() {
        let p = provider(ProviderKind::Anthropic);
        let e = p.exhausted(
            RetryClass::Overloaded,
            "529 overloaded_error: Overloaded",
            4,
        );
        assert_eq!(
            e.to_string(),
            "anthropic is overloaded (529 overloaded_error: Overloaded); gave up after 4 tries; wait a minute and try again"
        );
        assert!(matches!(e, ModelError::RateLimited { attempts: 4, .. }));
    }
}
