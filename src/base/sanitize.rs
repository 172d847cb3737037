//! Makes server-controlled text safe for the terminal, in the TUI and headless: escape sequences
//! and control characters never reach the screen. The one place that decides what is removed.

use std::borrow::Cow;

use harness9_protocol::chars::is_invisible_format;

/// Removes ANSI escape sequences and every control character except newline; a tab becomes four
/// spaces (a terminal cell grid has no tab stops). For the TUI. Text without any is borrowed.
pub fn clean(s: &str) -> Cow<'_, str> {
    scrub(s, Tabs::Expand)
}

/// Like [`clean`], but a tab stays a tab: for headless text output (`mcp list|get|call`,
/// `run -p`, `[mcp]` events, error messages), where the terminal or the next program expands it.
pub fn clean_text(s: &str) -> Cow<'_, str> {
    scrub(s, Tabs::Keep)
}

/// One line: like [`clean`], with newlines turned into spaces (carriage returns are removed).
pub fn clean_line(s: &str) -> Cow<'_, str> {
    match clean(s) {
        Cow::Borrowed(b) if !b.contains('\n') => Cow::Borrowed(b),
        c => Cow::Owned(c.replace('\n', " ")),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Tabs {
    Keep,
    Expand,
}

/// What is removed: ESC sequences (CSI `ESC [`, OSC `ESC ]` up to BEL or ST, DCS `ESC P`, SOS
/// `ESC X`, PM `ESC ^`, APC `ESC _`, `ESC` + intermediates + final byte, a lone ESC), their C1
/// forms (U+009B CSI, U+009D OSC, U+0090/98/9E/9F), every other C0 control but `\n` (and `\t`),
/// DEL, every C1 control U+0080..=U+009F, and the invisible formatting characters of
/// [`is_invisible_format`] (bidi controls, zero-width characters, tags).
fn scrub(s: &str, tabs: Tabs) -> Cow<'_, str> {
    let keep = |c: char| c == '\n' || (c == '\t' && tabs == Tabs::Keep);
    if !s
        .chars()
        .any(|c| (c.is_control() && !keep(c)) || is_invisible_format(c))
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' if tabs == Tabs::Keep => out.push('\t'),
            '\t' => out.push_str("    "),
            '\u{1b}' => {
                // A string cut short by a new ESC: that ESC begins the next sequence (a loop, not
                // recursion, so a flood of ESCs cannot overflow the stack).
                while skip_escape(&mut chars) {}
            }
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => {
                if skip_string(&mut chars) {
                    while skip_escape(&mut chars) {}
                }
            }
            c if c.is_control() || is_invisible_format(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// After an ESC: skips the rest of its sequence. True when it ended on an ESC that begins
/// another sequence (already consumed).
fn skip_escape(chars: &mut Chars<'_>) -> bool {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
            false
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars)
        }
        // `ESC ( B` and friends: intermediates, then one final byte.
        Some('\u{20}'..='\u{2f}') => {
            while chars
                .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                .is_some()
            {}
            chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
            false
        }
        // `ESC c` (reset), `ESC 7`, `ESC M`, ...: two bytes.
        Some('\u{30}'..='\u{7e}') => {
            chars.next();
            false
        }
        // A lone ESC: what follows (text, a newline, another ESC) is handled on its own.
        _ => false,
    }
}

/// CSI: parameter and intermediate bytes, then one final byte in `@`..=`~`. Anything else ends
/// it unconsumed (so a newline after a cut sequence survives).
fn skip_csi(chars: &mut Chars<'_>) {
    while chars
        .next_if(|c| ('\u{20}'..='\u{3f}').contains(c))
        .is_some()
    {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// OSC/DCS/SOS/PM/APC: up to BEL or ST (`ESC \` or U+009C); an unterminated one ends at the
/// end of its line (the newline stays), so it hides no more than the rest of that line.
/// True when an ESC other than ST ended it: that ESC begins the next sequence.
fn skip_string(chars: &mut Chars<'_>) -> bool {
    while let Some(c) = chars.next_if(|c| *c != '\n') {
        match c {
            '\u{7}' | '\u{9c}' => return false,
            '\u{1b}' => return chars.next_if_eq(&'\\').is_none(),
            _ => {}
        }
    }
    false
}

/// `value` as JSON (pretty or compact) that is also safe on a terminal: besides the C0 controls
/// that JSON always escapes, DEL, C1 controls and bidi controls in strings are written as `\uXXXX`.
/// It parses to exactly the same value: escaping, not cleaning.
pub fn to_json<T: serde::Serialize + ?Sized>(
    value: &T,
    pretty: bool,
) -> serde_json::Result<String> {
    let mut out = Vec::new();
    if pretty {
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            TerminalSafe(serde_json::ser::PrettyFormatter::new()),
        );
        value.serialize(&mut ser)?;
    } else {
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            TerminalSafe(serde_json::ser::CompactFormatter),
        );
        value.serialize(&mut ser)?;
    }
    // The formatters write only UTF-8 (str fragments and ASCII escapes).
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// A JSON formatter that also escapes what a terminal would act on (see [`to_json`]).
struct TerminalSafe<F>(F);

/// Forwards formatter methods to the wrapped formatter (layout stays as it is).
macro_rules! delegate {
    ($($name:ident),*) => {$(
        fn $name<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
            self.0.$name(w)
        }
    )*};
    (first: $($name:ident),*) => {$(
        fn $name<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
            self.0.$name(w, first)
        }
    )*};
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for TerminalSafe<F> {
    delegate!(
        begin_array,
        end_array,
        end_array_value,
        begin_object,
        end_object
    );
    delegate!(begin_object_value, end_object_value);
    delegate!(first: begin_array_value, begin_object_key);

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if ('\u{7f}'..='\u{9f}').contains(&c) || is_invisible_format(c) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                // Outside the BMP (tag characters): a UTF-16 surrogate pair, as JSON wants.
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(w, "\\u{:04x}", u)?;
                }
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No control character but newline (and tab where kept), no bidi control.
    fn is_safe(s: &str, tab: bool) -> bool {
        s.chars()
            .all(|c| !(c.is_control() || is_invisible_format(c)) || c == '\n' || (tab && c == '\t'))
    }

    #[test]
    fn json_escapes_del_c1_and_bidi_and_parses_back_exactly() {
        let v = serde_json::json!({"k\u{9b}": ["\u{1b}[31m\u{7f}\u{85}\u{9d}x\u{202e}é\t●", 1]});
        for pretty in [false, true] {
            let text = to_json(&v, pretty).unwrap_or_default();
            assert!(is_safe(&text, true), "{text:?}");
            assert!(
                text.contains("\\u009b") && text.contains("\\u202e"),
                "{text}"
            );
            let back: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            assert_eq!(back, v);
        }
        // Only those characters change: the layout is serde_json's own.
        assert_eq!(
            to_json(&v, true).ok(),
            Some(
                serde_json::to_string_pretty(&v)
                    .unwrap_or_default()
                    .replace('\u{9b}', "\\u009b")
                    .replace('\u{7f}', "\\u007f")
                    .replace('\u{85}', "\\u0085")
                    .replace('\u{9d}', "\\u009d")
                    .replace('\u{202e}', "\\u202e")
            )
        );
    }

    #[test]
    fn invisible_formatting_goes_from_text_and_is_escaped_in_json() {
        let s = "a\u{200b}b\u{200d}c\u{feff}d\u{200e}e\u{200f}f\u{2060}g\u{ad}h\u{e0041}i\u{61c}j";
        assert_eq!(clean(s), "abcdefghij");
        assert_eq!(clean_line(s), "abcdefghij");
        let text = to_json(&serde_json::json!(s), false).unwrap_or_default();
        assert!(
            text.contains("\\u200b") && text.contains("\\udb40\\udc41"),
            "{text}"
        );
        assert!(is_safe(&text, false), "{text:?}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, serde_json::json!(s));
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(clean("hello\nworld ● ✗"), Cow::Borrowed(_)));
        assert!(matches!(clean_text("a\tb\nc"), Cow::Borrowed(_)));
    }

    #[test]
    fn strips_escape_sequences_and_controls() {
        let evil = "red\u{1b}[31mtext\u{1b}[0m \u{1b}]0;pwned title\u{7}clear\u{1b}[2J\u{1b}[H bell\u{7} bs\u{8} cr\r nul\u{0} osc8 \u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ c1\u{9b}31m rlo\u{202e}x";
        let out = clean(evil);
        assert_eq!(out, "redtext clear bell bs cr nul osc8 link c1 rlox");
        assert!(!out.chars().any(|c| c.is_control()));
    }

    #[test]
    fn every_kind_of_sequence_goes() {
        let cases = [
            ("a\u{1b}]52;c;aGVsbG8=\u{7}b", "ab"), // OSC 52 (clipboard), BEL
            ("a\u{1b}]52;c;aGVsbG8=\u{1b}\\b", "ab"), // OSC 52, ST
            ("a\u{9d}52;c;aGVsbG8=\u{9c}b", "ab"), // C1 OSC, C1 ST
            ("a\u{1b}P1$r0m\u{1b}\\b", "ab"),      // DCS
            ("a\u{1b}_apc\u{1b}\\b\u{1b}^pm\u{7}c", "abc"), // APC, PM
            ("a\u{1b}Xsos\u{1b}\\b\u{98}x\u{9c}c", "abc"), // SOS, C1 SOS
            ("a\u{1b}[?1049hb\u{1b}[38;2;1;2;3mc", "abc"), // CSI with private and long params
            ("a\u{1b}cb\u{1b}7c\u{1b}(Bd\u{1b}#8e", "abcde"), // two- and three-byte forms
            ("a\u{1b}]0;t\u{1b}[31mb", "ab"),      // an OSC cut by a new sequence
            ("a\u{1b}[31\nb", "a\nb"),             // a cut CSI keeps the newline
            ("a\u{1b}\nb", "a\nb"),                // a lone ESC
            ("a\u{1b}]0;t\nb\u{9d}x\ny", "a\nb\ny"), // unterminated strings end at the line
            ("a\u{7f}b\u{85}c\u{9c}d\u{80}e", "abcde"), // DEL, NEL and other C1
            ("a\u{2066}b\u{2069}c\u{202d}d", "abcd"), // isolates and overrides
        ];
        for (input, want) in cases {
            assert_eq!(clean_text(input), want, "{input:?}");
        }
    }

    #[test]
    fn tabs_stay_in_text_mode_and_expand_on_screen() {
        assert_eq!(clean_text("a\tb\u{1b}[1m\tc"), "a\tb\tc");
        assert_eq!(clean("a\tb\u{1b}[1m"), "a    b");
        assert_eq!(clean_line("a\tb\nc"), "a    b c");
    }

    #[test]
    fn unterminated_sequences_do_not_eat_forever_or_panic() {
        assert_eq!(clean("a\u{1b}["), "a");
        assert_eq!(clean("a\u{1b}]title without end"), "a");
        assert_eq!(clean("\u{1b}"), "");
        assert_eq!(clean("\u{9b}"), "");
        // A flood of nested starts is linear and does not recurse.
        let flood = "\u{1b}]\u{1b}P".repeat(200_000) + "\u{7}end";
        assert_eq!(clean_text(&flood), "end");
    }

    #[test]
    fn every_byte_pattern_comes_out_safe() {
        // Every pair of interesting chars around text: nothing unsafe survives any combination.
        let parts = [
            "\u{1b}", "[", "]", "P", "\\", "\u{7}", "\u{9b}", "\u{9c}", "\u{9d}", "\u{90}",
            "\u{7f}", "\r", "\n", "\t", "x", "1;", "m", "\u{202e}", "\u{0}",
        ];
        for a in parts {
            for b in parts {
                for c in parts {
                    let s = format!("{a}{b}{c}{a}");
                    assert!(is_safe(&clean_text(&s), true), "{s:?}");
                    assert!(is_safe(&clean(&s), false), "{s:?}");
                    assert!(is_safe(&clean_line(&s), false) && !clean_line(&s).contains('\n'));
                }
            }
        }
    }
}
