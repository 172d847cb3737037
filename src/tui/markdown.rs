//! Markdown-lite for the model's text: what models actually write, drawn the way a terminal
//! can. Headings (bold), bullet and numbered lists (hanging indent), block quotes, rules,
//! fenced code (verbatim, no fences shown), and inline `**bold**`, `*italic*` and `` `code` ``.
//! Anything else is plain text; a marker without its closing pair stays as typed. `_` is never
//! emphasis, so `snake_case` names survive. The text is already sanitized.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

const CODE: Style = Style::new().fg(Color::Cyan);
const QUOTE: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::ITALIC);
const RULE: Style = Style::new().fg(Color::DarkGray);

/// What a source line is, which depends on the fences above it.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Fence,
    Code,
}

/// Lays out `text` in lines of at most `width` columns: its last source lines only, as many
/// as make at least `need` lines (`usize::MAX` for all), so a frame during a long answer costs
/// what the screen shows, not the whole answer.
pub fn render(text: &str, width: usize, need: usize, out: &mut Vec<Line<'static>>) {
    let width = width.max(4);
    // A cheap scan from the top for the fences; the layout goes from the bottom up.
    let mut in_code = false;
    let src: Vec<(&str, Kind)> = text
        .split('\n')
        .map(|raw| {
            let t = raw.trim_start();
            if t.starts_with("```") || t.starts_with("~~~") {
                in_code = !in_code;
                (raw, Kind::Fence)
            } else if in_code {
                (raw, Kind::Code)
            } else {
                (raw, Kind::Text)
            }
        })
        .collect();
    let mut chunks = Vec::new();
    let mut have = 0;
    for (raw, kind) in src.into_iter().rev() {
        if have >= need {
            break;
        }
        let mut lines = Vec::new();
        source_line(raw, kind, width, &mut lines);
        have += lines.len();
        chunks.push(lines);
    }
    out.extend(chunks.into_iter().rev().flatten());
}

/// The lines of one source line.
fn source_line(raw: &str, kind: Kind, width: usize, out: &mut Vec<Line<'static>>) {
    match kind {
        Kind::Fence => return,
        Kind::Code => {
            let pieces = vec![(raw.to_owned(), CODE)];
            fill(&pieces, width, "  ", "  ", out);
            return;
        }
        Kind::Text => {}
    }
    let trimmed = raw.trim_start();
    let lead = &raw[..raw.len() - trimmed.len()];
    if let Some((level, title)) = heading(trimmed) {
        let style = Style::new().add_modifier(Modifier::BOLD);
        let style = if level == 1 {
            style.add_modifier(Modifier::UNDERLINED)
        } else {
            style
        };
        fill(&inline(title, style), width, "", "", out);
    } else if is_rule(trimmed) {
        out.push(Line::styled("─".repeat(width.min(40)), RULE));
    } else if let Some(rest) = trimmed
        .strip_prefix("> ")
        .or(trimmed.strip_prefix('>').filter(|r| r.is_empty()))
    {
        fill(&inline(rest, QUOTE), width, "│ ", "│ ", out);
    } else if let Some((marker, rest)) = list_item(trimmed) {
        let first = format!("{lead}{marker}");
        let hang = " ".repeat(first.width());
        fill(&inline(rest, Style::new()), width, &first, &hang, out);
    } else {
        fill(&inline(trimmed, Style::new()), width, lead, lead, out);
    }
}

/// `# Title` .. `###### Title`: the level and the title.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    line[level..].strip_prefix(' ').map(|t| (level, t.trim()))
}

/// `---`, `***` or `___` (three or more, spaces allowed).
fn is_rule(line: &str) -> bool {
    let chars: Vec<char> = line.chars().filter(|c| *c != ' ').collect();
    chars.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|m| chars.iter().all(|c| c.to_string() == *m))
}

/// `- item`, `* item`, `+ item` (drawn with a bullet) or `12. item` / `12) item`.
fn list_item(line: &str) -> Option<(String, &str)> {
    for m in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(m) {
            return Some(("• ".to_owned(), rest));
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let after = &line[digits..];
        for sep in [". ", ") "] {
            if let Some(rest) = after.strip_prefix(sep) {
                return Some((format!("{}{sep}", &line[..digits]), rest));
            }
        }
    }
    None
}

/// Splits a line into styled pieces: `code` spans, **bold** and *italic* runs on `base`.
fn inline(text: &str, base: Style) -> Vec<(String, Style)> {
    let mut out: Vec<(String, Style)> = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let span = match c {
            '`' => closed(rest, "`").map(|(inner, len)| (inner, CODE, len)),
            '*' if rest.starts_with("**") => closed(rest, "**")
                .filter(|(inner, _)| tight(inner))
                .map(|(inner, len)| (inner, base.add_modifier(Modifier::BOLD), len)),
            '*' => closed(rest, "*")
                .filter(|(inner, _)| tight(inner))
                .map(|(inner, len)| (inner, base.add_modifier(Modifier::ITALIC), len)),
            _ => None,
        };
        match span {
            Some((inner, style, len)) => {
                if !plain.is_empty() {
                    out.push((std::mem::take(&mut plain), base));
                }
                out.push((inner.to_owned(), style));
                rest = &rest[len..];
            }
            None => {
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !plain.is_empty() {
        out.push((plain, base));
    }
    out
}

/// For `s` opening with `mark`: the text up to the next `mark` and the length taken in all.
fn closed<'a>(s: &'a str, mark: &str) -> Option<(&'a str, usize)> {
    let body = &s[mark.len()..];
    let end = body.find(mark)?;
    (end > 0).then(|| (&body[..end], mark.len() * 2 + end))
}

/// Emphasis hugs its text: `**x**`, not `** x **` (so `a * b * c` stays arithmetic).
fn tight(inner: &str) -> bool {
    !inner.starts_with(' ') && !inner.ends_with(' ')
}

/// Word-wraps styled pieces: the first line starts with `first`, the others with `rest`
/// (the hanging indent). A word longer than a line is cut.
fn fill(
    pieces: &[(String, Style)],
    width: usize,
    first: &str,
    rest: &str,
    out: &mut Vec<Line<'static>>,
) {
    // Words as lists of styled pieces; a space between words is where a line may break.
    let mut words: Vec<Vec<(String, Style)>> = vec![Vec::new()];
    let mut leading_spaces = 0;
    for (text, style) in pieces {
        for (i, part) in text.split(' ').enumerate() {
            if i > 0 {
                words.push(Vec::new());
            }
            if !part.is_empty() {
                if let Some(last) = words.last_mut() {
                    last.push((part.to_owned(), *style));
                }
            }
        }
    }
    // Leading spaces of a code line are kept (they are its indentation).
    while words.len() > 1 && words[0].is_empty() {
        words.remove(0);
        leading_spaces += 1;
    }
    let prefix_style = if first.starts_with('│') {
        QUOTE
    } else {
        Style::new()
    };
    let start = |prefix: &str| -> (Vec<Span<'static>>, usize) {
        let spans = if prefix.is_empty() {
            Vec::new()
        } else {
            vec![Span::styled(prefix.to_owned(), prefix_style)]
        };
        (spans, prefix.width())
    };
    let (mut line, mut used) = start(first);
    let indent = rest.width();
    if leading_spaces > 0 {
        let n = leading_spaces.min(width.saturating_sub(used + 1));
        line.push(Span::raw(" ".repeat(n)));
        used += n;
    }
    let mut started = false;
    for word in words.iter().filter(|w| !w.is_empty()) {
        let ww: usize = word.iter().map(|(t, _)| t.width()).sum();
        let sep = usize::from(started);
        if started && used + sep + ww > width && ww <= width.saturating_sub(indent) {
            out.push(Line::from(std::mem::take(&mut line)));
            (line, used) = start(rest);
        } else if sep == 1 && used < width {
            line.push(Span::raw(" "));
            used += 1;
        }
        started = true;
        for (text, style) in word {
            if used + text.width() <= width {
                line.push(Span::styled(text.clone(), *style));
                used += text.width();
                continue;
            }
            // Longer than a whole line: cut it at the edge.
            let mut piece = String::new();
            for c in text.chars() {
                let w = c.width().unwrap_or(0);
                if used + w > width {
                    line.push(Span::styled(std::mem::take(&mut piece), *style));
                    out.push(Line::from(std::mem::take(&mut line)));
                    (line, used) = start(rest);
                }
                piece.push(c);
                used += w;
            }
            line.push(Span::styled(piece, *style));
        }
    }
    out.push(Line::from(line));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        render(text, width, usize::MAX, &mut out);
        out
    }

    fn texts(text: &str, width: usize) -> Vec<String> {
        lines(text, width)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    /// The pieces of line `n` with a style other than plain, as (text, modifier, color).
    fn styled(text: &str, width: usize, n: usize) -> Vec<(String, Modifier, Option<Color>)> {
        lines(text, width)[n]
            .spans
            .iter()
            .filter(|s| s.style != Style::new())
            .map(|s| (s.content.to_string(), s.style.add_modifier, s.style.fg))
            .collect()
    }

    #[test]
    fn inline_bold_italic_and_code() {
        let t = "The sum is **42**, see `get_sum` and *this*.";
        assert_eq!(texts(t, 80), vec!["The sum is 42, see get_sum and this."]);
        assert_eq!(
            styled(t, 80, 0),
            vec![
                ("42".into(), Modifier::BOLD, None),
                ("get_sum".into(), Modifier::empty(), Some(Color::Cyan)),
                ("this".into(), Modifier::ITALIC, None),
            ]
        );
    }

    #[test]
    fn unmatched_and_loose_markers_stay_as_typed() {
        for t in [
            "2 * 3 * 4 = 24",
            "a **b without end",
            "snake_case_name and __init__",
            "a `tick",
            "** not bold **",
        ] {
            assert_eq!(texts(t, 80), vec![t.to_owned()], "{t}");
            assert!(styled(t, 80, 0).is_empty(), "{t}");
        }
    }

    #[test]
    fn headings_lists_quotes_rules_and_code() {
        let t = "# Plan\n\n- first step\n  - nested step\n2. numbered\n> quoted\n---\n```rust\nfn main() {\n    let x = 1;\n}\n```\nafter";
        assert_eq!(
            texts(t, 40),
            vec![
                "Plan",
                "",
                "• first step",
                "  • nested step",
                "2. numbered",
                "│ quoted",
                &"─".repeat(40),
                "  fn main() {",
                "      let x = 1;",
                "  }",
                "after",
            ]
        );
        assert_eq!(
            styled(t, 40, 0),
            vec![("Plan".into(), Modifier::BOLD | Modifier::UNDERLINED, None)]
        );
        assert!(styled(t, 40, 8)
            .iter()
            .all(|(_, _, c)| *c == Some(Color::Cyan)));
    }

    #[test]
    fn only_the_tail_is_laid_out_when_only_the_tail_is_needed() {
        let t = "# Top\n```\ncode 1\ncode 2\n```\n- a long item that wraps\nlast";
        let all = texts(t, 12);
        for need in 0..all.len() + 2 {
            let mut out = Vec::new();
            render(t, 12, need, &mut out);
            let got: Vec<String> = out
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect();
            assert!(got.len() >= need.min(all.len()), "{need}: {got:?}");
            // Always the bottom of the whole layout, code lines still seen as code.
            assert_eq!(got[..], all[all.len() - got.len()..], "{need}");
        }
    }

    #[test]
    fn list_items_wrap_with_a_hanging_indent_and_long_words_are_cut() {
        let t = "- one two three four five six\n0123456789abcdefghij";
        assert_eq!(
            texts(t, 12),
            vec![
                "• one two",
                "  three four",
                "  five six",
                "0123456789ab",
                "cdefghij"
            ]
        );
        for l in lines("**abcdefghijklmnop** q", 6) {
            let w: usize = l.spans.iter().map(|s| s.content.width()).sum();
            assert!(w <= 6, "{l:?}");
        }
    }
}
