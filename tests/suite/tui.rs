//! The interactive TUI end to end: the real `harness9` binary in a tmux pane, driven by keys and
//! read back from the screen, as a person would use it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::{everything, temp_path};

/// The bound for one wait on the screen.
const BOUND: Duration = Duration::from_secs(15);
/// The bound for a whole test: every wait is cut to what is left of it.
const WHOLE: Duration = Duration::from_secs(50);
/// Keys tmux sends by name; any other string is typed literally.
const NAMED: &[&str] = &[
    "Enter", "Escape", "Tab", "BTab", "Up", "Down", "PageUp", "PageDown", "C-c",
];

/// `harness9` running in its own tmux server (a private socket), in a pane 100x30, in `dir`.
struct Tmux {
    session: String,
    dir: PathBuf,
    deadline: Instant,
}

fn tmux(socket: &str, args: &[&str]) -> Output {
    Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run tmux ({e}): run scripts/setup.sh to install it"))
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Tmux {
    /// Starts `harness9 args` in `dir`, with `$EDITOR` = `editor`. The pane's script records the
    /// terminal settings before and after, and the exit code in code.txt (written last, by rename,
    /// so a reader never sees it half done); then it sleeps so the pane stays for inspection.
    fn start(dir: &Path, args: &[&str], editor: Option<&Path>) -> Tmux {
        let session = dir
            .file_name()
            .expect("temp dir name")
            .to_string_lossy()
            .into_owned();
        let log = dir.join("harness9.log");
        let mut env = format!(
            "HARNESS9_LOG={} RUST_LOG=info",
            quote(&log.to_string_lossy())
        );
        if let Some(e) = editor {
            env += &format!(" EDITOR={}", quote(&e.to_string_lossy()));
        }
        let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
        let script = format!(
            "unset VISUAL EDITOR ANTHROPIC_API_KEY OPENAI_API_KEY\n\
             stty -g > before.txt\n\
             {env} {bin} {args}\n\
             code=$?\n\
             stty -g > after.txt\n\
             echo $code > code.tmp && mv code.tmp code.txt\n\
             sleep 600\n",
            bin = quote(env!("CARGO_BIN_EXE_harness9")),
            args = args.join(" "),
        );
        let dir_s = dir.to_string_lossy();
        let out = tmux(
            &session,
            &[
                "new-session",
                "-d",
                "-s",
                &session,
                "-x",
                "100",
                "-y",
                "30",
                "-c",
                &dir_s,
                "sh",
                "-c",
                &script,
            ],
        );
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmux {
            session,
            dir: dir.to_owned(),
            deadline: Instant::now() + WHOLE,
        }
    }

    /// Sends each key group in turn. After Escape it waits 100 ms: crossterm reads ESC followed
    /// closely by a character as Alt+character, so this pause (the only sleep here) keeps them apart.
    fn send_keys(&self, keys: &[&str]) {
        for k in keys {
            let mut args = vec!["send-keys", "-t", &self.session];
            if !NAMED.contains(k) {
                args.push("-l");
            }
            args.push(k);
            let out = tmux(&self.session, &args);
            assert!(
                out.status.success(),
                "tmux send-keys {k:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if *k == "Escape" {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// The pane as text.
    fn screen(&self) -> String {
        let out = tmux(&self.session, &["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen every 50 ms until `pred` holds; fails after `bound` (or the test's
    /// overall deadline) with the last screen.
    fn wait_for(&self, what: &str, bound: Duration, pred: impl Fn(&str) -> bool) -> String {
        let end = (Instant::now() + bound).min(self.deadline);
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() >= end {
                let code = std::fs::read_to_string(self.dir.join("code.txt"));
                panic!(
                    "timed out waiting for {what}; harness9 exit code: {code:?}; screen:\n{screen}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for harness9 to exit; returns its exit code.
    fn exit_code(&self) -> i32 {
        let path = self.dir.join("code.txt");
        let end = (Instant::now() + BOUND).min(self.deadline);
        while !path.exists() {
            assert!(
                Instant::now() < end,
                "harness9 did not exit; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let text = std::fs::read_to_string(&path).expect("code.txt");
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("code.txt {text:?}: {e}"))
    }

    /// Asserts the terminal settings after harness9 equal those before it.
    fn assert_terminal_restored(&self) {
        let read = |f: &str| {
            std::fs::read_to_string(self.dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
        };
        assert_eq!(
            read("before.txt"),
            read("after.txt"),
            "stty settings differ: terminal not restored"
        );
    }

    /// The pid of harness9 (the only child of the pane's shell while it runs).
    fn harness9_pid(&self) -> i32 {
        let out = tmux(
            &self.session,
            &["display-message", "-p", "-t", &self.session, "#{pane_pid}"],
        );
        let shell = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let kids = Command::new("pgrep")
            .args(["-P", &shell])
            .output()
            .expect("pgrep");
        let pid = String::from_utf8_lossy(&kids.stdout).trim().to_owned();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert_eq!(
            comm.trim(),
            "harness9",
            "child {pid:?} of the pane shell {shell} is not harness9"
        );
        pid.parse().expect("harness9 pid")
    }

    /// Types `/mcp`, selects `name` with Tab, and reads its pid from the panel (left open).
    fn pid_in_panel(&self, name: &str) -> u32 {
        self.send_keys(&["/mcp", "Enter"]);
        let mut screen = self.wait_for("the /mcp panel", BOUND, |s| panel_line(s, 0).is_some());
        for _ in 0..8 {
            if selected(&screen).as_deref() == Some(name) {
                break;
            }
            let before = selected(&screen);
            self.send_keys(&["Tab"]);
            screen = self.wait_for("Tab to select the next server", BOUND, |s| {
                selected(s) != before
            });
        }
        let screen = self.wait_for(&format!("{name}'s pid in /mcp"), BOUND, |s| {
            selected(s).as_deref() == Some(name) && panel_pid(s).is_some()
        });
        panel_pid(&screen).expect("pid")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Hangs up the pane: harness9 (if still running) quits on SIGHUP; the sleep goes too.
        let _ = tmux(&self.session, &["kill-server"]);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Line `k` inside the `/mcp` panel (0 = the server tabs), without the left border.
fn panel_line(screen: &str, k: usize) -> Option<&str> {
    let mut lines = screen
        .lines()
        .skip_while(|l| !l.starts_with("┌ MCP servers "));
    lines.next()?;
    lines.nth(k).map(|l| l.trim_start_matches('│'))
}

/// The server whose details the panel shows.
fn selected(screen: &str) -> Option<String> {
    panel_line(screen, 1)?
        .split_whitespace()
        .next()
        .map(str::to_owned)
}

/// `pid N` from the panel's `server ...  pid N` line.
fn panel_pid(screen: &str) -> Option<u32> {
    let line = panel_line(screen, 2)?;
    let digits: String = line
        .split("  pid ")
        .nth(1)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The MCP bar.
fn bar(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.starts_with("[MCP]"))
        .unwrap_or("")
}

/// The panel is closed and the input line is back.
fn at_prompt(screen: &str) -> bool {
    panel_line(screen, 0).is_none() && screen.lines().any(|l| l == ">" || l.starts_with("> "))
}

/// Waits up to 5 s for `pid` to be gone (a zombie counts as gone: it has exited).
fn assert_gone(pid: u32, what: &str) {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return,
            Ok(stat) if stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z')) => return,
            Ok(_) => assert!(
                Instant::now() < end,
                "{what} (pid {pid}) still alive 5 s after harness9 exited"
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pids of processes whose command line contains `marker`.
fn pgrep_f(marker: &str) -> Vec<u32> {
    let out = Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn tmux_required() {
    let ok = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "tmux is not installed: run scripts/setup.sh (the TUI tests drive harness9 in tmux)"
    );
}

/// server-everything as an `.mcp.json` entry.
fn everything_json() -> Value {
    let harness9_actors::TransportSpec::Stdio { command, args, .. } = everything("x").transport
    else {
        unreachable!("server-everything runs over stdio")
    };
    json!({ "command": command, "args": args })
}

/// A fresh temp dir for one test.
fn new_dir(tag: &str) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).expect("create the temp dir");
    dir
}

/// Writes `.mcp.json` with `servers`, pretty-printed.
fn write_servers(dir: &Path, servers: Value) {
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers })).expect("json");
    write_config(dir, &text);
}

/// Replaces `.mcp.json` in one step (write + rename), so the watcher never reads half a file.
fn write_config(dir: &Path, text: &str) {
    let tmp = dir.join(".mcp.json.tmp");
    std::fs::write(&tmp, text).expect("write .mcp.json.tmp");
    std::fs::rename(&tmp, dir.join(".mcp.json")).expect("rename to .mcp.json");
}

#[test]
fn tui_end_to_end_with_the_reference_server() {
    tmux_required();
    let t0 = Instant::now();
    let broken =
        json!({"command": "sh", "args": ["-c", "echo boom: missing dependency >&2; exit 3"]});
    let dir = new_dir("tui-e2e");
    write_servers(
        &dir,
        json!({ "everything": everything_json(), "broken": broken }),
    );
    // The "editor" adds a server `added` (another server-everything) and leaves the rest as is.
    let editor = dir.join("edit.sh");
    let py = "import json, sys\np = sys.argv[1]\ncfg = json.load(open(p))\n\
              cfg['mcpServers']['added'] = dict(cfg['mcpServers']['everything'])\n\
              json.dump(cfg, open(p, 'w'), indent=2)\n";
    std::fs::write(
        &editor,
        format!("#!/bin/sh\nexec python3 - \"$1\" <<'PY'\n{py}PY\n"),
    )
    .expect("write edit.sh");
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&editor, exec).expect("chmod edit.sh");
    let t = Tmux::start(&dir, &[], Some(&editor));

    t.wait_for("the bar: everything connected, broken failed", BOUND, |s| {
        let b = bar(s);
        b.contains("everything ●") && b.contains("tools") && b.contains("broken ✗ failed")
    });

    // The panel opens on `broken` (first by name) with its stderr; Tab shows everything's pid.
    t.send_keys(&["/mcp", "Enter"]);
    t.wait_for("broken's stderr in /mcp", BOUND, |s| {
        selected(s).as_deref() == Some("broken") && s.contains("boom: missing dependency")
    });
    t.send_keys(&["Tab"]);
    let s = t.wait_for("everything's pid", BOUND, |s| {
        selected(s).as_deref() == Some("everything") && panel_pid(s).is_some()
    });
    let pid = panel_pid(&s).expect("pid");
    let first = panel_line(&s, 1).map(str::to_owned);
    t.send_keys(&["j", "j", "j"]);
    t.wait_for("j to scroll the panel", BOUND, |s| {
        panel_line(s, 1).map(str::to_owned) != first
    });
    t.send_keys(&["Escape"]);
    t.wait_for("Esc to close the panel", BOUND, at_prompt);

    t.send_keys(&[
        r#"/call mcp__everything__echo {"message":"hello e2e"}"#,
        "Enter",
    ]);
    t.wait_for("the echo result", BOUND, |s| s.contains("Echo: hello e2e"));

    // Hot reload through $EDITOR: `added` starts, the other two are left alone.
    t.send_keys(&["/mcp", "Enter"]);
    t.wait_for("the /mcp panel", BOUND, |s| panel_line(s, 0).is_some());
    t.send_keys(&["e"]);
    t.wait_for("the bar to show added connected", BOUND, |s| {
        bar(s).contains("added ●")
    });
    t.send_keys(&["Escape"]);
    t.wait_for("the reload report", BOUND, |s| {
        at_prompt(s) && s.contains("reloaded .mcp.json: added added; 2 unchanged")
    });
    assert_eq!(
        t.pid_in_panel("everything"),
        pid,
        "everything was restarted by the reload"
    );
    t.send_keys(&["Escape"]);
    t.wait_for("Esc to close the panel", BOUND, at_prompt);
    let added = t.pid_in_panel("added");
    t.send_keys(&["Escape"]);
    t.wait_for("Esc to close the panel", BOUND, at_prompt);

    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0, "Ctrl+C exit code");
    t.assert_terminal_restored();
    assert_gone(pid, "server everything");
    assert_gone(added, "server added");
    eprintln!(
        "tui_end_to_end_with_the_reference_server: {:?}",
        t0.elapsed()
    );
}

#[test]
fn first_frame_is_drawn_while_a_server_takes_20_s_to_start() {
    tmux_required();
    let t0 = Instant::now();
    let dir = new_dir("tui-slow");
    // The dir in the command line makes the server findable with pgrep -f.
    let marker = format!("sleep 20; : {}", dir.display());
    let slow = json!({"command": "sh", "args": ["-c", marker], "startupTimeoutSec": 30});
    write_servers(&dir, json!({ "slow": slow }));
    let config = dir.join(".mcp.json");
    let t = Tmux::start(&dir, &["--config", &config.to_string_lossy()], None);

    // Seen within BOUND (15 s) of the start, so before the server could have answered (20 s).
    t.wait_for("the bar with slow starting", BOUND, |s| {
        bar(s).contains("slow ○ starting")
    });
    let log = std::fs::read_to_string(dir.join("harness9.log")).expect("the log file");
    let line = log
        .lines()
        .find(|l| l.contains("first frame drawn"))
        .unwrap_or_else(|| panic!("no first-frame line in the log:\n{log}"));
    let ms: f64 = line
        .split("elapsed_ms=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no elapsed_ms in {line:?}"));
    eprintln!("first frame: {ms} ms");

    let servers = pgrep_f(&marker);
    assert!(!servers.is_empty(), "the slow server's sh is not running");
    // SAFETY: a plain signal to the harness9 process this test started.
    assert_eq!(
        unsafe { libc::kill(t.harness9_pid(), libc::SIGTERM) },
        0,
        "kill -TERM harness9"
    );
    assert_eq!(t.exit_code(), 130, "SIGTERM exit code");
    t.assert_terminal_restored();
    for pid in servers {
        let end = Instant::now() + Duration::from_secs(5);
        while super::common::group_alive(pid as i32) {
            assert!(
                Instant::now() < end,
                "the slow server's group {pid} (sh + sleep 20) outlived harness9"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    eprintln!(
        "first_frame_is_drawn_while_a_server_takes_20_s_to_start: {:?}",
        t0.elapsed()
    );
}

#[test]
fn an_invalid_edit_keeps_the_running_servers() {
    tmux_required();
    let t0 = Instant::now();
    let dir = new_dir("tui-invalid");
    write_servers(&dir, json!({ "everything": everything_json() }));
    let t = Tmux::start(&dir, &[], None);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    let pid = t.pid_in_panel("everything");
    t.send_keys(&["Escape"]);
    t.wait_for("Esc to close the panel", BOUND, at_prompt);

    // A trailing comma: the error is at line 4, where the `}` follows it.
    let entry = everything_json().to_string();
    write_config(
        &dir,
        &format!("{{\n  \"mcpServers\": {{\n    \"everything\": {entry},\n  }}\n}}\n"),
    );
    t.wait_for("the parse error with file:line:", BOUND, |s| {
        s.contains(".mcp.json:4:")
    });
    assert!(
        bar(&t.screen()).contains("everything ●"),
        "everything left the bar after an invalid edit:\n{}",
        t.screen()
    );
    assert_eq!(
        t.pid_in_panel("everything"),
        pid,
        "an invalid edit restarted everything"
    );
    t.send_keys(&["Escape"]);
    t.wait_for("Esc to close the panel", BOUND, at_prompt);

    write_config(
        &dir,
        &json!({ "mcpServers": { "other": everything_json() } }).to_string(),
    );
    t.wait_for("the bar with other and without everything", BOUND, |s| {
        bar(s).contains("other ●") && !bar(s).contains("everything")
    });
    assert_gone(pid, "the removed server everything");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0, "Ctrl+C exit code");
    t.assert_terminal_restored();
    eprintln!(
        "an_invalid_edit_keeps_the_running_servers: {:?}",
        t0.elapsed()
    );
}
