//! The `harness9` binary, run as a user runs it.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::*;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_harness9")
}

fn everything_json(extra_env: Value) -> Value {
    let mut v = stdio_json(everything("x"));
    v["env"] = extra_env;
    v
}

/// Runs the binary in `dir` with a hard timeout; the project's `.mcp.json` is trusted.
fn harness9(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = harness9_in(dir);
    cmd.args(args);
    output_within(cmd, stdin, Duration::from_secs(90))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn list_shows_connected_and_failed_servers_and_exits_1() {
    let dir = project_with(
        "list",
        json!({"everything": everything_json(json!({})), "broken": {"command": "/nonexistent/nope"}}),
    );
    let out = harness9(&dir, &["mcp", "list"], None);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("everything"))
        .expect(&stdout);
    assert!(
        row.contains("connected") && row.contains("2025-11-25"),
        "{row}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("broken"))
        .expect(&stdout);
    assert!(
        row.contains("failed") && row.contains("No such file or directory"),
        "{row}"
    );
    assert!(
        text(&out.stderr).contains("[mcp] server \"broken\" connect failed: spawn /nonexistent/nope: No such file or directory"),
        "{}",
        text(&out.stderr)
    );

    let out = harness9(&dir, &["mcp", "list", "--json"], None);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let e = rows.iter().find(|r| r["name"] == "everything").unwrap();
    assert_eq!(e["status"], "connected");
    assert!(e["tools"].as_u64().unwrap() >= 10);
    let b = rows.iter().find(|r| r["name"] == "broken").unwrap();
    assert_eq!(b["status"], "failed");
}

#[test]
fn list_without_config_is_empty_and_ok() {
    let dir = temp_path("noconf");
    std::fs::create_dir_all(&dir).unwrap();
    let out = harness9(&dir, &["mcp", "list"], None);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("no MCP servers configured"));
}

#[test]
fn invalid_config_names_file_line_and_column() {
    let dir = temp_path("badconf");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".mcp.json"),
        "{\"mcpServers\": {\n  \"a\": {\"type\": \"ftp\", \"url\": \"x\"}\n}}",
    )
    .unwrap();
    let out = harness9(&dir, &["mcp", "list"], None);
    // A bad entry fails its server only (the others still connect): `mcp list` exits 1.
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(".mcp.json:2:") && err.contains("server \"a\"") && err.contains("ftp"),
        "{err}"
    );
}

#[test]
fn call_prints_text_reads_stdin_args_and_fails_on_is_error() {
    let py = python("py");
    let harness9_actors::TransportSpec::Stdio { command, args, .. } = py.transport else {
        unreachable!()
    };
    let dir = project_with(
        "call",
        json!({"e": everything_json(json!({})), "py": {"command": command, "args": args}}),
    );
    let out = harness9(
        &dir,
        &["mcp", "call", "e", "echo", "--args", r#"{"message":"hi"}"#],
        None,
    );
    assert_eq!(text(&out.stdout).trim_end(), "Echo: hi");
    assert_eq!(out.status.code(), Some(0));

    let out = harness9(
        &dir,
        &["mcp", "call", "e", "get-sum", "--args", "-", "--json"],
        Some(r#"{"a":1,"b":2}"#),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["isError"], false);
    assert!(v["content"][0]["text"].as_str().unwrap().contains('3'));

    let out = harness9(
        &dir,
        &["mcp", "call", "py", "multiply", "--args", r#"{"a":"x"}"#],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));

    // A tool the server does not have: a usage error.
    let out = harness9(&dir, &["mcp", "call", "e", "no-such-tool"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("server \"e\" has no tool \"no-such-tool\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn call_prints_every_progress_line_before_the_result() {
    let dir = project_with("call-progress", json!({"p": stdio_json(fixture("p", &[]))}));
    // No gap between the notices and the result: they reach harness9 together.
    let args = r#"{"steps":40,"gap_ms":0}"#;
    let out = harness9(
        &dir,
        &["mcp", "call", "p", "progress", "--args", args],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), "done 40");
    let steps: Vec<String> = text(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("[mcp] progress "))
        .map(str::to_owned)
        .collect();
    let want: Vec<String> = (1..=40).map(|i| format!("{i}/40 step {i}")).collect();
    assert_eq!(steps, want, "{}", text(&out.stderr));
}

#[test]
fn trace_file_has_every_message_with_secrets_redacted() {
    let secret = "hunter2-very-secret-value";
    let dir = project_with(
        "trace",
        json!({"e": everything_json(json!({"HARNESS9_TEST_SECRET": secret}))}),
    );
    let trace = dir.join("trace.jsonl");
    let out = harness9(
        &dir,
        &[
            "--trace",
            trace.to_str().unwrap(),
            "mcp",
            "call",
            "e",
            "get-env",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The tool itself printed the secret to us (stdout is the user's); the trace must not hold it.
    assert!(text(&out.stdout).contains("HARNESS9_TEST_SECRET"));
    let body = std::fs::read_to_string(&trace).unwrap();
    assert!(!body.contains(secret), "secret leaked into the trace");
    assert!(body.contains("[redacted]"));
    let records: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let methods: Vec<&str> = records
        .iter()
        .filter_map(|r| r["method"].as_str())
        .collect();
    for m in [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ] {
        assert!(methods.contains(&m), "{m} not traced: {methods:?}");
    }
    let reply = records
        .iter()
        .find(|r| r["dir"] == "recv" && r["method"] == "tools/call")
        .expect("traced tools/call reply");
    assert!(reply["latency_us"].as_u64().is_some());
    assert_eq!(reply["server"], "e");
    assert!(reply["ts"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn trace_stats_counts_a_recorded_session_per_method() {
    let dir = project_with(
        "trace-stats",
        json!({"e": everything_json(json!({})), "p": stdio_json(fixture("p", &[]))}),
    );
    // Each command writes its own trace file; one file of the three sessions, as a user
    // would gather them.
    let mut body = String::new();
    for (i, (server, tool, args, code)) in [
        ("e", "echo", r#"{"message":"hi"}"#, 0),
        ("e", "get-sum", r#"{"a":"not a number"}"#, 1),
        ("p", "progress", r#"{"steps":3,"gap_ms":0}"#, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let one = dir.join(format!("trace{i}.jsonl"));
        let out = harness9(
            &dir,
            &[
                "--trace",
                one.to_str().unwrap(),
                "mcp",
                "call",
                server,
                tool,
                "--args",
                args,
            ],
            None,
        );
        // Each call ran to its answer (the bad get-sum is the server's error, exit 1), so
        // its trace holds the whole exchange the stats below count.
        assert_eq!(
            out.status.code(),
            Some(code),
            "{server} {tool}: {}",
            text(&out.stderr)
        );
        body.push_str(&std::fs::read_to_string(&one).unwrap());
    }
    // A line that is not a record is counted, not fatal.
    body.push_str("not a record\n");
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, body).unwrap();
    let trace_arg = trace.to_str().unwrap();

    let out = harness9(&dir, &["trace", "stats", trace_arg, "--json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |server: &str, method: &str| {
        v["methods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["server"] == server && m["method"] == method)
            .unwrap_or_else(|| panic!("no {server} {method} in {v}"))
            .clone()
    };
    let calls = row("e", "tools/call");
    assert_eq!(
        (calls["requests_sent"].as_u64(), calls["replies"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(calls["errors"], 1, "the bad get-sum is an error: {calls}");
    let lat = calls["latency_ms"]
        .as_array()
        .expect("latencies of the replies");
    assert!(lat[0].as_f64().unwrap() > 0.0 && lat[0].as_f64() <= lat[3].as_f64());
    assert_eq!(
        row("p", "notifications/progress")["notifications_received"],
        3
    );
    assert_eq!(row("p", "tools/call")["errors"], 0);
    assert_eq!(v["skipped"], 1);

    // One server, as a table.
    let out = harness9(&dir, &["trace", "stats", trace_arg, "--server", "p"], None);
    let table = text(&out.stdout);
    assert!(table.starts_with("SERVER"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("p ") && l.contains("tools/call")),
        "{table}"
    );
    assert!(!table.lines().any(|l| l.starts_with("e ")), "{table}");

    // A missing file: a clear error naming it.
    let out = harness9(&dir, &["trace", "stats", "no-such.jsonl"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot read the trace file no-such.jsonl"),
        "{}",
        text(&out.stderr)
    );
}

/// Pids whose environment holds `marker`.
fn pids_with_env(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            if env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()) {
                out.push(pid);
            }
        }
    }
    out
}

#[test]
fn ctrl_c_during_a_call_leaves_no_child() {
    let marker = format!("HARNESS9_TEST_MARKER={}", temp_path("marker").display());
    let (k, v) = marker.split_once('=').unwrap();
    let dir = project_with("ctrlc", json!({"e": everything_json(json!({k: v}))}));
    let mut child = Command::new(bin())
        .args([
            "mcp",
            "call",
            "e",
            "trigger-long-running-operation",
            "--args",
            r#"{"duration":30,"steps":30}"#,
            "--approve-project",
        ])
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first progress line: the call is in flight.
    wait_for_progress(&mut child);
    let servers = pids_with_env(&marker);
    assert!(!servers.is_empty(), "server process not found");
    // SAFETY: SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "harness9 did not exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert!(pids_with_env(&marker).is_empty(), "children left behind");
}

#[test]
fn completions_cover_every_command() {
    let dir = temp_path("completions");
    std::fs::create_dir_all(&dir).unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = harness9(&dir, &["completions", shell], None);
        assert!(out.status.success(), "{shell}");
        let script = text(&out.stdout);
        for word in [
            "mcp",
            "add-json",
            "remove",
            "approve",
            "run",
            "elicitation",
            "complete",
            "context",
        ] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let out = harness9(&dir, &["completions", "tcsh"], None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn each_command_help_shows_only_the_flags_that_apply_to_it() {
    let dir = temp_path("help");
    std::fs::create_dir_all(&dir).unwrap();
    let help = |args: &[&str]| {
        let out = harness9(&dir, args, None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    let model_flags = ["--provider", "--model", "--base-url"];
    for cmd in [
        &["mcp", "list", "--help"][..],
        &["mcp", "call", "--help"],
        &["mcp", "complete", "--help"],
        &["mcp", "add", "--help"],
        &["mcp", "approve", "--help"],
    ] {
        let shown = help(cmd);
        for flag in model_flags.iter().chain(&["--yes"]) {
            assert!(!shown.contains(flag), "{cmd:?} mentions {flag}:\n{shown}");
        }
    }
    // Editing commands take --config and nothing that starts servers.
    let add = help(&["mcp", "add", "--help"]);
    assert!(
        add.contains("--config") && !add.contains("--trace"),
        "{add}"
    );
    let run = help(&["run", "--help"]);
    for flag in model_flags.iter().chain(&["--config", "--trace"]) {
        assert!(run.contains(flag), "run --help lacks {flag}:\n{run}");
    }
    assert!(!run.contains("--yes"), "{run}");
    let top = help(&["--help"]);
    for flag in model_flags.iter().chain(&["--yes", "--config"]) {
        assert!(top.contains(flag), "--help lacks {flag}:\n{top}");
    }
    // A model flag before a command that uses no model is a usage error, not ignored; the
    // session's flags still work on either side of the command's name.
    let out = harness9(&dir, &["--model", "m", "mcp", "list"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--model"),
        "{}",
        text(&out.stderr)
    );
    for args in [
        &["--config", "none.json", "mcp", "list"][..],
        &["mcp", "list", "--config", "none.json"],
    ] {
        let out = harness9(&dir, args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("none.json"), "{args:?}");
    }
}

/// The one JSON object a failed `--json` command printed on stdout.
fn json_error(out: &Output) -> Value {
    let stdout = text(&out.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {stdout:?}"))
}

#[test]
fn json_errors_are_json_on_stdout_with_the_exit_code() {
    // A config error: exit 2.
    let dir = temp_path("jsonerr");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(".mcp.json"), "{\"mcpServers\": [1]}").unwrap();
    let out = harness9(&dir, &["mcp", "list", "--json"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let e = json_error(&out);
    assert_eq!(e["code"], 2, "{e}");
    assert!(e["error"].as_str().unwrap().contains(".mcp.json:1:"), "{e}");
    // The text goes to stderr as before.
    assert!(text(&out.stderr).contains(".mcp.json:1:"));

    // An unknown server: a usage error, exit 2, naming the servers there are.
    let dir = project_with("jsonerr-call", json!({"e": everything_json(json!({}))}));
    let out = harness9(&dir, &["mcp", "call", "nope", "echo", "--json"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let e = json_error(&out);
    assert_eq!(e["code"], 2, "{e}");
    let msg = e["error"].as_str().unwrap();
    assert!(
        msg.contains("\"nope\"") && msg.contains("servers: e"),
        "{e}"
    );

    // A failure: a tool the server does not have is a usage error too; a call that fails
    // is exit 1.
    let out = harness9(
        &dir,
        &["mcp", "call", "e", "echo", "--args", "[1]", "--json"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(json_error(&out)["code"], 2);
    let out = harness9(
        &dir,
        &[
            "mcp",
            "call",
            "e",
            "echo",
            "--args",
            "{\"message\": 5}",
            "--json",
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    // clap's own usage errors too.
    let out = harness9(&dir, &["mcp", "get", "--json"], None);
    assert_eq!(out.status.code(), Some(2));
    let e = json_error(&out);
    assert!(e["error"].as_str().unwrap().contains("<SERVER>"), "{e}");
}

#[test]
fn a_vscode_input_comes_from_its_variable_or_the_kept_value_and_the_error_names_it() {
    let dir = temp_path("inputs");
    std::fs::create_dir_all(dir.join(".vscode")).unwrap();
    let mut server = everything_json(json!({"TOKEN": "${input:api-token}"}));
    server["type"] = json!("stdio");
    let config = json!({"inputs": [{"type": "promptString", "id": "api-token", "password": true}],
                        "servers": {"e": server}});
    let file = dir.join(".vscode/mcp.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let store = dir.join("inputs.json");
    let list = |env: &[(&str, &str)]| {
        let mut cmd = harness9_in(&dir);
        cmd.args(["mcp", "list", "--json"])
            .env("HARNESS9_INPUTS", &store)
            .env_remove("HARNESS9_INPUT_API_TOKEN");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = output_within(cmd, None, Duration::from_secs(60));
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
        rows[0].clone()
    };
    // Headless, no value: the server is held, the error names the variable.
    let row = list(&[]);
    assert_eq!(row["status"], "failed", "{row}");
    assert!(
        row["error"]
            .as_str()
            .unwrap()
            .contains("HARNESS9_INPUT_API_TOKEN"),
        "{row}"
    );
    // The variable gives it.
    let row = list(&[("HARNESS9_INPUT_API_TOKEN", "t")]);
    assert_eq!(row["status"], "connected", "{row}");
    // So does the value the TUI kept.
    harness9::app::config::input_vars::save(&store, &file, "api-token", "kept").unwrap();
    let row = list(&[]);
    assert_eq!(row["status"], "connected", "{row}");
}

/// A tool left out by the server's filters is named as filtered (and by which list), not as
/// unknown; a filter entry that names no tool of the server is pointed out.
#[test]
fn filtered_tools_are_named_and_unknown_filter_entries_warned() {
    let mut e = everything_json(json!({}));
    e["disabledTools"] = json!(["get-sum", "get-summ"]);
    let dir = project_with("filters", json!({ "e": e }));
    let out = harness9(
        &dir,
        &["mcp", "call", "e", "get-sum", "--args", r#"{"a":1,"b":2}"#],
        None,
    );
    let err = text(&out.stderr);
    // An unknown (here: filtered) tool is a usage error.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"tool "get-sum" of server "e" is left out by the server's disabledTools"#),
        "{err}"
    );
    let out = harness9(&dir, &["mcp", "get", "e"], None);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("disabledTools names no tool of this server: get-summ"),
        "{err}"
    );
    assert!(!err.contains("get-sum,"), "only the unknown entry: {err}");
}

/// `mcp read --watch N` subscribes and prints the resource again on each of its next N
/// changes (the fixture's `tick://counter` changes three times after a subscribe), then exits.
#[test]
fn read_watch_prints_each_change_of_a_subscribed_resource() {
    let fx = json!({"command": fixture_bin(), "args": ["--ticking-resource"]});
    let dir = project_with("watch", json!({ "fx": fx }));
    let out = harness9(
        &dir,
        &["mcp", "read", "fx", "tick://counter", "--watch", "3"],
        None,
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"tick 0"), "{stdout}");
    assert_eq!(stdout.matches("--- changed (").count(), 3, "{stdout}");
    assert_eq!(lines.last(), Some(&"tick 3"), "{stdout}");
    // JSON: one line per read.
    let out = harness9(
        &dir,
        &[
            "mcp",
            "read",
            "fx",
            "tick://counter",
            "--watch",
            "1",
            "--json",
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let reads: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reads.len(), 2, "{stdout}");
    assert_eq!(reads[0]["contents"][0]["text"], "tick 0");
}

#[test]
fn help_shows_each_commands_own_flags_and_run_papercuts_are_clear() {
    let dir = temp_path("papercuts");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let help = |args: &[&str]| text(&harness9(&dir, args, None).stdout);
    // Headless answers belong to the commands that run tools, not to listing ones.
    for cmd in [
        &["mcp", "list", "--help"][..],
        &["mcp", "get", "--help"],
        &["mcp", "resources", "--help"],
    ] {
        let shown = help(cmd);
        for flag in ["--elicitation", "--sampling"] {
            assert!(!shown.contains(flag), "{cmd:?} offers {flag}:\n{shown}");
        }
        assert!(shown.contains("--trace"), "{cmd:?}:\n{shown}");
    }
    for cmd in [&["mcp", "call", "--help"][..], &["run", "--help"]] {
        let shown = help(cmd);
        assert!(shown.contains("--elicitation"), "{cmd:?}:\n{shown}");
    }
    let top = help(&["--help"]);
    let yes = top
        .lines()
        .skip_while(|l| !l.contains("--yes"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(yes.contains("--permission-mode bypass"), "{yes}");

    let model = super::engine::Model::start(
        "papercuts",
        json!({"steps": [{"text": "streamed"}, {"text": "again"}]}),
    );
    let run = |args: &[&str]| {
        let mut c = harness9_in(&dir);
        without_user_env(&mut c)
            .env("HOME", dir.join("home"))
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", &model.url)
            .args(args);
        output_within(c, None, Duration::from_secs(60))
    };
    // --max-steps 0 could never answer.
    let out = run(&["run", "-p", "go", "--max-steps", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("at least 1"),
        "{}",
        text(&out.stderr)
    );
    // --continue with nothing to continue: said, exit 2, no model request.
    let out = run(&["run", "-p", "go", "--continue"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no earlier conversation"),
        "{}",
        text(&out.stderr)
    );
    assert!(model.requests().is_empty(), "the model was asked");
    // --stream alone gives the JSON events it adds to.
    let out = run(&["run", "-p", "go", "--stream"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(events.iter().any(|e| e["event"] == "text"), "{events:?}");
    assert!(events.iter().any(|e| e["event"] == "done"), "{events:?}");
    // Now there is a conversation to continue.
    let out = run(&["run", "-p", "more", "--continue", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
