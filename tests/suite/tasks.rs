//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663; issue 35) through the binary's
//! commands: `mcp call` waiting for a task past the tool timeout, `--no-wait` and
//! `mcp tasks list|get|cancel`, Ctrl+C sending `tasks/cancel`, input asked mid-task answered
//! headless (once), `Mcp-Name` on `tasks/*` over HTTP, a task on a handshake-era call refused,
//! a hostile task server bounded (tests/python/task_server.py, recording what it receives), and
//! a real FastMCP server with `fastmcp-tasks` (tests/python/fastmcp_tasks_server.py).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::{free_port, spawn_server};

const LIMIT: Duration = Duration::from_secs(60);

fn py() -> String {
    repo().join(".deps/venv/bin/python").display().to_string()
}

fn script(name: &str) -> String {
    repo().join("tests/python").join(name).display().to_string()
}

/// A `.mcp.json` entry running the task fixture with `args`.
fn task_server(args: &[&str]) -> Value {
    let mut all = vec![script("task_server.py")];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({ "command": py(), "args": all })
}

/// `harness9 mcp ARGS` in `dir`, to its end (at most [`LIMIT`]).
fn mcp(dir: &Path, args: &[&str]) -> Output {
    let mut c = harness9_in(dir);
    without_user_env(&mut c).arg("mcp").args(args);
    output_within(c, None, LIMIT)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The messages the fixture recorded (each `{"msg": ..., "mcpName": ...}`).
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn with_method<'a>(recs: &'a [Value], method: &str) -> Vec<&'a Value> {
    recs.iter()
        .filter(|r| r["msg"]["method"] == method)
        .collect()
}

fn declares_tasks(msg: &Value) -> bool {
    msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        .get("io.modelcontextprotocol/tasks")
        .is_some()
}

fn project(tag: &str, servers: Value) -> (PathBuf, PathBuf) {
    let dir = project_with(tag, servers);
    let record = dir.join("record.jsonl");
    (dir, record)
}

#[test]
fn a_task_outlives_the_tool_timeout_and_its_result_is_printed() {
    let dir = project_with("task-ok", json!({}));
    let record = dir.join("record.jsonl");
    let mut entry = task_server(&["--record", record.to_str().unwrap()]);
    entry["toolTimeoutSec"] = json!(1);
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"jobs": entry}}).to_string(),
    )
    .unwrap();
    let out = mcp(
        &dir,
        &[
            "call",
            "jobs",
            "slow",
            "--args",
            r#"{"ms": 2500, "text": "outlived"}"#,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("done: outlived"),
        "{stdout}\n{stderr}"
    );
    // The task's status reached the user as progress lines while it ran.
    assert!(
        stderr.contains("[mcp] progress") && stderr.contains("working: step"),
        "{stderr}"
    );
    let recs = records(&record);
    let calls = with_method(&recs, "tools/call");
    assert_eq!(calls.len(), 1, "{recs:?}");
    assert!(declares_tasks(&calls[0]["msg"]), "{:?}", calls[0]);
    let gets = with_method(&recs, "tasks/get");
    assert!(gets.len() >= 2, "polled {} times", gets.len());
    assert!(gets.iter().all(|g| declares_tasks(&g["msg"])));
    // A task is never cancelled with notifications/cancelled, and this one was not cancelled.
    assert!(with_method(&recs, "notifications/cancelled").is_empty());
    assert!(with_method(&recs, "tasks/cancel").is_empty());
}

#[test]
fn a_task_on_a_handshake_era_call_is_an_error() {
    let (dir, _) = project(
        "task-handshake",
        json!({"old": task_server(&["--mode", "handshake"])}),
    );
    let out = mcp(&dir, &["call", "old", "slow", "--args", r#"{"ms": 10}"#]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("answered with a task")
            && stderr.contains("did not declare io.modelcontextprotocol/tasks"),
        "{stderr}"
    );
}

#[test]
fn an_unrequested_2025_11_25_task_is_an_error_not_an_empty_result() {
    let (dir, _) = project(
        "task-old-form",
        json!({"old": task_server(&["--mode", "handshake", "--old-form"])}),
    );
    let out = mcp(&dir, &["call", "old", "slow", "--args", r#"{"ms": 10}"#]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("answered with a task"), "{stderr}");
}

#[test]
fn a_hostile_task_server_stays_bounded() {
    let dir = project_with("task-hostile", json!({}));
    let record = dir.join("record.jsonl");
    let mut entry = task_server(&["--mode", "hostile", "--record", record.to_str().unwrap()]);
    entry["taskTimeoutSec"] = json!(2);
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"endless": entry}}).to_string(),
    )
    .unwrap();
    let out = mcp(&dir, &["call", "endless", "slow"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ran longer than its bound of 2 s")
            && stderr.contains("taskTimeoutSec for \"endless\""),
        "{stderr}"
    );
    // 200 KB status messages are cut to a line.
    assert!(
        stderr.lines().all(|l| l.chars().count() < 600),
        "a long line: {}",
        stderr.lines().map(str::len).max().unwrap_or(0)
    );
    let recs = records(&record);
    // pollIntervalMs 0 is polled at most every 250 ms: about 8 in 2 s, never a busy loop.
    let gets = with_method(&recs, "tasks/get").len();
    assert!((2..=12).contains(&gets), "{gets} tasks/get in 2 s");
    let cancels = with_method(&recs, "tasks/cancel");
    assert_eq!(cancels.len(), 1, "{recs:?}");
    assert!(declares_tasks(&cancels[0]["msg"]));
}

#[test]
fn a_task_asking_for_input_is_answered_headless_once() {
    let dir = project_with("task-input", json!({}));
    let record = dir.join("record.jsonl");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"asker": task_server(&["--mode", "input", "--record", record.to_str().unwrap()])}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("answers.json"), r#"{"name": "Ada"}"#).unwrap();
    let out = mcp(
        &dir,
        &[
            "call",
            "asker",
            "ask",
            "--elicitation-answers",
            "answers.json",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("hello Ada"),
        "{stdout}\n{stderr}"
    );
    let recs = records(&record);
    let updates = with_method(&recs, "tasks/update");
    // The same request repeated by later polls is answered once.
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(
        updates[0]["msg"]["params"]["inputResponses"]["name"]["content"]["name"],
        "Ada"
    );
    let after = recs
        .iter()
        .skip_while(|r| r["msg"]["method"] != "tasks/update")
        .filter(|r| r["msg"]["method"] == "tasks/get")
        .count();
    assert!(after >= 2, "polled {after} times after the answer");
}

#[test]
fn no_wait_prints_the_id_and_tasks_list_get_cancel_follow_it() {
    let dir = project_with("task-nowait", json!({}));
    let (record, state) = (dir.join("record.jsonl"), dir.join("state"));
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"jobs": task_server(&[
            "--record", record.to_str().unwrap(), "--state", state.to_str().unwrap()])}})
        .to_string(),
    )
    .unwrap();
    let out = mcp(
        &dir,
        &[
            "call",
            "jobs",
            "slow",
            "--no-wait",
            "--args",
            r#"{"ms": 60000}"#,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let id = stdout.trim().to_owned();
    assert!(id.starts_with("task-"), "{stdout}");
    assert!(
        stderr.contains(&format!("started task {id} on server \"jobs\"")),
        "{stderr}"
    );
    let store = dir.join("sessions/tasks.json");
    let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&store).unwrap()) & 0o777;
    assert_eq!(mode, 0o600);

    let out = mcp(&dir, &["tasks", "list", "jobs"]);
    assert!(text(&out.stdout).contains(&id), "{}", text(&out.stdout));

    let out = mcp(&dir, &["tasks", "get", "jobs", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("working"),
        "{}",
        text(&out.stderr)
    );

    let out = mcp(&dir, &["tasks", "cancel", "jobs", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let recs = records(&record);
    let cancels = with_method(&recs, "tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["msg"]["params"]["taskId"], id.as_str());

    let out = mcp(&dir, &["tasks", "get", "jobs", &id, "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "cancelled", "{v}");
    assert!(!out.status.success());
    let out = mcp(&dir, &["tasks", "list", "jobs"]);
    assert!(
        text(&out.stdout).contains("no tasks tracked"),
        "{}",
        text(&out.stdout)
    );
    // A command without the id says how to give it.
    let out = mcp(&dir, &["tasks", "get", "jobs"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("give the task's id"));
}

#[test]
fn ctrl_c_cancels_a_waited_task_on_the_server() {
    let dir = project_with("task-ctrlc", json!({}));
    let record = dir.join("record.jsonl");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"jobs": task_server(&["--record", record.to_str().unwrap()])}})
            .to_string(),
    )
    .unwrap();
    let mut c = harness9_in(&dir);
    without_user_env(&mut c)
        .args(["mcp", "call", "jobs", "slow", "--args", r#"{"ms": 120000}"#])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    wait_for_progress(&mut child);
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_within(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let recs = records(&record);
    let cancels = with_method(&recs, "tasks/cancel");
    assert_eq!(cancels.len(), 1, "{recs:?}");
    assert!(with_method(&recs, "notifications/cancelled").is_empty());
}

#[test]
fn mcp_name_names_the_task_on_every_tasks_request_over_http() {
    let port = free_port();
    let dir = project_with("task-http", json!({}));
    let record = dir.join("record.jsonl");
    let mut c = Command::new(py());
    c.arg(script("task_server.py")).args([
        "--http",
        &port.to_string(),
        "--record",
        record.to_str().unwrap(),
    ]);
    let _server = spawn_server(c, port, "READY");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}})
            .to_string(),
    )
    .unwrap();
    let out = mcp(
        &dir,
        &[
            "call",
            "remote",
            "slow",
            "--args",
            r#"{"ms": 600, "text": "routed"}"#,
        ],
    );
    assert!(
        text(&out.stdout).contains("done: routed"),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let recs = records(&record);
    let gets = with_method(&recs, "tasks/get");
    assert!(!gets.is_empty());
    for g in gets {
        assert_eq!(g["mcpName"], g["msg"]["params"]["taskId"], "{g}");
    }
}

/// A handshake-era server that takes tool calls as tasks (2025-11-25; npm server-everything
/// declares `tasks.requests.tools.call`): its task-only tool (`taskSupport: "required"`) is
/// called task-augmented and its result read with `tasks/result`, past the tool timeout (its
/// four stages take 4 s; the tool timeout is 1 s).
#[test]
fn a_2025_11_25_task_tool_of_server_everything_prints_its_result() {
    let everything =
        repo().join("tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let (dir, _) = project(
        "task-everything",
        json!({"ev": {"command": "node", "args": [everything.display().to_string(), "stdio"],
                      "toolTimeoutSec": 1}}),
    );
    let out = mcp(
        &dir,
        &[
            "call",
            "ev",
            "simulate-research-query",
            "--args",
            r#"{"topic": "tides"}"#,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("Research Report: tides"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn a_fastmcp_tasks_server_answers_mcp_call_with_its_result() {
    let (dir, _) = project(
        "task-fastmcp",
        json!({"fast": {"command": py(), "args": [script("fastmcp_tasks_server.py"), "--seconds", "1.5"],
                        "toolTimeoutSec": 1}}),
    );
    let out = mcp(
        &dir,
        &["call", "fast", "slow_sum", "--args", r#"{"a": 2, "b": 3}"#],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("sum is 5"),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn a_required_task_tool_on_a_pinned_old_connection_explains_the_missing_capability() {
    let (dir, _) = project(
        "task-32021",
        json!({"fast": {"command": py(), "args": [script("fastmcp_tasks_server.py")],
                        "protocolVersion": "2025-11-25"}}),
    );
    let out = mcp(
        &dir,
        &["call", "fast", "slow_sum", "--args", r#"{"a": 1, "b": 1}"#],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("-32021")
            && stderr.contains("requires extension io.modelcontextprotocol/tasks")
            && stderr.contains("only on a 2026-07-28 connection")
            && stderr.contains("\"protocolVersion\" pin"),
        "{stderr}"
    );
}

/// A `.mcp.json` entry running the fixture server with `toolIdleTimeoutSec` 1 and a total
/// bound of 30 s.
fn idle_fixture() -> Value {
    json!({"command": fixture_bin().display().to_string(), "args": [],
           "toolIdleTimeoutSec": 1, "toolTimeoutSec": 30})
}

#[test]
fn a_silent_call_ends_at_its_idle_timeout_long_before_its_total() {
    let (dir, _) = project("idle-silent", json!({"fx": idle_fixture()}));
    let out = mcp(&dir, &["call", "fx", "sleep", "--args", r#"{"ms": 20000}"#]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("sent no progress for 1 s")
            && stderr.contains("toolIdleTimeoutSec for \"fx\""),
        "{stderr}"
    );
}

#[test]
fn progress_restarts_the_idle_timeout() {
    let (dir, _) = project("idle-progress", json!({"fx": idle_fixture()}));
    // 6 steps 400 ms apart: 2.4 s in all, never 1 s without progress.
    let out = mcp(
        &dir,
        &[
            "call",
            "fx",
            "progress",
            "--args",
            r#"{"steps": 6, "gap_ms": 400}"#,
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("done 6"),
        "{stdout}\n{stderr}"
    );
}
