//! Trust and fault isolation, with the real binary: a project's `.mcp.json` spawns nothing until
//! its servers are approved (headless and in the TUI, hot reload included), one bad server entry
//! fails alone, and huge timeouts are refused with a clear error instead of a panic.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::common::{fixture_bin, poll_until, temp_path};
use super::engine::Model;
use super::tui::{bar, project, settled, tmux_required, write_config, Tmux, BOUND};

/// A server entry that leaves `marker` behind as soon as it is spawned, then runs the fixture
/// server with `args`.
fn marking_server(marker: &Path, args: &str) -> Value {
    let script = format!(
        "touch '{}'; exec '{}' {args}",
        marker.display(),
        fixture_bin().display()
    );
    json!({"command": "sh", "args": ["-c", script]})
}

fn write(dir: &Path, servers: Value) {
    let text = json!({ "mcpServers": servers }).to_string();
    std::fs::write(dir.join(".mcp.json"), text).expect("write .mcp.json");
}

/// `harness9 args` in `dir` with its approvals in the dir; killed after 60 s (the test then fails
/// on its output).
fn harness9(dir: &Path, args: &[&str]) -> Output {
    harness9_with(dir, args, &[])
}

/// [`harness9`] with more environment.
fn harness9_with(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_harness9"))
        .args(args)
        .envs(vars.iter().copied())
        .env_remove("HARNESS9_PROVIDER")
        .env_remove("HARNESS9_MODEL")
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn harness9");
    let pid = child.id() as i32;
    let watchdog = std::thread::spawn(move || {
        // SAFETY: signal 0 checks existence only; SIGKILL goes to our own child.
        let alive = || unsafe { libc::kill(pid, 0) } == 0;
        if !poll_until(Duration::from_secs(60), Duration::from_millis(50), || {
            !alive()
        }) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().expect("wait for harness9");
    let _ = watchdog.join();
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fresh_dir(tag: &str) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).expect("create the temp dir");
    dir
}

#[test]
fn a_project_config_runs_nothing_until_its_servers_are_approved() {
    let dir = fresh_dir("trust-headless");
    let marker = dir.join("MARKER");
    write(&dir, json!({"t": marking_server(&marker, "")}));

    // Not approved: nothing spawned, and every command says how to approve.
    let out = harness9(&dir, &["mcp", "list"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(!marker.exists(), "the server was spawned before approval");
    assert!(
        stderr.contains("`harness9 mcp approve t`") && stderr.contains("touch"),
        "{stderr}"
    );
    assert!(
        stdout.contains("unapproved") && stdout.contains("harness9 mcp approve t"),
        "{stdout}"
    );
    let out = harness9(&dir, &["mcp", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows[0]["status"], "unapproved", "{rows}");
    assert_eq!(rows[0]["approve"], "harness9 mcp approve t");
    assert!(rows[0]["commandLine"]
        .as_str()
        .is_some_and(|c| c.starts_with("sh -c 'touch")));
    let out = harness9(
        &dir,
        &["mcp", "call", "t", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("harness9 mcp approve t"),
        "{}",
        text(&out.stderr)
    );
    assert!(!marker.exists(), "mcp call spawned an unapproved server");

    // Approved: it starts; the approvals file is private.
    let out = harness9(&dir, &["mcp", "approve"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("approved \"t\": sh -c"),
        "{}",
        text(&out.stdout)
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.join("approvals.json"))
            .expect("the approvals file")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let out = harness9(
        &dir,
        &["mcp", "call", "t", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert_eq!(
        (text(&out.stdout).trim(), out.status.code()),
        ("hi", Some(0)),
        "{}",
        text(&out.stderr)
    );
    assert!(marker.exists(), "the approved server did not start");

    // A changed argument asks again.
    std::fs::remove_file(&marker).expect("remove the marker");
    write(&dir, json!({"t": marking_server(&marker, "--tools 2")}));
    let out = harness9(&dir, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("unapproved"));
    assert!(text(&out.stderr).contains("harness9 mcp approve t"));
    assert!(!marker.exists(), "a changed spec ran without approval");

    // --approve-project approves and runs it in one go; a --config file is trusted as it is.
    let out = harness9(&dir, &["--approve-project", "mcp", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(marker.exists());
    std::fs::remove_file(&marker).expect("remove the marker");
    write(&dir, json!({"t": marking_server(&marker, "--tools 3")}));
    let out = harness9(&dir, &["--config", ".mcp.json", "mcp", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(marker.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unapproved_http_server_is_never_contacted() {
    let dir = fresh_dir("trust-http");
    let record = dir.join("requests.jsonl");
    let srv = super::http::http_fixture("ok", &["--record", &record.display().to_string()]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    write(&dir, json!({"remote": {"url": url}}));
    let out = harness9(&dir, &["mcp", "list"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("unapproved") && text(&out.stdout).contains(&url),
        "{}",
        text(&out.stdout)
    );
    assert!(
        std::fs::read_to_string(&record)
            .unwrap_or_default()
            .is_empty(),
        "the unapproved server got a request"
    );
    let out = harness9(&dir, &["--approve-project", "mcp", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&record).is_ok_and(|r| r.contains("initialize")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_p_starts_only_approved_servers_and_says_how_to_approve_the_others() {
    let dir = fresh_dir("trust-run");
    let marker = dir.join("MARKER");
    let ok = dir.join("OK");
    write(
        &dir,
        json!({"t": marking_server(&marker, ""), "ok": marking_server(&ok, "")}),
    );
    let out = harness9(&dir, &["mcp", "approve", "ok"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let model = Model::start("trust-run", json!({"steps": [{"text": "done"}]}));
    let home = dir.display().to_string();
    let out = harness9_with(
        &dir,
        &["run", "-p", "go"],
        &[
            ("HOME", &home),
            ("ANTHROPIC_API_KEY", "test-key"),
            ("ANTHROPIC_BASE_URL", &model.url),
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(
        (text(&out.stdout).trim(), out.status.code()),
        ("done", Some(0)),
        "{stderr}"
    );
    assert!(stderr.contains("`harness9 mcp approve t`"), "{stderr}");
    assert!(!stderr.contains("mcp approve ok"), "{stderr}");
    assert!(!marker.exists(), "run -p spawned an unapproved server");
    assert!(ok.exists(), "the approved server did not start");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_bad_server_entry_fails_alone() {
    let dir = fresh_dir("trust-isolation");
    let good = json!({"command": fixture_bin().display().to_string()});
    let unset = json!({"command": fixture_bin().display().to_string(),
                       "env": {"T": "${HARNESS9_TEST_SURELY_UNSET}"}});
    let slow = json!({"command": fixture_bin().display().to_string(), "toolTimeoutSec": 1e20});
    write(&dir, json!({"bad": unset, "good": good, "slow": slow}));
    let out = harness9(&dir, &["--config", ".mcp.json", "mcp", "list"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"))
            .to_owned()
    };
    assert!(row("good").contains("connected"), "{stdout}");
    let bad = row("bad");
    assert!(
        bad.contains("failed")
            && bad.contains(".mcp.json: server \"bad\", field env.T: environment variable HARNESS9_TEST_SURELY_UNSET is not set"),
        "{bad}"
    );
    let slow = row("slow");
    assert!(
        slow.contains("failed")
            && slow.contains("\"toolTimeoutSec\" is")
            && slow.contains("up to 86400 (24 h)"),
        "{slow}"
    );
    let out = harness9(&dir, &["--config", ".mcp.json", "mcp", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).expect("json");
    let status = |name: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .map(|r| r["status"].clone())
    };
    assert_eq!(status("good"), Some(json!("connected")), "{rows}");
    assert_eq!(status("bad"), Some(json!("failed")), "{rows}");

    // A huge --timeout is a clear usage error, not a panic.
    let out = harness9(
        &dir,
        &[
            "--config",
            ".mcp.json",
            "mcp",
            "call",
            "good",
            "echo",
            "--args",
            r#"{"text":"hi"}"#,
            "--timeout",
            "1e20",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--timeout is") && stderr.contains("up to 86400 (24 h)"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_tui_trust_screen_starts_nothing_until_approved_and_asks_again_on_reload() {
    tmux_required();
    let dir = project(
        "trust-tui",
        |dir| json!({"t": marking_server(&dir.join("MARKER"), "")}),
    );
    let marker = dir.join("MARKER");
    let approvals = dir.join("approvals.json");
    let t = Tmux::start_with(
        &dir,
        &[],
        None,
        &[("HARNESS9_APPROVALS", &approvals.to_string_lossy())],
    );
    let s = t.wait_for("the trust screen with t's command line", BOUND, |s| {
        s.contains("approve this project's MCP servers?")
            && s.contains("> t")
            && s.contains("sh -c 'touch")
            && bar(s).contains("t ? unapproved")
            && settled(s)
    });
    assert!(s.contains("approve all"), "{s}");
    assert!(!marker.exists(), "spawned before approval");

    t.send_keys(&["y"]);
    t.wait_for("t connected after y", BOUND, |s| bar(s).contains("t ●"));
    assert!(marker.exists(), "the approved server did not start");
    assert!(approvals.exists(), "the approval was not saved");

    // Hot reload with a changed argument: the new spec is unapproved, the old server stops, and
    // nothing new starts.
    std::fs::remove_file(&marker).expect("remove the marker");
    let changed = json!({"mcpServers": {"t": marking_server(&marker, "--tools 2")}});
    write_config(&dir, &changed.to_string());
    t.wait_for("the trust screen again after the reload", BOUND, |s| {
        s.contains("approve this project's MCP servers?")
            && s.contains("--tools 2")
            && bar(s).contains("t ? unapproved")
            && settled(s)
    });
    assert!(
        !marker.exists(),
        "a changed server started without approval"
    );
    t.send_keys(&["n"]);
    t.wait_for("the screen closed, t still unapproved", BOUND, |s| {
        !s.contains("approve this project's MCP servers?")
            && s.contains("declined 1 server")
            && bar(s).contains("t ? unapproved")
    });
    assert!(!marker.exists(), "a declined server started");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn the_supervisor_never_launches_a_held_spec_and_reconcile_handles_holds() {
    use harness9_actors::messages::{Reconcile, Restart, ServerStatus};
    use harness9_actors::Hold;

    use super::common::{
        connected, fast_policy, fixture, group_alive, pid_of, run, start, wait_for,
    };

    run(Duration::from_secs(40), || async {
        let dir = fresh_dir("trust-supervisor");
        let marker = dir.join("MARKER");
        let script = format!(
            "touch '{}'; exec '{}'",
            marker.display(),
            fixture_bin().display()
        );
        let mut held = harness9_actors::ServerSpec::stdio("h", "sh", vec!["-c".into(), script]);
        held.hold = Some(Hold::Unapproved);
        let mut bad = fixture("bad", &[]);
        bad.hold = Some(Hold::Invalid(
            ".mcp.json: server \"bad\", field env.T: unset".into(),
        ));
        let good = fixture("good", &[]);
        let rt = start(vec![held.clone(), bad.clone(), good.clone()], fast_policy());
        let good_pid = pid_of(&connected(&rt, "good", Duration::from_secs(10)).await);
        let s = wait_for(&rt, "h", Duration::from_secs(5), |s| {
            matches!(s, ServerStatus::Unapproved { .. })
        })
        .await;
        assert!(
            matches!(&s, ServerStatus::Unapproved { command_line, .. } if command_line.starts_with("sh -c 'touch")),
            "{s:?}"
        );
        let s = wait_for(&rt, "bad", Duration::from_secs(5), |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        assert!(matches!(&s, ServerStatus::Failed { error, .. } if error.contains("field env.T")));
        // Restart (r in /mcp) keeps the hold.
        rt.supervisor
            .send(Restart("h".into()))
            .await
            .expect("supervisor")
            .expect("restart");
        let snap = rt
            .supervisor
            .send(harness9_actors::messages::GetStatus)
            .await
            .expect("supervisor");
        assert_eq!(snap["h"].status.label(), "unapproved");
        assert!(!marker.exists(), "a held spec was spawned");

        // Approved (the hold gone): it starts. Held again (its spec changed and is not
        // approved): the running child stops and nothing new starts.
        let mut approved = held.clone();
        approved.hold = None;
        let specs = vec![approved.clone(), bad.clone(), good.clone()];
        let report = rt
            .supervisor
            .send(Reconcile { specs })
            .await
            .expect("supervisor");
        assert_eq!(report.changed, ["h"]);
        let h_pid = pid_of(&connected(&rt, "h", Duration::from_secs(10)).await);
        assert!(marker.exists());
        std::fs::remove_file(&marker).expect("remove the marker");
        let mut changed = approved.clone();
        changed.tool_timeout = Duration::from_secs(5);
        changed.hold = Some(Hold::Unapproved);
        let specs = vec![changed, bad.clone(), good.clone()];
        let report = rt
            .supervisor
            .send(Reconcile { specs })
            .await
            .expect("supervisor");
        assert_eq!(
            (report.changed, report.unchanged.len()),
            (vec!["h".to_owned()], 2)
        );
        wait_for(&rt, "h", Duration::from_secs(5), |s| {
            matches!(s, ServerStatus::Unapproved { .. })
        })
        .await;
        // The child ends (waited on without blocking the actors' thread).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while group_alive(h_pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "the old child of a now-held server is still running"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let snap = rt
            .supervisor
            .send(harness9_actors::messages::GetStatus)
            .await
            .expect("supervisor");
        assert_eq!(snap["h"].status.label(), "unapproved");
        assert!(!marker.exists(), "a held spec was spawned after reload");
        super::common::shutdown(rt, &[good_pid]).await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// `harness9 args` in `cwd` with an isolated home (user config and state in `home`) and the
/// approvals file `approvals`; killed after 60 s.
fn isolated(
    cwd: &Path,
    home: &Path,
    approvals: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness9"));
    super::common::without_user_env(&mut cmd)
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .env("HARNESS9_APPROVALS", approvals)
        .env("HARNESS9_INPUTS", home.join("inputs.json"))
        .envs(vars.iter().copied())
        .current_dir(cwd);
    super::common::output_within(cmd, None, Duration::from_secs(60))
}

#[test]
fn a_changed_header_value_asks_again_and_secrets_are_shown_by_name_only() {
    let dir = fresh_dir("trust-header");
    let home = fresh_dir("trust-header-home");
    let approvals = dir.join("approvals.json");
    let record = dir.join("requests.jsonl");
    let srv = super::http::http_fixture("ok", &["--record", &record.display().to_string()]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    let secret = "s3cr3t-value-never-sent-0042";
    let vars = [("SUPER_SECRET_TOKEN", secret)];
    write(
        &dir,
        json!({"remote": {"url": url, "headers": {"X-Client": "harness9"}}}),
    );
    let out = isolated(&dir, &home, &approvals, &["mcp", "approve"], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = isolated(&dir, &home, &approvals, &["mcp", "list"], &vars);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let seen = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(
        seen.contains("harness9") && seen.contains("initialize"),
        "{seen}"
    );

    // The repository changes the header's value to a variable of the user's environment.
    std::fs::remove_file(&record).expect("clear the record");
    write(
        &dir,
        json!({"remote": {"url": url, "headers": {"X-Client": "${SUPER_SECRET_TOKEN}"}},
               "local": {"command": "sh", "args": ["-c", "exit 0", "--token=${SUPER_SECRET_TOKEN}"]}}),
    );
    let out = isolated(&dir, &home, &approvals, &["mcp", "list"], &vars);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let seen = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(
        !seen.contains(secret),
        "the secret reached the server: {seen}"
    );
    assert!(seen.is_empty(), "the changed server was contacted: {seen}");
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stdout}{stderr}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("remote "))
        .unwrap_or_else(|| panic!("no row for remote:\n{stdout}"));
    assert!(
        row.contains("unapproved")
            && row.contains("X-Client")
            && row.contains("${SUPER_SECRET_TOKEN}"),
        "{row}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("local "))
        .unwrap_or_else(|| panic!("no row for local:\n{stdout}"));
    assert!(row.contains("--token=${SUPER_SECRET_TOKEN}"), "{row}");
    // A server of the user's own file runs, and shows as written too.
    std::fs::create_dir_all(home.join(".config/harness9")).expect("user config dir");
    let mine = json!({"mcpServers": {"mine": {"command": fixture_bin().display().to_string(),
                                              "env": {"TOKEN": "${SUPER_SECRET_TOKEN}"}}}});
    std::fs::write(home.join(".config/harness9/mcp.json"), mine.to_string()).expect("user config");
    let out = isolated(&dir, &home, &approvals, &["mcp", "list", "--json"], &vars);
    let all = text(&out.stdout);
    assert!(!all.contains(secret), "{all}");
    let rows: Value = serde_json::from_str(&all).expect("json");
    let row = |name: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no row {name}: {rows}"))
    };
    let remote = row("remote");
    assert_eq!(remote["status"], "unapproved", "{remote}");
    let line = remote["commandLine"].as_str().unwrap_or_default();
    assert!(
        line.contains("X-Client") && line.contains("${SUPER_SECRET_TOKEN}"),
        "{remote}"
    );
    assert!(row("local")["commandLine"]
        .as_str()
        .is_some_and(|l| l.contains("--token=${SUPER_SECRET_TOKEN}")));
    let mine = row("mine");
    assert_eq!(mine["status"], "connected", "{mine}");
    assert!(
        mine["commandLine"]
            .as_str()
            .is_some_and(|l| l.contains("(env TOKEN)") && l.contains("${SUPER_SECRET_TOKEN}")),
        "{mine}"
    );
    assert!(std::fs::read_to_string(&record)
        .unwrap_or_default()
        .is_empty());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&home);
}

/// An executable `run.sh` in `dir` that leaves `marker` behind, then runs the fixture server.
fn run_sh(dir: &Path, marker: &Path) {
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nexec '{}'\n",
        marker.display(),
        fixture_bin().display()
    );
    std::fs::write(dir.join("run.sh"), script).expect("write run.sh");
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(dir.join("run.sh"), exec).expect("chmod run.sh");
}

/// A project `a` (a repository) whose `.mcp.json` runs `run.sh` twice (through `sh` and
/// directly), approved and run from `a`; `root` holds `a`, the home and the approvals file.
fn approved_run_sh_project(tag: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let root = fresh_dir(tag);
    let home = root.join("home");
    let approvals = root.join("approvals.json");
    let a = root.join("a");
    for d in [&a, &home] {
        std::fs::create_dir_all(d).expect("create a dir");
    }
    std::fs::create_dir_all(a.join(".git")).expect("a is a repository");
    run_sh(&a, &a.join("A_RAN"));
    write(
        &a,
        json!({"viash": {"command": "sh", "args": ["run.sh"]}, "direct": {"command": "./run.sh"}}),
    );
    let out = isolated(&a, &home, &approvals, &["mcp", "approve"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = isolated(&a, &home, &approvals, &["mcp", "list"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        a.join("A_RAN").exists(),
        "the approved servers did not start"
    );
    (root, home, approvals, a)
}

#[test]
fn an_approval_does_not_follow_a_symlinked_config_to_another_directory() {
    let (root, home, approvals, a) = approved_run_sh_project("trust-symlink");
    // Another repository whose .mcp.json is a symlink to the approved file.
    let b = root.join("b");
    std::fs::create_dir_all(&b).expect("create b");
    run_sh(&b, &b.join("B_RAN"));
    std::os::unix::fs::symlink(a.join(".mcp.json"), b.join(".mcp.json")).expect("symlink");
    let out = isolated(&b, &home, &approvals, &["mcp", "list"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        !b.join("B_RAN").exists(),
        "b's run.sh ran under a's approval"
    );
    assert_eq!(stdout.matches("unapproved").count(), 2, "{stdout}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_approval_does_not_hold_in_a_subdirectory_with_its_own_program() {
    let (root, home, approvals, a) = approved_run_sh_project("trust-subdir");
    // harness9 started in a subdirectory of the approved project that has its own run.sh.
    let sub = a.join("node_modules/evil-pkg");
    std::fs::create_dir_all(&sub).expect("create the subdirectory");
    run_sh(&sub, &sub.join("EVIL_RAN"));
    let out = isolated(&sub, &home, &approvals, &["mcp", "list"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        !sub.join("EVIL_RAN").exists(),
        "a subdirectory's run.sh ran as the approved server"
    );
    assert_eq!(stdout.matches("unapproved").count(), 2, "{stdout}");
    // It says where it would run.
    assert!(
        stdout.contains("(in ") && stdout.contains("evil-pkg"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_rewritten_script_of_an_approved_server_asks_again_before_it_runs() {
    let (root, home, approvals, a) = approved_run_sh_project("trust-content");
    // The script is rewritten after the approval (as the sandboxed shell could): it would
    // leave another marker behind.
    std::fs::remove_file(a.join("A_RAN")).expect("remove the marker");
    run_sh(&a, &a.join("REWRITTEN_RAN"));
    let out = isolated(&a, &home, &approvals, &["mcp", "list"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        !a.join("REWRITTEN_RAN").exists() && !a.join("A_RAN").exists(),
        "the rewritten run.sh ran under the old approval"
    );
    // Both entries: the program itself (`./run.sh`) and the script handed to `sh`.
    assert_eq!(stdout.matches("unapproved").count(), 2, "{stdout}");
    // Approved again, it runs; a file the server does not name changes nothing.
    let out = isolated(&a, &home, &approvals, &["mcp", "approve"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    std::fs::write(a.join("README.md"), "edited").expect("edit another file");
    let out = isolated(&a, &home, &approvals, &["mcp", "list"], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(a.join("REWRITTEN_RAN").exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_config_files_server_running_a_project_script_is_recorded_then_asks_when_it_changes() {
    let root = fresh_dir("trust-given-content");
    let home = root.join("home");
    let approvals = root.join("approvals.json");
    let a = root.join("a");
    for d in [a.join(".git"), home.clone()] {
        std::fs::create_dir_all(d).expect("create a dir");
    }
    run_sh(&a, &a.join("A_RAN"));
    // The user's own file, outside the project, runs the project's script.
    let config = root.join("mine.json");
    let entry = json!({"mcpServers": {"local": {"command": "sh", "args": [a.join("run.sh")]}}});
    std::fs::write(&config, entry.to_string()).expect("write the config");
    let given = config.display().to_string();
    let list = |args: &[&str]| {
        let mut all = vec!["--config", given.as_str()];
        all.extend(args);
        isolated(&a, &home, &approvals, &all, &[])
    };
    // First start: it runs (the user's word), and is recorded.
    let out = list(&["mcp", "list"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(a.join("A_RAN").exists());
    // The script is rewritten (as the agent's shell could): held, it does not run.
    std::fs::remove_file(a.join("A_RAN")).expect("remove the marker");
    run_sh(&a, &a.join("REWRITTEN_RAN"));
    let out = list(&["mcp", "list"]);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(!a.join("REWRITTEN_RAN").exists(), "{said}");
    assert!(
        said.contains("unapproved") && said.contains("--config"),
        "{said}"
    );
    // Approved with the same --config, it runs.
    let out = list(&["mcp", "approve", "local"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = list(&["mcp", "list"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(a.join("REWRITTEN_RAN").exists());
    let _ = std::fs::remove_dir_all(&root);
}

/// A directory outside the temp dir (every sandbox may write the temp dir).
fn outside_temp(tag: &str) -> PathBuf {
    let temp = std::env::temp_dir();
    let name = format!("harness9-trust-{}-{tag}", std::process::id());
    [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
    ]
    .into_iter()
    .flatten()
    .filter(|base| base.is_absolute() && !base.starts_with(&temp))
    .map(|base| base.join(&name))
    .find(|dir| std::fs::create_dir_all(dir).is_ok())
    .unwrap_or_else(|| panic!("no writable directory outside {}", temp.display()))
}

#[test]
fn a_project_settings_file_cannot_turn_off_the_users_sandbox() {
    let dir = fresh_dir("trust-settings");
    let home = fresh_dir("trust-settings-home");
    let out_dir = outside_temp("settings");
    let approvals = dir.join("approvals.json");
    std::fs::create_dir_all(home.join(".config/harness9")).expect("config dir");
    std::fs::write(
        home.join(".config/harness9/config.toml"),
        "[mcp]\nsandbox = true\n",
    )
    .expect("user settings");
    std::fs::write(
        dir.join("harness9.toml"),
        "max_steps = 7\n[mcp]\nsandbox = false\n",
    )
    .expect("project settings");
    write(
        &dir,
        json!({"plain": {"command": fixture_bin().display().to_string()}}),
    );
    let target = out_dir.join("plain.txt");
    let args = json!({"path": target, "text": "hi"}).to_string();
    let out = isolated(
        &dir,
        &home,
        &approvals,
        &[
            "--approve-project",
            "mcp",
            "call",
            "plain",
            "write",
            "--args",
            &args,
        ],
        &[],
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        !target.exists(),
        "the project's settings turned the sandbox off: {said}"
    );
    assert!(said.contains("Permission denied"), "{said}");
    assert!(
        said.contains("harness9.toml:3") && said.contains("sandbox") && said.contains("ignored"),
        "no warning naming the file, line and key: {said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&home);
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn a_vscode_input_prompt_waits_for_approval_and_names_its_server() {
    tmux_required();
    let dir = fresh_dir("trust-inputs");
    std::fs::create_dir_all(dir.join(".vscode")).expect("create .vscode");
    let config = json!({
        "inputs": [{"type": "promptString", "id": "api-key",
                    "description": "Paste the repository-written question", "password": true}],
        "servers": {"gh": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                            "headers": {"Authorization": "Bearer ${input:api-key}"}}}
    });
    std::fs::write(dir.join(".vscode/mcp.json"), config.to_string()).expect("write mcp.json");
    let approvals = dir.join("approvals.json");
    let inputs = dir.join("inputs.json");
    let t = Tmux::start_with(
        &dir,
        &[],
        None,
        &[
            ("HARNESS9_APPROVALS", &approvals.to_string_lossy()),
            ("HARNESS9_INPUTS", &inputs.to_string_lossy()),
        ],
    );
    let s = t.wait_for("the trust screen for gh", BOUND, |s| {
        s.contains("approve this project's MCP servers?") && s.contains("> gh") && settled(s)
    });
    assert!(
        !s.contains("repository-written question"),
        "the input prompt showed before approval:\n{s}"
    );
    assert!(s.contains("Authorization"), "{s}");
    t.send_keys(&["y"]);
    let s = t.wait_for("the input prompt after approval", BOUND, |s| {
        s.contains("repository-written question")
    });
    assert!(
        s.contains("server \"gh\""),
        "the prompt does not name its server:\n{s}"
    );
    t.wait_for("the input prompt, settled", BOUND, settled);
    t.send_keys(&["Escape"]);
    t.wait_for("the prompt skipped", BOUND, |s| {
        !s.contains("repository-written question") && s.contains("skipped")
    });
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_env_file_that_is_a_device_fails_its_server_instead_of_filling_memory() {
    let dir = fresh_dir("trust-envfile");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    write(
        &dir,
        json!({"zero": {"command": fixture_bin().display().to_string(), "envFile": "/dev/zero"},
               "good": {"command": fixture_bin().display().to_string()}}),
    );
    let approvals = dir.join("approvals.json");
    // `isolated` bounds the command (60 s, then it fails): a read of /dev/zero never ends, so
    // the answer below, naming the device, is the proof it was not read.
    let out = isolated(
        &dir,
        &home,
        &approvals,
        &["--config", ".mcp.json", "mcp", "list"],
        &[],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.starts_with("zero "))
        .unwrap_or_else(|| panic!("no row for zero:\n{stdout}"));
    assert!(
        row.contains("failed") && row.contains("envFile") && row.contains("not a regular file"),
        "{row}"
    );
    assert!(stdout
        .lines()
        .any(|l| l.starts_with("good ") && l.contains("connected")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Type-ahead on the trust screen: a hot reload adds a server while the user types "what
/// about this repo?"; the screen opens mid-typing and the `a`s (approve all) answer nothing:
/// the server does not start. Once the question has settled, `n` declines it.
#[test]
fn keys_typed_as_the_trust_screen_opens_approve_nothing() {
    tmux_required();
    let dir = project("trust-typeahead", |_| json!({}));
    let marker = dir.join("MARKER");
    let approvals = dir.join("approvals.json");
    let t = Tmux::start_with(
        &dir,
        &[],
        None,
        &[("HARNESS9_APPROVALS", &approvals.to_string_lossy())],
    );
    t.wait_for("the session", BOUND, |s| {
        s.contains("Type /help for commands")
    });
    // Typing goes on until the screen has shown, then for one more phrase (bounded).
    let mut opened_while_typing = false;
    let mut phrases_after = 0;
    for round in 0..40 {
        for (i, c) in "what about this repo? ".chars().enumerate() {
            if round == 0 && i == 4 {
                // The repository changes under the running session (test input).
                let changed = json!({"mcpServers": {"u": marking_server(&marker, "")}});
                write_config(&dir, &changed.to_string());
            }
            t.send_keys(&[&c.to_string()]);
            std::thread::sleep(std::time::Duration::from_millis(40));
        }
        opened_while_typing |= t.screen().contains("approve this project's MCP servers?");
        if opened_while_typing {
            phrases_after += 1;
            if phrases_after == 2 {
                break;
            }
        }
    }
    // The question settles only after a pause with nothing typed: a key taken as an answer
    // would have closed it (and started the server) by then.
    let s = t.wait_for("the trust screen, settled", BOUND, |s| {
        s.contains("approve this project's MCP servers?") && s.contains("> u") && settled(s)
    });
    assert!(
        !marker.exists(),
        "typed-ahead keys approved the server:\n{s}"
    );
    assert!(!approvals.exists(), "an approval was saved:\n{s}");
    assert!(
        opened_while_typing,
        "the screen did not open during the typing:\n{s}"
    );
    t.wait_for("the trust screen, settled", BOUND, |s| {
        s.contains("approve this project's MCP servers?") && s.contains("> u") && settled(s)
    });
    t.send_keys(&["n"]);
    t.wait_for("declined", BOUND, |s| s.contains("declined 1 server"));
    assert!(!marker.exists(), "a declined server started");
    t.send_keys(&["C-c"]);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// The trust screen approves exactly the spec it showed: a change made while it is open, in a
/// value it does not show (an env value: only env keys are shown), is not approved by a `y`
/// typed right after; the changed server is asked about anew.
#[test]
fn a_change_the_trust_screen_does_not_show_is_not_approved_by_its_answer() {
    tmux_required();
    let server = |marker: &Path, mode: &str| {
        let script = format!(
            "echo \"$MODE\" > '{}'; exec '{}'",
            marker.display(),
            fixture_bin().display()
        );
        json!({"command": "sh", "args": ["-c", script], "env": {"MODE": mode}})
    };
    let dir = project(
        "trust-race",
        |dir| json!({"t": server(&dir.join("MARKER"), "shown")}),
    );
    let marker = dir.join("MARKER");
    let approvals = dir.join("approvals.json");
    let t = Tmux::start_with(
        &dir,
        &[],
        None,
        &[("HARNESS9_APPROVALS", &approvals.to_string_lossy())],
    );
    t.wait_for("the trust screen, settled", BOUND, |s| {
        s.contains("approve this project's MCP servers?") && s.contains("> t") && settled(s)
    });
    // The repository changes the value behind the screen, and the user answers at once.
    let changed = json!({"mcpServers": {"t": server(&marker, "changed")}});
    write_config(&dir, &changed.to_string());
    t.send_keys(&["y"]);
    let s = t.wait_for("the changed spec asked about anew", BOUND, |s| {
        s.contains("NEW ·") || bar(s).contains("t ●")
    });
    assert!(
        !bar(&s).contains("t ●") && !marker.exists(),
        "the answer to the shown spec approved the changed one:\n{s}"
    );
    t.wait_for("the new question, settled", BOUND, |s| {
        s.contains("approve this project's MCP servers?") && s.contains("> t") && settled(s)
    });
    t.send_keys(&["n"]);
    t.wait_for("declined", BOUND, |s| s.contains("declined 1 server"));
    assert!(!marker.exists(), "a declined server started");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_sandbox_grant_over_the_saved_permissions_or_the_tool_cache_keeps_its_server_from_starting() {
    // A sandboxed server that could write the remembered "always" answers (allow any call) or
    // the tool-list cache (another server's tools with annotations of its choosing) does not
    // start; one granted elsewhere does.
    let dir = fresh_dir("trust-guarded-stores");
    let home = fresh_dir("trust-guarded-stores-home");
    let approvals = dir.join("approvals.json");
    let state = home.join(".state/harness9");
    let cache = home.join("cache");
    for d in [&state, &cache, &dir.join("out")] {
        std::fs::create_dir_all(d).expect("create a dir");
    }
    let fixture = fixture_bin().display().to_string();
    write(
        &dir,
        json!({
            "perms": {"command": fixture, "sandbox": {"writable": [state.display().to_string()]}},
            "cache": {"command": fixture, "sandbox": {"writable": [cache.display().to_string()]}},
            "fine": {"command": fixture, "sandbox": {"writable": [dir.join("out").display().to_string()]}}
        }),
    );
    let cache_var = cache.display().to_string();
    let out = isolated(
        &dir,
        &home,
        &approvals,
        &["--approve-project", "mcp", "list", "--json"],
        &[("HARNESS9_TOOL_CACHE", cache_var.as_str())],
    );
    let list: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    let server = |name: &str| {
        list.as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let perms = server("perms");
    assert_eq!(perms["status"], "failed", "{perms}");
    assert!(
        perms["error"].as_str().is_some_and(
            |e| e.contains("remembered permissions") && e.contains("allow any tool call")
        ),
        "{perms}"
    );
    let cached = server("cache");
    assert_eq!(cached["status"], "failed", "{cached}");
    assert!(
        cached["error"]
            .as_str()
            .is_some_and(|e| e.contains("tool-list cache")),
        "{cached}"
    );
    assert_eq!(server("fine")["status"], "connected", "{list}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&home);
}
