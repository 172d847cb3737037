//! Every request a 2026-07-28 server receives carries that era's `_meta`, also when its
//! `server/discover` answer is slow and both cores are busy (issue 34, point 7): a slow
//! stateless server over Streamable HTTP (the misbehaving fixture's `stateless-only` mode) and
//! over stdio (tests/python/slow_discover_stdio.py), each recording what it received.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::http_fixture;

const LIMIT: Duration = Duration::from_secs(60);

/// Busy loops on every core until dropped (also when the test panics).
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// `mcp call SERVER echo` in `dir` (the project's config trusted), with the cores loaded.
fn call_under_load(dir: &Path, server: &str) {
    let _load = Load::start();
    let mut c = harness9_in(dir);
    without_user_env(&mut c).args([
        "mcp",
        "call",
        server,
        "echo",
        "--args",
        r#"{"text":"slow but whole"}"#,
    ]);
    let out = output_within(c, None, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("slow but whole"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON-RPC requests (an `id` and a `method`) among `messages`, each with the
/// `MCP-Protocol-Version` header it came with (`None` over stdio).
fn requests(messages: Vec<(Value, Option<String>)>) -> Vec<(Value, Option<String>)> {
    messages
        .into_iter()
        .filter(|(m, _)| m.get("id").is_some() && m.get("method").is_some())
        .collect()
}

/// Asserts that each request carries the 2026-07-28 `_meta` (protocolVersion,
/// clientCapabilities, clientInfo) and a header, where there is one, that matches it.
fn assert_all_carry_meta(reqs: &[(Value, Option<String>)]) {
    assert!(
        reqs.iter().any(|(m, _)| m["method"] == "tools/call"),
        "{reqs:?}"
    );
    for (m, header) in reqs {
        let meta = &m["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "a request without the 2026 _meta: {m}"
        );
        assert!(
            meta["io.modelcontextprotocol/clientCapabilities"].is_object(),
            "{m}"
        );
        assert!(
            meta["io.modelcontextprotocol/clientInfo"]["name"].is_string(),
            "{m}"
        );
        if let Some(h) = header {
            assert_eq!(h, "2026-07-28", "the header matches the _meta: {m}");
        }
    }
}

/// Streamable HTTP: a `server/discover` answer 2.5 s late (past the 2 s the probe used to
/// wait before sending `initialize` beside it) is waited for: a slow answer is only slow.
#[test]
fn a_slow_2026_http_server_sees_only_requests_with_its_meta_under_load() {
    let reqs = slow_http_server_received("meta-http", 2_500);
    assert!(
        !reqs.iter().any(|(m, _)| m["method"] == "initialize"),
        "no initialize to a server that is only slow: {reqs:?}"
    );
    assert_all_carry_meta(&reqs);
}

/// Streamable HTTP: past the 10 s HTTP probe, `initialize` goes beside it, with the 2026
/// `_meta` and an `MCP-Protocol-Version` that matches it.
#[test]
fn a_very_slow_2026_http_server_gets_an_initialize_with_its_meta() {
    let reqs = slow_http_server_received("meta-http-10", 10_500);
    assert!(
        reqs.iter().any(|(m, _)| m["method"] == "initialize"),
        "the fallback went out beside the probe: {reqs:?}"
    );
    assert_all_carry_meta(&reqs);
}

/// What a 2026-07-28-only HTTP server whose `server/discover` answer comes `delay_ms` late
/// received while `mcp call` reached it with the cores loaded: its requests, with headers.
fn slow_http_server_received(tag: &str, delay_ms: u64) -> Vec<(Value, Option<String>)> {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("received.jsonl");
    let server = http_fixture(
        "stateless-only",
        &[
            "--discover-delay",
            &delay_ms.to_string(),
            "--record",
            record.to_str().unwrap(),
        ],
    );
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"slow": {
            "url": format!("http://127.0.0.1:{}/mcp", server.port),
            "startupTimeoutSec": 30,
        }}})
        .to_string(),
    )
    .unwrap();
    call_under_load(&dir, "slow");
    let received = std::fs::read_to_string(&record).unwrap();
    let messages = received
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["method"] == "POST")
        .filter_map(|r| {
            let body = serde_json::from_str(r["body"].as_str()?).ok()?;
            let header = r["headers"]
                .as_object()?
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("mcp-protocol-version"))
                .and_then(|(_, v)| v.as_str().map(str::to_owned));
            Some((body, header))
        })
        .collect();
    requests(messages)
}

/// stdio: a server that ignores what it does not know must still be reached, so `initialize`
/// still goes beside a probe unanswered for 2 s; it carries the 2026 `_meta` too.
#[test]
fn a_slow_2026_stdio_server_sees_only_requests_with_its_meta_under_load() {
    let dir = temp_path("meta-stdio");
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("received.jsonl");
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"slow": {
            "command": "python3",
            "args": [
                repo().join("tests/python/slow_discover_stdio.py"),
                "--discover-delay", "2500",
                "--record", record,
            ],
            "startupTimeoutSec": 30,
        }}})
        .to_string(),
    )
    .unwrap();
    call_under_load(&dir, "slow");
    let received = std::fs::read_to_string(&record).unwrap();
    let messages = received
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|m| (m, None))
        .collect();
    let reqs = requests(messages);
    assert!(
        reqs.iter().any(|(m, _)| m["method"] == "initialize"),
        "the fallback went out beside the probe: {reqs:?}"
    );
    assert_all_carry_meta(&reqs);
}
