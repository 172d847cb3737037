//! The neutral conversation types the engine speaks and both wire formats translate:
//! messages and their blocks, the request, the streamed progress events and the reply, and how
//! a tool call's streamed argument text becomes its input.

use std::sync::Arc;
use std::time::Duration;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (and tool results, which the APIs carry in user turns).
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// Its name on the wire (both model APIs, MCP sampling): `user`, `assistant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One conversation turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who said it; tool results travel in [`Role::User`] turns.
    pub role: Role,
    /// In order: text and tool calls from the assistant, text and tool results from the user.
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
    /// An image the user gave (user messages): an MCP prompt's image, for one.
    Image {
        /// e.g. `image/png`; a type the model does not take is sent as a text placeholder.
        mime_type: String,
        /// The image bytes in standard base64, without a `data:` prefix.
        data: String,
    },
    /// The outcome of a tool call (user messages).
    ToolResult {
        /// The id of the [`Block::ToolUse`] it answers.
        id: String,
        /// The tool's output in order; text and images may alternate.
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
    /// note in the `tool` message and, with [`ProviderConfig::tool_images`](super::ProviderConfig::tool_images) on, the image in a
    /// `user` message after the tool messages, else a text placeholder.
    Image {
        /// As the tool gave it, e.g. `image/png`; a type the model does not take (see
        /// `model_image_type`) is sent as a text placeholder.
        mime_type: String,
        /// The image bytes in standard base64, without a `data:` prefix.
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
            tools: Arc::new(Vec::new()),
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
    /// Shown to the model, which decides by it when to call the tool.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

/// One model call's input.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// Sent first, before the messages; `None` or empty sends none.
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
        /// The id the finished [`Block::ToolUse`] will carry.
        id: String,
        /// As the model wrote it, which need not be an offered tool.
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

impl Usage {
    /// Adds `other` to this.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }
}

/// One model call's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// [`Block::Text`] and [`Block::ToolUse`] only, in the order the model produced them.
    pub content: Vec<Block>,
    /// [`StopReason::ToolUse`] when `content` holds calls the engine should run.
    pub stop_reason: StopReason,
    /// What this call alone cost; the engine sums the calls of a turn.
    pub usage: Usage,
}

impl ModelReply {
    /// The reply's text blocks, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool result's parts as text, one per line; an image as `[image]`.
pub fn result_text(parts: &[ResultPart]) -> String {
    parts
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.as_str(),
            ResultPart::Image { .. } => "[image]",
        })
        .collect::<Vec<_>>()
        .join("\n")
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
