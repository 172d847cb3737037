//! A server's `sampling/createMessage` as a call to the configured model: its params as a
//! [`ModelRequest`] (system prompt, text messages, `maxTokens` capped by the provider's own
//! cap, no tools), the model's reply as a `CreateMessageResult`, and what the TUI shows before
//! the user approves it. `modelPreferences.hints` are matched in order (as substrings, as the
//! spec says) against the configured model and the `sampling_models` of the settings: the
//! first hint that names one picks it; else the configured model answers.
//! Pure, except [`sample`], which runs the call.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::agent::model::{Block, Message, ModelReply, ModelRequest, Provider, Role, StopReason};

/// Most characters of one message the approval shows.
const SHOWN_CHARS: usize = 2_000;

/// One message's text: a text block, or a placeholder naming what was left out (images and
/// audio are not sent to the model from here).
fn content_text(content: &Value) -> String {
    let one = |c: &Value| match c.get("type").and_then(Value::as_str) {
        Some("text") => c
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        Some(other) => format!("[{other} content left out]"),
        None => String::new(),
    };
    match content {
        Value::Array(parts) => parts.iter().map(one).collect::<Vec<_>>().join("\n"),
        c => one(c),
    }
}

/// What a sampling request asks, read from its params.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// `systemPrompt`.
    pub system: Option<String>,
    /// (role, text) in order.
    pub messages: Vec<(Role, String)>,
    /// `maxTokens`.
    pub max_tokens: u32,
    /// `modelPreferences.hints[].name`.
    pub hints: Vec<String>,
}

impl Sampling {
    /// Reads `params`; an error names what is wrong (no messages, a bad role, no `maxTokens`).
    pub fn parse(params: &Value) -> Result<Self, String> {
        let list = params
            .get("messages")
            .and_then(Value::as_array)
            .filter(|m| !m.is_empty())
            .ok_or("sampling/createMessage needs a non-empty messages list")?;
        let mut messages = Vec::with_capacity(list.len());
        for m in list {
            let role = match m.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                other => return Err(format!("unknown message role {other:?}")),
            };
            messages.push((role, content_text(m.get("content").unwrap_or(&Value::Null))));
        }
        let max_tokens = params
            .get("maxTokens")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .ok_or("sampling/createMessage needs a positive maxTokens")?;
        let hints = params
            .pointer("/modelPreferences/hints")
            .and_then(Value::as_array)
            .map(|h| {
                h.iter()
                    .filter_map(|x| x.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            system: params
                .get("systemPrompt")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            messages,
            max_tokens: u32::try_from(max_tokens).unwrap_or(u32::MAX),
            hints,
        })
    }

    /// The model call: `maxTokens`, capped by the provider's configured `max_tokens`.
    pub fn request(&self, provider_cap: u32) -> ModelRequest {
        ModelRequest {
            system: self.system.clone(),
            messages: self
                .messages
                .iter()
                .map(|(role, text)| Message {
                    role: *role,
                    content: vec![Block::Text(text.clone())],
                })
                .collect(),
            tools: Arc::new(Vec::new()),
            max_tokens: match provider_cap {
                0 => self.max_tokens,
                cap => self.max_tokens.min(cap),
            },
        }
    }

    /// The model to ask: the first hint (in the server's order) that names `configured` or
    /// one of `others` picks it; else `configured`.
    pub fn model_for<'a>(&self, configured: &'a str, others: &'a [String]) -> &'a str {
        let models = || std::iter::once(configured).chain(others.iter().map(String::as_str));
        self.hints
            .iter()
            .filter(|h| !h.is_empty())
            .find_map(|h| models().find(|m| m.contains(h.as_str())))
            .unwrap_or(configured)
    }

    /// Each message as a line for the approval (cut at [`SHOWN_CHARS`]; the caller cleans
    /// them).
    pub fn shown_messages(&self) -> Vec<String> {
        self.messages
            .iter()
            .map(|(role, text)| {
                let who = match role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                };
                let mut t: String = text.chars().take(SHOWN_CHARS).collect();
                if text.chars().count() > SHOWN_CHARS {
                    t.push('…');
                }
                format!("{who}: {t}")
            })
            .collect()
    }
}

/// The `CreateMessageResult` of a model reply.
pub fn result(reply: &ModelReply, model: &str) -> Value {
    let text: Vec<&str> = reply
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let stop = match &reply.stop_reason {
        StopReason::EndTurn => "endTurn".to_owned(),
        StopReason::MaxTokens => "maxTokens".to_owned(),
        StopReason::ToolUse => "toolUse".to_owned(),
        StopReason::Other(s) if s == "stop_sequence" => "stopSequence".to_owned(),
        StopReason::Other(s) => s.clone(),
    };
    json!({
        "role": "assistant",
        "content": { "type": "text", "text": text.join("") },
        "model": model,
        "stopReason": stop,
    })
}

/// Runs `s` on `provider` (a `!Send` future: run it on an actix thread); the result, or what
/// went wrong.
pub async fn sample(
    provider: &Provider,
    s: &Sampling,
    cancel: &CancellationToken,
) -> Result<Value, String> {
    let cfg = provider.config();
    let req = s.request(cfg.max_tokens);
    // Streamed pieces are not shown anywhere: the receiver is dropped at once.
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    let reply = provider
        .complete(&req, &events, cancel)
        .await
        .map_err(|e| e.to_string())?;
    Ok(result(&reply, &cfg.model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::model::Usage;

    #[test]
    fn params_become_a_request_and_a_reply_a_result() {
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "assistant", "content": [{"type": "text", "text": "yes?"}, {"type": "image", "data": "", "mimeType": "image/png"}]}
            ],
            "systemPrompt": "be brief",
            "maxTokens": 100000,
            "modelPreferences": {"hints": [{"name": "sonnet"}, {"name": "gpt"}]}
        });
        let s = Sampling::parse(&params).unwrap();
        assert_eq!(s.system.as_deref(), Some("be brief"));
        assert_eq!(s.messages[1].1, "yes?\n[image content left out]");
        let req = s.request(8192);
        assert_eq!(req.max_tokens, 8192);
        assert_eq!(s.request(0).max_tokens, 100000);
        let others = ["gpt-4.1-mini".to_owned(), "claude-sonnet-4-5".to_owned()];
        assert_eq!(s.model_for("claude-opus-4-1", &others), "claude-sonnet-4-5");
        assert_eq!(s.model_for("llama3", &[]), "llama3");
        assert_eq!(
            s.model_for("gpt-4.1", &others),
            "claude-sonnet-4-5",
            "the first hint wins"
        );
        assert!(Sampling::parse(&json!({"messages": [], "maxTokens": 5})).is_err());
        assert!(Sampling::parse(
            &json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]})
        )
        .is_err());
        let reply = ModelReply {
            content: vec![Block::Text("a ".into()), Block::Text("b".into())],
            stop_reason: StopReason::MaxTokens,
            usage: Usage::default(),
        };
        assert_eq!(
            result(&reply, "m"),
            json!({"role": "assistant", "content": {"type": "text", "text": "a b"}, "model": "m", "stopReason": "maxTokens"})
        );
    }
}
