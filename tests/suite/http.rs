//! HTTP transports against real servers on 127.0.0.1: server-everything in `streamableHttp` and
//! `sse` modes, the PyPI `mcp` server over Streamable HTTP, and the misbehaving fixture.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness9_actors::messages::ServerStatus;
use harness9_actors::{CallError, RestartPolicy, ServerSpec, ToolRegistry, TransportSpec};
use serde_json::json;

use super::common::*;

const T: Duration = Duration::from_secs(90);
const CONNECT: Duration = Duration::from_secs(20);

/// A server process in its own group, killed with it on drop.
pub struct Proc {
    child: Child,
    pub port: u16,
}

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: SIGKILL to the group we created.
        unsafe { libc::killpg(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Starts `cmd` with PORT set and waits (bounded) for a stdout line containing `ready`.
fn spawn_server(mut cmd: Command, port: u16, ready: &str) -> Proc {
    use std::os::unix::process::CommandExt;
    cmd.env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    // Servers announce on stdout or stderr; both are read to the end so neither pipe fills.
    let out: Box<dyn std::io::Read + Send> = Box::new(child.stdout.take().unwrap());
    let err: Box<dyn std::io::Read + Send> = Box::new(child.stderr.take().unwrap());
    for pipe in [out, err] {
        let (tx, ready) = (tx.clone(), ready.to_owned());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if line.contains(&ready) {
                    let _ = tx.send(());
                }
            }
        });
    }
    let proc = Proc { child, port };
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the server announced it is listening");
    proc
}

fn everything_js() -> String {
    repo()
        .join("tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

pub fn everything_http(port: u16) -> Proc {
    let mut c = Command::new("node");
    c.args([everything_js().as_str(), "streamableHttp"]);
    spawn_server(c, port, "listening on port")
}

fn everything_sse(port: u16) -> Proc {
    let mut c = Command::new("node");
    c.args([everything_js().as_str(), "sse"]);
    spawn_server(c, port, "running on port")
}

pub fn python_http(port: u16) -> Proc {
    let mut c = Command::new(repo().join(".deps/venv/bin/python"));
    c.arg(repo().join("tests/python/sdk_http_server.py"))
        .args(["--port", &port.to_string()]);
    spawn_server(c, port, "READY")
}

pub fn http_fixture(mode: &str, extra: &[&str]) -> Proc {
    let port = free_port();
    let mut c = Command::new(repo().join(".deps/venv/bin/python"));
    c.arg(repo().join("tests/python/misbehaving_http.py"))
        .args(["--port", &port.to_string(), "--mode", mode])
        .args(extra);
    spawn_server(c, port, "READY")
}

pub fn http_spec(name: &str, url: String, sse: bool) -> ServerSpec {
    let mut s = ServerSpec::stdio(name, "", vec![]);
    s.transport = TransportSpec::Http {
        url,
        headers: vec![],
        sse,
    };
    s.startup_timeout = Duration::from_secs(10);
    s.tool_timeout = Duration::from_secs(10);
    s.shutdown_grace = Duration::from_millis(300);
    s
}

/// The stdio reference calls, over any transport.
async fn reference_calls(rt: &harness9::app::Runtime, server: &str) {
    let call = |tool: &str, args| {
        ToolRegistry::call(&rt.registry, format!("mcp__{server}__{tool}"), args, None)
    };
    assert_eq!(
        call("echo", Some(json!({"message": "hi"})))
            .await
            .unwrap()
            .text(),
        "Echo: hi"
    );
    assert!(call("get_sum", Some(json!({"a": 2, "b": 40})))
        .await
        .unwrap()
        .text()
        .contains("42"));
    let img = call("get_tiny_image", None).await.unwrap();
    assert!(img.text().contains("[image image/png"), "{}", img.text());
    let s = call(
        "get_structured_content",
        Some(json!({"location": "Chicago"})),
    )
    .await
    .unwrap();
    assert!(s.structured_content.is_some());
    let r = call(
        "trigger_long_running_operation",
        Some(json!({"duration": 1, "steps": 2})),
    )
    .await
    .unwrap();
    assert!(r.text().contains("completed"), "{}", r.text());
}

#[test]
fn reference_server_over_streamable_http_sse_and_fallback() {
    let (p1, p2) = (free_port(), free_port());
    let _http = everything_http(p1);
    let _sse = everything_sse(p2);
    run(T, || async move {
        let rt = start(
            vec![
                http_spec("h", format!("http://127.0.0.1:{p1}/mcp"), false),
                http_spec("s", format!("http://127.0.0.1:{p2}/sse"), true),
                // Configured as Streamable HTTP; the POST fails, so it falls back to legacy SSE.
                http_spec("auto", format!("http://127.0.0.1:{p2}/sse"), false),
            ],
            RestartPolicy::default(),
        );
        for (name, transport) in [("h", "http"), ("s", "sse"), ("auto", "sse")] {
            let ServerStatus::Connected { info, tools } = connected(&rt, name, CONNECT).await
            else {
                unreachable!()
            };
            assert_eq!(info.transport, transport, "{name}");
            assert_eq!(info.protocol_version, "2025-11-25");
            assert!(tools >= 10);
            reference_calls(&rt, name).await;
        }
        shutdown(rt, &[]).await;
    });
}

#[test]
fn python_sdk_server_over_streamable_http() {
    let port = free_port();
    let _py = python_http(port);
    run(T, || async move {
        let rt = start(
            vec![http_spec(
                "py",
                format!("http://127.0.0.1:{port}/mcp"),
                false,
            )],
            RestartPolicy::default(),
        );
        connected(&rt, "py", CONNECT).await;
        python_calls(&rt, "py").await;
        shutdown(rt, &[]).await;
    });
}

#[test]
fn killing_the_http_server_fails_calls_at_once_and_it_comes_back_on_the_same_port() {
    let port = free_port();
    let server = everything_http(port);
    run(T, || async move {
        let rt = start(
            vec![http_spec(
                "h",
                format!("http://127.0.0.1:{port}/mcp"),
                false,
            )],
            fast_policy(),
        );
        connected(&rt, "h", CONNECT).await;
        let registry = rt.registry.clone();
        let call = actix_rt::spawn(async move {
            ToolRegistry::call(
                &registry,
                "mcp__h__trigger_long_running_operation",
                Some(json!({"duration": 30, "steps": 30})),
                None,
            )
            .await
        });
        // Let the call reach the server (a round trip on the same connection pool proves it).
        ToolRegistry::call(
            &rt.registry,
            "mcp__h__echo",
            Some(json!({"message": "x"})),
            None,
        )
        .await
        .unwrap();
        let killed = Instant::now();
        drop(server);
        let err = call.await.unwrap().unwrap_err();
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "call failed after {:?}",
            killed.elapsed()
        );
        assert!(err.to_string().contains("server \"h\""), "{err}");
        wait_for(&rt, "h", Duration::from_secs(5), |s| {
            matches!(s, ServerStatus::Restarting { .. })
        })
        .await;
        let _again = everything_http(port);
        connected(&rt, "h", CONNECT).await;
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__h__echo",
            Some(json!({"message": "back"})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.text(), "Echo: back");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn session_expiry_between_calls_re_initializes_once() {
    let record = temp_path("http-record");
    let srv = http_fixture("expire", &["--record", record.to_str().unwrap()]);
    let port = srv.port;
    run(T, || async move {
        let rt = start(
            vec![http_spec(
                "x",
                format!("http://127.0.0.1:{port}/mcp"),
                false,
            )],
            RestartPolicy::default(),
        );
        connected(&rt, "x", CONNECT).await;
        for t in ["one", "two", "three"] {
            let r =
                ToolRegistry::call(&rt.registry, "mcp__x__echo", Some(json!({"text": t})), None)
                    .await
                    .unwrap();
            assert_eq!(r.text(), t);
        }
        let body = std::fs::read_to_string(&record).unwrap();
        let inits = body
            .lines()
            .filter(|l| l.contains(r#"\"method\":\"initialize\""#))
            .count();
        // One initialize at start, one after each expiry (calls two and three).
        assert_eq!(inits, 3, "{body}");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_5_mb_result_arrives_whole_and_one_over_the_maximum_fails_clearly() {
    let srv = http_fixture("ok", &[]);
    let sse = http_fixture("sse", &[]);
    let (port, sport) = (srv.port, sse.port);
    run(T, || async move {
        let mut small = http_spec("small", format!("http://127.0.0.1:{port}/mcp"), false);
        small.max_message_bytes = 1024 * 1024;
        let mut small_sse = http_spec("smallsse", format!("http://127.0.0.1:{sport}/mcp"), false);
        small_sse.max_message_bytes = 1024 * 1024;
        let rt = start(
            vec![
                http_spec("big", format!("http://127.0.0.1:{port}/mcp"), false),
                small,
                small_sse,
            ],
            RestartPolicy::default(),
        );
        for n in ["big", "small", "smallsse"] {
            connected(&rt, n, CONNECT).await;
        }
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__big__big",
            Some(json!({"bytes": 5_000_000})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.text().len(), 5_000_000);
        for n in ["small", "smallsse"] {
            let e = ToolRegistry::call(
                &rt.registry,
                format!("mcp__{n}__big"),
                Some(json!({"bytes": 2_000_000})),
                None,
            )
            .await
            .unwrap_err();
            assert!(matches!(e, CallError::Transport { .. }), "{e}");
            assert!(e.to_string().contains("maximum message size"), "{e}");
        }
        shutdown(rt, &[]).await;
    });
}

#[test]
fn misbehaving_http_servers_get_clear_errors_and_do_not_affect_others() {
    let fixtures: Vec<(&str, Proc)> = [
        "status500",
        "html",
        "cut-sse",
        "stall",
        "bearer",
        "sse",
        "legacy-only",
    ]
    .into_iter()
    .map(|m| (m, http_fixture(m, &[])))
    .collect();
    let urls: Vec<(String, String)> = fixtures
        .iter()
        .map(|(m, p)| (m.to_string(), format!("http://127.0.0.1:{}/mcp", p.port)))
        .collect();
    run(T, || async move {
        let mut specs: Vec<ServerSpec> = urls
            .iter()
            .map(|(m, u)| http_spec(m, u.clone(), false))
            .collect();
        for s in &mut specs {
            s.startup_timeout = Duration::from_secs(2);
            s.tool_timeout = Duration::from_secs(2);
        }
        let mut authed = http_spec(
            "bearer-ok",
            urls.iter().find(|(m, _)| m == "bearer").unwrap().1.clone(),
            false,
        );
        if let TransportSpec::Http { headers, .. } = &mut authed.transport {
            headers.push(("Authorization".into(), "Bearer s3cret-token".into()));
        }
        specs.push(authed);
        specs.push(fixture("stdio-neighbour", &[]));
        let t0 = Instant::now();
        let rt = start(specs, RestartPolicy::default());
        let failed = |name: &'static str| {
            let rt = &rt;
            async move {
                match wait_for(rt, name, Duration::from_secs(10), |s| {
                    matches!(s, ServerStatus::Failed { .. })
                })
                .await
                {
                    ServerStatus::Failed { error, .. } => error,
                    _ => unreachable!(),
                }
            }
        };
        let e = failed("status500").await;
        assert!(
            e.contains("HTTP 500") && e.contains("internal error on purpose"),
            "{e}"
        );
        let e = failed("html").await;
        assert!(e.contains("text/html"), "{e}");
        let e = failed("stall").await;
        assert!(e.contains("did not finish starting within 2 s"), "{e}");
        let e = failed("bearer").await;
        assert!(
            e.contains("HTTP 401") && e.contains("headers of server \"bearer\""),
            "{e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
        for ok in [
            "cut-sse",
            "sse",
            "legacy-only",
            "bearer-ok",
            "stdio-neighbour",
        ] {
            connected(&rt, ok, CONNECT).await;
        }
        let ServerStatus::Connected { info, .. } = connected(&rt, "legacy-only", CONNECT).await
        else {
            unreachable!()
        };
        assert_eq!(info.transport, "sse");
        let e = ToolRegistry::call(
            &rt.registry,
            "mcp__cut_sse__echo",
            Some(json!({"text": "x"})),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            e.to_string().contains("server \"cut-sse\"")
                && e.to_string().contains("ended before the response"),
            "{e}"
        );
        for (n, tool) in [
            ("sse", "mcp__sse__echo"),
            ("legacy-only", "mcp__legacy_only__echo"),
            ("bearer-ok", "mcp__bearer_ok__echo"),
        ] {
            let r = ToolRegistry::call(&rt.registry, tool, Some(json!({"text": n})), None)
                .await
                .unwrap();
            assert_eq!(r.text(), n);
        }
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__stdio_neighbour__echo",
            Some(json!({"text": "fine"})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.text(), "fine");
        shutdown(rt, &[]).await;
        drop(fixtures);
    });
}

#[test]
fn cli_over_http_with_a_bearer_header_and_trace() {
    let srv = http_fixture("bearer", &[]);
    let dir = temp_path("http-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let config = json!({"mcpServers": {"b": {"url": format!("http://127.0.0.1:{}/mcp", srv.port),
        "headers": {"Authorization": "Bearer ${HARNESS9_TEST_TOKEN}"}}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let trace = dir.join("trace.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_harness9"))
        .args([
            "--trace",
            trace.to_str().unwrap(),
            "mcp",
            "call",
            "b",
            "echo",
            "--args",
            r#"{"text":"via cli"}"#,
        ])
        .arg("--approve-project")
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .current_dir(&dir)
        .env("HARNESS9_TEST_TOKEN", "s3cret-token")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "via cli",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
    let body = std::fs::read_to_string(&trace).unwrap();
    assert!(!body.contains("s3cret-token"));
    let records: Vec<serde_json::Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let status = |m: &str| {
        records
            .iter()
            .find(|r| r["method"] == m && r["http_status"].is_u64())
            .map(|r| {
                (
                    r["http_status"].as_u64().unwrap(),
                    r["session"].as_str().map(str::to_owned),
                )
            })
    };
    assert_eq!(status("notifications/initialized").map(|s| s.0), Some(202));
    let (code, session) = status("tools/call").expect("an HTTP status record for tools/call");
    assert_eq!(code, 200);
    assert!(session.is_some_and(|s| s.len() >= 16));
    // The wrong token gets a clear error naming the server and the status.
    let out = Command::new(env!("CARGO_BIN_EXE_harness9"))
        .args(["mcp", "list"])
        .arg("--approve-project")
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .current_dir(&dir)
        .env("HARNESS9_TEST_TOKEN", "wrong")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[mcp] server \"b\" connect failed: initialize failed: HTTP 401"),
        "{stderr}"
    );
}

#[test]
fn https_goes_through_rustls_and_a_plain_server_gives_a_clear_error() {
    let srv = http_fixture("ok", &[]);
    let port = srv.port;
    run(T, || async move {
        // A TLS handshake against a plain-HTTP port: rustls is used (no panic for a missing
        // crypto provider) and the failure names the cause.
        let rt = start(
            vec![http_spec(
                "tls",
                format!("https://127.0.0.1:{port}/mcp"),
                false,
            )],
            RestartPolicy::default(),
        );
        let st = wait_for(&rt, "tls", CONNECT, |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, .. } = st else {
            unreachable!()
        };
        assert!(
            error.contains("cannot connect to https://127.0.0.1"),
            "{error}"
        );
        shutdown(rt, &[]).await;
    });
}

/// The user's OAuth path from the command line against the fixture's own authorization server
/// (access tokens live 2 s): `needs login` -> `mcp login` through a `$BROWSER` that follows the
/// redirect -> connected -> the token expires and is refreshed silently -> every token revoked
/// -> `needs login` with the command to run. No token or code reaches stdout, stderr or the
/// trace; the store is private.
#[test]
fn oauth_login_refresh_and_revocation_from_the_cli() {
    let srv = http_fixture("oauth", &["--token-ttl", "600"]);
    oauth_round_trip(&srv, "/revoke");
}

/// The same round trip against the PyPI `mcp` SDK's own authorization server and
/// resource-server middleware (tests/python/sdk_oauth_server.py): its 401 challenge, RFC 9728
/// and RFC 8414 metadata, dynamic registration, PKCE check, token and refresh grants.
#[test]
fn oauth_round_trip_against_the_python_sdk_authorization_server() {
    let port = free_port();
    let mut c = Command::new(repo().join(".deps/venv/bin/python"));
    c.arg(repo().join("tests/python/sdk_oauth_server.py"))
        .args(["--port", &port.to_string(), "--token-ttl", "600"]);
    let srv = spawn_server(c, port, "READY");
    oauth_round_trip(&srv, "/revoke-all");
}

/// An OAuth-protected server named `o` in a config of its own, a private token store, and the
/// `$BROWSER` stand-in that follows the authorization redirect as a person's browser would.
struct OAuthCase {
    srv: Proc,
    config: PathBuf,
    store: PathBuf,
}

impl OAuthCase {
    /// The PyPI `mcp` SDK's authorization server (tests/python/sdk_oauth_server.py).
    fn sdk(tag: &str) -> OAuthCase {
        let port = free_port();
        let mut c = Command::new(repo().join(".deps/venv/bin/python"));
        c.arg(repo().join("tests/python/sdk_oauth_server.py"))
            .args(["--port", &port.to_string()]);
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
        OAuthCase { srv, config, store }
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
            std::sync::Arc::new(harness9::app::oauth_store::FileStore::new(
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

/// Over SSH the browser is on another machine and its redirect to our loopback listener
/// fails; the user pastes the address it ended on into `mcp login`, which takes it (after
/// refusing a line that is not that address) and logs in.
#[test]
fn a_login_completes_from_a_pasted_redirect_address() {
    use std::io::Write as _;
    let port = free_port();
    let mut c = Command::new(repo().join(".deps/venv/bin/python"));
    c.arg(repo().join("tests/python/sdk_oauth_server.py"))
        .args(["--port", &port.to_string()]);
    let _srv = spawn_server(c, port, "READY");
    let dir = temp_path(&format!("oauth-paste{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("p.mcp.json");
    let body = json!({"mcpServers": {"o": {"url": format!("http://127.0.0.1:{port}/mcp")}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness9"))
        .arg("--config")
        .arg(&config)
        .args(["mcp", "login", "o"])
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        // A browser that opens nothing: the redirect never reaches the loopback listener.
        .env("BROWSER", "true")
        .current_dir(&dir)
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
    assert!(child.wait().unwrap().success());
    assert!(!printed.contains("code-"), "{printed}");
}

/// The response head (status line and headers, lowercased names) of a GET of `url`, an
/// `http://127.0.0.1:PORT/...` address.
fn plain_get_head(url: &str) -> String {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(host).unwrap();
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
fn oauth_round_trip(srv: &Proc, revoke_path: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let base = format!("http://127.0.0.1:{}", srv.port);
    let dir = temp_path(&format!("http-oauth{}", srv.port));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("oauth.mcp.json");
    let body = json!({"mcpServers": {"o": {"url": format!("{base}/mcp")}}});
    std::fs::write(&config, body.to_string()).unwrap();
    let store = dir.join("oauth.json");
    let trace = dir.join("trace.jsonl");
    let exe = env!("CARGO_BIN_EXE_harness9");
    let mut seen = String::new();
    let mut h9 = |args: &[&str]| {
        let out = Command::new(exe)
            .arg("--config")
            .arg(&config)
            .arg("--trace")
            .arg(&trace)
            .args(args)
            .env("HARNESS9_OAUTH_STORE", &store)
            .env("BROWSER", format!("{exe} conformance-browser"))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        seen.push_str(&o);
        seen.push_str(&e);
        seen.push_str(&std::fs::read_to_string(&trace).unwrap_or_default());
        (out.status.code(), o, e)
    };
    let port = srv.port;
    let stats = || -> serde_json::Value {
        let body = plain_http(port, "GET", "/stats");
        serde_json::from_str(&body).unwrap()
    };
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
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let call = ["mcp", "call", "o", "echo", "--args", r#"{"text":"in"}"#];
    let (code, out, err) = h9(&call);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    assert_eq!(stats()["refreshes"], 0);

    // The access token's lifetime passes on our side: its stored expiry is moved into the
    // past (the server would take it for ten more minutes), so the next call must refresh it
    // before it sends anything.
    expire_stored_grants(&store);
    let (code, out, err) = h9(&call);
    assert_eq!((code, out.trim_end()), (Some(0), "in"), "{err}");
    assert_eq!(stats()["refreshes"], 1, "the expired token was refreshed");
    assert_eq!(stats()["logins"], 1, "without a new login");

    assert_eq!(plain_http(port, "POST", revoke_path), "revoked");
    let (code, _, err) = h9(&call);
    assert_eq!(code, Some(1));
    assert!(err.contains(needs), "{err}");

    let stored = std::fs::read_to_string(&store).unwrap();
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

/// One HTTP/1.0 request to 127.0.0.1:`port` without a body; the response's body.
pub(super) fn plain_http(port: u16, method: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "{method} {path} HTTP/1.0\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}
