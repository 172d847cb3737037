//! What a provider is: its wire format ([`ProviderKind`]), its endpoint, key, model and
//! limits ([`ProviderConfig`]), which the settings resolve and a `Provider` calls with.

use std::fmt;
use std::time::Duration;

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

/// Everything a [`Provider`](super::Provider) needs. `Debug` prints the key as `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// e.g. `https://api.anthropic.com` or `http://localhost:11434/v1` (no trailing slash).
    pub base_url: String,
    /// The key; `None` sends no auth header (Ollama, local vLLM).
    pub api_key: Option<String>,
    /// Sent as is in every request body, e.g. `claude-sonnet-4-5` or `llama3.1`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Provider;

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
}
