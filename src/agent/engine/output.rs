//! Tool results on their way to the model: content blocks become result parts (images kept for
//! providers that take them), and a result over the output budget is cut for the model with a
//! note, while the whole of it is written to a file the model is told about.

use std::path::{Path, PathBuf};

use harness9_actors::protocol::render::human_bytes;
use harness9_actors::protocol::types::{CallToolResult, ContentBlock};

use crate::model::ResultPart;

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
/// as text. Takes the result by value, so a big text block is moved, never copied.
pub fn from_result(r: CallToolResult) -> Vec<ResultPart> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, parts: &mut Vec<ResultPart>| {
        if !text.is_empty() {
            parts.push(ResultPart::Text(std::mem::take(text)));
        }
    };
    let note = r.schema_note();
    let empty = r.content.is_empty();
    for block in r.content {
        match block {
            ContentBlock::Image { data, mime_type } => {
                flush(&mut text, &mut parts);
                parts.push(ResultPart::Image { mime_type, data });
            }
            ContentBlock::Text { text: t } if text.is_empty() => text = t,
            other => {
                let single = CallToolResult {
                    content: vec![other],
                    structured_content: None,
                    is_error: false,
                    result_type: None,
                    schema_error: None,
                    task: None,
                };
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&single.text());
            }
        }
    }
    if empty {
        if let Some(s) = &r.structured_content {
            text.push_str(&s.to_string());
        }
    }
    // A structuredContent that does not match the outputSchema: the model is told.
    if let Some(note) = note {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&note);
    }
    flush(&mut text, &mut parts);
    parts
}

/// The bytes of text in `parts`.
pub fn text_bytes(parts: &[ResultPart]) -> usize {
    parts
        .iter()
        .map(|p| match p {
            ResultPart::Text(t) => t.len(),
            _ => 0,
        })
        .sum()
}

/// The text parts of `parts`, one after the other (a newline between two).
pub fn joined_text(parts: &[ResultPart]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            ResultPart::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// Writes the text parts to a new private file in the session directory under `spill_dir`
/// (see [`harness9_base::private_fs`]), within the session's spill cap; its path.
fn spill(
    parts: &[ResultPart],
    bytes: usize,
    spill_dir: &Path,
    tool: &str,
) -> Result<PathBuf, String> {
    use harness9_base::private_fs;
    use std::io::Write as _;
    if !private_fs::reserve_spill(bytes as u64) {
        return Err(format!(
            "this session already saved {} of cut results, its cap (HARNESS9_SPILL_MAX)",
            human_bytes(usize::try_from(private_fs::spill_cap()).unwrap_or(usize::MAX))
        ));
    }
    let written = (|| {
        let (path, file) =
            private_fs::new_session_file(spill_dir, "result", &format!("{tool}.txt"))?;
        let mut out = std::io::BufWriter::new(file);
        let mut first = true;
        for p in parts {
            if let ResultPart::Text(t) = p {
                if !first {
                    out.write_all(b"\n")?;
                }
                first = false;
                out.write_all(t.as_bytes())?;
            }
        }
        out.flush()?;
        Ok::<_, std::io::Error>(path)
    })();
    written.map_err(|e| {
        private_fs::release_spill(bytes as u64);
        format!("it could not be saved under {}: {e}", spill_dir.display())
    })
}

/// Applies the budget (in estimated tokens) to a result's text parts. Over the budget, the whole
/// text is written to a private file in the session's directory under `spill_dir`, the text is
/// cut at a char boundary, and a note tells the model both facts (or why nothing was saved).
pub fn apply_budget(
    mut parts: Vec<ResultPart>,
    budget_tokens: usize,
    spill_dir: &Path,
    tool: &str,
) -> (Vec<ResultPart>, Option<PathBuf>) {
    let text_bytes = text_bytes(&parts);
    let budget_bytes = budget_tokens.saturating_mul(BYTES_PER_TOKEN);
    if text_bytes <= budget_bytes {
        return (parts, None);
    }
    let written = spill(&parts, text_bytes, spill_dir, tool);
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
                // The rest is in the file: give its memory back now.
                t.shrink_to_fit();
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
            "{CUT_NOTE_HEAD}the result is {}, over the budget of {budget_tokens} tokens; the first {} are above; the rest is lost: {e}]",
            human_bytes(text_bytes),
            human_bytes(budget_bytes),
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
            task: None,
        };
        let text = r.text();
        let parts = from_result(r);
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
        let (small, none) = apply_budget(vec![ResultPart::Text("x".into())], 1000, &dir, "t");
        assert_eq!((small.len(), none), (1, None));
        let _ = std::fs::remove_dir_all(dir);
    }
}
