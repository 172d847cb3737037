//! Both protocol eras from one `.mcp.json`, through the public CLI: server-everything speaks
//! only the handshake era (2025-11-25), the PyPI `mcp` 2.3.0 server speaks both and is taken in
//! the stateless era (2026-07-28), over stdio and Streamable HTTP, with no `protocolVersion` in
//! the config. The Python server's `order` tool asks for input (`input_required` in the
//! stateless era, `elicitation/create` in the handshake era), answered headless.

use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::{everything_http, free_port, python_http};

const LIMIT: Duration = Duration::from_secs(60);

/// The four servers, plus the Python server pinned to the handshake era.
fn config(everything_port: u16, python_port: u16) -> Value {
    json!({
        "everything": stdio_json(everything("everything")),
        "py-stdio": stdio_json(python("py-stdio")),
        "everything-http": {"url": format!("http://127.0.0.1:{everything_port}/mcp")},
        "py-http": {"url": format!("http://127.0.0.1:{python_port}/mcp")},
        "py-legacy": {
            "command": stdio_json(python("x"))["command"],
            "args": stdio_json(python("x"))["args"],
            "protocolVersion": "2025-11-25"
        },
    })
}

fn run_json(dir: &std::path::Path, args: &[&str]) -> (Value, String) {
    let mut c = harness9_in(dir);
    without_user_env(&mut c).args(args);
    let out = output_within(c, None, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    (v, stderr)
}

/// The records of a `--trace` file.
fn read_trace(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the trace file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn one_config_reaches_both_eras_over_stdio_and_http() {
    let (pe, pp) = (free_port(), free_port());
    let _everything = everything_http(pe);
    let _python = python_http(pp);
    let dir = project_with("eras", config(pe, pp));

    let (list, _) = run_json(&dir, &["mcp", "list", "--json"]);
    let rows = list.as_array().expect("an array");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from {list}"))
    };
    for (name, era, version) in [
        ("everything", "handshake", "2025-11-25"),
        ("everything-http", "handshake", "2025-11-25"),
        ("py-stdio", "stateless", "2026-07-28"),
        ("py-http", "stateless", "2026-07-28"),
        ("py-legacy", "handshake", "2025-11-25"),
    ] {
        let r = row(name);
        assert_eq!(r["status"], "connected", "{r}");
        assert_eq!(r["era"], era, "{r}");
        assert_eq!(r["protocolVersion"], version, "{r}");
    }

    // The input request is answered headless: declined by default, or accepted with the
    // schema's defaults; in the stateless era over both transports, and in the handshake era.
    for server in ["py-stdio", "py-http", "py-legacy"] {
        let call = [
            "mcp",
            "call",
            server,
            "order",
            "--args",
            r#"{"item":"tea"}"#,
            "--json",
        ];
        let (declined, _) = run_json(&dir, &call);
        assert_eq!(
            declined["content"][0]["text"], "no order: decline",
            "{server}"
        );
        let mut accept = vec!["--elicitation", "accept-defaults"];
        accept.extend(call);
        let (accepted, _) = run_json(&dir, &accept);
        assert_eq!(
            accepted["content"][0]["text"], "ordered a medium tea",
            "{server}"
        );
    }
}

#[test]
fn the_trace_shows_the_stateless_request_headers_and_meta() {
    let (pe, pp) = (free_port(), free_port());
    let _everything = everything_http(pe);
    let _python = python_http(pp);
    let dir = project_with(
        "eras-trace",
        json!({
            "py-http": {"url": format!("http://127.0.0.1:{pp}/mcp")},
            "everything-http": {"url": format!("http://127.0.0.1:{pe}/mcp")},
        }),
    );
    let trace = dir.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let args = [
        "--trace",
        trace_arg.as_str(),
        "mcp",
        "call",
        "py-http",
        "greet",
        "--args",
        r#"{"name":"ada"}"#,
        "--json",
    ];
    let (out, _) = run_json(&dir, &args);
    assert_eq!(out["content"][0]["text"], "hello, ada");
    let records = read_trace(&trace);
    let call = records
        .iter()
        .find(|r| r["dir"] == "send" && r["method"] == "tools/call")
        .expect("the tools/call request");
    assert_eq!(call["era"], "stateless", "{call}");
    let meta = &call["message"]["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "harness9"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    let http = records
        .iter()
        .find(|r| r["method"] == "tools/call" && r["http_status"] == 200)
        .expect("the tools/call HTTP exchange");
    let sent = &http["request_headers"];
    assert_eq!(sent["mcp-method"], "tools/call", "{http}");
    assert_eq!(sent["mcp-name"], "greet", "{http}");
    assert_eq!(sent["mcp-protocol-version"], "2026-07-28", "{http}");
    assert!(http["response_headers"].is_object(), "{http}");
    // The handshake-era server refuses the probe; its error body is in the trace, so why it
    // fell back can be read from the trace alone (`mcp call` starts only the server it calls:
    // `mcp list` starts both).
    let list_trace = dir.join("list.jsonl");
    let list_arg = list_trace.display().to_string();
    run_json(
        &dir,
        &["--trace", list_arg.as_str(), "mcp", "list", "--json"],
    );
    let records = read_trace(&list_trace);
    let refused = records
        .iter()
        .find(|r| {
            r["server"] == "everything-http"
                && r["method"] == "server/discover"
                && r["http_status"].as_u64().is_some_and(|s| s >= 400)
        })
        .expect("the refused probe");
    assert!(refused["message"].is_object(), "{refused}");
    assert!(
        records
            .iter()
            .any(|r| r["server"] == "everything-http" && r["method"] == "initialize"),
        "the handshake followed"
    );
    assert!(
        records
            .iter()
            .any(|r| r["server"] == "everything-http" && r["era"] == "handshake"),
        "the handshake era is in the trace"
    );
}

#[test]
fn a_stdio_server_that_exits_on_the_probe_is_started_again_for_the_handshake() {
    run(LIMIT, || async {
        let rt = start(
            vec![fixture("dies", &["--exit-on-unknown"])],
            harness9_actors::RestartPolicy::default(),
        );
        let st = connected(&rt, "dies", Duration::from_secs(20)).await;
        let harness9_actors::messages::ServerStatus::Connected { info, .. } = &st else {
            unreachable!()
        };
        assert_eq!(info.era.label(), "handshake", "{info:?}");
        assert_eq!(
            call_text(&rt, "mcp__dies__echo", json!({"text": "still here"})).await,
            "still here"
        );
        shutdown(rt, &[pid_of(&st)]).await;
    });
}

#[test]
fn a_stateless_server_announces_new_tools_on_its_listen_stream() {
    run(LIMIT, || async {
        let pp = free_port();
        let _python = python_http(pp);
        let rt = start(
            vec![
                python("py"),
                super::http::http_spec("pyh", format!("http://127.0.0.1:{pp}/mcp"), false),
            ],
            harness9_actors::RestartPolicy::default(),
        );
        for server in ["py", "pyh"] {
            let st = connected(&rt, server, Duration::from_secs(20)).await;
            let harness9_actors::messages::ServerStatus::Connected {
                tools: before,
                info,
            } = st
            else {
                unreachable!()
            };
            assert_eq!(info.era.label(), "stateless", "{server}");
            let tool = format!("shout_{server}");
            assert_eq!(
                call_text(&rt, &format!("mcp__{server}__learn"), json!({"name": tool})).await,
                format!("added {tool}")
            );
            // The server's notifications/tools/list_changed on the subscriptions/listen
            // stream (no polling here: the status changes when the re-list is registered).
            wait_for(&rt, server, Duration::from_secs(10), |s| {
                matches!(s, harness9_actors::messages::ServerStatus::Connected { tools, .. } if *tools > before)
            })
            .await;
            assert_eq!(
                call_text(&rt, &format!("mcp__{server}__{tool}"), json!({})).await,
                "learned"
            );
        }
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_stateless_call_whose_stream_breaks_is_sent_again_under_a_new_id() {
    run(LIMIT, || async {
        let server = super::http::http_fixture("stateless-cut", &[]);
        let rt = start(
            vec![super::http::http_spec(
                "cut",
                format!("http://127.0.0.1:{}/mcp", server.port),
                false,
            )],
            harness9_actors::RestartPolicy::default(),
        );
        let st = connected(&rt, "cut", Duration::from_secs(20)).await;
        let harness9_actors::messages::ServerStatus::Connected { info, .. } = &st else {
            unreachable!()
        };
        assert_eq!(info.era.label(), "stateless");
        // The first stream ends with no response; the call is sent again and answered.
        assert_eq!(
            call_text(&rt, "mcp__cut__echo", json!({"text": "again"})).await,
            "again"
        );
        shutdown(rt, &[]).await;
    });
}

/// `mcp call` on a 2026-07-28-only HTTP server (`initialize` refused) whose `server/discover`
/// answer comes `delay_ms` late; the era in `mcp list --json`. Connects within
/// `startupTimeoutSec` (20 s) whatever the 2 s probe bound.
fn slow_stateless_server_connects(delay_ms: u64) {
    let delay = delay_ms.to_string();
    let server = super::http::http_fixture("stateless-only", &["--discover-delay", &delay]);
    let dir = project_with(
        &format!("slow-discover-{delay_ms}"),
        json!({"slow": {
            "url": format!("http://127.0.0.1:{}/mcp", server.port),
            "startupTimeoutSec": 20,
        }}),
    );
    let (list, stderr) = run_json(&dir, &["mcp", "list", "--json"]);
    let row = &list[0];
    assert_eq!(row["status"], "connected", "{list}\n{stderr}");
    assert_eq!(row["era"], "stateless", "{list}");
    assert_eq!(row["protocolVersion"], "2026-07-28", "{list}");
    let mut c = harness9_in(&dir);
    without_user_env(&mut c).args([
        "mcp",
        "call",
        "slow",
        "echo",
        "--args",
        r#"{"text":"late but here"}"#,
    ]);
    let out = output_within(c, None, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("late but here"), "{stdout}");
}

#[test]
fn a_stateless_server_whose_discover_answer_takes_2_5_s_connects() {
    slow_stateless_server_connects(2_500);
}

#[test]
fn a_stateless_server_whose_discover_answer_takes_8_s_connects() {
    slow_stateless_server_connects(8_000);
}

#[test]
fn a_handshake_server_that_never_answers_discover_connects() {
    let fixture = fixture("mute", &["--discover-never"]);
    let dir = project_with("discover-never", json!({"mute": stdio_json(fixture)}));
    let (list, stderr) = run_json(&dir, &["mcp", "list", "--json"]);
    let row = &list[0];
    assert_eq!(row["status"], "connected", "{list}\n{stderr}");
    assert_eq!(row["era"], "handshake", "{list}");
    let mut c = harness9_in(&dir);
    without_user_env(&mut c).args([
        "mcp",
        "call",
        "mute",
        "echo",
        "--args",
        r#"{"text":"no discover"}"#,
    ]);
    let out = output_within(c, None, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("no discover"), "{stdout}");
}
