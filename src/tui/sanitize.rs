//! Makes server-controlled text safe for the terminal: escape sequences and control characters
//! never reach the screen.

use std::borrow::Cow;

/// Removes ANSI escape sequences (CSI, OSC, DCS and two-byte ESC forms) and every control
/// character except newline; a tab becomes four spaces. Text without any is borrowed as is.
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_work) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\u{1b}' => skip_escape(&mut chars),
            // C1 CSI / OSC / DCS introducers, then their bodies.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() || is_bidi_override(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// One line: like [`clean`], with newlines (and carriage returns) turned into spaces.
pub fn clean_line(s: &str) -> Cow<'_, str> {
    match clean(s) {
        Cow::Borrowed(b) if !b.contains('\n') => Cow::Borrowed(b),
        c => Cow::Owned(c.replace('\n', " ")),
    }
}

fn needs_work(c: char) -> bool {
    (c.is_control() && c != '\n') || is_bidi_override(c)
}

/// Bidirectional overrides and isolates can make text render differently from what it is.
fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_escape(chars: &mut Chars<'_>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => skip_string(chars),
        // ESC ( B and friends: one intermediate, then the final byte.
        Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
            chars.next();
        }
        _ => {}
    }
}

/// CSI: parameter and intermediate bytes, then one final byte in `@`..=`~`.
fn skip_csi(chars: &mut Chars<'_>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return;
        }
    }
}

/// OSC/DCS/...: up to BEL or ST (`ESC \` or U+009C).
fn skip_string(chars: &mut Chars<'_>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(clean("hello\nworld ● ✗"), Cow::Borrowed(_)));
    }

    #[test]
    fn strips_escape_sequences_and_controls() {
        let evil = "red\u{1b}[31mtext\u{1b}[0m \u{1b}]0;pwned title\u{7}clear\u{1b}[2J\u{1b}[H bell\u{7} bs\u{8} cr\r nul\u{0} osc8 \u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\ c1\u{9b}31m rlo\u{202e}x";
        let out = clean(evil);
        assert_eq!(out, "redtext clear bell bs cr nul osc8 link c1 rlox");
        assert!(!out.chars().any(|c| c.is_control()));
    }

    #[test]
    fn unterminated_sequences_do_not_eat_forever_or_panic() {
        assert_eq!(clean("a\u{1b}["), "a");
        assert_eq!(clean("a\u{1b}]title without end"), "a");
        assert_eq!(clean("\u{1b}"), "");
        assert_eq!(clean_line("a\tb\nc"), "a    b c");
    }
}
