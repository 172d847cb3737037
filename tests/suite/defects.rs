//! Defects a new user hit (issue 21, section 2): each through the commands a user runs.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;

/// Runs the binary in `dir` with a hard timeout; the project's `.mcp.json` is trusted.
fn harness9(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = harness9_in(dir);
    without_user_env(&mut cmd);
    cmd.args(args);
    output_within(cmd, None, Duration::from_secs(90))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// No input may panic: `--resume` of a session that does not exist, with a server configured
/// (its actor was created but not yet started when the command gave up), is a usage error.
#[test]
fn resume_of_a_missing_session_is_a_usage_error_not_a_panic() {
    let dir = project_with(
        "resume-nosuch",
        json!({"fx": stdio_json(fixture("fx", &[]))}),
    );
    let mut cmd = harness9_in(&dir);
    without_user_env(&mut cmd);
    cmd.env("HARNESS9_PROVIDER", "openai")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .args(["run", "-p", "x", "--resume", "nosuch"]);
    let out = output_within(cmd, None, Duration::from_secs(60));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(err.contains("no session \"nosuch\""), "{}", show(&out));
    assert!(!err.contains("panic"), "{}", show(&out));
}

/// `mcp get` shows what decides how a tool runs: its title, its annotations (which tools ask
/// before running) and its output schema, in text and in JSON.
#[test]
fn mcp_get_shows_title_annotations_and_output_schema() {
    let dir = project_with("get-meta", json!({"e": stdio_json(everything("e"))}));
    let out = harness9(&dir, &["mcp", "get", "e", "--json"]);
    assert!(out.status.success(), "{}", show(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("json");
    let row = |tool: &str| {
        rows.as_array()
            .and_then(|a| a.iter().find(|r| r["tool"] == tool))
            .cloned()
            .unwrap_or_else(|| panic!("no row for {tool}: {rows}"))
    };
    let sum = row("get-sum");
    assert_eq!(sum["title"], "Get Sum Tool", "{sum}");
    let structured = row("get-structured-content");
    assert!(structured["outputSchema"].is_object(), "{structured}");
    let annotated: Vec<&Value> = rows
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["annotations"].is_object())
        .collect();
    assert!(!annotated.is_empty(), "no tool shows annotations: {rows}");

    let out = harness9(&dir, &["mcp", "get", "e"]);
    assert!(out.status.success(), "{}", show(&out));
    let shown = text(&out.stdout);
    assert!(shown.contains("title: Get Sum Tool"), "{shown}");
    assert!(shown.contains("output schema:"), "{shown}");
    assert!(shown.contains("annotations:"), "{shown}");
    assert!(shown.contains("readOnlyHint"), "{shown}");
}

/// `mcp call` takes the tool's name on its server, the registered name the model and the TUI
/// use, and that name's underscores for a server name's dashes; a typo gets the nearest name.
#[test]
fn mcp_call_accepts_the_registered_name_and_suggests_on_a_typo() {
    let dir = project_with("call-names", json!({"e": stdio_json(everything("e"))}));
    for name in ["get-sum", "mcp__e__get_sum", "get_sum"] {
        let out = harness9(
            &dir,
            &["mcp", "call", "e", name, "--args", r#"{"a":2,"b":3}"#],
        );
        assert!(out.status.success(), "{name}: {}", show(&out));
        assert!(text(&out.stdout).contains('5'), "{name}: {}", show(&out));
    }
    let out = harness9(&dir, &["mcp", "call", "e", "get-summ", "--args", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("did you mean \"get-sum\""),
        "{}",
        show(&out)
    );
}

/// `--elicitation accept-defaults` declines a form whose required field has no default (as an
/// answers file that lacks it is declined) and says which field, instead of sending an answer
/// without it.
#[test]
fn accept_defaults_declines_a_form_whose_required_field_has_no_default() {
    let dir = project_with("accept-defaults", json!({"e": stdio_json(everything("e"))}));
    let out = harness9(
        &dir,
        &[
            "--elicitation",
            "accept-defaults",
            "mcp",
            "call",
            "e",
            "trigger-elicitation-request",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{}", show(&out));
    assert!(!stdout.contains("accepted"), "{}", show(&out));
    assert!(stdout.contains("declined"), "{}", show(&out));
    assert!(
        stderr.contains("-> declined (required field \"name\" has no default"),
        "{}",
        show(&out)
    );
}

/// A model stream over HTTP/1.1 with neither chunked encoding nor Content-Length runs to the
/// connection's close: it is read whole (two steps, so two such streams), for both formats.
#[test]
fn a_close_delimited_model_stream_is_read_to_the_close() {
    for provider in ["openai", "anthropic"] {
        let model = super::engine::Model::start_with(
            &format!("close-delimited-{provider}"),
            json!({"steps": [
                {"text": "Adding.", "tool_calls": [
                    {"id": "c1", "name": "mcp__e__get_sum", "input": {"a": 20, "b": 22}}]},
                {"text": "It is 42.", "expect": {"last_tool_result_contains": "42"}}
            ]}),
            &["--close-delimited"],
        );
        let dir = project_with(
            &format!("close-delimited-{provider}"),
            json!({"e": stdio_json(everything("e"))}),
        );
        let mut cmd = harness9_in(&dir);
        without_user_env(&mut cmd);
        cmd.env("HARNESS9_PROVIDER", provider);
        if provider == "openai" {
            cmd.env("OPENAI_BASE_URL", format!("{}/v1", model.url));
        } else {
            cmd.env("ANTHROPIC_BASE_URL", &model.url)
                .env("ANTHROPIC_API_KEY", "sk-test");
        }
        cmd.args(["run", "-p", "add 20 and 22"]);
        let out = output_within(cmd, None, Duration::from_secs(90));
        assert!(out.status.success(), "{provider}: {}", show(&out));
        assert_eq!(
            text(&out.stdout).trim(),
            "It is 42.",
            "{provider}: {}",
            show(&out)
        );
        assert_eq!(model.requests().len(), 2, "{provider}");
    }
}

/// server-filesystem declares tools only: harness9 never sends it `resources/list`,
/// `prompts/list` or `completion/complete` (the trace shows none), and says why instead of
/// showing the server's refusal.
#[test]
fn requests_follow_the_capabilities_the_server_declared() {
    let js =
        repo().join("tests/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(js.exists(), "run scripts/setup.sh: {}", js.display());
    let dir = project_with("caps-fs", json!({}));
    std::fs::create_dir_all(dir.join("files")).expect("files dir");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"fs": {"command": "node", "args": [js, dir.join("files")]}}})
            .to_string(),
    )
    .expect("write .mcp.json");
    let trace = dir.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let cases: [(&[&str], &str); 3] = [
        (&["mcp", "resources", "fs"], "does not offer resources"),
        (&["mcp", "prompts", "fs"], "does not offer prompts"),
        (
            &[
                "mcp", "complete", "fs", "--prompt", "p", "--arg", "a", "--value", "x",
            ],
            "does not offer completions",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["--trace", trace_arg.as_str()];
        all.extend(args);
        let out = harness9(&dir, &all);
        assert!(!out.status.success(), "{args:?}: {}", show(&out));
        assert!(
            text(&out.stderr).contains(says),
            "{args:?} {says:?}: {}",
            show(&out)
        );
        let sent = std::fs::read_to_string(&trace).expect("the trace file");
        for method in ["resources/list", "prompts/list", "completion/complete"] {
            assert!(
                !sent.contains(&format!("\"method\":\"{method}\"")),
                "{args:?} sent {method}:\n{sent}"
            );
        }
    }
}

/// A bad HTTP entry is held as failed, and shown as HTTP, not "stdio".
#[test]
fn a_failed_http_server_is_shown_as_http() {
    let dir = project_with(
        "failed-http",
        json!({"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                          "headers": {"Authorization": "Bearer ${H9_TEST_SURELY_UNSET}"}}}),
    );
    let out = harness9(&dir, &["mcp", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).expect("json");
    let row = &rows[0];
    assert_eq!(row["status"], "failed", "{}", show(&out));
    assert_eq!(row["transport"], "http", "{}", show(&out));
}

/// PyPI `mcp` 2.x refuses `ctx.elicit()` on a 2026-07-28 connection: the error says why and
/// names the pin, and the pinned entry runs the same tool.
#[test]
fn a_stateless_server_refusing_its_own_requests_names_the_pin() {
    let py = stdio_json(python("x"));
    let dir = project_with(
        "elicit-pin",
        json!({
            "py": py,
            "pinned": {"command": py["command"], "args": py["args"], "protocolVersion": "2025-11-25"},
        }),
    );
    let call = |server: &str| {
        harness9(
            &dir,
            &[
                "--elicitation",
                "accept-defaults",
                "mcp",
                "call",
                server,
                "confirm",
            ],
        )
    };
    let out = call("py");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains("on a 2026-07-28 connection")
            && err.contains("pin \"protocolVersion\": \"2025-11-25\""),
        "{}",
        show(&out)
    );
    let out = call("pinned");
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("answered: accept"),
        "{}",
        show(&out)
    );
}
