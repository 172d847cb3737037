//! The interactive TUI end to end: the real `harness9` binary in a tmux pane, driven by keys and
//! read back from the screen, as a person would use it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common::{
    everything, fixture, fixture_bin, group_alive, poll_until, stdio_json, temp_path, tool_output,
    wait_within,
};

/// The bound for one wait on the screen.
pub(super) const BOUND: Duration = Duration::from_secs(15);
/// The bound for a whole test: every wait on the screen is cut to what is left of it.
const WHOLE: Duration = Duration::from_secs(50);
/// Keys tmux sends by name; any other string is typed literally.
const NAMED: &[&str] = &[
    "Enter", "M-Enter", "Escape", "Tab", "BTab", "Up", "Down", "C-c", "C-o", "C-j", "C-u",
];

/// `harness9` in a 100x30 pane of its own tmux server, on a private socket in `dir` (`-S`, not
/// `-L`: a socket under /tmp/tmux-UID would outlive the server; this one goes with the dir).
pub(super) struct Tmux {
    session: String,
    dir: PathBuf,
    deadline: Instant,
}

fn tmux(dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new("tmux");
    c.arg("-S")
        .arg(dir.join("tmux.sock"))
        .args(["-f", "/dev/null"])
        .args(args);
    tool_output(c)
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Tmux {
    /// Starts `harness9 args` in `dir` with `$EDITOR` = `editor`. The pane's script records the
    /// terminal settings before and after, then the exit code in code.txt (last, and by rename, so
    /// a reader never sees half of it); then it sleeps so the pane stays for inspection.
    fn start(dir: &Path, args: &[&str], editor: Option<&Path>) -> Tmux {
        Self::start_with(dir, args, editor, &[])
    }

    /// [`Tmux::start`] with more environment for harness9 (e.g. a model's URL and key). The
    /// project's `.mcp.json` is trusted (`--approve-project`, approvals in the dir) unless `vars`
    /// sets `HARNESS9_APPROVALS`: then the test is about trust itself.
    pub(super) fn start_with(
        dir: &Path,
        args: &[&str],
        editor: Option<&Path>,
        vars: &[(&str, &str)],
    ) -> Tmux {
        let session = dir
            .file_name()
            .expect("temp dir name")
            .to_string_lossy()
            .into_owned();
        let mut env = format!(
            "HARNESS9_LOG={} HARNESS9_HISTORY={} HARNESS9_SESSIONS={} HARNESS9_TOOL_CACHE={} RUST_LOG=info HARNESS9_DEBUG_PANIC=1",
            quote(&dir.join("harness9.log").to_string_lossy()),
            quote(&dir.join("history.jsonl").to_string_lossy()),
            quote(&dir.join("sessions").to_string_lossy()),
            quote(&dir.join("tool-cache").to_string_lossy())
        );
        if let Some(e) = editor {
            env += &format!(" EDITOR={}", quote(&e.to_string_lossy()));
        }
        for (k, v) in vars {
            env += &format!(" {k}={}", quote(v));
        }
        let mut args: Vec<String> = args.iter().map(|a| quote(a)).collect();
        if !vars.iter().any(|(k, _)| *k == "HARNESS9_APPROVALS") {
            let approvals = dir.join("approvals.json");
            env += &format!(
                " HARNESS9_APPROVALS={}",
                quote(&approvals.to_string_lossy())
            );
            args.insert(0, "--approve-project".to_owned());
        }
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
        let mut new: Vec<&str> = "new-session -d -x 100 -y 30 -s".split(' ').collect();
        new.extend([session.as_str(), "-c", &dir_s, "sh", "-c", &script]);
        let out = tmux(dir, &new);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tmux new-session failed: {err}");
        Tmux {
            session,
            dir: dir.to_owned(),
            deadline: Instant::now() + WHOLE,
        }
    }

    /// Quits this session's harness9 and tmux, then starts harness9 again in the same
    /// directory (a new session of the same project) with `args` and `vars`.
    pub(super) fn restart(self, args: &[&str], vars: &[(&str, &str)]) -> Tmux {
        let _ = tmux(&self.dir, &["kill-server"]);
        for f in ["code.txt", "before.txt", "after.txt"] {
            let _ = std::fs::remove_file(self.dir.join(f));
        }
        let dir = self.dir.clone();
        // The directory stays: this value's drop would remove it.
        std::mem::forget(self);
        Tmux::start_with(&dir, args, None, vars)
    }

    /// [`Tmux::start`] talking Anthropic to the scripted `model`.
    pub(super) fn with_model(dir: &Path, model: &super::engine::Model) -> Tmux {
        Self::start_with(dir, &[], None, &model.env())
    }

    /// [`Tmux::with_model`] with the model's name set: the shipped settings know
    /// claude-sonnet-4-5's window (200k).
    fn with_sonnet(dir: &Path, model: &super::engine::Model) -> Tmux {
        Self::with_sonnet_args(dir, model, &[])
    }

    /// [`Tmux::with_sonnet`] with command-line `args`.
    fn with_sonnet_args(dir: &Path, model: &super::engine::Model, args: &[&str]) -> Tmux {
        let [key, url] = model.env();
        let vars = [key, url, ("HARNESS9_MODEL", "claude-sonnet-4-5")];
        Self::start_with(dir, args, None, &vars)
    }

    /// Sends each key group in turn. After Escape it waits 100 ms, the one sleep here: crossterm
    /// reads ESC closely followed by a character as Alt+character.
    pub(super) fn send_keys(&self, keys: &[&str]) {
        for k in keys {
            let mut args = vec!["send-keys", "-t", &self.session];
            if !NAMED.contains(k) {
                args.push("-l");
            }
            args.push(k);
            let out = tmux(&self.dir, &args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "tmux send-keys {k:?}: {err}");
            if *k == "Escape" {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// The pane as text.
    pub(super) fn screen(&self) -> String {
        let out = tmux(&self.dir, &["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen every 50 ms until `pred` holds; after `bound` (or the test's deadline)
    /// fails with the last screen.
    pub(super) fn wait_for(
        &self,
        what: &str,
        bound: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let end = (Instant::now() + bound).min(self.deadline);
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() >= end {
                let code = std::fs::read_to_string(self.dir.join("code.txt"));
                let code = code.map_or("none, still running".into(), |c| c.trim().to_owned());
                panic!(
                    "timed out waiting for {what} (harness9 exit code: {code}); screen:\n{screen}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for harness9 to exit; its exit code.
    pub(super) fn exit_code(&self) -> i32 {
        let path = self.dir.join("code.txt");
        if !wait_until(BOUND, || path.exists()) {
            panic!(
                "harness9 did not exit within {BOUND:?}; screen:\n{}",
                self.screen()
            );
        }
        let text = std::fs::read_to_string(&path).expect("read code.txt");
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("code.txt {text:?}: {e}"))
    }

    /// Asserts the terminal settings after harness9 are those before it.
    fn assert_terminal_restored(&self) {
        let read = |f: &str| {
            std::fs::read_to_string(self.dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"))
        };
        assert_eq!(
            read("before.txt"),
            read("after.txt"),
            "stty -g differs: terminal not restored"
        );
    }

    /// The pid of harness9: the pane shell's only child while it runs.
    fn harness9_pid(&self) -> i32 {
        let out = tmux(
            &self.dir,
            &["display-message", "-p", "-t", &self.session, "#{pane_pid}"],
        );
        let shell = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let kids = tool_output({
            let mut c = Command::new("pgrep");
            c.args(["-P", &shell]);
            c
        });
        let pid = String::from_utf8_lossy(&kids.stdout).trim().to_owned();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert_eq!(
            comm.trim(),
            "harness9",
            "child {pid:?} of the pane shell {shell}"
        );
        pid.parse().expect("harness9 pid")
    }

    /// Types `/mcp` Enter (the overview), then Enter on its selection, and waits for that
    /// server's view.
    pub(super) fn open_panel(&self) -> String {
        self.send_keys(&["/mcp", "Enter"]);
        self.wait_for("the /mcp overview", BOUND, |s| s.contains("┌ MCP overview"));
        self.send_keys(&["Enter"]);
        self.wait_for("the /mcp panel", BOUND, |s| panel_line(s, 0).is_some())
    }

    /// Presses q and waits for the panel to close and the input line to come back.
    pub(super) fn close_panel(&self) {
        let s = self.screen();
        if panel_line(&s, 0).is_none() && !s.contains("┌ MCP overview") {
            return; // already closed: a `q` would go into the input
        }
        self.send_keys(&["q"]);
        self.wait_for("q to close the panel", BOUND, |s| {
            panel_line(s, 0).is_none()
                && !s.contains("┌ MCP overview")
                && s.lines().any(|l| l == ">" || l.starts_with("> "))
        });
    }

    /// Opens `/mcp`, selects `name` with Tab, reads its pid and closes the panel.
    fn pid_in_panel(&self, name: &str) -> u32 {
        let mut screen = self.open_panel();
        for _ in 0..8 {
            let now = selected(&screen);
            if now.as_deref() == Some(name) {
                break;
            }
            self.send_keys(&["Tab"]);
            screen = self.wait_for("Tab to select the next server", BOUND, |s| {
                selected(s) != now
            });
        }
        let screen = self.wait_for(&format!("{name}'s pid in /mcp"), BOUND, |s| {
            selected(s).as_deref() == Some(name) && panel_pid(s).is_some()
        });
        self.close_panel();
        panel_pid(&screen).expect("pid")
    }
}

impl Tmux {
    /// Ends this tmux server (and harness9, if still running) but keeps the dir, for a second
    /// session in the same project.
    pub(super) fn end_keeping_dir(self) {
        let _ = tmux(&self.dir, &["kill-server"]);
        // The old server may still be exiting: a new session on the same socket could reach
        // it ("server exited unexpectedly"). Without the socket file, the next tmux starts a
        // server of its own.
        let _ = std::fs::remove_file(self.dir.join("tmux.sock"));
        let _ = std::fs::remove_file(self.dir.join("code.txt"));
        std::mem::forget(self);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Hangs up the pane: harness9 (if still running) quits on SIGHUP, the sleep goes too.
        let _ = tmux(&self.dir, &["kill-server"]);
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

/// The server whose details the panel shows (its status line opens the body).
fn selected(screen: &str) -> Option<String> {
    panel_line(screen, 1)?
        .split_whitespace()
        .next()
        .map(str::to_owned)
}

/// `N` from the panel's `server <name> <version>  pid N` line.
fn panel_pid(screen: &str) -> Option<u32> {
    let after = panel_line(screen, 2)?.split("  pid ").nth(1)?;
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// The MCP bar.
/// Whether the question on screen takes keys: not marked new any more (a new one ignores keys
/// until the user pauses).
pub(super) fn settled(screen: &str) -> bool {
    !screen.contains("new question ·") && !screen.contains("NEW ·")
}

pub(super) fn bar(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.starts_with("[MCP]"))
        .unwrap_or("")
}

/// Polls `done` every 50 ms for up to `bound`; whether it came true.
fn wait_until(bound: Duration, done: impl Fn() -> bool) -> bool {
    poll_until(bound, Duration::from_millis(50), done)
}

/// Asserts `pid` is gone within 5 s (a zombie counts as gone: it has exited).
fn assert_gone(pid: u32, what: &str) {
    let gone = wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| {
            st.rsplit(") ").next().is_some_and(|s| s.starts_with('Z'))
        })
    });
    assert!(
        gone,
        "{what} (pid {pid}) still alive 5 s after it should have stopped"
    );
}

pub(super) fn tmux_required() {
    // `tmux -V` prints and exits; spawn errors (not installed) are the failure looked for.
    let ok = Command::new("tmux")
        .arg("-V")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|mut c| wait_within(&mut c, Duration::from_secs(20)))
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "tmux is not installed: run scripts/setup.sh (the TUI tests drive harness9 in tmux)"
    );
}

/// server-everything as an `.mcp.json` entry.
fn everything_json() -> Value {
    stdio_json(everything("x"))
}

/// A fresh temp dir holding `.mcp.json` with `servers`, written by `servers(dir)`.
pub(super) fn project(tag: &str, servers: impl FnOnce(&Path) -> Value) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).expect("create the temp dir");
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers(&dir) })).expect("json");
    write_config(&dir, &text);
    dir
}

/// Writes an executable script that edits the `.mcp.json` given as its argument, as an editor
/// would: it adds server `add` as a copy of server `like`, and saves by write-then-rename.
fn config_editor(script: &Path, add: &str, like: &str) {
    let py = format!(
        "import json, os, sys\ncfg = json.load(open(sys.argv[1]))\n\
         cfg['mcpServers']['{add}'] = dict(cfg['mcpServers']['{like}'])\n\
         json.dump(cfg, open(sys.argv[1] + '.tmp', 'w'), indent=2)\n\
         os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
    );
    let text = format!("#!/bin/sh\nexec python3 - \"$1\" <<'PY'\n{py}PY\n");
    std::fs::write(script, text).unwrap_or_else(|e| panic!("write {}: {e}", script.display()));
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(script, exec).expect("chmod the editor script");
}

/// Replaces `.mcp.json` in one step (write, then rename), so the watcher never reads half a file.
pub(super) fn write_config(dir: &Path, text: &str) {
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
    let dir = project(
        "tui-e2e",
        |_| json!({ "everything": everything_json(), "broken": broken }),
    );
    // The "editor" adds `added` (another server-everything) and leaves the other two as they are.
    let editor = dir.join("edit.sh");
    config_editor(&editor, "added", "everything");
    let t = Tmux::start(&dir, &[], Some(&editor));

    t.wait_for("the bar: everything connected, broken failed", BOUND, |s| {
        let b = bar(s);
        b.contains("everything ●") && b.contains("tools") && b.contains("broken ✗ failed")
    });

    // The overview opens on `broken` (first by name, failed) with its error; Enter opens its
    // view with its stderr; Tab shows everything's pid.
    t.send_keys(&["/mcp", "Enter"]);
    t.wait_for("broken's error in the overview", BOUND, |s| {
        s.contains("┌ MCP overview") && s.contains("broken") && s.contains("✗ failed")
    });
    t.send_keys(&["Enter"]);
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
    t.close_panel();

    t.send_keys(&[
        r#"/call mcp__everything__echo {"message":"hello e2e"}"#,
        "Enter",
    ]);
    t.wait_for("the echo result", BOUND, |s| s.contains("Echo: hello e2e"));

    // Hot reload through $EDITOR: `added` starts; the other two are left alone.
    t.open_panel();
    t.send_keys(&["e"]);
    t.wait_for("the bar to show added connected", BOUND, |s| {
        bar(s).contains("added ●")
    });
    t.close_panel();
    t.wait_for("the reload report", BOUND, |s| {
        s.contains("reloaded .mcp.json: added added; 2 unchanged")
    });
    assert_eq!(
        t.pid_in_panel("everything"),
        pid,
        "the reload restarted everything"
    );
    let added = t.pid_in_panel("added");

    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0, "exit code after Ctrl+C");
    t.assert_terminal_restored();
    // What was typed is in the history file for the next session.
    let history = std::fs::read_to_string(dir.join("history.jsonl")).unwrap_or_default();
    assert!(
        history.contains(r#""/call mcp__everything__echo {\"message\":\"hello e2e\"}""#),
        "{history}"
    );
    assert_gone(pid, "server everything");
    assert_gone(added, "server added");
    eprintln!(
        "tui_end_to_end_with_the_reference_server: {:?}",
        t0.elapsed()
    );
}

/// The first frame is drawn before a slow server connects, by the order of events: server
/// `slow` cannot answer until the test opens its gate (a file), which it does only once the
/// screen shows `slow` starting; the log then has `first frame drawn` before `slow` connected.
/// Server `stuck` never starts (20 s): SIGTERM ends harness9 with 130 and its process group.
#[test]
fn first_frame_is_drawn_before_a_slow_server_connects() {
    tmux_required();
    let t0 = Instant::now();
    // The temp dir in its command line makes the server findable with pgrep -f.
    let marker = |dir: &Path| format!("sleep 20; : {}", dir.display());
    let gate = |dir: &Path| dir.join("gate");
    let dir = project("tui-slow", |dir| {
        let slow = format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; exec '{}'",
            gate(dir).display(),
            fixture_bin().display()
        );
        json!({
            "slow": {"command": "sh", "args": ["-c", slow], "startupTimeoutSec": 60},
            "stuck": {"command": "sh", "args": ["-c", marker(dir)], "startupTimeoutSec": 30},
        })
    });
    let config = dir.join(".mcp.json");
    let t = Tmux::start(&dir, &["--config", &config.to_string_lossy()], None);

    // The frame shows while `slow` cannot have connected (its gate is closed).
    t.wait_for("the bar with slow starting", BOUND, |s| {
        bar(s).contains("slow ○ starting")
    });
    let log_path = dir.join("harness9.log");
    let read_log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let is_first_frame = |l: &str| l.contains("first frame drawn");
    let is_slow_connected = |l: &str| l.contains("connected") && l.contains("server=slow");
    let log = read_log();
    assert!(
        log.lines().any(is_first_frame),
        "no `first frame drawn`:\n{log}"
    );
    assert!(
        !log.lines().any(is_slow_connected),
        "slow connected early:\n{log}"
    );
    std::fs::write(gate(&dir), b"").expect("open the gate");
    t.wait_for("slow connected", BOUND, |s| bar(s).contains("slow ●"));
    // The connect is logged once it happened; wait for the line (bounded), then compare.
    assert!(
        poll_until(BOUND, Duration::from_millis(50), || read_log()
            .lines()
            .any(is_slow_connected)),
        "no `connected` line for slow:\n{}",
        read_log()
    );
    let log = read_log();
    let lines: Vec<&str> = log.lines().collect();
    let frame = lines.iter().position(|l| is_first_frame(l));
    let connected = lines.iter().position(|l| is_slow_connected(l));
    assert!(
        matches!((frame, connected), (Some(f), Some(c)) if f < c),
        "first frame {frame:?} not before slow connected {connected:?}:\n{log}"
    );

    let out = tool_output({
        let mut c = Command::new("pgrep");
        c.args(["-f", &marker(&dir)]);
        c
    });
    let servers: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    assert!(!servers.is_empty(), "the stuck server is not running");
    // SAFETY: a plain signal to the harness9 this test started.
    assert_eq!(
        unsafe { libc::kill(t.harness9_pid(), libc::SIGTERM) },
        0,
        "kill -TERM harness9"
    );
    assert_eq!(t.exit_code(), 130, "exit code after SIGTERM");
    t.assert_terminal_restored();
    for pgid in servers {
        // The server runs in its own process group: sh and its `sleep 20`.
        let gone = wait_until(Duration::from_secs(5), || !group_alive(pgid));
        assert!(
            gone,
            "the stuck server's process group {pgid} outlived harness9 by 5 s"
        );
    }
    eprintln!(
        "first_frame_is_drawn_before_a_slow_server_connects: {:?}",
        t0.elapsed()
    );
}

#[test]
fn an_invalid_edit_keeps_the_running_servers() {
    tmux_required();
    let t0 = Instant::now();
    let dir = project(
        "tui-invalid",
        |_| json!({ "everything": everything_json() }),
    );
    // No $EDITOR: `e` hands the file to the system opener, here a stand-in `xdg-open` on PATH
    // that adds a server the way a desktop editor would, behind harness9's back.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("create bin");
    config_editor(&bin.join("xdg-open"), "opened", "other");
    // The input history of an earlier session: Up brings it back.
    std::fs::write(
        dir.join("history.jsonl"),
        "\"/help\"\n\"/call earlier one\"\n",
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // A desktop session: the opener can show the file.
    let t = Tmux::start_with(&dir, &[], None, &[("PATH", &path), ("DISPLAY", ":99")]);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    t.send_keys(&["Up"]);
    t.wait_for("the last input of the earlier session", BOUND, |s| {
        s.lines().any(|l| l == "> /call earlier one")
    });
    t.send_keys(&["C-u"]);
    let pid = t.pid_in_panel("everything");

    // A trailing comma: the error is on line 4, at the `}` after it.
    let entry = everything_json().to_string();
    write_config(
        &dir,
        &format!("{{\n  \"mcpServers\": {{\n    \"everything\": {entry},\n  }}\n}}\n"),
    );
    let s = t.wait_for("the parse error as file:line:column", BOUND, |s| {
        s.contains(".mcp.json:4:")
    });
    assert!(
        bar(&s).contains("everything ●"),
        "everything left the bar after an invalid edit:\n{s}"
    );
    assert_eq!(
        t.pid_in_panel("everything"),
        pid,
        "an invalid edit restarted everything"
    );

    write_config(
        &dir,
        &json!({ "mcpServers": { "other": everything_json() } }).to_string(),
    );
    t.wait_for("the bar with other and without everything", BOUND, |s| {
        bar(s).contains("other ●") && !bar(s).contains("everything")
    });
    assert_gone(pid, "the removed server everything");

    t.open_panel();
    t.send_keys(&["e"]);
    t.wait_for("the opener's edit picked up by the watcher", BOUND, |s| {
        bar(s).contains("opened ●") && bar(s).contains("other ●")
    });
    t.close_panel();
    t.wait_for("the notice naming the opener", BOUND, |s| {
        s.contains("with xdg-open")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0, "exit code after Ctrl+C");
    t.assert_terminal_restored();
    eprintln!(
        "an_invalid_edit_keeps_the_running_servers: {:?}",
        t0.elapsed()
    );
}

#[test]
fn a_panic_restores_the_terminal_and_kills_every_server() {
    tmux_required();
    let dir = project("tui-panic", |_| json!({ "everything": everything_json() }));
    let t = Tmux::start(&dir, &[], None);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    let pid = t.pid_in_panel("everything");
    t.close_panel();
    // `/panic` exists only with HARNESS9_DEBUG_PANIC=1: it panics inside the Tui actor.
    t.send_keys(&["/panic", "Enter"]);
    assert_eq!(t.exit_code(), 101, "exit code after a panic");
    t.assert_terminal_restored();
    assert_gone(pid, "everything after the panic");
}

#[test]
fn a_model_turn_streams_runs_tools_and_esc_cancels_it() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui",
        json!({"steps": [
            {"text": "Checking with echo.", "tool_calls": [
                {"id": "t1", "name": "mcp__everything__echo", "input": {"message": "from the model"}}]},
            {"text": "Echo said: from the model.",
             "expect": {"last_tool_result_contains": "Echo: from the model"},
             "usage": {"input_tokens": 100, "cached_tokens": 90}},
            {"text": "Thinking slowly", "stall_ms": 30000},
            {"text": "Thinking slowly", "stall_ms": 30000}
        ]}),
    );
    let dir = project("tui-model", |_| json!({ "everything": everything_json() }));
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("everything connected and the model named", BOUND, |s| {
        bar(s).contains("everything ●") && s.contains("model anthropic")
    });
    // Typed over three lines (Alt+Enter, Ctrl+J): the box grows, and the model gets all three.
    t.send_keys(&["say it", "M-Enter", "through", "C-j", "echo"]);
    t.wait_for("a three-line input", BOUND, |s| {
        s.contains("> say it\n  through\n  echo")
    });
    t.send_keys(&["Enter"]);
    let done = t.wait_for("the answer after the tool call", BOUND, |s| {
        s.contains("Echo said: from the model.") && s.contains("model calls")
    });
    assert!(
        done.contains("✓ mcp__everything__echo everything"),
        "{done}"
    );
    // The turn's summary comes after everything the turn streamed (it once overtook them).
    let answer = done
        .find("Echo said: from the model.")
        .unwrap_or(usize::MAX);
    let summary = done.find("model calls").unwrap_or(0);
    assert!(
        done.contains("110 tokens in (90 cached), 10 out"),
        "the cache reads in the summary:\n{done}"
    );
    assert!(answer < summary, "the summary overtook the answer:\n{done}");
    // Ctrl+O shows the call's arguments and result.
    t.send_keys(&["C-o"]);
    t.wait_for("the expanded tool line", BOUND, |s| {
        s.contains("args {\"message\":\"from the model\"}") && s.contains("Echo: from the model")
    });
    // /clear starts a new conversation: the next request carries only the new prompt.
    t.send_keys(&["/clear", "Enter"]);
    t.wait_for("the transcript cleared", BOUND, |s| {
        s.contains("new conversation") && !s.contains("Echo said")
    });
    // A turn whose model stalls mid-stream: Esc cancels it, and the session goes on.
    t.send_keys(&["and now slowly", "Enter"]);
    t.wait_for("the first streamed words and the busy mark", BOUND, |s| {
        // The model stalls after its first piece of text ("Thinking").
        s.contains("Thinking") && s.contains("working…")
    });
    t.send_keys(&["Escape"]);
    t.wait_for("the turn cancelled", BOUND, |s| {
        s.contains("the turn was cancelled") && !s.contains("working…")
    });
    assert_eq!(model.requests().len(), 3, "one request per model call");
    let after_clear = &model.requests()[2]["body"]["messages"];
    assert_eq!(
        after_clear.as_array().map(Vec::len),
        Some(1),
        "the conversation survived /clear: {after_clear}"
    );
    let first = &model.requests()[0]["body"]["messages"][0]["content"];
    assert_eq!(
        first[0]["text"], "say it\nthrough\necho",
        "the prompt as typed: {first}"
    );
    // The same with Ctrl+C: the first one cancels the turn, the next one quits.
    t.send_keys(&["once more", "Enter"]);
    t.wait_for("the second stalled turn", BOUND, |s| s.contains("working…"));
    t.send_keys(&["C-c"]);
    t.wait_for("Ctrl+C to cancel the turn, not quit", BOUND, |s| {
        s.contains("Ctrl+C again quits")
            && s.matches("the turn was cancelled").count() == 2
            && !s.contains("working…")
    });
    assert_eq!(model.requests().len(), 4, "one request per model call");
    // A cancelled turn leaves the conversation as it was: the next request carries neither
    // the cancelled prompt nor its partial answer, only the new prompt.
    let after_cancel = &model.requests()[3]["body"]["messages"];
    assert_eq!(
        after_cancel.as_array().map(Vec::len),
        Some(1),
        "the cancelled turn stayed in the conversation: {after_cancel}"
    );
    assert_eq!(
        after_cancel[0]["content"][0]["text"], "once more",
        "{after_cancel}"
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    t.assert_terminal_restored();
}

#[test]
fn bash_and_unannotated_tools_ask_and_always_for_a_server_is_kept_for_the_project() {
    tmux_required();
    let bash = |id: &str| json!({"id": id, "name": "bash", "input": {"command": "echo ran-after-yes > proof.txt; echo ran"}});
    let model = super::engine::Model::start(
        "tui-ask",
        json!({"steps": [
            {"text": "Trying.", "tool_calls": [bash("b1")]},
            {"text": "Asking again.", "tool_calls": [bash("b2")],
             "expect": {"last_tool_result_contains": "the user declined"}},
            // An unannotated MCP tool asks, as one its server marks destructive does.
            {"text": "Now the server's tools.", "expect": {"last_tool_result_contains": "ran"},
             "tool_calls": [
                {"id": "e1", "name": "mcp__f__echo", "input": {"text": "plain"}},
                {"id": "r1", "name": "mcp__f__remove", "input": {"path": "junk"}}]},
            {"text": "It ran.", "expect": {"last_tool_result_contains": "removed junk"}},
            // The next session: f's tools run unasked, g's still ask.
            {"text": "Again.", "tool_calls": [
                {"id": "e2", "name": "mcp__f__echo", "input": {"text": "unasked"}}]},
            {"text": "And g.", "expect": {"last_tool_result_contains": "unasked"},
             "tool_calls": [{"id": "g1", "name": "mcp__g__echo", "input": {"text": "from g"}}]},
            {"text": "Both done.", "expect": {"last_tool_result_contains": "from g"}}
        ]}),
    );
    let dir = project(
        "tui-ask",
        |_| json!({"f": stdio_json(fixture("f", &[])), "g": stdio_json(fixture("g", &[]))}),
    );
    // The state dir (where saved answers go) beside the project, not in it: a project that
    // holds it is one the shell's sandbox will not write.
    let state_dir = temp_path("tui-ask-state");
    let state = state_dir.display().to_string();
    let mut vars = model.env().to_vec();
    vars.push(("XDG_STATE_HOME", state.as_str()));
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("the model named and f connected", BOUND, |s| {
        s.contains("model anthropic") && bar(s).contains("f ●") && bar(s).contains("g ●")
    });
    t.send_keys(&["make proof", "Enter"]);
    t.wait_for("the question about bash", BOUND, |s| {
        s.contains("run this tool?") && s.contains("echo ran-after-yes") && settled(s)
    });
    // Nothing ran while the question waits.
    assert!(
        !dir.join("proof.txt").exists(),
        "bash ran before the answer"
    );
    t.send_keys(&["n"]);
    t.wait_for("the second question", BOUND, |s| {
        s.contains("Asking again.") && s.contains("run this tool?") && settled(s)
    });
    let asked = std::time::Instant::now();
    assert!(!dir.join("proof.txt").exists(), "a declined call ran");
    // The user thinks it over (test input, not synchronisation).
    std::thread::sleep(Duration::from_millis(2000));
    t.send_keys(&["y"]);
    let held = asked.elapsed();
    let s = t.wait_for(
        "both MCP tools ask, the unannotated one first",
        BOUND,
        |s| {
            s.contains("run this tool?")
                && s.contains("mcp__f__echo")
                && s.contains("(1 of 2 waiting)")
                && settled(s)
        },
    );
    assert!(s.contains("s always server f here"), "{s}");
    // "Always for this server": this call and f from now on; the other waiting call, which
    // the user has not seen, is still asked.
    t.send_keys(&["s"]);
    t.wait_for("the other waiting call, asked on its own", BOUND, |s| {
        s.contains("run this tool?")
            && s.contains("mcp__f__remove")
            && !s.contains("waiting)")
            && settled(s)
    });
    t.send_keys(&["y"]);
    let s = t.wait_for("the answer after the calls ran", BOUND, |s| {
        s.contains("It ran.") && s.contains("model calls")
    });
    assert!(s.contains("runs without asking in this project"), "{s}");
    // A call's time is the tool's, not the time it waited for the answer: a bound, not a
    // speed. The question was on screen for `held` (at least 2 s) before the yes; a time that
    // counted the wait would be longer than that, the echo's own is shorter whatever the load.
    let took = s.lines().find_map(|l| l.strip_prefix("✓ bash builtin · "));
    let took_ms = took.and_then(|t| {
        if let Some(ms) = t.strip_suffix(" ms") {
            ms.trim().parse::<f64>().ok()
        } else {
            let secs = t.strip_suffix(" s")?.trim().parse::<f64>().ok()?;
            Some(secs * 1000.0)
        }
    });
    assert!(
        took_ms.is_some_and(|ms| ms < held.as_secs_f64() * 1000.0),
        "{took:?} (the question was held {held:?})\n{s}"
    );
    assert!(!s.contains("run this tool?"), "{s}");
    let proof = std::fs::read_to_string(dir.join("proof.txt")).unwrap_or_default();
    assert_eq!(proof.trim(), "ran-after-yes");
    // Kept in the state dir, privately, keyed by the project; not in the project.
    let saved = state_dir.join("harness9/permissions.json");
    let text = std::fs::read_to_string(&saved).unwrap_or_default();
    assert!(text.contains("\"mcp__f__*\""), "{text}");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&saved).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode.ok(), Some(0o600));
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);

    // A new session of the same project.
    let t = t.restart(&[], &vars);
    t.wait_for("both servers again", BOUND, |s| {
        s.contains("model anthropic") && bar(s).contains("f ●") && bar(s).contains("g ●")
    });
    t.send_keys(&["again", "Enter"]);
    let s = t.wait_for("g's tool asks", BOUND, |s| {
        s.contains("run this tool?") && s.contains("mcp__g__echo") && settled(s)
    });
    assert!(s.contains("✓ mcp__f__echo"), "f's tool ran unasked:\n{s}");
    t.send_keys(&["y"]);
    t.wait_for("the turn's end", BOUND, |s| s.contains("Both done."));
    // /permissions lists the saved rule with its source, and forgets it.
    t.send_keys(&["/permissions", "Enter"]);
    let s = t.wait_for("the permissions list", BOUND, |s| {
        s.contains("┌ Permissions") && s.contains("mcp__f__*")
    });
    assert!(s.contains("saved for this project"), "{s}");
    t.send_keys(&["d"]);
    t.wait_for("the rule gone from the list", BOUND, |s| {
        s.contains("┌ Permissions") && !s.contains("mcp__f__*")
    });
    let text = std::fs::read_to_string(&saved).unwrap_or_default();
    assert!(!text.contains("mcp__f__"), "{text}");
    t.send_keys(&["Escape"]);
    t.wait_for("the note of it", BOUND, |s| {
        s.contains("forgot \"mcp__f__*\": it asks again")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    t.assert_terminal_restored();
    let _ = std::fs::remove_dir_all(&state_dir);
}

#[test]
fn no_with_a_message_reaches_the_model_as_the_result() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-nomsg",
        json!({"steps": [
            {"text": "Dropping the table.", "tool_calls": [
                {"id": "b1", "name": "bash", "input": {"command": "touch dropped"}}]},
            {"text": "Switching databases.",
             "expect": {"last_tool_result_contains": "says: use the test database instead"}}
        ]}),
    );
    let dir = project("tui-nomsg", |_| json!({}));
    let state = temp_path("tui-nomsg-state").display().to_string();
    let mut vars = model.env().to_vec();
    vars.push(("XDG_STATE_HOME", state.as_str()));
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["drop it", "Enter"]);
    t.wait_for("the question", BOUND, |s| {
        s.contains("run this tool?") && s.contains("touch dropped") && settled(s)
    });
    t.send_keys(&["m"]);
    t.wait_for("the message line", BOUND, |s| s.contains("no, because:"));
    t.send_keys(&["use the test database instead", "Enter"]);
    t.wait_for("the model's answer to it", BOUND, |s| {
        s.contains("Switching databases.") && s.contains("model calls")
    });
    assert!(!dir.join("dropped").exists(), "bash ran");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_server_that_needs_a_login_is_logged_in_from_the_panel() {
    // An OAuth-protected server (its own authorization server) and a `$BROWSER` that follows
    // the authorization page's redirect to our loopback listener, as a person's browser would.
    let srv = super::http::http_fixture("oauth", &[]);
    let dir = temp_path("tui-login");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"o": {"url": format!("http://127.0.0.1:{}/mcp", srv.port)}}})
            .to_string(),
    )
    .unwrap();
    let store = dir.join("oauth.json").display().to_string();
    let browser = format!("{} conformance-browser", env!("CARGO_BIN_EXE_harness9"));
    let t = Tmux::start_with(
        &dir,
        &[],
        None,
        &[
            ("HARNESS9_OAUTH_STORE", store.as_str()),
            ("BROWSER", browser.as_str()),
        ],
    );
    t.wait_for("the bar to say o needs a login", BOUND, |s| {
        bar(s).contains("o ! needs login")
    });
    let screen = t.open_panel();
    assert!(screen.contains("L: log in here"), "{screen}");
    t.send_keys(&["L"]);
    t.wait_for("o to connect after the login", BOUND, |s| {
        bar(s).contains("o ●")
    });
    t.close_panel();
    t.wait_for("the login reported with its scopes", BOUND, |s| {
        s.contains("logged in to server \"o\" (scopes: mcp offline_access)")
    });
    let stored = std::fs::read_to_string(&store).unwrap_or_default();
    assert!(stored.contains("access_token"), "the grant is kept");
    // Every token revoked: the next call fails naming the command, and the server goes back
    // to `needs login` (not a connected server whose every call fails).
    let revoked = super::http::plain_http(srv.port, "POST", "/revoke");
    assert_eq!(revoked, "revoked");
    t.send_keys(&[r#"/call mcp__o__echo {"text":"x"}"#, "Enter"]);
    t.wait_for("the call refused and o needing a login again", BOUND, |s| {
        s.contains("needs a login: run `harness9 mcp") && bar(s).contains("o ! needs login")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0, "exit code after Ctrl+C");
    // The TUI's log file (info level) has the login's story but none of its secrets: not the
    // tokens kept in the store, not the authorization code.
    let log = std::fs::read_to_string(dir.join("harness9.log")).unwrap_or_default();
    assert!(log.contains("logged in"), "{log}");
    let grant: Value = serde_json::from_str(&stored).unwrap();
    let grant = &grant["servers"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    let grant = grant.as_object().unwrap().values().next().unwrap();
    for key in ["access_token", "refresh_token"] {
        let secret = grant[key].as_str().unwrap();
        assert!(
            secret.len() > 8 && !log.contains(secret),
            "{key} in the log"
        );
    }
    assert!(
        !log.contains("code-"),
        "an authorization code in the log: {log}"
    );
}

/// Quit in the middle of a conversation, `harness9 --continue`, ask a follow-up: the model's
/// next request carries the whole earlier conversation, exactly as it was sent and answered.
#[test]
fn a_conversation_continues_after_quitting() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-continue",
        json!({"steps": [
            {"text": "Noted: the number is 42."},
            {"text": "It was 42, as you said."}
        ]}),
    );
    let dir = project("tui-continue", |_| json!({}));
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["remember the number 42", "Enter"]);
    t.wait_for("the first answer", BOUND, |s| {
        s.contains("Noted: the number is 42.") && s.contains("model call")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    t.end_keeping_dir();

    let t = Tmux::start_with(&dir, &["--continue"], None, &model.env());
    let screen = t.wait_for("the resumed conversation", BOUND, |s| {
        s.contains("resumed session") && s.contains("Noted: the number is 42.")
    });
    assert!(screen.contains("› remember the number 42"), "{screen}");
    t.send_keys(&["what was it?", "Enter"]);
    t.wait_for("the follow-up's answer", BOUND, |s| {
        s.contains("It was 42, as you said.")
    });
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0]["body"]["messages"].as_array().unwrap().clone();
    let second = requests[1]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(second.len(), 3, "{second:?}");
    // The cache breakpoint moves to the newest message; the rest is byte for byte the same.
    fn without_cache_marks(mut v: Value) -> Value {
        match &mut v {
            Value::Object(m) => {
                m.remove("cache_control");
                for x in m.values_mut() {
                    *x = without_cache_marks(x.take());
                }
            }
            Value::Array(a) => {
                for x in a.iter_mut() {
                    *x = without_cache_marks(x.take());
                }
            }
            _ => {}
        }
        v
    }
    assert_eq!(
        without_cache_marks(second[0].clone()),
        without_cache_marks(first[0].clone()),
        "the first prompt, as it was sent"
    );
    assert_eq!(second[1]["role"], "assistant");
    assert!(second[1].to_string().contains("Noted: the number is 42."));
    assert!(second[2].to_string().contains("what was it?"));
    assert_eq!(
        requests[0]["body"]["system"], requests[1]["body"]["system"],
        "the same system prompt"
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    t.end_keeping_dir();

    // `--resume` without an id: the picker, the newest first; Enter resumes it.
    let t = Tmux::start_with(&dir, &["--resume"], None, &model.env());
    let screen = t.wait_for("the session picker", BOUND, |s| {
        s.contains("Resume a conversation") && s.contains("4 msgs 1 KiB  remember the number")
    });
    assert!(screen.contains("4 msgs"), "{screen}");
    t.send_keys(&["Enter"]);
    t.wait_for("the picked conversation", BOUND, |s| {
        s.contains("resumed session") && s.contains("It was 42, as you said.")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// The provider refuses a request as too long in the middle of a session: the TUI says the
/// conversation was compacted and why, and the turn ends with the model's answer.
#[test]
fn a_context_length_error_is_survived_by_compaction_in_the_tui() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-overflow",
        json!({"steps": [
            {"text": "First answer."},
            {"status": 400, "error_message": "prompt is too long: 250000 tokens > 200000 maximum"},
            {"text": "SUMMARY: the user asked once."},
            {"text": "Second answer, after the summary."}
        ]}),
    );
    let dir = project("tui-overflow", |_| json!({}));
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["one", "Enter"]);
    t.wait_for("the first answer", BOUND, |s| s.contains("First answer."));
    t.send_keys(&["two", "Enter"]);
    let screen = t.wait_for("the answer after the compaction", BOUND, |s| {
        s.contains("Second answer, after the summary.")
    });
    assert!(
        screen.contains("compacted 2 earlier messages into a summary")
            && screen.contains("the model refused the request"),
        "{screen}"
    );
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4);
    let retried = reqs[3]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(retried.len(), 3, "{retried:?}");
    assert!(retried[0]
        .to_string()
        .contains("SUMMARY: the user asked once."));
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// `/compact [focus]` replaces the conversation with the model's summary: the next request is
/// the summary and the new prompt, a fraction of the size before; the status line's context
/// gauge follows.
#[test]
fn compact_shrinks_the_next_request() {
    tmux_required();
    let big = "lorem ipsum ".repeat(500);
    let model = super::engine::Model::start(
        "tui-compact",
        json!({"steps": [
            {"text": format!("One. {big}"), "usage": {"input_tokens": 150000}},
            {"text": format!("Two. {big}"), "usage": {"input_tokens": 170000}},
            {"text": "SHORT SUMMARY of one and two."},
            {"text": "Three, after the summary."}
        ]}),
    );
    let dir = project("tui-compact", |_| json!({}));
    let t = Tmux::with_sonnet(&dir, &model);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["first", "Enter"]);
    t.wait_for("the first answer", BOUND, |s| {
        s.contains("context 75% of 200k")
    });
    t.send_keys(&["second", "Enter"]);
    t.wait_for("the second answer", BOUND, |s| {
        s.contains("context 85% of 200k")
    });
    t.send_keys(&["/compact keep the numbers", "Enter"]);
    let s = t.wait_for("the compaction", BOUND, |s| {
        s.contains("compacted 4 messages into a summary")
    });
    assert!(s.contains("context 0% of 200k"), "{s}");
    t.send_keys(&["third", "Enter"]);
    t.wait_for("the third answer", BOUND, |s| {
        s.contains("Three, after the summary.")
    });
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4);
    assert!(reqs[2]["body"].to_string().contains("keep the numbers"));
    let next = reqs[3]["body"]["messages"].as_array().unwrap().clone();
    assert_eq!(next.len(), 3, "{next:?}");
    assert!(next[0]
        .to_string()
        .contains("SHORT SUMMARY of one and two."));
    let (before, after) = (
        reqs[1]["body"]["messages"].to_string().len(),
        reqs[3]["body"]["messages"].to_string().len(),
    );
    assert!(after * 10 < before, "messages bytes {before} -> {after}");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn mcp_add_and_remove_from_another_process_reach_a_running_tui() {
    tmux_required();
    let dir = project("tui-add", |_| json!({ "everything": everything_json() }));
    // The user file lives here (created by the user-scope add below).
    let xdg = dir.join("xdg");
    let xdg_s = xdg.display().to_string();
    let t = Tmux::start_with(&dir, &[], None, &[("XDG_CONFIG_HOME", xdg_s.as_str())]);
    t.wait_for("the bar: everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    // `harness9 mcp add` in another process edits the same .mcp.json; the TUI's watcher
    // reloads it and starts the new server.
    let js = everything("x");
    let harness9_actors::TransportSpec::Stdio { command, args, .. } = js.transport else {
        unreachable!()
    };
    let mut add = super::common::harness9_in(&dir);
    add.args(["mcp", "add", "added", "--", &command])
        .args(&args);
    let out = super::common::output_within(add, None, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.wait_for("the bar to show added connected", BOUND, |s| {
        bar(s).contains("added ●") && bar(s).contains("everything ●")
    });
    t.wait_for("the reload report", BOUND, |s| {
        s.contains("reloaded .mcp.json: added added; 1 unchanged")
    });
    // The panel says where it comes from.
    t.send_keys(&["/mcp added", "Enter"]);
    t.wait_for("added's config file in /mcp", BOUND, |s| {
        selected(s).as_deref() == Some("added") && s.contains("from .mcp.json")
    });
    t.close_panel();

    let mut remove = super::common::harness9_in(&dir);
    remove.args(["mcp", "remove", "added"]);
    let out = super::common::output_within(remove, None, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0));
    t.wait_for("the bar without added", BOUND, |s| {
        !bar(s).contains("added") && bar(s).contains("everything ●")
    });

    // The user scope too: `add-json --scope user` writes a user file that did not exist, and
    // the running TUI picks it up; removing it takes the server away again.
    let entry = json!({"command": command, "args": args}).to_string();
    let user_cmd = |words: &[&str]| {
        let mut c = super::common::harness9_in(&dir);
        c.env("XDG_CONFIG_HOME", &xdg).args(words);
        let out = super::common::output_within(c, None, Duration::from_secs(30));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    user_cmd(&["mcp", "add-json", "mine", &entry, "--scope", "user"]);
    assert!(xdg.join("harness9/mcp.json").exists());
    t.wait_for("the bar to show the user's server connected", BOUND, |s| {
        bar(s).contains("mine ●") && bar(s).contains("everything ●")
    });
    user_cmd(&["mcp", "remove", "mine", "--scope", "user"]);
    t.wait_for("the bar without the user's server", BOUND, |s| {
        !bar(s).contains("mine") && bar(s).contains("everything ●")
    });
}

#[test]
fn a_vscode_input_is_asked_once_masked_and_kept_privately() {
    use std::os::unix::fs::PermissionsExt as _;
    tmux_required();
    let dir = temp_path("tui-input");
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = everything_json();
    server["env"] = json!({"TOKEN": "${input:tok}"});
    let config = json!({
        "inputs": [{"type": "promptString", "id": "tok", "description": "The API token", "password": true}],
        "mcpServers": {"e": server},
    });
    write_config(&dir, &config.to_string());
    let store = dir.join("inputs.json");
    let store_s = store.to_string_lossy().into_owned();
    let vars = [("HARNESS9_INPUTS", store_s.as_str())];
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("the prompt for input tok", BOUND, |s| {
        s.contains("input \"tok\"") && s.contains("The API token") && settled(s)
    });
    t.send_keys(&["s3cret"]);
    let s = t.wait_for("the typed value, masked", BOUND, |s| s.contains("> ••••••"));
    assert!(!s.contains("s3cret"), "the password shows:\n{s}");
    t.send_keys(&["Enter"]);
    t.wait_for("e connected with the value", BOUND, |s| {
        bar(s).contains("e ●")
    });
    let kept = std::fs::read_to_string(&store).expect("the inputs file");
    assert!(kept.contains("s3cret"), "{kept}");
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);

    // A second session on the same config file does not ask again.
    let dir2 = temp_path("tui-input-again");
    std::fs::create_dir_all(&dir2).unwrap();
    let config_arg = dir.join(".mcp.json").to_string_lossy().into_owned();
    let t2 = Tmux::start_with(&dir2, &["--config", &config_arg], None, &vars);
    let s = t2.wait_for("e connected without a prompt", BOUND, |s| {
        bar(s).contains("e ●")
    });
    assert!(!s.contains("input \"tok\""), "asked again:\n{s}");
    drop(t2);
    drop(t);
}

/// `/call` sends a progress token: the server's progress shows on the call's line while it
/// runs, then the result replaces it.
#[test]
fn a_call_from_the_input_shows_its_progress() {
    tmux_required();
    let dir = project(
        "tui-call-progress",
        |_| json!({ "everything": everything_json() }),
    );
    let t = Tmux::start(&dir, &[], None);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    t.send_keys(&[
        r#"/call mcp__everything__trigger_long_running_operation {"duration":3,"steps":6}"#,
        "Enter",
    ]);
    t.wait_for("a progress notice on the call's line", BOUND, |s| {
        ["1/6", "2/6", "3/6", "4/6", "5/6"]
            .iter()
            .any(|p| s.contains(p))
    });
    t.wait_for("the result", BOUND, |s| {
        s.contains("✓ mcp__everything__trigger_long_running_operation")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// No `$EDITOR` and no desktop to open a file on (SSH, a console): `e` edits `.mcp.json` in a
/// terminal editor found on PATH (`vi`, here a stand-in that adds a server) and says so.
#[test]
fn without_an_editor_or_a_desktop_e_falls_back_to_vi() {
    tmux_required();
    let dir = project("tui-vi", |_| json!({ "everything": everything_json() }));
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("create bin");
    config_editor(&bin.join("vi"), "added", "everything");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let vars = [
        ("PATH", path.as_str()),
        ("DISPLAY", ""),
        ("WAYLAND_DISPLAY", ""),
    ];
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    t.open_panel();
    t.send_keys(&["e"]);
    t.wait_for("the server the editor added", BOUND, |s| {
        bar(s).contains("added ●")
    });
    t.close_panel();
    t.wait_for("the notice naming vi", BOUND, |s| {
        s.contains("no $EDITOR is set; edited") && s.contains("with vi")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// `/model NAME` changes the model named in the next request; `/status` and `/cost` report
/// the session, and `/tools off NAME` leaves a tool out of the next request.
#[test]
fn model_switches_for_the_next_turn_and_status_reports_it() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-model-switch",
        json!({"steps": [
            {"text": "first answer", "usage": {"input_tokens": 1000, "output_tokens": 100}},
            {"text": "second answer"},
            {"text": "third answer"}
        ]}),
    );
    let dir = project("tui-model-switch", |_| json!({}));
    let t = Tmux::with_sonnet(&dir, &model);
    t.wait_for("the model named", BOUND, |s| {
        s.contains("model anthropic claude-sonnet-4-5")
    });
    t.send_keys(&["one", "Enter"]);
    t.wait_for("the first answer", BOUND, |s| s.contains("first answer"));
    t.send_keys(&["/model claude-opus-4-1", "Enter"]);
    t.wait_for("the switch", BOUND, |s| {
        s.contains("the next turn uses anthropic claude-opus-4-1")
            && s.contains("model anthropic claude-opus-4-1")
    });
    t.send_keys(&["/tools off read_file", "Enter"]);
    t.wait_for("the tool turned off", BOUND, |s| {
        s.contains("read_file is off for this session")
    });
    t.send_keys(&["/cost", "Enter"]);
    // 1000 in, 100 out at $3 and $15 per million: $0.0045.
    t.wait_for("the cost", BOUND, |s| {
        s.contains("claude-sonnet-4-5: 1000 tokens in (0 cached), 100 out: $0.0045")
    });
    t.send_keys(&["/status", "Enter"]);
    t.wait_for("the status", BOUND, |s| {
        s.contains("session: 2")
            && s.contains("cost so far: $0.0045")
            && s.contains("tools off: read_file")
    });
    t.send_keys(&["two", "Enter"]);
    t.wait_for("the second answer", BOUND, |s| s.contains("second answer"));
    let reqs = model.requests();
    assert_eq!(reqs[0]["body"]["model"], "claude-sonnet-4-5");
    assert_eq!(reqs[1]["body"]["model"], "claude-opus-4-1");
    let offered = |r: &Value| -> Vec<String> {
        r["body"]["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(offered(&reqs[0]).contains(&"read_file".to_owned()));
    assert!(!offered(&reqs[1]).contains(&"read_file".to_owned()));
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    t.end_keeping_dir();

    // The switch was saved: the resumed session goes on with claude-opus-4-1, although the
    // environment still says claude-sonnet-4-5.
    let t = Tmux::with_sonnet_args(&dir, &model, &["--continue"]);
    t.wait_for("the resumed session on its saved model", BOUND, |s| {
        s.contains("resumed session") && s.contains("model anthropic claude-opus-4-1")
    });
    t.send_keys(&["three", "Enter"]);
    t.wait_for("the third answer", BOUND, |s| s.contains("third answer"));
    assert_eq!(model.requests()[2]["body"]["model"], "claude-opus-4-1");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn resources_log_and_prompts_of_the_reference_server_in_the_tui() {
    tmux_required();
    let dir = project("tui-features", |_| {
        let mut e = everything_json();
        e["logLevel"] = json!("debug");
        json!({ "everything": e })
    });
    let t = Tmux::start(&dir, &[], None);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    // Simulated logging sends its first line at once; the panel shows it and the resources.
    t.send_keys(&[
        "/call mcp__everything__toggle_simulated_logging {}",
        "Enter",
    ]);
    t.wait_for("the toggle's result", BOUND, |s| {
        s.contains("Started simulated")
    });
    t.open_panel();
    t.wait_for("the log line and the resources in /mcp", BOUND, |s| {
        s.contains("-level message")
            && s.contains("resources (7) and templates (2):")
            && s.contains("demo://resource/static/document/architecture.md")
    });
    t.close_panel();

    // A prompt is a command: Tab completes it; without a model its messages are shown.
    t.send_keys(&["/mcp__everything__args", "Tab"]);
    t.wait_for("the prompt command completed", BOUND, |s| {
        s.lines()
            .any(|l| l.starts_with("> /mcp__everything__args_prompt"))
    });
    t.send_keys(&["city=Paris", "Enter"]);
    t.wait_for("the prompt's message", BOUND, |s| {
        s.contains("What's weather in Paris?")
    });
    // Tab in an argument completes its value from the server (completion/complete).
    t.send_keys(&["/mcp__everything__completable_prompt department=Eng", "Tab"]);
    t.wait_for("the department completed", BOUND, |s| {
        s.lines()
            .any(|l| l.starts_with("> /mcp__everything__completable_prompt department=Engineering"))
    });
    t.send_keys(&["C-u"]);
    // In an @ mention, a template's variable is completed by the server (completion/complete
    // with ref/resource): everything offers values only for a positive id, so an empty one
    // gets its "no values" answer.
    t.send_keys(&["@everything:demo://resource/dynamic/text/", "Tab"]);
    t.wait_for(
        "the server's answer for the template variable",
        BOUND,
        |s| s.contains("the server offers no values for @everything:demo://resource/dynamic/text/"),
    );
    t.send_keys(&["C-u"]);
    // A subscription: once everything sends its simulated updates (every 5 s after the
    // toggle), each change of the subscribed resource shows in the transcript.
    let doc = "demo://resource/static/document/architecture.md";
    t.send_keys(&[&format!("/subscribe @everything:{doc}"), "Enter"]);
    t.wait_for("the subscription", BOUND, |s| {
        s.contains(&format!("subscribed to {doc} of everything"))
    });
    t.send_keys(&[
        "/call mcp__everything__toggle_subscriber_updates {}",
        "Enter",
    ]);
    t.wait_for("an update of the subscribed resource", BOUND, |s| {
        s.contains(&format!("everything: resource {doc} changed"))
    });

    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0, "exit code after Ctrl+C");
    t.assert_terminal_restored();
}

/// A server the config turns `"disabled": true` leaves the running set, stays in the bar dim
/// as `disabled`, and the reload says "disabled", not "removed".
#[test]
fn a_disabled_server_stays_in_the_bar_dim_and_reload_says_disabled() {
    tmux_required();
    let dir = project(
        "tui-disabled",
        |_| json!({ "everything": everything_json(), "spare": everything_json() }),
    );
    let t = Tmux::start(&dir, &[], None);
    t.wait_for("both connected", BOUND, |s| {
        bar(s).contains("everything ●") && bar(s).contains("spare ●")
    });
    let mut spare = everything_json();
    spare["disabled"] = json!(true);
    write_config(
        &dir,
        &json!({"mcpServers": {"everything": everything_json(), "spare": spare}}).to_string(),
    );
    let s = t.wait_for("the reload report", BOUND, |s| {
        s.contains("reloaded .mcp.json: disabled spare")
    });
    assert!(!s.contains("removed spare"), "{s}");
    t.wait_for("spare dim in the bar", BOUND, |s| {
        bar(s).contains("spare ◌ disabled") && bar(s).contains("everything ●")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

mod edits;
mod toolsearch;

/// Keys typed ahead of the editor never act after it: `ee` pressed at once in the panel opens
/// `$EDITOR` once (the second `e` was read with the first, or waited in the terminal while the
/// editor had it), not a second time when the first returns.
#[test]
fn type_ahead_does_not_open_the_editor_twice() {
    tmux_required();
    let dir = project(
        "tui-typeahead",
        |_| json!({ "f": {"command": fixture_bin(), "args": []} }),
    );
    // An editor that only counts its runs (it reads nothing from the terminal).
    let count = dir.join("editor-runs");
    let editor = dir.join("count-editor");
    std::fs::write(
        &editor,
        format!("#!/bin/sh\necho run >> '{}'\n", count.display()),
    )
    .expect("write the editor");
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&editor, exec).expect("chmod the editor");
    let t = Tmux::start(&dir, &[], Some(&editor));
    t.wait_for("f connected", BOUND, |s| bar(s).contains("f ●"));
    t.open_panel();
    t.send_keys(&["ee"]);
    // The editor ran and the panel is back; then keys typed after it: by the time they show,
    // any `e` queued before them has been handled (keys are handled in order).
    t.wait_for("the editor to have run", BOUND, |_| count.exists());
    t.wait_for("the panel back", BOUND, |s| panel_line(s, 0).is_some());
    t.close_panel();
    t.send_keys(&["after"]);
    t.wait_for("the keys typed after the editor", BOUND, |s| {
        s.lines().any(|l| l == "> after")
    });
    let runs = std::fs::read_to_string(&count).unwrap_or_default();
    assert_eq!(
        runs.lines().count(),
        1,
        "the editor ran {} times",
        runs.lines().count()
    );
    t.send_keys(&["C-u", "C-c"]);
    assert_eq!(t.exit_code(), 0, "exit code after Ctrl+C");
}
