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
    let dir = project_with(
        "sbx-write",
        json!({
            "boxed": fixture_entry(Some(json!({"writable": [listed]}))),
            "open": fixture_entry(None),
        }),
    );
    // Outside every allowed path: refused in the sandbox, written without it.
    let target = out.join("boxed.txt");
    let (code, said) = write(&dir, "boxed", &target);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    assert!(
        !target.exists(),
        "the sandboxed server wrote outside its paths"
    );
    let target = out.join("open.txt");
    let (code, said) = write(&dir, "open", &target);
    assert_eq!(code, 0, "{said}");
    assert!(target.exists());
    // The project directory, a listed path and the temp directory are writable.
    for target in [
        dir.join("inside.txt"),
        listed.join("listed.txt"),
        std::env::temp_dir().join(format!("harness9-sbx-{}.txt", std::process::id())),
    ] {
        let (code, said) = write(&dir, "boxed", &target);
        assert_eq!(code, 0, "{}: {said}", target.display());
        assert!(target.exists(), "{}", target.display());
        let _ = std::fs::remove_file(&target);
    }
    // The device files of normal operation are writable.
    let (code, said) = write(&dir, "boxed", Path::new("/dev/null"));
    assert_eq!(code, 0, "{said}");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&listed);
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
