//! The command-line defects a new user hit (issue 33, point 5), each through the real binary:
//! `-s` for `--scope` and no false VS Code note for the user file, `${VAR}`s saved unset,
//! `trace stats`/`replay` of a trace recorded from a real HTTP server and of a file that is not
//! a trace, `mcp login` of a server that asks for none.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::{everything_http, free_port, python_http};

const LIMIT: Duration = Duration::from_secs(90);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A project directory (a git root) with its own `XDG_CONFIG_HOME` beside it.
fn project(tag: &str) -> (PathBuf, PathBuf) {
    let dir = temp_path(tag);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let xdg = dir.with_file_name(format!("{name}-xdg"));
    std::fs::create_dir_all(&xdg).unwrap();
    (dir, xdg)
}

/// The binary in `dir` with the user's config in `xdg`, nothing from the caller's environment.
fn harness9(dir: &Path, xdg: &Path, args: &[&str]) -> Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
    without_user_env(&mut c)
        .current_dir(dir)
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_TOOL_CACHE", dir.join("tool-cache"))
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        .env("XDG_CONFIG_HOME", xdg)
        .env_remove("H9_UNSET_TOKEN_33")
        .args(args);
    output_within(c, None, LIMIT)
}

#[test]
fn the_short_scope_flag_works_and_the_user_file_gets_no_vscode_note() {
    let (dir, xdg) = project("cli-scope");
    let user = xdg.join("harness9/mcp.json");
    let fixture = fixture_bin().display().to_string();
    let out = harness9(
        &dir,
        &xdg,
        &["mcp", "add", "--scope", "user", "fx", "--", &fixture],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("added server \"fx\" to {}", user.display())),
        "{stdout}"
    );
    // The user's file is read beside the project's: it shadows nothing.
    assert!(!stdout.contains("note:"), "{stdout}");
    assert!(!stdout.contains(".vscode"), "{stdout}");
    assert!(user.exists());
    assert!(!dir.join(".mcp.json").exists());
    // Claude Code's short flag, on every command that takes --scope.
    let out = harness9(
        &dir,
        &xdg,
        &["mcp", "add", "-s", "user", "fx2", "--", &fixture],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let entry = json!({"command": fixture, "args": ["--tools", "1"]}).to_string();
    let out = harness9(
        &dir,
        &xdg,
        &["mcp", "add-json", "mine", &entry, "-s", "user"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let other = dir.join("other.json");
    std::fs::write(
        &other,
        json!({"servers": {"vs": {"command": fixture}}}).to_string(),
    )
    .unwrap();
    let out = harness9(
        &dir,
        &xdg,
        &[
            "mcp",
            "import",
            "--from",
            "vscode",
            "--file",
            other.to_str().unwrap(),
            "-s",
            "user",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("imported vs"),
        "{}",
        text(&out.stdout)
    );
    for name in ["fx", "fx2", "mine", "vs"] {
        let out = harness9(&dir, &xdg, &["mcp", "remove", name, "-s", "user"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&user).unwrap()).unwrap();
    assert_eq!(left["mcpServers"], json!({}), "{left}");
}

#[test]
fn a_variable_not_set_is_saved_as_written_with_a_warning() {
    let (dir, xdg) = project("cli-unset-var");
    let entry = json!({"type": "http", "url": "https://example.invalid/mcp",
        "headers": {"Authorization": "Bearer ${H9_UNSET_TOKEN_33}"}})
    .to_string();
    let out = harness9(
        &dir,
        &xdg,
        &["mcp", "add-json", "api", &entry, "--scope", "user"],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("added server \"api\""), "{stdout}");
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("${H9_UNSET_TOKEN_33}") && l.contains("not set"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(warned[0].contains("server \"api\""), "{stderr}");
    let saved = std::fs::read_to_string(xdg.join("harness9/mcp.json")).unwrap();
    assert!(saved.contains("Bearer ${H9_UNSET_TOKEN_33}"), "{saved}");

    // The project scope too (the server is approved as written), with `mcp add -e`.
    let fixture = fixture_bin().display().to_string();
    let out = harness9(
        &dir,
        &xdg,
        &[
            "mcp",
            "add",
            "fx",
            "-e",
            "TOKEN=${H9_UNSET_TOKEN_33}",
            "--",
            &fixture,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("H9_UNSET_TOKEN_33"));
    // Another entry's variables are that entry's: not said again.
    let out = harness9(
        &dir,
        &xdg,
        &[
            "mcp",
            "add",
            "fy",
            "-e",
            "OTHER=${H9_UNSET_OTHER_33}",
            "--",
            &fixture,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("${H9_UNSET_OTHER_33}") && !err.contains("H9_UNSET_TOKEN_33"),
        "{err}"
    );
    let saved = std::fs::read_to_string(dir.join(".mcp.json")).unwrap();
    assert!(saved.contains("${H9_UNSET_TOKEN_33}"), "{saved}");
    // Set when it runs, the server starts (no approval asked: the user wrote it).
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
    without_user_env(&mut c)
        .current_dir(&dir)
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_TOOL_CACHE", dir.join("tool-cache"))
        .env("XDG_CONFIG_HOME", &xdg)
        .env("H9_UNSET_TOKEN_33", "v")
        .args(["mcp", "list", "--json"]);
    let out = output_within(c, None, LIMIT);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let fx = rows
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "fx"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(fx["status"], "connected", "{rows}\n{}", text(&out.stderr));

    // A reference that is not one is still refused, and nothing is written.
    let out = harness9(
        &dir,
        &xdg,
        &["mcp", "add", "bad", "-e", "T=${oops", "--", &fixture],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("unterminated"),
        "{}",
        text(&out.stderr)
    );
    assert!(!std::fs::read_to_string(dir.join(".mcp.json"))
        .unwrap()
        .contains("\"bad\""));
}

/// The row of `method` in `trace stats --json`'s output.
fn row<'a>(stats: &'a Value, method: &str) -> &'a Value {
    stats["methods"]
        .as_array()
        .and_then(|m| m.iter().find(|r| r["method"] == method))
        .unwrap_or_else(|| panic!("no row {method}: {stats}"))
}

#[test]
fn stats_and_replay_of_a_trace_recorded_over_http_count_messages_not_exchanges() {
    // server-everything over Streamable HTTP: `server/discover` gets a 400 with a JSON-RPC
    // error, then the handshake (`initialize`, `notifications/initialized` answered 202).
    let server = everything_http(free_port());
    let (dir, xdg) = project("cli-http-trace");
    let config = json!({"mcpServers": {"ev": {"type": "http",
        "url": format!("http://127.0.0.1:{}/mcp", server.port)}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let trace = dir.join("trace.jsonl");
    let out = harness9(
        &dir,
        &xdg,
        &[
            "--approve-project",
            "--trace",
            trace.to_str().unwrap(),
            "mcp",
            "call",
            "ev",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
        ],
    );
    assert_eq!(text(&out.stdout), "Echo: hi\n", "{}", text(&out.stderr));
    let recorded = std::fs::read_to_string(&trace).unwrap();
    assert!(recorded.contains("\"http_status\":400"), "{recorded}");

    let out = harness9(
        &dir,
        &xdg,
        &["trace", "stats", trace.to_str().unwrap(), "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    let methods: Vec<&str> = stats["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["method"].as_str())
        .collect();
    assert!(!methods.contains(&""), "{stats}");
    // No request of the server's own: every exchange was an answer to ours.
    for r in stats["methods"].as_array().unwrap() {
        assert_eq!(r["requests_received"], 0, "{r}");
    }
    let init = row(&stats, "initialize");
    assert_eq!(
        (&init["requests_sent"], &init["replies"]),
        (&json!(1), &json!(1))
    );
    let initialized = row(&stats, "notifications/initialized");
    assert_eq!(initialized["notifications_sent"], 1, "{initialized}");
    assert_eq!(initialized["notifications_received"], 0, "{initialized}");
    // The 400's JSON-RPC error is discover's reply, timed from the request.
    let discover = row(&stats, "server/discover");
    assert_eq!(
        (&discover["replies"], &discover["errors"]),
        (&json!(1), &json!(1))
    );
    assert!(discover["latency_ms"][0].as_f64().is_some(), "{discover}");
    assert!(
        stats["http_exchanges"].as_u64().unwrap_or(0) >= 4,
        "{stats}"
    );

    // Replayed as a stdio server, discover is answered with its error, as it was.
    drop(server);
    let play = temp_path("cli-http-replay");
    std::fs::create_dir_all(&play).unwrap();
    let replay = json!({"command": env!("CARGO_BIN_EXE_harness9"),
        "args": ["trace", "replay", trace.to_str().unwrap()]});
    std::fs::write(
        play.join(".mcp.json"),
        json!({"mcpServers": {"ev": replay}}).to_string(),
    )
    .unwrap();
    let out = harness9(
        &play,
        &xdg,
        &[
            "--approve-project",
            "-vv",
            "mcp",
            "call",
            "ev",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(text(&out.stdout), "Echo: hi\n", "{err}");
    assert!(err.contains("trace replay: "), "{err}");
    assert!(!err.contains("never answered"), "{err}");
    assert!(!err.contains("no recorded reply"), "{err}");
}

#[test]
fn stats_of_a_file_that_is_not_a_trace_fails_naming_the_file_and_line() {
    let (dir, xdg) = project("cli-not-a-trace");
    let toml = dir.join("Cargo.toml");
    std::fs::write(&toml, "[package]\nname = \"x\"\n").unwrap();
    let objects = dir.join("objects.jsonl");
    std::fs::write(&objects, "\n{\"name\": \"x\"}\n{\"name\": \"y\"}\n").unwrap();
    for (file, line) in [(&toml, 1), (&objects, 2)] {
        let out = harness9(&dir, &xdg, &["trace", "stats", file.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
        assert!(
            err.contains(&format!("{}:{line}: not a trace record", file.display())),
            "{err}"
        );
    }
    // A trace with a torn last line is still read, the line named.
    let trace = dir.join("torn.jsonl");
    let rec = json!({"ts": "2026-12-05T00:00:00.000000Z", "server": "s", "dir": "send",
        "id": 1, "method": "ping", "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}});
    std::fs::write(&trace, format!("{rec}\n{{\"ts\": \"20")).unwrap();
    let out = harness9(&dir, &xdg, &["trace", "stats", trace.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("the first at line 2"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn login_to_a_server_that_asks_for_none_says_so() {
    // The PyPI server (stateless era) and server-everything (handshake era): neither answers
    // 401 nor publishes OAuth metadata.
    let py = python_http(free_port());
    let ev = everything_http(free_port());
    let (dir, xdg) = project("cli-login-none");
    let config = json!({"mcpServers": {
        "py": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", py.port)},
        "ev": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", ev.port)},
    }});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for name in ["py", "ev"] {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
        without_user_env(&mut c)
            .current_dir(&dir)
            .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
            .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
            .env("XDG_CONFIG_HOME", &xdg)
            // A browser that would fail the test if it were opened.
            .env("BROWSER", "false")
            .args(["--approve-project", "mcp", "login", name]);
        let out = output_within(c, None, LIMIT);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{name}: {stdout}{stderr}");
        assert!(
            stdout.contains(&format!("server \"{name}\" does not ask for a login")),
            "{name}: {stdout}{stderr}"
        );
        assert!(!stderr.contains("Opening the browser"), "{stderr}");
        assert!(!dir.join("oauth.json").exists());
    }
}
