//! OAuth grants without a user, through the commands and config a user has: client credentials
//! (a secret, basic or post; a signed client assertion, RS256 and ES256) and the JWT bearer
//! grant with a workload token file, against a real authorization server built on the PyPI
//! `mcp` SDK (tests/python/cc_oauth_server.py) whose tokens die after a few requests: the
//! runtime gets new ones itself. Secrets, keys and assertions never show; config mistakes are
//! named at load.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::{free_port, plain_http, spawn_server, Proc};

const SECRET: &str = "cc-secret-5e1f0a9b77";

/// The client credentials server, with `extra` options.
fn cc_server(extra: &[&str]) -> Proc {
    let port = free_port();
    let mut c = Command::new(repo().join(".deps/venv/bin/python"));
    c.arg(repo().join("tests/python/cc_oauth_server.py"))
        .args(["--port", &port.to_string(), "--client-id", "ci-job"])
        .args(extra);
    spawn_server(c, port, "READY")
}

fn stats(srv: &Proc) -> Value {
    serde_json::from_str(&plain_http(srv.port, "GET", "/stats")).unwrap()
}

/// A dir with `c.mcp.json` holding server `o` at `srv` with `oauth`.
fn config_dir(tag: &str, srv: &Proc, oauth: Value) -> PathBuf {
    let dir = temp_path(&format!("grants-{tag}-{}", srv.port));
    std::fs::create_dir_all(&dir).unwrap();
    let body = json!({"mcpServers": {"o": {
        "url": format!("http://127.0.0.1:{}/mcp", srv.port),
        "oauth": oauth,
    }}});
    std::fs::write(dir.join("c.mcp.json"), body.to_string()).unwrap();
    dir
}

/// `harness9 -vv --trace DIR/trace.jsonl --config DIR/c.mcp.json ARGS` with the secret in
/// `$CC_SECRET` and a token store of the dir's own; stdout and stderr.
fn h9(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let mut c = harness9_in(dir);
    c.arg("-vv")
        .arg("--trace")
        .arg(dir.join("trace.jsonl"))
        .arg("--config")
        .arg(dir.join("c.mcp.json"))
        .args(args)
        .env("CC_SECRET", SECRET)
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"));
    let out = output_within(c, None, Duration::from_secs(60));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// None of `secrets` in stdout, stderr, the trace file or the token store.
fn nowhere(dir: &Path, out: &str, err: &str, secrets: &[&str]) {
    let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap_or_default();
    assert!(!trace.is_empty(), "the trace was written");
    let store = std::fs::read_to_string(dir.join("oauth.json")).unwrap_or_default();
    for s in secrets {
        for (what, text) in [
            ("stdout", out),
            ("stderr", err),
            ("trace", &trace),
            ("store", &store),
        ] {
            assert!(!text.contains(s), "{s:?} in {what}:\n{text}");
        }
    }
}

/// One `mcp call` through a token that dies after two requests: the runtime gets new tokens
/// from the client's credentials on every `401`, with no login and no browser; the secret
/// and the tokens show nowhere.
fn call_through_expiring_tokens(tag: &str, srv: &Proc, oauth: Value, secrets: &[&str]) -> Value {
    let dir = config_dir(tag, srv, oauth);
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert!(ok, "{out}\n{err}");
    assert_eq!(out.trim(), "hi", "{err}");
    let s = stats(srv);
    assert!(
        s["issued"].as_u64().unwrap() >= 2,
        "the first token died and another was got: {s}"
    );
    assert_eq!(s["refused"], 0, "{s}");
    assert!(!err.contains("mcp login"), "{err}");
    nowhere(&dir, &out, &err, secrets);
    s
}

#[test]
fn client_credentials_with_a_secret_renews_tokens_without_the_user() {
    let srv = cc_server(&["--client-secret", SECRET, "--token-uses", "2"]);
    let s = call_through_expiring_tokens(
        "basic",
        &srv,
        json!({"grant": "client_credentials", "clientId": "ci-job", "clientSecret": "${CC_SECRET}"}),
        &[SECRET],
    );
    let methods = s["methods"].as_array().unwrap();
    assert!(methods.iter().all(|m| m == "client_secret_basic"), "{s}");
    shows_the_grant(&srv);
    let srv = cc_server(&["--client-secret", SECRET, "--token-uses", "2"]);
    let s = call_through_expiring_tokens(
        "post",
        &srv,
        json!({"grant": "client_credentials", "clientId": "ci-job", "clientSecret": "${CC_SECRET}",
               "tokenEndpointAuth": "client_secret_post"}),
        &[SECRET],
    );
    let methods = s["methods"].as_array().unwrap();
    assert!(methods.iter().all(|m| m == "client_secret_post"), "{s}");
}

/// `mcp list` (text and JSON) and `doctor` say the server's grant; no secret in them.
fn shows_the_grant(srv: &Proc) {
    let dir = config_dir(
        "shown",
        srv,
        json!({"grant": "client_credentials", "clientId": "ci-job", "clientSecret": "${CC_SECRET}"}),
    );
    let (ok, out, err) = h9(&dir, &["mcp", "list"]);
    assert!(ok, "{out}\n{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("o "))
        .unwrap_or_default();
    assert!(row.contains("connected"), "{out}");
    assert!(row.contains("(oauth: client_credentials grant)"), "{out}");
    let (ok, out, err) = h9(&dir, &["mcp", "list", "--json"]);
    assert!(ok, "{out}\n{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["oauthGrant"], "client_credentials", "{out}");
    let (_, out, err) = h9(&dir, &["doctor", "o"]);
    let line = out
        .lines()
        .find(|l| l.contains("oauth"))
        .unwrap_or_else(|| panic!("no oauth check:\n{out}\n{err}"));
    assert!(
        line.contains("grant client_credentials (client ci-job)") && line.contains("no login"),
        "{line}"
    );
    nowhere(&dir, &out, &err, &[SECRET]);
}

/// A key pair made with openssl in `dir`: (private PEM path, public PEM path).
fn key_pair(dir: &Path, kind: &str) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let key = dir.join(format!("{kind}.pem"));
    let public = dir.join(format!("{kind}.pub.pem"));
    let gen: &[&str] = match kind {
        "rsa" => &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ],
        _ => &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ],
    };
    let out = Command::new("openssl")
        .args(gen)
        .arg("-out")
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    (key, public)
}

/// The base64 body lines of a PEM file: what a leak of the key would contain.
fn pem_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 20)
        .map(str::to_owned)
        .collect()
}

#[test]
fn client_credentials_with_a_signed_assertion_rs256_and_es256() {
    let keys = temp_path("grants-keys");
    for kind in ["rsa", "ec"] {
        let (key, public) = key_pair(&keys, kind);
        let srv = cc_server(&[
            "--public-key",
            public.to_str().unwrap(),
            "--token-uses",
            "2",
        ]);
        let lines = pem_lines(&key);
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let s = call_through_expiring_tokens(
            &format!("jwt-{kind}"),
            &srv,
            json!({"grant": "client_credentials", "clientId": "ci-job",
                   "privateKeyFile": key.to_str().unwrap()}),
            &lines,
        );
        let methods = s["methods"].as_array().unwrap();
        assert!(methods.iter().all(|m| m == "private_key_jwt"), "{s}");
    }
}

/// A workload token signed by `key` for `aud`, subject `sub`, valid `secs` (PyJWT).
fn workload_token(key: &Path, aud: &str, sub: &str, secs: i64) -> String {
    let code = "import sys,time,jwt; k=open(sys.argv[1]).read(); \
                print(jwt.encode({'iss':'https://platform.example','sub':sys.argv[3],'aud':sys.argv[2],\
                'iat':int(time.time()),'exp':int(time.time())+int(sys.argv[4])}, k, algorithm='ES256'))";
    let out = Command::new(repo().join(".deps/venv/bin/python"))
        .args(["-c", code])
        .arg(key)
        .args([aud, sub, &secs.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The JWT bearer grant with the platform's token file: a token that dies is replaced by
/// one from the file as it is NOW (the platform rotated it), no user action; the workload
/// tokens show nowhere.
#[test]
fn workload_identity_rereads_the_rotated_token_file() {
    let keys = temp_path("grants-wif-keys");
    let (key, public) = key_pair(&keys, "ec");
    let srv = cc_server(&[
        "--workload-key",
        public.to_str().unwrap(),
        "--token-uses",
        "2",
    ]);
    let issuer = format!("http://127.0.0.1:{}", srv.port);
    let dir = config_dir(
        "wif",
        &srv,
        json!({"grant": "jwt_bearer", "clientId": "workload", "assertionFile": "token"}),
    );
    let first = workload_token(&key, &issuer, "first", 600);
    std::fs::write(dir.join("token"), &first).unwrap();
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"a"}"#],
    );
    assert!(ok, "{out}\n{err}");
    assert!(stats(&srv)["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w == "first"));
    nowhere(&dir, &out, &err, &[&first]);
    let second = workload_token(&key, &issuer, "second", 600);
    std::fs::write(dir.join("token"), &second).unwrap();
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"b"}"#],
    );
    assert!(ok, "{out}\n{err}");
    assert_eq!(out.trim(), "b");
    let s = stats(&srv);
    assert_eq!(
        s["workloads"].as_array().unwrap().last().unwrap(),
        "second",
        "{s}"
    );
    nowhere(&dir, &out, &err, &[&first, &second]);
    // An expired workload token: the authorization server's refusal is said as it is.
    std::fs::write(dir.join("token"), workload_token(&key, &issuer, "old", -60)).unwrap();
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"c"}"#],
    );
    assert!(!ok, "{out}");
    assert!(err.contains("jwt_bearer token request failed"), "{err}");
    assert!(err.contains("invalid_grant"), "{err}");
    assert!(!err.contains("mcp login o"), "no login can help: {err}");
    // Nor does `mcp login` open a browser for it.
    let (ok, out, err) = h9(&dir, &["mcp", "login", "o"]);
    assert!(!ok, "{out}");
    assert!(err.contains("uses the jwt_bearer grant"), "{err}");
    assert!(err.contains("no login"), "{err}");
}

/// Mistakes in the `oauth` block are named at load with the file, the server and the field,
/// and what to do; the server fails alone and the key never shows.
#[test]
fn grant_config_mistakes_are_named_at_load() {
    let dir = temp_path("grants-config");
    std::fs::create_dir_all(&dir).unwrap();
    let (key, _) = key_pair(&dir, "ec");
    std::fs::write(
        dir.join("cert.pem"),
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    std::fs::write(dir.join("wl"), "header.payload.sig\n").unwrap();
    let cases = [
        (
            json!({"grant": "password", "clientId": "c"}),
            "oauth.grant",
            "unknown grant \"password\"",
        ),
        (
            json!({"grant": "client_credentials", "clientId": "c", "privateKeyFile": "missing.pem"}),
            "oauth.privateKeyFile",
            "cannot read the key file",
        ),
        (
            json!({"grant": "client_credentials", "clientId": "c", "privateKeyFile": "cert.pem"}),
            "oauth.privateKeyFile",
            "not a private key",
        ),
        (
            json!({"grant": "client_credentials", "clientId": "c", "privateKeyFile": key.to_str().unwrap(), "alg": "RS256"}),
            "oauth.privateKeyFile",
            "alg RS256 does not fit the key",
        ),
        (
            json!({"grant": "client_credentials", "clientId": "c"}),
            "oauth.clientSecret",
            "needs the client's credentials",
        ),
        (
            json!({"grant": "client_credentials", "clientSecret": "x"}),
            "oauth.clientId",
            "needs clientId",
        ),
        (
            json!({"grant": "jwt_bearer", "clientId": "w"}),
            "oauth.assertionFile",
            "needs the workload's token",
        ),
        (
            json!({"grant": "jwt_bearer", "clientId": "w", "assertionFile": "nope"}),
            "oauth.assertionFile",
            "cannot read the workload token file",
        ),
        (
            json!({"assertionFile": "wl"}),
            "oauth.assertion",
            "set \"grant\": \"jwt_bearer\"",
        ),
        (
            json!({"tokenEndpointAuth": "tls_client_auth"}),
            "oauth.tokenEndpointAuth",
            "unknown method",
        ),
    ];
    let key_lines = pem_lines(&key);
    for (i, (oauth, field, says)) in cases.iter().enumerate() {
        let body = json!({"mcpServers": {
            "bad": {"url": "http://127.0.0.1:9/mcp", "oauth": oauth},
            "good": {"command": fixture_bin().to_str().unwrap()},
        }});
        let file = dir.join(format!("c{i}.mcp.json"));
        let text = serde_json::to_string_pretty(&body).unwrap();
        std::fs::write(&file, &text).unwrap();
        // The line of the field's key (the field itself, or the `oauth` entry's own line).
        let key = format!("\"{}\"", field.trim_start_matches("oauth."));
        let at_line = text
            .lines()
            .position(|l| l.contains(&key))
            .or_else(|| text.lines().position(|l| l.contains("\"oauth\"")))
            .map(|n| n + 1);
        let mut c = harness9_in(&dir);
        c.arg("--config").arg(&file).args(["mcp", "list"]);
        let out = output_within(c, None, Duration::from_secs(30));
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let name = file.file_name().unwrap().to_str().unwrap();
        let line = text
            .lines()
            .find(|l| l.contains(says))
            .unwrap_or_else(|| panic!("case {i}: no {says:?} in:\n{text}"));
        assert!(line.contains(name), "case {i}: the file: {line}");
        let n = at_line.unwrap();
        assert!(
            line.contains(&format!("{name}:{n}:")),
            "case {i}: the line {n}: {line}"
        );
        assert!(line.contains("\"bad\""), "case {i}: the server: {line}");
        assert!(line.contains(field), "case {i}: the field {field}: {line}");
        assert!(
            text.contains("good"),
            "case {i}: the other server is listed:\n{text}"
        );
        for l in &key_lines {
            assert!(
                !text.contains(l.as_str()),
                "case {i}: the key shows:\n{text}"
            );
        }
    }
}

/// A repository's `.mcp.json` whose grant reads a file of the user's (a key, a workload
/// token) and uses it toward the network names that file on the approval line: approving
/// `https://...` alone does not hide that a token file goes with it.
#[test]
fn a_project_configs_grant_files_are_named_before_approval() {
    let dir = project_with(
        "grants-trust",
        json!({"w": {"url": "https://mcp.example.com/mcp",
                     "oauth": {"grant": "jwt_bearer", "clientId": "w", "assertionFile": "secrets/token-x"}}}),
    );
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("secrets/token-x"), "a.b.c").unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_harness9"));
    c.current_dir(&dir)
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_TOOL_CACHE", dir.join("tool-cache"))
        .args(["mcp", "list"]);
    let out = output_within(c, None, Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.starts_with("w "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("approve"), "held for approval: {row}");
    assert!(
        row.contains("oauth.assertionFile secrets/token-x"),
        "the file is named: {row}"
    );
}

/// A model's turn through a client-credentials server (`run -p`, the scripted model): the
/// tool call works with tokens the runtime got by itself, and the saved session holds neither
/// the secret nor the key.
#[test]
fn a_session_through_client_credentials_keeps_no_secret() {
    let keys = temp_path("grants-session-keys");
    let (key, public) = key_pair(&keys, "ec");
    let srv = cc_server(&[
        "--client-secret",
        SECRET,
        "--public-key",
        public.to_str().unwrap(),
    ]);
    let model = super::engine::Model::start(
        "grants-session",
        json!({"steps": [
            {"tool_calls": [{"id": "t1", "name": "mcp__o__echo", "input": {"text": "via cc"}}]},
            {"text": "done", "expect": {"last_tool_result_contains": "via cc"}}
        ]}),
    );
    let dir = project_with(
        &format!("grants-session-{}", srv.port),
        json!({"o": {"url": format!("http://127.0.0.1:{}/mcp", srv.port),
                     "oauth": {"grant": "client_credentials", "clientId": "ci-job",
                               "privateKeyFile": key.to_str().unwrap()}}}),
    );
    let mut c = harness9_in(&dir);
    without_user_env(&mut c);
    c.env("HOME", &dir)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        .args(["-v", "run", "-p", "go", "--allowed-tools", "mcp__o__echo"]);
    let out = output_within(c, None, Duration::from_secs(90));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "done", "{stderr}");
    assert_eq!(stats(&srv)["methods"][0], "private_key_jwt");
    let mut saved = String::new();
    for e in std::fs::read_dir(dir.join("sessions"))
        .expect("the session was saved")
        .flatten()
    {
        saved.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
    }
    assert!(
        saved.contains("via cc"),
        "the session file holds the turn: {saved}"
    );
    for l in pem_lines(&key) {
        for (what, text) in [
            ("stdout", &stdout),
            ("stderr", &stderr),
            ("session", &saved),
        ] {
            assert!(!text.contains(l.as_str()), "the key in {what}:\n{text}");
        }
    }
}

/// A hostile (or compromised) MCP server names an authorization server of its own: the
/// client's secret goes nowhere but the configured `oauth.issuer`, and a workload token
/// nowhere but the authorization server it is for (its `aud`): otherwise it could be replayed
/// at the real one.
#[test]
fn credentials_go_only_to_the_authorization_server_they_are_for() {
    let srv = cc_server(&["--client-secret", SECRET]);
    let dir = config_dir(
        "pinned",
        &srv,
        json!({"grant": "client_credentials", "clientId": "ci-job", "clientSecret": "${CC_SECRET}",
               "issuer": "https://login.corp.example"}),
    );
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"x"}"#],
    );
    assert!(!ok, "{out}");
    assert!(
        err.contains("not the configured oauth.issuer https://login.corp.example"),
        "{err}"
    );
    let s = stats(&srv);
    assert_eq!(s["issued"], 0, "{s}");
    assert_eq!(s["refused"], 0, "no token request reached it: {s}");
    nowhere(&dir, &out, &err, &[SECRET]);

    let keys = temp_path("grants-aud-keys");
    let (key, public) = key_pair(&keys, "ec");
    let srv = cc_server(&["--workload-key", public.to_str().unwrap()]);
    let dir = config_dir(
        "aud",
        &srv,
        json!({"grant": "jwt_bearer", "clientId": "w", "assertionFile": "token"}),
    );
    let token = workload_token(&key, "https://sts.real.example", "w", 600);
    std::fs::write(dir.join("token"), &token).unwrap();
    let (ok, out, err) = h9(
        &dir,
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"x"}"#],
    );
    assert!(!ok, "{out}");
    assert!(
        err.contains("the workload token is for https://sts.real.example"),
        "{err}"
    );
    let s = stats(&srv);
    assert_eq!(s["workloads"], json!([]), "{s}");
    assert_eq!(s["refused"], 0, "no token request reached it: {s}");
    nowhere(&dir, &out, &err, &[&token]);
}

/// A token the authorization server said lives a minute is renewed before it expires, in a
/// long session (`run -p`, the model slow to answer between two calls): a new token from the
/// client's credentials, asked for before the server ever refuses one (no `401`, no user).
#[test]
fn a_token_about_to_expire_is_renewed_before_the_server_refuses_it() {
    let srv = cc_server(&["--client-secret", SECRET, "--expires-in", "60"]);
    let model = super::engine::Model::start(
        "grants-expiry",
        json!({"steps": [
            {"tool_calls": [{"id": "t1", "name": "mcp__o__echo", "input": {"text": "first"}}]},
            // 60 s tokens are renewed in their last quarter (15 s): the next call is past that.
            {"delay_ms": 47000,
             "tool_calls": [{"id": "t2", "name": "mcp__o__echo", "input": {"text": "second"}}]},
            {"text": "done", "expect": {"last_tool_result_contains": "second"}}
        ]}),
    );
    let dir = project_with(
        &format!("grants-expiry-{}", srv.port),
        json!({"o": {"url": format!("http://127.0.0.1:{}/mcp", srv.port),
                     "oauth": {"grant": "client_credentials", "clientId": "ci-job",
                               "clientSecret": "${CC_SECRET}"}}}),
    );
    let mut c = harness9_in(&dir);
    without_user_env(&mut c);
    c.env("HOME", &dir)
        .env("CC_SECRET", SECRET)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        .args(["-v", "run", "-p", "go", "--allowed-tools", "mcp__o__echo"]);
    let out = output_within(c, None, Duration::from_secs(120));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "done", "{stderr}");
    let s = stats(&srv);
    assert_eq!(
        s["issued"], 2,
        "a second token, got before the first expired: {s}"
    );
    assert_eq!(
        s["rejected"], 0,
        "no request went out with an expired token: {s}"
    );
    assert!(stderr.contains("renewed before it expired"), "{stderr}");
    assert!(!stderr.contains(SECRET));
}
