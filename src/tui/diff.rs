//! The edit tools' changes drawn as a coloured unified diff (removed red, added green, hunk
//! headers cyan, the file bold): in the question box before the call runs, in the transcript
//! after it ran. Every line is sanitized (the text is the model's and the repository's).

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::widgets::{truncate_line, DIM};
use harness9_agent::builtins::diff::{DiffKind, DiffLine};
use harness9_base::sanitize::clean_line;

/// The rows of `lines` at `width`, one per line (cut at the width), at most `max` of them:
/// past it a dim `… N more lines`.
pub(super) fn rows(lines: &[DiffLine], width: usize, max: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let shown = if lines.len() > max {
        max.saturating_sub(1)
    } else {
        lines.len()
    };
    for l in &lines[..shown] {
        let text = clean_line(&l.text).into_owned();
        let line = match l.kind {
            DiffKind::File => Line::from(Span::styled(text, Style::new().bold())),
            DiffKind::Hunk => Line::from(Span::styled(text, Style::new().fg(Color::Cyan))),
            DiffKind::Context => Line::from(Span::styled(format!(" {text}"), DIM)),
            DiffKind::Removed => Line::from(Span::styled(
                format!("-{text}"),
                Style::new().fg(Color::Red),
            )),
            DiffKind::Added => Line::from(Span::styled(
                format!("+{text}"),
                Style::new().fg(Color::Green),
            )),
            DiffKind::Note => Line::from(Span::styled(text, DIM)),
        };
        out.push(truncate_line(
            Line::from(
                std::iter::once(Span::raw("  "))
                    .chain(line.spans)
                    .collect::<Vec<_>>(),
            ),
            width,
        ));
    }
    if shown < lines.len() {
        out.push(Line::styled(
            format!("  … {} more lines", lines.len() - shown),
            DIM,
        ));
    }
    out
}
