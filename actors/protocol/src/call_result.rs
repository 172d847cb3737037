//! A `tools/call` result read in one pass over its text, for the common reply: text blocks,
//! `isError`, `resultType`, `structuredContent` (parsed by serde_json from the slice the
//! validator accepted), nothing else built. Like `tools_page`, a fast path and never the judge:
//! anything it is not sure of (a block of another type, a block member serde_json would check,
//! a duplicate, a `null` where a value is due, an escape in a key, invalid JSON anywhere)
//! declines (`None`), and serde_json then parses the result, its value or error standing. The
//! property tests in `props` hold it to that.

use bytestring::ByteString;

use crate::rawjson::{value_end, MAX_DEPTH};
use crate::tools_page::{array, bytes_of, members, once, opt_string, string, string_at};
use crate::types::{CallToolResult, ContentBlock};

/// The `tools/call` result object at `text[i..]` and the index past it, or `None` where
/// serde_json must decide.
pub fn call_result_at(text: &ByteString, i: usize) -> Option<(CallToolResult, usize)> {
    // The envelope and the result are two levels above its members.
    const DEPTH: usize = MAX_DEPTH - 2;
    let b = bytes_of(text);
    let mut content = None;
    let mut structured = None;
    let mut is_error = None;
    let mut result_type = None;
    let end = members(b, i, |key, v| match key {
        b"content" => once(&mut content, array(text, v, text_block)?),
        b"structuredContent" => {
            let end = value_end(b, v, DEPTH)?;
            let value = match &text[v..end] {
                "null" => None,
                s => Some(serde_json::from_str(s).ok()?),
            };
            once(&mut structured, (value, end))
        }
        b"isError" => match b.get(v..v + 4)? {
            b"true" => once(&mut is_error, (true, v + 4)),
            _ if b.get(v..v + 5)? == b"false" => once(&mut is_error, (false, v + 5)),
            _ => None,
        },
        b"resultType" => once(&mut result_type, opt_string(text, v)?),
        _ => value_end(b, v, DEPTH),
    })?;
    let result = CallToolResult {
        content: content.unwrap_or_default(),
        structured_content: structured.flatten(),
        is_error: is_error.unwrap_or_default(),
        result_type: result_type.flatten(),
        schema_error: None,
        task: None,
    };
    Some((result, end))
}

/// One `{"type":"text","text":...}` block at `b[i]` (other members skipped, as serde_json
/// ignores them, except those a block of another type reads: those decline).
fn text_block(text: &ByteString, i: usize) -> Option<(ContentBlock, usize)> {
    // The envelope, the result, `content` and the block are four levels above its members.
    const DEPTH: usize = MAX_DEPTH - 4;
    let b = bytes_of(text);
    let mut kind = None;
    let mut body = None;
    let end = members(b, i, |key, v| match key {
        b"type" => once(&mut kind, is_text(text, v)?),
        b"text" => once(&mut body, string(text, v)?),
        b"data" | b"mimeType" | b"resource" | b"uri" | b"name" | b"description" => None,
        _ => value_end(b, v, DEPTH),
    })?;
    if !kind? {
        return None;
    }
    Some((ContentBlock::Text { text: body? }, end))
}

/// Whether the string at `b[i]` is `text` (compared in place unless it has an escape).
fn is_text(text: &ByteString, i: usize) -> Option<(bool, usize)> {
    string_at(text, i).map(|(s, end)| (s == "text", end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(text: &str) -> Option<CallToolResult> {
        let text = ByteString::from(text);
        let (r, end) = call_result_at(&text, 0)?;
        (end == text.len()).then_some(r)
    }

    #[test]
    fn reads_a_common_result_as_serde_json_does() {
        for text in [
            r#"{"content":[{"type":"text","text":"m1"}]}"#,
            r#"{"content":[{"type":"text","text":"a\nb \u00e9","annotations":{"audience":["user"]}},{"type":"text","text":""}],"isError":true,"_meta":{"k":1}}"#,
            r#"{"content":[],"structuredContent":{"n":[1,2.5,null]},"isError":false,"resultType":"complete"}"#,
            r#"{"structuredContent":null,"resultType":null,"task":{"x":1},"structuredContentMismatch":"x"}"#,
            r#"{ "content" : [ { "text" : "t" , "type" : "text" } ] }"#,
        ] {
            let want: CallToolResult = serde_json::from_str(text).expect("serde");
            assert_eq!(ours(text), Some(want), "{text}");
        }
    }

    #[test]
    fn declines_what_serde_json_must_judge() {
        for text in [
            r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"a","data":5}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":null}]}"#,
            r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
            r#"{"content":[{"text":"a"}]}"#,
            r#"{"content":null}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"isError":null}"#,
            r#"{"isError":1}"#,
            r#"{"c\u006fntent":[]}"#,
            r#"{"content":[{"type":"text","text":"a"}],"x":}"#,
        ] {
            assert_eq!(ours(text), None, "{text}");
        }
    }
}
