//! `harness9 trace replay FILE`: a session recorded with `--trace` against server-everything,
//! served back by the real binary as a configured server, gives `mcp call` the same results.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::json;

use super::common::*;

/// The binary in `dir` with a hard timeout; the project's `.mcp.json` is trusted.
fn harness9(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = harness9_in(dir);
    cmd.args(args);
    output_within(cmd, None, Duration::from_secs(90))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What a user sees of a command: its exit code, stdout, and the stderr lines that are its
/// result (progress and errors, not connection events or timings).
fn seen(out: &Output) -> (Option<i32>, String, Vec<String>) {
    let err = text(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("[mcp] progress") || l.starts_with("harness9: "))
        .map(|l| l.trim_end().to_owned())
        .collect();
    (out.status.code(), text(&out.stdout), err)
}

/// The commands recorded and replayed: several tools, one with progress, an `isError` result
/// and a JSON-RPC error.
const SESSION: [&[&str]; 5] = [
    &[
        "mcp",
        "call",
        "everything",
        "echo",
        "--args",
        r#"{"message":"hi"}"#,
    ],
    &[
        "mcp",
        "call",
        "everything",
        "get-sum",
        "--args",
        r#"{"a":2,"b":3}"#,
    ],
    &[
        "mcp",
        "call",
        "everything",
        "trigger-long-running-operation",
        "--args",
        r#"{"duration":1,"steps":2}"#,
    ],
    &[
        "mcp",
        "call",
        "everything",
        "get-sum",
        "--args",
        r#"{"a":"x"}"#,
    ],
    &["mcp", "read", "everything", "demo://resource/nope"],
];

#[test]
fn a_recorded_session_replays_with_the_same_results_and_misses_name_the_nearest() {
    let rec_dir = project_with(
        "replay-rec",
        json!({"everything": stdio_json(everything("everything")), "p": stdio_json(fixture("p", &[]))}),
    );
    // Each command writes its own trace; the session is their concatenation, as a user would
    // gather it, with another server's run in it too.
    let mut body = String::new();
    let mut recorded = Vec::new();
    for (i, args) in SESSION.iter().enumerate() {
        let one = rec_dir.join(format!("trace{i}.jsonl"));
        let mut all = vec!["--trace", one.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = harness9(&rec_dir, &all);
        recorded.push(seen(&out));
        body.push_str(&std::fs::read_to_string(&one).unwrap());
    }
    let other = rec_dir.join("other.jsonl");
    let out = harness9(
        &rec_dir,
        &[
            "--trace",
            other.to_str().unwrap(),
            "mcp",
            "call",
            "p",
            "echo",
            "--args",
            r#"{"text":"x"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    body.push_str(&std::fs::read_to_string(&other).unwrap());
    let trace = rec_dir.join("session.jsonl");
    std::fs::write(&trace, body).unwrap();

    // The recorded run did what the session is for.
    assert_eq!(recorded[0], (Some(0), "Echo: hi\n".to_owned(), vec![]));
    assert_eq!(recorded[2].2, ["[mcp] progress 1/2", "[mcp] progress 2/2"]);
    assert_eq!(recorded[3].0, Some(1), "isError: {:?}", recorded[3]);
    assert!(
        recorded[4]
            .2
            .iter()
            .any(|l| l.contains("not found (code -32602)")),
        "{:?}",
        recorded[4]
    );

    // Served back: the same command line, the server's command now the replay.
    let bin = env!("CARGO_BIN_EXE_harness9");
    let replay = json!({"command": bin,
        "args": ["trace", "replay", trace.to_str().unwrap(), "--server", "everything"]});
    let dir = project_with("replay-play", json!({ "everything": replay }));
    for (args, want) in SESSION.iter().zip(&recorded) {
        let out = harness9(&dir, args);
        assert_eq!(&seen(&out), want, "{args:?}\n{}", text(&out.stderr));
    }

    // A call never recorded: a JSON-RPC error naming the nearest recorded call.
    let out = harness9(
        &dir,
        &[
            "mcp",
            "call",
            "everything",
            "echo",
            "--args",
            r#"{"message":"never"}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let want = r#"harness9: server "everything" rejected tool "echo": no recorded reply for tools/call {"arguments":{"message":"never"},"name":"echo"}; nearest recorded: tools/call {"arguments":{"message":"hi"},"name":"echo"} (code -32602)"#;
    assert!(
        text(&out.stderr).lines().any(|l| l == want),
        "{}",
        text(&out.stderr)
    );

    // Spoken to directly: ids remapped, progress under the caller's token, bad lines answered
    // with errors, an over-long line skipped, client notifications ignored.
    let long = "x".repeat(16 * 1024 * 1024 + 1);
    let input = [
        r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":5,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#,
        &long,
        "not json",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":2},"_meta":{"progressToken":"p1"}}}"#,
    ]
    .join("\n")
        + "\n";
    let mut cmd = harness9_in(&dir);
    cmd.args([
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--server",
        "everything",
    ]);
    let out = output_within(cmd, Some(&input), Duration::from_secs(90));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["id"], "a");
    assert_eq!(lines[0]["result"]["content"][0]["text"], "Echo: hi");
    assert_eq!(
        (&lines[1]["id"], &lines[1]["error"]["code"]),
        (&json!(null), &json!(-32600))
    );
    assert_eq!(lines[2]["error"]["code"], -32700);
    let progress: Vec<(&serde_json::Value, &serde_json::Value)> = lines[3..]
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| (&m["params"]["progressToken"], &m["params"]["progress"]))
        .collect();
    assert_eq!(
        progress,
        [(&json!("p1"), &json!(1)), (&json!("p1"), &json!(2))]
    );
    let last = lines.last().unwrap();
    assert_eq!(last["id"], 7);
    assert!(last["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Long running operation completed"));

    // Without --server, a trace of two servers is refused, naming them.
    let out = harness9(&dir, &["trace", "replay", trace.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            r#"recordings of several servers ("everything", "p"): pick one with --server NAME"#
        ),
        "{}",
        text(&out.stderr)
    );
    // A --server the trace does not hold: an error naming those it does.
    let out = harness9(
        &dir,
        &[
            "trace",
            "replay",
            trace.to_str().unwrap(),
            "--server",
            "nope",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            r#"no recorded request for server "nope" (servers in the trace: "everything", "p")"#
        ),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_stateless_era_session_replays_too() {
    // The PyPI server is taken in the stateless era: server/discover, `_meta` on every request,
    // a subscriptions/listen stream that is never answered.
    let rec_dir = project_with("replay-py-rec", json!({"py": stdio_json(python("py"))}));
    let session: [&[&str]; 2] = [
        &[
            "mcp",
            "call",
            "py",
            "multiply",
            "--args",
            r#"{"a":6,"b":7}"#,
        ],
        &["mcp", "call", "py", "greet", "--args", r#"{"name":"ada"}"#],
    ];
    let mut body = String::new();
    let mut recorded = Vec::new();
    for (i, args) in session.iter().enumerate() {
        let one = rec_dir.join(format!("trace{i}.jsonl"));
        let mut all = vec!["--trace", one.to_str().unwrap()];
        all.extend_from_slice(args);
        recorded.push(seen(&harness9(&rec_dir, &all)));
        body.push_str(&std::fs::read_to_string(&one).unwrap());
    }
    assert_eq!(recorded[0], (Some(0), "42\n".to_owned(), vec![]));
    assert!(body.contains("\"subscriptions/listen\""), "{body}");
    let trace = rec_dir.join("session.jsonl");
    std::fs::write(&trace, body).unwrap();

    // Without --server: the trace holds one server's recordings.
    let replay = json!({"command": env!("CARGO_BIN_EXE_harness9"),
        "args": ["trace", "replay", trace.to_str().unwrap()]});
    let dir = project_with("replay-py-play", json!({ "py": replay }));
    for (args, want) in session.iter().zip(&recorded) {
        let out = harness9(&dir, args);
        assert_eq!(&seen(&out), want, "{args:?}\n{}", text(&out.stderr));
    }
    // Every request found its recording, subscriptions/listen included (the replay's stderr,
    // logged at -vv, names any it had none for).
    let out = harness9(
        &dir,
        &[
            "-vv",
            "mcp",
            "call",
            "py",
            "multiply",
            "--args",
            r#"{"a":6,"b":7}"#,
        ],
    );
    let err = text(&out.stderr);
    assert!(err.contains("trace replay: "), "{err}");
    assert!(!err.contains("no recorded reply"), "{err}");
    let out = harness9(&dir, &["mcp", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["status"], "connected", "{rows}");
    assert_eq!(rows[0]["era"], "stateless", "{rows}");
    assert_eq!(rows[0]["protocolVersion"], "2026-07-28", "{rows}");
}
