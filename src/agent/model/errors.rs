//! Why a model call fails: [`ModelError`] (the user-facing text), the provider's own error
//! as parsed from a body or an error event, and the classification of statuses, connection
//! failures and error events into a fatal error or a retry (see `retry.rs`).

use std::time::Duration;

use super::config::ProviderConfig;
use super::retry::{Failure, RetryClass};

/// Why a model call failed. Every `message` is the complete user-facing text (lowercase, names
/// the provider or model, says what to do); `Display` prints it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// 401/403: the key is missing, wrong or lacks permission.
    #[error("{message}")]
    Auth {
        /// 401 (the key) or 403 (its permissions).
        status: u16,
        /// Names the key's environment variable to set or check.
        message: String,
    },
    /// 404: the model (or the endpoint) does not exist.
    #[error("{message}")]
    ModelNotFound {
        /// [`ProviderConfig::model`], as sent.
        model: String,
        /// Names the endpoint asked, so a wrong base URL shows.
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
        /// A 4xx other than 401, 403, 404 and 429.
        status: u16,
        /// The user-facing text, with the provider's own message.
        message: String,
    },
    /// The provider could not be reached, the connection broke, or the stream went idle.
    #[error("{0}")]
    Network(String),
    /// The provider's reply did not follow its protocol (bad JSON, cut-off stream). Bad tool
    /// arguments are not one: they reach the engine (see [`Block::ToolUse`](super::Block::ToolUse)).
    #[error("{0}")]
    Protocol(String),
    /// The cancellation token fired.
    #[error("the model call was cancelled")]
    Cancelled,
}

impl ModelError {
    /// Its low-cardinality class, as telemetry's `error.type` (never the message).
    pub fn kind(&self) -> &'static str {
        match self {
            ModelError::Auth { .. } => "auth",
            ModelError::ModelNotFound { .. } => "model_not_found",
            ModelError::RateLimited { .. } => "rate_limited",
            ModelError::Server { .. } => "server_error",
            ModelError::BadRequest { .. } => "bad_request",
            ModelError::Network(_) => "network",
            ModelError::Protocol(_) => "protocol",
            ModelError::Cancelled => "cancelled",
        }
    }
}

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

/// Maps a request that got no response to an error or a retry: a refused or broken connection
/// is retried, a timeout or a bad URL is not.
pub(super) fn send_error(
    cfg: &ProviderConfig,
    url: &str,
    e: awc::error::SendRequestError,
) -> Failure {
    use awc::error::SendRequestError as E;
    match e {
        E::Connect(c) => Failure::Retry {
            class: RetryClass::Network,
            after: None,
            detail: format!("cannot reach {url}: {c}"),
        },
        E::Timeout => Failure::Fatal(ModelError::Network(format!(
            "no response from {url} within {} s; try again, or raise request_timeout_secs under [{}] in harness9.toml",
            cfg.request_timeout.as_secs_f64(),
            cfg.kind
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
pub(super) fn classify(
    cfg: &ProviderConfig,
    url: &str,
    status: u16,
    api: &ApiError,
    after: Option<Duration>,
) -> Failure {
    let p = cfg.kind.name();
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
                    cfg.kind.key_var()
                )
            } else {
                format!(
                    "{p} refused access to model \"{}\" ({detail}); check {} and the permissions of its account",
                    cfg.model,
                    cfg.kind.key_var()
                )
            },
        }),
        404 => Failure::Fatal(ModelError::ModelNotFound {
            model: cfg.model.clone(),
            message: format!(
                "model \"{}\" not found at {url} ({detail}); check --model or the model in harness9.toml, and the base URL",
                cfg.model
            ),
        }),
        429 if api.is_quota() => Failure::Fatal(ModelError::RateLimited {
            attempts: 1,
            message: format!(
                "{p} says the quota of this account is used up ({detail}); check the plan and billing of the key in {}",
                cfg.kind.key_var()
            ),
        }),
        429 => retry(RetryClass::RateLimit),
        503 | 529 => retry(RetryClass::Overloaded),
        500..=599 => retry(RetryClass::Server(status)),
        400..=499 => Failure::Fatal(ModelError::BadRequest {
            status,
            message: format!(
                "{p} rejected the request for model \"{}\" ({detail})",
                cfg.model
            ),
        }),
        _ => Failure::Fatal(ModelError::Protocol(format!(
            "unexpected HTTP {detail} from {url}; check the base URL"
        ))),
    }
}

/// An error event before anything was streamed is retried like the matching status.
pub(super) fn mid_stream_retry(e: &DecodeError, emitted: bool) -> Option<Failure> {
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

/// The error for a stream that failed to decode or carried an error event.
pub(super) fn decode_error(cfg: &ProviderConfig, e: DecodeError, emitted: bool) -> ModelError {
    let p = cfg.kind.name();
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
                None => ModelError::Protocol(format!("{p} reported an error {when} ({detail})")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::ProviderKind;
    use super::super::{anthropic, openai};
    use super::*;

    fn config(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig::new(kind, "claude-x")
    }

    fn fatal(f: Failure) -> ModelError {
        match f {
            Failure::Fatal(e) => e,
            Failure::Retry { detail, .. } => panic!("expected fatal, got retry: {detail}"),
        }
    }

    #[test]
    fn statuses_map_to_user_facing_errors() {
        let p = config(ProviderKind::Anthropic);
        let url = "https://api.anthropic.com/v1/messages";
        let api = anthropic::parse_error(
            br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        );
        assert_eq!(
            fatal(classify(&p, url, 401, &api, None)).to_string(),
            "anthropic rejected the API key (401 authentication_error: invalid x-api-key); set ANTHROPIC_API_KEY"
        );
        let api = anthropic::parse_error(
            br#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}"#,
        );
        assert_eq!(
            fatal(classify(&p, url, 404, &api, None)).to_string(),
            "model \"claude-x\" not found at https://api.anthropic.com/v1/messages (404 not_found_error: model: claude-x); check --model or the model in harness9.toml, and the base URL"
        );
        let api = anthropic::parse_error(b"<html>bad gateway</html>");
        assert!(matches!(
            classify(&p, url, 502, &api, None),
            Failure::Retry {
                class: RetryClass::Server(502),
                ..
            }
        ));
        assert!(matches!(
            classify(&p, url, 529, &api, Some(Duration::from_secs(2))),
            Failure::Retry {
                class: RetryClass::Overloaded,
                after: Some(_),
                ..
            }
        ));
        let e = fatal(classify(&p, url, 400, &ApiError::default(), None));
        assert_eq!(
            e,
            ModelError::BadRequest {
                status: 400,
                message: "anthropic rejected the request for model \"claude-x\" (400 Bad Request)"
                    .into()
            }
        );
        let o = config(ProviderKind::OpenAi);
        let api = openai::parse_error(
            br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        );
        assert!(matches!(
            fatal(classify(&o, url, 429, &api, None)),
            ModelError::RateLimited { attempts: 1, .. }
        ));
        let e = fatal(classify(&o, url, 401, &ApiError::default(), None));
        assert!(e.to_string().ends_with("; set OPENAI_API_KEY"), "{e}");
    }
}
