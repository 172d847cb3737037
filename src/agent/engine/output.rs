//! Tool results on their way to the model: content blocks become result parts (images kept for
//! providers that take them), and a result over the output budget is cut for the model with a
//! note, while the whole of it is written to a file the model is told about.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use harness9_actors::protocol::render::human_bytes;
use harness9_actors::protocol::types::{CallToolResult, ContentBlock};

use crate::agent::model::ResultPart;

/// The first characters of the note appended to a result that was cut (compaction keeps it).
pub(super) const CUT_NOTE_HEAD: &str = "\n[output cut: ";

/// Bytes per token, for the estimate.
const BYTES_PER_TOKEN: usize = 4;

/// A tool result in the model's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResult {
    /// What the model gets.
    pub parts: Vec<ResultPart>,
    /// Whether it is an error.
    pub is_error: bool,
    /// The full text (for events and the transcript).
    pub text: String,
    /// Where the whole result was written when it was cut.
    pub spilled: Option<PathBuf>,
}

/// Converts a call's result: text blocks joined, images kept as images, everything else rendered
/// as text.
pub fn from_result(r: &CallToolResult) -> (Vec<ResultPart>, String) {
    let mut parts = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, parts: &mut Vec<ResultPart>| {
        if !text.is_empty() {
            parts.push(ResultPart::Text(std::mem::take(text)));
        }
    };
    for block in &r.content {
        match block {
            ContentBlock::Image { data, mime_type } => {
                flush(&mut text, &mut parts);
                parts.push(ResultPart::Image {
                    mime_type: mime_type.clone(),
                    data: data.clone(),
                });
            }
            other => {
                let single = CallToolResult {
                    content: vec![other.clone()],
                    structured_content: None,
                    is_error: false,
                    result_type: None,
                    schema_error: None,
                };
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&single.text());
            }
        }
    }
    if r.content.is_empty() {
        if let Some(s) = &r.structured_content {
            text.push_str(&s.to_string());
        }
    }
    // A structuredContent that does not match the outputSchema: the model is told.
    if let Some(note) = r.schema_note() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&note);
    }
    flush(&mut text, &mut parts);
    (parts, r.text())
}

static SPILLS: AtomicUsize = AtomicUsize::new(0);

/// Applies the budget (in estimated tokens) to a result's text parts. Over the budget, the text
/// is cut at a char boundary, the whole text is written under `spill_dir`, and a note tells the
/// model both facts.
pub fn apply_budget(
    mut parts: Vec<ResultPart>,
    full_text: &str,
    budget_tokens: usize,
    spill_dir: &Path,
    tool: &str,
) -> (Vec<ResultPart>, Option<PathBuf>) {
    let text_bytes: usize = parts
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.len(),
            _ => 0,
        })
        .sum();
    let budget_bytes = budget_tokens.saturating_mul(BYTES_PER_TOKEN);
    if text_bytes <= budget_bytes {
        return (parts, None);
    }
    let n = SPILLS.fetch_add(1, Ordering::Relaxed);
    let safe: String = tool
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(60)
        .collect();
    let path = spill_dir.join(format!("{}-{n}-{safe}.txt", std::process::id()));
    let written = std::fs::create_dir_all(spill_dir)
        .and_then(|_| std::fs::write(&path, full_text))
        .map(|_| path.clone());
    let mut left = budget_bytes;
    for p in parts.iter_mut() {
        if let ResultPart::Text(t) = p {
            if t.len() <= left {
                left -= t.len();
            } else {
                let mut cut = left;
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t.truncate(cut);
                left = 0;
            }
        }
    }
    parts.retain(|p| !matches!(p, ResultPart::Text(t) if t.is_empty()));
    let note = match &written {
        Ok(path) => format!(
            "{CUT_NOTE_HEAD}the result is {} (about {} tokens), over the budget of {budget_tokens} tokens; the first {} are above. The whole result is in {}: read parts of it with read_file (offset/limit) or grep]",
            human_bytes(text_bytes),
            text_bytes / BYTES_PER_TOKEN,
            human_bytes(budget_bytes),
            path.display()
        ),
        Err(e) => format!(
            "{CUT_NOTE_HEAD}the result is {}, over the budget of {budget_tokens} tokens; the first {} are above. It could not be saved to {}: {e}]",
            human_bytes(text_bytes),
            human_bytes(budget_bytes),
            spill_dir.display()
        ),
    };
    parts.push(ResultPart::Text(note));
    (parts, written.ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_stay_images_and_text_is_joined() {
        let r = CallToolResult {
            content: vec![
                ContentBlock::Text { text: "a".into() },
                ContentBlock::Text { text: "b".into() },
                ContentBlock::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
                ContentBlock::Text { text: "c".into() },
            ],
            structured_content: None,
            is_error: false,
            result_type: None,
            schema_error: None,
        };
        let (parts, text) = from_result(&r);
        assert_eq!(
            parts,
            vec![
                ResultPart::Text("a\nb".into()),
                ResultPart::Image {
                    mime_type: "image/png".into(),
                    data: "AAAA".into()
                },
                ResultPart::Text("c".into())
            ]
        );
        assert!(text.contains("[image image/png"));
    }

    #[test]
    fn over_the_budget_is_cut_and_spilled_whole() {
        let dir = std::env::temp_dir().join(format!("harness9-spill-test-{}", std::process::id()));
        let big = "é".repeat(5000); // 10,000 bytes
        let (parts, path) = apply_budget(
            vec![ResultPart::Text(big.clone())],
            &big,
            1000,
            &dir,
            "mcp__x__big",
        );
        let path = path.expect("spilled");
        assert_eq!(std::fs::read_to_string(&path).expect("spill file"), big);
        let ResultPart::Text(head) = &parts[0] else {
            panic!("{parts:?}")
        };
        assert_eq!(head.len(), 4000);
        let ResultPart::Text(note) = &parts[1] else {
            panic!("{parts:?}")
        };
        assert!(note.contains(&path.display().to_string()), "{note}");
        assert!(note.contains("budget of 1000 tokens"), "{note}");
        let (small, none) = apply_budget(vec![ResultPart::Text("x".into())], "x", 1000, &dir, "t");
        assert_eq!((small.len(), none), (1, None));
        let _ = std::fs::remove_dir_all(dir);
    }
}
