//! The system opener against real processes: `harness9 mcp login` with a `$BROWSER` stand-in
//! that records its argv, against the HTTP fixture's OAuth server whose metadata names a
//! hostile authorization endpoint (an option, `file:`, `javascript:`, a custom scheme, plain
//! http elsewhere, ESC/OSC 52, U+202E): nothing is opened and the login fails saying why. A
//! good endpoint is opened as exactly the string printed. And `mcp login` of an unapproved
//! project server contacts nothing.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::common::{output_within, temp_path, without_user_env};
use super::http::http_fixture;

/// A `$BROWSER` stand-in in `dir`: appends each argument as a line to `argv.txt`, then (with
/// `follow`) does what a person's browser does with the page (harness9's own stand-in).
fn browser(dir: &Path, follow: bool) -> (PathBuf, PathBuf) {
    let argv = dir.join("argv.txt");
    let script = dir.join("browser.sh");
    let then = if follow {
        format!(
            "exec '{}' conformance-browser \"$@\"\n",
            env!("CARGO_BIN_EXE_harness9")
        )
    } else {
        String::new()
    };
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '{}'; done\n{then}",
            argv.display()
        ),
    )
    .unwrap();
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, exec).unwrap();
    (script, argv)
}

/// `harness9 ARGS` in `dir` with `$BROWSER`, a private OAuth store, approvals and HOME.
fn h9(dir: &Path, browser: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness9"));
    c.args(args)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        .env("BROWSER", browser);
    without_user_env(&mut c);
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_hostile_authorization_endpoint_is_never_opened() {
    for (i, endpoint) in [
        "--evil-option=--renderer-cmd-prefix=touch /tmp/h9-pwned",
        "-https://auth.example/authorize",
        "file:///etc/passwd",
        "javascript:alert(document.cookie)//",
        "x-harness9-evil://open",
        "http://auth.example/authorize",
        "https://auth.example/authorize\u{1b}]52;c;aGFja2Vk\u{7}",
        "https://auth.example/\u{202e}gpj.exe",
    ]
    .into_iter()
    .enumerate()
    {
        // One argument with `=`: argparse would read a value starting with `-` as an option.
        let arg = format!("--auth-endpoint={endpoint}");
        let srv = http_fixture("oauth", &[&arg]);
        let dir = temp_path(&format!("opener-evil-{i}"));
        std::fs::create_dir_all(dir.join("home")).unwrap();
        let config = dir.join("s.mcp.json");
        let url = format!("http://127.0.0.1:{}/mcp", srv.port);
        std::fs::write(
            &config,
            json!({"mcpServers": {"o": {"url": url}}}).to_string(),
        )
        .unwrap();
        let (script, argv) = browser(&dir, false);
        let config_s = config.to_string_lossy().into_owned();
        let out = output_within(
            h9(&dir, &script, &["--config", &config_s, "mcp", "login", "o"]),
            None,
            Duration::from_secs(20),
        );
        let stderr = text(&out.stderr);
        let opened = std::fs::read_to_string(&argv).ok();
        assert_eq!(
            opened, None,
            "{endpoint:?} was handed to $BROWSER\n{stderr}"
        );
        assert_eq!(out.status.code(), Some(1), "{endpoint:?}: {stderr}");
        // Refused where the metadata is checked, or at the latest before the opener.
        assert!(
            stderr.contains("refusing the authorization server's login address")
                || stderr.contains("the authorization endpoint"),
            "{endpoint:?}: {stderr}"
        );
        // Nothing of the address was offered to open by hand either.
        assert!(!stderr.contains("visit:"), "{endpoint:?}: {stderr}");
    }
}

#[test]
fn a_good_authorization_address_is_opened_exactly_as_printed() {
    let srv = http_fixture("oauth", &[]);
    let dir = temp_path("opener-good");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let config = dir.join("s.mcp.json");
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    std::fs::write(
        &config,
        json!({"mcpServers": {"o": {"url": url}}}).to_string(),
    )
    .unwrap();
    let (script, argv) = browser(&dir, true);
    let config_s = config.to_string_lossy().into_owned();
    let out = output_within(
        h9(&dir, &script, &["--config", &config_s, "mcp", "login", "o"]),
        None,
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", text(&out.stdout));
    let opened = std::fs::read_to_string(&argv).unwrap_or_default();
    let args: Vec<&str> = opened.lines().collect();
    assert_eq!(args.len(), 1, "one argument, the address: {args:?}");
    assert!(args[0].starts_with("http://127.0.0.1:"), "{args:?}");
    let printed = stderr
        .lines()
        .skip_while(|l| !l.ends_with("visit:"))
        .nth(1)
        .map(str::trim)
        .unwrap_or_default();
    assert_eq!(
        printed, args[0],
        "the printed copy is what was opened\n{stderr}"
    );
}

/// `mcp login` of a project server that is not approved: an error with the approve hint, and
/// no connection at all to its address (no probe, no registration, no browser).
#[test]
fn mcp_login_of_an_unapproved_project_server_contacts_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let dir = temp_path("opener-unapproved");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"o": {"url": url}}}).to_string(),
    )
    .unwrap();
    let (script, argv) = browser(&dir, false);
    let out = output_within(
        h9(&dir, &script, &["mcp", "login", "o"]),
        None,
        Duration::from_secs(20),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("harness9 mcp approve o"), "{stderr}");
    assert!(!argv.exists(), "the browser was started\n{stderr}");
    // Nothing connected (the listener was open all along: a connect would be queued).
    let mut contacted = Vec::new();
    while let Ok((mut conn, _)) = listener.accept() {
        let mut head = [0u8; 200];
        let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
        let n = conn.read(&mut head).unwrap_or(0);
        contacted.push(text(&head[..n]));
    }
    assert!(contacted.is_empty(), "contacted: {contacted:?}\n{stderr}");
}
