//! JSON-RPC 2.0 envelopes: parse the envelope first, the payload later by its expected type.
//!
//! A line is first read as an [`Envelope`] that borrows its `params`/`result` as raw JSON, so a
//! 10,000-tool `tools/list` reply is scanned once here and parsed once, into its own type, by the
//! request that waits for it.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The JSON-RPC version string.
pub const JSONRPC: &str = "2.0";

/// Method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;

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
    /// The error code.
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
    /// A successful response's result.
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    /// A failed response's error.
    #[serde(default)]
    pub error: Option<ErrorObject>,
}

/// What an incoming line is, once its envelope is read.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request from the server (its id space, not ours).
    Request {
        /// The server's id.
        id: RequestId,
        /// The method.
        method: std::borrow::Cow<'a, str>,
        /// The raw parameters.
        params: Option<&'a RawValue>,
    },
    /// A notification from the server.
    Notification {
        /// The method.
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
                let outcome = match (env.result, env.error) {
                    (_, Some(e)) => Err(e),
                    (Some(r), None) => Ok(r),
                    (None, None) => return Err(EnvelopeError::Shape),
                };
                Ok(Incoming::Response { id, outcome })
            }
            (None, None) => Err(EnvelopeError::Shape),
        }
    }
}

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

/// One request line (with its trailing newline).
pub fn request_line<P: Serialize>(id: i64, method: &str, params: Option<&P>) -> Vec<u8> {
    line(&OutRequest {
        jsonrpc: JSONRPC,
        id,
        method,
        params,
    })
}

/// One notification line.
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

/// Reads the id of a message from its first bytes, for a line too long to parse.
///
/// Looks for a top-level-looking `"id":` key followed by a number or a short string.
pub fn sniff_id(prefix: &[u8]) -> Option<RequestId> {
    let mut at = 0;
    while let Some(pos) = find(&prefix[at..], b"\"id\"") {
        let mut i = at + pos + 4;
        while prefix.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        if prefix.get(i) == Some(&b':') {
            i += 1;
            while prefix.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
                i += 1;
            }
            let rest = &prefix[i..];
            let end = rest
                .iter()
                .position(|b| matches!(b, b',' | b'}'))
                .unwrap_or(rest.len());
            if end < rest.len() {
                if let Ok(id) = serde_json::from_slice::<RequestId>(&rest[..end]) {
                    return Some(id);
                }
            }
            return None;
        }
        at += pos + 4;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
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
    }

    #[test]
    fn lines_end_with_newline() {
        let l = request_line(7, "tools/list", None::<&()>);
        assert_eq!(
            l,
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\n"
        );
    }
}
