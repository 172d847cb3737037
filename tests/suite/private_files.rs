//! Files harness9 writes where a server can write too (issue 20, point 1 and 11): a symlink a
//! server plants at the name harness9 would use is never written through; cut results and
//! saved blobs live in a private (0700, unpredictable, exclusive) directory of the session,
//! as 0600 files, bounded in total and gone when the session ends; the trace and the log are
//! 0600. Each runs the real binary (`run -p` with the scripted model and the fixture server,
//! or the TUI in tmux).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::*;
use super::engine::Model;

const LIMIT: Duration = Duration::from_secs(60);

/// A project dir with `.mcp.json` (the fixture server with `args` as `f`), `home/`, `tmp/`
/// (harness9's TMPDIR) and `outside.txt` ("keep", 0644): the file a planted symlink aims at.
fn setup(tag: &str, args: &[&str]) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let f = json!({"command": fixture_bin(), "args": args});
    let config = json!({"mcpServers": {"f": f}}).to_string();
    std::fs::write(dir.join(".mcp.json"), config).unwrap();
    std::fs::write(dir.join("outside.txt"), "keep").unwrap();
    std::fs::set_permissions(
        dir.join("outside.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    dir
}

/// `harness9` in `dir` talking Anthropic to `model`, TMPDIR = `dir/tmp`, HOME = `dir/home`.
fn harness9(dir: &Path, model: &Model) -> Command {
    let mut c = harness9_in(dir);
    without_user_env(&mut c);
    let [(k1, v1), (k2, v2)] = model.env();
    c.env("HOME", dir.join("home"))
        .env("TMPDIR", dir.join("tmp"))
        .env(k1, v1)
        .env(k2, v2);
    c
}

fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"id": id, "name": name, "input": input})
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Asserts the symlink's target was not touched: still "keep", still 0644.
fn assert_outside_untouched(dir: &Path) {
    let outside = dir.join("outside.txt");
    let text = std::fs::read_to_string(&outside).unwrap();
    assert_eq!(
        text.get(..20).unwrap_or(&text),
        "keep",
        "harness9 wrote through the planted symlink"
    );
    assert_eq!(
        mode(&outside),
        0o644,
        "harness9 chmodded the symlink's target"
    );
}

/// What is left under `dir/tmp` that harness9 made (`harness9-*`).
fn left_in_tmp(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("tmp"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("harness9-") && n != "harness9-results")
        .collect()
}

/// A running `harness9 run -p ... --json`: its stdout events as they come; killed on drop.
struct Live {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    deadline: Instant,
}

impl Live {
    fn start(mut cmd: Command, args: &[&str]) -> Live {
        let mut child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn harness9");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Live {
            child,
            lines,
            seen: Vec::new(),
            deadline: Instant::now() + LIMIT,
        }
    }

    /// The next event named `name` (with `id` when not empty).
    fn event(&mut self, name: &str, id: &str) -> Value {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    let v: Value = serde_json::from_str(&l).unwrap_or(Value::Null);
                    if v["event"] == name && (id.is_empty() || v["id"] == id) {
                        return v;
                    }
                }
                Err(_) => panic!("no {name} event {id}; stdout:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits for the exit; its code.
    fn wait(mut self) -> Option<i32> {
        let end = self.deadline;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            assert!(Instant::now() < end, "harness9 did not exit");
            // The stdout channel closes at exit: wait on it rather than sleep.
            let _ = self.lines.recv_timeout(Duration::from_millis(100));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server plants a symlink at the spill name used until now
/// (`$TMPDIR/harness9-results/<pid>-0-<tool>.txt`), then returns an over-budget result: the
/// symlink's target stays as it was; the result is saved as a 0600 file in a 0700 directory of
/// the session, which the model reads with read_file, and which is gone after the session.
#[test]
fn a_planted_symlink_at_the_spill_path_is_not_followed() {
    let dir = setup("spill-link", &[]);
    let outside = dir.join("outside.txt").display().to_string();
    let link = format!(
        "{}/harness9-results/{{ppid}}-0-mcp__f__big.txt",
        dir.join("tmp").display()
    );
    let model = Model::start(
        "spill-link",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__f__symlink", json!({"link": link, "target": outside}))]},
            {"tool_calls": [call("t2", "mcp__f__big", json!({"bytes": 300_000}))],
             "expect": {"last_tool_result_contains": "planted"}},
            // Held a moment: the test looks at the spill file while the session runs.
            {"text": "done", "delay_ms": 1500,
             "expect": {"last_tool_result_contains": "output cut"}}
        ]}),
    );
    let mut run = Live::start(
        harness9(&dir, &model),
        &["run", "-p", "go", "--json", "--allowed-tools", "mcp__f__*"],
    );
    let result = run.event("tool_result", "t2");
    assert_outside_untouched(&dir);
    let spilled = PathBuf::from(result["spilled_to"].as_str().expect("spilled_to"));
    assert_eq!(result["output_bytes"], 300_000, "{result}");
    assert_eq!(std::fs::metadata(&spilled).unwrap().len(), 300_000);
    assert_eq!(mode(&spilled), 0o600, "{}", spilled.display());
    let session_dir = spilled.parent().unwrap();
    assert_eq!(mode(session_dir), 0o700, "{}", session_dir.display());
    assert!(
        session_dir.starts_with(dir.join("tmp")),
        "{}",
        spilled.display()
    );
    assert_eq!(run.wait(), Some(0));
    assert_outside_untouched(&dir);
    assert!(!spilled.exists(), "the spill file outlived the session");
    assert_eq!(left_in_tmp(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server plants a symlink at the predictable temp name the blob helper used
/// (`<file>.<pid>.tmp` beside `$TMPDIR/harness9-results/resource-<pid>-0-<tail>`): a blob read
/// through read_mcp_resource never writes or chmods its target.
#[test]
fn a_planted_symlink_at_the_blob_temp_name_is_not_followed() {
    let dir = setup("blob-link", &["--blob-resource", "3000"]);
    let outside = dir.join("outside.txt").display().to_string();
    let base = format!(
        "{}/harness9-results/resource-{{ppid}}-0-big",
        dir.join("tmp").display()
    );
    let model = Model::start(
        "blob-link",
        json!({"steps": [
            {"tool_calls": [
                call("t1", "mcp__f__symlink", json!({"link": format!("{base}.{{ppid}}.tmp"), "target": outside}))]},
            {"tool_calls": [call("t2", "read_mcp_resource", json!({"server": "f", "uri": "blob://big"}))],
             "expect": {"last_tool_result_contains": "planted"}},
            {"text": "done", "delay_ms": 1500,
             "expect": {"last_tool_result_contains": "Saved whole to"}}
        ]}),
    );
    let mut run = Live::start(
        harness9(&dir, &model),
        &["run", "-p", "go", "--json", "--allowed-tools", "mcp__f__*"],
    );
    let result = run.event("tool_result", "t2");
    assert_outside_untouched(&dir);
    let output = result["output"].as_str().unwrap_or_default();
    let saved = output
        .split("Saved whole to ")
        .nth(1)
        .and_then(|s| s.strip_suffix('.'))
        .unwrap_or_else(|| panic!("no saved path in {output}"));
    let saved = PathBuf::from(saved);
    assert_eq!(std::fs::metadata(&saved).unwrap().len(), 3000);
    assert_eq!(mode(&saved), 0o600);
    assert_eq!(mode(saved.parent().unwrap()), 0o700);
    assert_eq!(run.wait(), Some(0));
    assert_outside_untouched(&dir);
    assert!(!saved.exists(), "the saved blob outlived the session");
    assert_eq!(left_in_tmp(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `HARNESS9_SPILL_MAX=400K`, the first 300 KB result is saved, the second is cut without
/// a file and the model is told why; the session directory is gone after an interrupted run
/// too (SIGTERM).
#[test]
fn spills_are_capped_per_session_and_removed_even_when_interrupted() {
    let dir = setup("spill-cap", &[]);
    let model = Model::start(
        "spill-cap",
        json!({"steps": [
            {"tool_calls": [call("t1", "mcp__f__big", json!({"bytes": 300_000}))]},
            {"tool_calls": [call("t2", "mcp__f__big", json!({"bytes": 300_000}))],
             "expect": {"last_tool_result_contains": "output cut"}},
            // Long enough for the test to send SIGTERM first.
            {"text": "done", "delay_ms": 20_000,
             "expect": {"last_tool_result_contains": "HARNESS9_SPILL_MAX"}}
        ]}),
    );
    let mut cmd = harness9(&dir, &model);
    cmd.env("HARNESS9_SPILL_MAX", "400K");
    let mut run = Live::start(
        cmd,
        &["run", "-p", "go", "--json", "--allowed-tools", "mcp__f__*"],
    );
    let first = run.event("tool_result", "t1");
    let spilled = PathBuf::from(first["spilled_to"].as_str().expect("spilled_to"));
    assert!(spilled.exists());
    let second = run.event("tool_result", "t2");
    assert!(second["spilled_to"].is_null(), "{second}");
    assert_eq!(second["output_bytes"], 300_000, "{second}");
    // The model is told the result was cut and why nothing was saved.
    assert!(
        poll_until(LIMIT, Duration::from_millis(20), || model.requests().len()
            == 3),
        "no third model request"
    );
    let told = model.requests()[2]["body"]["messages"].to_string();
    assert!(
        told.contains("output cut") && told.contains("HARNESS9_SPILL_MAX"),
        "{}",
        &told[told.len().saturating_sub(600)..]
    );
    let session_dir = spilled.parent().unwrap().to_owned();
    let total: u64 = std::fs::read_dir(&session_dir)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    assert!(total <= 400 * 1024, "{total} bytes saved");
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGTERM) };
    assert_eq!(run.wait(), Some(130));
    assert!(!session_dir.exists(), "the session dir outlived SIGTERM");
    assert_eq!(left_in_tmp(&dir), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--trace FILE` is created 0600; a symlink at that path is refused with a clear error (the
/// wire log would go wherever it points), its target untouched.
#[test]
fn the_trace_file_is_private_and_never_written_through_a_symlink() {
    let dir = setup("trace-mode", &[]);
    let model = Model::start(
        "trace-mode",
        json!({"steps": [{"text": "done"}, {"text": "done"}]}),
    );
    let trace = dir.join("trace.jsonl");
    let trace_s = trace.display().to_string();
    let out = output_within(
        {
            let mut c = harness9(&dir, &model);
            c.args([
                "--trace",
                &trace_s,
                "run",
                "-p",
                "go",
                "--allowed-tools",
                "mcp__f__*",
            ]);
            c
        },
        None,
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&trace), 0o600);
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);

    let linked = dir.join("linked.jsonl");
    std::os::unix::fs::symlink(dir.join("outside.txt"), &linked).unwrap();
    let linked_s = linked.display().to_string();
    let out = output_within(
        {
            let mut c = harness9(&dir, &model);
            c.args([
                "--trace",
                &linked_s,
                "run",
                "-p",
                "go",
                "--allowed-tools",
                "mcp__f__*",
            ]);
            c
        },
        None,
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("symlink") && err.contains("linked.jsonl"),
        "{err}"
    );
    assert_outside_untouched(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The TUI's log file is 0600 (it was 0644).
#[test]
fn the_tui_log_file_is_private() {
    super::tui::tmux_required();
    let dir = super::tui::project("log-mode", |_| json!({}));
    let tui = super::tui::Tmux::start_with(&dir, &[], None, &[]);
    let log = dir.join("harness9.log");
    assert!(
        poll_until(LIMIT, Duration::from_millis(50), || log.exists()),
        "no log file; screen:\n{}",
        tui.screen()
    );
    assert_eq!(mode(&log), 0o600);
    tui.wait_for("the welcome", LIMIT, |s| s.contains("Type /help"));
    tui.send_keys(&["C-c"]);
    assert_eq!(tui.exit_code(), 0);
    assert_eq!(mode(&log), 0o600);
}
