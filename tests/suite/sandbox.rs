//! The Landlock sandbox of stdio servers (`"sandbox"` in `.mcp.json`, `[mcp] sandbox` in
//! harness9.toml), run through the real binary against the fixture server's `write` and
//! `connect` tools.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;

/// A directory outside the temp dir (which every sandbox may write) and outside any project:
/// the target dir's tmp, unless the checkout itself lies in the temp dir (a clone in /tmp),
/// then /var/tmp or the home directory.
fn outside(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = std::env::temp_dir();
    let name = format!("harness9-sandbox-{}-{tag}-{n}", std::process::id());
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    let dir = candidates
        .into_iter()
        .flatten()
        .filter(|base| base.is_absolute() && !base.starts_with(&temp))
        .map(|base| base.join(&name))
        .find(|dir| std::fs::create_dir_all(dir).is_ok())
        .unwrap_or_else(|| panic!("no writable directory outside {}", temp.display()));
    dir
}

/// The fixture server's entry, with `sandbox` when given.
fn fixture_entry(sandbox: Option<Value>) -> Value {
    let mut v = stdio_json(fixture("x", &[]));
    if let Some(s) = sandbox {
        v["sandbox"] = s;
    }
    v
}

/// Runs the binary in `dir` (no user settings from this machine), killed after 60 s.
fn harness9(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = harness9_in(dir);
    cmd.args(args)
        .env("XDG_CONFIG_HOME", dir)
        .envs(env.iter().copied());
    output_within(cmd, None, Duration::from_secs(60))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `mcp call SERVER TOOL --args ARGS` in `dir`: (exit code, stdout + stderr).
fn call(dir: &Path, server: &str, tool: &str, args: Value, env: &[(&str, &str)]) -> (i32, String) {
    let out = harness9(
        dir,
        &["mcp", "call", server, tool, "--args", &args.to_string()],
        env,
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    (out.status.code().unwrap_or(-1), all)
}

fn write(dir: &Path, server: &str, path: &Path) -> (i32, String) {
    call(
        dir,
        server,
        "write",
        json!({"path": path, "text": "hi"}),
        &[],
    )
}

#[test]
fn a_sandboxed_server_writes_only_inside_its_paths() {
    let out = outside("write");
    let listed = outside("listed");
    let own = outside("cwd");
    let dir = project_with(
        "sbx-write",
        json!({
            "boxed": fixture_entry(Some(json!({"writable": [listed]}))),
            "open": fixture_entry(None),
        }),
    );
    // A server with a `cwd` of its own may write there.
    let mut with_cwd = fixture_entry(Some(json!(true)));
    with_cwd["cwd"] = json!(own);
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".mcp.json")).unwrap()).unwrap();
    cfg["mcpServers"]["own"] = with_cwd;
    std::fs::write(dir.join(".mcp.json"), cfg.to_string()).unwrap();
    // Outside every granted path: refused in the sandbox, written without it. That includes
    // the project (the config's folder, harness9's working directory) and the shared temp dir.
    let shared_tmp = std::env::temp_dir().join(format!("harness9-sbx-{}.txt", std::process::id()));
    for target in [
        out.join("boxed.txt"),
        dir.join("inside.txt"),
        dir.join(".mcp.json"),
        shared_tmp.clone(),
    ] {
        let before = std::fs::read(&target).ok();
        let (code, said) = write(&dir, "boxed", &target);
        assert_eq!(code, 1, "{}: {said}", target.display());
        assert!(said.contains("Permission denied"), "{said}");
        assert_eq!(
            std::fs::read(&target).ok(),
            before,
            "the sandboxed server wrote {}",
            target.display()
        );
    }
    for target in [
        out.join("open.txt"),
        dir.join("open.txt"),
        shared_tmp.clone(),
    ] {
        let (code, said) = write(&dir, "open", &target);
        assert_eq!(code, 0, "{said}");
        assert!(target.exists());
    }
    let _ = std::fs::remove_file(&shared_tmp);
    // A listed path and its own cwd are writable.
    for (server, target) in [
        ("boxed", listed.join("listed.txt")),
        ("own", own.join("own.txt")),
    ] {
        let (code, said) = write(&dir, server, &target);
        assert_eq!(code, 0, "{}: {said}", target.display());
        assert!(target.exists(), "{}", target.display());
    }
    // Its private temp dir ($TMPDIR) is writable, is not the shared one, and is gone when
    // the session ends.
    let (code, said) = call(
        &dir,
        "boxed",
        "write",
        json!({"path": "scratch.txt", "text": "hi", "tmp": true}),
        &[],
    );
    assert_eq!(code, 0, "{said}");
    let wrote = said
        .split("wrote ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{said}"))
        .to_owned();
    let scratch = Path::new(&wrote).parent().unwrap().to_path_buf();
    assert_ne!(scratch, std::env::temp_dir(), "{said}");
    assert!(!scratch.exists(), "{} was left behind", scratch.display());
    // The device files of normal operation are writable.
    let (code, said) = write(&dir, "boxed", Path::new("/dev/null"));
    assert_eq!(code, 0, "{said}");
    for d in [&out, &listed, &own] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A config file with `servers`, outside the temp dir, for `--config`: (the dir for
/// [`with_config`], the file, in a folder of its own).
fn config_file(tag: &str, servers: Value) -> (PathBuf, PathBuf) {
    let dir = outside(tag);
    std::fs::create_dir_all(dir.join("conf")).unwrap();
    let path = dir.join("conf").join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    (dir, path)
}

/// `harness9 --config PATH args` in `dir`, with no --approve-project.
fn with_config(dir: &Path, path: &Path, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
    cmd.arg("--config")
        .arg(path)
        .args(args)
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("XDG_CONFIG_HOME", dir)
        .env("HARNESS9_SESSIONS", dir.join("sessions"))
        .current_dir(dir);
    output_within(cmd, None, Duration::from_secs(60))
}

#[test]
fn a_sandboxed_server_cannot_make_its_config_run_something_unasked() {
    let marker_dir = outside("marker");
    let marker = marker_dir.join("ran");
    let evil = |boxed: &Value| {
        json!({"mcpServers": {
            "boxed": boxed,
            "evil": {"command": "sh", "args": ["-c", format!("touch '{}'; sleep 5", marker.display())]},
        }})
        .to_string()
    };
    let boxed = fixture_entry(Some(json!(true)));
    let (dir, path) = config_file("cfg", json!({"boxed": boxed}));
    let rewrite = |dir: &Path, path: &Path, boxed: &Value| {
        let args = json!({"path": path, "text": evil(boxed)}).to_string();
        let out = with_config(
            dir,
            path,
            &["mcp", "call", "boxed", "write", "--args", &args],
        );
        (
            out.status.code(),
            format!("{}{}", text(&out.stdout), text(&out.stderr)),
        )
    };
    // By default the config's folder is not writable: the rewrite is refused.
    let before = std::fs::read_to_string(&path).unwrap();
    let (code, said) = rewrite(&dir, &path, &boxed);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);

    // A grant that covers the config file makes the file untrusted: its servers need the
    // user's yes, and a server it gained later is held, never started.
    let boxed = fixture_entry(Some(json!({"writable": [path.parent().unwrap()]})));
    std::fs::write(&path, json!({"mcpServers": {"boxed": boxed}}).to_string()).unwrap();
    let out = with_config(&dir, &path, &["mcp", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(rows.len(), 1, "{}", text(&out.stderr));
    assert_eq!(rows[0]["status"], "unapproved", "{rows:?}");
    let out = with_config(&dir, &path, &["mcp", "approve"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (code, said) = rewrite(&dir, &path, &boxed);
    assert_eq!(code, Some(0), "{said}");
    let out = with_config(&dir, &path, &["mcp", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let evil_row = rows
        .iter()
        .find(|r| r["name"] == "evil")
        .unwrap_or_else(|| panic!("{rows:?} {}", text(&out.stderr)));
    assert_eq!(evil_row["status"], "unapproved", "{rows:?}");
    let boxed_row = rows.iter().find(|r| r["name"] == "boxed").unwrap();
    assert_eq!(boxed_row["status"], "connected", "{rows:?}");
    assert!(
        !marker.exists(),
        "the server the sandboxed one added was started"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&marker_dir);
}

#[test]
fn no_sandbox_reaches_a_unix_socket_and_network_false_refuses_udp() {
    let sockdir = outside("sock");
    let sock = sockdir.join("s.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let udp_addr = udp.local_addr().unwrap().to_string();
    let dir = project_with(
        "sbx-sock",
        json!({
            "boxed": fixture_entry(Some(json!(true))),
            "online": fixture_entry(Some(json!({"network": true}))),
            "open": fixture_entry(None),
        }),
    );
    let (code, said) = call(&dir, "boxed", "unix_connect", json!({"path": sock}), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("cannot connect to"), "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    let (code, said) = call(&dir, "boxed", "udp_send", json!({"addr": udp_addr}), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    // With the network on, still no unix socket: the tmux server's socket path is predictable
    // (/tmp/tmux-UID/default), and D-Bus can start a command outside.
    let (code, said) = call(&dir, "online", "unix_connect", json!({"path": sock}), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    let (code, said) = call(&dir, "open", "unix_connect", json!({"path": sock}), &[]);
    assert_eq!(code, 0, "{said}");
    let _ = listener.accept();
    for server in ["online", "open"] {
        let (code, said) = call(&dir, server, "udp_send", json!({"addr": udp_addr}), &[]);
        assert_eq!(code, 0, "{server}: {said}");
        let mut buf = [0u8; 16];
        let (n, _) = udp.recv_from(&mut buf).expect("the datagram arrives");
        assert_eq!(&buf[..n], b"fixture");
    }
    let _ = std::fs::remove_dir_all(&sockdir);
}

#[test]
fn a_sandboxed_server_cannot_read_harness9s_proc_nor_signal_outside() {
    let dir = project_with(
        "sbx-proc",
        json!({
            "boxed": fixture_entry(Some(json!({"network": true}))),
            "open": fixture_entry(None),
        }),
    );
    let (code, said) = call(
        &dir,
        "boxed",
        "read",
        json!({"path": "environ", "parent": true}),
        &[],
    );
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    let (code, said) = call(
        &dir,
        "open",
        "read",
        json!({"path": "environ", "parent": true}),
        &[],
    );
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("PATH="), "{said}");
    // No capability inside, even when harness9 runs as root.
    let caps = |server: &str| -> Vec<(String, u64)> {
        let (code, said) = call(
            &dir,
            server,
            "read",
            json!({"path": "/proc/self/status"}),
            &[],
        );
        assert_eq!(code, 0, "{said}");
        said.lines()
            .filter_map(|l| l.trim().strip_prefix("Cap"))
            .filter_map(|l| l.split_once(':'))
            .filter_map(|(k, v)| Some((k.to_owned(), u64::from_str_radix(v.trim(), 16).ok()?)))
            .collect()
    };
    let boxed = caps("boxed");
    assert!(boxed.len() >= 4, "{boxed:?}");
    for (set, bits) in &boxed {
        if set == "Eff" || set == "Prm" || set == "Inh" || set == "Amb" {
            assert_eq!(*bits, 0, "Cap{set}: {boxed:?}");
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(boxed.iter().all(|(_, b)| *b == 0), "{boxed:?}");
        let open = caps("open");
        assert!(open.iter().any(|(s, b)| s == "Eff" && *b != 0), "{open:?}");
    }
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let (code, said) = call(&dir, "boxed", "kill", json!({"pid": pid}), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("Operation not permitted"), "{said}");
    assert!(victim.try_wait().unwrap().is_none(), "the victim died");
    let (code, said) = call(&dir, "open", "kill", json!({"pid": pid}), &[]);
    assert_eq!(code, 0, "{said}");
    assert!(
        poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            victim.try_wait().ok().flatten().is_some()
        }),
        "the unsandboxed kill did not land"
    );
}

#[test]
fn servers_get_an_allowlisted_environment_plus_their_own() {
    let mut boxed = fixture_entry(Some(json!(true)));
    let mut open = fixture_entry(None);
    for e in [&mut boxed, &mut open] {
        e["env"] = json!({"GIVEN": "${H9_TEST_PASSED}"});
        e["envFile"] = json!("vars.env");
    }
    let dir = project_with("sbx-env", json!({"boxed": boxed, "open": open}));
    std::fs::write(dir.join("vars.env"), "FROM_FILE=yes\n").unwrap();
    let vars = [
        ("ANTHROPIC_API_KEY", "sk-ant-secret"),
        ("OPENAI_API_KEY", "sk-openai-secret"),
        ("H9_TEST_PASSED", "given-by-entry"),
        ("LC_TIME", "C"),
        ("TZ", "UTC"),
    ];
    for server in ["boxed", "open"] {
        let (code, said) = call(&dir, server, "env", json!({}), &vars);
        assert_eq!(code, 0, "{said}");
        assert!(!said.contains("secret"), "{server}: {said}");
        assert!(!said.contains("H9_TEST_PASSED"), "{server}: {said}");
        for want in [
            "GIVEN=given-by-entry",
            "FROM_FILE=yes",
            "LC_TIME=C",
            "TZ=UTC",
            "PATH=",
            "HOME=",
        ] {
            assert!(said.contains(want), "{server} lacks {want}: {said}");
        }
        let tmp = std::env::temp_dir().display().to_string();
        let tmpdir = said
            .lines()
            .find_map(|l| l.trim().strip_prefix("TMPDIR="))
            .unwrap_or_default();
        if server == "boxed" {
            assert!(
                tmpdir.starts_with(&tmp)
                    && tmpdir.trim_end_matches('/') != tmp.trim_end_matches('/'),
                "{said}"
            );
        }
    }
}

#[test]
fn network_false_refuses_a_tcp_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let dir = project_with(
        "sbx-net",
        json!({
            "boxed": fixture_entry(Some(json!(true))),
            "online": fixture_entry(Some(json!({"network": true}))),
            "open": fixture_entry(None),
        }),
    );
    let (code, said) = call(&dir, "boxed", "connect", json!({"addr": addr}), &[]);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains(&format!("cannot connect to {addr}: Permission denied")),
        "{said}"
    );
    for server in ["online", "open"] {
        let (code, said) = call(&dir, server, "connect", json!({"addr": addr}), &[]);
        assert_eq!(code, 0, "{server}: {said}");
        assert!(said.contains(&format!("connected to {addr}")), "{said}");
    }
}

#[test]
fn a_kernel_without_the_needed_landlock_keeps_the_server_from_starting() {
    let dir = project_with(
        "sbx-abi",
        json!({
            "boxed": fixture_entry(Some(json!(true))),
            "online": fixture_entry(Some(json!({"network": true}))),
            "open": fixture_entry(None),
        }),
    );
    let status = |abi: &str| -> Vec<Value> {
        let out = harness9(
            &dir,
            &["mcp", "list", "--json"],
            &[("HARNESS9_LANDLOCK_ABI", abi)],
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let row = |rows: &[Value], name: &str| -> Value {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {rows:?}"))
            .clone()
    };
    // No Landlock at all: no sandboxed server starts; the others do.
    let rows = status("0");
    for name in ["boxed", "online"] {
        let r = row(&rows, name);
        assert_eq!(r["status"], "failed", "{r}");
        let e = r["error"].as_str().unwrap();
        assert!(
            e.contains("sandbox cannot be applied, so the server is not started: this kernel has no Landlock"),
            "{e}"
        );
    }
    assert_eq!(row(&rows, "open")["status"], "connected");
    // ABI 3 has file rules but no TCP rules: only the server that allows the network starts.
    let rows = status("3");
    let r = row(&rows, "boxed");
    assert_eq!(r["status"], "failed", "{r}");
    let e = r["error"].as_str().unwrap();
    assert!(
        e.contains("\"network\": false needs Landlock ABI 4 (Linux 6.7 or later) and this kernel has ABI 3"),
        "{e}"
    );
    assert_eq!(row(&rows, "online")["status"], "connected");
    assert_eq!(row(&rows, "open")["status"], "connected");
}

#[test]
fn the_settings_default_sandboxes_every_stdio_server_without_its_own_entry() {
    let out = outside("default");
    let dir = project_with(
        "sbx-default",
        json!({
            "plain": fixture_entry(None),
            "exempt": fixture_entry(Some(json!(false))),
        }),
    );
    std::fs::write(dir.join("harness9.toml"), "[mcp]\nsandbox = true\n").unwrap();
    let target = out.join("plain.txt");
    let (code, said) = write(&dir, "plain", &target);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    assert!(!target.exists());
    let target = out.join("exempt.txt");
    let (code, said) = write(&dir, "exempt", &target);
    assert_eq!(code, 0, "{said}");
    assert!(target.exists());
    // A wrong value is a config error naming the file (exit 2), not a silent default.
    std::fs::write(dir.join("harness9.toml"), "[mcp]\nsandbox = \"yes\"\n").unwrap();
    let (code, said) = write(&dir, "plain", &out.join("x.txt"));
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("harness9.toml:2:"), "{said}");
    let _ = std::fs::remove_dir_all(&out);
}

/// server-everything's script.
fn everything_js() -> String {
    stdio_json(everything("x"))["args"][0]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_reference_servers_work_in_the_strictest_sandbox() {
    // Node (server-everything) and Python (the PyPI `mcp` SDK), each run directly and as a
    // grandchild (`sh -c`, as `npx`/`uvx` do), with the network off: sockets refused, no
    // shared temp dir, no other process's /proc.
    let wrapped = |spec: harness9_actors::ServerSpec| {
        let v = stdio_json(spec);
        let mut line = vec![v["command"].as_str().unwrap_or_default().to_owned()];
        line.extend(
            v["args"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(|a| format!("'{a}'"))),
        );
        json!({"command": "sh", "args": ["-c", format!("{}; exit $?", line.join(" "))], "sandbox": true})
    };
    let direct = |spec: harness9_actors::ServerSpec| {
        let mut v = stdio_json(spec);
        v["sandbox"] = json!(true);
        v
    };
    let dir = project_with(
        "sbx-ref",
        json!({
            "node": direct(everything("node")),
            "node_sh": wrapped(everything("node_sh")),
            "py": direct(python("py")),
            "py_sh": wrapped(python("py_sh")),
            "node_net": {"command": "sh", "args": ["-c", format!("exec node '{}' stdio", everything_js())],
                         "sandbox": {"network": true}},
        }),
    );
    for (server, tool, args, want) in [
        ("node", "echo", json!({"message": "hi"}), "Echo: hi"),
        ("node_sh", "echo", json!({"message": "hi"}), "Echo: hi"),
        ("py", "echo", json!({"text": "hi"}), "hi"),
        ("py_sh", "echo", json!({"text": "hi"}), "hi"),
        ("node_net", "echo", json!({"message": "hi"}), "Echo: hi"),
    ] {
        let (code, said) = call(&dir, server, tool, args, &[]);
        assert_eq!(code, 0, "{server}: {said}");
        assert!(said.contains(want), "{server}: {said}");
    }
}

#[test]
fn a_server_a_sandboxed_one_adds_to_its_config_waits_in_the_tui() {
    super::tui::tmux_required();
    use super::tui::{bar, Tmux, BOUND};
    let dir = temp_path("sbx-tui");
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let path = conf.join("mcp.json");
    let marker = dir.join("ran");
    let boxed = fixture_entry(Some(json!({"writable": [conf]})));
    std::fs::write(&path, json!({"mcpServers": {"boxed": boxed}}).to_string()).unwrap();
    let approvals = dir.join("approvals.json");
    let approvals_s = approvals.display().to_string();
    let dir_s = dir.display().to_string();
    let path_s = path.display().to_string();
    // The user approved the config as it is (its folder is granted: it asks).
    let out = with_config(&dir, &path, &["mcp", "approve"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = Tmux::start_with(
        &dir,
        &["--config", &path_s],
        None,
        &[
            ("HARNESS9_APPROVALS", &approvals_s),
            ("XDG_CONFIG_HOME", &dir_s),
        ],
    );
    t.wait_for("boxed connected", BOUND, |s| bar(s).contains("boxed ●"));
    // The sandboxed server rewrites the config it was started from, adding a server.
    let evil = json!({"mcpServers": {
        "boxed": boxed,
        "evil": {"command": "sh", "args": ["-c", format!("touch '{}'; sleep 5", marker.display())]},
    }});
    let args = json!({"path": path, "text": evil.to_string()}).to_string();
    let out = with_config(
        &dir,
        &path,
        &["mcp", "call", "boxed", "write", "--args", &args],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    t.wait_for("the trust screen for the added server", BOUND, |s| {
        s.contains("approve this project's MCP servers?")
            && s.contains("> evil")
            && bar(s).contains("evil ? unapproved")
            && super::tui::settled(s)
    });
    assert!(
        !marker.exists(),
        "the added server started without approval"
    );
    t.send_keys(&["n"]);
    t.wait_for("declined, evil still held", BOUND, |s| {
        s.contains("declined 1 server") && bar(s).contains("evil ? unapproved")
    });
    assert!(!marker.exists(), "a declined server started");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn an_env_file_under_a_grant_exposes_its_config() {
    // The config's folder is not granted, but the `envFile` it reads is: a sandboxed server
    // could set NODE_OPTIONS for any server of the file, so the file's servers need approval.
    let data = outside("data");
    std::fs::write(data.join("vars.env"), "A=1\n").unwrap();
    let mut boxed = fixture_entry(Some(json!({"writable": [data]})));
    boxed["envFile"] = json!(data.join("vars.env"));
    let (dir, path) = config_file(
        "envfile",
        json!({"boxed": boxed, "open": fixture_entry(None)}),
    );
    let out = with_config(&dir, &path, &["mcp", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(rows.len(), 2, "{}", text(&out.stderr));
    for r in &rows {
        assert_eq!(r["status"], "unapproved", "{rows:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn an_unsandboxed_server_whose_program_a_sandboxed_one_may_write_does_not_start() {
    let bin = outside("bin");
    let script = bin.join("run.sh");
    let marker = bin.join("ran");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    let dir = project_with(
        "sbx-planted",
        json!({
            "boxed": fixture_entry(Some(json!({"writable": [bin]}))),
            "direct": {"command": script},
            "as_arg": {"command": "sh", "args": [script]},
            "open": fixture_entry(None),
        }),
    );
    let out = harness9(&dir, &["mcp", "list", "--json"], &[]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    for name in ["direct", "as_arg"] {
        let r = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{rows:?}"));
        assert_eq!(r["status"], "failed", "{r}");
        let e = r["error"].as_str().unwrap_or_default();
        assert!(
            e.contains("the sandboxed server \"boxed\" may write")
                && e.contains("which this unsandboxed server runs"),
            "{e}"
        );
    }
    for name in ["boxed", "open"] {
        let r = rows.iter().find(|r| r["name"] == name).unwrap();
        assert_eq!(r["status"], "connected", "{r}");
    }
    assert!(!marker.exists());
    let _ = std::fs::remove_dir_all(&bin);
}

#[test]
fn a_user_file_a_sandboxed_server_may_write_asks_in_the_tui() {
    super::tui::tmux_required();
    use super::tui::{bar, Tmux, BOUND};
    // The user's ~/.config/harness9/mcp.json, its folder granted to its own sandboxed server.
    let dir = temp_path("sbx-user");
    let user_dir = dir.join("xdg").join("harness9");
    std::fs::create_dir_all(&user_dir).unwrap();
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let boxed = fixture_entry(Some(json!({"writable": [user_dir]})));
    std::fs::write(
        user_dir.join("mcp.json"),
        json!({"mcpServers": {"mine": boxed}}).to_string(),
    )
    .unwrap();
    let approvals = dir.join("approvals.json").display().to_string();
    let xdg = dir.join("xdg").display().to_string();
    let t = Tmux::start_with(
        &project,
        &[],
        None,
        &[
            ("HARNESS9_APPROVALS", &approvals),
            ("XDG_CONFIG_HOME", &xdg),
        ],
    );
    t.wait_for("the trust screen for the user file's server", BOUND, |s| {
        s.contains("> mine") && bar(s).contains("mine ? unapproved") && super::tui::settled(s)
    });
    t.send_keys(&["y"]);
    t.wait_for("mine connected after y", BOUND, |s| {
        bar(s).contains("mine ●")
    });
    let saved = std::fs::read_to_string(&approvals).unwrap_or_default();
    assert!(
        saved.contains("\"mine\"") && saved.contains("exposed"),
        "{saved}"
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// `git init` in `dir` (no user or system config).
fn git_init(dir: &Path) {
    let mut cmd = std::process::Command::new("git");
    cmd.args(["init", "-q"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir);
    let out = output_within(cmd, None, Duration::from_secs(30));
    assert!(out.status.success(), "git init: {}", text(&out.stderr));
}

#[test]
fn a_sandboxed_server_cannot_write_the_git_of_a_repository_it_may_write() {
    // One repository is the server's `cwd`, another a `writable` path: both writable but
    // their `.git` (hooks and config run when the user runs git there).
    let own = outside("git-cwd");
    let listed = outside("git-listed");
    for d in [&own, &listed] {
        git_init(d);
    }
    let mut boxed = fixture_entry(Some(json!({"writable": [listed]})));
    boxed["cwd"] = json!(own);
    let dir = project_with(
        "sbx-git",
        json!({"boxed": boxed, "open": fixture_entry(None)}),
    );
    for repo in [&own, &listed] {
        let before = std::fs::read(repo.join(".git/config")).unwrap();
        for target in [repo.join(".git/config"), repo.join(".git/hooks/pre-commit")] {
            let (code, said) = write(&dir, "boxed", &target);
            assert_eq!(code, 1, "{}: {said}", target.display());
            assert!(said.contains("Read-only file system"), "{said}");
        }
        assert_eq!(std::fs::read(repo.join(".git/config")).unwrap(), before);
        assert!(!repo.join(".git/hooks/pre-commit").exists());
        // The rest of the repository is the server's to write.
        let (code, said) = write(&dir, "boxed", &repo.join("work.txt"));
        assert_eq!(code, 0, "{said}");
        // An unsandboxed server writes the same file.
        let (code, said) = write(&dir, "open", &repo.join(".git/hooks/pre-commit"));
        assert_eq!(code, 0, "{said}");
    }
    for d in [&own, &listed] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn without_namespaces_a_server_whose_grant_holds_a_git_does_not_start() {
    let repo = outside("git-nons");
    git_init(&repo);
    let plain = outside("plain-nons");
    let mut boxed = fixture_entry(Some(json!(true)));
    boxed["cwd"] = json!(repo);
    let mut other = fixture_entry(Some(json!(true)));
    other["cwd"] = json!(plain);
    let dir = project_with("sbx-git-nons", json!({"boxed": boxed, "other": other}));
    // A container's seccomp policy that refuses namespaces (tests/suite/shell_sandbox.rs).
    let mut cmd = std::process::Command::new(super::shell_sandbox::no_unshare());
    cmd.arg(env!("CARGO_BIN_EXE_harness9"))
        .args(["--approve-project", "mcp", "list", "--json"])
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_SESSIONS", dir.join("sessions"))
        .env("HARNESS9_TOOL_CACHE", dir.join("tool-cache"))
        .env("XDG_CONFIG_HOME", &dir)
        .current_dir(&dir);
    let out = output_within(cmd, None, Duration::from_secs(60));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).cloned().unwrap();
    let r = row("boxed");
    assert_eq!(r["status"], "failed", "{r}");
    let e = r["error"].as_str().unwrap_or_default();
    let git = std::fs::canonicalize(repo.join(".git")).unwrap();
    assert!(
        e.contains(&format!(
            "sandbox cannot be applied, so the server is not started: cannot keep {} read-only: ",
            git.display()
        )) && e.contains("Operation not permitted")
            && e.contains("make no writable path hold them"),
        "{e}"
    );
    // Nothing to keep: it starts as before.
    assert_eq!(row("other")["status"], "connected", "{rows:?}");
    for d in [&repo, &plain] {
        let _ = std::fs::remove_dir_all(d);
    }
}
