//! `harness9 conformance <URL>`: the client entry point of the official MCP conformance suite
//! (`scripts/conformance.sh`). The suite starts a scenario server and runs this command with its
//! URL appended; the scenario's checks judge what the client sent.
//!
//! The driver is the same for every scenario, and goes through the same public path as
//! `harness9 mcp list` / `mcp call`: a config parsed from JSON text by the project's parser, a
//! [`Session`], the registry's `ListTools`, then one `CallTool` per tool of the server with
//! arguments made from its input schema. Whatever a scenario expects of the protocol (headers,
//! eras, elicitation, retries) must come from the runtime itself, never from here.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use harness9_actors::messages::{CallTool, ToolEntry};
use harness9_actors::ToolRegistry;
use serde_json::{json, Map, Value};

use super::mcp::{ensure_connected, server_tools};
use super::{interrupted, ConformanceArgs};
use crate::app::config;
use crate::app::{spawn_event_printer, Session, SessionOptions, Start};
use crate::sanitize::{clean_line, clean_text};

/// The server's name in the synthesized config.
const SERVER: &str = "conformance";

/// The whole run's budget: the suite kills a client after 30 s per scenario.
const RUN_BUDGET: Duration = Duration::from_secs(27);

/// How long the server has to connect (also its `startupTimeoutSec`).
const SETTLE_BOUND: Duration = Duration::from_secs(20);

/// How much of a tool result is echoed to stderr.
const ECHO_CHARS: usize = 500;

/// Runs the conformance driver against the scenario server at `args.url`: exits 1 if the server
/// did not connect, else 0 (a tool result with `isError`, or a failed call, is only reported on
/// stderr: the scenario's checks are the verdict).
pub async fn run(opts: &SessionOptions, args: &ConformanceArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!(
        "[conformance] scenario {:?} against {}",
        clean_line(&scenario),
        clean_line(&args.url)
    );
    // Nobody answers a form here: accept with the schema's defaults, as `--elicitation
    // accept-defaults` does.
    let opts = &SessionOptions {
        elicitation: harness9_actors::server::input::ElicitPolicy::AcceptDefaults,
        ..opts.clone()
    };
    let auth = scenario.starts_with("auth/");
    let mut config = conformance_config(&args.url, auth.then(context_oauth))?;
    // The login runs without a person: the runtime's own flow, with a browser that follows
    // the authorization server's redirect to the loopback listener.
    let browser = if auth {
        let exe = std::env::current_exe().context("cannot find the harness9 binary")?;
        Some(format!("{} conformance-browser", exe.display()))
    } else {
        None
    };
    for s in &mut config.servers {
        if let Some(o) = &mut s.oauth {
            // Each run starts logged out, and never reads or writes the user's token store.
            o.store = std::sync::Arc::new(harness9_actors::oauth::MemoryStore::default());
            o.interactive = auth;
            o.login_timeout = Duration::from_secs(10);
            o.browser = browser.clone();
        }
    }
    let start = Start {
        shutdown_grace: Some(crate::app::HEADLESS_GRACE),
        ..Start::default()
    };
    let mut session = Session::start(opts, &config, config.servers.clone(), start)?;
    spawn_event_printer(session.runtime.status.clone(), true);
    let rt = &mut session.runtime;
    let driven = async {
        let snap = rt.settled(SETTLE_BOUND).await;
        if let Err(e) = ensure_connected(&snap, SERVER) {
            eprintln!("[conformance] {}", clean_text(&format!("{e:#}")));
            return Ok(ExitCode::from(1));
        }
        let tools = server_tools(rt, SERVER).await?;
        let names: Vec<&str> = tools.iter().map(|t| t.tool.name.as_str()).collect();
        eprintln!(
            "[conformance] {} tools: {}",
            tools.len(),
            clean_line(&names.join(", "))
        );
        for entry in &tools {
            let Some(left) = RUN_BUDGET.checked_sub(started.elapsed()) else {
                eprintln!(
                    "[conformance] out of time; tool {:?} not called",
                    clean_line(&entry.tool.name)
                );
                continue;
            };
            let schema: Value =
                serde_json::from_str(entry.tool.input_schema.get()).unwrap_or_else(|_| json!({}));
            let arguments = scenario_arguments(&scenario, &entry.tool.name)
                .or_else(|| echoed_schema(&scenario, &entry.tool.name, &tools))
                .unwrap_or_else(|| arguments_for(&schema));
            eprintln!(
                "[conformance] calling {} with {}",
                clean_line(&entry.tool.name),
                clean_line(&arguments.to_string())
            );
            let mut msg = CallTool::new(entry.name.clone(), Some(arguments));
            msg.timeout = Some(left);
            match ToolRegistry::send(&rt.registry, msg).await {
                Ok(r) => {
                    let text: String = r.text().chars().take(ECHO_CHARS).collect();
                    eprintln!(
                        "[conformance] {} -> {}: {}",
                        clean_line(&entry.tool.name),
                        if r.is_error { "isError" } else { "ok" },
                        clean_text(&text)
                    );
                }
                Err(e) => eprintln!(
                    "[conformance] {} failed: {}",
                    clean_line(&entry.tool.name),
                    clean_text(&e.to_string())
                ),
            }
        }
        Ok(ExitCode::SUCCESS)
    };
    let out = tokio::select! {
        r = driven => r,
        _ = interrupted() => {
            eprintln!("[conformance] interrupted; stopping the server");
            Ok(ExitCode::from(130))
        }
    };
    session.close().await;
    eprintln!("[conformance] done in {} ms", started.elapsed().as_millis());
    out
}

/// The config of the one server at `url`, parsed by the project's config parser like a user's
/// own `--config` file (no project trust store: nothing is read from the working directory).
fn conformance_config(url: &str, oauth: Option<Value>) -> anyhow::Result<config::Config> {
    let mut entry = json!({
        "url": url,
        "startupTimeoutSec": SETTLE_BOUND.as_secs_f64(),
    });
    if let Some(o) = oauth {
        entry["oauth"] = o;
    }
    // The suite says which revision a scenario runs at (MCP_CONFORMANCE_PROTOCOL_VERSION), but
    // it is not pinned here: the runtime finds each server's era itself (`server/discover`
    // first, then the handshake), and that choice is what the suite checks.
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        eprintln!(
            "[conformance] suite protocol version {} (the era is chosen automatically)",
            clean_line(&version)
        );
    }
    let text = json!({ "mcpServers": { SERVER: entry } }).to_string();
    // No `${VAR}` expansion from the environment: the URL is the runner's, taken as it is.
    config::parse(&text, "<conformance>", Path::new(""), &|_| None)
        .context("cannot build the conformance config")
}

/// The client metadata document URL the suite's CIMD scenarios expect (as the Python SDK's
/// conformance client uses).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The `oauth` entry of an auth scenario: the pre-registered client of
/// `MCP_CONFORMANCE_CONTEXT` (`client_id`, `client_secret`) when the runner gives one, and the
/// client metadata document URL.
fn context_oauth() -> Value {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let mut o = json!({ "clientMetadataUrl": CLIENT_METADATA_URL });
    if let Some(id) = context.get("client_id").and_then(Value::as_str) {
        o["clientId"] = json!(id);
    }
    if let Some(secret) = context.get("client_secret").and_then(Value::as_str) {
        o["clientSecret"] = json!(secret);
    }
    o
}

/// `harness9 conformance-browser <URL>`: what a browser does with an authorization URL that
/// redirects at once: GET it without following, then GET its `Location` (the loopback
/// listener). Exits 1 if there is no redirect or the listener does not answer.
pub async fn browser(url: &str) -> anyhow::Result<ExitCode> {
    harness9_actors::net::install_crypto();
    let client = awc::Client::builder()
        .disable_redirects()
        .timeout(Duration::from_secs(10))
        .finish();
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot fetch the authorization URL: {e}"))?;
    let Some(next) = resp
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
    else {
        eprintln!(
            "[conformance-browser] the authorization URL answered HTTP {} without a redirect",
            resp.status()
        );
        return Ok(ExitCode::from(1));
    };
    let resp = client
        .get(&next)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the redirect URI: {e}"))?;
    Ok(if resp.status().is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The argument values a scenario's checks look for, where values made from the schema would
/// exercise nothing: `http-custom-headers` wants header-unsafe strings (non-ASCII, edge
/// whitespace, control characters) and a `null` that must leave its header out. Values only:
/// the headers themselves come from the runtime.
fn scenario_arguments(scenario: &str, tool: &str) -> Option<Value> {
    match (scenario, tool) {
        ("http-custom-headers", "test_custom_headers") => Some(json!({
            "region": "us-west1",
            "priority": 42,
            "verbose": false,
            "debug": true,
            "empty_val": "",
            "method_val": "POST",
            "float_val": 3.5,
            "non_ascii_val": "Hello, 世界",
            "whitespace_val": " padded ",
            "leading_space_val": " leading",
            "trailing_space_val": "trailing ",
            "internal_space_val": "a b c",
            "control_char_val": "bell\u{7}",
            "crlf_val": "line1\r\nline2",
            "tab_val": "a\tb",
            "query": "SELECT 1",
        })),
        ("http-custom-headers", "test_custom_headers_null") => Some(json!({
            "region": "us-west1",
            "priority": 7,
            "verbose": null,
            "query": "SELECT 1",
        })),
        _ => None,
    }
}

/// `json-schema-2020-12-preservation` asks for the focal tool's input schema back, as the runtime
/// keeps it, through its echo tool: a runtime that parsed the schema into a struct would lose
/// `$schema`, `$defs`, `allOf`, `if`/`then`/`else` here.
fn echoed_schema(scenario: &str, tool: &str, tools: &[ToolEntry]) -> Option<Value> {
    if (scenario, tool) != ("json-schema-2020-12-preservation", "json_schema_echo") {
        return None;
    }
    let focal = tools
        .iter()
        .find(|t| t.tool.name == "json_schema_2020_12_tool")?;
    let schema: Value = serde_json::from_str(focal.tool.input_schema.get()).ok()?;
    Some(json!({ "schema": schema }))
}

/// Arguments for a tool from its input schema: every property of `properties`, valued by
/// [`value_for`].
fn arguments_for(schema: &Value) -> Value {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            out.insert(name.clone(), value_for(prop));
        }
    }
    Value::Object(out)
}

/// A value for one property schema: its `default`, else its `const`, else the first member of
/// its `enum`, else one by `type` (number and integer 1, string "test", boolean true, array [],
/// object: its own properties filled the same way, null null), else the first branch of
/// `anyOf`/`oneOf`, else null.
fn value_for(prop: &Value) -> Value {
    if let Some(v) = prop.get("default").or_else(|| prop.get("const")) {
        return v.clone();
    }
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let ty = match prop.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        // ["string", "null"]: the first type that is not null.
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or_else(|| types.first().and_then(Value::as_str)),
        _ => None,
    };
    match ty {
        Some("number" | "integer") => json!(1),
        Some("string") => json!("test"),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => arguments_for(prop),
        Some("null") => Value::Null,
        _ => ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| prop.get(*k).and_then(Value::as_array)?.first())
            .map_or(Value::Null, value_for),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "integer", "default": 7},
                "s": {"type": "string"},
                "e": {"type": "string", "enum": ["x", "y"]},
                "f": {"type": "boolean"},
                "l": {"type": "array", "items": {"type": "string"}},
                "o": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "m": {"type": ["null", "string"]},
                "u": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
                "z": {}
            }
        });
        assert_eq!(
            arguments_for(&schema),
            json!({
                "a": 1, "b": 7, "s": "test", "e": "x", "f": true, "l": [],
                "o": {"n": 1}, "m": "test", "u": true, "z": null
            })
        );
        assert_eq!(arguments_for(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn the_config_is_one_http_server() {
        let c = conformance_config("http://localhost:1234/mcp", None).unwrap();
        assert_eq!(c.servers.len(), 1);
        let s = &c.servers[0];
        assert_eq!(s.name, SERVER);
        assert!(s.hold.is_none(), "{:?}", s.hold);
        assert!(matches!(
            &s.transport,
            harness9_actors::TransportSpec::Http { url, sse: false, .. } if url == "http://localhost:1234/mcp"
        ));
        assert_eq!(s.startup_timeout, SETTLE_BOUND);
    }
}
