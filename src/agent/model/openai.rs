//! The OpenAI Chat Completions wire format (also Ollama, vLLM, llama.cpp): the streaming
//! request body, the `data:` chunk decoder (text, tool calls by index, finish reason, usage,
//! `[DONE]`) and error bodies. Pure: no IO.

use harness9_actors::protocol::sse::Event;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedSender;

use harness9_actors::net::{snippet, truncate_chars};

use super::config::{url_host, MaxTokensField, ProviderConfig, ProviderKind};
use super::errors::{ApiError, DecodeError};
use super::types::{
    Block, Message, ModelReply, ModelRequest, ResultPart, Role, StreamEvent, Usage,
};
use super::wire::{assemble_reply, image_placeholder, model_image_type, CallArgs, ReplyPart};

/// The JSON body of a streaming `POST /chat/completions`.
pub(crate) fn request_body(cfg: &ProviderConfig, req: &ModelRequest) -> Value {
    let max_tokens = if req.max_tokens > 0 {
        req.max_tokens
    } else {
        cfg.max_tokens
    };
    let send_images = tool_images(cfg);
    let mut messages = Vec::new();
    if let Some(system) = req.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &req.messages {
        match m.role {
            Role::User => user_messages(m, send_images, &mut messages),
            Role::Assistant => messages.push(assistant_message(m)),
        }
    }
    let mut body = json!({
        "model": cfg.model,
        max_tokens_key(cfg): max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                })
            })
            .collect();
    }
    body
}

/// A message's text blocks that are not empty.
fn texts_of(m: &Message) -> Vec<&str> {
    m.content
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) if !t.is_empty() => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// A user message as the API's messages: its tool results first (they must follow the
/// assistant's tool calls directly; `tool` messages take only text, so their images, when
/// sent, follow the run in one `user` message), then the user's own text and images.
fn user_messages(m: &Message, send_images: bool, messages: &mut Vec<Value>) {
    let mut images = Vec::new();
    for b in &m.content {
        if let Block::ToolResult {
            id,
            content,
            is_error,
        } = b
        {
            messages.push(json!({
                "role": "tool",
                "tool_call_id": id,
                "content": tool_result_text(content, *is_error, send_images),
            }));
            if send_images {
                image_parts(id, content, &mut images);
            }
        }
    }
    if !images.is_empty() {
        messages.push(json!({"role": "user", "content": images}));
    }
    let texts = texts_of(m);
    // The user's own images (an MCP prompt's): parts after the text, when the provider takes
    // images (the same setting as tool images), else a note each.
    let own: Vec<(&str, &str)> = m
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Image { mime_type, data } => Some((mime_type.as_str(), data.as_str())),
            _ => None,
        })
        .collect();
    if !own.is_empty() {
        let mut parts = vec![json!({"type": "text", "text": texts.join("\n\n")})];
        for (mime_type, data) in own {
            parts.push(match model_image_type(mime_type).filter(|_| send_images) {
                Some(t) => json!({
                    "type": "image_url",
                    "image_url": {"url": format!("data:{t};base64,{data}")},
                }),
                None => json!({
                    "type": "text",
                    "text": image_placeholder(mime_type, data, None),
                }),
            });
        }
        messages.push(json!({"role": "user", "content": parts}));
    } else if !texts.is_empty() {
        messages.push(json!({"role": "user", "content": texts.join("\n\n")}));
    }
}

/// An assistant message: its text (`null` beside calls alone) and its tool calls.
fn assistant_message(m: &Message) -> Value {
    let texts = texts_of(m);
    let calls: Vec<Value> = m
        .content
        .iter()
        .filter_map(|b| match b {
            // Malformed arguments (kept raw) go back as `{}`, not as they came: Ollama parses
            // every earlier call's arguments and would refuse each later request ("invalid
            // tool call arguments"). The call's error result quotes them.
            Block::ToolUse { id, name, input } => {
                let arguments = if input.is_object() {
                    input.to_string()
                } else {
                    "{}".to_owned()
                };
                Some(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }))
            }
            _ => None,
        })
        .collect();
    let mut msg = json!({"role": "assistant"});
    msg["content"] = if texts.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        json!(texts.join("\n\n"))
    };
    if !calls.is_empty() {
        msg["tool_calls"] = Value::Array(calls);
    }
    msg
}

/// The body field of the output cap: OpenAI itself deprecates `max_tokens` (its reasoning
/// models reject it), while local servers (Ollama, llama.cpp, older vLLM) know only it.
fn max_tokens_key(cfg: &ProviderConfig) -> &'static str {
    let completion = match cfg.max_tokens_field {
        MaxTokensField::MaxTokens => false,
        MaxTokensField::MaxCompletionTokens => true,
        MaxTokensField::Auto => is_openai_itself(cfg),
    };
    if completion {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}

/// Whether tool-result images are sent: the setting, else only to OpenAI itself (local servers
/// often run text-only models that reject image input).
fn tool_images(cfg: &ProviderConfig) -> bool {
    cfg.tool_images.unwrap_or_else(|| is_openai_itself(cfg))
}

/// Whether the base URL's host is exactly `api.openai.com` (the `auto` choices key on it).
fn is_openai_itself(cfg: &ProviderConfig) -> bool {
    url_host(&cfg.base_url).as_deref() == Some("api.openai.com")
}

/// A tool result as the text of a `tool` message: parts joined by newlines, `Error: ` in front
/// of a failure. Tool messages take no images: each becomes a note that it follows in the next
/// user message (`images` on), else a placeholder.
fn tool_result_text(content: &[ResultPart], is_error: bool, images: bool) -> String {
    let mut n = 0;
    let parts: Vec<String> = content
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.clone(),
            ResultPart::Image { mime_type, .. }
                if images && model_image_type(mime_type).is_some() =>
            {
                n += 1;
                format!("[image {n} of this result follows in the next user message]")
            }
            ResultPart::Image { mime_type, data } if images => {
                image_placeholder(mime_type, data, None)
            }
            ResultPart::Image { mime_type, data } => image_placeholder(
                mime_type,
                data,
                Some("this provider takes no images in tool results"),
            ),
        })
        .collect();
    let text = parts.join("\n");
    if is_error {
        format!("Error: {text}")
    } else {
        text
    }
}

/// Appends a tool result's images as user-message parts, after a text part naming the call;
/// nothing for a result without images.
fn image_parts(id: &str, content: &[ResultPart], out: &mut Vec<Value>) {
    let mut named = false;
    for p in content {
        if let ResultPart::Image { mime_type, data } = p {
            let Some(mime_type) = model_image_type(mime_type) else {
                continue;
            };
            if !named {
                named = true;
                out.push(json!({"type": "text", "text": format!("Images from tool call {id}:")}));
            }
            out.push(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{mime_type};base64,{data}")},
            }));
        }
    }
}

/// Parses an error body `{"error":{"message","type","code"}}` (also `{"error":"..."}` and
/// FastAPI's `{"detail":"..."}`); anything else becomes a snippet of the body.
pub(crate) fn parse_error(body: &[u8]) -> ApiError {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| error_from_value(&v))
        .unwrap_or_else(|| ApiError {
            kind: None,
            message: snippet(body),
        })
}

fn error_from_value(v: &Value) -> Option<ApiError> {
    let text = |s: &str| truncate_chars(s, 300);
    if let Some(e) = v.get("error") {
        if let Some(s) = e.as_str() {
            return Some(ApiError {
                kind: None,
                message: text(s),
            });
        }
        let code = e.get("code").and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let kind = code
            .filter(|c| !c.chars().all(|ch| ch.is_ascii_digit()))
            .or_else(|| e.get("type").and_then(Value::as_str).map(str::to_owned))
            .filter(|k| !k.is_empty());
        return Some(ApiError {
            kind,
            message: text(e.get("message").and_then(Value::as_str).unwrap_or("")),
        });
    }
    let detail = v.get("detail").or_else(|| v.get("message"))?;
    Some(ApiError {
        kind: None,
        message: match detail {
            Value::String(s) => text(s),
            other => text(&other.to_string()),
        },
    })
}

#[derive(Debug, Default)]
struct Call {
    index: Option<u64>,
    id: String,
    name: String,
    args: String,
    announced: bool,
}

/// Decodes one streamed reply, chunk by chunk.
#[derive(Debug, Default)]
pub(crate) struct StreamDecoder {
    text: String,
    calls: Vec<Call>,
    finish: Option<String>,
    usage: Usage,
    /// A [`StreamEvent`] was sent.
    pub(crate) emitted: bool,
}

impl StreamDecoder {
    /// Handles one SSE event; `Ok(true)` at `[DONE]`.
    pub(crate) fn on_event(
        &mut self,
        ev: &Event,
        tx: &UnboundedSender<StreamEvent>,
    ) -> Result<bool, DecodeError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(false);
        }
        if data == "[DONE]" {
            return Ok(true);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            DecodeError::Protocol(format!(
                "a chunk is not JSON ({e}): {}",
                truncate_chars(data, 200)
            ))
        })?;
        if v.get("error").is_some() {
            return Err(DecodeError::Api(error_from_value(&v).unwrap_or_default()));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Usage {
                input_tokens: n("prompt_tokens"),
                output_tokens: n("completion_tokens"),
                cached_input_tokens: u
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            };
        }
        let choices = v.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(r.to_owned());
            }
            let Some(delta) = choice.get("delta") else {
                continue;
            };
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                if !t.is_empty() {
                    self.text.push_str(t);
                    self.emitted = true;
                    let _ = tx.send(StreamEvent::TextDelta(t.to_owned()));
                }
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for c in calls.into_iter().flatten() {
                self.on_call_piece(c, tx);
            }
        }
        Ok(false)
    }

    /// One piece of a tool call: found by `index` (or by `id`, or the latest call, for
    /// servers that send no index); id and name arrive first, arguments in pieces.
    fn on_call_piece(&mut self, c: &Value, tx: &UnboundedSender<StreamEvent>) {
        let index = c.get("index").and_then(Value::as_u64);
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let pos = match (index, id) {
            (Some(i), _) => self.calls.iter().position(|k| k.index == Some(i)),
            (None, Some(id)) => self.calls.iter().position(|k| k.id == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let pos = pos.unwrap_or_else(|| {
            self.calls.push(Call {
                index,
                ..Call::default()
            });
            self.calls.len() - 1
        });
        let call = &mut self.calls[pos];
        if let Some(id) = id {
            if call.id.is_empty() {
                call.id = id.to_owned();
            }
        }
        let f = c.get("function").unwrap_or(&Value::Null);
        if let Some(name) = f.get("name").and_then(Value::as_str) {
            if call.name.is_empty() {
                call.name = name.to_owned();
            }
        }
        match f.get("arguments") {
            Some(Value::String(s)) => call.args.push_str(s),
            Some(v @ Value::Object(_)) => call.args = v.to_string(),
            _ => {}
        }
        if call.announced || call.name.is_empty() {
            return;
        }
        call.announced = true;
        if call.id.is_empty() {
            call.id = format!("call_{pos}");
        }
        let started = StreamEvent::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        };
        self.emitted = true;
        let _ = tx.send(started);
    }

    /// The reply (after `[DONE]`).
    pub(crate) fn finish(self) -> Result<ModelReply, DecodeError> {
        let mut parts = vec![ReplyPart::Text(self.text)];
        for (n, call) in self.calls.into_iter().enumerate() {
            parts.push(ReplyPart::Call {
                id: if call.id.is_empty() {
                    format!("call_{n}")
                } else {
                    call.id
                },
                name: call.name,
                args: CallArgs::Text(call.args),
            });
        }
        let word = self.finish.as_deref();
        Ok(assemble_reply(
            ProviderKind::OpenAi,
            parts,
            word,
            self.usage,
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use super::super::types::{tool_uses, Message, StopReason, ToolDef};
    use super::super::wire::{decode_chunks, split_every};
    use super::*;

    fn cfg() -> ProviderConfig {
        ProviderConfig::new(ProviderKind::OpenAi, "gpt-4.1")
    }

    /// With `tool_images` off (as on local servers), images become placeholders.
    #[test]
    fn request_body_has_the_exact_shape() {
        let png = "A".repeat(5336); // 4002 bytes decoded: 3.9 KB
        let req = ModelRequest {
            system: Some("be brief".into()),
            messages: vec![
                Message {
                    role: Role::User,
                    content: vec![Block::Text("list files".into())],
                },
                Message {
                    role: Role::Assistant,
                    content: tool_uses(&[
                        ("call_1", "shell", json!({"cmd": "ls"})),
                        ("call_2", "shot", json!({})),
                    ]),
                },
                Message {
                    role: Role::User,
                    content: vec![
                        Block::ToolResult {
                            id: "call_1".into(),
                            content: vec![ResultPart::Text("no such dir".into())],
                            is_error: true,
                        },
                        Block::ToolResult {
                            id: "call_2".into(),
                            content: vec![
                                ResultPart::Text("here:".into()),
                                ResultPart::Image {
                                    mime_type: "image/png".into(),
                                    data: png,
                                },
                            ],
                            is_error: false,
                        },
                        Block::Text("and hurry".into()),
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![Block::Text("done".into())],
                },
            ],
            tools: Arc::new(vec![ToolDef {
                name: "shell".into(),
                description: "runs a command".into(),
                input_schema: json!({"type": "object"}),
            }]),
            max_tokens: 0,
        };
        let off = ProviderConfig {
            tool_images: Some(false),
            ..cfg()
        };
        assert_eq!(
            request_body(&off, &req),
            json!({
                "model": "gpt-4.1",
                "max_completion_tokens": 8192,
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "list files"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "Error: no such dir"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "here:\n[image omitted: image/png, 3.9 KB; this provider takes no images in tool results]"},
                    {"role": "user", "content": "and hurry"},
                    {"role": "assistant", "content": "done"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "shell", "description": "runs a command", "parameters": {"type": "object"},
                }}],
            })
        );
    }

    /// Tool results with images, as sent to OpenAI itself: the `tool` messages answer the calls
    /// first, with notes; then one `user` message carries the images; then the user's text.
    fn tool_results_with_images() -> ModelRequest {
        let result = |id: &str, content: Vec<ResultPart>, is_error: bool| Block::ToolResult {
            id: id.into(),
            content,
            is_error,
        };
        let image = |mime_type: &str, data: &str| ResultPart::Image {
            mime_type: mime_type.into(),
            data: data.into(),
        };
        ModelRequest {
            system: None,
            messages: vec![
                Message {
                    role: Role::Assistant,
                    content: tool_uses(&[
                        ("call_1", "shot", json!({})),
                        ("call_2", "shell", json!({"cmd": "ls"})),
                    ]),
                },
                Message {
                    role: Role::User,
                    content: vec![
                        Block::Text("compare them".into()),
                        result(
                            "call_1",
                            vec![
                                ResultPart::Text("two shots:".into()),
                                image("image/png", "iVBORw0KGgo="),
                                image("image/jpeg", "/9j/4AAQ"),
                            ],
                            false,
                        ),
                        result("call_2", vec![ResultPart::Text("a.txt".into())], true),
                    ],
                },
            ],
            tools: Arc::new(vec![]),
            max_tokens: 0,
        }
    }

    #[test]
    fn tool_result_images_follow_the_tool_messages_in_one_user_message() {
        assert_eq!(
            request_body(&cfg(), &tool_results_with_images()),
            json!({
                "model": "gpt-4.1",
                "max_completion_tokens": 8192,
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\":\"ls\"}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "two shots:\n[image 1 of this result follows in the next user message]\n[image 2 of this result follows in the next user message]"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "Error: a.txt"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "Images from tool call call_1:"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                    ]},
                    {"role": "user", "content": "compare them"},
                ],
            })
        );
    }

    #[test]
    fn an_image_type_openai_rejects_keeps_its_placeholder() {
        let req = ModelRequest {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    id: "call_9".into(),
                    content: vec![
                        ResultPart::Image {
                            mime_type: "image/svg+xml".into(),
                            data: "PHN2Zz4=".into(),
                        },
                        ResultPart::Image {
                            mime_type: "IMAGE/PNG".into(),
                            data: "iVBORw0KGgo=".into(),
                        },
                    ],
                    is_error: false,
                }],
            }],
            tools: Arc::new(Vec::new()),
            max_tokens: 0,
        };
        let body = request_body(&cfg(), &req);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "tool", "tool_call_id": "call_9", "content": "[image omitted: image/svg+xml, 5 B; the model takes png, jpeg, gif and webp images only]\n[image 1 of this result follows in the next user message]"},
                {"role": "user", "content": [
                    {"type": "text", "text": "Images from tool call call_9:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ]},
            ])
        );
    }

    #[test]
    fn a_users_image_follows_its_text_when_images_are_taken() {
        let req = ModelRequest {
            system: None,
            messages: vec![Message {
                role: Role::User,
                content: vec![
                    Block::Text("what is this?".into()),
                    Block::Image {
                        mime_type: "image/png".into(),
                        data: "iVBO".into(),
                    },
                ],
            }],
            tools: std::sync::Arc::new(Vec::new()),
            max_tokens: 0,
        };
        let body = |tool_images| {
            let cfg = ProviderConfig {
                tool_images: Some(tool_images),
                ..cfg()
            };
            request_body(&cfg, &req)["messages"][0]["content"].clone()
        };
        assert_eq!(
            body(true),
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
            ])
        );
        let without = body(false);
        assert_eq!(without[0]["text"], "what is this?");
        assert!(
            without[1]["text"]
                .as_str()
                .unwrap_or("")
                .starts_with("[image omitted: image/png"),
            "{without}"
        );
    }

    #[test]
    fn tool_images_follow_the_setting_and_the_host() {
        let req = tool_results_with_images();
        let sends_images = |setting: Option<bool>, base_url: &str| {
            let cfg = ProviderConfig {
                base_url: base_url.into(),
                tool_images: setting,
                ..cfg()
            };
            let body = request_body(&cfg, &req);
            let messages = body["messages"].as_array().expect("messages");
            let tool = messages[1]["content"].as_str().expect("text");
            let on = messages[3]["content"].is_array();
            // The note and the placeholder go together with the user message and its absence.
            assert_eq!(tool.contains("follows in the next user message"), on);
            assert_eq!(tool.contains("[image omitted: image/png, 8 B;"), !on);
            assert_eq!(messages.len(), if on { 5 } else { 4 }, "{body}");
            on
        };
        for (setting, url, want) in [
            (None, "https://api.openai.com/v1", true),
            (None, "https://API.OPENAI.COM:443/v1", true),
            (None, "http://localhost:11434/v1", false),
            (None, "https://api.openai.com.evil.example/v1", false),
            (None, "https://api.openai.com@evil.example/v1", false),
            (None, "https://openai.example/api.openai.com/v1", false),
            (None, "not a url", false),
            (Some(false), "https://api.openai.com/v1", false),
            (Some(true), "http://localhost:8000/v1", true),
        ] {
            assert_eq!(sends_images(setting, url), want, "{setting:?} {url}");
        }
    }

    #[test]
    fn request_body_omits_empty_tools_and_system() {
        let req = ModelRequest::user_says("hi", 64);
        assert_eq!(
            request_body(&cfg(), &req),
            json!({
                "model": "gpt-4.1",
                "max_completion_tokens": 64,
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hi"}],
            })
        );
    }

    #[test]
    fn the_output_cap_field_follows_the_setting_and_the_host() {
        let req = ModelRequest::user_says("hi", 0);
        let body = |field: MaxTokensField, base_url: &str| {
            let cfg = ProviderConfig {
                base_url: base_url.into(),
                max_tokens: 500,
                max_tokens_field: field,
                ..cfg()
            };
            request_body(&cfg, &req)
        };
        let with = |key: &str| {
            let mut v = json!({
                "model": "gpt-4.1",
                "stream": true,
                "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hi"}],
            });
            v[key] = json!(500);
            v
        };
        let (mt, mct) = ("max_tokens", "max_completion_tokens");
        for (field, url, want) in [
            (MaxTokensField::Auto, "https://api.openai.com/v1", mct),
            (MaxTokensField::Auto, "https://API.OPENAI.COM/v1", mct),
            (MaxTokensField::Auto, "https://api.openai.com:443/v1", mct),
            (MaxTokensField::Auto, "http://localhost:11434/v1", mt),
            (
                MaxTokensField::Auto,
                "https://api.openai.com.evil.example/v1",
                mt,
            ),
            (
                MaxTokensField::Auto,
                "https://api.openai.com@evil.example/v1",
                mt,
            ),
            (
                MaxTokensField::Auto,
                "https://openai.example/api.openai.com/v1",
                mt,
            ),
            (MaxTokensField::Auto, "not a url", mt),
            (MaxTokensField::MaxTokens, "https://api.openai.com/v1", mt),
            (
                MaxTokensField::MaxCompletionTokens,
                "http://localhost:8000/v1",
                mct,
            ),
        ] {
            assert_eq!(body(field, url), with(want), "{field:?} {url}");
        }
    }

    /// Two parallel tool calls whose argument pieces interleave, text with multi-byte
    /// characters, a usage chunk with no choices, then `[DONE]`.
    pub(crate) const STREAM: &str = concat!(
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Grüße \"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"→ 🌍\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pa\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"q\\\":\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":\\\"ä.txt\\\"}\"}},{\"index\":1,\"function\":{\"arguments\":\" \\\"x\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":12,\"total_tokens\":42,\"prompt_tokens_details\":{\"cached_tokens\":24}}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn decodes_parallel_tool_calls_split_anywhere() {
        for n in [1, 2, 3, 5, 7, 11, 64, 4096] {
            let (reply, events) =
                decode_chunks(ProviderKind::OpenAi, &split_every(STREAM.as_bytes(), n));
            assert_eq!(
                reply,
                Some(Ok(ModelReply {
                    content: vec![
                        Block::Text("Grüße → 🌍".into()),
                        Block::ToolUse {
                            id: "call_a".into(),
                            name: "read".into(),
                            input: json!({"path": "ä.txt"}),
                        },
                        Block::ToolUse {
                            id: "call_b".into(),
                            name: "grep".into(),
                            input: json!({"q": "x"}),
                        },
                    ],
                    stop_reason: StopReason::ToolUse,
                    usage: Usage {
                        input_tokens: 30,
                        output_tokens: 12,
                        cached_input_tokens: 24,
                    },
                })),
                "chunk size {n}"
            );
            assert_eq!(
                events,
                vec![
                    StreamEvent::TextDelta("Grüße ".into()),
                    StreamEvent::TextDelta("→ 🌍".into()),
                    StreamEvent::ToolCallStarted {
                        id: "call_a".into(),
                        name: "read".into()
                    },
                    StreamEvent::ToolCallStarted {
                        id: "call_b".into(),
                        name: "grep".into()
                    },
                ],
                "chunk size {n}"
            );
        }
    }

    #[test]
    fn ollama_style_whole_calls_without_index_or_finish_tool_calls() {
        let s = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_x\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}},{\"id\":\"call_y\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"d\\\":1}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (reply, _) = decode_chunks(ProviderKind::OpenAi, &[s.as_bytes()]);
        let reply = reply.expect("done").expect("ok");
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
        assert_eq!(
            reply.content,
            vec![
                Block::ToolUse {
                    id: "call_x".into(),
                    name: "now".into(),
                    input: json!({})
                },
                Block::ToolUse {
                    id: "call_y".into(),
                    name: "ls".into(),
                    input: json!({"d": 1})
                },
            ]
        );
        assert_eq!(reply.usage, Usage::default());
    }

    #[test]
    fn finish_reasons_map() {
        for (r, want) in [
            ("stop", StopReason::EndTurn),
            ("length", StopReason::MaxTokens),
            ("content_filter", StopReason::Other("content_filter".into())),
        ] {
            let s = format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"x\"}},\"finish_reason\":\"{r}\"}}]}}\n\ndata: [DONE]\n\n"
            );
            let (reply, _) = decode_chunks(ProviderKind::OpenAi, &[s.as_bytes()]);
            assert_eq!(reply.expect("done").expect("ok").stop_reason, want);
        }
    }

    #[test]
    fn bad_arguments_are_kept_raw_for_the_engine() {
        // Cut off at the output cap (finish_reason "length") inside the second call.
        let s = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c1\",\"function\":{\"name\":\"edit\",\"arguments\":\"{\\\"a\\\": \"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"tru\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (reply, _) = decode_chunks(ProviderKind::OpenAi, &[s.as_bytes()]);
        let reply = reply.expect("done").expect("a reply, not an error");
        assert_eq!(reply.stop_reason, StopReason::MaxTokens);
        assert_eq!(
            reply.content,
            tool_uses(&[
                ("c0", "read", json!({"path": "a"})),
                ("c1", "edit", json!("{\"a\": tru"))
            ])
        );
        // Empty arguments still mean `{}`; a JSON string is not an object, so it stays raw.
        let s = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":{\"name\":\"now\",\"arguments\":\" \"}},{\"index\":1,\"id\":\"c1\",\"function\":{\"name\":\"ls\",\"arguments\":\"\\\"x\\\"\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (reply, _) = decode_chunks(ProviderKind::OpenAi, &[s.as_bytes()]);
        assert_eq!(
            reply.expect("done").expect("ok").content,
            tool_uses(&[("c0", "now", json!({})), ("c1", "ls", json!("\"x\""))])
        );
    }

    #[test]
    fn a_malformed_call_is_replayed_with_empty_arguments() {
        let req = ModelRequest::of(vec![Message {
            role: Role::Assistant,
            content: tool_uses(&[
                ("c0", "read", json!({"path": "a"})),
                ("c1", "edit", json!("{\"a\": tru")),
            ]),
        }]);
        assert_eq!(
            request_body(&cfg(), &req)["messages"],
            json!([{"role": "assistant", "content": null, "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
                {"id": "c1", "type": "function", "function": {"name": "edit", "arguments": "{}"}},
            ]}])
        );
    }

    #[test]
    fn an_error_chunk_and_a_missing_done() {
        let s = "data: {\"error\":{\"message\":\"model is overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n";
        let (reply, _) = decode_chunks(ProviderKind::OpenAi, &[s.as_bytes()]);
        assert_eq!(
            reply,
            Some(Err(DecodeError::Api(ApiError {
                kind: Some("server_error".into()),
                message: "model is overloaded".into()
            })))
        );
        let cut = &STREAM[..STREAM.find("data: [DONE]").expect("marker")];
        let (reply, _) = decode_chunks(ProviderKind::OpenAi, &[cut.as_bytes()]);
        assert_eq!(reply, None);
    }

    #[test]
    fn error_bodies_parse_or_fall_back_to_a_snippet() {
        assert_eq!(
            parse_error(br#"{"error":{"message":"Incorrect API key provided: sk-abc***","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#),
            ApiError {
                kind: Some("invalid_api_key".into()),
                message: "Incorrect API key provided: sk-abc***".into()
            }
        );
        assert_eq!(
            parse_error(br#"{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#),
            ApiError {
                kind: Some("api_error".into()),
                message: "model \"llama9\" not found, try pulling it first".into()
            }
        );
        assert_eq!(
            parse_error(br#"{"error":{"message":"bad","type":"","code":400}}"#),
            ApiError {
                kind: None,
                message: "bad".into()
            }
        );
        assert_eq!(
            parse_error(br#"{"detail":"Not Found"}"#).message,
            "Not Found"
        );
        assert_eq!(
            parse_error(b"404 page not found\n").message,
            "404 page not found"
        );
    }
}
