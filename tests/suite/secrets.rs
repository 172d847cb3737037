//! Secrets stay secret everywhere: every `${VAR}` value (in `args`, `url`, headers) and the
//! bare token of a `Bearer` header are cleaned out of the `--trace` file and the logs, and
//! every printed URL is the written form.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::common::{fixture_bin, harness9_in, output_within, project_with};
use super::http::http_fixture;

const TOKEN: &str = "tok-9f3a7c21e5";
const URL_KEY: &str = "urlkey-51d0be";
const ARG_SECRET: &str = "argsecret-77c4e0";
const CONTROL: &str = "control-text-passes";

fn run(mut cmd: Command) -> (String, String) {
    cmd.env("H9_TOKEN", TOKEN)
        .env("H9_URL_KEY", URL_KEY)
        .env("H9_ARG_SECRET", ARG_SECRET);
    let out = output_within(cmd, None, Duration::from_secs(60));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A server that quotes its bearer token and its URL's query key back in a tool result: the
/// `--trace` file and the debug log on stderr hold neither, while the text that is no secret
/// passes through.
#[test]
fn the_bare_bearer_token_and_a_url_secret_are_redacted_from_trace_and_log() {
    let srv = http_fixture("quote", &[]);
    let dir = project_with(
        "secrets-redact",
        json!({
        "h": {"url": format!("http://127.0.0.1:{}/mcp?key=${{H9_URL_KEY}}", srv.port),
              "headers": {"Authorization": "Bearer ${H9_TOKEN}"}},
        }),
    );
    let trace = dir.join("trace.jsonl");
    let mut c = harness9_in(&dir);
    c.args(["-vv", "--trace"]).arg(&trace).args([
        "mcp",
        "call",
        "h",
        "echo",
        "--args",
        &json!({"text": CONTROL}).to_string(),
    ]);
    let (stdout, stderr) = run(c);
    // The server did quote them (the user's own output shows the tool's result).
    assert!(stdout.contains(TOKEN), "{stdout}\n{stderr}");
    assert!(stdout.contains(URL_KEY), "{stdout}\n{stderr}");
    let body = std::fs::read_to_string(&trace).expect("the trace file");
    for secret in [TOKEN, URL_KEY] {
        assert!(!body.contains(secret), "{secret} in the trace:\n{body}");
        assert!(!stderr.contains(secret), "{secret} in the log:\n{stderr}");
    }
    assert!(body.contains(CONTROL), "{body}");
    assert!(
        body.contains("denied for token [redacted] at /mcp?key=[redacted]"),
        "{body}"
    );
}

/// A secret in a stdio server's `args`: the server prints it on stderr (logged at debug) and
/// a call's result echoes it (traced): neither the log nor the trace holds it.
#[test]
fn a_secret_in_args_is_redacted_from_the_log_and_the_trace() {
    let dir = project_with(
        "secrets-args",
        json!({
            "s": {"command": fixture_bin(),
                  "args": ["--stderr-text", "arg secret ${H9_ARG_SECRET} said"]},
        }),
    );
    let trace = dir.join("trace-s.jsonl");
    let mut c = harness9_in(&dir);
    c.args(["-vv", "--trace"]).arg(&trace).args([
        "mcp",
        "call",
        "s",
        "echo",
        "--args",
        &json!({"text": format!("{CONTROL} {ARG_SECRET}")}).to_string(),
    ]);
    let (stdout, stderr) = run(c);
    assert!(stdout.contains(ARG_SECRET), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("arg secret [redacted] said"),
        "the server's stderr is logged, cleaned:\n{stderr}"
    );
    assert!(!stderr.contains(ARG_SECRET), "{stderr}");
    let body = std::fs::read_to_string(&trace).expect("the trace file");
    assert!(!body.contains(ARG_SECRET), "{body}");
    assert!(body.contains(&format!("{CONTROL} [redacted]")), "{body}");
}

/// A server that is down, with its key in its URL's query, a bearer token in a header and a
/// secret in its command's path: `mcp list` (text and `--json`), `mcp get` and `doctor` (text
/// and `--json`) print the `${VAR}` names, never the values, on stdout and stderr.
#[test]
fn printed_urls_commands_and_errors_name_the_variables_never_the_values() {
    let port = super::http::free_port();
    let dir = project_with(
        "secrets-printed",
        json!({
            "down": {"url": format!("http://127.0.0.1:{port}/mcp?key=${{H9_URL_KEY}}"),
                     "headers": {"Authorization": "Bearer ${H9_TOKEN}"},
                     "startupTimeoutSec": 5},
            "gone": {"command": "/nonexistent/${H9_ARG_SECRET}/server",
                     "args": ["--key", "${H9_ARG_SECRET}"]},
        }),
    );
    for args in [
        &["mcp", "list"][..],
        &["mcp", "list", "--json"],
        &["mcp", "get", "down"],
        &["mcp", "get", "gone", "--json"],
        &["doctor"],
        &["doctor", "--json"],
    ] {
        let mut c = harness9_in(&dir);
        c.args(args);
        let (stdout, stderr) = run(c);
        let all = format!("{stdout}\n{stderr}");
        for secret in [TOKEN, URL_KEY, ARG_SECRET] {
            assert!(!all.contains(secret), "{args:?} printed {secret}:\n{all}");
        }
        let written = if args.contains(&"gone") {
            "/nonexistent/${H9_ARG_SECRET}/server"
        } else {
            "mcp?key=${H9_URL_KEY}"
        };
        assert!(all.contains(written), "{args:?} shows {written}:\n{all}");
        // The control: what is no secret still shows.
        assert!(
            all.contains("No such file") || all.contains(&format!("127.0.0.1:{port}")),
            "{args:?}:\n{all}"
        );
    }
}

/// `doctor`'s telemetry line shows the OTLP endpoint without its userinfo and query values.
#[test]
fn doctor_prints_the_otlp_endpoint_without_its_credentials() {
    let dir = project_with("secrets-otel", json!({}));
    let port = super::http::free_port();
    let mut c = harness9_in(&dir);
    c.arg("doctor").env("OTEL_TRACES_EXPORTER", "otlp").env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://otel-user:pw-5e1f9a@127.0.0.1:{port}/otlp?api_key=qk-8d22c1"),
    );
    let (stdout, stderr) = run(c);
    let all = format!("{stdout}\n{stderr}");
    assert!(!all.contains("pw-5e1f9a"), "{all}");
    assert!(!all.contains("qk-8d22c1"), "{all}");
    assert!(!all.contains("otel-user"), "{all}");
    assert!(
        all.contains(&format!("http://127.0.0.1:{port}/otlp?api_key=[redacted]")),
        "{all}"
    );
}
