//! Property tests of the wire parsers: the NDJSON codec, the SSE parser and the JSON-RPC envelope.
//!
//! Each property runs `PROPTEST_CASES` cases (a small default for CI, see [`config`]); a long run
//! is `PROPTEST_CASES=1000000 cargo test --release -p harness9-protocol props` (README).

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;

use super::codec::{Frame, NdjsonCodec, PREFIX_BYTES};
use super::jsonrpc::{
    derived_request_line, fast_response_id, line_result, request_line, sniff_id, Incoming,
    RequestId,
};
use super::sse::{Event, SseError, SseParser};

/// `PROPTEST_CASES` if set, else `default`; failures are shrunk and printed, not saved to files.
fn config(default: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Cuts `input` at `cuts` (indices modulo its length, sorted; repeats give empty chunks).
fn split<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::with_capacity(at.len() + 1);
    let mut from = 0;
    for c in at {
        out.push(&input[from..c]);
        from = c;
    }
    out.push(&input[from..]);
    out
}

/// Bytes that print as a byte string when a case fails.
#[derive(Clone)]
struct Wire(Vec<u8>);

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

impl std::ops::Deref for Wire {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Bytes built from pieces that matter to line-based parsers, with raw bytes among them.
fn wire_bytes(pieces: &'static [&'static [u8]], len: usize) -> impl Strategy<Value = Wire> {
    let piece = prop_oneof![
        4 => proptest::sample::select(pieces).prop_map(<[u8]>::to_vec),
        2 => proptest::collection::vec(b'a'..=b'z', 1..12),
        1 => proptest::collection::vec(any::<u8>(), 1..8),
        1 => Just(b"\r\n".to_vec()),
    ];
    proptest::collection::vec(piece, 0..len).prop_map(|v| Wire(v.concat()))
}

// ---------------------------------------------------------------- NDJSON codec

const NDJSON_PIECES: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\r",
    b" ",
    b"\t",
    b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
    b"{\"id\":",
    b"\xff\xfe",
    b"\n\n",
];

/// Feeds `chunks` the way `FramedRead` does: `decode` after each chunk until it yields nothing,
/// then `decode_eof` until it yields nothing. Returns the frames and what is left in the buffer.
fn decode_all(max: usize, chunks: &[&[u8]]) -> (Vec<Frame>, usize) {
    let mut codec = NdjsonCodec::new(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for c in chunks {
        buf.extend_from_slice(c);
        while let Some(f) = codec.decode(&mut buf) {
            out.push(f);
        }
    }
    while let Some(f) = codec.decode_eof(&mut buf) {
        out.push(f);
    }
    (out, buf.len())
}

/// What the codec must yield, computed line by line from the whole input.
fn ndjson_model(input: &[u8], max: usize) -> Vec<Frame> {
    let max = max.max(1);
    let mut out = Vec::new();
    let mut rest = input;
    loop {
        let (raw, next, last) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..], false),
            None => (rest, &rest[rest.len()..], true),
        };
        if raw.len() > max {
            let keep = PREFIX_BYTES.min(max + 1);
            out.push(Frame::TooLong {
                prefix: Bytes::copy_from_slice(&raw[..keep]),
                max,
            });
        } else {
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            if !line.iter().all(u8::is_ascii_whitespace) {
                out.push(Frame::Line(Bytes::copy_from_slice(line)));
            }
        }
        if last {
            return out;
        }
        rest = next;
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Any bytes, any split, any max: the frames are those of the whole input, read line by
    /// line; over-long lines are reported once with the same prefix and skipped; nothing is
    /// left in the buffer at the end (`FramedRead` would fail with "bytes remaining").
    #[test]
    fn ndjson_any_split_gives_the_same_frames(
        input in wire_bytes(NDJSON_PIECES, 48),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        max in prop_oneof![1usize..48, Just(PREFIX_BYTES - 1), Just(1 << 20)],
    ) {
        let want = ndjson_model(&input, max);
        let (whole, left) = decode_all(max, &[&input]);
        prop_assert_eq!(left, 0);
        prop_assert_eq!(&whole, &want);
        let (parts, left) = decode_all(max, &split(&input, &cuts));
        prop_assert_eq!(left, 0);
        prop_assert_eq!(&parts, &want);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        let (one_by_one, _) = decode_all(max, &bytes);
        prop_assert_eq!(&one_by_one, &want);
    }

    /// Over-long lines longer than the prefix: the prefix is the line's first bytes only.
    #[test]
    fn ndjson_long_lines_keep_a_prefix_of_their_own(
        lens in proptest::collection::vec(0usize..1500, 1..5),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
        max in 1usize..1200,
    ) {
        let mut input = Vec::new();
        for (i, n) in lens.iter().enumerate() {
            input.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, *n));
            input.push(b'\n');
        }
        let (got, left) = decode_all(max, &split(&input, &cuts));
        prop_assert_eq!(left, 0);
        prop_assert_eq!(got, ndjson_model(&input, max));
    }
}

// ---------------------------------------------------------------- SSE

const SSE_PIECES: &[&[u8]] = &[
    b"data:",
    b"data: ",
    b"event: ",
    b"id: ",
    b"id:\0",
    b"retry: ",
    b"1500",
    b":",
    b"\n",
    b"\r",
    b"\n\n",
    b"\r\n\r\n",
    b"\xef\xbb\xbf",
    b"\xff",
];

/// Feeds chunks until the first error: the events returned before it, and the error.
fn sse_run(max: usize, chunks: &[&[u8]]) -> (Vec<Event>, Option<SseError>, SseParser) {
    let mut p = SseParser::new(max);
    let mut out = Vec::new();
    for c in chunks {
        match p.feed(c) {
            Ok(evs) => out.extend(evs),
            Err(e) => return (out, Some(e), p),
        }
    }
    (out, None, p)
}

/// One generated event block: `event:`, `data:` lines, `id:`, comments, and the line endings.
#[derive(Debug, Clone)]
struct Block {
    event: Option<String>,
    data: Vec<String>,
    id: Option<String>,
    comment: bool,
    ends: Vec<u8>,
}

fn block() -> impl Strategy<Value = Block> {
    (
        proptest::option::of("[a-z]{1,8}"),
        proptest::collection::vec("[ -~]{0,40}", 0..4),
        proptest::option::of("[a-z0-9]{0,8}"),
        any::<bool>(),
        proptest::collection::vec(0u8..3, 8),
    )
        .prop_map(|(event, data, id, comment, ends)| Block {
            event,
            data,
            id,
            comment,
            ends,
        })
}

/// The stream text of `blocks`, each ended by a blank line except perhaps the last.
fn sse_text(blocks: &[Block], end_last: bool) -> Vec<u8> {
    let mut lines: Vec<String> = Vec::new();
    let mut ends: Vec<u8> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let mut own = Vec::new();
        if b.comment {
            own.push(": keep-alive".to_owned());
        }
        if let Some(e) = &b.event {
            own.push(format!("event: {e}"));
        }
        own.extend(b.data.iter().map(|d| format!("data: {d}")));
        if let Some(id) = &b.id {
            own.push(format!("id: {id}"));
        }
        if i + 1 < blocks.len() || end_last {
            own.push(String::new());
        }
        for (j, l) in own.into_iter().enumerate() {
            lines.push(l);
            ends.push(b.ends[j % b.ends.len()]);
        }
    }
    let mut out = Vec::new();
    let mut prev_cr = false;
    for (l, e) in lines.iter().zip(ends) {
        out.extend_from_slice(l.as_bytes());
        // A lone CR then an empty line ended by LF would read as one CRLF: keep CR there.
        let e = if prev_cr && l.is_empty() && e != 1 {
            1
        } else {
            e
        };
        out.extend_from_slice(match e {
            0 => &b"\n"[..],
            1 => b"\r",
            _ => b"\r\n",
        });
        prev_cr = e == 1;
    }
    out
}

/// What a byte-by-byte reader dispatches from `blocks` before the first oversized one, and
/// whether one is oversized (its data, lines joined by `\n`, over `max`).
fn sse_model(blocks: &[Block], end_last: bool, max: usize) -> (Vec<Event>, bool) {
    let mut out = Vec::new();
    let mut last_id: Option<String> = None;
    for (i, b) in blocks.iter().enumerate() {
        if b.data.join("\n").len() > max {
            return (out, true);
        }
        if let Some(id) = &b.id {
            last_id = Some(id.clone());
        }
        let ended = i + 1 < blocks.len() || end_last;
        if ended && !b.data.is_empty() {
            out.push(Event {
                event: b.event.clone().unwrap_or_default(),
                data: b.data.join("\n"),
                id: last_id.clone(),
            });
        }
    }
    (out, false)
}

proptest! {
    #![proptest_config(config(256))]

    /// Any bytes, any split: the events and the error are those of a byte-by-byte reader
    /// (a chunk that fails returns none of its events, so the split sees a prefix of them),
    /// and `retry`/`Last-Event-ID` come out the same.
    #[test]
    fn sse_any_split_gives_the_same_events(
        input in wire_bytes(SSE_PIECES, 48),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        max in prop_oneof![1usize..32, Just(1 << 20)],
    ) {
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        let (want, want_err, reference) = sse_run(max, &bytes);
        let (got, err, p) = sse_run(max, &split(&input, &cuts));
        prop_assert_eq!(&err, &want_err);
        if want_err.is_none() {
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(p.retry_ms, reference.retry_ms);
            prop_assert_eq!(p.last_event_id(), reference.last_event_id());
        } else {
            prop_assert!(want.starts_with(&got), "{:?} is not a prefix of {:?}", got, want);
        }
        let (whole, whole_err, _) = sse_run(max, &[&input]);
        prop_assert_eq!(&whole_err, &want_err);
        if whole_err.is_none() {
            prop_assert_eq!(&whole, &want);
        }
    }

    /// Generated streams (LF, CR, CRLF, comments, multi-line data, sticky ids): the events
    /// are exactly the blocks with data; an event with at most `max` bytes of data passes,
    /// one with more fails the stream there, whatever the split.
    #[test]
    fn sse_events_and_the_size_limit(
        blocks in proptest::collection::vec(block(), 0..6),
        end_last in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        max in 16usize..64,
    ) {
        let text = sse_text(&blocks, end_last);
        let (want, too_large) = sse_model(&blocks, end_last, max);
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        let (got, err, _) = sse_run(max, &bytes);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(err, too_large.then_some(SseError::TooLarge(max)));
        let (got, err, _) = sse_run(max, &split(&text, &cuts));
        prop_assert_eq!(err.is_some(), too_large);
        prop_assert!(want.starts_with(&got));
        if !too_large {
            prop_assert_eq!(got, want);
        }
    }

    /// A caller that goes on feeding after an error never gets an event over the limit.
    #[test]
    fn sse_never_dispatches_an_oversized_event(
        input in wire_bytes(SSE_PIECES, 48),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        max in 1usize..32,
    ) {
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        for chunks in [split(&input, &cuts), bytes] {
            let mut p = SseParser::new(max);
            for c in chunks {
                if let Ok(evs) = p.feed(c) {
                    for e in evs {
                        prop_assert!(e.data.len() <= max, "{} bytes over a max of {}", e.data.len(), max);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- JSON-RPC

/// Any JSON value, small.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
        ".{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::vec(("(id|result|error|method|[a-z]{1,3})", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// The text of an `id` member: numbers (0, huge, out of range, negative, float), strings,
/// null, and ids nested in objects or arrays.
fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..1000).prop_map(|n| n.to_string()),
        Just("0".to_owned()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just(i64::MAX.to_string()),
        Just("999999999999999999".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("-1".to_owned()),
        Just("1.5".to_owned()),
        Just("1e3".to_owned()),
        Just("007".to_owned()),
        Just("null".to_owned()),
        "\"[a-z0-9]{0,6}\"",
        (0u64..100).prop_map(|n| format!("{{\"id\":{n}}}")),
        (0u64..100).prop_map(|n| format!("[{n}]")),
    ]
}

/// One member of a near-valid JSON-RPC object, as `"key":value` text.
fn member() -> impl Strategy<Value = String> {
    let text = |v: Value| v.to_string();
    prop_oneof![
        2 => Just(r#""jsonrpc":"2.0""#.to_owned()),
        1 => Just(r#""jsonrpc":"1.0""#.to_owned()),
        3 => id_text().prop_map(|t| format!(r#""id":{t}"#)),
        3 => json_value().prop_map(move |v| format!(r#""result":{}"#, text(v))),
        1 => Just(r#""error":null"#.to_owned()),
        2 => prop_oneof![
            (any::<i64>(), "[ -~]{0,6}").prop_map(|(c, m)| serde_json::json!({"code": c, "message": m})),
            json_value(),
        ]
        .prop_map(|v| format!(r#""error":{v}"#)),
        1 => prop_oneof![Just("\"ping\""), Just("null"), Just("5")]
            .prop_map(|m| format!(r#""method":{m}"#)),
        1 => json_value().prop_map(|v| format!(r#""params":{v}"#)),
        1 => ("[a-z]{1,6}", json_value()).prop_map(|(k, v)| format!(r#""{k}":{v}"#)),
        1 => Just(r#""\u0069d":3"#.to_owned()),
    ]
}

/// A near-valid JSON-RPC line: random members in random order, often after the fast path's
/// exact prefix, with whitespace here and there.
fn rpc_line() -> impl Strategy<Value = Wire> {
    (
        proptest::option::of(0u64..1_000_000_000_000_000_000),
        proptest::collection::vec(member(), 0..6),
        proptest::collection::vec(prop_oneof![Just(""), Just(" "), Just("\n ")], 6),
    )
        .prop_map(|(fast, members, ws)| {
            let mut parts = Vec::new();
            let mut line = String::from("{");
            if let Some(n) = fast {
                line.push_str(&format!(r#""jsonrpc":"2.0","id":{n},"result":"#));
                parts.push(String::new());
            }
            for (i, m) in members.iter().enumerate() {
                parts.push(format!("{}{m}", ws[i % ws.len()]));
            }
            if fast.is_some() {
                // The fast prefix's result value: the first member's value, or `{}`.
                let first = members
                    .first()
                    .and_then(|m| m.split_once(':').map(|(_, v)| v.to_owned()))
                    .unwrap_or_else(|| "{}".to_owned());
                line.push_str(&first);
                for p in parts.iter().skip(2) {
                    line.push(',');
                    line.push_str(p);
                }
            } else {
                line.push_str(&parts.join(","));
            }
            line.push('}');
            Wire(line.into_bytes())
        })
}

/// The outcome of a line for our request `n`, as each path would hand it to the waiter:
/// `Some(Ok(result))`, `Some(Err(()))` (the call fails), or `None` (not a reply to `n`).
type Outcome = Option<Result<Value, ()>>;

fn fast_outcome(line: &[u8]) -> Option<(i64, Result<Value, ()>)> {
    let n = fast_response_id(line)?;
    Some((n, line_result::<Value>(line).map_err(|_| ())))
}

fn slow_outcome(line: &[u8], n: i64) -> Outcome {
    match Incoming::parse(line) {
        Ok(Incoming::Response {
            id: RequestId::Number(got),
            outcome,
        }) if got == n => Some(
            outcome
                .map_err(|_| ())
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).map_err(|_| ())),
        ),
        _ => None,
    }
}

/// Whenever the fast path claims a line, it agrees with the envelope path: the same result,
/// or no result on either (a line the envelope path skips fails the call on the fast path,
/// which is the quicker of two errors).
fn check_paths_agree(line: &[u8]) -> Result<(), TestCaseError> {
    let _ = sniff_id(line);
    let slow = Incoming::parse(line);
    let Some((n, fast)) = fast_outcome(line) else {
        return Ok(());
    };
    if let Ok(Incoming::Response { id, .. }) = &slow {
        prop_assert_eq!(id, &RequestId::Number(n), "the paths read different ids");
    }
    let slow = slow_outcome(line, n);
    match (&fast, &slow) {
        (Ok(a), Some(Ok(b))) => prop_assert_eq!(a, b),
        (Ok(a), other) => {
            return Err(TestCaseError::fail(format!(
                "the fast path gives {a} for id {n}, the envelope path {other:?}"
            )))
        }
        (Err(()), Some(Ok(b))) => {
            return Err(TestCaseError::fail(format!(
                "the envelope path gives {b} for id {n}, the fast path an error"
            )))
        }
        (Err(()), _) => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    /// Any bytes: no parser panics, and the two paths agree.
    #[test]
    fn jsonrpc_any_bytes(input in proptest::collection::vec(any::<u8>(), 0..96).prop_map(Wire)) {
        check_paths_agree(&input)?;
        let _ = line_result::<Value>(&input);
    }

    /// Any bytes after the fast path's prefix (so it claims the line): the paths agree.
    #[test]
    fn jsonrpc_fast_prefix_then_any_bytes(
        n in 0u64..1000,
        tail in wire_bytes(&[b"{}", b"}", b",", b"\"error\":", b"\"result\":", b"\"id\":2", b"null", b"\"method\":\"x\"", b"[", b"]", b"\""], 12),
    ) {
        let mut line = format!(r#"{{"jsonrpc":"2.0","id":{n},"result":"#).into_bytes();
        line.extend_from_slice(&tail);
        check_paths_agree(&line)?;
    }

    /// A request line written by hand is the derived envelope's, byte for byte: any id, any
    /// method (quotes, backslashes and control characters included), params or none.
    #[test]
    fn request_lines_are_the_derived_envelope(
        id in any::<i64>(),
        method in "[a-z/\"\\\u{0}-\u{1f}\u{e9}\u{1f600}]{0,16}",
        params in proptest::option::of((any::<String>(), any::<i64>())),
    ) {
        let params = params.map(|(s, n)| serde_json::json!({"name": s, "n": n, "a": [s, null]}));
        prop_assert_eq!(
            request_line(id, &method, params.as_ref()),
            derived_request_line(id, &method, params.as_ref())
        );
    }

    /// Near-valid objects (random key order, extra and duplicate keys, result and/or error,
    /// null members, ids of every kind): no panic, and the two paths agree.
    #[test]
    fn jsonrpc_near_valid_objects_agree(line in rpc_line()) {
        check_paths_agree(&line)?;
    }

    /// What the id sniffer reads from a whole line is what the envelope path reads: the id of
    /// a response, never one nested in a member, never a request's (the server's id space).
    #[test]
    fn sniff_id_agrees_with_the_envelope(line in rpc_line()) {
        if let (Some(id), Ok(msg)) = (sniff_id(&line), Incoming::parse(&line)) {
            match msg {
                Incoming::Response { id: got, .. } => prop_assert_eq!(got, id),
                other => {
                    return Err(TestCaseError::fail(format!(
                        "sniffed id {id} from a line the envelope reads as {other:?}"
                    )))
                }
            }
        }
    }

    /// The id sniffer never panics on a prefix of any near-valid line, and what it reads from
    /// a response whose first member is its id is that id.
    #[test]
    fn sniff_id_reads_a_leading_id(line in rpc_line(), cut in any::<usize>(), n in any::<i64>()) {
        let _ = sniff_id(&line[..cut % (line.len() + 1)]);
        let lead = format!(r#"{{"id":{n},"result":{{"content":[{{"text":"xx"#);
        prop_assert_eq!(sniff_id(lead.as_bytes()), Some(RequestId::Number(n)));
    }
}

#[test]
fn paths_agree_on_found_inputs() {
    // Found by `jsonrpc_near_valid_objects_agree`: a duplicate `id` (the envelope path skips the
    // line, the fast path took the result) and a `method` beside the result (the envelope path
    // reads the server's request, the fast path took it as our reply).
    for line in [
        &br#"{"jsonrpc":"2.0","id":0,"result":"2.0","id":0}"#[..],
        br#"{"jsonrpc":"2.0","id":0,"result":{},"id":1}"#,
        br#"{"jsonrpc":"2.0","id":0,"result":null,"params":1,"params":2}"#,
        br#"{"jsonrpc":"2.0","id":0,"result":{},"method":"ping"}"#,
    ] {
        assert!(
            check_paths_agree(line).is_ok(),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn codec_prefix_stays_inside_the_line() {
    // Found by `ndjson_any_split_gives_the_same_frames`: the prefix of an over-long line read in
    // one chunk ran on into the next line (whose id `sniff_id` would then read).
    for (input, max) in [
        (&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"[..], 1),
        (b"0123456789\n{\"id\":7}\n", 4),
    ] {
        let (frames, _) = decode_all(max, &[input]);
        assert_eq!(frames, ndjson_model(input, max));
    }
}

#[test]
fn sse_found_inputs() {
    // Found by `sse_never_dispatches_an_oversized_event`: after `TooLarge` the next blank line
    // dispatched the oversized data (9 bytes, max 8) to a caller that went on feeding.
    let mut p = SseParser::new(8);
    let input = b"data:aaaaaaaa\ndata:aaaaaaaaa\r\n\n";
    for b in input.chunks(1) {
        if let Ok(evs) = p.feed(b) {
            assert!(evs.is_empty(), "{evs:?}");
        }
    }
    // Found by `sse_events_and_the_size_limit`: an event of exactly `max` bytes of data was
    // refused because its line (`data: ` + data) is longer than `max`.
    let mut p = SseParser::new(16);
    let evs = p.feed(b"data: 0123456789abcdef\n\n");
    assert_eq!(evs.map(|e| e.len()), Ok(1));
}

// ---------------------------------------------------------------- raw JSON and the tools page

/// Pieces of JSON text, valid and not: containers, strings with every kind of escape, control
/// characters and non-ASCII, numbers at the grammar's edges, literals and their typos.
const JSON_PIECES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b" ",
    b"\n",
    b"\t",
    b"\"a\"",
    b"\"k\":",
    b"\"\\u00e9\"",
    b"\"\\uD800\"",
    b"\"\\ug000\"",
    b"\"\\x\"",
    b"\"\\\\\"",
    b"\"\\\"",
    b"\"",
    b"\\",
    b"\"\x01\"",
    b"\"\t\"",
    "\"é😀\"".as_bytes(),
    b"\"abcdefghij\\\"klmnopqr\"",
    b"\"abcdefghijklmnopqrstu\"",
    b"0",
    b"-0",
    b"01",
    b"-",
    b"1.5e-3",
    b"1.",
    b".5",
    b"1e",
    b"1E+9",
    b"12",
    b"true",
    b"tru",
    b"null",
    b"nul",
    b"false",
    b"truex",
];

/// JSON text: a valid value as serde_json writes it, then maybe one piece put in or swapped in
/// somewhere; or pieces alone.
fn json_text() -> impl Strategy<Value = String> {
    let piece =
        proptest::sample::select(JSON_PIECES).prop_map(|p| String::from_utf8_lossy(p).into_owned());
    prop_oneof![
        2 => json_value().prop_map(|v| v.to_string()),
        3 => (json_value(), any::<usize>(), piece.clone(), any::<bool>()).prop_map(|(v, at, p, swap)| {
            let text = v.to_string();
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut rest = &text[at..];
            if swap {
                let mut cut = 1.min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                rest = &rest[cut..];
            }
            format!("{}{p}{rest}", &text[..at])
        }),
        2 => proptest::collection::vec(piece, 1..12).prop_map(|v| v.concat()),
    ]
}

/// One member of a tool object: good ones, and each way a member can be wrong or unusual.
const TOOL_MEMBERS: &[&str] = &[
    r#""name":"t1""#,
    r#""name":"a\u0062 \"q\"""#,
    r#""name":null"#,
    r#""name":"\ud800""#,
    r#""name":3"#,
    r#""title":"T""#,
    r#""title":null"#,
    r#""description":"d e\n""#,
    r#""description":7"#,
    r#""inputSchema":{"type":"object","properties":{"q":{"type":"string","maxLength":1e3}}}"#,
    r#""inputSchema":null"#,
    r#""inputSchema": [1, 2.5e3, "x", {}] "#,
    r#""inputSchema":{"a":}"#,
    r#""inputSchema":{"a":01}"#,
    r#""outputSchema":null"#,
    r#""outputSchema":{"type":"object"}"#,
    r#""annotations":{"readOnlyHint":true}"#,
    r#""annotations":null"#,
    r#""annotations":nul"#,
    r#""execution":{"taskSupport":"required"}"#,
    r#""execution":null"#,
    r#""execution":{"taskSupport":1}"#,
    r#""execution":{"x":1}"#,
    r#""_meta":{"k":[true,false,null]}"#,
    r#""icons":[]"#,
    r#""n\u0061me":"x""#,
    r#""inputSchema":{"type":"object"},"inputSchema":{}"#,
];

/// The good members of a tool, each key at most once.
const GOOD_TOOL_MEMBERS: &[&str] = &[
    r#""name":"t1""#,
    r#""title":"T""#,
    r#""description":"d e\n\u00e9""#,
    r#""inputSchema":{"type":"object","properties":{"q":{"type":"string","maxLength":1e3}}}"#,
    r#""outputSchema":null"#,
    r#""annotations":{"readOnlyHint":true}"#,
    r#""execution":{"taskSupport":"required"}"#,
    r#""_meta":{"k":[true,false,null]}"#,
];

/// A `{...}` of `members` joined by commas with some whitespace.
fn object(members: &[String], ws: &[&str]) -> String {
    let mut s = String::from("{");
    for (i, m) in members.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(ws[i % ws.len()]);
        s.push_str(m);
    }
    s.push('}');
    s
}

fn spacing() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::collection::vec(prop_oneof![Just(""), Just(" "), Just("\n\t")], 1..4)
}

/// A near-valid `tools/list` result: tools of any members (repeats included), and the page's
/// own members, good and bad, in any order.
fn tools_page_text() -> impl Strategy<Value = String> {
    let member = prop_oneof![
        2 => proptest::sample::select(GOOD_TOOL_MEMBERS),
        1 => proptest::sample::select(TOOL_MEMBERS),
    ];
    let tool = (proptest::collection::vec(member, 0..6), spacing())
        .prop_map(|(m, ws)| object(&m.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(), &ws));
    let page_member = prop_oneof![
        4 => proptest::collection::vec(tool, 0..4).prop_map(|t| format!(r#""tools":[{}]"#, t.join(","))),
        1 => proptest::sample::select(&[
            r#""nextCursor":"c2""#, r#""nextCursor":null"#, r#""nextCursor":5"#,
            r#""ttlMs":60000"#, r#""ttlMs":0"#, r#""ttlMs":01"#, r#""ttlMs":1.5"#,
            r#""ttlMs":-1"#, r#""ttlMs":null"#, r#""ttlMs":18446744073709551616"#,
            r#""resultType":"complete""#, r#""_meta":{}"#, r#""tools":null"#,
        ][..]).prop_map(str::to_owned),
    ];
    (proptest::collection::vec(page_member, 0..5), spacing()).prop_map(|(m, ws)| object(&m, &ws))
}

/// A well-formed `tools/list` result: every tool named, its other members unique.
fn good_tools_page_text() -> impl Strategy<Value = String> {
    let tool = (
        "[a-z_]{1,12}",
        proptest::sample::subsequence(GOOD_TOOL_MEMBERS, 0..GOOD_TOOL_MEMBERS.len()),
        spacing(),
    )
        .prop_map(|(name, m, ws)| {
            let mut members = vec![format!(r#""name":"{name}""#)];
            let others = m.iter().filter(|s| !s.starts_with(r#""name""#));
            members.extend(others.map(|s| (*s).to_owned()));
            object(&members, &ws)
        });
    (
        proptest::collection::vec(tool, 0..6),
        proptest::option::of("[a-z0-9]{1,8}"),
        spacing(),
    )
        .prop_map(|(tools, cursor, ws)| {
            let mut members = vec![format!(r#""tools":[{}]"#, tools.join(","))];
            if let Some(c) = cursor {
                members.push(format!(r#""nextCursor":"{c}""#));
            }
            object(&members, &ws)
        })
}

/// One member of a content block: good ones, and each way one can be wrong or unusual.
const BLOCK_MEMBERS: &[&str] = &[
    r#""type":"text""#,
    r#""type":"t\u0065xt""#,
    r#""type":"image""#,
    r#""type":null"#,
    r#""text":"m1""#,
    r#""text":"a\n\"b\" \u00e9""#,
    r#""text":null"#,
    r#""text":7"#,
    r#""text":"\ud800""#,
    r#""data":"AA==""#,
    r#""data":5"#,
    r#""mimeType":"text/plain""#,
    r#""uri":null"#,
    r#""annotations":{"audience":["user"],"priority":0.5}"#,
    r#""_meta":{"k":[true,null]}"#,
    r#""t\u0065xt":"x""#,
];

/// A near-valid `tools/call` result: blocks of any members (repeats included), and the
/// result's own members, good and bad, in any order.
fn call_result_text() -> impl Strategy<Value = String> {
    let block = (
        proptest::collection::vec(proptest::sample::select(BLOCK_MEMBERS), 0..5),
        spacing(),
    )
        .prop_map(|(m, ws)| object(&m.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(), &ws));
    let good_block = ("[a-z ]{0,12}", spacing()).prop_map(|(t, ws)| {
        object(
            &[
                r#""type":"text""#.to_owned(),
                format!(r#""text":"{t}\n{t}""#),
            ],
            &ws,
        )
    });
    let blocks = prop_oneof![1 => good_block, 2 => block];
    let member = prop_oneof![
        4 => proptest::collection::vec(blocks, 0..4).prop_map(|b| format!(r#""content":[{}]"#, b.join(","))),
        1 => proptest::sample::select(&[
            r#""isError":true"#, r#""isError":false"#, r#""isError":null"#, r#""isError":1"#,
            r#""structuredContent":{"n":[1,2.5e3,"x"]}"#, r#""structuredContent":null"#,
            r#""structuredContent":[01]"#, r#""resultType":"complete""#, r#""resultType":null"#,
            r#""resultType":3"#, r#""content":null"#, r#""content":{}"#, r#""_meta":{}"#,
            r#""task":{"taskId":"t"}"#, r#""structuredContentMismatch":"x""#,
        ][..]).prop_map(str::to_owned),
    ];
    (proptest::collection::vec(member, 0..5), spacing()).prop_map(|(m, ws)| object(&m, &ws))
}

/// The whole of `text` read by the fast `tools/call` result reader, or `None`.
fn fast_call_result(text: &str) -> Option<crate::types::CallToolResult> {
    let (r, end) = crate::call_result::call_result_at(&text.into(), 0)?;
    (end == text.len()).then_some(r)
}

/// A well-formed common result: text blocks, maybe `isError`, maybe `structuredContent`.
fn good_call_result_text() -> impl Strategy<Value = String> {
    let block = ("[a-z ]{0,12}", any::<bool>(), spacing()).prop_map(|(t, escaped, ws)| {
        let text = if escaped {
            format!(r#""text":"{t}\n\u00e9""#)
        } else {
            format!(r#""text":"{t}""#)
        };
        object(&[r#""type":"text""#.to_owned(), text], &ws)
    });
    (
        proptest::collection::vec(block, 0..4),
        proptest::option::of(any::<bool>()),
        any::<bool>(),
        spacing(),
    )
        .prop_map(|(blocks, is_error, structured, ws)| {
            let mut members = vec![format!(r#""content":[{}]"#, blocks.join(","))];
            if let Some(e) = is_error {
                members.push(format!(r#""isError":{e}"#));
            }
            if structured {
                members.push(r#""structuredContent":{"n":[1,{"k":null}]}"#.to_owned());
            }
            object(&members, &ws)
        })
}

proptest! {
    #![proptest_config(config(2048))]

    /// The validator accepts exactly what serde_json accepts as a raw value.
    #[test]
    fn raw_json_is_what_serde_json_accepts(text in json_text()) {
        let serde_ok = serde_json::from_str::<&serde_json::value::RawValue>(&text).is_ok();
        let ours = crate::rawjson::RawJson::parse(&text);
        prop_assert_eq!(ours.is_some(), serde_ok);
        if let Some(raw) = ours {
            prop_assert_eq!(raw.get(), text.trim_matches([' ', '\n', '\t', '\r']));
        }
    }

    /// Whatever page the fast path reads, serde_json reads the same; where serde_json fails,
    /// the fast path declines.
    #[test]
    fn the_fast_tools_page_is_serde_json(text in tools_page_text()) {
        let ours = crate::tools_page::tools_page(&text.as_str().into());
        let theirs = serde_json::from_str::<crate::types::ListToolsResult>(&text);
        match (ours, theirs) {
            (Some(o), Ok(t)) => prop_assert_eq!(format!("{o:?}"), format!("{t:?}")),
            (Some(o), Err(e)) => {
                return Err(TestCaseError::fail(format!("read {o:?} where serde_json failed: {e}")))
            }
            (None, _) => {}
        }
    }

    /// A well-formed page is read by the fast path (it does not decline its way to agreement),
    /// as serde_json reads it.
    #[test]
    fn the_fast_path_reads_well_formed_pages(text in good_tools_page_text()) {
        let ours = crate::tools_page::tools_page(&text.as_str().into());
        let theirs = serde_json::from_str::<crate::types::ListToolsResult>(&text);
        prop_assert!(ours.is_some(), "declined {}", text);
        prop_assert!(theirs.is_ok(), "serde_json failed on {}", text);
        prop_assert_eq!(format!("{ours:?}"), format!("{:?}", theirs.ok()));
    }

    /// Whatever call result the fast path reads, serde_json reads the same; where serde_json
    /// fails, the fast path declines.
    #[test]
    fn the_fast_call_result_is_serde_json(text in call_result_text()) {
        let ours = fast_call_result(&text);
        let theirs = serde_json::from_str::<crate::types::CallToolResult>(&text);
        match (ours, theirs) {
            (Some(o), Ok(t)) => prop_assert_eq!(o, t),
            (Some(o), Err(e)) => {
                return Err(TestCaseError::fail(format!("read {o:?} where serde_json failed: {e}")))
            }
            (None, _) => {}
        }
    }

    /// A well-formed common result is read by the fast path, as serde_json reads it.
    #[test]
    fn the_fast_path_reads_common_call_results(text in good_call_result_text()) {
        let ours = fast_call_result(&text);
        let theirs = serde_json::from_str::<crate::types::CallToolResult>(&text);
        prop_assert!(ours.is_some(), "declined {}", text);
        prop_assert!(theirs.is_ok(), "serde_json failed on {}", text);
        prop_assert_eq!(ours, theirs.ok());
    }

    /// The result the fast path finds in a line is the one serde_json's line parse gives.
    #[test]
    fn a_plain_result_is_the_line_result(line in rpc_line()) {
        let raw = |text: &bytestring::ByteString, i: usize| {
            let s: &str = text;
            let end = crate::rawjson::value_end(s.as_bytes(), i, crate::rawjson::MAX_DEPTH)?;
            Some((s[i..end].to_owned(), end))
        };
        if let Some(text) = crate::tools_page::plain_result(&Bytes::copy_from_slice(&line), raw) {
            match line_result::<Box<serde_json::value::RawValue>>(&line) {
                Ok(raw) => prop_assert_eq!(raw.get(), text.as_str()),
                Err(e) => {
                    return Err(TestCaseError::fail(format!("found {text} where the line fails: {e}")))
                }
            }
        }
    }
}
