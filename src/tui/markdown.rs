//! Markdown-lite for the model's text: what models actually write, drawn the way a terminal
//! can. Headings (bold), bullet and numbered lists (hanging indent), block quotes, rules,
//! fenced code (verbatim, no fences shown), tables (aligned columns), and inline `**bold**`,
//! `*italic*` and `` `code` ``.
//! Anything else is plain text; a marker without its closing pair stays as typed. `_` is never
//! emphasis, so `snake_case` names survive. The text is already sanitized.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

const CODE: Style = Style::new().fg(Color::Cyan);
const LINK: Style = Style::new().fg(Color::Blue);
const QUOTE: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::ITALIC);
const RULE: Style = Style::new().fg(Color::DarkGray);
/// No prefix for [`fill`].
const NONE: (&str, &str, Style) = ("", "", Style::new());

/// Text as styled pieces.
type Pieces = Vec<(String, Style)>;

/// What a source line is, which depends on the fences above it.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Fence,
    Code,
    /// A `| a | b |` row, laid out with the rest of its table.
    Table,
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
            } else if t.starts_with('|') {
                (raw, Kind::Table)
            } else {
                (raw, Kind::Text)
            }
        })
        .collect();
    let mut chunks = Vec::new();
    let mut have = 0;
    let mut end = src.len();
    while end > 0 && have < need {
        let mut lines = Vec::new();
        let (raw, kind) = src[end - 1];
        if kind == Kind::Table {
            // The whole run of rows is one table: its column widths depend on every row.
            let start = src[..end]
                .iter()
                .rposition(|(_, k)| *k != Kind::Table)
                .map_or(0, |i| i + 1);
            let rows: Vec<&str> = src[start..end].iter().map(|(r, _)| *r).collect();
            table(&rows, width, &mut lines);
            end = start;
        } else {
            source_line(raw, kind, width, &mut lines);
            end -= 1;
        }
        have += lines.len();
        chunks.push(lines);
    }
    out.extend(chunks.into_iter().rev().flatten());
}

/// A table: cells padded to their column's width (aligned as its `|:-:|` row says) and joined
/// by `│`, the header bold, the
/// `|---|` row drawn as a rule. Rows without that rule, or a table wider than `width`, are
/// drawn as typed.
fn table(rows: &[&str], width: usize, out: &mut Vec<Line<'static>>) {
    let cells = |row: &str| -> Vec<String> {
        let t = row.trim();
        let t = t.strip_prefix('|').unwrap_or(t);
        let t = t.strip_suffix('|').unwrap_or(t);
        t.split('|').map(|c| c.trim().to_owned()).collect()
    };
    let is_rule = |c: &[String]| {
        c.iter().all(|x| {
            let x = x.trim_matches(':');
            !x.is_empty() && x.chars().all(|ch| ch == '-')
        })
    };
    let parsed: Vec<Vec<String>> = rows.iter().map(|r| cells(r)).collect();
    let header = parsed.len() > 1 && is_rule(&parsed[1]);
    // Per row its cells as styled pieces; `None` for the rule row.
    let styled: Vec<Option<Vec<Pieces>>> = parsed
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let base = if header && i == 0 {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            (!(header && i == 1)).then(|| row.iter().map(|c| inline(c, base)).collect())
        })
        .collect();
    let cols = parsed.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for row in styled.iter().flatten() {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.iter().map(|(t, _)| t.width()).sum());
        }
    }
    let total = widths.iter().sum::<usize>() + 3 * cols.saturating_sub(1);
    // Without its `|---|` row it is not a table (a line of prose may start with a pipe).
    if total > width || !header {
        for raw in rows {
            fill(&[(raw.trim().to_owned(), Style::new())], width, NONE, out);
        }
        return;
    }
    for row in &styled {
        let Some(row) = row else {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::styled(rule.join("─┼─"), RULE));
            continue;
        };
        let mut spans = Vec::new();
        for (i, w) in widths.iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" │ ", RULE));
            }
            let cell = row.get(i).map(Vec::as_slice).unwrap_or_default();
            let room = w - cell.iter().map(|(t, _)| t.width()).sum::<usize>();
            // `|--:|` aligns right, `|:-:|` centres; the last column gets no trailing pad.
            let rule = parsed[1].get(i).map_or("", String::as_str);
            let before = match (rule.starts_with(':'), rule.ends_with(':')) {
                (true, true) => room / 2,
                (false, true) => room,
                _ => 0,
            };
            let after = if i + 1 < cols { room - before } else { 0 };
            if before > 0 {
                spans.push(Span::raw(" ".repeat(before)));
            }
            spans.extend(cell.iter().map(|(t, s)| Span::styled(t.clone(), *s)));
            if after > 0 {
                spans.push(Span::raw(" ".repeat(after)));
            }
        }
        out.push(Line::from(spans));
    }
}

/// The lines of one source line.
fn source_line(raw: &str, kind: Kind, width: usize, out: &mut Vec<Line<'static>>) {
    match kind {
        Kind::Fence => return,
        Kind::Code => return code_line(raw, width, out),
        Kind::Text | Kind::Table => {}
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
        fill(&inline(title, style), width, NONE, out);
    } else if is_rule(trimmed) {
        out.push(Line::styled("─".repeat(width.min(40)), RULE));
    } else if let Some(rest) = trimmed
        .strip_prefix("> ")
        .or(trimmed.strip_prefix('>').filter(|r| r.is_empty()))
    {
        fill(&inline(rest, QUOTE), width, ("│ ", "│ ", QUOTE), out);
    } else if let Some((marker, rest)) = list_item(trimmed) {
        let first = format!("{lead}{marker}");
        let hang = " ".repeat(first.width());
        fill(
            &inline(rest, Style::new()),
            width,
            (&first, &hang, Style::new()),
            out,
        );
    } else {
        fill(
            &inline(trimmed, Style::new()),
            width,
            (lead, lead, Style::new()),
            out,
        );
    }
}

/// A line of a fenced code block, verbatim: every space kept (columns stay aligned), tabs as
/// four spaces, cut at the edge onto the next line instead of word-wrapped.
fn code_line(raw: &str, width: usize, out: &mut Vec<Line<'static>>) {
    const INDENT: &str = "  ";
    let room = width.saturating_sub(INDENT.len()).max(1);
    let text = raw.replace('\t', "    ");
    let mut piece = String::new();
    let mut used = 0;
    let push = |piece: String, out: &mut Vec<Line<'static>>| {
        out.push(Line::from(vec![
            Span::raw(INDENT),
            Span::styled(piece, CODE),
        ]));
    };
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room && !piece.is_empty() {
            push(std::mem::take(&mut piece), out);
            used = 0;
        }
        piece.push(c);
        used += w;
    }
    push(piece, out);
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
            '[' => {
                if let Some((label, url, len)) = link(rest) {
                    if !plain.is_empty() {
                        out.push((std::mem::take(&mut plain), base));
                    }
                    if label != url {
                        out.push((label.to_owned(), base.add_modifier(Modifier::UNDERLINED)));
                        out.push((format!(" ({url})"), LINK));
                    } else {
                        out.push((url.to_owned(), LINK));
                    }
                    rest = &rest[len..];
                    continue;
                }
                None
            }
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

/// For `s` opening with `[`: a markdown link `[label](url)`'s label, URL and length.
fn link(s: &str) -> Option<(&str, &str, usize)> {
    let close = s.find("](")?;
    let label = &s[1..close];
    if label.is_empty() || label.contains('[') {
        return None;
    }
    let after = &s[close + 2..];
    let end = after.find(')')?;
    let url = after[..end].trim();
    (!url.is_empty() && !url.contains(' ')).then_some((label, url, close + 2 + end + 1))
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

/// Words as lists of styled pieces (a space between words is where a line may break), and
/// how many spaces lead: a code line's leading spaces are kept (they are its indentation).
fn words_of(pieces: &[(String, Style)]) -> (Vec<Vec<(String, Style)>>, usize) {
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
    while words.len() > 1 && words[0].is_empty() {
        words.remove(0);
        leading_spaces += 1;
    }
    (words, leading_spaces)
}

/// A prefix (deep indentation, nested quotes) cut so it leaves at least half the line for the
/// text.
fn capped(prefix: &str, width: usize) -> String {
    let mut w = 0;
    prefix
        .chars()
        .take_while(|c| {
            w += c.width().unwrap_or(0);
            w <= width / 2
        })
        .collect()
}

/// Word-wraps styled pieces: the first line starts with `first`, the others with `rest`
/// (the hanging indent), both drawn in `prefix_style`. A word longer than a line is cut.
fn fill(
    pieces: &[(String, Style)],
    width: usize,
    (first, rest, prefix_style): (&str, &str, Style),
    out: &mut Vec<Line<'static>>,
) {
    let (words, leading_spaces) = words_of(pieces);
    let (first, rest) = (capped(first, width), capped(rest, width));
    let start = |prefix: &str| -> (Vec<Span<'static>>, usize) {
        let spans = if prefix.is_empty() {
            Vec::new()
        } else {
            vec![Span::styled(prefix.to_owned(), prefix_style)]
        };
        (spans, prefix.width())
    };
    let (mut line, mut used) = start(&first);
    let rest = rest.as_str();
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
    fn code_blocks_keep_every_space_and_cut_long_lines() {
        let t = "```\ncol1    col2\n-rw-r--r--  1 me  staff   42 a.txt\n\tx\n```";
        assert_eq!(
            texts(t, 80),
            vec![
                "  col1    col2",
                "  -rw-r--r--  1 me  staff   42 a.txt",
                "      x"
            ]
        );
        assert_eq!(
            texts("```\nabcdefghij\n```", 6),
            vec!["  abcd", "  efgh", "  ij"]
        );
    }

    #[test]
    fn links_are_drawn_as_text_with_their_url() {
        let t = "See [the spec](https://modelcontextprotocol.io/spec) and [x](y z) and [a]";
        assert_eq!(
            texts(t, 200),
            vec!["See the spec (https://modelcontextprotocol.io/spec) and [x](y z) and [a]"]
        );
        assert_eq!(texts("[https://a.b](https://a.b)", 80), vec!["https://a.b"]);
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
    fn tables_get_aligned_columns_and_a_too_wide_one_stays_as_typed() {
        let t = "Servers:\n| name | tools | up |\n|---|--:|:-:|\n| `everything` | 14 | yes |\n| py | 2 | y |\nend";
        assert_eq!(
            texts(t, 40),
            vec![
                "Servers:",
                "name       │ tools │ up",
                "───────────┼───────┼────",
                "everything │    14 │ yes",
                "py         │     2 │  y",
                "end",
            ]
        );
        assert_eq!(
            styled(t, 40, 1),
            vec![
                ("name".into(), Modifier::BOLD, None),
                (" │ ".into(), Modifier::empty(), Some(Color::DarkGray)),
                ("tools".into(), Modifier::BOLD, None),
                (" │ ".into(), Modifier::empty(), Some(Color::DarkGray)),
                ("up".into(), Modifier::BOLD, None),
            ]
        );
        // Too wide for 12 columns: the rows as typed. Without a rule row: as typed too.
        assert_eq!(texts(t, 12)[1], "| name |");
        assert_eq!(texts("| grep x | wc -l", 40), vec!["| grep x | wc -l"]);
        // The tail layout takes a table whole.
        for need in 0..8 {
            let mut out = Vec::new();
            render(t, 40, need, &mut out);
            let all = texts(t, 40);
            let got: Vec<String> = out
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect();
            assert_eq!(got[..], all[all.len() - got.len()..], "{need}");
        }
    }

    #[test]
    fn random_markdown_never_overflows_the_width() {
        // A fixed-seed generator over the characters that matter: markers, spaces, newlines,
        // pipes, fences and wide characters.
        let alphabet: Vec<char> = "ab *_`#>-|:.1)\n~é漢字🙂 ".chars().collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        // Deep indentation, a long heading and a quote on a narrow screen.
        for (text, width) in [
            ("              - item", 6),
            ("              12. item", 5),
            ("                text", 4),
            ("> > > > > > > deep", 4),
        ] {
            for l in lines(text, width) {
                let w: usize = l.spans.iter().map(|s| s.content.width()).sum();
                assert!(w <= width, "{text:?} at {width}: {l:?}");
            }
        }
        for _ in 0..3000 {
            let len = next(60);
            let text: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            let width = 4 + next(30);
            for need in [usize::MAX, next(5)] {
                let mut out = Vec::new();
                render(&text, width, need, &mut out);
                for l in &out {
                    let w: usize = l.spans.iter().map(|s| s.content.width()).sum();
                    assert!(w <= width, "{text:?} at {width}: {l:?}");
                }
            }
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
