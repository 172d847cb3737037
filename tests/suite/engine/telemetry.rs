//! OpenTelemetry end to end: `harness9 run -p` with the standard `OTEL_*` environment exports
//! to a real collector (Arize Phoenix, PyPI `arize-phoenix`, installed by scripts/setup.sh), a
//! tool call goes to the PyPI `mcp` server instrumented with the Python OpenTelemetry SDK, and
//! the collector's own API shows one trace: the server's `tools/call` span a child of
//! harness9's, the spans named and attributed as the GenAI MCP conventions say, and none
//! carrying a configured secret.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use super::*;

/// A Phoenix server on free ports with its own working directory, killed (its whole process
/// group) when dropped.
struct Phoenix {
    child: Child,
    port: u16,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        // SAFETY: a signal to the process group of our own child, not reaped yet.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` on 127.0.0.1:`port` (HTTP/1.0: the body ends at the close); the status and body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

impl Phoenix {
    fn start(dir: &Path) -> Phoenix {
        use std::os::unix::process::CommandExt as _;
        let bin = repo().join(".deps/phoenix/bin/phoenix");
        assert!(
            bin.exists(),
            "Phoenix not found at {}: run scripts/setup.sh first",
            bin.display()
        );
        let port = free_port();
        let work = dir.join("phoenix");
        std::fs::create_dir_all(&work).unwrap();
        let mut child = Command::new(bin)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", &work)
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("phoenix.log")).unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start phoenix");
        // Its log (kept in phoenix.err) says when it listens: uvicorn's "running on" line.
        let (ready_tx, ready) = mpsc::channel();
        let err = child.stderr.take().expect("phoenix's stderr");
        let log = dir.join("phoenix.err");
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(log).ok();
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(f) = file.as_mut() {
                    let _ = writeln!(f, "{line}");
                }
                if line.contains("Uvicorn running on") {
                    let _ = ready_tx.send(());
                }
            }
        });
        let p = Phoenix { child, port };
        ready
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                panic!("Phoenix did not start within 120 s; see {}", dir.display())
            });
        assert_eq!(
            get(port, "/healthz").map(|r| r.0),
            Some(200),
            "Phoenix's /healthz"
        );
        p
    }

    /// Every span of `project`, in OTLP's JSON form.
    fn spans(&self, project: &str) -> Vec<Value> {
        let path = format!("/v1/projects/{project}/spans/otlpv1?limit=1000");
        match get(self.port, &path) {
            Some((200, body)) => serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["data"].as_array().cloned())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// A span's attributes as a map of plain values.
fn attrs(span: &Value) -> HashMap<String, Value> {
    span["attributes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|kv| {
                    let v = &kv["value"];
                    let plain = ["string_value", "int_value", "bool_value", "double_value"]
                        .iter()
                        .map(|k| &v[*k])
                        .find(|x| !x.is_null())?
                        .clone();
                    Some((kv["key"].as_str()?.to_owned(), plain))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name:?} among {:#?}", names(spans)))
}

fn names(spans: &[Value]) -> Vec<String> {
    spans
        .iter()
        .map(|s| s["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// A one-request-at-a-time HTTP listener standing in for a metrics collector (Phoenix takes
/// traces only): each POST's path and body arrive on the channel, answered 200.
fn metrics_sink() -> (u16, Receiver<(String, Vec<u8>)>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
            let mut raw = Vec::new();
            let mut buf = [0u8; 65536];
            let (head_end, len) = loop {
                let Ok(n) = c.read(&mut buf) else {
                    break (None, 0);
                };
                if n == 0 {
                    break (None, 0);
                }
                raw.extend_from_slice(&buf[..n]);
                if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&raw[..i]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (Some(i + 4), len);
                }
            };
            let Some(start) = head_end else { continue };
            while raw.len() < start + len {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => raw.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&raw[..start]).into_owned();
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let _ =
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send((path, raw[start..].to_vec()));
        }
    });
    (port, rx)
}

const TOKEN: &str = "sekrit-token-4242";
const HEADER: &str = "Bearer hdr-secret-7777";
const KEY: &str = "sk-model-key-31337";

#[test]
fn a_run_is_one_trace_with_the_servers_span_under_ours_and_no_secret_leaves() {
    let dir = project("otel", Value::Null);
    let phoenix = Phoenix::start(&dir);
    // server-everything over streamable HTTP: a session id to hash.
    let http = super::super::http::everything_http(super::super::http::free_port());
    let endpoint = format!("http://127.0.0.1:{}", phoenix.port);
    let py = repo().join(".deps/venv/bin/python");
    let servers = json!({
        "py": {
            "command": py,
            "args": [repo().join("tests/python/otel_server.py")],
            "env": {
                "PYTHONPATH": repo().join("tests/python"),
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
                "LEAK_SECRET": TOKEN,
            },
        },
        // The same in the handshake era, where a server sends its own requests: `confirm`
        // asks an elicitation (declined headless), whose trace context parents our span.
        "hs": {
            "command": py,
            "args": [repo().join("tests/python/otel_server.py")],
            "env": {
                "PYTHONPATH": repo().join("tests/python"),
                "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            },
            "protocolVersion": "2025-11-25",
        },
        "eh": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", http.port)},
        // An HTTP server with a credential header that nobody answers: its value is a secret
        // the session knows.
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": HEADER}},
    });
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let model = Model::start(
        "otel",
        json!({"steps": [
            {"tool_calls": [
                {"id": "g", "name": "mcp__py__greet", "input": {"name": "otel"}},
                {"id": "l", "name": "mcp__py__leak", "input": {}},
                {"id": "c", "name": "mcp__hs__confirm", "input": {}},
                {"id": "p", "name": "mcp__hs__poem", "input": {"topic": "traces"}},
            ]},
            // `poem`'s sampling request (allowed) takes this step, during the tool calls.
            {"text": "a line about traces"},
            {"text": "done"},
        ]}),
    );
    let (sink, metrics) = metrics_sink();
    let mut cmd = harness9(&dir);
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            format!("http://127.0.0.1:{sink}/v1/metrics"),
        );
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "mcp__py__*,mcp__hs__*",
        "--sampling",
        "allow",
    ];
    let out = Run::start(cmd, &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "done", "{out}");

    // The metrics, flushed at exit as OTLP protobuf: both durations, with their unit and the
    // method's and tool's attributes (protobuf keeps strings as they are).
    let (path, body) = metrics
        .recv_timeout(Duration::from_secs(10))
        .expect("no metrics export within 10 s of the exit");
    assert_eq!(path, "/v1/metrics");
    let has = |s: &str| body.windows(s.len()).any(|w| w == s.as_bytes());
    for s in [
        "mcp.client.operation.duration",
        "mcp.client.session.duration",
        "mcp.method.name",
        "tools/call",
        "gen_ai.tool.name",
        "greet",
        "-32001",
        "network.transport",
    ] {
        assert!(has(s), "{s} is not in the exported metrics");
    }
    for secret in [TOKEN, HEADER, KEY] {
        assert!(!has(secret), "{secret} was exported in a metric");
    }

    // The exporters flush at exit; the collector files them a moment later.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (ours, theirs) = loop {
        // Told apart by who sent them: the fixture server marks each span it makes
        // (`test.sent_by`); every other span in the collector is harness9's.
        let (theirs, ours): (Vec<Value>, Vec<Value>) = phoenix
            .spans("default")
            .into_iter()
            .partition(|s| attrs(s).get("test.sent_by") == Some(&json!("py-fixture")));
        let done = ours.iter().any(|s| s["name"] == "harness9 run")
            && theirs.iter().any(|s| s["name"] == "tools/call greet")
            && theirs.iter().any(|s| s["name"] == "tools/call confirm")
            && theirs.iter().any(|s| s["name"] == "tools/call poem");
        if done {
            break (ours, theirs);
        }
        assert!(
            Instant::now() < deadline,
            "spans did not arrive within 60 s: ours {:?}, the server's {:?}",
            names(&ours),
            names(&theirs)
        );
        std::thread::sleep(Duration::from_millis(250));
    };

    // One trace.
    let root = named(&ours, "harness9 run");
    let trace = root["trace_id"].as_str().unwrap();
    for s in ours.iter().chain(&theirs) {
        assert_eq!(s["trace_id"], trace, "a span of another trace: {s}");
    }
    // The chain: session > turn > tool > tools/call (ours) > tools/call (the server's).
    let turn = named(&ours, "invoke_agent harness9");
    let tool = named(&ours, "execute_tool mcp__py__greet");
    let call = named(&ours, "tools/call greet");
    let server = named(&theirs, "tools/call greet");
    assert_eq!(turn["parent_span_id"], root["span_id"]);
    assert_eq!(tool["parent_span_id"], turn["span_id"]);
    assert_eq!(call["parent_span_id"], tool["span_id"]);
    assert_eq!(
        server["parent_span_id"], call["span_id"],
        "the server's span is not under ours"
    );

    // The conventions' names and attributes.
    let a = attrs(call);
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], "greet");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["network.transport"], "pipe");
    assert_eq!(a["mcp.protocol.version"], "2026-07-28");
    assert!(
        a["jsonrpc.request.id"]
            .as_str()
            .is_some_and(|id| id.parse::<u64>().is_ok()),
        "{a:?}"
    );
    assert!(!a.contains_key("error.type"), "{a:?}");
    let t = attrs(tool);
    assert_eq!(t["gen_ai.operation.name"], "execute_tool");
    assert_eq!(t["gen_ai.tool.call.id"], "g");
    assert!(
        !t.contains_key("gen_ai.tool.call.arguments"),
        "arguments are opt-in: {t:?}"
    );
    let chat = named(&ours, "chat claude-sonnet-4-5");
    let c = attrs(chat);
    assert_eq!(c["gen_ai.operation.name"], "chat");
    assert_eq!(c["gen_ai.provider.name"], "anthropic");
    assert_eq!(c["gen_ai.request.model"], "claude-sonnet-4-5");
    assert!(c["gen_ai.usage.input_tokens"].as_i64().is_some(), "{c:?}");
    assert!(c["gen_ai.usage.output_tokens"].as_i64().is_some(), "{c:?}");
    for name in ["server/discover", "tools/list"] {
        let s = ours
            .iter()
            .find(|s| {
                s["name"] == name && attrs(s).get("harness9.mcp.server") == Some(&json!("py"))
            })
            .unwrap_or_else(|| panic!("no {name} span of py: {:?}", names(&ours)));
        assert_eq!(s["parent_span_id"], root["span_id"]);
    }

    // Over HTTP: the transport, the address, and the session id hashed (never the id).
    let list = ours
        .iter()
        .find(|s| {
            s["name"] == "tools/list" && attrs(s).get("harness9.mcp.server") == Some(&json!("eh"))
        })
        .unwrap_or_else(|| panic!("no tools/list span of eh: {:?}", names(&ours)));
    let h = attrs(list);
    assert_eq!(h["network.transport"], "tcp");
    assert_eq!(h["server.address"], "127.0.0.1");
    assert_eq!(h["server.port"].as_i64(), Some(i64::from(http.port)));
    let sid = h["mcp.session.id"].as_str().unwrap_or_default();
    assert!(
        sid.len() == 32 && sid.bytes().all(|b| b.is_ascii_hexdigit()),
        "{h:?}"
    );

    // A server's own request: our `SERVER` span for it under the server's span that sent it
    // (its `params._meta`), in the same trace, with the handshake era's version.
    let asked = named(&ours, "elicitation/create");
    let sender = theirs
        .iter()
        .find(|s| s["span_id"] == asked["parent_span_id"])
        .unwrap_or_else(|| panic!("the elicitation's parent is not a span of the server: {asked}"));
    assert_eq!(attrs(asked)["mcp.method.name"], "elicitation/create");
    assert_eq!(attrs(asked)["mcp.protocol.version"], "2025-11-25");
    let hs_call = ours
        .iter()
        .find(|s| s["name"] == "tools/call confirm")
        .expect("our tools/call confirm");
    let mut up = sender;
    // Up the server's spans to the one under our call.
    for _ in 0..8 {
        if up["parent_span_id"] == hs_call["span_id"] {
            break;
        }
        up = theirs
            .iter()
            .find(|s| s["span_id"] == up["parent_span_id"])
            .unwrap_or_else(|| panic!("a broken chain from {sender} to our tools/call confirm"));
    }
    assert_eq!(up["parent_span_id"], hs_call["span_id"]);

    // A sampling request: our span for it under the server's, and the model request it made
    // under ours.
    let sampling = named(&ours, "sampling/createMessage");
    assert!(
        theirs
            .iter()
            .any(|s| s["span_id"] == sampling["parent_span_id"]),
        "the sampling request's parent is not a span of the server: {sampling}"
    );
    let sampled = ours
        .iter()
        .find(|s| s["parent_span_id"] == sampling["span_id"])
        .unwrap_or_else(|| panic!("no span under the sampling request: {:?}", names(&ours)));
    assert_eq!(sampled["name"], "chat claude-sonnet-4-5");
    assert_eq!(attrs(sampled)["gen_ai.operation.name"], "chat");

    // The JSON-RPC error: its code as error.type, the status ERROR, the server's text in the
    // status with the secret it quoted taken out.
    let leak = named(&ours, "tools/call leak");
    let l = attrs(leak);
    assert_eq!(l["error.type"], "-32001");
    assert_eq!(l["rpc.response.status_code"], "-32001");
    assert_eq!(leak["status"]["code"], 2, "{leak}");
    assert_eq!(
        leak["status"]["message"], "denied for token [redacted]",
        "{leak}"
    );
    // The server's own span does carry it (it exports what it likes): the check reads ours.
    assert!(theirs.iter().any(|s| s.to_string().contains(TOKEN)));
    let all = serde_json::to_string(&ours).unwrap();
    for secret in [TOKEN, HEADER, "hdr-secret-7777", KEY] {
        assert!(!all.contains(secret), "{secret} was exported");
    }

    // The opt-in (the conventions' variable): the tool's arguments and result on its
    // `execute_tool` span, and still no secret.
    let model = Model::start(
        "otel-content",
        json!({"steps": [
            {"tool_calls": [{"id": "g2", "name": "mcp__py__greet", "input": {"name": "content"}}]},
            {"text": "done"},
        ]}),
    );
    let mut cmd = harness9(&dir);
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true");
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "mcp__py__greet",
    ];
    Run::start(cmd, &args).finish(LIMIT).ok();
    let deadline = Instant::now() + Duration::from_secs(60);
    let tool = loop {
        let spans = phoenix.spans("default");
        if let Some(s) = spans
            .iter()
            .find(|s| attrs(s).get("gen_ai.tool.call.id") == Some(&json!("g2")))
        {
            break s.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no execute_tool span of the second run within 60 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let t = attrs(&tool);
    assert_eq!(t["gen_ai.tool.call.arguments"], r#"{"name":"content"}"#);
    assert_eq!(t["gen_ai.tool.call.result"], "hello, content");
    // Off by default: the first run's tool span had neither (checked above).
}

/// The `traceparent`s of the requests and notifications a `--trace` file shows harness9 sent.
fn sent_traceparents(trace: &Path) -> Vec<(String, Option<String>)> {
    read_jsonl(trace)
        .iter()
        .filter(|r| r["dir"] == "send" && r["message"]["method"].is_string())
        .map(|r| {
            (
                r["message"]["method"].as_str().unwrap_or("").to_owned(),
                r["message"]["params"]["_meta"]["traceparent"]
                    .as_str()
                    .map(str::to_owned),
            )
        })
        .collect()
}

#[test]
fn every_message_carries_the_trace_context_in_both_eras_and_transports_and_none_when_off() {
    use super::super::http::{everything_http, free_port as port, python_http};
    let everything = everything_http(port());
    let python = python_http(port());
    let js =
        repo().join("tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let servers = json!({
        "es": {"command": "node", "args": [js, "stdio"]},
        "eh": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", everything.port)},
        "ps": {"command": repo().join(".deps/venv/bin/python"), "args": [repo().join("tests/python/server.py")]},
        "ph": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", python.port)},
    });
    let dir = project("otel-wire", servers);
    let calls = [
        ("es", "echo", r#"{"message":"x"}"#, "2025-11-25"),
        ("eh", "echo", r#"{"message":"x"}"#, "2025-11-25"),
        ("ps", "greet", r#"{"name":"x"}"#, "2026-07-28"),
        ("ph", "greet", r#"{"name":"x"}"#, "2026-07-28"),
    ];
    for (server, tool, args, era) in calls {
        for on in [true, false] {
            let trace = dir.join(format!("{server}-{on}.jsonl"));
            let mut cmd = harness9(&dir);
            if on {
                // Exported to a port nobody answers: export fails on its own threads, the
                // command is not held up by it.
                cmd.env("OTEL_TRACES_EXPORTER", "otlp")
                    .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9");
            }
            let trace_arg = trace.display().to_string();
            let out = Run::start(
                cmd,
                &[
                    "mcp", "call", server, tool, "--args", args, "--trace", &trace_arg,
                ],
            )
            .finish(LIMIT);
            out.ok();
            let sent = sent_traceparents(&trace);
            // The era each speaks (the trace marks the stateless era's records).
            let stateless = read_jsonl(&trace).iter().any(|r| r["era"] == "stateless");
            assert_eq!(
                stateless,
                era == "2026-07-28",
                "{server}: the era is not {era}"
            );
            assert!(
                sent.iter().any(|(m, _)| m == "tools/call"),
                "{server}: {sent:?}"
            );
            if !on {
                assert!(
                    sent.iter().all(|(_, tp)| tp.is_none()),
                    "{server} off: {sent:?}"
                );
                continue;
            }
            // Every message, requests and notifications, one trace.
            let ids: std::collections::BTreeSet<&str> = sent
                .iter()
                .map(|(m, tp)| {
                    let tp = tp
                        .as_deref()
                        .unwrap_or_else(|| panic!("{server}: {m} has no traceparent"));
                    let parts: Vec<&str> = tp.split('-').collect();
                    assert!(
                        parts.len() == 4
                            && parts[0] == "00"
                            && parts[1].len() == 32
                            && parts[2].len() == 16,
                        "{server}: {tp}"
                    );
                    parts[1]
                })
                .collect();
            assert_eq!(ids.len(), 1, "{server}: several traces {ids:?}");
        }
    }
}
