//! What the HTTP exchanges say besides their bodies: the request-metadata headers a POST
//! mirrors from its body (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`), read from a light
//! parse of the line, and a response's headers as the trace shows them (credentials redacted).

use crate::protocol::headers;
use crate::protocol::methods::{
    CallTool, CancelTask, GetPrompt, GetTask, Initialize, ReadResource, Request, UpdateTask,
};

/// What the task needs of an outgoing line, from one light parse: its method, and the
/// body fields a POST mirrors into headers (2026-07-28 "request metadata"; harmless and useful
/// to gateways in the handshake era too).
#[derive(serde::Deserialize, Default)]
pub(super) struct Peek {
    /// Empty for a response (our answer to a server's request).
    #[serde(default)]
    pub(super) method: String,
    #[serde(default)]
    pub(super) params: Option<PeekParams>,
}

impl Peek {
    /// The line's fields; a line that is not a JSON object gives an empty `Peek`.
    pub(super) fn of(line: &[u8]) -> Self {
        serde_json::from_slice(line).unwrap_or_default()
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct PeekParams {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) uri: Option<String>,
    /// The tasks extension's `tasks/*` requests.
    #[serde(default)]
    pub(super) task_id: Option<String>,
    /// `initialize`'s offer.
    #[serde(default)]
    pub(super) protocol_version: Option<String>,
    /// `notifications/cancelled`'s request.
    #[serde(default)]
    pub(super) request_id: Option<serde_json::Value>,
    #[serde(default, rename = "_meta")]
    pub(super) meta: Option<PeekMeta>,
}

#[derive(serde::Deserialize, Default)]
pub(super) struct PeekMeta {
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion")]
    pub(super) protocol_version: Option<String>,
}

/// The headers one POST carries besides the configured ones: `Mcp-Method`, `Mcp-Name` (for
/// `tools/call`, `prompts/get`, `resources/read`, and the task id of `tasks/get`,
/// `tasks/update`, `tasks/cancel`, which routes them to the instance holding the task) and `MCP-Protocol-Version` (the request's
/// `_meta` revision, or `initialize`'s offer).
pub(super) fn request_headers(method: &str, peek: &Peek) -> Vec<(String, String)> {
    let mut h = Vec::with_capacity(3);
    if !method.is_empty() {
        h.push(("Mcp-Method".to_owned(), headers::encode_value(method)));
    }
    if let Some(p) = &peek.params {
        let name = match method {
            CallTool::METHOD | GetPrompt::METHOD => p.name.as_deref(),
            ReadResource::METHOD => p.uri.as_deref(),
            GetTask::METHOD | UpdateTask::METHOD | CancelTask::METHOD => p.task_id.as_deref(),
            _ => None,
        };
        if let Some(n) = name {
            h.push(("Mcp-Name".to_owned(), headers::name_header(n)));
        }
        let version = p
            .meta
            .as_ref()
            .and_then(|m| m.protocol_version.as_deref())
            .or(if method == Initialize::METHOD {
                p.protocol_version.as_deref()
            } else {
                None
            });
        if let Some(v) = version {
            h.push(("MCP-Protocol-Version".to_owned(), headers::encode_value(v)));
        }
    }
    h
}

/// Response headers that may carry credentials: their values are not traced. Cookies, the
/// authentication challenges, and the RFC 7615 `*-Authentication-Info` (a digest's next nonce
/// and response auth) as well as any echo of the request's credentials.
const SECRET_HEADERS: [&str; 9] = [
    "set-cookie",
    "set-cookie2",
    "cookie",
    "authorization",
    "proxy-authorization",
    "www-authenticate",
    "proxy-authenticate",
    "authentication-info",
    "proxy-authentication-info",
];

/// A response's headers for the trace, credential values redacted.
pub(super) fn header_list(h: &awc::http::header::HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            let name = k.as_str().to_owned();
            let value = if SECRET_HEADERS.contains(&name.as_str()) {
                "[redacted]".to_owned()
            } else {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            };
            (name, value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(line: &str) -> Vec<(String, String)> {
        let peek = Peek::of(line.as_bytes());
        request_headers(&peek.method.clone(), &peek)
    }

    #[test]
    fn task_requests_carry_their_task_id_as_mcp_name() {
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"taskId":"t-1","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}}}}"#
            );
            let h = headers(&line);
            assert!(
                h.contains(&("Mcp-Name".to_owned(), "t-1".to_owned())),
                "{h:?}"
            );
            assert!(h.contains(&("Mcp-Method".to_owned(), method.to_owned())));
        }
        // A task id that is not a plain header value is encoded, never sent raw.
        let h = headers(
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"a\r\nX-Evil: 1"}}"#,
        );
        let name = &h.iter().find(|(k, _)| k == "Mcp-Name").unwrap().1;
        assert!(
            !name.contains('\n') && name.starts_with("=?base64?"),
            "{name}"
        );
        // Other methods' taskId is not mirrored.
        let h = headers(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"taskId":"t"}}"#);
        assert!(h.iter().all(|(k, _)| k != "Mcp-Name"));
    }
}
