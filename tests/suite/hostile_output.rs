//! Hostile server text in headless output: the real `harness9` binary against
//! tests/python/hostile_text.py, whose every string carries ESC/OSC 52/CSI/C1/BEL. Text mode
//! (stdout and stderr of `mcp list|get|call` and `run -p`) carries no control byte but newline
//! and tab; `--json` output parses, keeps the server's exact strings, and carries no raw control
//! either (DEL and C1 escaped as `\uXXXX` like C0).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::engine::Model;

/// Equal to `EVIL` in tests/python/hostile_text.py.
const EVIL: &str = "\x1b[31mRED\x1b[0m osc52:\x1b]52;c;aGFja2Vk\x07 csi:\x1b[2J\x1b[H c1:\u{9b}31m\u{9d}0;t\u{9c} bel:\x07 del:\x7f nel:\u{85} zw:\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\u{ad} lrm:\u{200e}\u{200f}\u{61c}\u{180e} bidi:\u{202e}\u{2067} tag:\u{e0041} tab:\tnl:\nend";
/// `EVIL` as text mode shows it: the sequences gone, tab and newline kept.
const SHOWN: &str = "RED osc52: csi: c1: bel: del: nel: zw: lrm: bidi: tag: tab:\tnl:\nend";
/// `EVIL` in a one-line field (a table cell, an `[mcp]` event): newline and tab become spaces.
const SHOWN_LINE: &str = "RED osc52: csi: c1: bel: del: nel: zw: lrm: bidi: tag: tab:    nl: end";
/// `EVIL_TOOL` of the fixture.
const EVIL_TOOL: &str = "paint\x1b[31m\x1b]52;c;aGFja2Vk\x07";

const LIMIT: Duration = Duration::from_secs(60);

/// A project dir with the hostile server `h`, the failing one `bad`, and `home/`.
fn project(tag: &str) -> PathBuf {
    project_named(tag, "h")
}

/// [`project`] with the hostile server named `name`.
fn project_named(tag: &str, name: &str) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let script = repo().join("tests/python/hostile_text.py");
    let mut servers = json!({"bad": {"command": "python3", "args": [script, "--fail"]}});
    servers[name] = json!({"command": "python3", "args": [script]});
    std::fs::write(
        dir.join(".mcp.json"),
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
    dir
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    /// Both streams carry nothing a terminal would act on.
    fn assert_clean(&self, what: &str) {
        assert_clean(&format!("{what}: stdout"), &self.stdout);
        assert_clean(&format!("{what}: stderr"), &self.stderr);
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (code, out, err) = (self.code, &self.stdout, &self.stderr);
        write!(f, "exit {code:?}\n--- stdout\n{out:?}\n--- stderr\n{err:?}")
    }
}

/// No C0 control but newline and tab, no DEL, no C1 control, no invisible formatting character
/// (zero-width, soft hyphen, bidi marks and controls, tags).
fn assert_clean(what: &str, s: &str) {
    for (i, c) in s.char_indices() {
        let invisible = matches!(
            c,
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
                | '\u{e0000}'..='\u{e007f}'
        );
        let raw =
            invisible || (c < ' ' && c != '\n' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c);
        assert!(!raw, "{what}: raw {c:?} at byte {i} of {s:?}");
    }
}

/// Runs `harness9 args` in `dir` (HOME in it, no model settings from outside) with a hard bound.
fn harness9(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness9"));
    // The project's .mcp.json is trusted for these tests (approvals kept in the dir).
    cmd.arg("--approve-project")
        .args(args)
        .current_dir(dir)
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_STARTUP_WAIT", "60")
        .env("HARNESS9_SESSIONS", dir.join("sessions"))
        .env("HOME", dir.join("home"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    without_user_env(&mut cmd);
    cmd.envs(env.iter().copied());
    let child = cmd.spawn().expect("spawn harness9");
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(LIMIT) {
        Ok(out) => out.expect("harness9's output"),
        Err(_) => {
            // SAFETY: a plain signal to our own child, not reaped yet (its waiter is blocked).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("harness9 {args:?} did not exit within {LIMIT:?}");
        }
    };
    // Text mode must be valid UTF-8 too: a lossy decode would hide a stray byte.
    let utf8 = |b: Vec<u8>, which: &str| {
        String::from_utf8(b).unwrap_or_else(|e| panic!("harness9 {args:?}: {which} not UTF-8: {e}"))
    };
    Out {
        code: out.status.code(),
        stdout: utf8(out.stdout, "stdout"),
        stderr: utf8(out.stderr, "stderr"),
    }
}

/// `--json` stdout as JSON; it too carries no raw control (DEL and C1 are escaped like C0).
fn parse(out: &Out) -> Value {
    out.assert_clean("--json");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// The first line of `EVIL` (stderr is read line by line).
fn evil_line() -> &'static str {
    EVIL.split('\n').next().unwrap_or_default()
}

#[test]
fn mcp_list_shows_server_info_errors_and_stderr_clean_and_json_exact() {
    let dir = project("hostile-list");
    let out = harness9(&dir, &["mcp", "list"], &[]);
    assert_eq!(out.code, Some(1), "{out}");
    out.assert_clean("mcp list");
    assert!(
        out.stdout
            .contains(&format!("srv {SHOWN_LINE} v {SHOWN_LINE}")),
        "{out}"
    );
    assert!(out.stdout.contains("stderr: starting RED osc52:"), "{out}");
    assert!(
        out.stderr
            .contains("[mcp] server \"bad\" connect failed: initialize failed: init RED osc52:"),
        "{out}"
    );

    // Log messages are logged without -v (warning, and an unknown level as error).
    assert!(out.stderr.contains("log "), "{out}");

    // -vv: the servers' stderr lines (debug) and log messages go through tracing to stderr,
    // with the server's name as a field; a config's hostile name is no server's name (it is
    // held, never started), and its error shows the name escaped.
    let named = project_named("hostile-list-v", "n\x1b]52;c;aGk=\x07\u{9b}31m");
    let out = harness9(&named, &["-vv", "mcp", "list"], &[]);
    out.assert_clean("mcp list -v");
    assert!(
        out.stderr.contains("starting") && out.stderr.contains("server=bad"),
        "{out}"
    );
    assert!(
        out.stdout.contains(
            "server \"n\\u{1b}]52;c;aGk=\\u{7}\\u{9b}31m\": a server's name may hold only"
        ),
        "{out}"
    );

    let out = harness9(&dir, &["mcp", "list", "--json"], &[]);
    assert_eq!(out.code, Some(1), "{out}");
    let rows = parse(&out);
    let row = |n: &str| {
        let found = rows
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == n));
        found
            .cloned()
            .unwrap_or_else(|| panic!("no row {n}: {out}"))
    };
    let h = row("h");
    assert_eq!(h["serverInfo"]["name"], format!("srv {EVIL}"), "{out}");
    assert_eq!(h["serverInfo"]["version"], format!("v {EVIL}"), "{out}");
    let bad = row("bad");
    assert_eq!(
        bad["error"],
        format!("initialize failed: init {EVIL} (code -32603)"),
        "{out}"
    );
    let tail = bad["stderrTail"].as_array().cloned().unwrap_or_default();
    assert!(
        tail.contains(&json!(format!("starting {}", evil_line()))),
        "{out}"
    );
}

#[test]
fn mcp_get_shows_tools_clean_and_json_exact() {
    let dir = project("hostile-get");
    let out = harness9(&dir, &["mcp", "get", "h"], &[]);
    assert_eq!(out.code, Some(0), "{out}");
    out.assert_clean("mcp get");
    assert!(out.stdout.contains("  hostile echo: RED osc52:"), "{out}");
    assert!(out.stdout.contains("(paint)"), "{out}");
    // The schema's strings too (JSON escapes C0 but not DEL or C1).
    assert!(
        out.stdout.contains("\"description\": \"\\u001b[31mRED"),
        "{out}"
    );

    let out = harness9(&dir, &["mcp", "get", "h", "--json"], &[]);
    assert_eq!(out.code, Some(0), "{out}");
    let tools = parse(&out);
    let tool = |n: &str| {
        let found = tools
            .as_array()
            .and_then(|t| t.iter().find(|t| t["tool"] == n));
        found
            .cloned()
            .unwrap_or_else(|| panic!("no tool {n:?}: {out}"))
    };
    let echo = tool("echo");
    assert_eq!(
        echo["description"],
        format!("hostile echo: {EVIL}"),
        "{out}"
    );
    assert_eq!(
        echo["inputSchema"]["properties"]["text"]["description"], EVIL,
        "{out}"
    );
    tool(EVIL_TOOL);

    // A failed server: its error and stderr tail in the error message.
    let out = harness9(&dir, &["mcp", "get", "bad"], &[]);
    assert_eq!(out.code, Some(1), "{out}");
    out.assert_clean("mcp get bad");
    assert!(
        out.stderr
            .contains("server \"bad\" failed: initialize failed: init RED osc52:")
            && out.stderr.contains("stderr: refusing RED osc52:"),
        "{out}"
    );
}

#[test]
fn mcp_call_results_errors_and_progress_are_clean_and_json_exact() {
    let dir = project("hostile-call");
    let call = |tool: &str, json: bool| {
        let mut args = vec!["mcp", "call", "h", tool];
        if json {
            args.push("--json");
        }
        harness9(&dir, &args, &[])
    };

    let out = call("result", false);
    assert_eq!(out.code, Some(0), "{out}");
    out.assert_clean("mcp call result");
    assert_eq!(out.stdout, format!("{SHOWN}\n"), "{out}");
    let out = call("result", true);
    assert_eq!(parse(&out)["content"][0]["text"], EVIL, "{out}");

    let out = call("fail", false);
    assert_eq!(out.code, Some(1), "{out}");
    out.assert_clean("mcp call fail");
    assert_eq!(out.stdout, format!("{SHOWN}\n"), "{out}");
    let out = call("fail", true);
    let v = parse(&out);
    assert_eq!(
        (&v["isError"], &v["content"][0]["text"]),
        (&json!(true), &json!(EVIL))
    );

    let out = call("rpc_error", false);
    assert_eq!(out.code, Some(1), "{out}");
    out.assert_clean("mcp call rpc_error");
    assert!(
        out.stderr
            .contains("server \"h\" rejected tool \"rpc_error\": rpc RED osc52:"),
        "{out}"
    );
    let out = call("rpc_error", true);
    assert_eq!(out.code, Some(1), "{out}");
    let error = parse(&out)["error"].as_str().map(str::to_owned);
    assert!(
        error.is_some_and(|e| e.contains(&format!("rpc {EVIL}"))),
        "{out}"
    );

    let out = call("progress", false);
    assert_eq!(out.code, Some(0), "{out}");
    out.assert_clean("mcp call progress");
    assert!(
        out.stderr.contains("[mcp] progress 1/2 step RED osc52:")
            && out.stderr.contains("[mcp] progress 2/2 step RED osc52:"),
        "{out}"
    );
    assert_eq!(out.stdout, format!("{SHOWN}\n"), "{out}");
    let out = call("progress", true);
    out.assert_clean("mcp call progress --json");
    assert_eq!(parse(&out)["content"][0]["text"], EVIL, "{out}");
}

#[test]
fn run_p_text_output_of_a_hostile_tool_and_failed_server_is_clean() {
    let script = || {
        json!({"steps": [
            {"tool_calls": [
                {"id": "t1", "name": "mcp__h__result", "input": {}},
                {"id": "t2", "name": "mcp__h__progress", "input": {}}
            ]},
            // A model that repeats what a tool said.
            {"text": format!("answer {EVIL}"), "expect": {"last_tool_result_contains": "RED"}}
        ]})
    };
    let dir = project("hostile-run");
    let model = Model::start("hostile-run", script());
    let env = model.env();
    let out = harness9(
        &dir,
        &["run", "-p", "go", "--allowed-tools", "mcp__h__*"],
        &env,
    );
    assert_eq!(out.code, Some(0), "{out}");
    out.assert_clean("run -p");
    assert_eq!(out.stdout, format!("answer {SHOWN}\n"), "{out}");
    assert!(
        out.stderr
            .contains("[mcp] server \"bad\" connect failed: initialize failed: init RED osc52:")
            && out.stderr.contains("[tool] mcp__h__progress ✓"),
        "{out}"
    );

    let model = Model::start("hostile-run-json", script());
    let env = model.env();
    let out = harness9(
        &dir,
        &["run", "-p", "go", "--json", "--allowed-tools", "mcp__h__*"],
        &env,
    );
    assert_eq!(out.code, Some(0), "{out}");
    out.assert_clean("run -p --json");
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{out}")))
        .collect();
    let find = |name: &str, id: &str| {
        let found = events
            .iter()
            .find(|e| e["event"] == name && (id.is_empty() || e["id"] == id));
        found
            .cloned()
            .unwrap_or_else(|| panic!("no {name} {id}: {out}"))
    };
    assert_eq!(find("tool_result", "t1")["output"], EVIL, "{out}");
    // The server's own progress message, exactly (a warm tool-list cache may put our
    // "waiting for server" line before it).
    let step = format!("step {EVIL}");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "tool_progress" && e["id"] == "t2" && e["message"] == step),
        "{out}"
    );
    assert_eq!(find("done", "")["text"], format!("answer {EVIL}"), "{out}");

    // A failing model whose error message repeats server text.
    let model = Model::start(
        "hostile-run-error",
        json!({"steps": [{"status": 400, "error_message": format!("bad request {EVIL}")}]}),
    );
    let env = model.env();
    let out = harness9(
        &dir,
        &["run", "-p", "go", "--allowed-tools", "mcp__h__*"],
        &env,
    );
    assert_eq!(out.code, Some(1), "{out}");
    out.assert_clean("run -p, model error");
    assert!(out.stderr.contains("bad request RED osc52:"), "{out}");
}

#[test]
fn mcp_resources_read_prompts_and_prompt_are_clean_and_json_exact() {
    let dir = project("hostile-features");
    for args in [
        &["mcp", "resources", "h"][..],
        &["mcp", "read", "h", "evil://r"],
        &["mcp", "prompts", "h"],
        &["mcp", "prompt", "h", "p", "--args", r#"{"a": "1"}"#],
    ] {
        let out = harness9(&dir, args, &[]);
        assert_eq!(out.code, Some(0), "{args:?}: {out}");
        out.assert_clean(&args.join(" "));
        assert!(out.stdout.contains("RED osc52:"), "{args:?}: {out}");
    }
    let out = harness9(&dir, &["mcp", "read", "h", "evil://r"], &[]);
    assert!(
        out.stdout.contains("[binary contents: x/RED"),
        "a blob is summarised: {out}"
    );
    let mut json_args = vec!["mcp", "prompt", "h", "p", "--json"];
    let out = harness9(&dir, &json_args, &[]);
    assert_eq!(parse(&out)["messages"][0]["content"]["text"], EVIL, "{out}");
    json_args[1] = "resources";
    json_args.truncate(3);
    json_args.push("--json");
    let out = harness9(&dir, &json_args, &[]);
    let v = parse(&out);
    assert_eq!(
        v["resources"][0]["description"],
        format!("d {EVIL}"),
        "{out}"
    );
    assert_eq!(
        v["resourceTemplates"][0]["name"],
        format!("t {EVIL}"),
        "{out}"
    );
}
