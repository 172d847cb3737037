//! The one seam for what a server asks of the client in the middle of its work: roots,
//! elicitation and sampling. A handshake-era server sends them as requests of its own; a
//! stateless-era server puts them in an `input_required` result's `inputRequests`. Both are
//! answered here, by the same function, so the two eras cannot drift apart.
//!
//! Headless there is nobody to ask: elicitation follows a process-wide [`ElicitPolicy`]
//! (decline by default; `--elicitation accept-defaults` accepts with the schema's defaults).
//! Sampling is not offered (not declared, and refused if asked).

use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::protocol::jsonrpc::{ErrorObject, METHOD_NOT_FOUND};
use crate::protocol::types::{Implementation, ListRootsResult, Root};

/// How an elicitation (`elicitation/create`) is answered when no person is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitPolicy {
    /// Answer `decline`: the server goes on without the input (the default).
    Decline,
    /// Answer `accept` with every field that has a `default` in the requested schema.
    AcceptDefaults,
}

static POLICY: AtomicU8 = AtomicU8::new(0);

/// Sets how every server's elicitations are answered from now on (set once, at startup).
pub fn set_elicitation(policy: ElicitPolicy) {
    let v = match policy {
        ElicitPolicy::Decline => 0,
        ElicitPolicy::AcceptDefaults => 1,
    };
    POLICY.store(v, Ordering::Relaxed);
}

/// The elicitation policy in force.
pub fn elicitation() -> ElicitPolicy {
    match POLICY.load(Ordering::Relaxed) {
        1 => ElicitPolicy::AcceptDefaults,
        _ => ElicitPolicy::Decline,
    }
}

/// The capabilities we declare, in `initialize` and in every stateless request's `_meta`
/// (built once).
pub fn client_capabilities() -> &'static Value {
    static CAPABILITIES: OnceLock<Value> = OnceLock::new();
    CAPABILITIES.get_or_init(|| {
        json!({
            "roots": { "listChanged": false },
            "elicitation": { "form": {} },
        })
    })
}

/// Who we are, in `initialize` and in every stateless request's `_meta` (built once).
pub fn client_info() -> &'static Implementation {
    static INFO: OnceLock<Implementation> = OnceLock::new();
    INFO.get_or_init(|| Implementation {
        name: "harness9".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        title: None,
    })
}

/// Answers one server-to-client request, `roots/list`, `elicitation/create` (or, handshake era
/// only, `ping`): the result, or the JSON-RPC error to send back.
pub(crate) fn answer(
    method: &str,
    params: Option<&Value>,
    cwd: &Path,
) -> Result<Value, ErrorObject> {
    match method {
        "ping" => Ok(json!({})),
        "roots/list" => {
            Ok(serde_json::to_value(roots(cwd)).unwrap_or_else(|_| json!({"roots": []})))
        }
        "elicitation/create" => Ok(elicit(params)),
        "sampling/createMessage" => Err(ErrorObject {
            code: METHOD_NOT_FOUND,
            message: "sampling is not supported by this client".to_owned(),
            data: None,
        }),
        other => Err(ErrorObject {
            code: METHOD_NOT_FOUND,
            message: format!("method not found: {other}"),
            data: None,
        }),
    }
}

fn roots(cwd: &Path) -> ListRootsResult {
    let name = cwd
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".to_owned());
    ListRootsResult {
        roots: vec![Root {
            uri: format!("file://{}", cwd.display()),
            name,
        }],
    }
}

/// The answer to an elicitation under the policy. A URL-mode elicitation (open a page) is
/// always declined headless: nobody is there to open it.
fn elicit(params: Option<&Value>) -> Value {
    let url_mode = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
    if url_mode || elicitation() == ElicitPolicy::Decline {
        return json!({ "action": "decline" });
    }
    let mut content = Map::new();
    if let Some(props) = params
        .and_then(|p| p.get("requestedSchema"))
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    {
        for (name, schema) in props {
            if let Some(d) = schema.get("default") {
                content.insert(name.clone(), d.clone());
            }
        }
    }
    json!({ "action": "accept", "content": content })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_follows_the_policy_and_takes_the_defaults() {
        let params = json!({
            "message": "who?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "note": {"type": "string"}
            }}
        });
        set_elicitation(ElicitPolicy::AcceptDefaults);
        let got = answer("elicitation/create", Some(&params), Path::new("/")).unwrap();
        assert_eq!(
            got,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30}})
        );
        let url = json!({"mode": "url", "url": "https://example.com", "message": "log in"});
        let got = answer("elicitation/create", Some(&url), Path::new("/")).unwrap();
        assert_eq!(got, json!({"action": "decline"}));
        set_elicitation(ElicitPolicy::Decline);
        let got = answer("elicitation/create", Some(&params), Path::new("/")).unwrap();
        assert_eq!(got, json!({"action": "decline"}));
        assert!(answer("sampling/createMessage", None, Path::new("/")).is_err());
        let roots = answer("roots/list", None, Path::new("/work/p")).unwrap();
        assert_eq!(roots["roots"][0]["uri"], "file:///work/p");
    }
}
