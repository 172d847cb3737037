//! Server requests (server to client, answered by us): the one seam for what a server asks of
//! the client in the middle of its work: roots, elicitation and sampling. A handshake-era server sends them as requests of its
//! own; a stateless-era server puts them in an `input_required` result's `inputRequests`. Both
//! are answered here, by the same function, so the two eras cannot drift apart.
//!
//! `ping` and `roots/list` are answered here at once. Elicitation and sampling go to the front
//! end's handler through [`super::ask`]; only when the runtime has no handler (the library's
//! own tests, the benchmarks) does this module answer them: elicitation declined, sampling
//! refused. The headless [`ElicitPolicy`] is the front end's, passed to [`headless_elicit`]
//! explicitly: no process-wide state. What we declare follows what the
//! front end can answer (its [`InputCaps`], handed to the supervisor with its handler) and,
//! for roots, the server's spec: its configured `roots`
//! (else its working directory) as percent-encoded `file://` URIs; with `"roots": false` the
//! capability is not declared and `roots/list` is refused.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::protocol::jsonrpc::{ErrorObject, METHOD_NOT_FOUND};
use crate::protocol::methods::{CreateMessage, Elicit, ListRoots, Ping, Request};
use crate::protocol::types::{Implementation, ListRootsResult, Root};
use crate::spec::{Roots, ServerSpec};

/// How an elicitation (`elicitation/create`) is answered when no person is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitPolicy {
    /// Answer `decline`: the server goes on without the input (the default).
    #[default]
    Decline,
    /// Answer `accept` with every field that has a `default` in the requested schema.
    AcceptDefaults,
}

/// What the front end can answer, and so what we declare: elicitation's form and URL modes
/// and sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputCaps {
    /// `elicitation.form`: a form is filled in (or answered by a headless policy).
    pub elicitation_form: bool,
    /// `elicitation.url`: a person may open a page (the TUI).
    pub elicitation_url: bool,
    /// `sampling` (with `tools`): a server's `sampling/createMessage` may reach the configured
    /// model, tools included.
    pub sampling: bool,
}

impl Default for InputCaps {
    /// Form elicitation only (answered by the [`ElicitPolicy`]).
    fn default() -> Self {
        Self {
            elicitation_form: true,
            elicitation_url: false,
            sampling: false,
        }
    }
}

/// The elicitation and sampling part of our capabilities.
fn input_capabilities(caps: InputCaps) -> Map<String, Value> {
    let mut out = Map::new();
    let mut modes = Map::new();
    if caps.elicitation_form {
        modes.insert("form".to_owned(), json!({}));
    }
    if caps.elicitation_url {
        modes.insert("url".to_owned(), json!({}));
    }
    if !modes.is_empty() {
        out.insert("elicitation".to_owned(), Value::Object(modes));
    }
    if caps.sampling {
        out.insert("sampling".to_owned(), json!({ "tools": {} }));
    }
    out
}

/// The extensions we implement, each with its settings: Skills (SEP-2640).
fn extension_capabilities() -> Map<String, Value> {
    let mut out = Map::new();
    out.insert(crate::protocol::skills::EXTENSION.to_owned(), json!({}));
    out
}

/// The capabilities we declare to one server, in `initialize` and in every stateless request's
/// `_meta` (built once per server actor): roots from its spec, elicitation and sampling from
/// what the front end can answer (`caps`).
pub fn client_capabilities(spec: &ServerSpec, caps: InputCaps) -> Value {
    let mut all = Map::new();
    if spec.roots != Roots::Off {
        all.insert("roots".to_owned(), json!({ "listChanged": true }));
    }
    all.extend(input_capabilities(caps));
    all.insert(
        "extensions".to_owned(),
        Value::Object(extension_capabilities()),
    );
    Value::Object(all)
}

/// Our capabilities as sent, serialized once: what `initialize` declares and what every
/// stateless request's `_meta` declares (the same and the extensions only that era carries).
#[derive(Debug)]
pub struct Declared {
    /// `initialize`'s `capabilities`.
    pub capabilities: Box<serde_json::value::RawValue>,
    /// A stateless request's `_meta` `clientCapabilities`.
    pub stateless: Box<serde_json::value::RawValue>,
}

/// The [`Declared`] capabilities for `spec` and `caps`, serialized once per process for each
/// combination (they depend on nothing else): a server actor is started with them, not with a
/// tree of JSON values to build, copy and serialize on every connection.
pub fn declared(spec: &ServerSpec, caps: InputCaps) -> std::sync::Arc<Declared> {
    static ALL: [OnceLock<std::sync::Arc<Declared>>; 16] = [const { OnceLock::new() }; 16];
    // Every field named, so that a new one cannot be left out of the index.
    let InputCaps {
        elicitation_form,
        elicitation_url,
        sampling,
    } = caps;
    let i = usize::from(spec.roots != Roots::Off)
        | usize::from(elicitation_form) << 1
        | usize::from(elicitation_url) << 2
        | usize::from(sampling) << 3;
    let raw = |v: &Value| serde_json::value::to_raw_value(v).unwrap_or_default();
    ALL[i]
        .get_or_init(|| {
            let capabilities = client_capabilities(spec, caps);
            std::sync::Arc::new(Declared {
                stateless: raw(&stateless_capabilities(&capabilities)),
                capabilities: raw(&capabilities),
            })
        })
        .clone()
}

/// The Tasks extension (SEP-2663): a `tools/call` may be answered with a task to poll.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The capabilities of every stateless request's `_meta`: `caps` with the extensions only that
/// era can carry (a handshake-era connection declares none, so its servers never answer with a
/// task).
pub fn stateless_capabilities(caps: &Value) -> Value {
    let mut all = match caps {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let ext = all
        .entry("extensions".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(ext) = ext {
        ext.insert(TASKS_EXTENSION.to_owned(), json!({}));
    }
    Value::Object(all)
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
    roots: &Roots,
    cwd: &Path,
) -> Result<Value, ErrorObject> {
    match method {
        Ping::METHOD => Ok(json!({})),
        ListRoots::METHOD => match list_roots(roots, cwd) {
            Some(r) => Ok(serde_json::to_value(r).unwrap_or_else(|_| json!({"roots": []}))),
            None => Err(ErrorObject {
                code: METHOD_NOT_FOUND,
                message: "roots are not offered to this server (\"roots\": false)".to_owned(),
                data: None,
            }),
        },
        Elicit::METHOD => Ok(headless_elicit(params, ElicitPolicy::Decline)),
        CreateMessage::METHOD => Err(ErrorObject {
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

/// The roots a server is offered, or `None` when it is offered none (`"roots": false`).
pub(crate) fn list_roots(roots: &Roots, cwd: &Path) -> Option<ListRootsResult> {
    let paths: Vec<&Path> = match roots {
        Roots::Off => return None,
        Roots::WorkingDirectory => vec![cwd],
        Roots::Paths(p) => p.iter().map(|p| p.as_path()).collect(),
    };
    let roots = paths
        .into_iter()
        .map(|p| Root {
            uri: file_uri(p),
            name: p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/".to_owned()),
        })
        .collect();
    Some(ListRootsResult { roots })
}

/// `file://` and the path, every byte but RFC 3986's unreserved characters and `/`
/// percent-encoded (spaces, `%`, `#`, `?`, non-ASCII).
pub fn file_uri(path: &Path) -> String {
    let mut out = String::from("file://");
    for &b in harness9_platform::fs::path_bytes(path).iter() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The answer to an elicitation under `policy`. A URL-mode elicitation (open a page) is
/// always declined headless: nobody is there to open it.
pub fn headless_elicit(params: Option<&Value>, policy: ElicitPolicy) -> Value {
    let url_mode = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
    if url_mode || policy == ElicitPolicy::Decline {
        return json!({ "action": "decline" });
    }
    let content = schema_defaults(params);
    // A required field without a default would be sent empty: the form is declined.
    let required = params
        .and_then(|p| p.get("requestedSchema"))
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array);
    if required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|name| !content.contains_key(name))
    {
        return json!({ "action": "decline" });
    }
    json!({ "action": "accept", "content": content })
}

/// Every field of an elicitation's `requestedSchema` that has a `default`, with it.
pub fn schema_defaults(params: Option<&Value>) -> Map<String, Value> {
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
    content
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
        let got = headless_elicit(Some(&params), ElicitPolicy::AcceptDefaults);
        assert_eq!(
            got,
            json!({"action": "accept", "content": {"name": "John Doe", "age": 30}})
        );
        // A required field without a default is never sent empty: the form is declined.
        let mut required = params.clone();
        required["requestedSchema"]["required"] = json!(["name", "note"]);
        let got = headless_elicit(Some(&required), ElicitPolicy::AcceptDefaults);
        assert_eq!(got, json!({"action": "decline"}));
        let url = json!({"mode": "url", "url": "https://example.com", "message": "log in"});
        let got = headless_elicit(Some(&url), ElicitPolicy::AcceptDefaults);
        assert_eq!(got, json!({"action": "decline"}));
        let got = headless_elicit(Some(&params), ElicitPolicy::Decline);
        assert_eq!(got, json!({"action": "decline"}));
        // Without a front end's handler, the runtime declines.
        let wd = Roots::WorkingDirectory;
        let got = answer(Elicit::METHOD, Some(&params), &wd, Path::new("/")).unwrap();
        assert_eq!(got, json!({"action": "decline"}));
        assert!(answer(CreateMessage::METHOD, None, &wd, Path::new("/")).is_err());
        let roots = answer(ListRoots::METHOD, None, &wd, Path::new("/work/p")).unwrap();
        assert_eq!(roots["roots"][0]["uri"], "file:///work/p");
    }

    #[test]
    fn roots_are_the_configured_paths_percent_encoded_or_none() {
        let paths = Roots::Paths(vec!["/a b/c%d#e".into(), "/ü".into()]);
        let got = answer(ListRoots::METHOD, None, &paths, Path::new("/cwd")).unwrap();
        assert_eq!(
            got,
            json!({"roots": [
                {"uri": "file:///a%20b/c%25d%23e", "name": "c%d#e"},
                {"uri": "file:///%C3%BC", "name": "ü"}
            ]})
        );
        assert!(answer(ListRoots::METHOD, None, &Roots::Off, Path::new("/cwd")).is_err());
        let mut spec = ServerSpec::stdio("s", "x", vec![]);
        assert_eq!(
            client_capabilities(&spec, InputCaps::default())["roots"],
            json!({"listChanged": true})
        );
        spec.roots = Roots::Off;
        assert!(client_capabilities(&spec, InputCaps::default())
            .get("roots")
            .is_none());
    }

    /// Each combination's serialized capabilities are its own, whatever order they are first
    /// asked in (a shared slot would hand one server another's).
    #[test]
    fn declared_capabilities_are_each_combinations_own() {
        let mut combos = Vec::new();
        for bits in 0..16u8 {
            let mut spec = ServerSpec::stdio("s", "x", vec![]);
            if bits & 1 == 0 {
                spec.roots = Roots::Off;
            }
            let caps = InputCaps {
                elicitation_form: bits & 2 != 0,
                elicitation_url: bits & 4 != 0,
                sampling: bits & 8 != 0,
            };
            combos.push((spec, caps));
        }
        // Asked in two orders: the first fills each slot, the second reads it.
        for (spec, caps) in combos.iter().rev().chain(combos.iter()) {
            let d = declared(spec, *caps);
            let want = client_capabilities(spec, *caps);
            let got: Value = serde_json::from_str(d.capabilities.get()).unwrap();
            assert_eq!(got, want, "{caps:?}, roots {:?}", spec.roots);
            let got: Value = serde_json::from_str(d.stateless.get()).unwrap();
            assert_eq!(got, stateless_capabilities(&want));
        }
    }

    #[test]
    fn the_skills_extension_is_declared() {
        let spec = ServerSpec::stdio("s", "x", vec![]);
        assert_eq!(
            client_capabilities(&spec, InputCaps::default())["extensions"]
                ["io.modelcontextprotocol/skills"],
            json!({})
        );
    }
}
