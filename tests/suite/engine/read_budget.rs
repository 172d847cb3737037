//! The read budget end to end (README "Memory"): four 30 MiB replies of one Streamable HTTP
//! server, sent chunked at once, against `HARNESS9_READ_BUDGET_MB=50`: each call gets its
//! whole result or an error naming the server and the budget, never more than the budget in
//! flight but one reply; with the default budget all four arrive whole.

use super::*;

const MIB: usize = 1024 * 1024;

fn four_big_calls(tag: &str, budget_mb: Option<&str>) -> Out {
    let srv = super::super::http::http_fixture("chunked", &["--barrier", "4"]);
    let dir = project(
        tag,
        json!({"h": {"url": format!("http://127.0.0.1:{}/mcp", srv.port),
                     "toolTimeoutSec": 60}}),
    );
    let calls: Vec<Value> = ["a", "b", "c", "d"]
        .iter()
        .map(|id| call(id, "mcp__h__big", json!({"bytes": 30 * MIB})))
        .collect();
    let model = Model::start(
        tag,
        json!({"steps": [{"tool_calls": calls}, {"text": "done"}]}),
    );
    let mut cmd = anthropic(&dir, &model);
    if let Some(b) = budget_mb {
        cmd.env("HARNESS9_READ_BUDGET_MB", b);
    }
    let out = Run::start(
        cmd,
        &[
            "run",
            "-p",
            "go",
            "--json",
            "--allowed-tools",
            "mcp__h__big",
        ],
    )
    .finish(Duration::from_secs(120));
    out.ok();
    out
}

#[test]
fn replies_in_flight_share_the_read_budget_and_the_calls_over_it_fail_clearly() {
    let out = four_big_calls("budget-50", Some("50"));
    let (mut whole, mut refused) = (0, 0);
    for id in ["a", "b", "c", "d"] {
        let r = out.event("tool_result", id);
        let text = r["output"].as_str().unwrap_or_default();
        if r["is_error"] == true {
            assert!(
                text.contains("the reply of server \"h\" was dropped")
                    && text.contains("read budget of 50 MiB")
                    && text.contains("HARNESS9_READ_BUDGET_MB"),
                "{r}"
            );
            refused += 1;
        } else {
            assert!(r["output_bytes"].as_u64() >= Some(30 * MIB as u64), "{r}");
            assert!(text.starts_with("xxxx"), "{r}");
            whole += 1;
        }
    }
    // 4 x 30 MiB cannot be read at once within 50 MiB; the last reply standing always is.
    assert!(
        refused >= 1 && whole >= 1,
        "{whole} whole, {refused} refused\n{out}"
    );
}

#[test]
fn with_the_default_budget_four_30_mib_replies_arrive_whole() {
    let out = four_big_calls("budget-default", None);
    for id in ["a", "b", "c", "d"] {
        let r = out.event("tool_result", id);
        assert_eq!(r["is_error"], false, "{r}");
        assert!(r["output_bytes"].as_u64() >= Some(30 * MIB as u64), "{r}");
    }
}

#[test]
fn a_read_budget_that_is_not_a_number_is_a_clear_error() {
    let dir = project("budget-bad", json!({}));
    let mut c = harness9(&dir);
    c.env("HARNESS9_READ_BUDGET_MB", "lots")
        .args(["mcp", "list"]);
    let out = output_within(c, None, Duration::from_secs(30));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("HARNESS9_READ_BUDGET_MB is \"lots\"; set it to a whole number of MiB"),
        "{err}"
    );
}

/// Stdio lines share the same budget: four fixture servers each writing a 30 MiB line at once
/// against 50 MiB.
#[test]
fn stdio_lines_in_flight_share_the_read_budget() {
    let tag = "budget-stdio";
    let servers: serde_json::Map<String, Value> = ["s1", "s2", "s3", "s4"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                fixture_json(&[], json!({"toolTimeoutSec": 60})),
            )
        })
        .collect();
    let dir = project(tag, Value::Object(servers));
    let calls: Vec<Value> = ["s1", "s2", "s3", "s4"]
        .iter()
        .map(|n| call(n, &format!("mcp__{n}__big"), json!({"bytes": 30 * MIB})))
        .collect();
    let model = Model::start(
        tag,
        json!({"steps": [{"tool_calls": calls}, {"text": "done"}]}),
    );
    let mut cmd = anthropic(&dir, &model);
    cmd.env("HARNESS9_READ_BUDGET_MB", "50");
    let out = Run::start(
        cmd,
        &[
            "run",
            "-p",
            "go",
            "--json",
            "--allowed-tools",
            "mcp__s1__big,mcp__s2__big,mcp__s3__big,mcp__s4__big",
        ],
    )
    .finish(Duration::from_secs(120));
    out.ok();
    let (mut whole, mut refused) = (0, 0);
    for id in ["s1", "s2", "s3", "s4"] {
        let r = out.event("tool_result", id);
        let text = r["output"].as_str().unwrap_or_default();
        if r["is_error"] == true {
            assert!(
                text.contains(&format!("the reply of server \"{id}\" was dropped"))
                    && text.contains("read budget of 50 MiB"),
                "{r}"
            );
            refused += 1;
        } else {
            assert!(r["output_bytes"].as_u64() >= Some(30 * MIB as u64), "{r}");
            whole += 1;
        }
    }
    assert!(
        refused >= 1 && whole >= 1,
        "{whole} whole, {refused} refused\n{out}"
    );
}
