//! The text rendering of a tool result, for the model and the terminal.

use std::fmt::Write;

use super::types::{CallToolResult, ContentBlock};

/// Human size of base64 data, e.g. `1.2 KB`.
fn size_of_base64(data: &str) -> String {
    let bytes = data.len() / 4 * 3;
    human_bytes(bytes)
}

/// `812 B`, `1.2 KB`, `3.4 MB`.
pub fn human_bytes(n: usize) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    }
}

/// How the line that [`CallToolResult::schema_note`] adds begins (the TUI marks the call).
pub const SCHEMA_NOTE_HEAD: &str = "[harness9 checked the result: ";

impl CallToolResult {
    /// The line that reports a `structuredContent` that does not match the tool's
    /// `outputSchema` (set by the registry), shown after the result.
    pub fn schema_note(&self) -> Option<String> {
        self.schema_error
            .as_ref()
            .map(|e| format!("{SCHEMA_NOTE_HEAD}{e}]"))
    }

    /// Text blocks joined by newlines; other blocks summarised in brackets; the structured content
    /// as JSON when there is no text at all; then the schema mismatch, if any.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut any_text = false;
        for block in &self.content {
            if !out.is_empty() {
                out.push('\n');
            }
            match block {
                ContentBlock::Text { text } => {
                    any_text = true;
                    out.push_str(text);
                }
                ContentBlock::Image { data, mime_type } => {
                    let _ = write!(out, "[image {mime_type} {}]", size_of_base64(data));
                }
                ContentBlock::Audio { data, mime_type } => {
                    let _ = write!(out, "[audio {mime_type} {}]", size_of_base64(data));
                }
                ContentBlock::Resource { resource } => match &resource.text {
                    Some(text) => {
                        any_text = true;
                        out.push_str(text);
                    }
                    None => {
                        let size = resource.blob.as_deref().map(size_of_base64);
                        let _ = write!(
                            out,
                            "[resource {} {} {}]",
                            resource.uri,
                            resource
                                .mime_type
                                .as_deref()
                                .unwrap_or("application/octet-stream"),
                            size.unwrap_or_default()
                        );
                    }
                },
                ContentBlock::ResourceLink { uri, name, .. } => {
                    let _ = write!(out, "[resource_link {name} {uri}]");
                }
                ContentBlock::Unknown { kind } => {
                    let _ = write!(out, "[{kind} block]");
                }
            }
        }
        if !any_text {
            if let Some(s) = &self.structured_content {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&s.to_string());
            }
        }
        if let Some(note) = self.schema_note() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&note);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_text_and_summaries() {
        let r = CallToolResult {
            content: vec![
                ContentBlock::Text { text: "a".into() },
                ContentBlock::Image {
                    data: "A".repeat(1640),
                    mime_type: "image/png".into(),
                },
                ContentBlock::Text { text: "b".into() },
            ],
            structured_content: None,
            is_error: false,
            result_type: None,
            schema_error: None,
            task: None,
        };
        assert_eq!(r.text(), "a\n[image image/png 1.2 KB]\nb");
    }
}
