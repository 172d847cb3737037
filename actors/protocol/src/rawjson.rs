//! JSON text kept as it came ([`RawJson`]: a tool's schemas and annotations) and the validator
//! that finds where one value ends ([`value_end`]) without building anything.
//!
//! serde_json can only make a `RawValue` by walking the value with its generic deserializer;
//! a 10k-tool `tools/list` page spent two thirds of its parse there. [`value_end`] accepts
//! exactly the values serde_json accepts (the property tests in `props` hold it to
//! `serde_json::from_str::<&RawValue>`), up to a nesting depth past which it declines and the
//! caller falls back to serde_json.

use std::fmt;

pub use bytestring::ByteString;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The deepest nesting [`value_end`] follows (one bit of its stack each): deeper values are
/// declined, never misjudged.
pub const MAX_DEPTH: usize = 64;

/// A JSON value's text, exactly as the server sent it (inner whitespace kept), valid JSON by
/// construction: made only from a [`RawValue`], from a value serde_json writes, or from a
/// slice [`value_end`] accepted. A value read from a `tools/list` page shares the page's
/// buffer (no copy; see `tools_page` for when it is copied out after all).
#[derive(Clone)]
pub struct RawJson(ByteString);

impl PartialEq for RawJson {
    fn eq(&self, other: &RawJson) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

impl RawJson {
    /// The text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// The same text in a buffer of its own (so that it no longer keeps a page alive).
    pub fn detached(&self) -> RawJson {
        RawJson(ByteString::from(self.get()))
    }

    /// `text` if it is one JSON value (surrounding whitespace included), else `None`.
    pub fn parse(text: &str) -> Option<RawJson> {
        let b = text.as_bytes();
        let start = ws(b, 0);
        let end = value_end(b, start, MAX_DEPTH)?;
        (ws(b, end) == b.len()).then(|| RawJson(text[start..end].into()))
    }

    /// `value` as serde_json writes it.
    pub fn from_value<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, serde_json::Error> {
        Ok(RawJson(serde_json::to_string(value)?.into()))
    }

    /// The slice `text[start..end]` that [`value_end`] accepted, sharing `text`'s buffer (in
    /// this crate only).
    pub(crate) fn accepted(text: &ByteString, start: usize, end: usize) -> RawJson {
        RawJson(text.slice_ref(&text[start..end]))
    }
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> RawJson {
        RawJson(Box::<str>::from(raw).into())
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    /// Written verbatim (through serde_json's `RawValue`, which checks the text once more: the
    /// cost falls on the rare writer, a cache file or a model request, not on every listing).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(self.get()).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawJson, D::Error> {
        Box::<RawValue>::deserialize(d).map(RawJson::from)
    }
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[inline]
pub fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Eight copies of `byte`.
const fn lanes(byte: u8) -> u64 {
    u64::from_le_bytes([byte; 8])
}

/// For the string that opens at `b[i]` (a `"`): the index just past its closing quote and
/// whether it holds an escape; `None` if it is not a valid JSON string (an unescaped control
/// character, a bad escape, no closing quote). `b` must be valid UTF-8 (bytes of 0x80 and up
/// are taken as they are).
#[inline(always)]
pub fn string_end(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let mut i = i + 1;
    let mut escaped = false;
    loop {
        // Eight bytes at a time to the first quote, backslash or control character (the lowest
        // flagged lane is exact: a borrow only flags lanes above a true hit).
        while let Some(chunk) = b.get(i..i + 8) {
            let Ok(w) = <[u8; 8]>::try_from(chunk) else {
                break;
            };
            let v = u64::from_le_bytes(w);
            let quote = v ^ lanes(b'"');
            let backslash = v ^ lanes(b'\\');
            let hits = (quote.wrapping_sub(lanes(1)) & !quote)
                | (backslash.wrapping_sub(lanes(1)) & !backslash)
                | (v.wrapping_sub(lanes(0x20)) & !v);
            let hits = hits & lanes(0x80);
            if hits != 0 {
                i += (hits.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match *b.get(i)? {
            b'"' => return Some((i + 1, escaped)),
            b'\\' => {
                escaped = true;
                match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = b.get(i + 2..i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                }
            }
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// For the number that starts at `b[i]`: the index just past it (JSON's grammar: an optional
/// minus, `0` or a digit run not starting with `0`, an optional fraction and exponent).
#[inline]
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

/// Past `"key"` and its colon at `b[i]`: where the member's value starts.
#[inline]
fn after_key(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let (end, _) = string_end(b, i)?;
    let colon = ws(b, end);
    (b.get(colon) == Some(&b':')).then(|| ws(b, colon + 1))
}

/// For the JSON value that starts at `b[i]` (no whitespace before it): the index just past it,
/// or `None` if it is not valid JSON or nests deeper than `max_depth` (at most [`MAX_DEPTH`]).
/// Iterative: its stack is one bit a level. `b` must be valid UTF-8.
pub fn value_end(b: &[u8], mut i: usize, max_depth: usize) -> Option<usize> {
    let max_depth = max_depth.min(MAX_DEPTH);
    // Bit n: the container at depth n+1 is an object (1) or an array (0).
    let mut stack: u64 = 0;
    let mut depth = 0usize;
    loop {
        // A value at `i`.
        match *b.get(i)? {
            b'"' => i = string_end(b, i)?.0,
            open @ (b'{' | b'[') => {
                if depth == max_depth {
                    return None;
                }
                let object = open == b'{';
                stack = (stack << 1) | u64::from(object);
                depth += 1;
                i = ws(b, i + 1);
                let close = if object { b'}' } else { b']' };
                if b.get(i) == Some(&close) {
                    i += 1;
                    stack >>= 1;
                    depth -= 1;
                } else {
                    if object {
                        i = after_key(b, i)?;
                    }
                    continue;
                }
            }
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number_end(b, i)?,
            _ => return None,
        }
        // After a value: commas and closings.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = ws(b, i);
            let object = stack & 1 == 1;
            match (*b.get(i)?, object) {
                (b',', _) => {
                    i = ws(b, i + 1);
                    if object {
                        i = after_key(b, i)?;
                    }
                    break;
                }
                (b'}', true) | (b']', false) => {
                    i += 1;
                    stack >>= 1;
                    depth -= 1;
                }
                _ => return None,
            }
        }
    }
}

#[inline]
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_accepts(s: &str) -> bool {
        serde_json::from_str::<&RawValue>(s).is_ok()
    }

    #[test]
    fn agrees_with_serde_json_on_edge_cases() {
        for s in [
            "0",
            "-0",
            "01",
            "-",
            "1.",
            "1.5",
            "1e",
            "1e+",
            "1E-7",
            ".5",
            "-01",
            "1.5e3",
            "true",
            "tru",
            "truex",
            "null",
            "nul",
            "false",
            "\"\"",
            "\"a",
            "\"\\u00e9\"",
            "\"\\u00g9\"",
            "\"\\x\"",
            "\"\t\"",
            "\"\\ud800\"",
            "\"é ü 😀\"",
            "[]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{}",
            "{\"a\":1,}",
            "{\"a\" : [ 1 , {\"b\":null} ] }",
            "{\"a\"}",
            "{1:2}",
            "{\"a\":1 \"b\":2}",
            "[[[]]]",
            "[[[]]",
            "[]]",
            " [ ] ",
            "\"abcdefghijklmnop\"",
            "\"abcdefgh\\\"ijklmnop\"",
            "\"abcdefghij\u{1}klmnop\"",
            "[\"\\\\\"]",
        ] {
            assert_eq!(
                RawJson::parse(s).is_some(),
                serde_accepts(s),
                "{s:?}: ours vs serde_json"
            );
        }
    }

    #[test]
    fn keeps_the_text_as_sent_and_declines_past_its_depth() {
        let s = " {\"a\" : [1, 2.5e3 ,\"x\\n\"]} ";
        assert_eq!(RawJson::parse(s).unwrap().get(), s.trim());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(RawJson::parse(&deep).is_none());
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(RawJson::parse(&ok).is_some());
    }

    #[test]
    fn serializes_verbatim_and_round_trips() {
        let raw = RawJson::parse("{\"b\":1,  \"a\":[true]}").unwrap();
        let wrapped = format!("{{\"s\":{}}}", raw.get());
        #[derive(Deserialize)]
        struct W {
            s: RawJson,
        }
        let w: W = serde_json::from_str(&wrapped).unwrap();
        assert_eq!(w.s, raw);
        assert_eq!(serde_json::to_string(&raw).unwrap(), raw.get());
    }
}
