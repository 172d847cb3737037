//! OAuth against real authorization servers: the PyPI `mcp` SDK's (tests/python/sdk_oauth_server.py)
//! and the HTTP fixture's own (`--mode oauth`): login through the `$BROWSER` stand-in, refresh,
//! revocation, step-up, a store shared by processes, a pasted redirect.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use harness9_actors::{ServerSpec, ToolRegistry};
use serde_json::json;

use super::common::*;
use super::http::{free_port, http_fixture, http_spec, plain_http, spawn_server, Proc};

/// The user's OAuth path from the command line against the fixture's own authorization server:
/// `needs login` -> `mcp login` through a `$BROWSER` that follows the
/// redirect -> connected -> the token expires and is refreshed silently -> every token revoked
/// -> `needs login` with the command to run. No token or code reaches stdout, stderr or the
/// trace; the store is private.
#[test]
fn oauth_login_refresh_and_revocation_from_the_cli() {
    let case = OAuthCase::fixture("cli", &["--token-ttl", "600"]);
    oauth_round_trip(&case, "/revoke");
}

/// The same round trip against the PyPI `mcp` SDK's own authorization server and
/// resource-server middleware (tests/python/sdk_oauth_server.py): its 401 challenge, RFC 9728
/// and RFC 8414 metadata, dynamic registration, PKCE check, token and refresh grants.
#[test]
fn oauth_round_trip_against_the_python_sdk_authorization_server() {
    oauth_round_trip(&OAuthCase::sdk("sdk"), "/revoke-all");
}

/// An OAuth-protected server named `o` in a config of its own, a private token store, and the
/// `$BROWSER` stand-in that follows the authorization redirect as a person's browser would.
struct OAuthCase {
    srv: Proc,
    dir: PathBuf,
    config: PathBuf,
    store: PathBuf,
}

impl OAuthCase {
    /// The PyPI `mcp` SDK's authorization server (tests/python/sdk_oauth_server.py).
    fn sdk(tag: &str) -> OAuthCase {
        let port = free_port();
        let mut c = Command::new(repo().join(".deps/venv/bin/python"));
        c.arg(repo().join("tests/python/sdk_oauth_server.py"))
            .args(["--port", &port.to_string(), "--token-ttl", "600"]);
        Self::around(spawn_server(c, port, "READY"), tag)
    }

    /// The HTTP fixture's oauth mode, with more of its options.
    fn fixture(tag: &str, extra: &[&str]) -> OAuthCase {
        Self::around(http_fixture("oauth", extra), tag)
    }

    fn around(srv: Proc, tag: &str) -> OAuthCase {
        let dir = temp_path(&format!("oauth-{tag}{}", srv.port));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("s.mcp.json");
        let body = json!({"mcpServers": {"o": {"url": Self::url_of(&srv)}}});
        std::fs::write(&config, body.to_string()).unwrap();
        let store = dir.join("oauth.json");
        OAuthCase {
            srv,
            dir,
            config,
            store,
        }
    }

    fn url_of(srv: &Proc) -> String {
        format!("http://127.0.0.1:{}/mcp", srv.port)
    }

    /// `harness9 --config <its config> ARGS` with the store and the `$BROWSER` stand-in.
    fn h9(&self, args: &[&str]) -> Command {
        let exe = env!("CARGO_BIN_EXE_harness9");
        let mut c = Command::new(exe);
        c.arg("--config")
            .arg(&self.config)
            .args(args)
            .env("HARNESS9_OAUTH_STORE", &self.store)
            .env("BROWSER", format!("{exe} conformance-browser"));
        c
    }

    /// [`OAuthCase::h9`], run to its end (bounded).
    fn run(&self, args: &[&str]) -> std::process::Output {
        output_within(self.h9(args), None, Duration::from_secs(60))
    }

    /// The server's `/stats`.
    fn stats(&self) -> serde_json::Value {
        serde_json::from_str(&plain_http(self.srv.port, "GET", "/stats")).unwrap()
    }

    /// A spec for an in-process runtime that uses the same store.
    fn spec(&self) -> ServerSpec {
        let mut spec = http_spec("o", Self::url_of(&self.srv), false);
        spec.oauth = Some(harness9_actors::oauth::OAuthSpec::new(
            Default::default(),
            std::sync::Arc::new(harness9::app::stores::oauth_store::FileStore::new(
                self.store.clone(),
            )),
        ));
        spec
    }
}

/// A token that expires early on the server's side (the client still thinks it fresh) gets a
/// `401` on every call in flight; they share one refresh and all succeed.
#[test]
fn concurrent_calls_share_one_refresh_after_a_401() {
    let case = OAuthCase::sdk("shared");
    let out = case.run(&["mcp", "login", "o"]);
    assert!(out.status.success(), "{out:?}");
    let spec = case.spec();
    run(Duration::from_secs(60), || async move {
        let mut rt = start(vec![spec], fast_policy());
        rt.settled(Duration::from_secs(20)).await;
        let call = |i: usize| {
            ToolRegistry::call(
                &rt.registry,
                "mcp__o__echo".to_owned(),
                Some(json!({"text": format!("call {i}")})),
                None,
            )
        };
        assert_eq!(call(0).await.unwrap().text(), "call 0");
        assert_eq!(case.stats()["refreshes"], 0);
        assert_eq!(plain_http(case.srv.port, "POST", "/expire-all"), "expired");
        let all = futures_util::future::join_all((1..=8).map(call)).await;
        for (i, r) in all.into_iter().enumerate() {
            assert_eq!(r.unwrap().text(), format!("call {}", i + 1));
        }
        assert_eq!(case.stats()["refreshes"], 1, "one refresh for eight calls");
        assert_eq!(case.stats()["logins"], 1);
        shutdown(rt, &[]).await;
    });
}

/// A `403 insufficient_scope` where nobody can log in (headless): the call fails naming
/// `harness9 mcp login`, and that login asks for the union of the held scopes and the ones
/// the server wanted, after which the call goes through.
#[test]
fn a_step_up_that_waits_for_mcp_login_asks_for_the_union() {
    let case = OAuthCase::fixture("stepup", &["--admin-tool", "big"]);
    let asked =
        || -> Vec<String> { serde_json::from_value(case.stats()["asked"].clone()).unwrap() };
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    assert_eq!(asked(), ["mcp offline_access"]);
    let echo = case.run(&["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#]);
    assert_eq!(
        String::from_utf8_lossy(&echo.stdout).trim(),
        "hi",
        "{echo:?}"
    );

    let big = ["mcp", "call", "o", "big", "--args", r#"{"bytes":3}"#];
    let refused = case.run(&big);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        err.contains("needs more permissions (scope \"mcp admin\")")
            && err.contains("harness9 mcp login o"),
        "{err}"
    );
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    let second: Vec<String> = asked()[1].split(' ').map(str::to_owned).collect();
    for s in ["mcp", "offline_access", "admin"] {
        assert!(second.contains(&s.to_owned()), "{second:?}");
    }
    let ok = case.run(&big);
    assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), "xxx", "{ok:?}");
}

/// Two harness9 processes share the store and the server rotates refresh tokens: after the
/// other process refreshed (spending the refresh token this one holds), this one's next `401`
/// takes the newer grant from the store instead of failing its own refresh and asking for a
/// login.
#[test]
fn a_refresh_by_another_process_is_taken_over_not_repeated() {
    let case = OAuthCase::sdk("two");
    let out = case.run(&["mcp", "login", "o"]);
    assert!(out.status.success(), "{out:?}");
    let spec = case.spec();
    let args = ["mcp", "call", "o", "echo", "--args", r#"{"text":"other"}"#];
    let other = case.h9(&args);
    run(Duration::from_secs(60), || async move {
        let mut rt = start(vec![spec], fast_policy());
        rt.settled(Duration::from_secs(20)).await;
        let call = |text: &str| {
            ToolRegistry::call(
                &rt.registry,
                "mcp__o__echo".to_owned(),
                Some(json!({ "text": text })),
                None,
            )
        };
        assert_eq!(call("before").await.unwrap().text(), "before");
        // Every token expires on the server; the other process refreshes first.
        assert_eq!(plain_http(case.srv.port, "POST", "/expire-all"), "expired");
        let out = actix_rt::task::spawn_blocking(move || {
            output_within(other, None, Duration::from_secs(60))
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(case.stats()["refreshes"], 1);
        // This one's token is refused; its refresh token is spent; the store has the new one.
        assert_eq!(call("after").await.unwrap().text(), "after");
        assert_eq!(
            case.stats()["refreshes"],
            1,
            "taken over, not refreshed again"
        );
        assert_eq!(case.stats()["logins"], 1, "no second login");
        shutdown(rt, &[]).await;
    });
}

/// The race after a failed refresh: two harness9 processes hold the same expired grant and
/// refresh at once against a server that rotates refresh tokens. The server answers the
/// first refresh only once the second (with the now spent token) came in, and fails that one a
/// second later: the loser reads the store again after its failed refresh, takes the winner's
/// grant, and its call succeeds; no second login, no lost grant.
#[test]
fn a_failed_refresh_takes_the_grant_another_process_just_refreshed() {
    let case = OAuthCase::fixture("refresh-race", &["--token-ttl", "600", "--refresh-race"]);
    let out = case.run(&["mcp", "login", "o"]);
    assert!(out.status.success(), "{out:?}");
    // Both will find the grant expiring (the store) and refused (the server).
    expire_stored_grants(&case.store);
    assert_eq!(plain_http(case.srv.port, "POST", "/expire-all"), "expired");
    let call = |text: &str| {
        let args = ["mcp", "call", "o", "echo", "--args"];
        let mut c = case.h9(&args);
        c.arg(json!({ "text": text }).to_string());
        std::thread::spawn(move || output_within(c, None, Duration::from_secs(60)))
    };
    let (a, b) = (call("a"), call("b"));
    for (t, text) in [(a, "a"), (b, "b")] {
        let out = t.join().expect("the call's thread");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{text}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim_end(),
            text,
            "{err}"
        );
    }
    let stats = case.stats();
    assert_eq!(stats["refreshes"], 1, "{stats}");
    assert_eq!(
        stats["failed_refreshes"], 1,
        "the race did not happen: {stats}"
    );
    assert_eq!(stats["logins"], 1, "no second login: {stats}");
    // The store keeps a grant that works: a third process needs no refresh and no login.
    let out = case.run(&["mcp", "call", "o", "echo", "--args", r#"{"text":"c"}"#]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(case.stats()["refreshes"], 1);
}

/// Over SSH the browser is on another machine and its redirect to our loopback listener
/// fails; the user pastes the address it ended on into `mcp login`, which takes it (after
/// refusing a line that is not that address) and logs in.
#[test]
fn a_login_completes_from_a_pasted_redirect_address() {
    use std::io::Write as _;
    let case = OAuthCase::sdk("paste");
    let mut child = case
        .h9(&["mcp", "login", "o"])
        // A browser that opens nothing: the redirect never reaches the loopback listener.
        .env("BROWSER", "true")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let wait_line = |want: &str| -> String {
        loop {
            let line = rx.recv_timeout(Duration::from_secs(30)).unwrap();
            if line.contains(want) {
                return line;
            }
        }
    };
    let auth_url = wait_line("/authorize?").trim().to_owned();
    writeln!(stdin, "not the address").unwrap();
    wait_line("That is not the redirect address");
    let head = plain_get_head(&auth_url);
    let location = head
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap_or_else(|| panic!("a redirect: {head}"))
        .trim()
        .to_owned();
    assert!(location.contains("/callback?code="), "{location}");
    writeln!(stdin, "{location}").unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(out), &mut text);
        let _ = done_tx.send(text);
    });
    let printed = done_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(printed.contains("Logged in to server \"o\""), "{printed}");
    assert!(wait_within(&mut child, Duration::from_secs(30)).success());
    assert!(!printed.contains("code-"), "{printed}");
}

/// The response head (status line and headers, lowercased names) of a GET of `url`, an
/// `http://127.0.0.1:PORT/...` address.
fn plain_get_head(url: &str) -> String {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .map(|l| match l.split_once(':') {
            Some((k, v)) => format!("{}:{v}", k.to_ascii_lowercase()),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// 401 -> `needs login` (list, list --json) -> `mcp login` through the `$BROWSER` stand-in
/// -> a call -> the access token expires -> the next call refreshes it silently -> the
/// authorization server revokes every token -> `needs login` with the command to run ->
/// logout. No access token, refresh token or code appears in any output or the trace.
fn oauth_round_trip(case: &OAuthCase, revoke_path: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let trace = case.dir.join("trace.jsonl");
    let trace_arg = trace.display().to_string();
    let mut seen = String::new();
    let mut h9 = |args: &[&str]| {
        let out = case.run(&[&["--trace", trace_arg.as_str()], args].concat());
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        seen.push_str(&o);
        seen.push_str(&e);
        seen.push_str(&std::fs::read_to_string(&trace).unwrap_or_default());
        (out.status.code(), o, e)
    };
    let (port, store) = (case.srv.port, &case.store);
    let stats = || case.stats();
    let needs = "server \"o\" needs a login: run `harness9 mcp login o`";

    let (code, _, err) = h9(&["mcp", "list"]);
    assert_eq!(code, Some(1));
    assert!(err.contains(needs), "{err}");
    let (_, out, _) = h9(&["mcp", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["status"], "needs login", "{rows}");
    assert_eq!(rows[0]["login"], "harness9 mcp login o", "{rows}");

    let (code, out, err) = h9(&["mcp", "login", "o"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Logged in to server \"o\""), "{out}");
    assert!(out.contains("(refreshable)"), "{out}");
    let mode = std::fs::metadata(store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let call = ["mcp", "call", "o", "echo", "--args", r#"{"text":"in"}"#];
    let (code, out, err) = h9(&call);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    assert_eq!(stats()["refreshes"], 0);

    // The access token's lifetime passes on our side: its stored expiry is moved into the
    // past (the server would take it for ten more minutes), so the next call must refresh it
    // before it sends anything.
    expire_stored_grants(store);
    let (code, out, err) = h9(&call);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    assert_eq!(stats()["refreshes"], 1, "the expired token was refreshed");
    assert_eq!(stats()["logins"], 1, "without a new login");

    assert_eq!(plain_http(port, "POST", revoke_path), "revoked");
    let (code, _, err) = h9(&call);
    assert_eq!(code, Some(1));
    assert!(err.contains(needs), "{err}");

    let stored = std::fs::read_to_string(store).unwrap();
    assert!(stored.contains("\"access_token\": \"at-"), "{stored}");
    let (code, out, _) = h9(&["mcp", "logout", "o"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("Logged out"), "{out}");
    for secret in ["at-", "rt-", "code-"] {
        assert!(!seen.contains(secret), "{secret} leaked: {seen}");
    }
}

/// Moves the expiry of every grant in the OAuth store file `store` to a second ago.
fn expire_stored_grants(store: &std::path::Path) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store).unwrap()).unwrap();
    let past = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 1;
    let mut n = 0;
    for issuers in v["servers"].as_object_mut().unwrap().values_mut() {
        for grant in issuers.as_object_mut().unwrap().values_mut() {
            grant["expires_at"] = json!(past);
            n += 1;
        }
    }
    assert!(n > 0, "no grant in {}", store.display());
    std::fs::write(store, v.to_string()).unwrap();
}

/// A recording bystander: the HTTP fixture in its plain mode, logging every request it gets
/// to a file, standing for a service on the user's side (a cloud metadata endpoint, an
/// intranet host) that a hostile server would have harness9 reach.
fn bystander(tag: &str) -> (Proc, PathBuf) {
    let dir = temp_path(&format!("oauth-bystander-{tag}-{}", free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("requests.jsonl");
    let p = http_fixture("ok", &["--record", record.to_str().unwrap()]);
    (p, record)
}

/// What the bystander received (empty when nothing).
fn received(record: &std::path::Path) -> String {
    std::fs::read_to_string(record).unwrap_or_default()
}

/// Point 9a: a `401` whose `resource_metadata` names another origin (here a loopback service
/// standing for a cloud metadata path) is refused before anything is fetched from it.
#[test]
fn a_challenge_cannot_send_discovery_to_another_origin() {
    let (other, record) = bystander("prm");
    let evil = format!(
        "http://127.0.0.1:{}/latest/meta-data/iam/security-credentials/",
        other.port
    );
    let case = OAuthCase::fixture("prm-away", &["--prm-url", &evil]);
    let out = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(err.contains("not on the server's own origin"), "{err}");
    assert_eq!(received(&record), "", "the other origin was contacted");

    // Nor through a redirect of a fetch that starts on the server's own origin.
    let hop = format!("/hop?to={evil}");
    let case = OAuthCase::fixture("prm-hop", &["--prm-url", &hop]);
    let out = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(err.contains("not on the server's own origin"), "{err}");
    assert_eq!(received(&record), "", "the other origin was contacted");
}

/// Point 9a: the user's `oauth.allowOrigins` is the one way past the origin rule: with the
/// other origin listed, its resource metadata is fetched (and then judged on its content: it
/// names another resource, which is refused as before).
#[test]
fn allow_origins_in_the_config_lets_a_listed_origin_through() {
    let other = http_fixture("oauth", &[]);
    let prm = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        other.port
    );
    let case = OAuthCase::fixture("allow", &["--prm-url", &prm]);
    let refused = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("not on the server's own origin"), "{err}");
    let body = json!({"mcpServers": {"o": {
        "url": OAuthCase::url_of(&case.srv),
        "oauth": {"allowOrigins": [format!("http://127.0.0.1:{}", other.port)]}
    }}});
    std::fs::write(&case.config, body.to_string()).unwrap();
    let out = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains(&format!(
            "names resource \"http://127.0.0.1:{}/mcp\"",
            other.port
        )),
        "{err}"
    );
}

/// Point 9a: authorization servers named by the protected resource metadata at link-local
/// (cloud metadata) or private addresses, from an MCP server on loopback, are refused without
/// a connection; the error names the address and how to allow it.
#[test]
fn authorization_servers_at_link_local_or_private_addresses_are_refused() {
    for (as_url, why) in [
        (
            "http://169.254.169.254/",
            "link-local address 169.254.169.254",
        ),
        ("https://[fe80::1]:8443/", "link-local address fe80::1"),
        ("http://10.1.2.3:8080/", "private address 10.1.2.3"),
    ] {
        let case = OAuthCase::fixture("as-away", &["--as-url", as_url]);
        let out = case.run(&["mcp", "login", "o"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        // The refusal names the address's kind, which only the check before any connection
        // knows (a connection to these would fail with a connect error or time out instead).
        assert!(err.contains(why), "{as_url}: {err}");
        assert!(err.contains("allowOrigins"), "{err}");
        assert!(
            !err.contains("connect") && !err.contains("timed out"),
            "{as_url}: {err}"
        );
        assert_eq!(case.stats()["logins"], 0);
    }
}

/// Point 9b: the token endpoint answers `307` to another origin; the code, the verifier and
/// the client's credentials are not sent there, and the error names the endpoint.
#[test]
fn a_redirect_from_the_token_endpoint_is_not_followed() {
    let (other, record) = bystander("token");
    let away = format!("http://127.0.0.1:{}/steal", other.port);
    let case = OAuthCase::fixture("token-307", &["--token-redirect", &away]);
    let out = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains(&format!(
            "the token request to http://127.0.0.1:{}/token answered HTTP 307",
            case.srv.port
        )) && err.contains("never follows a redirect"),
        "{err}"
    );
    let got = received(&record);
    assert!(
        !got.contains("code_verifier") && !got.contains("code-"),
        "{got}"
    );
    assert_eq!(got, "", "the other origin was contacted");
}

/// Point 9c: authorization server metadata dripped one byte per 2 s: `mcp login` gives up on
/// that exchange after its 15 s bound instead of hanging for the whole body.
#[test]
fn a_dripped_metadata_body_does_not_hold_the_login() {
    let case = OAuthCase::fixture("drip", &["--drip"]);
    let started = std::time::Instant::now();
    let out = output_within(
        case.h9(&["mcp", "login", "o"]),
        None,
        Duration::from_secs(120),
    );
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(err.contains("took longer than 15 s"), "{err}");
    // A bound from the fixture, not a speed: the whole body (`{"issuer": "http://127.0.0.1:N"}`,
    // 36 bytes or more at 2 s each) takes 72 s or more; the login ended before it could have.
    assert!(took < Duration::from_secs(72), "took {took:?}");
    eprintln!("dripped login gave up after {took:?}");
}

/// Point 9d: a server whose every `403 insufficient_scope` names fresh scopes (and invalid
/// ones: a quote, 300 bytes) cannot pile them up in the stored grant: the grant keeps only the
/// latest challenge's valid scope tokens (at most 16 in all), and `mcp login` shows the scopes
/// it asks for.
#[test]
fn step_up_scopes_are_bounded_and_shown() {
    let case = OAuthCase::fixture("junk", &["--admin-tool", "big", "--stepup-junk"]);
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    let big = ["mcp", "call", "o", "big", "--args", r#"{"bytes":3}"#];
    for _ in 0..6 {
        let out = case.run(&big);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let last = String::from_utf8_lossy(&out.stderr);
        assert!(last.contains("needs more permissions"), "{last}");
        assert!(!last.contains("LLLL") && !last.contains("bad"), "{last}");
    }
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&case.store).unwrap()).unwrap();
    let mut all = Vec::new();
    for issuers in stored["servers"].as_object().unwrap().values() {
        for g in issuers.as_object().unwrap().values() {
            for key in ["scopes", "wanted_scopes"] {
                for s in g[key].as_array().cloned().unwrap_or_default() {
                    all.push(s.as_str().unwrap().to_owned());
                }
            }
        }
    }
    assert!(all.len() <= 16, "{} scopes kept: {all:?}", all.len());
    // Only the sixth (latest) challenge's junk is wanted: no earlier one's piled up.
    assert!(all.iter().any(|s| s == "junk6-0"), "{all:?}");
    assert!(!all.iter().any(|s| s.starts_with("junk5-")), "{all:?}");
    assert!(
        all.iter().all(|s| s.len() <= 128 && !s.contains('"')),
        "{all:?}"
    );
    let out = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(err.contains("asking for scopes: mcp "), "{err}");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("scopes granted: mcp "), "{printed}");
}

/// Point 9e: an access token with CR/LF from the login is refused before it is stored (the
/// login fails with the reason); one with ESC from a refresh leaves the server needing a
/// login, with the reason, instead of failing every request with a header error.
#[test]
fn tokens_that_cannot_be_sent_in_a_header_are_refused() {
    let case = OAuthCase::fixture("crlf", &["--bad-token", "crlf"]);
    let out = case.run(&["mcp", "login", "o"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains("issued an access token with the character '\\r'") && err.contains("not kept"),
        "{err}"
    );
    assert!(!received(&case.store).contains("X-Injected"));

    let case = OAuthCase::fixture("esc", &["--bad-token", "esc", "--bad-token-on", "refresh"]);
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    assert_eq!(plain_http(case.srv.port, "POST", "/expire-all"), "expired");
    expire_stored_grants(&case.store);
    let call = ["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#];
    for i in 0..2 {
        let out = case.run(&call);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            err.contains("server \"o\" needs a login: run `harness9 mcp login o`"),
            "{err}"
        );
        if i == 0 {
            // The first says why.
            assert!(
                err.contains("the token refresh failed")
                    && err.contains("issued an access token with the character '\\u{1b}'"),
                "{err}"
            );
        }
        assert!(!err.to_ascii_lowercase().contains("header"), "{err}");
    }
    let stored = received(&case.store);
    assert!(!stored.contains("\\u001b"), "{stored}");
    assert_eq!(case.stats()["refreshes"], 1);
}

/// Point 9f: `expires_in: 0` is taken as the 60 s floor: three calls right after the login
/// refresh nothing (on main each one refreshed first).
#[test]
fn expires_in_zero_does_not_refresh_before_every_request() {
    let case = OAuthCase::fixture("zero", &["--expires-in", "0"]);
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    let call = ["mcp", "call", "o", "echo", "--args", r#"{"text":"hi"}"#];
    for _ in 0..3 {
        let out = case.run(&call);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi", "{out:?}");
    }
    assert_eq!(case.stats()["refreshes"], 0);
}

/// The step-up of a 2026-07-28-only server, through the public commands: `mcp login` finds
/// the challenge with `server/discover` (the way the runtime connects), a `403
/// insufficient_scope` on a call ends in "needs more permissions" naming `harness9 mcp
/// login`, that login asks for the union, and the call then goes through in the stateless era.
#[test]
fn a_stateless_step_up_through_the_public_commands() {
    let case = OAuthCase::fixture(
        "stateless-stepup",
        &[
            "--stateless",
            "--admin-tool",
            "big",
            "--challenge-scope",
            "mcp files",
        ],
    );
    let asked =
        || -> Vec<String> { serde_json::from_value(case.stats()["asked"].clone()).unwrap() };
    let login = case.run(&["mcp", "login", "o"]);
    assert!(login.status.success(), "{login:?}");
    // The challenge's scope (`initialize` is not guarded: only `server/discover` shows it).
    assert_eq!(asked(), ["mcp files offline_access"]);
    let list = case.run(&["mcp", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(rows[0]["era"], "stateless", "{rows}");

    let big = ["mcp", "call", "o", "big", "--args", r#"{"bytes":3}"#];
    let refused = case.run(&big);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        err.contains("needs more permissions (scope \"mcp admin\")")
            && err.contains("harness9 mcp login o"),
        "{err}"
    );
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    let second: Vec<String> = asked()[1].split(' ').map(str::to_owned).collect();
    for s in ["mcp", "files", "offline_access", "admin"] {
        assert!(second.contains(&s.to_owned()), "{second:?}");
    }
    let ok = case.run(&big);
    assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), "xxx", "{ok:?}");
}

/// A `403 insufficient_scope` on `server/discover` (the token lacks a scope the server needs
/// to be reached at all): the server needs a login, with the scopes it asked for kept for it;
/// never a fallback to `initialize` (which a 2026-07-28-only server refuses with a misleading
/// error). After `mcp login` asks for the union, it connects in the stateless era.
#[test]
fn a_step_up_on_discover_needs_a_login_not_the_handshake() {
    let case = OAuthCase::fixture(
        "discover-stepup",
        &["--stateless", "--admin-discover", "--admin-tool", "none"],
    );
    let asked =
        || -> Vec<String> { serde_json::from_value(case.stats()["asked"].clone()).unwrap() };
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    let list = case.run(&["mcp", "list", "--json"]);
    let rows: serde_json::Value =
        serde_json::from_slice(&list.stdout).unwrap_or_else(|e| panic!("{e}: {list:?}"));
    let row = &rows[0];
    assert_eq!(row["status"], "needs login", "{rows}");
    let text = row.to_string();
    assert!(
        text.contains("needs more permissions") && text.contains("harness9 mcp login o"),
        "{text}"
    );
    assert!(!text.contains("initialize"), "{text}");
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    let second: Vec<String> = asked()[1].split(' ').map(str::to_owned).collect();
    assert!(second.contains(&"admin".to_owned()), "{second:?}");
    let list = case.run(&["mcp", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(rows[0]["status"], "connected", "{rows}");
    assert_eq!(rows[0]["era"], "stateless", "{rows}");
}

/// Issue 32, D12: step-up challenges do not pile up. The server's first `403
/// insufficient_scope` asks for `admin:all`, the next ones for `admin`: the login after them
/// asks for what was granted and the latest challenge's scopes, never the first one's
/// `admin:all` (a server could otherwise slip a scope into a later consent by asking once).
#[test]
fn a_step_up_asks_for_the_latest_challenge_not_every_earlier_one() {
    let case = OAuthCase::fixture(
        "latest",
        &[
            "--admin-tool",
            "big",
            "--stepup-scope",
            "mcp admin:all",
            "--stepup-scope",
            "mcp admin",
        ],
    );
    let asked =
        || -> Vec<String> { serde_json::from_value(case.stats()["asked"].clone()).unwrap() };
    assert!(case.run(&["mcp", "login", "o"]).status.success());
    assert_eq!(asked(), ["mcp offline_access"]);
    let big = ["mcp", "call", "o", "big", "--args", r#"{"bytes":3}"#];
    for scope in ["mcp admin:all", "mcp admin"] {
        let refused = case.run(&big);
        let err = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{refused:?}");
        assert!(
            err.contains(&format!("needs more permissions (scope \"{scope}\")")),
            "{err}"
        );
    }
    let out = case.run(&["mcp", "login", "o"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let second: Vec<String> = asked()[1].split(' ').map(str::to_owned).collect();
    for s in ["mcp", "offline_access", "admin"] {
        assert!(second.contains(&s.to_owned()), "{second:?}");
    }
    assert!(!second.contains(&"admin:all".to_owned()), "{second:?}");
    assert!(!err.contains("admin:all"), "{err}");
    // The new grant is enough for the tool.
    let ok = case.run(&big);
    assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), "xxx", "{ok:?}");
}
