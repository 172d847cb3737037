//! The agent engine end to end: `harness9 run` against the scripted model server
//! (tests/python/scripted_model.py) and real MCP servers (server-everything, the PyPI `mcp`
//! server, the misbehaving fixture), checked from the JSON events, the model's request record,
//! the wire trace and the fixture's own record.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::*;

mod edits;
mod hints;
mod names;
mod permissions;
mod permissions_import;
mod read_budget;
mod rules;
mod skills;
mod task_resume;
mod telemetry;

/// A child killed and reaped when dropped, also when the test panics.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running scripted model server and the file recording every request it got.
pub(super) struct Model {
    _child: Reaped,
    pub(super) url: String,
    record: PathBuf,
}

impl Model {
    pub(super) fn start(tag: &str, script: Value) -> Model {
        Self::start_with(tag, script, &[])
    }

    /// [`Model::start`] with more command-line options for the fixture.
    pub(super) fn start_with(tag: &str, script: Value, options: &[&str]) -> Model {
        let dir = temp_path(&format!("model-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let record = dir.join("record.jsonl");
        let mut child = Command::new("python3")
            .arg(repo().join("tests/python/scripted_model.py"))
            .arg("--script")
            .arg(&script_path)
            .arg("--record")
            .arg(&record)
            .args(["--port", "0"])
            .args(options)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .spawn()
            .expect("python3 must be on PATH");
        let stdout = child.stdout.take().unwrap();
        let child = Reaped(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the scripted model did not start within 10 s");
        let url = match line.trim().strip_prefix("listening on ") {
            Some(u) => u.to_owned(),
            None => panic!("the scripted model said {line:?}; see {}", dir.display()),
        };
        Model {
            _child: child,
            url,
            record,
        }
    }

    /// The environment that points an Anthropic provider at this model.
    pub(super) fn env(&self) -> [(&'static str, &str); 2] {
        [
            ("ANTHROPIC_API_KEY", "test-key"),
            ("ANTHROPIC_BASE_URL", self.url.as_str()),
        ]
    }

    /// Every request received so far, as recorded (`{"n", "path", "ts", "headers", "body"}`).
    pub(super) fn requests(&self) -> Vec<Value> {
        read_jsonl(&self.record)
    }
}

fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The text of a tool result's content: a string or a list of text parts.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.to_string(),
    }
}

/// The tool_result blocks of the last user message of a recorded Anthropic request.
fn tool_results(request: &Value) -> Vec<Value> {
    let messages = request["body"]["messages"].as_array().expect("messages");
    let last = messages.last().expect("a message");
    assert_eq!(last["role"], "user", "{last}");
    let blocks = last["content"].as_array().expect("content blocks");
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// A working dir with `.mcp.json` (unless `servers` is null), and [`home`] for `HOME`.
fn project(tag: &str, servers: Value) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(home(&dir)).unwrap();
    if !servers.is_null() {
        let config = json!({ "mcpServers": servers }).to_string();
        std::fs::write(dir.join(".mcp.json"), config).unwrap();
    }
    dir
}

/// The `HOME` of a test's harness9: beside the project, not in it (a project that holds the
/// home directory is one the shell's sandbox will not write).
fn home(dir: &Path) -> PathBuf {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    dir.with_file_name(format!("{name}-home"))
}

/// The fixture server with `args`, plus any extra .mcp.json keys.
fn fixture_json(args: &[&str], extra: Value) -> Value {
    let mut v = json!({"command": fixture_bin(), "args": args});
    if let Value::Object(m) = extra {
        v.as_object_mut().unwrap().extend(m);
    }
    v
}

/// `harness9` in `dir` with no model settings from the environment or the user's files; the
/// project's `.mcp.json` is trusted (`--approve-project`, approvals kept in the dir).
fn harness9(dir: &Path) -> Command {
    let mut c = harness9_in(dir);
    c.env("HOME", home(dir));
    without_user_env(&mut c);
    c
}

/// `harness9` talking Anthropic to `model`.
fn anthropic(dir: &Path, model: &Model) -> Command {
    let mut c = harness9(dir);
    c.env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &model.url);
    c
}

/// A running `harness9`: stdout lines arrive on a channel as they are written.
struct Run {
    pid: i32,
    exited: Receiver<ExitStatus>,
    lines: Receiver<String>,
    stdout: Vec<String>,
    stderr: Receiver<String>,
    reaped: bool,
}

/// How a run ended.
struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn start(mut cmd: Command, args: &[&str]) -> Run {
        let mut child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn harness9");
        let (out_tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = out_tx.send(line);
            }
        });
        let (err_tx, stderr) = mpsc::channel();
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            let _ = err_tx.send(s);
        });
        let pid = child.id() as i32;
        let (exit_tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            if let Ok(s) = child.wait() {
                let _ = exit_tx.send(s);
            }
        });
        Run {
            pid,
            exited,
            lines,
            stdout: Vec::new(),
            stderr,
            reaped: false,
        }
    }

    /// Waits for the JSON event `name` on stdout; panics after `limit`.
    fn wait_event(&mut self, name: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stdout.push(line.clone());
                    let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                    if v["event"] == name {
                        return v;
                    }
                }
                Err(_) => self.fail(&format!("no {name:?} event within {limit:?}")),
            }
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: a plain signal to our own child, which has not been reaped yet.
        unsafe { libc::kill(self.pid, sig) };
    }

    fn fail(&mut self, why: &str) -> ! {
        self.signal(libc::SIGKILL);
        let err = self
            .stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        panic!(
            "harness9: {why}\n--- stdout\n{}\n--- stderr\n{err}",
            self.stdout.join("\n")
        );
    }

    /// Waits for the exit within `limit` (else kills it and panics with its output).
    fn finish(mut self, limit: Duration) -> Out {
        let status = match self.exited.recv_timeout(limit) {
            Ok(s) => s,
            Err(_) => self.fail(&format!("did not exit within {limit:?}")),
        };
        self.reaped = true;
        loop {
            match self.lines.recv_timeout(Duration::from_secs(5)) {
                Ok(line) => self.stdout.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("stdout still open 5 s after exit"),
            }
        }
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_secs(5))
            .expect("stderr still open 5 s after exit");
        Out {
            code: status.code(),
            stdout: self.stdout.join("\n"),
            stderr,
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.reaped && self.exited.try_recv().is_err() {
            self.signal(libc::SIGKILL);
        }
    }
}

impl Out {
    fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{self}")))
            .collect()
    }

    fn all(&self, name: &str) -> Vec<Value> {
        let all: Vec<Value> = self
            .events()
            .into_iter()
            .filter(|e| e["event"] == name)
            .collect();
        assert!(!all.is_empty(), "no {name:?} event\n{self}");
        all
    }

    /// The event `name` whose `id` is `id` (any when `id` is empty).
    fn event(&self, name: &str, id: &str) -> Value {
        let found = self
            .all(name)
            .into_iter()
            .find(|e| id.is_empty() || e["id"] == id);
        found.unwrap_or_else(|| panic!("no {name:?} event with id {id:?}\n{self}"))
    }

    fn ok(&self) {
        assert_eq!(self.code, Some(0), "{self}");
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (code, out, err) = (self.code, &self.stdout, &self.stderr);
        write!(f, "exit {code:?}\n--- stdout\n{out}\n--- stderr\n{err}")
    }
}

/// Polls `cond` (a file or /proc state another process changes) until true; panics after `limit`.
fn wait_until(limit: Duration, what: &str, cond: impl FnMut() -> bool) {
    assert!(
        poll_until(limit, Duration::from_millis(10), cond),
        "{what} within {limit:?}"
    );
}

/// The JSON-RPC methods a fixture recorded with `--record`.
fn methods(record: &Path) -> Vec<String> {
    read_jsonl(record)
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

/// Whether a process whose command line contains `marker` is alive.
fn process_with(marker: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}

const LIMIT: Duration = Duration::from_secs(30);

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

#[test]
fn two_mcp_tools_at_once_run_in_parallel() {
    let model = Model::start(
        "parallel",
        json!({"steps": [
            {"tool_calls": [
                call("t_s1", "mcp__s1__sleep", json!({"ms": 700})),
                call("t_s2", "mcp__s2__sleep", json!({"ms": 700})),
                call("t_echo", "mcp__everything__echo", json!({"message": "side by side"})),
                call("t_sum", "mcp__everything__get_sum", json!({"a": 2, "b": 3})),
            ]},
            {"text": "all four came back", "expect": {"last_tool_result_contains": "The sum of 2 and 3 is 5"},
             "usage": {"input_tokens": 100, "cached_tokens": 80}}
        ]}),
    );
    let dir = project(
        "parallel",
        json!({"everything": stdio_json(everything("x")),
               "s1": fixture_json(&[], json!({})), "s2": fixture_json(&[], json!({}))}),
    );
    let trace = dir.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let args = [
        "run",
        "-p",
        "go",
        "--allowed-tools",
        "mcp__everything__echo,mcp__everything__get_sum,mcp__s1__sleep,mcp__s2__sleep",
        "--json",
        "--trace",
        &trace_arg,
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let start = out.event("start", "");
    for s in ["everything", "s1", "s2"] {
        assert_eq!(start["servers"][s], "connected", "{out}");
    }
    // The first event names the session and every tool offered.
    let id = start["session_id"].as_str().unwrap_or_default();
    assert!(
        dir.join("sessions").join(format!("{id}.jsonl")).exists(),
        "the session id names the saved conversation: {start}"
    );
    let tools: Vec<&str> = start["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"mcp__s1__sleep") && tools.contains(&"bash"),
        "{start}"
    );
    let done = out.event("done", "");
    assert_eq!(done["text"], "all four came back", "{out}");
    assert_eq!(done["session_id"], id, "{done}");
    // Step 2 read 80 of its 100 prompt tokens from the cache (Anthropic cache_read_input_tokens).
    assert_eq!(
        (&done["input_tokens"], &done["cached_input_tokens"]),
        (&json!(110), &json!(80)),
        "{done}"
    );
    // claude-sonnet-4-5 at the shipped prices: 30 fresh input tokens at $3, 80 cached at
    // $0.30 and 10 output at $15 per million.
    let expected = (30.0 * 3.0 + 80.0 * 0.3 + 10.0 * 15.0) / 1e6;
    let cost = done["cost_usd"].as_f64().expect("a cost");
    assert!(
        (cost - expected).abs() < 1e-9,
        "{cost} != {expected}: {done}"
    );

    // The model saw the built-ins and the MCP tools, and got all four results back, in order.
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    // The second step reused the first one's keep-alive connection (same client port).
    assert_eq!(
        reqs[0]["peer"], reqs[1]["peer"],
        "a new connection per model call"
    );
    let tools = offered_tools(&reqs[0]);
    let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
    for t in ["bash", "read_file", "write_file", "list_dir", "grep"] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    for t in [
        "mcp__everything__echo",
        "mcp__everything__get_sum",
        "mcp__s1__sleep",
    ] {
        assert!(tools.contains(&t), "{t} missing from {tools:?}");
    }
    let results = tool_results(&reqs[1]);
    let got: Vec<(&str, String)> = results
        .iter()
        .map(|r| {
            (
                r["tool_use_id"].as_str().unwrap(),
                content_text(&r["content"]),
            )
        })
        .collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0], ("t_s1", "slept 700".into()));
    assert_eq!(got[1], ("t_s2", "slept 700".into()));
    assert_eq!(got[2], ("t_echo", "Echo: side by side".into()));
    assert_eq!(got[3], ("t_sum", "The sum of 2 and 3 is 5.".into()));
    assert!(results.iter().all(|r| r["is_error"] != true), "{results:?}");

    // The two sleeps on two servers overlapped in time.
    // A call's span is its result's time less its measured duration: `t_ms` is stamped when
    // the printer takes an event, and the call starts before its `tool_call` line is printed.
    let span = |id: &str| {
        let r = out.event("tool_result", id);
        let b = r["t_ms"].as_f64().unwrap();
        (b - r["ms"].as_f64().unwrap(), b)
    };
    let ((a1, b1), (a2, b2)) = (span("t_s1"), span("t_s2"));
    assert!(b1 - a1 >= 700.0 && b2 - a2 >= 700.0, "{out}");
    assert!(
        a1.max(a2) < b1.min(b2),
        "sleeps did not overlap: {a1}..{b1} and {a2}..{b2}"
    );
    eprintln!(
        "parallel: s1 {a1:.1}..{b1:.1} ms, s2 {a2:.1}..{b2:.1} ms; both done {:.1} ms after the first began (one after the other: 1400+)",
        b1.max(b2) - a1.min(a2)
    );

    // Both calls to server-everything were on the wire before either answer came back.
    let wire = read_jsonl(&trace);
    let send = |tool: &str| {
        let s = wire.iter().find(|r| {
            r["server"] == "everything"
                && r["dir"] == "send"
                && r["message"]["method"] == "tools/call"
                && r["message"]["params"]["name"] == tool
        });
        s.unwrap_or_else(|| panic!("no tools/call {tool} in the trace"))
    };
    let recv = |sent: &Value| {
        let r = wire
            .iter()
            .find(|r| r["server"] == "everything" && r["dir"] == "recv" && r["id"] == sent["id"]);
        r.unwrap_or_else(|| panic!("no reply to {sent}")).clone()
    };
    let (echo_send, sum_send) = (send("echo"), send("get-sum"));
    let (echo_recv, sum_recv) = (recv(echo_send), recv(sum_send));
    let ts = |v: &Value| v["ts"].as_str().unwrap().to_owned();
    let last_send = ts(echo_send).max(ts(sum_send));
    let first_recv = ts(&echo_recv).min(ts(&sum_recv));
    assert!(
        last_send < first_recv,
        "calls were not in flight together: sends {} {}, replies {} {}",
        ts(echo_send),
        ts(sum_send),
        ts(&echo_recv),
        ts(&sum_recv)
    );
    let overhead = |id: &str, reply: &Value| {
        let engine_ms = out.event("tool_result", id)["ms"].as_f64().unwrap();
        engine_ms - reply["latency_us"].as_f64().expect("latency_us") / 1000.0
    };
    eprintln!(
        "engine overhead per call: echo {:.2} ms, get_sum {:.2} ms",
        overhead("t_echo", &echo_recv),
        overhead("t_sum", &sum_recv)
    );
}

#[test]
fn a_tool_over_its_timeout_gives_the_model_an_error_and_the_server_a_cancel() {
    let model = Model::start(
        "timeout",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__slow__sleep", json!({"ms": 5000}))]},
            {"text": "it timed out", "expect": {"last_tool_result_contains": "timed out after 1 s"}}
        ]}),
    );
    let fixture_record = temp_path("timeout-fixture.jsonl");
    let rec = fixture_record.display().to_string();
    let dir = project(
        "timeout",
        json!({"slow": fixture_json(&["--record", &rec], json!({"toolTimeoutSec": 1}))}),
    );
    let started = Instant::now();
    let out = Run::start(
        anthropic(&dir, &model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__slow__sleep",
            "--json",
        ],
    )
    .finish(LIMIT);
    out.ok();
    assert!(
        started.elapsed() < Duration::from_millis(4500),
        "waited for the sleep: {out}"
    );
    let result = out.event("tool_result", "t1");
    assert_eq!(result["is_error"], true, "{out}");
    let sent = &tool_results(&model.requests()[1])[0];
    assert_eq!(sent["is_error"], true, "{sent}");
    let text = content_text(&sent["content"]);
    assert!(
        text.contains(r#"tool "sleep" on server "slow" timed out after 1 s"#),
        "{text}"
    );
    assert!(text.contains("toolTimeoutSec"), "{text}");
    let seen = methods(&fixture_record);
    assert!(
        seen.iter().any(|m| m == "notifications/cancelled"),
        "{seen:?}"
    );
}

#[test]
fn an_is_error_result_reaches_the_model_as_an_error() {
    let model = Model::start(
        "fail",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__f__fail", json!({}))]},
            {"text": "it failed", "expect": {"last_tool_result_contains": "failed on purpose"}}
        ]}),
    );
    let dir = project("fail", json!({"f": fixture_json(&[], json!({}))}));
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--allowed-tools", "mcp__f__fail"],
    )
    .finish(LIMIT);
    out.ok();
    assert_eq!(out.stdout.trim_end(), "it failed", "{out}");
    let sent = &tool_results(&model.requests()[1])[0];
    assert_eq!(sent["tool_use_id"], "t1", "{sent}");
    assert_eq!(sent["is_error"], true, "{sent}");
    assert_eq!(
        content_text(&sent["content"]),
        "failed on purpose",
        "{sent}"
    );
}

#[test]
fn cancelling_mid_turn_leaves_no_call_running() {
    // Interrupted while the model streams its reply.
    let model = Model::start(
        "cancel-model",
        json!({"steps": [{"text": "thinking very slowly", "stall_ms": 30000}]}),
    );
    let dir = project("cancel-model", Value::Null);
    let mut run = Run::start(
        anthropic(&dir, &model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__slow__sleep",
            "--json",
        ],
    );
    run.wait_event("start", LIMIT);
    wait_until(Duration::from_secs(10), "the model got the request", || {
        !model.requests().is_empty()
    });
    let signalled = Instant::now();
    run.signal(libc::SIGINT);
    let out = run.finish(Duration::from_secs(10));
    assert_eq!(out.code, Some(130), "{out}");
    assert_eq!(out.event("error", "")["message"], "interrupted", "{out}");
    assert_eq!(model.requests().len(), 1);
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "took {:?}",
        signalled.elapsed()
    );

    // Interrupted while a tool runs: the call is cancelled and the server stopped.
    let model = Model::start(
        "cancel-tool",
        json!({"steps": [{"tool_calls": [call("t1", "mcp__slow__sleep", json!({"ms": 30000}))]}]}),
    );
    let fixture_record = temp_path("cancel-fixture.jsonl");
    let marker = fixture_record.display().to_string();
    let dir = project(
        "cancel-tool",
        json!({"slow": fixture_json(&["--record", &marker], json!({}))}),
    );
    let mut run = Run::start(
        anthropic(&dir, &model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__slow__sleep",
            "--json",
        ],
    );
    run.wait_event("tool_call", LIMIT);
    wait_until(
        Duration::from_secs(10),
        "the fixture got tools/call",
        || methods(&fixture_record).iter().any(|m| m == "tools/call"),
    );
    assert!(process_with(&marker), "the fixture is not running");
    let signalled = Instant::now();
    run.signal(libc::SIGINT);
    let out = run.finish(Duration::from_secs(10));
    assert_eq!(out.code, Some(130), "{out}");
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "took {:?}",
        signalled.elapsed()
    );
    wait_until(Duration::from_secs(5), "the fixture exited", || {
        !process_with(&marker)
    });
    assert_eq!(out.event("error", "")["message"], "interrupted", "{out}");
    let seen = methods(&fixture_record);
    assert!(
        seen.iter().any(|m| m == "notifications/cancelled"),
        "{seen:?}\n{out}"
    );
    let last = out.events().pop().unwrap();
    assert_eq!(
        last["event"], "error",
        "the stream must end with the error\n{out}"
    );
}

#[test]
fn model_401_and_429_give_clear_errors() {
    let secret = "sk-wrong-7f3a9c";
    // A wrong Anthropic key.
    let model = Model::start(
        "401",
        json!({"api_key": "right", "steps": [{"text": "never"}]}),
    );
    let dir = project("401", Value::Null);
    let mut cmd = anthropic(&dir, &model);
    cmd.env("ANTHROPIC_API_KEY", secret);
    let out = Run::start(cmd, &["run", "-p", "go"]).finish(LIMIT);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(out.stderr.contains("rejected the API key"), "{out}");
    assert!(out.stderr.contains("ANTHROPIC_API_KEY"), "{out}");
    assert!(
        !out.stderr.contains(secret) && !out.stdout.contains(secret),
        "{out}"
    );

    // The same in the OpenAI format.
    let mut cmd = harness9(&dir);
    cmd.env("HARNESS9_PROVIDER", "openai")
        .env("OPENAI_API_KEY", secret)
        .env("OPENAI_BASE_URL", format!("{}/v1", model.url));
    let out = Run::start(cmd, &["run", "-p", "go"]).finish(LIMIT);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(out.stderr.contains("rejected the API key"), "{out}");
    assert!(out.stderr.contains("OPENAI_API_KEY"), "{out}");
    assert!(!out.stderr.contains(secret), "{out}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "a 401 is not retried: {reqs:?}");
    assert_eq!(reqs[1]["path"], "/v1/chat/completions");

    // One 429 asking for 1 s: waited for, then answered.
    let model = Model::start(
        "429",
        json!({"steps": [{"status": 429, "retry_after": 1}, {"text": "after the wait"}]}),
    );
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let retry = out.event("model_retry", "");
    assert_eq!(retry["attempt"], 1, "{out}");
    let after = retry["after_ms"].as_f64().unwrap();
    assert!((900.0..=1100.0).contains(&after), "{retry}");
    assert!(
        retry["reason"].as_str().unwrap().contains("rate limit"),
        "{retry}"
    );
    assert_eq!(out.event("done", "")["text"], "after the wait", "{out}");
    let reqs = model.requests();
    let gap = reqs[1]["ts"].as_f64().unwrap() - reqs[0]["ts"].as_f64().unwrap();
    assert!(gap >= 0.9, "the retry came after {gap} s");

    // 429 every time: gives up after the retries.
    let busy = json!({"status": 429, "retry_after": 0});
    let model = Model::start(
        "429x4",
        json!({"steps": [busy, busy, busy, busy, {"text": "x"}]}),
    );
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(out.stderr.contains("rate limit"), "{out}");
    assert!(out.stderr.contains("gave up after 4 tries"), "{out}");
    assert_eq!(model.requests().len(), 4);
}

#[test]
fn openai_format_without_a_key_runs_a_tool_loop_like_ollama() {
    // As with a local Ollama: the OpenAI format, a local base URL, no key at all.
    let model = Model::start(
        "openai",
        json!({"steps": [
            {"text": "Let me add.", "tool_calls": [
                call("c1", "mcp__everything__get_sum", json!({"a": 20, "b": 22}))]},
            {"text": "It is 42.", "expect": {"last_tool_result_contains": "The sum of 20 and 22 is 42"},
             "usage": {"input_tokens": 50, "cached_tokens": 40}}
        ]}),
    );
    let dir = project("openai", json!({"everything": stdio_json(everything("x"))}));
    let mut cmd = harness9(&dir);
    cmd.env("HARNESS9_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", model.url))
        .env("HARNESS9_MODEL", "llama3.1");
    let out = Run::start(cmd, &["run", "-p", "add 20 and 22", "--json"]).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("start", "")["model"], "openai llama3.1", "{out}");
    let done = out.event("done", "");
    assert_eq!(done["text"], "It is 42.", "{out}");
    // OpenAI's prompt_tokens_details.cached_tokens.
    assert_eq!(done["cached_input_tokens"], 40, "{done}");
    let result = out.event("tool_result", "c1");
    assert_eq!(result["output"], "The sum of 20 and 22 is 42.", "{out}");

    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    for r in &reqs {
        assert_eq!(r["path"], "/v1/chat/completions");
        assert!(r["headers"].get("authorization").is_none(), "{r}");
        // Not api.openai.com: the cap goes in `max_tokens`, which local servers know.
        assert_eq!(r["body"]["max_tokens"], 8192, "{r}");
        assert!(r["body"].get("max_completion_tokens").is_none(), "{r}");
        assert_eq!(r["body"]["model"], "llama3.1");
    }
    // The call went out as the assistant's tool_calls and came back as a `tool` message.
    let messages = reqs[1]["body"]["messages"].as_array().expect("messages");
    let asked = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant message");
    assert_eq!(asked["tool_calls"][0]["id"], "c1", "{asked}");
    assert_eq!(
        asked["tool_calls"][0]["function"]["name"],
        "mcp__everything__get_sum"
    );
    let answer = messages.last().expect("a message");
    assert_eq!(answer["role"], "tool", "{answer}");
    assert_eq!(answer["tool_call_id"], "c1", "{answer}");
    assert_eq!(
        reqs[0]["peer"], reqs[1]["peer"],
        "a new connection per model call"
    );
}

#[test]
fn a_tool_image_reaches_both_formats_as_an_image() {
    // server-everything's tiny image, asked for by an Anthropic model and by an OpenAI one.
    let script = || {
        json!({"steps": [
            {"tool_calls": [call("i1", "mcp__everything__get_tiny_image", json!({}))]},
            {"text": "I see it"}
        ]})
    };
    let dir = project("image", json!({"everything": stdio_json(everything("x"))}));
    let model = Model::start("image-a", script());
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "look", "--json"]).finish(LIMIT);
    out.ok();
    let result = &tool_results(&model.requests()[1])[0];
    let image = result["content"]
        .as_array()
        .and_then(|c| c.iter().find(|p| p["type"] == "image"))
        .unwrap_or_else(|| panic!("no image block in {result}"));
    assert_eq!(image["source"]["media_type"], "image/png", "{image}");
    assert!(image["source"]["data"]
        .as_str()
        .is_some_and(|d| d.len() > 100));

    // OpenAI format on a local URL: images are off unless the settings turn them on.
    std::fs::write(dir.join("harness9.toml"), "[openai]\ntool_images = true\n").unwrap();
    let model = Model::start("image-o", script());
    let mut cmd = harness9(&dir);
    cmd.env("HARNESS9_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", model.url));
    let out = Run::start(cmd, &["run", "-p", "look", "--json"]).finish(LIMIT);
    out.ok();
    let messages = model.requests()[1]["body"]["messages"].clone();
    let messages = messages.as_array().expect("messages");
    let tool = messages.iter().find(|m| m["role"] == "tool").expect("tool");
    assert!(
        tool["content"]
            .as_str()
            .is_some_and(|t| t.contains("follows in the next user message")),
        "{tool}"
    );
    let last = messages.last().expect("a message");
    assert_eq!(last["role"], "user", "{last}");
    assert_eq!(
        last["content"][0]["text"], "Images from tool call i1:",
        "{last}"
    );
    let url = last["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap_or("");
    assert!(url.starts_with("data:image/png;base64,"), "{last}");
}

#[test]
fn the_system_prompt_says_where_it_runs_and_carries_agents_md() {
    let model = Model::start("env", json!({"steps": [{"text": "ok"}]}));
    let dir = project("env", Value::Null);
    std::fs::write(
        dir.join("AGENTS.md"),
        "# Rules\nRun `make check` before you finish.\n",
    )
    .unwrap();
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "hi"]).finish(LIMIT);
    out.ok();
    let system = model.requests()[0]["body"]["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let cwd = dir.canonicalize().unwrap();
    for want in [
        "You are harness9".to_owned(),
        format!("- working directory: {}", cwd.display()),
        format!("- platform: {}", std::env::consts::OS),
        "- today: 20".to_owned(),
        "The project's instructions (AGENTS.md):\n# Rules\nRun `make check` before you finish."
            .to_owned(),
    ] {
        assert!(
            system.contains(&want),
            "{want:?} not in the system prompt:\n{system}"
        );
    }
}

#[test]
fn a_turn_stops_at_max_steps_with_a_clear_error() {
    let again = |id: &str| json!({"tool_calls": [call(id, "list_dir", json!({"path": "."}))]});
    let model = Model::start(
        "steps",
        json!({"steps": [again("l1"), again("l2"), again("l3"), {"text": "never reached"}]}),
    );
    let dir = project("steps", Value::Null);
    std::fs::write(dir.join("harness9.toml"), "max_steps = 2\n").unwrap();
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "loop", "--json"]).finish(LIMIT);
    assert_eq!(out.code, Some(1), "{out}");
    let error = out.event("error", "");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("stopped after 2 model calls") && message.contains("max_steps"),
        "{error}"
    );
    assert_eq!(model.requests().len(), 2, "a third model call");
    assert_eq!(out.all("tool_result").len(), 2, "{out}");
}

#[test]
fn a_model_server_closing_an_idle_connection_costs_no_retry() {
    // The server drops a keep-alive connection after 0.3 s idle; the tool takes 1 s, so the
    // pooled connection is dead when the second step goes out.
    let model = Model::start_with(
        "idle",
        json!({"steps": [
            {"tool_calls": [call("t1", "bash", json!({"command": "sleep 1; echo slept"}))]},
            {"text": "after the sleep", "expect": {"last_tool_result_contains": "slept"}}
        ]}),
        &["--idle-close", "0.3"],
    );
    let dir = project("idle", Value::Null);
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--allowed-tools", "bash", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "after the sleep", "{out}");
    let retried = out.events().iter().any(|e| e["event"] == "model_retry");
    assert!(!retried, "a retry: {out}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_ne!(
        reqs[0]["peer"], reqs[1]["peer"],
        "the closed connection was reused?"
    );
}

#[test]
fn a_2_mb_tool_result_is_cut_and_spilled() {
    let model = Model::start(
        "big",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__f__big", json!({"bytes": 2_000_000}))]},
            {"text": "seen", "expect": {"last_tool_result_contains": "output cut"}}
        ]}),
    );
    let dir = project("big", json!({"f": fixture_json(&[], json!({}))}));
    let spill = dir.join("spill");
    let spill_arg = spill.display().to_string();
    let args = [
        "run",
        "-p",
        "go",
        "--allowed-tools",
        "mcp__f__big",
        "--json",
        "--spill-dir",
        &spill_arg,
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let result = out.event("tool_result", "t1");
    assert_eq!(result["output_bytes"], 2_000_000, "{result}");
    assert!(
        result["output"].as_str().unwrap().len() <= 2000 * 4,
        "{result}"
    );
    let spilled = PathBuf::from(result["spilled_to"].as_str().expect("spilled_to"));
    // In the session's private directory under --spill-dir, removed when the session ended
    // (tests/suite/private_files.rs looks at it while the session runs).
    assert!(spilled.starts_with(&spill), "{}", spilled.display());
    assert!(
        !spilled.exists(),
        "{} outlived the session",
        spilled.display()
    );
    let sent = &tool_results(&model.requests()[1])[0];
    let text = content_text(&sent["content"]);
    assert!(
        text.len() < 110_000,
        "{} bytes went to the model",
        text.len()
    );
    assert!(text.contains("output cut") && text.contains(&spilled.display().to_string()));
}

#[test]
fn a_multi_step_task_over_two_mcp_servers_and_a_builtin() {
    // write_file and bash run at once, so the command waits (bounded) for the file to appear.
    let cat =
        "for i in $(seq 200); do [ -s answer.txt ] && break; sleep 0.01; done; cat answer.txt";
    let model = Model::start(
        "multi",
        json!({"steps": [
            {"text": "Adding first.", "tool_calls": [call("t1", "mcp__everything__get_sum", json!({"a": 6, "b": 7}))]},
            {"tool_calls": [call("t2", "mcp__py__multiply", json!({"a": 13, "b": 2}))],
             "expect": {"last_tool_result_contains": "13"}},
            {"tool_calls": [
                call("t3", "write_file", json!({"path": "answer.txt", "content": "26"})),
                call("t4", "bash", json!({"command": cat}))],
             "expect": {"last_tool_result_contains": "26"}},
            {"text": "The answer is 26.", "expect": {"last_tool_result_contains": "26"}}
        ]}),
    );
    let dir = project(
        "multi",
        json!({"everything": stdio_json(everything("x")), "py": stdio_json(python("py"))}),
    );
    let args = [
        "run",
        "-p",
        "What is (6 + 7) * 2? Save it.",
        "--allowed-tools",
        "bash,mcp__everything__get_sum,mcp__py__multiply,write_file",
        "--json",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    eprintln!("--- harness9 run --json\n{}", out.stdout);
    out.ok();
    let done = out.event("done", "");
    assert_eq!(done["text"], "The answer is 26.");
    assert_eq!(done["steps"], 4);
    assert_eq!(
        std::fs::read_to_string(dir.join("answer.txt")).unwrap(),
        "26"
    );
    let names: Vec<Value> = out
        .all("tool_result")
        .iter()
        .map(|e| e["name"].clone())
        .collect();
    let want = [
        "mcp__everything__get_sum",
        "mcp__py__multiply",
        "write_file",
        "bash",
    ];
    for w in want {
        assert!(names.contains(&json!(w)), "{w} not in {names:?}");
    }
    assert!(
        out.all("tool_result")
            .iter()
            .all(|e| e["is_error"] == false),
        "{out}"
    );
    assert_eq!(model.requests().len(), 4);
}

#[test]
fn tool_progress_reaches_the_event_stream() {
    let model = Model::start(
        "progress",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__p__progress", json!({"steps": 3}))]},
            // No gap: the last notices and the result reach harness9 together.
            {"tool_calls": [call("t2", "mcp__p__progress", json!({"steps": 40, "gap_ms": 0}))]},
            {"text": "done", "expect": {"last_tool_result_contains": "done 40"}}
        ]}),
    );
    let dir = project("progress", json!({"p": fixture_json(&[], json!({}))}));
    let out = Run::start(
        anthropic(&dir, &model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__p__progress",
            "--json",
        ],
    )
    .finish(LIMIT);
    out.ok();
    let progress = out.all("tool_progress");
    let seen: Vec<(f64, String)> = progress
        .iter()
        .filter(|p| p["id"] == "t1")
        .map(|p| {
            assert_eq!(p["total"], 3.0, "{p}");
            (
                p["progress"].as_f64().unwrap(),
                p["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (1.0, "step 1".to_owned()),
            (2.0, "step 2".to_owned()),
            (3.0, "step 3".to_owned())
        ],
        "{out}"
    );
    // Each call's progress lines all come before its result line, in order, though they
    // travel through their own relay.
    let events = out.events();
    for (id, n) in [("t1", 3), ("t2", 40)] {
        let mine: Vec<&Value> = events.iter().filter(|e| e["id"] == id).collect();
        let kinds: Vec<&str> = mine.iter().filter_map(|e| e["event"].as_str()).collect();
        let mut want = vec!["tool_call"];
        want.extend(std::iter::repeat_n("tool_progress", n));
        want.push("tool_result");
        assert_eq!(kinds, want, "{id}: {out}");
        let steps: Vec<f64> = mine.iter().filter_map(|e| e["progress"].as_f64()).collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{id}: {steps:?}");
        assert_eq!(mine.last().map(|e| &e["is_error"]), Some(&json!(false)));
    }
}

#[test]
fn a_tool_call_cut_off_at_max_tokens_gets_an_error_result_and_the_turn_goes_on() {
    // Two calls in one reply that hit max_tokens inside the second: the valid one runs, the
    // cut-off one is answered with an error at once, and the model gets both results.
    let cut = r#"{"path": "big.txt", "content": "line one\nline tw"#;
    let model = Model::start(
        "cut",
        json!({"steps": [
            {"tool_calls": [
                call("t_ok", "bash", json!({"command": "echo ran fine"})),
                {"id": "t_cut", "name": "write_file", "raw_input": cut}],
             "stop_reason": "max_tokens"},
            {"text": "I will write it in parts.", "expect": {"last_tool_result_contains": "cut off at max_tokens"}}
        ]}),
    );
    let dir = project("cut", Value::Null);
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--allowed-tools", "bash", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    assert_eq!(
        out.event("done", "")["text"],
        "I will write it in parts.",
        "{out}"
    );
    // The cut-off call shows like any call: its raw text as the arguments, then an error.
    assert_eq!(out.event("tool_call", "t_cut")["arguments"], cut, "{out}");
    let failed = out.event("tool_result", "t_cut");
    assert_eq!(failed["is_error"], true, "{out}");
    assert_eq!(out.event("tool_result", "t_ok")["is_error"], false, "{out}");
    assert!(!dir.join("big.txt").exists(), "the cut-off call ran");

    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    let results = tool_results(&reqs[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["tool_use_id"], "t_ok");
    assert_eq!(results[0]["is_error"], false, "{results:?}");
    let ran = content_text(&results[0]["content"]);
    assert!(ran.starts_with("ran fine\n"), "{ran}");
    assert_eq!(results[1]["tool_use_id"], "t_cut");
    assert_eq!(results[1]["is_error"], true, "{results:?}");
    let text = content_text(&results[1]["content"]);
    assert!(
        text.starts_with(r#"the arguments of tool "write_file" are not valid JSON ("#),
        "{text}"
    );
    assert!(text.contains(cut), "{text}");
    assert!(
        text.contains("the reply was cut off at max_tokens, so they are incomplete"),
        "{text}"
    );

    // Cut off before a single argument piece: the arguments parse (`{}`), yet the call does
    // not run either.
    let model = Model::start(
        "cut-empty",
        json!({"steps": [
            {"tool_calls": [{"id": "t_empty", "name": "write_file", "raw_input": ""}],
             "stop_reason": "max_tokens"},
            {"text": "again", "expect": {"last_tool_result_contains": "was cut off at max_tokens"}}
        ]}),
    );
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--allowed-tools", "bash", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    assert_eq!(
        out.event("tool_result", "t_empty")["is_error"],
        true,
        "{out}"
    );
    assert_eq!(failed["output"], text.as_str(), "{out}");
    // The replayed assistant message is valid: the cut-off call's input is an empty object.
    let messages = reqs[1]["body"]["messages"].as_array().expect("messages");
    let asked = &messages[messages.len() - 2];
    assert_eq!(
        asked["content"],
        json!([
            {"type": "tool_use", "id": "t_ok", "name": "bash", "input": {"command": "echo ran fine"}},
            {"type": "tool_use", "id": "t_cut", "name": "write_file", "input": {}},
        ]),
        "{asked}"
    );
}

#[test]
fn broken_tool_json_from_an_openai_format_model_is_sent_back_and_retried() {
    // As from a small local model: broken JSON, then the same call again, fixed.
    let broken = r#"{"command": "echo again" "#;
    let model = Model::start(
        "broken-openai",
        json!({"steps": [
            {"tool_calls": [{"id": "c1", "name": "bash", "raw_input": broken}]},
            {"tool_calls": [call("c2", "bash", json!({"command": "echo again"}))],
             "expect": {"last_tool_result_contains": "not valid JSON"}},
            {"text": "It said again.", "expect": {"last_tool_result_contains": "again"}}
        ]}),
    );
    let dir = project("broken-openai", Value::Null);
    let mut cmd = harness9(&dir);
    cmd.env("HARNESS9_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", model.url));
    let out = Run::start(
        cmd,
        &["run", "-p", "go", "--allowed-tools", "bash", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "It said again.", "{out}");
    assert_eq!(out.event("tool_result", "c1")["is_error"], true, "{out}");
    assert_eq!(out.event("tool_result", "c2")["is_error"], false, "{out}");

    let reqs = model.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    let messages = reqs[1]["body"]["messages"].as_array().expect("messages");
    let asked = &messages[messages.len() - 2];
    assert_eq!(
        asked["tool_calls"],
        json!([{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]),
        "{asked}"
    );
    let answer = messages.last().expect("a message");
    assert_eq!(answer["tool_call_id"], "c1", "{answer}");
    let text = answer["content"].as_str().expect("text");
    assert!(
        text.starts_with(r#"Error: the arguments of tool "bash" are not valid JSON ("#),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "): {broken}; send the call again with a complete JSON object"
        )),
        "{text}"
    );
}

#[test]
fn a_tool_whose_schema_is_not_a_json_object_is_left_out_of_the_models_table() {
    let model = Model::start("schemas", json!({"steps": [{"text": "fine"}]}));
    let dir = project(
        "schemas",
        json!({"f": fixture_json(&["--bad-schemas"], json!({}))}),
    );
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    let reqs = model.requests();
    let tools = offered_tools(&reqs[0]);
    let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
    assert!(tools.contains(&"mcp__f__echo"), "{tools:?}");
    // A number schema would make the provider reject every request; a 200-deep one cannot be
    // parsed: both are left out (with a warning in the log), the rest of the server stays.
    assert!(!tools.contains(&"mcp__f__number_schema"), "{tools:?}");
    assert!(!tools.contains(&"mcp__f__deep_schema"), "{tools:?}");
    for t in reqs[0]["body"]["tools"].as_array().expect("tools") {
        assert!(t["input_schema"].is_object(), "{t}");
    }
}

#[test]
fn run_starts_within_the_startup_wait_when_a_server_hangs() {
    let model = Model::start("hung", json!({"steps": [{"text": "done without it"}]}));
    // `hung` never answers initialize (and has the default 30 s startup timeout).
    let dir = project(
        "hung",
        json!({"ok": fixture_json(&[], json!({})), "hung": fixture_json(&["--no-init"], json!({}))}),
    );
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--json", "--startup-wait", "1"],
    )
    .finish(LIMIT);
    out.ok();
    let start = out.event("start", "");
    assert_eq!(start["servers"]["ok"], "connected", "{out}");
    // Still starting: the first model request went out at the bound, not after the 30 s
    // startup timeout (by then it would be failed).
    assert_eq!(start["servers"]["hung"], "starting", "{out}");
    let tools = offered_tools(&model.requests()[0]);
    assert!(tools.iter().any(|t| t == "mcp__ok__echo"), "{tools:?}");
}

/// The documented default wait (5 s, no `--startup-wait`, no `$HARNESS9_STARTUP_WAIT`): the
/// first model request waits for it (not less: the start event is at 5 s or later) and goes
/// out with `hung` still starting (not after its 30 s startup timeout).
#[test]
fn run_waits_the_default_5_s_for_a_hung_server() {
    let model = Model::start("hung5", json!({"steps": [{"text": "done without it"}]}));
    let dir = project(
        "hung5",
        json!({"ok": fixture_json(&[], json!({})), "hung": fixture_json(&["--no-init"], json!({}))}),
    );
    let mut cmd = anthropic(&dir, &model);
    cmd.env_remove("HARNESS9_STARTUP_WAIT");
    let out = Run::start(cmd, &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let start = out.event("start", "");
    assert_eq!(start["servers"]["ok"], "connected", "{out}");
    assert_eq!(start["servers"]["hung"], "starting", "{out}");
    // `t_ms` counts from the session's own clock, which starts a moment after the wait did.
    let t_ms = start["t_ms"]
        .as_f64()
        .unwrap_or_else(|| panic!("no t_ms: {out}"));
    assert!(
        t_ms >= 4500.0,
        "the start event came after {t_ms} ms, before the 5 s wait: {out}"
    );
    let tools = offered_tools(&model.requests()[0]);
    assert!(tools.iter().any(|t| t == "mcp__ok__echo"), "{tools:?}");
}

#[test]
fn piped_stdin_follows_the_task_and_an_empty_task_is_a_usage_error() {
    let model = Model::start("piped", json!({"steps": [{"text": "summarized"}]}));
    let dir = project("piped", Value::Null);
    let out = output_within(
        {
            let mut c = anthropic(&dir, &model);
            c.args(["run", "-p", "summarize this"]);
            c
        },
        Some("line one\nline two\n"),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = &model.requests()[0];
    let sent = first["body"]["messages"][0].to_string();
    assert!(
        sent.contains("summarize this") && sent.contains("line one\\nline two"),
        "{sent}"
    );
    let out = output_within(
        {
            let mut c = anthropic(&dir, &model);
            c.args(["run", "-p", ""]);
            c
        },
        None,
        LIMIT,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `harness9 run -p "task"` with a stdin pipe we hold: `feed` writes to it (and may drop it to
/// close it); the run's output once it ends, killed after [`LIMIT`].
fn run_with_stdin_held(
    cmd: Command,
    feed: impl FnOnce(std::process::ChildStdin) -> Option<std::process::ChildStdin>,
) -> std::process::Output {
    let mut cmd = cmd;
    let mut child = cmd
        .args(["run", "-p", "summarize this"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn harness9");
    let pid = child.id() as i32;
    // Held open (unless `feed` closes it) until the run has ended.
    let _held = feed(child.stdin.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(LIMIT) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: our own child, hung.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("run -p with a silent stdin pipe did not end within {LIMIT:?}")
        }
    }
}

#[test]
fn a_silent_stdin_that_never_closes_is_ignored_and_late_text_is_still_read() {
    let model = Model::start(
        "silent-stdin",
        json!({"steps": [{"text": "one"}, {"text": "two"}]}),
    );
    let dir = project("silent-stdin", Value::Null);
    // Nothing is ever written, and the pipe stays open for the whole run.
    let out = run_with_stdin_held(anthropic(&dir, &model), Some);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[run] stdin gave nothing within 1 s; ignoring it"),
        "{stderr}"
    );
    let sent = model.requests()[0]["body"]["messages"][0].to_string();
    assert!(sent.contains("summarize this"), "{sent}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "one");

    // Text that begins at once is read to its end, even when the rest comes after the
    // first-byte bound: the producer pauses past it before its second line.
    let out = run_with_stdin_held(anthropic(&dir, &model), |mut pipe| {
        use std::io::Write as _;
        pipe.write_all(b"line one\n").unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        pipe.write_all(b"line two\n").unwrap();
        None
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("stdin gave nothing"), "{stderr}");
    let sent = model.requests()[1]["body"]["messages"][0].to_string();
    assert!(
        sent.contains("summarize this") && sent.contains("line one\\nline two"),
        "{sent}"
    );
}

#[test]
fn stream_adds_the_text_as_it_comes() {
    let model = Model::start("stream", json!({"steps": [{"text": "streamed in pieces"}]}));
    let dir = project("stream", Value::Null);
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--json", "--stream"],
    )
    .finish(LIMIT);
    out.ok();
    let text: String = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "text")
        .filter_map(|v| v["delta"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, "streamed in pieces", "{out}");
    assert_eq!(out.event("done", "")["text"], "streamed in pieces", "{out}");
}

#[test]
fn the_model_sees_server_instructions_reads_resources_and_hears_of_schema_mismatches() {
    let model = Model::start(
        "mcp-features",
        json!({"steps": [
            {"tool_calls": [
                call("r1", "read_mcp_resource", json!({"server": "everything", "uri": "demo://resource/dynamic/text/3"})),
                call("r2", "read_mcp_resource", json!({"server": "everything", "uri": "demo://resource/dynamic/blob/3"})),
                call("l1", "list_mcp_resources", json!({})),
                call("s1", "mcp__fx__shaped", json!({"n": "three"})),
            ]},
            {"text": "done"}
        ]}),
    );
    let dir = project(
        "mcp-features",
        json!({"everything": stdio_json(everything("x")), "fx": fixture_json(&[], json!({}))}),
    );
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--allowed-tools", "mcp__fx__shaped"],
    )
    .finish(LIMIT);
    out.ok();
    let reqs = model.requests();
    let system = reqs[0]["body"]["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.contains("## server everything\n# Everything Server")
            && !system.contains("## server fx"),
        "{system}"
    );
    // The same prompt on every step (a stable cache prefix).
    assert_eq!(reqs[1]["body"]["system"], reqs[0]["body"]["system"]);
    let results = tool_results(&reqs[1]);
    let text = |id: &str| {
        results
            .iter()
            .find(|r| r["tool_use_id"] == id)
            .map(|r| content_text(&r["content"]))
            .unwrap_or_default()
    };
    assert!(text("r1").starts_with("Resource 3:"), "{}", text("r1"));
    assert!(
        text("r2").starts_with("[binary contents: text/plain,"),
        "{}",
        text("r2")
    );
    // Saved whole, and the model is told where.
    let r2 = text("r2");
    let path = r2
        .split("Saved whole to ")
        .nth(1)
        .and_then(|p| p.strip_suffix('.'))
        .unwrap_or_else(|| panic!("no path in {r2}"));
    // In the session's private directory, gone with the session (its contents while the
    // session runs: tests/suite/private_files.rs).
    assert!(
        path.contains("/harness9-") && path.contains("resource-"),
        "{path}"
    );
    assert!(!Path::new(path).exists(), "{path} outlived the session");
    assert!(
        text("l1").contains("server everything:")
            && text("l1").contains("demo://resource/static/document/features.md")
            && text("l1").contains("template demo://resource/dynamic/text/{resourceId}"),
        "{}",
        text("l1")
    );
    assert!(
        text("s1").contains("structuredContent does not match the tool's outputSchema"),
        "{}",
        text("s1")
    );
}

/// `run -p` saves its conversation under the id its events report; `run -p --resume ID`
/// continues it (the model gets the earlier turn), `--continue` the newest of the directory,
/// and an unknown id is a usage error (exit 2) that says how to list them.
#[test]
fn run_resumes_a_saved_conversation_headless() {
    let model = Model::start(
        "resume",
        json!({"steps": [
            {"text": "Noted: 7."},
            {"text": "You said 7."},
            {"text": "Still 7."}
        ]}),
    );
    let dir = project("resume", json!({}));
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "note 7", "--json"]).finish(LIMIT);
    out.ok();
    let id = out.event("start", "")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(out.event("done", "")["session_id"], id.as_str());
    let file = dir.join("sessions").join(format!("{id}.jsonl"));
    assert!(file.exists(), "{}", file.display());

    let args = ["run", "-p", "what did I say?", "--resume", &id, "--json"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("start", "")["session_id"], id.as_str());
    let msgs = model.requests()[1]["body"]["messages"].clone();
    assert_eq!(msgs.as_array().unwrap().len(), 3, "{msgs}");
    assert!(msgs[0].to_string().contains("note 7"), "{msgs}");
    assert!(msgs[1].to_string().contains("Noted: 7."), "{msgs}");

    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "and?", "--continue"],
    )
    .finish(LIMIT);
    out.ok();
    let msgs = model.requests()[2]["body"]["messages"].clone();
    assert_eq!(msgs.as_array().unwrap().len(), 5, "{msgs}");

    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "x", "--resume", "nope-1"],
    )
    .finish(LIMIT);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(out.stderr.contains("harness9 --resume"), "{out}");
    assert_eq!(model.requests().len(), 3, "no model call for a bad id");
}

/// The provider refuses a request as too long: the earlier turns become a summary (one more
/// model call), the step runs again and the turn ends well; the session file keeps the
/// compacted conversation, so the next run continues from the summary.
#[test]
fn a_context_overflow_is_survived_by_compaction() {
    let big = "lorem ipsum ".repeat(400);
    let model = Model::start(
        "overflow",
        json!({"steps": [
            {"text": format!("Noted A. {big}")},
            {"text": format!("Noted B. {big}")},
            {"status": 400, "error_message": "prompt is too long: 250000 tokens > 200000 maximum"},
            {"text": "SUMMARY: the user noted A and B."},
            {"text": "All good."},
            {"text": "Still good."}
        ]}),
    );
    let dir = project("overflow", json!({}));
    // The first run starts the conversation (`--continue` with none is refused).
    for (i, p) in ["note A", "note B"].into_iter().enumerate() {
        let args = ["run", "-p", p, "--continue"];
        Run::start(anthropic(&dir, &model), &args[..if i == 0 { 3 } else { 4 }])
            .finish(LIMIT)
            .ok();
    }
    let args = ["run", "-p", "what now?", "--continue", "--json"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let c = out.event("compacted", "");
    assert_eq!(c["replaced"], 4, "{c}");
    assert!(
        c["reason"].as_str().unwrap().contains("prompt is too long"),
        "{c}"
    );
    assert!(
        c["tokens_after"].as_u64().unwrap() < c["tokens_before"].as_u64().unwrap() / 4,
        "{c}"
    );
    assert_eq!(out.event("done", "")["text"], "All good.", "{out}");
    let reqs = model.requests();
    let summary_req = reqs[3]["body"]["messages"].to_string();
    assert!(summary_req.contains("Noted A.") && summary_req.contains("note B"));
    let retried = reqs[4]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(retried.len(), 3, "{retried:?}");
    assert!(retried[0]
        .to_string()
        .contains("SUMMARY: the user noted A and B."));
    assert!(retried[2].to_string().contains("what now?"));
    // The conversation shrank (the tool definitions around it are the same size).
    let (before, after) = (
        reqs[2]["body"]["messages"].to_string().len(),
        reqs[4]["body"]["messages"].to_string().len(),
    );
    assert!(after * 3 < before, "message bytes {before} -> {after}");

    let args = ["run", "-p", "and then?", "--continue"];
    Run::start(anthropic(&dir, &model), &args)
        .finish(LIMIT)
        .ok();
    let next = model.requests()[5]["body"]["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        next.len(),
        5,
        "the compacted conversation was saved: {next:?}"
    );
    assert!(next[0].to_string().contains("SUMMARY"));
}

/// A resumed session goes on with the model it last switched to (its `model` line, which
/// `/model` writes), unless the command line names one.
#[test]
fn a_resumed_run_goes_on_with_the_sessions_model_unless_a_flag_names_one() {
    let model = Model::start(
        "resume-model",
        json!({"steps": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}),
    );
    let dir = project("resume-model", json!({}));
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "a", "--json"]).finish(LIMIT);
    out.ok();
    let id = out.event("start", "")["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = dir.join("sessions").join(format!("{id}.jsonl"));
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"kind\":\"model\",\"model\":\"anthropic/claude-opus-4-1\"}\n");
    std::fs::write(&file, text).unwrap();
    let args = ["run", "-p", "b", "--continue"];
    Run::start(anthropic(&dir, &model), &args)
        .finish(LIMIT)
        .ok();
    let args = [
        "run",
        "-p",
        "c",
        "--continue",
        "--model",
        "claude-haiku-4-5",
    ];
    Run::start(anthropic(&dir, &model), &args)
        .finish(LIMIT)
        .ok();
    let models: Vec<Value> = model
        .requests()
        .iter()
        .map(|r| r["body"]["model"].clone())
        .collect();
    assert_eq!(
        models,
        [
            json!("claude-sonnet-4-5"),
            json!("claude-opus-4-1"),
            json!("claude-haiku-4-5")
        ]
    );
}

/// An overflow in the middle of a first turn: nothing earlier to summarize, so the turn's own
/// steps become the summary (which keeps the path of a tool result that was cut and saved),
/// the request follows it again with a note, and the step runs once more. The summary request
/// counts in the turn's tokens.
#[test]
fn an_overflow_inside_a_first_turn_compacts_its_own_steps() {
    let model = Model::start(
        "overflow-first",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__fx__big", json!({"bytes": 20_000}))]},
            {"status": 400, "error_message": "prompt is too long: 250000 tokens > 200000 maximum"},
            {"text": "SUMMARY: big was read; saved whole.", "usage": {"input_tokens": 1000}},
            {"text": "Done after compaction."}
        ]}),
    );
    let dir = project(
        "overflow-first",
        json!({"fx": fixture_json(&[], json!({}))}),
    );
    std::fs::write(
        dir.join("harness9.toml"),
        "tool_output_budget_tokens = 500\n",
    )
    .unwrap();
    let out = Run::start(
        anthropic(&dir, &model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__fx__big",
            "--json",
        ],
    )
    .finish(LIMIT);
    out.ok();
    let c = out.event("compacted", "");
    assert!(
        c["reason"].as_str().unwrap().contains("prompt is too long"),
        "{c}"
    );
    let done = out.event("done", "");
    assert_eq!(done["text"], "Done after compaction.", "{out}");
    assert_eq!(
        done["input_tokens"],
        10 + 1000 + 10,
        "the summary counts: {done}"
    );

    let reqs = model.requests();
    assert_eq!(reqs.len(), 4, "{reqs:?}");
    // The summary request has the saved file's path although the result was cut for it.
    let summary_req = reqs[2]["body"]["messages"][0]["content"].to_string();
    let at = summary_req
        .find("The whole result is in ")
        .unwrap_or_else(|| panic!("no spill path in the summary request: {summary_req}"));
    let path: String = summary_req[at + "The whole result is in ".len()..]
        .chars()
        .take_while(|c| *c != ':')
        .collect();
    // The session's private file, gone with the session.
    assert!(
        path.contains("/harness9-") && path.contains("result-"),
        "{path}"
    );
    assert!(!Path::new(&path).exists(), "{path} outlived the session");
    let retried = reqs[3]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(retried.len(), 3, "{retried:?}");
    assert!(retried[0].to_string().contains("SUMMARY: big was read"));
    let again = retried[2].to_string();
    assert!(
        again.contains("go") && again.contains("do not start over"),
        "{again}"
    );
}

/// A long turn whose last request used `compact_at` of the window: before its next step, its
/// steps so far become a summary.
#[test]
fn a_long_turn_near_the_end_of_the_window_compacts_between_steps() {
    let model = Model::start(
        "compact-between",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__fx__echo", json!({"text": "first step"}))],
             "usage": {"input_tokens": 800}},
            {"text": "SUMMARY: echoed the first step."},
            {"text": "finished", "usage": {"input_tokens": 100}}
        ]}),
    );
    let dir = project(
        "compact-between",
        json!({"fx": fixture_json(&[], json!({}))}),
    );
    std::fs::write(
        dir.join("harness9.toml"),
        "compact_at = 0.5\n[context_windows]\n\"claude-sonnet-4-5\" = 1000\n",
    )
    .unwrap();
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let c = out.event("compacted", "");
    assert!(
        c["reason"].as_str().unwrap().contains("used 800 of 1000"),
        "{c}"
    );
    assert_eq!(out.event("done", "")["text"], "finished", "{out}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    assert!(reqs[1]["body"]["messages"]
        .to_string()
        .contains("first step"));
    let next = reqs[2]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(next.len(), 3, "{next:?}");
    assert!(next[0]
        .to_string()
        .contains("SUMMARY: echoed the first step."));
}

#[test]
fn run_json_failures_end_with_an_error_event_and_the_exit_code() {
    // The model rejects the key: a failure, exit 1, the error event last with its code.
    let model = Model::start(
        "jsonfail",
        json!({"api_key": "right", "steps": [{"text": "never"}]}),
    );
    let dir = project("jsonfail", Value::Null);
    let mut cmd = anthropic(&dir, &model);
    cmd.env("ANTHROPIC_API_KEY", "wrong");
    let out = Run::start(cmd, &["run", "-p", "go", "--json"]).finish(LIMIT);
    assert_eq!(out.code, Some(1), "{out}");
    let last: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("last line is not JSON ({e}): {out}"));
    assert_eq!(last["event"], "error", "{out}");
    assert_eq!(last["code"], 1, "{out}");
    assert!(
        last["message"]
            .as_str()
            .is_some_and(|m| m.contains("ANTHROPIC_API_KEY")),
        "{out}"
    );

    // No model configured, and an empty task: config and usage errors, exit 2, each one
    // error event on stdout.
    for args in [
        &["run", "-p", "go", "--json"][..],
        &["run", "-p", "", "--json"],
    ] {
        let out = Run::start(harness9(&dir), args).finish(LIMIT);
        assert_eq!(out.code, Some(2), "{args:?}: {out}");
        let lines: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {out}");
        let e: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(
            (&e["event"], &e["code"]),
            (&json!("error"), &json!(2)),
            "{e}"
        );
    }
}

/// `bash` writing a file in a directory outside the project and connecting to a loopback
/// listener; returns (the file was created, the listener got a connection, the two results).
/// `user` and `project` are the user's settings file and the project's `harness9.toml`.
fn shell_escape_attempt(
    tag: &str,
    user: Option<&str>,
    project_file: Option<&str>,
) -> (bool, bool, String, String, String) {
    let outside = temp_path(&format!("{tag}-outside"));
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("escaped.txt");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let write = format!("echo out > {}", target.display());
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let model = Model::start(
        tag,
        json!({"steps": [
            {"tool_calls": [call("w", "bash", json!({"command": write}))]},
            {"tool_calls": [call("n", "bash", json!({"command": connect}))]},
            {"text": "done"}
        ]}),
    );
    let dir = project(tag, Value::Null);
    if let Some(s) = user {
        let config = home(&dir).join(".config/harness9");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), s).unwrap();
    }
    if let Some(s) = project_file {
        std::fs::write(dir.join("harness9.toml"), s).unwrap();
    }
    let args = ["run", "-p", "go", "--json", "--allowed-tools", "bash"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let text = |id: &str| {
        out.event("tool_result", id)["output"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let connected = listener.accept().is_ok();
    let stderr = out.stderr.clone();
    (target.exists(), connected, text("w"), text("n"), stderr)
}

#[test]
fn bash_under_the_default_sandbox_cannot_write_outside_the_project_nor_connect() {
    let (wrote, connected, w, n, _) = shell_escape_attempt("shell-default", None, None);
    assert!(!wrote, "bash wrote outside the project: {w}");
    assert!(!connected, "bash opened a TCP connection: {n}");
    assert!(
        w.contains("the sandbox refuses writes to") && w.contains("[permissions] shell"),
        "{w}"
    );
    assert!(
        n.contains("[permissions] shell") && !n.contains("connected\n"),
        "{n}"
    );
}

#[test]
fn bash_with_the_shell_sandbox_off_writes_outside_and_connects() {
    let off = "[permissions]\nshell = \"off\"\n";
    let (wrote, connected, w, n, _) = shell_escape_attempt("shell-off", Some(off), None);
    assert!(wrote, "{w}");
    assert!(connected, "{n}");
}

#[test]
fn a_project_file_cannot_turn_the_shell_sandbox_off() {
    let off = "[permissions]\nshell = \"off\"\n";
    let (wrote, connected, w, n, stderr) =
        shell_escape_attempt("shell-project-off", None, Some(off));
    assert!(!wrote, "{w}");
    assert!(!connected, "{n}");
    assert!(
        stderr.contains("harness9.toml:2: [permissions] shell = \"off\" is ignored"),
        "{stderr}"
    );
}

#[test]
fn bash_under_the_default_sandbox_still_writes_the_project_and_its_temp_dir() {
    let model = Model::start(
        "shell-inside",
        json!({"steps": [
            {"tool_calls": [call("w", "bash", json!({"command": "echo hi > here.txt && t=$(mktemp) && echo x > \"$t\" && echo wrote"}))]},
            {"text": "done"}
        ]}),
    );
    let dir = project("shell-inside", Value::Null);
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--allowed-tools", "bash", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    let w = out.event("tool_result", "w");
    assert!(
        w["output"].as_str().unwrap_or_default().contains("wrote"),
        "{w}"
    );
    assert!(dir.join("here.txt").exists());
}

/// `bash` asked to write `ran.txt` on a kernel whose Landlock ABI is `abi` (as
/// `HARNESS9_LANDLOCK_ABI` says it is): the tool's result text; asserts bash did not run.
fn bash_on_landlock_abi(tag: &str, abi: &str) -> String {
    let model = Model::start(
        tag,
        json!({"steps": [
            {"tool_calls": [call("w", "bash", json!({"command": "echo ran > ran.txt"}))]},
            {"text": "done"}
        ]}),
    );
    let dir = project(tag, Value::Null);
    let mut cmd = anthropic(&dir, &model);
    cmd.env("HARNESS9_LANDLOCK_ABI", abi);
    let args = ["run", "-p", "go", "--allowed-tools", "bash", "--json"];
    let out = Run::start(cmd, &args).finish(LIMIT);
    out.ok();
    let w = out.event("tool_result", "w");
    assert!(!dir.join("ran.txt").exists(), "bash ran unsandboxed");
    w["output"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn bash_without_landlock_refuses_to_run_and_names_the_setting() {
    let text = bash_on_landlock_abi("shell-nolandlock", "0");
    assert!(
        text.contains("no Landlock") && text.contains("shell = \"off\""),
        "{text}"
    );
}

#[test]
fn bash_on_a_kernel_without_landlock_tcp_rules_refuses_and_names_the_settings() {
    let text = bash_on_landlock_abi("shell-abi3", "3");
    assert!(
        text.contains("needs Landlock ABI 4")
            && text.contains("shell = \"network\"")
            && text.contains("\"off\""),
        "{text}"
    );
}

mod toolsearch;

/// A call that becomes a task (`io.modelcontextprotocol/tasks`) longer than the tool timeout:
/// the model gets "started task X" at once, says it waits, and its next step carries the
/// task's result, once.
#[test]
fn a_task_longer_than_the_tool_timeout_reaches_the_model_as_its_next_step() {
    let model = Model::start(
        "task-engine",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__jobs__slow", json!({"ms": 4000, "text": "late result"}))]},
            {"text": "I will wait for it", "expect": {"last_tool_result_contains": "started task"}},
            {"text": "all done"}
        ]}),
    );
    let py = repo().join(".deps/venv/bin/python");
    let script = repo().join("tests/python/task_server.py");
    let dir = project(
        "task-engine",
        json!({"jobs": {"command": py, "args": [script], "toolTimeoutSec": 1}}),
    );
    let out = Run::start(
        anthropic(&dir, &model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__jobs__slow",
            "--json",
        ],
    )
    .finish(LIMIT);
    out.ok();
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{out}");
    let sent = &tool_results(&requests[1])[0];
    assert_eq!(sent["is_error"], false, "{sent}");
    assert!(
        content_text(&sent["content"]).contains("started task task-"),
        "{sent}"
    );
    // The third request's last message is the task's result, given once.
    let messages = requests[2]["body"]["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "{last}");
    let text = content_text(&last["content"]);
    assert!(
        text.contains("the result of task task-") && text.contains("done: late result"),
        "{text}"
    );
    let all = requests[2]["body"]["messages"].to_string();
    assert_eq!(all.matches("done: late result").count(), 1, "{all}");
    assert!(out.stdout.contains("all done"), "{out}");
}
