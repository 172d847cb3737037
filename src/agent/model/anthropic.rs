//! The Anthropic Messages API wire format: the streaming request body, the SSE stream decoder
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`, `ping`, `error`) and
//! error bodies. Pure: no IO.

use std::collections::BTreeMap;

use harness9_actors::protocol::sse::Event;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;

use harness9_actors::net::{snippet, truncate_chars};

use super::config::{ProviderConfig, ProviderKind};
use super::errors::{ApiError, DecodeError};
use super::types::{Block, Message, ModelReply, ModelRequest, ResultPart, StreamEvent, Usage};
use super::wire::{assemble_reply, image_placeholder, model_image_type, CallArgs, ReplyPart};

/// The JSON body of a streaming `POST /v1/messages`.
pub(crate) fn request_body(cfg: &ProviderConfig, req: &ModelRequest) -> Value {
    let max_tokens = if req.max_tokens > 0 {
        req.max_tokens
    } else {
        cfg.max_tokens
    };
    let mut body = json!({
        "model": cfg.model,
        "max_tokens": max_tokens,
        "stream": true,
    });
    // Prompt caching: breakpoints after the tools, the system prompt and the newest message, so
    // each step of an agent loop reads the whole earlier prefix from the cache (a prefix under
    // the model's minimum is simply not cached). `prompt_caching = false` sends none, for
    // Anthropic-compatible proxies that reject `cache_control`.
    let mark = |v: &mut Value| {
        if cfg.prompt_caching {
            v["cache_control"] = json!({"type": "ephemeral"});
        }
    };
    if let Some(system) = req.system.as_deref().filter(|s| !s.is_empty()) {
        let mut block = json!({"type": "text", "text": system});
        mark(&mut block);
        body["system"] = json!([block]);
    }
    let mut messages: Vec<Value> = req.messages.iter().filter_map(message).collect();
    if let Some(Value::Array(blocks)) = messages.last_mut().map(|m| &mut m["content"]) {
        if let Some(last) = blocks.last_mut() {
            mark(last);
        }
    }
    body["messages"] = Value::Array(messages);
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                })
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            mark(last);
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

/// An image block (a user's or a tool's), or a text placeholder for a type the model does not
/// take.
fn image_block(mime_type: &str, data: &str) -> Value {
    match model_image_type(mime_type) {
        Some(media_type) => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }),
        None => json!({"type": "text", "text": image_placeholder(mime_type, data, None)}),
    }
}

/// One message; `None` when nothing in it can be sent (the API rejects empty content and
/// empty text blocks).
fn message(m: &Message) -> Option<Value> {
    let role = m.role.as_str();
    let content: Vec<Value> = m
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) if t.is_empty() => None,
            Block::Text(t) => Some(json!({"type": "text", "text": t})),
            // `input` must be an object: malformed arguments (kept raw) go back as `{}`; the
            // call's error result quotes them.
            Block::ToolUse { id, name, input } => Some(json!({
                "type": "tool_use",
                "id": id,
                "name": name,
                "input": if input.is_object() { input.clone() } else { json!({}) },
            })),
            Block::Image { mime_type, data } => Some(image_block(mime_type, data)),
            Block::ToolResult {
                id,
                content,
                is_error,
            } => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|p| match p {
                        ResultPart::Text(t) if t.is_empty() => None,
                        ResultPart::Text(t) => Some(json!({"type": "text", "text": t})),
                        ResultPart::Image { mime_type, data } => Some(image_block(mime_type, data)),
                    })
                    .collect();
                let mut v = json!({"type": "tool_result", "tool_use_id": id});
                if !parts.is_empty() {
                    v["content"] = Value::Array(parts);
                }
                v["is_error"] = json!(is_error);
                Some(v)
            }
        })
        .collect();
    (!content.is_empty()).then(|| json!({"role": role, "content": content}))
}

/// Parses an error body `{"type":"error","error":{"type","message"}}`; anything else becomes a
/// snippet of the body.
pub(crate) fn parse_error(body: &[u8]) -> ApiError {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => error_from_value(&v).unwrap_or_else(|| ApiError {
            kind: None,
            message: snippet(body),
        }),
        Err(_) => ApiError {
            kind: None,
            message: snippet(body),
        },
    }
}

fn error_from_value(v: &Value) -> Option<ApiError> {
    let e = v.get("error")?;
    if let Some(s) = e.as_str() {
        return Some(ApiError {
            kind: None,
            message: truncate_chars(s, 300),
        });
    }
    Some(ApiError {
        kind: e.get("type").and_then(Value::as_str).map(str::to_owned),
        message: truncate_chars(e.get("message").and_then(Value::as_str).unwrap_or(""), 300),
    })
}

#[derive(Debug)]
enum Partial {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    Ignored,
}

/// Decodes one streamed reply, event by event.
#[derive(Debug, Default)]
pub(crate) struct StreamDecoder {
    blocks: BTreeMap<u64, Partial>,
    stop_reason: Option<String>,
    usage: Usage,
    done: bool,
    /// A [`StreamEvent`] was sent.
    pub(crate) emitted: bool,
}

/// Prompt tokens in a usage object: plain plus cache writes and reads.
fn input_tokens(u: &Value) -> Option<u64> {
    let base = u.get("input_tokens")?.as_u64()?;
    let extra = ["cache_creation_input_tokens", "cache_read_input_tokens"]
        .iter()
        .filter_map(|k| u.get(*k).and_then(Value::as_u64))
        .sum::<u64>();
    Some(base + extra)
}

/// Prompt tokens read from the cache.
fn cache_reads(u: &Value) -> Option<u64> {
    u.get("cache_read_input_tokens").and_then(Value::as_u64)
}

impl StreamDecoder {
    /// Handles one SSE event; `Ok(true)` at `message_stop`.
    pub(crate) fn on_event(
        &mut self,
        ev: &Event,
        tx: &UnboundedSender<StreamEvent>,
    ) -> Result<bool, DecodeError> {
        if ev.data.trim().is_empty() {
            return Ok(false);
        }
        let v: Value = serde_json::from_str(&ev.data).map_err(|e| {
            DecodeError::Protocol(format!(
                "an event is not JSON ({e}): {}",
                truncate_chars(&ev.data, 200)
            ))
        })?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(ev.event.as_str());
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                if let Some(u) = v.pointer("/message/usage") {
                    self.usage.input_tokens = input_tokens(u).unwrap_or(0);
                    self.usage.output_tokens =
                        u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
                    self.usage.cached_input_tokens = cache_reads(u).unwrap_or(0);
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").unwrap_or(&Value::Null);
                let partial = self.block_start(block, tx);
                self.blocks.insert(index, partial);
            }
            "content_block_delta" => {
                let delta = v.get("delta").unwrap_or(&Value::Null);
                self.block_delta(index, delta, tx)?;
            }
            "message_delta" => self.message_delta(&v),
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => {
                return Err(DecodeError::Api(error_from_value(&v).unwrap_or_else(
                    || ApiError {
                        kind: None,
                        message: truncate_chars(&ev.data, 300),
                    },
                )))
            }
            _ => {}
        }
        Ok(false)
    }

    /// A content block starts: text (its first text sent on), a tool call (its start sent
    /// on), or a kind not kept.
    fn block_start(&mut self, block: &Value, tx: &UnboundedSender<StreamEvent>) -> Partial {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = block.get("text").and_then(Value::as_str).unwrap_or("");
                self.text(tx, t);
                Partial::Text(t.to_owned())
            }
            Some("tool_use") => {
                let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                self.emitted = true;
                let _ = tx.send(StreamEvent::ToolCallStarted {
                    id: id.to_owned(),
                    name: name.to_owned(),
                });
                Partial::Tool {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    json: String::new(),
                    initial: block.get("input").cloned().unwrap_or(Value::Null),
                }
            }
            _ => Partial::Ignored,
        }
    }

    /// A piece of content block `i`: text (sent on) or a piece of a tool call's arguments;
    /// either for a block of another kind is a protocol error.
    fn block_delta(
        &mut self,
        i: u64,
        delta: &Value,
        tx: &UnboundedSender<StreamEvent>,
    ) -> Result<(), DecodeError> {
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let t = delta.get("text").and_then(Value::as_str).unwrap_or("");
                self.text(tx, t);
                match self
                    .blocks
                    .entry(i)
                    .or_insert_with(|| Partial::Text(String::new()))
                {
                    Partial::Text(s) => s.push_str(t),
                    _ => {
                        return Err(DecodeError::Protocol(format!(
                            "text arrived for content block {i}, which is not a text block"
                        )))
                    }
                }
            }
            Some("input_json_delta") => {
                let piece = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match self.blocks.get_mut(&i) {
                    Some(Partial::Tool { json, .. }) => json.push_str(piece),
                    _ => {
                        return Err(DecodeError::Protocol(format!(
                            "tool arguments arrived for content block {i}, which is not a tool call"
                        )))
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The message's stop reason and its final usage.
    fn message_delta(&mut self, v: &Value) {
        if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop_reason = Some(r.to_owned());
        }
        if let Some(u) = v.get("usage") {
            if let Some(o) = u.get("output_tokens").and_then(Value::as_u64) {
                self.usage.output_tokens = o;
            }
            if let Some(i) = input_tokens(u) {
                self.usage.input_tokens = i;
            }
            if let Some(c) = cache_reads(u) {
                self.usage.cached_input_tokens = c;
            }
        }
    }

    fn text(&mut self, tx: &UnboundedSender<StreamEvent>, t: &str) {
        if !t.is_empty() {
            self.emitted = true;
            let _ = tx.send(StreamEvent::TextDelta(t.to_owned()));
        }
    }

    /// The reply (after `message_stop`).
    pub(crate) fn finish(self) -> Result<ModelReply, DecodeError> {
        let parts = self
            .blocks
            .into_values()
            .filter_map(|b| match b {
                Partial::Text(t) => Some(ReplyPart::Text(t)),
                Partial::Tool {
                    id,
                    name,
                    json,
                    initial,
                } => {
                    // Arguments given whole at the block's start, none streamed.
                    let args = if json.trim().is_empty() && initial.is_object() {
                        CallArgs::Value(initial)
                    } else {
                        CallArgs::Text(json)
                    };
                    Some(ReplyPart::Call { id, name, args })
                }
                Partial::Ignored => None,
            })
            .collect();
        let word = self.stop_reason.as_deref();
        Ok(assemble_reply(
            ProviderKind::Anthropic,
            parts,
            word,
            self.usage,
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::super::types::{tool_uses, Role, StopReason, ToolDef};
    use super::super::wire::{decode_chunks, split_every};
    use super::*;

    fn cfg() -> ProviderConfig {
        ProviderConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5")
    }

    #[test]
    fn request_body_has_the_exact_shape() {
        let req = ModelRequest {
            system: Some("be brief".into()),
            messages: vec![
                Message {
                    role: Role::User,
                    content: vec![Block::Text("list files".into())],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Text("looking".into()),
                        Block::ToolUse {
                            id: "toolu_1".into(),
                            name: "shell".into(),
                            input: json!({"cmd": "ls"}),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        id: "toolu_1".into(),
                        content: vec![
                            ResultPart::Text("a.txt".into()),
                            ResultPart::Image {
                                mime_type: "image/png".into(),
                                data: "iVBORw0=".into(),
                            },
                        ],
                        is_error: false,
                    }],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![Block::Text(String::new())],
                },
            ],
            tools: Arc::new(vec![ToolDef {
                name: "shell".into(),
                description: "runs a command".into(),
                input_schema: json!({"type": "object", "properties": {"cmd": {"type": "string"}}}),
            }]),
            max_tokens: 0,
        };
        assert_eq!(
            request_body(&cfg(), &req),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 8192,
                "stream": true,
                "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "looking"},
                        {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"cmd": "ls"}},
                    ]},
                    {"role": "user", "content": [{
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [
                            {"type": "text", "text": "a.txt"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0="}},
                        ],
                        "is_error": false,
                        "cache_control": {"type": "ephemeral"},
                    }]},
                ],
                "tools": [{
                    "name": "shell",
                    "description": "runs a command",
                    "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}},
                    "cache_control": {"type": "ephemeral"},
                }],
            })
        );
    }

    #[test]
    fn request_body_without_tools_or_system_and_an_empty_error_result() {
        let req = ModelRequest {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    id: "t".into(),
                    content: vec![],
                    is_error: true,
                }],
            }],
            tools: Arc::new(vec![]),
            max_tokens: 100,
        };
        assert_eq!(
            request_body(&cfg(), &req),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 100,
                "stream": true,
                "messages": [{"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "is_error": true,
                     "cache_control": {"type": "ephemeral"}},
                ]}],
            })
        );
    }

    #[test]
    fn an_image_type_the_api_rejects_becomes_a_placeholder() {
        let m = Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                id: "toolu_1".into(),
                content: vec![
                    ResultPart::Image {
                        mime_type: "image/svg+xml".into(),
                        data: "aGk=".into(),
                    },
                    ResultPart::Image {
                        mime_type: "image/JPG".into(),
                        data: "/9j/".into(),
                    },
                ],
                is_error: false,
            }],
        };
        assert_eq!(
            message(&m),
            Some(json!({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_1", "is_error": false, "content": [
                {"type": "text", "text": "[image omitted: image/svg+xml, 2 B; the model takes png, jpeg, gif and webp images only]"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
            ]}]}))
        );
    }

    #[test]
    fn request_body_without_prompt_caching_has_no_cache_control() {
        let req = ModelRequest {
            system: Some("be brief".into()),
            messages: vec![Message {
                role: Role::User,
                content: vec![Block::Text("hi".into())],
            }],
            tools: Arc::new(vec![ToolDef {
                name: "now".into(),
                description: "the time".into(),
                input_schema: json!({"type": "object"}),
            }]),
            max_tokens: 0,
        };
        let off = ProviderConfig {
            prompt_caching: false,
            ..cfg()
        };
        assert_eq!(
            request_body(&off, &req),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 8192,
                "stream": true,
                "system": [{"type": "text", "text": "be brief"}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "tools": [{"name": "now", "description": "the time", "input_schema": {"type": "object"}}],
            })
        );
        // The same request with caching on marks all three breakpoints.
        assert_eq!(
            request_body(&cfg(), &req),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 8192,
                "stream": true,
                "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
                ]}],
                "tools": [{"name": "now", "description": "the time", "input_schema": {"type": "object"},
                           "cache_control": {"type": "ephemeral"}}],
            })
        );
    }

    pub(crate) const STREAM: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\n",
        "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Grüße \"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"→ 🌍\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"read\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"ä\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".txt\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":\"now\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    pub(crate) fn expected() -> ModelReply {
        ModelReply {
            content: vec![
                Block::Text("Grüße → 🌍".into()),
                Block::ToolUse {
                    id: "toolu_a".into(),
                    name: "read".into(),
                    input: json!({"path": "ä.txt"}),
                },
                Block::ToolUse {
                    id: "toolu_b".into(),
                    name: "now".into(),
                    input: json!({}),
                },
            ],
            stop_reason: StopReason::ToolUse,
            usage: Usage {
                input_tokens: 125,
                output_tokens: 42,
                cached_input_tokens: 100,
            },
        }
    }

    #[test]
    fn decodes_a_stream_split_anywhere() {
        for n in [1, 2, 3, 5, 7, 13, 64, 4096] {
            let (reply, events) =
                decode_chunks(ProviderKind::Anthropic, &split_every(STREAM.as_bytes(), n));
            assert_eq!(reply, Some(Ok(expected())), "chunk size {n}");
            assert_eq!(
                events,
                vec![
                    StreamEvent::TextDelta("Grüße ".into()),
                    StreamEvent::TextDelta("→ 🌍".into()),
                    StreamEvent::ToolCallStarted {
                        id: "toolu_a".into(),
                        name: "read".into()
                    },
                    StreamEvent::ToolCallStarted {
                        id: "toolu_b".into(),
                        name: "now".into()
                    },
                ],
                "chunk size {n}"
            );
        }
    }

    #[test]
    fn crlf_line_ends_work_too() {
        let crlf = STREAM.replace('\n', "\r\n");
        let (reply, _) = decode_chunks(ProviderKind::Anthropic, &split_every(crlf.as_bytes(), 9));
        assert_eq!(reply, Some(Ok(expected())));
    }

    #[test]
    fn a_stream_without_message_stop_is_incomplete() {
        let cut = &STREAM[..STREAM.find("event: message_stop").expect("marker")];
        let (reply, _) = decode_chunks(ProviderKind::Anthropic, &[cut.as_bytes()]);
        assert_eq!(reply, None);
    }

    #[test]
    fn an_error_event_mid_stream_is_an_api_error() {
        let s = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        let (reply, _) = decode_chunks(ProviderKind::Anthropic, &split_every(s.as_bytes(), 10));
        assert_eq!(
            reply,
            Some(Err(DecodeError::Api(ApiError {
                kind: Some("overloaded_error".into()),
                message: "Overloaded".into()
            })))
        );
    }

    #[test]
    fn bad_tool_json_is_kept_raw_for_the_engine() {
        // Cut off at max_tokens inside the second call; the first call is fine.
        let s = concat!(
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t0\",\"name\":\"read\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\\\"}\"}}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"edit\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": tru\"}}\n\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"}}\n\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let (reply, _) = decode_chunks(ProviderKind::Anthropic, &[s.as_bytes()]);
        let reply = reply.expect("done").expect("a reply, not an error");
        assert_eq!(reply.stop_reason, StopReason::MaxTokens);
        assert_eq!(
            reply.content,
            tool_uses(&[
                ("t0", "read", json!({"path": "a"})),
                ("t", "edit", json!("{\"a\": tru"))
            ])
        );
        // Valid JSON that is not an object is kept raw too.
        let s = concat!(
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"ls\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"[1, 2]\"}}\n\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let (reply, _) = decode_chunks(ProviderKind::Anthropic, &[s.as_bytes()]);
        let content = reply.expect("done").expect("ok").content;
        assert_eq!(
            content,
            vec![Block::ToolUse {
                id: "t".into(),
                name: "ls".into(),
                input: json!("[1, 2]"),
            }]
        );
    }

    #[test]
    fn a_malformed_call_is_replayed_with_an_empty_object() {
        let req = ModelRequest::of(vec![Message {
            role: Role::Assistant,
            content: tool_uses(&[
                ("t0", "read", json!({"path": "a"})),
                ("t1", "edit", json!("{\"a\": tru")),
            ]),
        }]);
        let off = ProviderConfig {
            prompt_caching: false,
            ..cfg()
        };
        assert_eq!(
            request_body(&off, &req)["messages"],
            json!([{"role": "assistant", "content": [
                {"type": "tool_use", "id": "t0", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t1", "name": "edit", "input": {}},
            ]}])
        );
    }

    #[test]
    fn non_json_event_data_is_a_protocol_error() {
        let (reply, _) = decode_chunks(ProviderKind::Anthropic, &[b"data: <html>\n\n"]);
        assert!(matches!(reply, Some(Err(DecodeError::Protocol(_)))));
    }

    #[test]
    fn error_bodies_parse_or_fall_back_to_a_snippet() {
        assert_eq!(
            parse_error(
                br#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#
            ),
            ApiError {
                kind: Some("rate_limit_error".into()),
                message: "slow down".into()
            }
        );
        assert_eq!(
            parse_error(b"<html>\n<body>502 Bad Gateway</body></html>"),
            ApiError {
                kind: None,
                message: "<html> <body>502 Bad Gateway</body></html>".into()
            }
        );
        let long = "x".repeat(1000);
        assert_eq!(parse_error(long.as_bytes()).message.len(), 303);
        assert_eq!(parse_error(b"{\"ok\":1}").message, "{\"ok\":1}");
    }
}
