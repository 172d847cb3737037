//! HTTP transports against real servers on 127.0.0.1: server-everything in `streamableHttp` and
//! `sse` modes, the PyPI `mcp` server over Streamable HTTP, and the misbehaving fixture.

use std::io::{BufRead, BufReader};

use std::path::Path;
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
pub(super) fn spawn_server(mut cmd: Command, port: u16, ready: &str) -> Proc {
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
        // Far below the call's own wait: the lost server failed it.
        assert!(
            killed.elapsed() < Duration::from_secs(10),
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
    let out = output_within(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_harness9"));
            c.args([
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
            .env("HARNESS9_TEST_TOKEN", "s3cret-token");
            c
        },
        None,
        Duration::from_secs(60),
    );
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
    let out = output_within(
        {
            let mut c = Command::new(env!("CARGO_BIN_EXE_harness9"));
            c.args(["mcp", "list"])
                .arg("--approve-project")
                .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
                .current_dir(&dir)
                .env("HARNESS9_TEST_TOKEN", "wrong");
            c
        },
        None,
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[mcp] server \"b\" connect failed: initialize failed: HTTP 401"),
        "{stderr}"
    );
}

/// Response headers that carry credentials (`set-cookie`, `www-authenticate`,
/// `authentication-info`) are in the trace by name with their values redacted, on a
/// successful exchange and on a refused one.
#[test]
fn credential_response_headers_are_redacted_in_the_trace() {
    let cookie = "sid=cookie-s3cret-value";
    let challenge = r#"Bearer realm="realm-s3cret-value", error="invalid_token""#;
    let srv = http_fixture(
        "bearer",
        &["--set-cookie", cookie, "--challenge", challenge],
    );
    let dir = temp_path("http-redact");
    std::fs::create_dir_all(&dir).unwrap();
    let config = json!({"mcpServers": {"b": {"url": format!("http://127.0.0.1:{}/mcp", srv.port),
        "headers": {"Authorization": "Bearer ${HARNESS9_TEST_TOKEN}"}}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let traced = |token: &str, args: &[&str]| {
        let trace = dir.join(format!("trace-{token}.jsonl"));
        let mut c = Command::new(env!("CARGO_BIN_EXE_harness9"));
        c.arg("--trace")
            .arg(&trace)
            .args(args)
            .arg("--approve-project")
            .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
            .current_dir(&dir)
            .env("HARNESS9_TEST_TOKEN", token);
        let out = output_within(c, None, Duration::from_secs(60));
        let body = std::fs::read_to_string(&trace).unwrap_or_default();
        (out, body)
    };
    let headers_of = |body: &str| -> Vec<serde_json::Map<String, serde_json::Value>> {
        body.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|r| r["response_headers"].as_object().cloned())
            .collect()
    };
    // Accepted: every response carries the cookie.
    let (out, body) = traced(
        "s3cret-token",
        &["mcp", "call", "b", "echo", "--args", r#"{"text":"hi"}"#],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let heads = headers_of(&body);
    assert!(
        heads
            .iter()
            .any(|h| h.get("set-cookie").is_some_and(|v| v == "[redacted]")
                && h.get("authentication-info")
                    .is_some_and(|v| v == "[redacted]")),
        "no redacted set-cookie/authentication-info in the trace:\n{body}"
    );
    // Refused: the 401's challenge.
    let (out, refused) = traced("wrong", &["mcp", "list"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let heads = headers_of(&refused);
    assert!(
        heads
            .iter()
            .any(|h| h.get("www-authenticate").is_some_and(|v| v == "[redacted]")),
        "no redacted www-authenticate in the trace:\n{refused}"
    );
    for secret in ["cookie-s3cret-value", "realm-s3cret-value", "s3cret-token"] {
        assert!(!body.contains(secret), "{secret} traced:\n{body}");
        assert!(!refused.contains(secret), "{secret} traced:\n{refused}");
    }
}

/// A successful HTTPS connection through the public commands: a local TLS server whose
/// certificate a fresh CA signed, trusted with `SSL_CERT_FILE` (the CA's PEM); without it the
/// certificate is refused and the error names the server and the cause.
#[test]
fn https_connects_when_the_servers_ca_is_trusted_with_ssl_cert_file() {
    let dir = temp_path("https-ca");
    std::fs::create_dir_all(&dir).unwrap();
    let srv = http_fixture("ok", &["--tls", &dir.display().to_string()]);
    let url = format!("https://127.0.0.1:{}/mcp", srv.port);
    let config = json!({"mcpServers": {"s": {"type": "http", "url": url}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let ca = dir.join("ca.pem");
    let call = |trust: Option<&Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_harness9"));
        c.args([
            "mcp",
            "call",
            "s",
            "echo",
            "--args",
            r#"{"text":"over tls"}"#,
        ])
        .arg("--approve-project")
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .current_dir(&dir);
        match trust {
            Some(p) => c.env("SSL_CERT_FILE", p),
            None => c.env_remove("SSL_CERT_FILE"),
        };
        output_within(c, None, Duration::from_secs(60))
    };
    let out = call(Some(&ca));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "over tls",
        "{err}"
    );
    let out = call(None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("server \"s\"")
            && err.contains("invalid peer certificate")
            && err.contains("SSL_CERT_FILE"),
        "{err}"
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

/// One HTTP/1.0 request to 127.0.0.1:`port` without a body; the response's body.
pub(super) fn plain_http(port: u16, method: &str, path: &str) -> String {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    write!(s, "{method} {path} HTTP/1.0\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}
