//! Pieces every feature's drawing shares: the dim style, the modal frame and the rows a modal
//! keeps besides its body, the scroll keys of a modal body, word wrapping, and cutting text to
//! a width.

use crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The style of secondary text: hints, key help, separators, folded counts.
pub(super) const DIM: Style = Style::new().fg(Color::DarkGray);

/// Rows the border of a [`modal_block`] takes: its top and bottom lines.
pub(super) const BORDER_ROWS: u16 = 2;
/// Rows of a modal's header line above its scrolling body: the panel's server tabs, the head of
/// an expanded trace message.
pub(super) const HEADER_ROWS: u16 = 1;
/// Rows of a modal's key-help line below its body.
pub(super) const KEYS_ROWS: u16 = 1;

/// The frame of a modal: a border on every side with `title` in bold.
pub(super) fn modal_block(title: &str) -> Block<'static> {
    Block::new()
        .borders(Borders::ALL)
        .border_style(Style::new().fg(Color::Blue))
        .title(Span::styled(format!(" {title} "), Style::new().bold()))
}

/// Applies a scroll key (↑↓/jk by one, PgUp/PgDn by `page`, Home/End/g/G to the ends) to `pos`,
/// kept within `0..=max`; false when `key` is not a scroll key.
pub(super) fn scroll_by(pos: &mut usize, key: KeyCode, page: usize, max: usize) -> bool {
    match key {
        KeyCode::Up | KeyCode::Char('k') => *pos = pos.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => *pos = (*pos + 1).min(max),
        KeyCode::PageUp => *pos = pos.saturating_sub(page),
        KeyCode::PageDown => *pos = (*pos + page).min(max),
        KeyCode::Home | KeyCode::Char('g') => *pos = 0,
        KeyCode::End | KeyCode::Char('G') => *pos = max,
        _ => return false,
    }
    true
}

/// Cuts a line to `width` columns, ending with `…` when cut.
pub(super) fn truncate_line(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let mut out = Vec::new();
    let mut used = 0;
    let limit = width.saturating_sub(1);
    for span in line.spans {
        let mut text = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > limit {
                break;
            }
            used += w;
            text.push(c);
        }
        let cut = text.len() < span.content.len();
        out.push(Span::styled(text, span.style));
        if cut {
            break;
        }
    }
    if width > 0 {
        out.push(Span::styled("…", DIM));
    }
    Line::from(out)
}

/// Wraps `text` (already clean) at word boundaries into lines of at most `width` columns;
/// a word longer than a line is cut. Continuation lines start with `indent` too.
pub(super) fn wrap(
    text: &str,
    width: usize,
    style: Style,
    indent: &str,
    out: &mut Vec<Line<'static>>,
) {
    let iw = indent.width();
    let width = width.max(iw + 1);
    for raw in text.split('\n') {
        // Leading spaces (indentation, pretty JSON) are kept as they are.
        let body = raw.trim_start_matches(' ');
        let lead = (raw.len() - body.len()).min(width.saturating_sub(iw + 1));
        let mut line = format!("{indent}{}", " ".repeat(lead));
        let mut used = iw + lead;
        // Wrapped rows keep the line's indentation (at most half the width): pretty JSON and
        // indented help stay readable.
        let hang = format!("{indent}{}", " ".repeat(lead.min((width - iw - 1) / 2)));
        let hw = hang.width();
        let mut started = false;
        for word in body.split(' ') {
            let ww = word.width();
            let sep = usize::from(started);
            started = true;
            if used + sep + ww <= width {
                if sep == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                used += sep + ww;
                continue;
            }
            if ww <= width - hw {
                out.push(Line::styled(std::mem::take(&mut line), style));
                line.push_str(&hang);
                line.push_str(word);
                used = hw + ww;
                continue;
            }
            // A word longer than a line: fill the rest of this line after a space (or start a
            // new row when not even one character would fit), then cut.
            if sep == 1 {
                if used + 2 <= width {
                    line.push(' ');
                    used += 1;
                } else {
                    out.push(Line::styled(std::mem::take(&mut line), style));
                    line.push_str(&hang);
                    used = hw;
                }
            }
            for c in word.chars() {
                let w = c.width().unwrap_or(0);
                if used + w > width {
                    out.push(Line::styled(std::mem::take(&mut line), style));
                    line.push_str(&hang);
                    used = hw;
                }
                line.push(c);
                used += w;
            }
        }
        out.push(Line::styled(line, style));
    }
}

/// A list modal's frame: the bordered block titled `title`, its `help` line at the bottom;
/// returns the area left for the rows.
pub(super) fn list_frame(frame: &mut Frame, area: Rect, title: &str, help: &str) -> Rect {
    let block = modal_block(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [body, help_row] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(inner);
    frame.render_widget(Paragraph::new(Line::styled(help.to_owned(), DIM)), help_row);
    body
}

/// A list modal's moves: ↓/j/Tab and ↑/k/BackTab step `selected` among `n` rows (wrapping),
/// Home and End go to the first and the last; false for any other key (and with no rows).
pub(super) fn step_selection(selected: &mut usize, n: usize, code: KeyCode) -> bool {
    if n == 0 {
        return false;
    }
    match code {
        KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => *selected = (*selected + 1) % n,
        KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab => *selected = (*selected + n - 1) % n,
        KeyCode::Home => *selected = 0,
        KeyCode::End => *selected = n - 1,
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(text: &str, width: usize, indent: &str) -> Vec<String> {
        let mut out = Vec::new();
        wrap(text, width, Style::new(), indent, &mut out);
        out.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn wrapped_rows_keep_the_indentation_and_never_overflow() {
        assert_eq!(
            wrapped("    \"key\": \"a long value that wraps\"", 20, ""),
            vec!["    \"key\": \"a long", "    value that", "    wraps\"",]
        );
        assert_eq!(
            wrapped("  two words", 9, "  "),
            vec!["    two", "    words"]
        );
        // A word cut across rows never glues onto the word before it.
        assert_eq!(wrapped("abc defgh", 4, ""), vec!["abc", "defg", "h"]);
        assert_eq!(wrapped("ab cdefghij", 4, ""), vec!["ab c", "defg", "hij"]);
        for width in 1..12 {
            for text in [
                "          deep indent and words",
                "x",
                "  averyveryverylongword",
            ] {
                for indent in ["", "  "] {
                    for row in wrapped(text, width, indent) {
                        assert!(
                            row.width() <= width.max(indent.width() + 1),
                            "{text:?} {width} {indent:?}: {row:?}"
                        );
                    }
                }
            }
        }
    }
}
