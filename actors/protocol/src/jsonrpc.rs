//! JSON-RPC 2.0 envelopes: parse the envelope first, the payload later by its expected type.
//!
//! A line is first read as an [`Envelope`] that borrows its `params`/`result` as raw JSON, so a
//! 10,000-tool `tools/list` reply is scanned once here and parsed once, into its own type, by the
//! request that waits for it.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::methods::{Notification, Request};

/// The JSON-RPC version string.
pub const JSONRPC: &str = "2.0";

/// Method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The stateless era's "unsupported protocol version" (`data.supported` lists the server's).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A request id: a number or a string (`0` is valid).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("id out of range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
        }
        d.deserialize_any(IdVisitor)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The JSON-RPC error code (`-32601`: method not found, ...).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// The envelope of any incoming message, payload left raw.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    /// The id, absent for notifications.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// The method, absent for responses.
    #[serde(default, borrow)]
    pub method: Option<std::borrow::Cow<'a, str>>,
    /// Request or notification parameters.
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// A successful response's result (`null` included: present is present).
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    /// A failed response's error, raw (`"error": null` counts as absent, as some libraries send
    /// it beside a result).
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
}

/// A key that is there, even as `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The error a reply gets when it carries both `result` and `error` (invalid JSON-RPC): every
/// path treats it alike, whatever the key order.
pub fn both_result_and_error() -> ErrorObject {
    ErrorObject {
        code: INTERNAL_ERROR,
        message: "invalid reply: it carries both \"result\" and \"error\"".to_owned(),
        data: None,
    }
}

/// Reads a raw `error` member: an invalid one still ends the request, with what was wrong.
fn error_object(raw: &RawValue) -> ErrorObject {
    serde_json::from_str(raw.get()).unwrap_or_else(|e| ErrorObject {
        code: INTERNAL_ERROR,
        message: format!("invalid error object in the reply: {e}"),
        data: None,
    })
}

/// What an incoming line is, once its envelope is read.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request from the server (its id space, not ours).
    Request {
        /// The server's id.
        id: RequestId,
        /// What the server asks of us (`ping`, `roots/list`, ...).
        method: std::borrow::Cow<'a, str>,
        /// The raw parameters.
        params: Option<&'a RawValue>,
    },
    /// A notification from the server.
    Notification {
        /// What it is about (`notifications/progress`, ...).
        method: std::borrow::Cow<'a, str>,
        /// The raw parameters.
        params: Option<&'a RawValue>,
    },
    /// A response to one of our requests.
    Response {
        /// Our id.
        id: RequestId,
        /// The raw result or the error.
        outcome: Result<&'a RawValue, ErrorObject>,
    },
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// Not JSON, or not an object.
    #[error("not a JSON-RPC object: {0}")]
    NotJson(#[from] serde_json::Error),
    /// JSON, but neither request, notification nor response.
    #[error("neither a request, a notification nor a response")]
    Shape,
}

impl<'a> Incoming<'a> {
    /// Reads the envelope of one line.
    pub fn parse(line: &'a [u8]) -> Result<Self, EnvelopeError> {
        let env: Envelope<'a> = serde_json::from_slice(line)?;
        match (env.method, env.id) {
            (Some(method), Some(id)) => Ok(Incoming::Request {
                id,
                method,
                params: env.params,
            }),
            (Some(method), None) => Ok(Incoming::Notification {
                method,
                params: env.params,
            }),
            (None, Some(id)) => {
                let error = env.error.filter(|e| e.get() != "null");
                let outcome = match (env.result, error) {
                    (Some(_), Some(_)) => Err(both_result_and_error()),
                    (None, Some(e)) => Err(error_object(e)),
                    (Some(r), None) => Ok(r),
                    (None, None) => return Err(EnvelopeError::Shape),
                };
                Ok(Incoming::Response { id, outcome })
            }
            (None, None) => Err(EnvelopeError::Shape),
        }
    }
}

/// What [`request_line`] writes by hand, derived: the property tests hold the two equal.
#[cfg(test)]
#[derive(Serialize)]
struct OutRequest<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct OutNotification<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
}

#[derive(Serialize)]
struct OutResponse<'a, R: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

fn line<T: Serialize>(v: &T) -> Vec<u8> {
    let mut buf = Vec::with_capacity(128);
    // Serializing our own plain structs into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, v);
    buf.push(b'\n');
    buf
}

/// [`request_line`]'s line as the derived envelope writes it (for the property tests).
#[cfg(test)]
pub(crate) fn derived_request_line<P: Serialize>(
    id: i64,
    method: &str,
    params: Option<&P>,
) -> Vec<u8> {
    line(&OutRequest {
        jsonrpc: JSONRPC,
        id,
        method,
        params,
    })
}

/// One request line of `R` (with its trailing newline), its params serialized in place.
pub fn request<'p, R: Request>(id: i64, params: Option<&R::Params<'p>>) -> Vec<u8>
where
    R::Params<'p>: Serialize,
{
    request_line(id, R::METHOD, params)
}

/// One request line whose params were built as a JSON value (the stateless era's `_meta`
/// merged in): `method` is a [`Request::METHOD`].
pub fn request_line<P: Serialize + ?Sized>(id: i64, method: &str, params: Option<&P>) -> Vec<u8> {
    // The envelope's members written as the derived `OutRequest` writes them (a unit test
    // holds the two byte for byte), without serializing its four constant keys each time.
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // Numbers and strings into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, &id);
    buf.extend_from_slice(br#","method":"#);
    let _ = serde_json::to_writer(&mut buf, method);
    if let Some(p) = params {
        buf.extend_from_slice(br#","params":"#);
        let _ = serde_json::to_writer(&mut buf, p);
    }
    buf.extend_from_slice(b"}\n");
    buf
}

/// One notification line of `N`.
pub fn notification<'p, N: Notification>(params: Option<&N::Params<'p>>) -> Vec<u8>
where
    N::Params<'p>: Serialize,
{
    line(&OutNotification {
        jsonrpc: JSONRPC,
        method: N::METHOD,
        params,
    })
}

/// One notification line whose params were built as a JSON value (a trace context added):
/// `method` is a [`Notification::METHOD`].
pub fn notification_line<P: Serialize>(method: &str, params: Option<&P>) -> Vec<u8> {
    line(&OutNotification {
        jsonrpc: JSONRPC,
        method,
        params,
    })
}

/// One successful response line.
pub fn result_line<R: Serialize>(id: &RequestId, result: &R) -> Vec<u8> {
    line(&OutResponse {
        jsonrpc: JSONRPC,
        id,
        result: Some(result),
        error: None,
    })
}

/// One error response line.
pub fn error_line(id: &RequestId, error: &ErrorObject) -> Vec<u8> {
    line(&OutResponse::<()> {
        jsonrpc: JSONRPC,
        id,
        result: None,
        error: Some(error),
    })
}

/// The id of a line that starts exactly `{"jsonrpc":"2.0","id":<digits>,"result":`: such a line
/// is a success response and skips the envelope pass (a 4 MB tools/list is then scanned once,
/// by [`line_result`] in the waiter).
pub fn fast_response_id(line: &[u8]) -> Option<i64> {
    let rest = line.strip_prefix(br#"{"jsonrpc":"2.0","id":"#)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 18 || !rest[digits..].starts_with(br#","result":"#) {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// The members [`Incoming::parse`] reads, so that both paths see the same line: a duplicate
/// `id`, `method` or `params` fails both, and a `method` makes the line a request, not a reply.
#[derive(Deserialize)]
struct OnlyResult<T> {
    result: T,
    #[serde(default)]
    error: Option<de::IgnoredAny>,
    #[serde(default)]
    method: Option<de::IgnoredAny>,
    #[serde(default, rename = "id")]
    _id: Option<de::IgnoredAny>,
    #[serde(default, rename = "params")]
    _params: Option<de::IgnoredAny>,
}

/// Why [`line_result`] gave no result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line also carries a non-null `error` (see [`both_result_and_error`]).
    #[error("{}", both_result_and_error().message)]
    Both,
    /// The line also carries a `method`: the envelope path reads it as the server's request.
    #[error("invalid reply: it carries both \"result\" and \"method\"")]
    Method,
    /// Not JSON, or the result is not of the expected type.
    #[error("{0}")]
    Invalid(#[from] serde_json::Error),
}

/// The fast path's second half: the `result` of a whole response line, parsed once into `T`.
/// Agrees with [`Incoming::parse`]: a line with both members is [`LineError::Both`].
pub fn line_result<T: de::DeserializeOwned>(line: &[u8]) -> Result<T, LineError> {
    let only: OnlyResult<T> = match std::str::from_utf8(line) {
        // Checked as UTF-8 once, here: a raw value (a tool's `inputSchema`) borrowed from
        // a `str` is not checked again (from bytes, each one was: 6% of a 10k-tool listing).
        Ok(text) => serde_json::from_str(text)?,
        // Not UTF-8: the error serde_json gives, with its position.
        Err(_) => serde_json::from_slice(line)?,
    };
    match (only.error, only.method) {
        (Some(_), _) => Err(LineError::Both),
        (None, Some(_)) => Err(LineError::Method),
        (None, None) => Ok(only.result),
    }
}

/// Reads the id of a message from its first bytes, for a line too long to parse.
///
/// Reads the top-level object only (strings and nesting tracked): its `"id"` member, a number
/// or a string, is the id unless the prefix also shows a top-level `"method"` (then the line is
/// the server's request, whose id is in the server's id space) or a second `"id"`. An id nested
/// in a member is never read.
pub fn sniff_id(prefix: &[u8]) -> Option<RequestId> {
    let skip_ws = |mut i: usize| {
        while prefix.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(0);
    if prefix.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    let mut key_next = true;
    let mut id = None;
    while i < prefix.len() {
        match prefix[i] {
            b'"' => {
                let Some(end) = string_end(prefix, i) else {
                    // The prefix ends inside a string.
                    return id;
                };
                if depth == 1 && key_next {
                    key_next = false;
                    let key = &prefix[i + 1..end];
                    let at = skip_ws(end + 1);
                    if prefix.get(at) != Some(&b':') {
                        return id;
                    }
                    let value = skip_ws(at + 1);
                    match key {
                        b"method" => return None,
                        b"id" if id.is_some() => return None,
                        b"id" => {
                            let value_end = match prefix.get(value) {
                                Some(b'"') => string_end(prefix, value)? + 1,
                                Some(_) => {
                                    let n = prefix[value..]
                                        .iter()
                                        .take_while(|b| {
                                            !matches!(b, b',' | b'}' | b']')
                                                && !b.is_ascii_whitespace()
                                        })
                                        .count();
                                    // A number cut by the prefix's end is not read.
                                    if value + n >= prefix.len() {
                                        return None;
                                    }
                                    value + n
                                }
                                None => return None,
                            };
                            id = Some(
                                serde_json::from_slice::<RequestId>(&prefix[value..value_end])
                                    .ok()?,
                            );
                            i = value_end;
                            continue;
                        }
                        _ => {}
                    }
                    i = value;
                    continue;
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return id;
                }
            }
            b',' if depth == 1 => key_next = true,
            _ => {}
        }
        i += 1;
    }
    id
}

/// The index of the quote that closes the string opening at `open`, if it is in `bytes`.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_classifies_and_keeps_id_spaces_apart() {
        let req = br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#;
        assert!(matches!(
            Incoming::parse(req).unwrap(),
            Incoming::Request {
                id: RequestId::Number(0),
                ..
            }
        ));
        let resp = br#"{"jsonrpc":"2.0","id":0,"result":{"tools":[]}}"#;
        match Incoming::parse(resp).unwrap() {
            Incoming::Response { id, outcome } => {
                assert_eq!(id, RequestId::Number(0));
                assert_eq!(outcome.unwrap().get(), r#"{"tools":[]}"#);
            }
            other => panic!("{other:?}"),
        }
        let err = br#"{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope"}}"#;
        assert!(matches!(
            Incoming::parse(err).unwrap(),
            Incoming::Response {
                outcome: Err(ErrorObject { code: -32601, .. }),
                ..
            }
        ));
        let note = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
        assert!(matches!(
            Incoming::parse(note).unwrap(),
            Incoming::Notification { .. }
        ));
        assert!(Incoming::parse(br#"{"hello":1}"#).is_err());
        assert!(Incoming::parse(b"banner").is_err());
        assert!(Incoming::parse(b"[1,2").is_err());
    }

    #[test]
    fn result_and_error_together_is_an_error_on_both_paths() {
        let both = [
            &br#"{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":1,"message":"x"}}"#[..],
            &br#"{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"x"},"result":{}}"#[..],
        ];
        for line in both {
            match Incoming::parse(line).unwrap() {
                Incoming::Response {
                    id: RequestId::Number(4),
                    outcome: Err(e),
                } => assert_eq!(e, both_result_and_error()),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(fast_response_id(both[0]), Some(4));
        assert!(matches!(
            line_result::<serde_json::Value>(both[0]),
            Err(LineError::Both)
        ));
        // `"error": null` beside a result is a success on both paths.
        let ok = br#"{"jsonrpc":"2.0","id":5,"result":{"a":1},"error":null}"#;
        assert_eq!(
            line_result::<serde_json::Value>(ok).unwrap(),
            serde_json::json!({"a":1})
        );
        assert!(matches!(
            Incoming::parse(ok).unwrap(),
            Incoming::Response { outcome: Ok(_), .. }
        ));
        // A `null` result is a result; a malformed error object still ends the request.
        assert!(matches!(
            Incoming::parse(br#"{"id":6,"jsonrpc":"2.0","result":null}"#).unwrap(),
            Incoming::Response { outcome: Ok(r), .. } if r.get() == "null"
        ));
        assert!(matches!(
            Incoming::parse(br#"{"id":7,"error":"boom"}"#).unwrap(),
            Incoming::Response {
                outcome: Err(ErrorObject {
                    code: INTERNAL_ERROR,
                    ..
                }),
                ..
            }
        ));
    }

    #[test]
    fn sniffs_the_id_from_a_prefix() {
        assert_eq!(
            sniff_id(br#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"text":"xxxx"#),
            Some(RequestId::Number(42))
        );
        assert_eq!(
            sniff_id(br#"{"id" : "abc", "result""#),
            Some(RequestId::String("abc".into()))
        );
        assert_eq!(sniff_id(br#"{"jsonrpc":"2.0","result":{"#), None);
        // Found by `sniff_id_agrees_with_the_envelope`: the server's own request (its id space)
        // and ids nested in a member were read as the reply's id.
        assert_eq!(
            sniff_id(br#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"x"#),
            None
        );
        assert_eq!(
            sniff_id(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"id":5,"x"#),
            None
        );
        assert_eq!(
            sniff_id(br#"{"result":{"id":5,"content":[]},"id":3,"jsonrpc":"2.0","x":"yyyy"#),
            Some(RequestId::Number(3))
        );
        assert_eq!(
            sniff_id(br#"{"id":"a\"b","result":{"#),
            Some(RequestId::String("a\"b".into()))
        );
        assert_eq!(sniff_id(br#"{"id":12"#), None);
    }

    #[test]
    fn lines_end_with_newline() {
        let l = request::<super::super::methods::ListTools>(7, None);
        assert_eq!(
            l,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\n"
        );
    }
}
