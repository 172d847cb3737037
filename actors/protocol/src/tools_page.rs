//! A `tools/list` page read in one pass over its text: each tool's name and title copied, its
//! description (when it has no escape) kept as a slice of the text, its schemas and annotations
//! as the [`RawJson`] slices [`value_end`] accepted, nothing else built. The slices share the
//! page's buffer: a 10k-tool page's schemas and descriptions are most of it, and copying them
//! into fresh memory (each page of it a fault) cost more than reading them. A page whose kept
//! slices are less than half of it (a large `_meta`) has them copied out instead, so that a
//! tool never keeps much more than itself alive.
//!
//! It is a fast path, never the judge: it reads only pages it is sure of and declines
//! (`None`) anything else (an escape in a key, a duplicate member, a `null` name, nesting past
//! its depth, an error in any form), and the caller then parses with serde_json, whose result
//! or error stands. The property tests in `props` hold it to that: whatever it reads, serde_json
//! reads the same.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use bytestring::ByteString;

use crate::rawjson::{string_end, value_end, ws, RawJson, MAX_DEPTH};
use crate::types::{ListToolsResult, Tool, ToolExecution};

/// Reads the `result` of a JSON-RPC response line with `read` (given the line's text and
/// where the result starts, it returns what it read and where the result ends), when the
/// line's other members are only `jsonrpc`, `id` and others no reader looks at; `None` for
/// anything else (an `error`, `method` or `params` member, a duplicate, invalid JSON, bytes
/// after the object, `read` declining), which the caller then gives to serde_json.
pub fn plain_result<T>(
    line: &Bytes,
    mut read: impl FnMut(&ByteString, usize) -> Option<(T, usize)>,
) -> Option<T> {
    let text = ByteString::try_from(line.clone()).ok()?;
    let b = bytes_of(&text);
    let mut result = None;
    let mut id = false;
    let end = members(b, ws(b, 0), |key, v| match key {
        b"result" if result.is_none() => {
            let (value, end) = read(&text, v)?;
            result = Some(value);
            Some(end)
        }
        b"id" if !std::mem::replace(&mut id, true) => value_end(b, v, MAX_DEPTH - 1),
        b"result" | b"id" | b"error" | b"method" | b"params" => None,
        _ => value_end(b, v, MAX_DEPTH - 1),
    })?;
    (ws(b, end) == b.len()).then_some(result?)
}

/// The whole of `text` as one `tools/list` result object, or `None` where serde_json must
/// decide (the tests' entry; the runtime reads a page inside its line, [`tools_page_at`]).
#[cfg(test)]
pub(crate) fn tools_page(text: &ByteString) -> Option<ListToolsResult> {
    let b = bytes_of(text);
    let (page, end) = tools_page_at(text, ws(b, 0))?;
    (ws(b, end) == b.len()).then_some(page)
}

/// The `tools/list` result object at `text[i..]` and the index past it, or `None` where
/// serde_json must decide.
pub fn tools_page_at(text: &ByteString, i: usize) -> Option<(ListToolsResult, usize)> {
    let b = bytes_of(text);
    let mut tools = None;
    let mut next_cursor = None;
    let mut ttl_ms = None;
    let mut result_type = None;
    let end = members(b, i, |key, v| match key {
        b"tools" => {
            if tools.is_some() {
                return None;
            }
            let (list, end) = tool_array(text, v)?;
            tools = Some(list);
            Some(end)
        }
        b"nextCursor" => once(&mut next_cursor, opt_string(text, v)?),
        b"resultType" => once(&mut result_type, opt_string(text, v)?),
        b"ttlMs" => once(&mut ttl_ms, opt_u64(b, v)?),
        _ => value_end(b, v, MAX_DEPTH - 2),
    })?;
    let mut tools: Vec<Arc<Tool>> = tools?;
    let kept: usize = tools.iter().map(|t| raw_len(t)).sum();
    if kept * 2 < end - i {
        for t in &mut tools {
            // Each tool was just made here: the only owner of its `Arc`.
            if let Some(t) = Arc::get_mut(t) {
                detach(t);
            }
        }
    }
    let page = ListToolsResult {
        tools,
        next_cursor: next_cursor.flatten(),
        ttl_ms: ttl_ms.flatten(),
        result_type: result_type.flatten(),
    };
    Some((page, end))
}

/// The text's bytes.
pub(crate) fn bytes_of(text: &ByteString) -> &[u8] {
    let s: &str = text;
    s.as_bytes()
}

/// The bytes of a tool's members kept as slices (an escaped description was copied: counting
/// it too only makes a page likelier to be kept, and it is small).
fn raw_len(t: &Tool) -> usize {
    let len = |r: &Option<RawJson>| r.as_ref().map_or(0, |r| r.get().len());
    t.input_schema.get().len()
        + len(&t.output_schema)
        + len(&t.annotations)
        + t.description.as_ref().map_or(0, |d| d.len())
}

/// Copies a tool's sliced members out of the page.
fn detach(t: &mut Tool) {
    if let Some(d) = &mut t.description {
        *d = ByteString::from(&**d);
    }
    t.input_schema = t.input_schema.detached();
    for r in [&mut t.output_schema, &mut t.annotations]
        .into_iter()
        .flatten()
    {
        *r = r.detached();
    }
}

/// Stores a member's value the first time; a second one declines.
pub(crate) fn once<T>(slot: &mut Option<T>, (value, end): (T, usize)) -> Option<usize> {
    slot.replace(value).is_none().then_some(end)
}

/// Walks the object at `b[i]`: `f(key, value_start)` returns the value's end, or `None` to
/// decline. Keys with an escape decline (serde_json would match them unescaped). Returns the
/// index past the closing brace.
pub(crate) fn members(
    b: &[u8],
    i: usize,
    mut f: impl FnMut(&[u8], usize) -> Option<usize>,
) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (key_end, escaped) = string_end(b, i)?;
        if escaped {
            return None;
        }
        let key = &b[i + 1..key_end - 1];
        let colon = ws(b, key_end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        i = ws(b, f(key, ws(b, colon + 1))?);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The string at `b[i]` and the index past it: borrowed from `text` when it has no escape,
/// unescaped by serde_json when it has one (rare; a lone surrogate declines, as serde_json
/// would).
pub(crate) fn string_at(text: &ByteString, i: usize) -> Option<(Cow<'_, str>, usize)> {
    let b = bytes_of(text);
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let (end, escaped) = string_end(b, i)?;
    let s = if escaped {
        Cow::Owned(serde_json::from_str(&text[i..end]).ok()?)
    } else {
        Cow::Borrowed(&text[i + 1..end - 1])
    };
    Some((s, end))
}

/// The string at `b[i]`, unescaped, and the index past it.
pub(crate) fn string(text: &ByteString, i: usize) -> Option<(String, usize)> {
    string_at(text, i).map(|(s, end)| (s.into_owned(), end))
}

/// `null` or a string, as a slice of `text` when it has no escape.
fn opt_text(text: &ByteString, i: usize) -> Option<(Option<ByteString>, usize)> {
    if bytes_of(text).get(i..i + 4) == Some(b"null") {
        return Some((None, i + 4));
    }
    let (s, end) = string_at(text, i)?;
    let s = match s {
        Cow::Borrowed(s) => text.slice_ref(s),
        Cow::Owned(s) => ByteString::from(s),
    };
    Some((Some(s), end))
}

/// `null` or a string.
pub(crate) fn opt_string(text: &ByteString, i: usize) -> Option<(Option<String>, usize)> {
    if bytes_of(text).get(i..i + 4) == Some(b"null") {
        return Some((None, i + 4));
    }
    string(text, i).map(|(s, end)| (Some(s), end))
}

/// `null` or a plain unsigned integer that fits a `u64` (anything else declines).
fn opt_u64(b: &[u8], i: usize) -> Option<(Option<u64>, usize)> {
    if b.get(i..i + 4) == Some(b"null") {
        return Some((None, i + 4));
    }
    let mut end = i;
    while b.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    if end == i || (b[i] == b'0' && end > i + 1) {
        return None;
    }
    let digits = std::str::from_utf8(&b[i..end]).ok()?;
    Some((Some(digits.parse().ok()?), end))
}

/// `null` or a JSON value kept raw.
fn opt_raw(text: &ByteString, i: usize, depth: usize) -> Option<(Option<RawJson>, usize)> {
    let b = bytes_of(text);
    if b.get(i..i + 4) == Some(b"null") {
        return Some((None, i + 4));
    }
    let end = value_end(b, i, depth)?;
    Some((Some(RawJson::accepted(text, i, end)), end))
}

/// The array of tools at `b[i]`.
fn tool_array(text: &ByteString, i: usize) -> Option<(Vec<Arc<Tool>>, usize)> {
    array(text, i, |text, i| {
        tool(text, i).map(|(t, end)| (Arc::new(t), end))
    })
}

/// The array at `b[i]`, each element read by `item` (given the text and where the element
/// starts, it returns it and the index past it, or `None` to decline).
pub(crate) fn array<T>(
    text: &ByteString,
    i: usize,
    mut item: impl FnMut(&ByteString, usize) -> Option<(T, usize)>,
) -> Option<(Vec<T>, usize)> {
    let b = bytes_of(text);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut items = Vec::new();
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some((items, i + 1));
    }
    // Room for one first (a call's result is mostly one block); more grows as usual.
    items.reserve_exact(1);
    loop {
        let (value, end) = item(text, i)?;
        items.push(value);
        i = ws(b, end);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b']' => return Some((items, i + 1)),
            _ => return None,
        }
    }
}

/// One tool object at `b[i]`.
fn tool(text: &ByteString, i: usize) -> Option<(Tool, usize)> {
    // The envelope, the result, the list and the tool are four levels above its members.
    const DEPTH: usize = MAX_DEPTH - 4;
    let b = bytes_of(text);
    let mut name = None;
    let mut title = None;
    let mut description = None;
    let mut input_schema = None;
    let mut output_schema = None;
    let mut annotations = None;
    let mut execution = None;
    let end = members(b, i, |key, v| match key {
        b"name" => once(&mut name, string(text, v)?),
        b"title" => once(&mut title, opt_string(text, v)?),
        b"description" => once(&mut description, opt_text(text, v)?),
        b"inputSchema" => {
            let end = value_end(b, v, DEPTH)?;
            once(&mut input_schema, (RawJson::accepted(text, v, end), end))
        }
        b"outputSchema" => once(&mut output_schema, opt_raw(text, v, DEPTH)?),
        b"annotations" => once(&mut annotations, opt_raw(text, v, DEPTH)?),
        b"execution" => {
            // Rare and small: serde_json reads it.
            let end = value_end(b, v, DEPTH)?;
            let e: Option<ToolExecution> = serde_json::from_str(&text[v..end]).ok()?;
            once(&mut execution, (e, end))
        }
        _ => value_end(b, v, DEPTH),
    })?;
    let tool = Tool {
        name: name?,
        title: title.flatten(),
        description: description.flatten(),
        input_schema: input_schema.unwrap_or_else(crate::types::empty_object_schema),
        output_schema: output_schema.flatten(),
        annotations: annotations.flatten(),
        execution: execution.flatten(),
    };
    Some((tool, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_page(text: &str) -> Option<ListToolsResult> {
        serde_json::from_str(text).ok()
    }

    fn page(text: &str) -> Option<ListToolsResult> {
        tools_page(&ByteString::from(text))
    }

    #[test]
    fn reads_a_page_as_serde_json_does() {
        let page = r#"{"tools":[{"name":"a","description":"d\n\u00e9","inputSchema":{"type":"object","properties":{"x":{"type":"integer","minimum":-1.5e3}}},"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"required"},"_meta":{"k":[1,null]}},{"name":"b","title":null,"outputSchema":null}],"nextCursor":"c2","ttlMs":60000,"resultType":"complete"}"#;
        let ours = self::page(page).expect("read");
        let theirs = serde_page(page).expect("serde");
        assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
        assert_eq!(ours.tools.len(), 2);
        assert!(ours.tools[0].task_required());
        assert_eq!(ours.tools[1].input_schema.get(), r#"{"type":"object"}"#);
    }

    #[test]
    fn schemas_and_descriptions_share_the_page_unless_they_are_a_small_part_of_it() {
        let inside =
            |text: &ByteString, s: &str| bytes_of(text).as_ptr_range().contains(&s.as_ptr());
        let described = |t: &Tool| t.description.as_deref().unwrap_or_default().to_owned();
        let schema = r#"{"type":"object","properties":{"q":{"type":"string"}}}"#;
        let lean = ByteString::from(format!(
            r#"{{"tools":[{{"name":"a","description":"finds things","inputSchema":{schema}}},{{"name":"b","description":"tab\there","inputSchema":{schema}}}]}}"#
        ));
        let page = tools_page(&lean).expect("read");
        let (a, b) = (&page.tools[0], &page.tools[1]);
        assert!(
            inside(&lean, a.input_schema.get()),
            "most of the page: shared"
        );
        assert!(
            inside(&lean, a.description.as_deref().unwrap_or_default()),
            "a plain description: shared"
        );
        assert_eq!(described(a), "finds things");
        assert!(
            !inside(&lean, b.description.as_deref().unwrap_or_default()),
            "an escaped one: unescaped into its own"
        );
        assert_eq!(described(b), "tab\there");
        let padded = ByteString::from(format!(
            r#"{{"tools":[{{"name":"a","description":"finds things","inputSchema":{schema}}}],"_meta":{{"pad":"{}"}}}}"#,
            "x".repeat(4096)
        ));
        let page = tools_page(&padded).expect("read");
        let a = &page.tools[0];
        assert!(
            !inside(&padded, a.input_schema.get()),
            "a small part: copied out"
        );
        assert!(
            !inside(&padded, a.description.as_deref().unwrap_or_default()),
            "the description too"
        );
        assert_eq!(a.input_schema.get(), schema);
        assert_eq!(described(a), "finds things");
    }

    #[test]
    fn declines_what_serde_json_must_judge() {
        for page in [
            r#"{"tools":[{"name":"a","name":"b"}]}"#,
            r#"{"tools":[{"name":null}]}"#,
            r#"{"tools":[{"title":"no name"}]}"#,
            r#"{"tools":[{"n\u0061me":"a"}]}"#,
            r#"{"tools":[{"name":"a","inputSchema":{"type":}}]}"#,
            r#"{"tools":[],"ttlMs":1.5}"#,
            r#"{"tools":[],"ttlMs":-1}"#,
            r#"{"nextCursor":"x"}"#,
            r#"{"tools":[]} x"#,
            r#"{"tools":[{"name":"a\ud800"}]}"#,
        ] {
            assert!(self::page(page).is_none(), "{page}");
        }
    }

    #[test]
    fn finds_the_result_of_a_plain_line_only() {
        let raw = |text: &ByteString, i: usize| {
            let end = value_end(bytes_of(text), i, MAX_DEPTH)?;
            Some((text[i..end].to_owned(), end))
        };
        let line = Bytes::from_static(br#" {"jsonrpc":"2.0","id":2,"result":{"tools":[]}} "#);
        assert_eq!(plain_result(&line, raw).as_deref(), Some(r#"{"tools":[]}"#));
        for line in [
            &br#"{"jsonrpc":"2.0","id":2,"result":{},"error":null}"#[..],
            br#"{"id":2,"id":3,"result":{}}"#,
            br#"{"id":2,"result":{},"result":{}}"#,
            br#"{"id":2,"result":{},"method":"x"}"#,
            br#"{"id":2}"#,
            br#"{"id":2,"result":{}}}"#,
            b"{\"id\":2,\"result\":\"\xff\"}",
        ] {
            let bytes = Bytes::copy_from_slice(line);
            assert_eq!(plain_result(&bytes, raw), None, "{}", line.escape_ascii());
        }
    }
}
