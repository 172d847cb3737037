//! Enterprise-managed authorization through the commands and settings a user has: the IdP in
//! the user's `[enterprise_idp]`, one SSO login (`harness9 mcp login`, the browser being the
//! `$BROWSER` stand-in that follows the redirect), then tokens for the MCP server without the
//! user: the ID token exchanged at a real OpenID Connect IdP (tests/python/idp_server.py) for
//! an ID-JAG, the JWT bearer grant with it at a real authorization server on the PyPI `mcp`
//! SDK (tests/python/cc_oauth_server.py) whose tokens die after two requests. The ID token and
//! the ID-JAGs show nowhere but the token store; a project cannot choose the IdP.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::{free_port, plain_http, spawn_server, Proc};

const SECRET: &str = "ema-secret-0c4d19e2b6";

/// The IdP and the MCP server (with its authorization server) that trusts it.
struct Pair {
    idp: Proc,
    mcp: Proc,
}

fn start(tag: &str, idp_args: &[&str]) -> (Pair, PathBuf) {
    let dir = temp_path(&format!("ema-{tag}"));
    std::fs::create_dir_all(dir.join("xdg/harness9")).unwrap();
    let key = dir.join("idp-key.pem");
    let py = repo().join(".deps/venv/bin/python");
    let port = free_port();
    let mut c = Command::new(&py);
    c.arg(repo().join("tests/python/idp_server.py"))
        .args(["--port", &port.to_string(), "--key-out"])
        .arg(&key)
        .args(idp_args);
    let idp = spawn_server(c, port, "READY");
    let port = free_port();
    let mut c = Command::new(&py);
    c.arg(repo().join("tests/python/cc_oauth_server.py"))
        .args(["--port", &port.to_string(), "--client-id", "ci-job"])
        .args(["--client-secret", SECRET, "--token-uses", "2", "--jag-key"])
        .arg(&key);
    let mcp = spawn_server(c, port, "READY");
    let body = json!({"mcpServers": {"o": {
        "url": format!("http://127.0.0.1:{}/mcp", mcp.port),
        "oauth": {
            "grant": "enterprise",
            "clientId": "ci-job",
            "clientSecret": "${CC_SECRET}",
            "issuer": format!("http://127.0.0.1:{}", mcp.port),
        },
    }}});
    std::fs::write(dir.join("c.mcp.json"), body.to_string()).unwrap();
    let settings = format!(
        "[enterprise_idp]\nissuer = \"http://127.0.0.1:{}\"\nclient_id = \"h9-sso\"\n",
        idp.port
    );
    std::fs::write(dir.join("xdg/harness9/config.toml"), settings).unwrap();
    (Pair { idp, mcp }, dir)
}

/// `harness9 -vv --trace DIR/trace.jsonl --config DIR/c.mcp.json ARGS`, the user's settings in
/// `DIR/xdg`, the secret in `$CC_SECRET`, a token store of the dir's own, and the `$BROWSER`
/// stand-in; exit status, stdout and stderr.
fn h9(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let exe = env!("CARGO_BIN_EXE_harness9");
    let mut c = harness9_in(dir);
    c.arg("-vv")
        .arg("--trace")
        .arg(dir.join("trace.jsonl"))
        .arg("--config")
        .arg(dir.join("c.mcp.json"))
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("CC_SECRET", SECRET)
        .env("BROWSER", format!("{exe} conformance-browser"))
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"));
    let out = output_within(c, None, Duration::from_secs(60));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn stats(p: &Proc) -> Value {
    serde_json::from_str(&plain_http(p.port, "GET", "/stats")).unwrap()
}

/// The ID tokens and ID-JAGs the IdP issued, and the secret, are in no output, trace or log.
fn nothing_shows(dir: &Path, idp: &Proc, outputs: &[&str]) {
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap_or_default();
    assert!(!trace.is_empty(), "the trace was written");
    let issued = stats(idp)["tokens"].as_array().unwrap().clone();
    assert!(!issued.is_empty());
    let mut secrets: Vec<String> = issued
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    secrets.push(SECRET.to_owned());
    for s in &secrets {
        for (i, text) in outputs.iter().chain([&trace.as_str()]).enumerate() {
            assert!(
                !text.contains(s.as_str()),
                "a secret in output {i}:\n{text}"
            );
        }
    }
}

#[test]
fn one_sso_login_then_tokens_without_the_user() {
    let (p, dir) = start("login", &[]);
    // Before the login: the server needs it, and says which command does it.
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert!(!ok, "{out}\n{err}");
    assert!(
        err.contains("SSO login") && err.contains("harness9 mcp login o"),
        "{err}"
    );
    assert_eq!(stats(&p.idp)["exchanges"], 0);
    let (_, doc, doc_err) = h9(&dir, &["doctor", "o"]);
    assert!(
        doc.contains("no SSO login at the identity provider")
            && doc.contains("harness9 mcp login o"),
        "{doc}\n{doc_err}"
    );
    let (ok, out, login_err) = h9(&dir, &["mcp", "login", "o"]);
    assert!(ok, "{out}\n{login_err}");
    assert!(
        out.contains("Logged in at the enterprise identity provider"),
        "{out}"
    );
    assert_eq!(stats(&p.idp)["logins"], 1);
    // The AS's tokens die after two requests: each new one comes from a new ID-JAG.
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert!(ok, "{out}\n{err}");
    assert_eq!(out.trim(), "hi", "{err}");
    let (ok, out2, err2) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"again"}"#],
    );
    assert!(ok, "{out2}\n{err2}");
    let idp = stats(&p.idp);
    let mcp = stats(&p.mcp);
    assert_eq!(idp["logins"], 1, "one login served every call: {idp}");
    assert!(idp["exchanges"].as_u64().unwrap() >= 2, "{idp}");
    assert!(mcp["issued"].as_u64().unwrap() >= 2, "{mcp}");
    assert_eq!(mcp["refused"], 0, "{mcp}");
    assert!(idp["refused"].as_array().unwrap().is_empty(), "{idp}");
    let port = p.mcp.port;
    assert!(
        idp["audiences"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| *a == json!(format!("http://127.0.0.1:{port}"))),
        "each ID-JAG is for the MCP server's authorization server: {idp}"
    );
    assert!(
        mcp["methods"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m == "id_jag"),
        "{mcp}"
    );
    // The store holds the SSO login (0600); outputs and traces hold no token.
    let store = std::fs::read_to_string(dir.join("oauth.json")).unwrap();
    assert!(store.contains("sso:http://127.0.0.1:"), "{store}");
    nothing_shows(&dir, &p.idp, &[&out, &err, &login_err, &out2, &err2]);
    let (_, doc, doc_err) = h9(&dir, &["doctor", "o"]);
    assert!(doc.contains("SSO login kept"), "{doc}\n{doc_err}");
    // `mcp list` names the grant; logout ends the SSO login for every such server.
    let (_, list, _) = h9(&dir, &["mcp", "list"]);
    assert!(list.contains("oauth: enterprise grant"), "{list}");
    let (ok, out, err) = h9(&dir, &["mcp", "logout", "o"]);
    assert!(
        ok && out.contains("Logged out of the enterprise identity provider"),
        "{out}\n{err}"
    );
    let (ok, _, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert!(!ok && err.contains("harness9 mcp login o"), "{err}");
}

#[test]
fn an_expiring_id_token_is_renewed_at_the_idp() {
    // ID tokens of 30 s: inside the renewal margin at once, so each exchange renews it first
    // with the login's refresh token, without the user.
    let (p, dir) = start("renew", &["--id-token-ttl", "30"]);
    let (ok, out, err) = h9(&dir, &["mcp", "login", "o"]);
    assert!(ok, "{out}\n{err}");
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert!(ok, "{out}\n{err}");
    assert_eq!(out.trim(), "hi", "{err}");
    let idp = stats(&p.idp);
    assert_eq!(idp["logins"], 1, "{idp}");
    assert!(idp["refreshes"].as_u64().unwrap() >= 1, "{idp}");
    assert!(idp["refused"].as_array().unwrap().is_empty(), "{idp}");
    nothing_shows(&dir, &p.idp, &[&out, &err]);
}

#[test]
fn only_the_users_settings_choose_the_idp() {
    let (p, dir) = start("project", &[]);
    // A repository's settings name an IdP of its own: ignored, with a warning naming the file.
    std::fs::write(
        dir.join("harness9.toml"),
        "[enterprise_idp]\nissuer = \"https://evil.example\"\nclient_id = \"x\"\n",
    )
    .unwrap();
    let (ok, out, err) = h9(&dir, &["mcp", "login", "o"]);
    assert!(ok, "{out}\n{err}");
    assert!(
        err.contains("harness9.toml:2") && err.contains("[enterprise_idp] is ignored"),
        "{err}"
    );
    assert_eq!(stats(&p.idp)["logins"], 1);
    // Without [enterprise_idp] in the user's file, the grant is a config error that says so.
    std::fs::remove_file(dir.join("xdg/harness9/config.toml")).unwrap();
    let (ok, out, err) = h9(&dir, &["mcp", "list"]);
    assert!(!ok, "{out}\n{err}");
    assert!(
        err.contains("c.mcp.json") && err.contains("[enterprise_idp]"),
        "{err}"
    );
}

/// An IdP whose secret's variable is not set fails the servers of the enterprise grant at
/// load, naming the variable; the command still runs (no exit at startup) and says it once.
#[test]
fn an_unset_idp_secret_fails_only_the_enterprise_servers() {
    let (_p, dir) = start("unset-secret", &[]);
    let settings = dir.join("xdg/harness9/config.toml");
    let text = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(
        &settings,
        format!("{text}client_secret_env = \"H9_TEST_NO_SUCH_SECRET\"\n"),
    )
    .unwrap();
    let (_, out, err) = h9(&dir, &["mcp", "list"]);
    let both = format!("{out}\n{err}");
    assert!(
        both.contains("client_secret_env names H9_TEST_NO_SUCH_SECRET"),
        "{both}"
    );
    assert!(
        out.lines().any(|l| l.starts_with('o')),
        "the list still runs and shows the server: {both}"
    );
}
