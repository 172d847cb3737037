//! The tool-list cache and lazy start, end to end: `harness9 run -p` against the scripted model
//! and `harness9 mcp list` with the fixture server, whose `--start-delay-ms` makes it slow to
//! start and `--tools-file` changes its list without changing its command line. A warm cache
//! gives the first request every tool before the server is up; a lazy server starts on its
//! first call (the call waits, with a progress line); a changed spec is a new entry; a tool
//! the live list lacks is a clear error naming its server; a corrupt or hostile cache file is
//! ignored with a warning.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::engine::Model;

const LIMIT: Duration = Duration::from_secs(60);

/// A project dir with `.mcp.json` holding one fixture server `fx`.
fn project(tag: &str, fx: Value) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let config = json!({ "mcpServers": { "fx": fx } }).to_string();
    std::fs::write(dir.join(".mcp.json"), config).unwrap();
    dir
}

fn write_config(dir: &Path, fx: Value) {
    let config = json!({ "mcpServers": { "fx": fx } }).to_string();
    std::fs::write(dir.join(".mcp.json"), config).unwrap();
}

fn fixture_entry(args: &[&str], extra: Value) -> Value {
    let mut v = json!({"command": fixture_bin(), "args": args});
    if let Value::Object(m) = extra {
        v.as_object_mut().unwrap().extend(m);
    }
    v
}

/// `harness9` in `dir` (its own HOME, cache dir and approvals; no user settings).
fn harness9(dir: &Path) -> Command {
    let mut c = harness9_in(dir);
    c.env("HOME", dir.join("home"));
    without_user_env(&mut c);
    c
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn run(mut cmd: Command, args: &[&str]) -> Out {
    cmd.args(args);
    let o = output_within(cmd, None, LIMIT);
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `run -p hi --json` against `model`.
fn run_p(dir: &Path, model: &Model) -> Out {
    let mut c = harness9(dir);
    c.envs(model.env());
    run(
        c,
        &["run", "-p", "hi", "--json", "--allowed-tools", "mcp__fx__*"],
    )
}

fn events(out: &Out) -> Vec<Value> {
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn event(out: &Out, name: &str) -> Value {
    events(out)
        .into_iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name:?} event\n{out}"))
}

/// `mcp list --json`'s row of `fx`.
fn list_row(dir: &Path) -> (Value, Out) {
    let out = run(harness9(dir), &["mcp", "list", "--json"]);
    let rows: Vec<Value> =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{out}"));
    let row = rows
        .into_iter()
        .find(|r| r["name"] == "fx")
        .unwrap_or_else(|| panic!("no fx row\n{out}"));
    (row, out)
}

/// The one cache file in the project's cache dir.
fn cache_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir.join("tool-cache"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(files.len(), 1, "one cache entry expected: {files:?}");
    files.into_iter().next().unwrap()
}

/// A project dir (with its HOME) and the path of the fixture server's `--record` file, the
/// path also as an argument. The record is outside the project: a file of the repository the
/// server is given is pinned, and its content is part of the cache key (a record that grows
/// would be a new server each time).
fn project_and_record(tag: &str) -> (PathBuf, PathBuf, String) {
    let dir = temp_path(tag);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let outside = temp_path(&format!("{tag}-record"));
    std::fs::create_dir_all(&outside).unwrap();
    let record = outside.join("fx.jsonl");
    let rec = record.to_string_lossy().into_owned();
    (dir, record, rec)
}

/// How many requests of `method` the fixture server recorded.
fn sent(record: &Path, method: &str) -> usize {
    let quoted = format!("\"{method}\"");
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&quoted))
        .count()
}

fn initializes(record: &Path) -> usize {
    sent(record, "initialize")
}

#[test]
fn a_warm_cache_gives_the_first_request_every_tool_before_the_server_is_up() {
    // The server reads nothing for 4 s: a cold run waits for it, a warm one does not.
    let dir = project(
        "cache-warm",
        fixture_entry(&["--start-delay-ms", "4000"], json!({})),
    );
    let model = Model::start(
        "cache-warm",
        json!({"steps": [{"text": "cold"}, {"text": "warm"}]}),
    );
    let cold = run_p(&dir, &model);
    assert_eq!(cold.code, Some(0), "{cold}");
    assert_eq!(
        event(&cold, "start")["servers"]["fx"],
        "connected",
        "{cold}"
    );
    let file = cache_file(&dir);
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", file.display());
    let dmode = std::fs::metadata(dir.join("tool-cache"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dmode, 0o700);

    let warm = run_p(&dir, &model);
    assert_eq!(warm.code, Some(0), "{warm}");
    // The first request went out while the server was still sleeping: its status then was
    // "cached", and the request carried its tools.
    let start = event(&warm, "start");
    assert_eq!(start["servers"]["fx"], "cached", "{warm}");
    assert!(
        start["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__fx__echo"),
        "{warm}"
    );
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    let tools = offered_tools(&reqs[1]);
    assert!(
        tools.iter().any(|t| t == "mcp__fx__echo") && tools.iter().any(|t| t == "mcp__fx__add"),
        "{tools:?}"
    );
    assert_eq!(
        tools,
        offered_tools(&reqs[0]),
        "the same tools as the cold run"
    );
}

#[test]
fn a_lazy_server_starts_on_its_first_call_which_waits_with_a_progress_line() {
    let (dir, record, rec) = project_and_record("cache-lazy");
    write_config(
        &dir,
        fixture_entry(
            &["--start-delay-ms", "1000", "--record", &rec],
            json!({"start": "lazy"}),
        ),
    );
    // Cold: nothing cached, so even a lazy server starts at once (and its list is cached).
    let (row, out) = list_row(&dir);
    assert_eq!(row["status"], "connected", "{out}");
    assert_eq!(row["toolsFrom"], "live", "{out}");
    assert_eq!(initializes(&record), 1);

    // Warm: `mcp list` shows the cached list and does not start the server.
    let (row, out) = list_row(&dir);
    assert_eq!(out.code, Some(0), "{out}");
    assert_eq!(row["status"], "cached", "{out}");
    assert_eq!(row["toolsFrom"], "cache", "{out}");
    assert!(row["cacheAgeMs"].as_u64().is_some(), "{out}");
    assert!(row["tools"].as_u64().unwrap() >= 10, "{out}");
    assert_eq!(
        initializes(&record),
        1,
        "a lazy server is not started by mcp list"
    );

    // A call of its tool starts it; the call waits for it, saying so.
    let model = Model::start(
        "cache-lazy",
        json!({"steps": [
            {"tool_calls": [{"id": "c1", "name": "mcp__fx__echo", "input": {"text": "lazy hello"}}]},
            {"text": "done", "expect": {"last_tool_result_contains": "lazy hello"}}
        ]}),
    );
    let out = run_p(&dir, &model);
    assert_eq!(out.code, Some(0), "{out}");
    assert_eq!(event(&out, "start")["servers"]["fx"], "cached", "{out}");
    let progress = event(&out, "tool_progress");
    assert!(
        progress["message"]
            .as_str()
            .unwrap_or("")
            .contains("waiting for server \"fx\" to start"),
        "{out}"
    );
    let result = event(&out, "tool_result");
    assert_eq!(result["is_error"], false, "{out}");
    assert_eq!(initializes(&record), 2);
}

#[test]
fn a_changed_spec_is_a_new_cache_entry() {
    let dir = temp_path("cache-spec");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    write_config(&dir, fixture_entry(&[], json!({"start": "lazy"})));
    let (row, out) = list_row(&dir);
    assert_eq!(row["toolsFrom"], "live", "{out}");
    let (row, out) = list_row(&dir);
    assert_eq!(row["toolsFrom"], "cache", "{out}");
    // Another argument: the old entry is not this spec's.
    write_config(
        &dir,
        fixture_entry(&["--tools", "2"], json!({"start": "lazy"})),
    );
    let (row, out) = list_row(&dir);
    assert_eq!(row["status"], "connected", "{out}");
    assert_eq!(row["toolsFrom"], "live", "{out}");
    assert!(row["cacheAgeMs"].is_null(), "{out}");
    // Another environment value too.
    write_config(
        &dir,
        fixture_entry(
            &["--tools", "2"],
            json!({"start": "lazy", "env": {"FLAVOUR": "b"}}),
        ),
    );
    let (row, out) = list_row(&dir);
    assert_eq!(row["toolsFrom"], "live", "{out}");
}

#[test]
fn a_tool_the_live_list_lacks_is_a_clear_error_naming_its_server() {
    let dir = temp_path("cache-vanish");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    // Outside the project, so the file is not pinned: the spec stays the same server (a
    // changed file of the repository would be a new cache entry, see above).
    let outside = temp_path("cache-vanish-count");
    std::fs::create_dir_all(&outside).unwrap();
    let count = outside.join("count");
    std::fs::write(&count, "3").unwrap();
    let c = count.to_string_lossy().into_owned();
    write_config(&dir, fixture_entry(&["--tools-file", &c], json!({})));
    let (row, out) = list_row(&dir);
    assert_eq!(row["status"], "connected", "{out}");
    // The same command line now lists one synthetic tool, not three.
    std::fs::write(&count, "1").unwrap();
    let model = Model::start(
        "cache-vanish",
        json!({"steps": [
            {"tool_calls": [{"id": "c1", "name": "mcp__fx__tool_00002", "input": {"x": "a"}}]},
            {"text": "done"}
        ]}),
    );
    let out = run_p(&dir, &model);
    assert_eq!(out.code, Some(0), "{out}");
    let reqs = model.requests();
    assert!(
        offered_tools(&reqs[0])
            .iter()
            .any(|t| t == "mcp__fx__tool_00002"),
        "the first request had the cached list"
    );
    let result = event(&out, "tool_result");
    assert_eq!(result["is_error"], true, "{out}");
    let text = result["output"].as_str().unwrap_or("");
    assert!(
        text.contains("server \"fx\" no longer offers tool \"tool_00002\""),
        "{out}"
    );
    // The next step's tools are the live ones.
    let tools = offered_tools(&reqs[1]);
    assert!(
        tools.iter().any(|t| t == "mcp__fx__tool_00000")
            && !tools.iter().any(|t| t == "mcp__fx__tool_00002"),
        "{tools:?}"
    );
}

#[test]
fn a_corrupt_or_hostile_cache_file_is_ignored_with_a_warning() {
    let dir = temp_path("cache-hostile");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    write_config(&dir, fixture_entry(&[], json!({"start": "lazy"})));
    let (row, out) = list_row(&dir);
    assert_eq!(row["toolsFrom"], "live", "{out}");
    let file = cache_file(&dir);
    let good = std::fs::read(&file).unwrap();
    let entry: Value = serde_json::from_slice(&good).unwrap();
    let mut wrong_types = entry.clone();
    wrong_types["tools"] = json!([{"name": 7, "inputSchema": {}}]);
    let mut other_key = entry.clone();
    other_key["key"] = json!("0".repeat(64));
    let mut injected = entry.clone();
    injected["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "planted", "inputSchema": {"type": "object"}}));
    injected["extra"] = json!(true);
    let mut huge = entry.clone();
    huge["instructions"] = json!("x".repeat(5 << 20));
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"\x00\xffnot json at all".to_vec()),
        ("deep", deep.into_bytes()),
        ("wrong types", wrong_types.to_string().into_bytes()),
        ("another spec's", other_key.to_string().into_bytes()),
        ("unknown field", injected.to_string().into_bytes()),
        ("huge", huge.to_string().into_bytes()),
    ];
    for (what, bytes) in cases {
        std::fs::write(&file, &bytes).unwrap();
        let (row, out) = list_row(&dir);
        assert_eq!(row["status"], "connected", "{what}: {out}");
        assert_eq!(row["toolsFrom"], "live", "{what}: {out}");
        assert!(
            out.stderr.contains("ignoring the cached tool list"),
            "{what}: {out}"
        );
        assert!(!out.stdout.contains("planted"), "{what}: {out}");
        // The live list was written back over it.
        let back: Value = serde_json::from_slice(&std::fs::read(&file).unwrap())
            .unwrap_or_else(|e| panic!("{what}: not rewritten: {e}"));
        assert_eq!(back["key"], entry["key"], "{what}");
    }
    // A symlink planted in its place is not followed.
    let elsewhere = dir.join("elsewhere.json");
    std::fs::write(&elsewhere, &good).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
    let (row, out) = list_row(&dir);
    assert_eq!(row["toolsFrom"], "live", "symlink: {out}");
    assert!(
        out.stderr.contains("ignoring the cached tool list"),
        "symlink: {out}"
    );
    assert_eq!(
        std::fs::read(&elsewhere).unwrap(),
        good,
        "not written through"
    );
}

#[test]
fn mcp_list_shows_each_servers_tool_definition_size() {
    let dir = temp_path("cache-sizes");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    write_config(&dir, fixture_entry(&["--tools", "5"], json!({})));
    let (row, out) = list_row(&dir);
    let bytes = row["toolBytes"].as_u64().unwrap_or(0);
    assert!(bytes > 1000, "{out}");
    assert_eq!(row["toolTokens"].as_u64(), Some(bytes.div_ceil(4)), "{out}");
    let text = run(harness9(&dir), &["mcp", "list"]);
    assert!(text.stdout.contains("~TOKENS"), "{text}");
    assert!(
        text.stdout.contains(&bytes.div_ceil(4).to_string()),
        "{text}"
    );
}

/// The TUI's first turn, with a warm cache, carries the tools of a server that is still
/// starting (the bar marks it cached until it connects).
#[test]
fn the_tuis_first_turn_carries_cached_tools_while_the_server_starts() {
    use super::tui::{bar, tmux_required, Tmux};
    tmux_required();
    let bound = Duration::from_secs(30);
    let model = Model::start("cache-tui", json!({"steps": [{"text": "first answer"}]}));
    let dir = project(
        "cache-tui",
        fixture_entry(&["--start-delay-ms", "4000"], json!({})),
    );
    let [key, url] = model.env();
    let vars = [key, url, ("HARNESS9_MODEL", "claude-sonnet-4-5")];
    // Cold: the server connects after 4 s, and its list is cached.
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("fx connected", bound, |s| bar(s).contains("fx ●"));
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    t.end_keeping_dir();
    // Warm: its tools are there at once, while it sleeps.
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("fx offered from the cache", bound, |s| {
        bar(s).contains("(cached)")
    });
    t.send_keys(&["hi", "Enter"]);
    t.wait_for("the answer", bound, |s| s.contains("first answer"));
    let reqs = model.requests();
    assert_eq!(reqs.len(), 1);
    assert!(
        offered_tools(&reqs[0]).iter().any(|t| t == "mcp__fx__echo"),
        "{:?}",
        offered_tools(&reqs[0])
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// `run -p hi --json` with `--startup-wait 0`: the run does not wait for a slow server.
fn run_p_now(dir: &Path, model: &Model) -> Out {
    let mut c = harness9(dir);
    c.envs(model.env());
    run(
        c,
        &[
            "run",
            "-p",
            "hi",
            "--json",
            "--startup-wait",
            "0",
            "--allowed-tools",
            "mcp__fx__*",
        ],
    )
}

const WAITING: &str = "to finish starting, so the next run offers its tools at once";

#[test]
fn a_server_slower_than_the_run_is_cached_at_its_end_and_the_next_run_offers_its_tools() {
    // The server reads nothing for 3 s; the runs do not wait for it at their start and are
    // over well before it is up.
    let dir = project(
        "cache-slow-exit",
        fixture_entry(&["--start-delay-ms", "3000"], json!({})),
    );
    let model = Model::start(
        "cache-slow-exit",
        json!({"steps": [{"text": "first"}, {"text": "second"}]}),
    );
    let first = run_p_now(&dir, &model);
    assert_eq!(first.code, Some(0), "{first}");
    assert_eq!(event(&first, "done")["text"], "first", "{first}");
    assert_eq!(
        event(&first, "start")["servers"]["fx"],
        "starting",
        "{first}"
    );
    // Its end waited for the server's list, said so once, and cached it.
    assert_eq!(first.stderr.matches(WAITING).count(), 1, "{first}");
    assert!(first.stderr.contains("\"fx\""), "{first}");
    cache_file(&dir);

    let second = run_p_now(&dir, &model);
    assert_eq!(second.code, Some(0), "{second}");
    assert_eq!(
        event(&second, "start")["servers"]["fx"],
        "cached",
        "{second}"
    );
    assert!(!second.stderr.contains(WAITING), "{second}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        !offered_tools(&reqs[0]).iter().any(|t| t == "mcp__fx__echo"),
        "the first run's request cannot have the slow server's tools"
    );
    let tools = offered_tools(&reqs[1]);
    assert!(
        tools.iter().any(|t| t == "mcp__fx__echo") && tools.iter().any(|t| t == "mcp__fx__add"),
        "the second run's first request lists the slow server's tools: {tools:?}"
    );
}

#[test]
fn a_server_that_does_not_list_by_the_end_is_waited_for_once() {
    // Far slower than the end's bound: the first run's end waits for it in vain, the next
    // one does not wait again.
    let dir = project(
        "cache-never-lists",
        fixture_entry(
            &["--start-delay-ms", "60000"],
            json!({"startupTimeoutSec": 120}),
        ),
    );
    let model = Model::start(
        "cache-never-lists",
        json!({"steps": [{"text": "first"}, {"text": "second"}]}),
    );
    let first = run_p_now(&dir, &model);
    assert_eq!(first.code, Some(0), "{first}");
    assert_eq!(first.stderr.matches(WAITING).count(), 1, "{first}");
    let second = run_p_now(&dir, &model);
    assert_eq!(second.code, Some(0), "{second}");
    assert_eq!(event(&second, "done")["text"], "second", "{second}");
    assert!(!second.stderr.contains(WAITING), "{second}");
}

#[test]
fn a_changed_file_the_server_runs_is_a_new_entry_never_offered_the_old_list() {
    // The server is a script of the repository: its content is pinned at approval, and part
    // of the cache key.
    let dir = project(
        "cache-pinned",
        json!({"command": "sh", "args": ["server.sh"]}),
    );
    let script = dir.join("server.sh");
    let body = format!("exec '{}' --start-delay-ms 2000\n", fixture_bin().display());
    std::fs::write(&script, &body).unwrap();
    let (row, out) = list_row(&dir);
    assert_eq!(row["status"], "connected", "{out}");
    cache_file(&dir);

    // Changed (and approved again): the old list is not offered while it starts.
    std::fs::write(&script, format!("# changed\n{body}")).unwrap();
    let model = Model::start("cache-pinned", json!({"steps": [{"text": "ok"}]}));
    let out = run_p_now(&dir, &model);
    assert_eq!(out.code, Some(0), "{out}");
    assert_eq!(event(&out, "start")["servers"]["fx"], "starting", "{out}");
    let reqs = model.requests();
    assert!(
        !offered_tools(&reqs[0])
            .iter()
            .any(|t| t.starts_with("mcp__fx__")),
        "the changed server's old tools were offered"
    );
}

#[test]
fn a_server_starts_in_the_era_its_cached_list_was_listed_in() {
    let (dir, record, rec) = project_and_record("cache-era");
    write_config(&dir, fixture_entry(&["--record", &rec], json!({})));
    let model = Model::start(
        "cache-era",
        json!({"steps": [
            {"text": "cold"},
            {"tool_calls": [{"id": "c1", "name": "mcp__fx__echo", "input": {"text": "warm hello"}}]},
            {"text": "done", "expect": {"last_tool_result_contains": "warm hello"}}
        ]}),
    );
    let cold = run_p(&dir, &model);
    assert_eq!(cold.code, Some(0), "{cold}");
    assert_eq!(
        (sent(&record, "server/discover"), initializes(&record)),
        (1, 1),
        "a server never seen is probed"
    );

    // Warm: the cached list says the handshake era, so `initialize` goes first, no probe.
    let warm = run_p(&dir, &model);
    assert_eq!(warm.code, Some(0), "{warm}");
    assert_eq!(event(&warm, "start")["servers"]["fx"], "cached", "{warm}");
    assert_eq!(event(&warm, "tool_result")["is_error"], false, "{warm}");
    assert_eq!(
        (sent(&record, "server/discover"), initializes(&record)),
        (1, 2),
        "the second session sends initialize at once"
    );
}

#[test]
fn a_server_that_left_the_era_of_its_cached_list_is_probed_and_connects() {
    use super::http::spawn_server;
    let port = super::http::free_port();
    let server = |mode: &str| {
        let mut c = Command::new(repo().join(".deps/venv/bin/python"));
        c.arg(repo().join("tests/python/misbehaving_http.py"))
            .args(["--port", &port.to_string(), "--mode", mode]);
        spawn_server(c, port, "READY")
    };
    let dir = project(
        "cache-era-changed",
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    );
    let model = Model::start(
        "cache-era-changed",
        json!({"steps": [
            {"text": "cold"},
            {"tool_calls": [{"id": "c1", "name": "mcp__fx__echo", "input": {"text": "after the update"}}]},
            {"text": "done"}
        ]}),
    );
    // A handshake-era server: its list is cached with its era.
    let old = server("ok");
    let cold = run_p(&dir, &model);
    assert_eq!(cold.code, Some(0), "{cold}");
    assert_eq!(
        event(&cold, "start")["servers"]["fx"],
        "connected",
        "{cold}"
    );
    drop(old);
    // The same URL now speaks only 2026-07-28 and refuses `initialize` (-32601): the
    // remembered era is tried, refused, and the server probed and reached.
    let _new = server("stateless-only");
    let warm = run_p(&dir, &model);
    assert_eq!(warm.code, Some(0), "{warm}");
    let result = event(&warm, "tool_result");
    assert_eq!(result["is_error"], false, "{warm}");
    let (row, out) = list_row(&dir);
    assert_eq!(row["era"], "stateless", "{out}");
}
