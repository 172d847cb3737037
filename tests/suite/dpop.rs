//! DPoP (RFC 9449) through the public commands against the misbehaving fixture's own
//! authorization and resource server in `--dpop` mode, which checks every proof with PyJWT
//! (signature, `typ`, `htm`, `htu`, `iat`, a fresh `jti`, `ath`, the key the token is bound
//! to) and, with `--dpop-nonce`, asks for nonces at the token endpoint and the MCP endpoint;
//! and that no proof, private key or token reaches stdout, stderr, the trace or a session file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::engine::Model;
use super::http::{free_port, http_fixture, plain_http, Proc};

const LIMIT: Duration = Duration::from_secs(60);

/// The fixture in oauth mode with `extra`, a config naming it `o` (with `oauth`, if given),
/// a private token store and the `$BROWSER` stand-in.
struct DpopCase {
    srv: Proc,
    dir: PathBuf,
    config: PathBuf,
    store: PathBuf,
    trace: PathBuf,
}

impl DpopCase {
    fn new(tag: &str, extra: &[&str], oauth: Option<Value>) -> DpopCase {
        let srv = http_fixture("oauth", extra);
        let dir = temp_path(&format!("dpop-{tag}"));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join(".mcp.json");
        let mut entry = json!({"url": format!("http://127.0.0.1:{}/mcp", srv.port)});
        if let Some(o) = oauth {
            entry["oauth"] = o;
        }
        std::fs::write(&config, json!({"mcpServers": {"o": entry}}).to_string()).unwrap();
        DpopCase {
            store: dir.join("oauth.json"),
            trace: dir.join("trace.jsonl"),
            srv,
            dir,
            config,
        }
    }

    /// `harness9 -v --trace FILE --config FILE ARGS`, run to its end: exit code, stdout, and
    /// everything it printed or traced so far appended to `seen`.
    fn run(&self, args: &[&str], seen: &mut String) -> (Option<i32>, String, String) {
        let exe = env!("CARGO_BIN_EXE_harness9");
        let mut c = std::process::Command::new(exe);
        c.arg("-v")
            .arg("--trace")
            .arg(&self.trace)
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env("HARNESS9_OAUTH_STORE", &self.store)
            .env("BROWSER", format!("{exe} conformance-browser"));
        let out = output_within(c, None, LIMIT);
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        seen.push_str(&o);
        seen.push_str(&e);
        seen.push_str(&std::fs::read_to_string(&self.trace).unwrap_or_default());
        (out.status.code(), o, e)
    }

    fn stats(&self) -> Value {
        serde_json::from_str(&plain_http(self.srv.port, "GET", "/stats")).unwrap()
    }

    /// The stored grants of `o`.
    fn grants(&self) -> Vec<Value> {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.store).unwrap()).unwrap();
        v["servers"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|issuers| issuers.as_object().unwrap().values().cloned())
            .collect()
    }
}

/// Moves the expiry of every grant in the store `store` to a second ago.
fn expire(store: &Path) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(store).unwrap()).unwrap();
    let past = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 1;
    for issuers in v["servers"].as_object_mut().unwrap().values_mut() {
        for grant in issuers.as_object_mut().unwrap().values_mut() {
            grant["expires_at"] = json!(past);
        }
    }
    std::fs::write(store, v.to_string()).unwrap();
}

/// What any DPoP proof harness9 makes starts with: the base64url of the first 51 bytes of its
/// header `{"alg":"ES256","jwk":{"crv":"P-256","kty":"EC","x":"` (serde_json writes the
/// members sorted), as `printf %s "$head" | head -c 51 | base64 | tr +/ -_` gives it.
const PROOF_PREFIX: &str = "eyJhbGciOiJFUzI1NiIsImp3ayI6eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6";

/// Asserts that none of the secrets of `grants` (private key, access and refresh tokens) nor
/// any proof is in `seen`.
fn assert_nothing_leaked(grants: &[Value], seen: &str, what: &str) {
    assert!(
        !seen.contains(PROOF_PREFIX),
        "a DPoP proof in {what}: {seen}"
    );
    for g in grants {
        for field in ["dpop", "access_token", "refresh_token"] {
            if let Some(s) = g[field].as_str() {
                assert!(!seen.contains(s), "the {field} in {what}: {seen}");
            }
        }
    }
}

/// The whole path with nonces everywhere: `mcp login` (the token request is challenged for a
/// nonce and retried once with it), `mcp call` (each MCP request carries `Authorization: DPoP`
/// and a fresh proof; the resource server's nonce changes every 3 requests, each change a
/// `401 use_dpop_nonce` answered by one retry), the token expires and the refresh carries a
/// proof with the same key; the key is kept in the private store, and nothing secret reaches
/// the output or the trace.
#[test]
fn dpop_login_calls_and_refresh_with_server_nonces() {
    use std::os::unix::fs::PermissionsExt as _;
    let case = DpopCase::new(
        "nonce",
        &["--dpop", "--dpop-nonce", "--rs-nonce-every", "3"],
        None,
    );
    let mut seen = String::new();
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("(refreshable) (DPoP-bound)"), "{out}");
    let s = case.stats();
    assert_eq!(s["rejected"], json!([]), "{s}");
    assert_eq!(
        s["as_nonce_challenges"], 1,
        "one nonce challenge at the token endpoint: {s}"
    );
    assert_eq!(s["token_proofs"], 1, "{s}");
    let grants = case.grants();
    assert_eq!(grants.len(), 1);
    assert!(
        grants[0]["dpop"].is_string(),
        "the key is kept with the grant"
    );
    let mode = std::fs::metadata(&case.store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let call = ["mcp", "call", "o", "echo", "--args", r#"{"text":"in"}"#];
    let (code, out, err) = case.run(&call, &mut seen);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    let (code, out, err) = case.run(&call, &mut seen);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    let s = case.stats();
    assert_eq!(s["rejected"], json!([]), "{s}");
    assert!(s["mcp_proofs"].as_u64().unwrap() >= 4, "{s}");
    let schemes = s["schemes"].as_array().unwrap();
    assert!(schemes.iter().all(|x| x == "DPoP"), "{s}");
    let challenges = s["rs_nonce_challenges"].as_u64().unwrap();
    assert!(
        challenges >= 2,
        "a nonce asked for in each process and on each change: {s}"
    );
    // A nonce is remembered: not one challenge per request.
    assert!(challenges < s["mcp_proofs"].as_u64().unwrap(), "{s}");

    expire(&case.store);
    let (code, out, err) = case.run(&call, &mut seen);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    let s = case.stats();
    assert_eq!(s["refreshes"], 1, "{s}");
    assert_eq!(s["logins"], 1, "{s}");
    assert_eq!(
        s["token_proofs"], 2,
        "the refresh carried a proof of the same key: {s}"
    );
    assert_eq!(s["rejected"], json!([]), "{s}");
    let after = case.grants();
    assert_eq!(
        after[0]["dpop"], grants[0]["dpop"],
        "the same key after the refresh"
    );

    assert_nothing_leaked(
        &[grants, after].concat(),
        &seen,
        "stdout, stderr or the trace",
    );
}

/// A resource server that asks for its nonce: the first request, and the GET stream (asked
/// once for the nonce it carries, `--rs-challenge-first-get`), each go through on their one
/// retry. (A nonce rotated after every request would race the GET stream against the POSTs
/// beside it: a request could lose its one retry to another's rotation.)
#[test]
fn each_request_gets_its_one_nonce_retry_get_stream_included() {
    let case = DpopCase::new(
        "every",
        &["--dpop", "--dpop-nonce", "--rs-challenge-first-get"],
        None,
    );
    let mut seen = String::new();
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = case.run(
        // The echo answers once the GET stream got through (the fixture waits for it, 10 s at
        // most), so the process cannot end before its stream was opened.
        &[
            "mcp",
            "call",
            "o",
            "echo",
            "--args",
            r#"{"text":"each","after_get":true}"#,
        ],
        &mut seen,
    );
    assert_eq!((code, out.trim_end()), (Some(0), "each"), "{err}");
    let s = case.stats();
    assert_eq!(s["rejected"], json!([]), "{s}");
    assert_eq!(s["first_get_challenged"], true, "{s}");
    assert!(
        s["get_proofs"].as_u64().unwrap() >= 1,
        "the GET stream got through on its retry: {s}"
    );
    assert!(
        s["rs_nonce_challenges"].as_u64().unwrap() >= 2,
        "the first request and the GET were asked: {s}"
    );
}

/// A server that asks for a nonce whatever the proof carries gets one retry per request,
/// never more: at the token endpoint the login fails, at the MCP endpoint the request, each
/// with an error that names what happened.
#[test]
fn a_server_that_always_wants_a_new_nonce_gets_one_retry() {
    let case = DpopCase::new(
        "as-never",
        &["--dpop", "--dpop-nonce", "--nonce-never", "as"],
        None,
    );
    let mut seen = String::new();
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("asked for a DPoP nonce again after one retry"),
        "{err}"
    );
    assert_eq!(case.stats()["as_nonce_challenges"], 2);

    let case = DpopCase::new(
        "rs-never",
        &["--dpop", "--dpop-nonce", "--nonce-never", "rs"],
        None,
    );
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = case.run(
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"x"}"#],
        &mut seen,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        err.contains("asked for a new DPoP nonce again after one retry"),
        "{err}"
    );
    let s = case.stats();
    let challenges = s["rs_nonce_challenges"].as_u64().unwrap();
    assert!(
        challenges % 2 == 0 && challenges <= 4,
        "two per request, never more: {s}"
    );
}

/// A server that sends an authorized request on to another origin (a 307 after the token and
/// proof checks): the hop carries neither the token nor a proof (a proof is bound to its URL,
/// and both stay on the server's origin).
#[test]
fn a_redirect_to_another_origin_carries_no_token_or_proof() {
    let dir = temp_path(&format!("dpop-away-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("bystander.jsonl");
    let other = http_fixture("ok", &["--record", record.to_str().unwrap()]);
    let away = format!("http://127.0.0.1:{}/mcp", other.port);
    let case = DpopCase::new("away", &["--dpop", "--authorized-away", &away], None);
    let mut seen = String::new();
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("(DPoP-bound)"), "{out}");
    case.run(
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"x"}"#],
        &mut seen,
    );
    let s = case.stats();
    assert!(s["mcp_proofs"].as_u64().unwrap() >= 1, "{s}");
    let got = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(!got.is_empty(), "the redirect was followed");
    for line in got.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        for (k, _) in r["headers"].as_object().unwrap() {
            let k = k.to_ascii_lowercase();
            assert!(
                k != "authorization" && k != "dpop",
                "{k} went to another origin: {r}"
            );
        }
    }
    assert!(!got.contains(PROOF_PREFIX), "{got}");
}

/// `"oauth": {"dpop": true}` in the config: proofs go out even though the authorization
/// server does not advertise DPoP; it issues a bearer token, which is then used as one (no
/// proofs); `"dpop": false` turns DPoP off where the server advertises it, and a server that
/// then requires it refuses the token request with a clear error.
#[test]
fn dpop_as_configured_per_server() {
    let case = DpopCase::new("on", &[], Some(json!({"dpop": true})));
    let mut seen = String::new();
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(0), "{out}{err}");
    let grants = case.grants();
    assert!(
        grants[0].get("dpop").is_none(),
        "a bearer token keeps no key: {grants:?}"
    );
    let (code, out, err) = case.run(
        &["mcp", "call", "o", "echo", "--args", r#"{"text":"b"}"#],
        &mut seen,
    );
    assert_eq!((code, out.trim_end()), (Some(0), "b"), "{err}");

    let off = DpopCase::new("off", &["--dpop"], Some(json!({"dpop": false})));
    let (code, out, err) = off.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("invalid_dpop_proof"), "{err}");
    assert!(
        err.contains("/token"),
        "the error names the endpoint: {err}"
    );

    let bad = DpopCase::new("bad", &[], Some(json!({"dpop": "yes"})));
    let (code, _, err) = bad.run(&["mcp", "list"], &mut seen);
    assert_ne!(code, Some(0));
    assert!(err.contains("dpop"), "{err}");
}

/// An agent turn (`run -p` with the scripted model) calls the DPoP-protected server's tool:
/// the session file (and every other file of the run but the store), stdout, stderr and the
/// trace hold no proof, key or token.
#[test]
fn no_dpop_secret_reaches_a_session_file() {
    let case = DpopCase::new("session", &["--dpop", "--dpop-nonce"], None);
    let mut seen = String::new();
    let (code, out, err) = case.run(&["mcp", "login", "o"], &mut seen);
    assert_eq!(code, Some(0), "{out}{err}");
    let model = Model::start(
        "dpop-session",
        json!({"steps": [
            {"tool_calls": [{"id": "t1", "name": "mcp__o__echo", "input": {"text": "hi"}}]},
            {"text": "done", "expect": {"last_tool_result_contains": "hi"}}
        ]}),
    );
    let home = case.dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = harness9_in(&case.dir);
    without_user_env(&mut c);
    c.env("HOME", &home)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("HARNESS9_OAUTH_STORE", &case.store)
        .arg("-v")
        .arg("--trace")
        .arg(&case.trace)
        .args(["run", "-p", "go", "--allowed-tools", "mcp__o__echo"]);
    let out = output_within(c, None, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stdout.trim_end(), "done", "{stderr}");
    let s = case.stats();
    assert_eq!(s["rejected"], json!([]), "{s}");
    assert!(s["mcp_proofs"].as_u64().unwrap() >= 1, "{s}");
    // The session files, and every other file the run left in its directory and its home (a
    // log, the tool cache, approvals), all but the token store itself.
    let mut sessions = String::new();
    let saved = walk(&case.dir.join("sessions"));
    assert!(!saved.is_empty(), "the session was saved");
    for e in walk(&case.dir).into_iter().filter(|p| *p != case.store) {
        sessions.push_str(&String::from_utf8_lossy(
            &std::fs::read(e).unwrap_or_default(),
        ));
    }
    assert!(sessions.contains("hi"), "the session was saved: {sessions}");
    let all = format!(
        "{seen}{stdout}{stderr}{sessions}{}",
        std::fs::read_to_string(&case.trace).unwrap_or_default()
    );
    assert_nothing_leaked(&case.grants(), &all, "the session, output or trace");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
