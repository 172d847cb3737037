//! Compaction: older turns replaced by a summary the model writes, so a conversation never
//! outgrows the model's context window. Used by `/compact [focus]`, automatically before a
//! turn or between two steps once the last request used [`EngineConfig::compact_at`] of the
//! window, and once per step when the provider refuses a request as too long.
//!
//! The summary request is a single user message: the conversation rendered as text (each
//! block cut to a few thousand characters, the whole to [`MAX_RENDERED_CHARS`], newest kept),
//! then the instructions. Paths, and the files where cut tool results were saved, are asked
//! to be kept verbatim.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::output::CUT_NOTE_HEAD;
use super::EngineConfig;
use crate::model::{
    result_text, Block, Message, Model, ModelError, ModelRequest, ResultPart, Role, Usage,
};

/// The rendered conversation sent for a summary is cut to its newest this many characters.
pub const MAX_RENDERED_CHARS: usize = 240_000;
/// Each text or tool result in it is cut to this many characters.
const MAX_BLOCK_CHARS: usize = 4_000;

/// The first words of the message that carries a summary (the TUI and tests recognise it).
pub const SUMMARY_HEAD: &str = "[This conversation was compacted. Summary of the earlier part:]";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// Messages replaced.
    pub replaced: usize,
    /// Estimated tokens of the conversation before and after (characters / 4).
    pub tokens_before: usize,
    /// See `tokens_before`.
    pub tokens_after: usize,
    /// What the summary request itself used (counted in the session's cost).
    pub usage: Usage,
}

/// Estimated tokens of `messages` (characters / 4; images count as 1,000).
pub fn estimate_tokens(messages: &[Message]) -> usize {
    let mut chars = 0usize;
    for m in messages {
        for b in &m.content {
            chars += match b {
                Block::Text(t) => t.len(),
                Block::Image { .. } => 4_000,
                Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
                Block::ToolResult { content, .. } => content
                    .iter()
                    .map(|p| match p {
                        ResultPart::Text(t) => t.len(),
                        ResultPart::Image { .. } => 4_000,
                    })
                    .sum(),
            };
        }
    }
    chars / 4
}

/// A tool result cut to `max` characters, keeping the note that says where the whole result was
/// saved: the note is at the end of a result that is itself over the budget, so a plain cut
/// would always lose the path.
fn cut_result(s: &str, max: usize) -> String {
    match s.rfind(CUT_NOTE_HEAD) {
        Some(at) if s.len() > max => format!("{}{}", cut(&s[..at], max), &s[at..]),
        _ => cut(s, max),
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more characters]", &s[..end], s.len() - end)
}

/// The conversation as text for the summary request, newest kept when it is too long.
fn render(messages: &[Message]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        for b in &m.content {
            parts.push(match (m.role, b) {
                (Role::User, Block::Text(t)) => {
                    format!("USER: {}", cut(t, MAX_BLOCK_CHARS))
                }
                (Role::Assistant, Block::Text(t)) => {
                    format!("ASSISTANT: {}", cut(t, MAX_BLOCK_CHARS))
                }
                (_, Block::Image { mime_type, .. }) => format!("USER: [an image, {mime_type}]"),
                (_, Block::ToolUse { name, input, .. }) => {
                    format!("TOOL CALL {name} {}", cut(&input.to_string(), 1_000))
                }
                (
                    _,
                    Block::ToolResult {
                        content, is_error, ..
                    },
                ) => format!(
                    "TOOL {}: {}",
                    if *is_error { "ERROR" } else { "RESULT" },
                    cut_result(&result_text(content), MAX_BLOCK_CHARS)
                ),
            });
        }
    }
    let mut total = 0usize;
    let mut kept = Vec::new();
    for p in parts.iter().rev() {
        total += p.len() + 2;
        if total > MAX_RENDERED_CHARS {
            kept.push("[earlier part omitted]".to_owned());
            break;
        }
        kept.push(p.clone());
    }
    kept.reverse();
    kept.join("\n\n")
}

/// Asks the model for a summary of `messages` and returns the two messages that replace them,
/// with what the request used.
pub async fn summarize(
    provider: &dyn Model,
    config: &Arc<EngineConfig>,
    messages: &[Message],
    focus: Option<&str>,
    cancel: &CancellationToken,
) -> Result<(Vec<Message>, Usage), ModelError> {
    let mut ask = format!(
        "<conversation>\n{}\n</conversation>\n\nSummarize the conversation above so that you can \
         continue the work from the summary alone: the user's goals and requests, decisions made, \
         facts learned, every file and path touched or mentioned (verbatim, including files where \
         tool output was saved), commands that worked or failed, and what remains to do. Be \
         concise; write only the summary.",
        render(messages)
    );
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        ask.push_str("\nFocus especially on: ");
        ask.push_str(f.trim());
    }
    let req = ModelRequest {
        system: config.system.clone(),
        messages: vec![Message {
            role: Role::User,
            content: vec![Block::Text(ask)],
        }],
        tools: Arc::new(Vec::new()),
        max_tokens: 0,
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let reply = provider.complete(&req, &tx, cancel).await?;
    let summary = reply.text();
    let replacement = vec![
        Message {
            role: Role::User,
            content: vec![Block::Text(format!("{SUMMARY_HEAD}\n\n{summary}"))],
        },
        Message {
            role: Role::Assistant,
            content: vec![Block::Text(
                "Understood. I will continue from this summary.".to_owned(),
            )],
        },
    ];
    Ok((replacement, reply.usage))
}

/// Whether a model error says the request was longer than the model's context window.
pub fn is_context_overflow(e: &ModelError) -> bool {
    let ModelError::BadRequest { message, .. } = e else {
        return false;
    };
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context length",
        "context_length_exceeded",
        "context window",
        "maximum context",
        "too many tokens",
        "input is too long",
    ]
    .iter()
    .any(|p| m.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rendering_is_bounded_and_keeps_the_newest() {
        let big = "x".repeat(10_000);
        let msgs: Vec<Message> = (0..200)
            .map(|i| Message {
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                content: vec![Block::Text(format!("m{i} {big}"))],
            })
            .collect();
        let r = render(&msgs);
        assert!(r.len() <= MAX_RENDERED_CHARS + 100, "{}", r.len());
        assert!(r.starts_with("[earlier part omitted]"));
        assert!(r.contains("ASSISTANT: m199 "));
        assert!(!r.contains("USER: m0 "));
        assert!(estimate_tokens(&msgs) > 400_000);
    }

    #[test]
    fn a_cut_result_keeps_the_path_of_its_saved_whole() {
        let note = "\n[output cut: the result is 2.0 MiB (about 500000 tokens), over the budget \
                    of 25000 tokens; the first 97.7 KiB are above. The whole result is in \
                    /tmp/spill/42-0-mcp__fs__read.txt: read parts of it with read_file]";
        let result = format!("{}{note}", "line\n".repeat(20_000));
        let msgs = vec![Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                id: "t1".to_owned(),
                content: vec![ResultPart::Text(result)],
                is_error: false,
            }],
        }];
        let r = render(&msgs);
        assert!(r.contains("/tmp/spill/42-0-mcp__fs__read.txt"), "{r}");
        assert!(r.len() < MAX_BLOCK_CHARS + 1_000, "{}", r.len());
        // A short result is kept whole, note and all.
        assert_eq!(cut_result("ok", 10), "ok");
    }

    #[test]
    fn overflow_errors_are_recognised() {
        let e = |m: &str| ModelError::BadRequest {
            status: 400,
            message: m.to_owned(),
        };
        assert!(is_context_overflow(&e(
            "the model refused: prompt is too long: 210000 tokens > 200000 maximum"
        )));
        assert!(is_context_overflow(&e(
            "This model's maximum context length is 128000 tokens (context_length_exceeded)"
        )));
        assert!(!is_context_overflow(&e("invalid tool schema")));
    }
}
