//! What both wire formats share: the stream decoder of either behind one type, and how an
//! image a model cannot take is recognised and replaced by a placeholder. Pure: no IO.

use harness9_actors::net::truncate_chars;
use harness9_actors::protocol::sse::Event;
use tokio::sync::mpsc::UnboundedSender;

use super::config::ProviderKind;
use super::errors::DecodeError;
use super::types::{tool_input, Block, ModelReply, StopReason, StreamEvent, Usage};
use super::{anthropic, openai};

/// A finished reply of either format: its blocks in order (empty text left out), the stop
/// reason from the provider's word for it (`stop_reason`, `finish_reason`), its usage.
pub(crate) fn assemble_reply(
    kind: ProviderKind,
    parts: Vec<ReplyPart>,
    word: Option<&str>,
    usage: Usage,
) -> ModelReply {
    let content: Vec<Block> = parts
        .into_iter()
        .filter_map(|p| match p {
            ReplyPart::Text(t) if t.is_empty() => None,
            ReplyPart::Text(t) => Some(Block::Text(t)),
            // Argument text that is not a JSON object stays raw for the engine.
            ReplyPart::Call { id, name, args } => Some(Block::ToolUse {
                id,
                name,
                input: match args {
                    CallArgs::Text(json) => tool_input(&json),
                    CallArgs::Value(v) => v,
                },
            }),
        })
        .collect();
    let has_calls = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    ModelReply {
        stop_reason: stop_reason(kind, word, has_calls),
        content,
        usage,
    }
}

/// A piece of a decoded reply, as either format assembles it.
pub(crate) enum ReplyPart {
    /// Text.
    Text(String),
    /// A tool call.
    Call {
        id: String,
        name: String,
        args: CallArgs,
    },
}

/// A tool call's arguments: the streamed text, or a value the stream gave whole.
pub(crate) enum CallArgs {
    Text(String),
    Value(serde_json::Value),
}

/// The stop reason from the provider's word for it. Anthropic's `stop_reason` as it says it
/// (none at all is `Other("none")`); OpenAI's `finish_reason`, where some compatible servers
/// say "stop" (or nothing) after tool calls.
fn stop_reason(kind: ProviderKind, word: Option<&str>, has_calls: bool) -> StopReason {
    match kind {
        ProviderKind::Anthropic => match word {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
            None => StopReason::Other("none".to_owned()),
        },
        ProviderKind::OpenAi => match word {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("stop") | None if has_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
        },
    }
}

/// The largest single SSE event accepted from a provider.
pub(super) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The media type model APIs take for an image: png, jpeg, gif or webp, lowercased (`image/jpg`
/// read as jpeg); `None` for any other type (an SVG from a server, say), which would fail every
/// later request of the conversation with a 400, since the image stays in the history.
pub fn model_image_type(mime_type: &str) -> Option<&'static str> {
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

    pub(super) fn end_marker(&self) -> &'static str {
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
    let mut parser = harness9_actors::protocol::sse::SseParser::new(MAX_EVENT_BYTES);
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
}
