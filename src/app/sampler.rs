//! A server's `sampling/createMessage` as a call to the configured model: its params as a
//! [`ModelRequest`] (system prompt, messages with text, tool calls and tool results,
//! `maxTokens` capped by the provider's own cap, the request's `tools` unless `toolChoice` is
//! `none`), the model's reply as a `CreateMessageResult` (with `tool_use` blocks), and what the TUI shows before
//! the user approves it. `modelPreferences.hints` are matched in order (as substrings, as the
//! spec says) against the configured model and the `sampling_models` of the settings: the
//! first hint that names one picks it; else the configured model answers.
//! Pure, except [`sample`], which runs the call.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use harness9_agent::model::{
    result_text, Block, Message, ModelReply, ModelRequest, Provider, ResultPart, Role, StopReason,
    ToolDef,
};

/// Most characters of one message the approval shows.
const SHOWN_CHARS: usize = 2_000;

/// The text of a list of content parts (a tool result's), images and others as notes.
fn parts_text(parts: &[Value]) -> Vec<ResultPart> {
    parts
        .iter()
        .map(|p| match p.get("type").and_then(Value::as_str) {
            Some("text") => ResultPart::Text(
                p.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ),
            Some("image") => ResultPart::Image {
                mime_type: p
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                data: p
                    .get("data")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            },
            Some(other) => ResultPart::Text(format!("[{other} content left out]")),
            None => ResultPart::Text(String::new()),
        })
        .collect()
}

/// One content block of a sampling message: text, a tool call, a tool result; images and
/// audio become a note naming what was left out.
fn block(c: &Value) -> Result<Block, String> {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    Ok(match c.get("type").and_then(Value::as_str) {
        Some("text") => Block::Text(s("text")),
        Some("tool_use") => Block::ToolUse {
            id: s("id"),
            name: s("name"),
            input: c.get("input").cloned().unwrap_or_else(|| json!({})),
        },
        Some("tool_result") => Block::ToolResult {
            id: s("toolUseId"),
            content: parts_text(
                c.get("content")
                    .and_then(Value::as_array)
                    .map_or(&[], Vec::as_slice),
            ),
            is_error: c.get("isError").and_then(Value::as_bool).unwrap_or(false),
        },
        Some(other) => Block::Text(format!("[{other} content left out]")),
        None => return Err("a message content block without a type".to_owned()),
    })
}

/// What a sampling request asks, read from its params.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// `systemPrompt`.
    pub system: Option<String>,
    /// The conversation, in order.
    pub messages: Vec<Message>,
    /// `maxTokens`.
    pub max_tokens: u32,
    /// `modelPreferences.hints[].name`.
    pub hints: Vec<String>,
    /// `tools` the model may call (2025-11-25; empty with `toolChoice` `none`).
    pub tools: Vec<ToolDef>,
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
            let content = match m.get("content") {
                Some(Value::Array(parts)) => parts.iter().map(block).collect::<Result<_, _>>()?,
                Some(one) => vec![block(one)?],
                None => Vec::new(),
            };
            messages.push(Message { role, content });
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
        let no_tools = params.pointer("/toolChoice/mode").and_then(Value::as_str) == Some("none");
        let tools = params
            .get("tools")
            .and_then(Value::as_array)
            .filter(|_| !no_tools)
            .map(|t| {
                t.iter()
                    .filter_map(|t| {
                        Some(ToolDef {
                            name: t.get("name").and_then(Value::as_str)?.to_owned(),
                            description: t
                                .get("description")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                            input_schema: t
                                .get("inputSchema")
                                .cloned()
                                .unwrap_or_else(|| json!({"type": "object"})),
                        })
                    })
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
            tools,
        })
    }

    /// The model call: `maxTokens`, capped by the provider's configured `max_tokens`, and the
    /// request's tools.
    pub fn request(&self, provider_cap: u32) -> ModelRequest {
        ModelRequest {
            system: self.system.clone(),
            messages: self.messages.clone(),
            tools: Arc::new(self.tools.clone()),
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

    /// Each message as a line for the approval (cut at `SHOWN_CHARS`; the caller cleans
    /// them): its text, tool calls and tool results.
    pub fn shown_messages(&self) -> Vec<String> {
        self.messages
            .iter()
            .map(|m| {
                let who = m.role.as_str();
                let text: Vec<String> = m
                    .content
                    .iter()
                    .map(|b| match b {
                        Block::Text(t) => t.clone(),
                        Block::Image { mime_type, .. } => format!("[an image, {mime_type}]"),
                        Block::ToolUse { name, input, .. } => format!("[calls {name} {input}]"),
                        Block::ToolResult {
                            content, is_error, ..
                        } => {
                            let what = if *is_error {
                                "tool error"
                            } else {
                                "tool result"
                            };
                            format!("[{what}: {}]", result_text(content).replace('\n', " "))
                        }
                    })
                    .collect();
                let text = text.join("\n");
                let mut t: String = text.chars().take(SHOWN_CHARS).collect();
                if text.chars().count() > SHOWN_CHARS {
                    t.push('…');
                }
                format!("{who}: {t}")
            })
            .collect()
    }
}

/// The `CreateMessageResult` of a model reply: one text block, or (when the model called
/// tools) a list of its text and `tool_use` blocks with `stopReason` `toolUse`.
pub fn result(reply: &ModelReply, model: &str) -> Value {
    let calls = reply
        .content
        .iter()
        .any(|b| matches!(b, Block::ToolUse { .. }));
    let stop = match &reply.stop_reason {
        _ if calls => "toolUse".to_owned(),
        StopReason::EndTurn => "endTurn".to_owned(),
        StopReason::MaxTokens => "maxTokens".to_owned(),
        StopReason::ToolUse => "toolUse".to_owned(),
        StopReason::Other(s) if s == "stop_sequence" => "stopSequence".to_owned(),
        StopReason::Other(s) => s.clone(),
    };
    let content = if calls {
        Value::Array(
            reply
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) if t.is_empty() => None,
                    Block::Text(t) => Some(json!({"type": "text", "text": t})),
                    Block::ToolUse { id, name, input } => Some(json!({
                        "type": "tool_use", "id": id, "name": name,
                        // Arguments that are no JSON object (cut off) go as an empty object.
                        "input": if input.is_object() { input.clone() } else { json!({}) },
                    })),
                    Block::ToolResult { .. } | Block::Image { .. } => None,
                })
                .collect(),
        )
    } else {
        let text: Vec<&str> = reply
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        json!({ "type": "text", "text": text.join("") })
    };
    json!({
        "role": "assistant",
        "content": content,
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
    parent: &tracing::Span,
) -> Result<Value, String> {
    use harness9_agent::engine::spans;
    let cfg = provider.config();
    let req = s.request(cfg.max_tokens);
    // Streamed pieces are not shown anywhere: the receiver is dropped at once.
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    // The model request's span, under the server's sampling request.
    let chat = spans::chat(parent, cfg);
    let reply = match provider.complete(&req, &events, cancel).await {
        Ok(r) => r,
        Err(e) => {
            spans::failed(&chat, e.kind());
            return Err(e.to_string());
        }
    };
    spans::chat_done(&chat, &reply.usage, &reply.stop_reason);
    Ok(result(&reply, &cfg.model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness9_agent::model::Usage;

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
        assert_eq!(
            s.messages[1].content,
            vec![
                Block::Text("yes?".into()),
                Block::Text("[image content left out]".into())
            ]
        );
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

    #[test]
    fn tool_use_in_sampling_goes_both_ways() {
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "weather?"}},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t1", "content": [{"type": "text", "text": "rain"}]}]}
            ],
            "maxTokens": 50,
            "tools": [{"name": "lookup", "description": "find it", "inputSchema": {"type": "object"}}]
        });
        let s = Sampling::parse(&params).unwrap();
        assert_eq!(s.tools.len(), 1);
        assert!(
            matches!(&s.messages[2].content[0], Block::ToolResult { id, is_error: false, .. } if id == "t1")
        );
        assert_eq!(s.shown_messages()[2], "user: [tool result: rain]");
        let mut none = params.clone();
        none["toolChoice"] = json!({"mode": "none"});
        assert!(Sampling::parse(&none).unwrap().tools.is_empty());
        let reply = ModelReply {
            content: vec![
                Block::Text(String::new()),
                Block::ToolUse {
                    id: "t2".into(),
                    name: "lookup".into(),
                    input: json!({"city": "Bergen"}),
                },
            ],
            stop_reason: StopReason::ToolUse,
            usage: Usage::default(),
        };
        assert_eq!(
            result(&reply, "m"),
            json!({"role": "assistant", "model": "m", "stopReason": "toolUse",
                   "content": [{"type": "tool_use", "id": "t2", "name": "lookup", "input": {"city": "Bergen"}}]})
        );
    }
}
