//! Hostile servers against the real binary and the runtime: floods that read nothing, cursors
//! that cycle, replies that lie, schemas that would break the model, stderr that never stops.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness9_actors::messages::ServerStatus;
use harness9_actors::{CallError, RestartPolicy, ToolRegistry};
use serde_json::{json, Value};

use super::common::*;

const LIMIT: Duration = Duration::from_secs(60);

/// A config file holding `servers`, given with `--config` (trusted).
fn config(tag: &str, servers: Value) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("servers.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

fn fixture_entry(args: &[&str], extra: Value) -> Value {
    let mut v = stdio_json(fixture("f", args));
    if let (Value::Object(m), Value::Object(x)) = (&mut v, extra) {
        m.extend(x);
    }
    v
}

/// What one run of the binary did, and the most memory it held (VmHWM, read from /proc while
/// it ran: the kernel keeps the high-water mark, so the last reading is the peak).
struct Measured {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    peak_kib: u64,
    took: Duration,
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn measured(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Measured {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness9"))
        .arg("--config")
        .arg(config)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |r: &mut dyn std::io::Read| {
        let mut s = Vec::new();
        let _ = r.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    };
    // Read on threads that report over channels: the joins below are bounded even if a
    // descendant kept a pipe open after harness9 exited.
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let (err_tx, err_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || out_tx.send(read(&mut out)));
    std::thread::spawn(move || err_tx.send(read(&mut err)));
    let mut peak = 0;
    let code = loop {
        if let Some(kib) = vm_hwm_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("harness9 {args:?} did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Measured {
        code,
        stdout: out_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("stdout still open 10 s after harness9 exited"),
        stderr: err_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("stderr still open 10 s after harness9 exited"),
        peak_kib: peak,
        took: started.elapsed(),
    }
}

#[test]
fn a_server_that_floods_requests_and_reads_nothing_leaves_memory_bounded() {
    let cfg = config(
        "flood",
        json!({"f": fixture_entry(&["--flood"], json!({}))}),
    );
    let m = measured(
        &cfg,
        &[
            "mcp",
            "call",
            "f",
            "echo",
            "--args",
            r#"{"text":"hi"}"#,
            "--timeout",
            "5",
        ],
        &[],
    );
    assert_eq!(m.code, Some(1), "{}\n{}", m.stdout, m.stderr);
    // The call is never read: it waits for room in the full queue, or (if it got in before the
    // flood filled it) sits there until its timeout; either way the error says why.
    assert!(
        m.stderr.contains(
            "server \"f\" is not reading its input: tool \"echo\" got no answer within 5 s"
        ),
        "{}",
        m.stderr
    );
    eprintln!("flood: peak RSS {} KiB over {:?}", m.peak_kib, m.took);
    // Bounded, it stays near 20 MiB (debug build); the unbounded queue of before reached
    // 100 MiB in these 5 s on a loaded 2-core machine (and 3.4 GB in 20 s in release).
    assert!(
        m.peak_kib < 64 * 1024,
        "peak RSS {} MiB over {:?} while the server flooded",
        m.peak_kib / 1024,
        m.took
    );
}

#[test]
fn cycling_cursors_fail_clearly_within_the_handshake_bound() {
    let cfg = config(
        "cycle",
        json!({"f": fixture_entry(&["--cycle-cursors"], json!({"startupTimeoutSec": 20}))}),
    );
    let m = measured(&cfg, &["mcp", "list"], &[]);
    assert_eq!(m.code, Some(1), "{}\n{}", m.stdout, m.stderr);
    let all = format!("{}{}", m.stdout, m.stderr);
    assert!(
        all.contains("tools/list returned the cursor \"A\" again after 3 pages"),
        "{all}"
    );
    assert!(m.took < Duration::from_secs(20), "took {:?}", m.took);
    assert!(
        m.peak_kib < 300 * 1024,
        "peak RSS {} MiB",
        m.peak_kib / 1024
    );
}

#[test]
fn more_tools_than_max_tools_is_a_clear_error() {
    let cfg = config(
        "maxtools",
        json!({"f": fixture_entry(&["--tools", "50", "--page-size", "20"], json!({"maxTools": 30}))}),
    );
    let m = measured(&cfg, &["mcp", "list"], &[]);
    assert_eq!(m.code, Some(1), "{}\n{}", m.stdout, m.stderr);
    assert!(
        m.stderr.contains(
            "tools/list returned more than 30 items; if that is legitimate, raise maxTools"
        ),
        "{}",
        m.stderr
    );
}

#[test]
fn a_reply_with_both_result_and_error_is_an_error_whatever_the_key_order() {
    run(LIMIT, || async {
        let rt = start(vec![fixture("f", &[])], RestartPolicy::default());
        connected(&rt, "f", Duration::from_secs(10)).await;
        for order in ["result-first", "error-first"] {
            let r = ToolRegistry::call(
                &rt.registry,
                "mcp__f__both",
                Some(json!({ "order": order })),
                None,
            )
            .await;
            match r {
                Err(e @ CallError::Rpc { .. }) => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains("server \"f\"") && msg.contains("carries both"),
                        "{order}: {msg}"
                    );
                }
                other => panic!("{order}: {other:?}"),
            }
        }
        // The connection is fine afterwards.
        assert_eq!(
            call_text(&rt, "mcp__f__echo", json!({"text": "ok"})).await,
            "ok"
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn mcp_get_says_why_a_schema_cannot_be_shown() {
    let cfg = config(
        "schemas",
        json!({"f": fixture_entry(&["--bad-schemas"], json!({}))}),
    );
    let m = measured(&cfg, &["mcp", "get", "f"], &[]);
    assert_eq!(m.code, Some(0), "{}\n{}", m.stdout, m.stderr);
    let deep = m
        .stdout
        .split("\nmcp__f__deep_schema")
        .nth(1)
        .expect(&m.stdout);
    let deep = deep.split("\nmcp__f__").next().unwrap_or(deep);
    assert!(deep.contains("nested too deeply"), "{deep}");
    assert!(!deep.contains("null"), "{deep}");
    let number = m
        .stdout
        .split("\nmcp__f__number_schema")
        .nth(1)
        .expect(&m.stdout);
    let number = number.split("\nmcp__f__").next().unwrap_or(number);
    assert!(number.contains("not a JSON object"), "{number}");
}

#[test]
fn server_stderr_stays_out_of_the_log_above_debug_and_is_rate_limited() {
    let cfg = config(
        "stderr",
        json!({"f": fixture_entry(&["--stderr-lines", "20000"], json!({}))}),
    );
    // -v (info): not one stderr line is logged.
    let m = measured(&cfg, &["-v", "mcp", "list"], &[]);
    assert_eq!(m.code, Some(0), "{}\n{}", m.stdout, m.stderr);
    let logged = m.stderr.matches("stderr line ").count();
    assert_eq!(logged, 0, "{}", &m.stderr[..m.stderr.len().min(2000)]);
    // -vv (debug): logged, but the burst is cut and the cut is said once.
    let m = measured(&cfg, &["-vv", "mcp", "list"], &[]);
    assert_eq!(m.code, Some(0), "{}", m.stdout);
    let logged = m.stderr.matches("stderr line ").count();
    assert!(
        (100..2_000).contains(&logged),
        "{logged} stderr lines logged of 20000"
    );
    assert!(m.stderr.contains("stderr lines not logged"), "no cut noted");
}

#[test]
fn a_relist_whose_cursors_cycle_stops_and_the_server_stays_usable() {
    let record = temp_path("relist-record");
    run(LIMIT, || async {
        let rec = record.display().to_string();
        let spec = fixture(
            "f",
            &[
                "--list-changed-after",
                "1",
                "--cycle-cursors-later",
                "--record",
                &rec,
            ],
        );
        let rt = start(vec![spec], RestartPolicy::default());
        connected(&rt, "f", Duration::from_secs(10)).await;
        assert_eq!(
            call_text(&rt, "mcp__f__echo", json!({"text": "one"})).await,
            "one"
        );
        let lists = || {
            std::fs::read_to_string(&record)
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains(r#""method":"tools/list""#))
                .count()
        };
        // The handshake's list, then the re-list's pages "", A, B: the cursor A comes back.
        // The file is written by another process: polled, on this (the actors') thread
        // without blocking it.
        let end = Instant::now() + Duration::from_secs(10);
        while lists() < 4 {
            assert!(
                Instant::now() < end,
                "the re-list did not reach its third page"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for t in ["two", "three", "four"] {
            assert_eq!(
                call_text(&rt, "mcp__f__echo", json!({ "text": t })).await,
                t
            );
        }
        assert_eq!(lists(), 4, "the re-list went on past the repeated cursor");
        // The table from before the failed re-list stays.
        let st = snapshot(&rt)["f"].status.clone();
        assert!(matches!(st, ServerStatus::Connected { .. }), "{st:?}");
        shutdown(rt, &[]).await;
    });
}

// ---- HTTP ---------------------------------------------------------------------------------

use super::http::{http_fixture, http_spec};
use harness9_actors::TransportSpec;

fn with_headers(
    mut spec: harness9_actors::ServerSpec,
    h: &[(&str, &str)],
) -> harness9_actors::ServerSpec {
    if let TransportSpec::Http { headers, .. } = &mut spec.transport {
        headers.extend(h.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    spec
}

fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn streamable_http_initialized_is_answered_before_any_request() {
    let srv = http_fixture("strict-init", &[]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    run(LIMIT, || async move {
        let rt = start(vec![http_spec("x", url, false)], RestartPolicy::default());
        connected(&rt, "x", Duration::from_secs(10)).await;
        assert_eq!(
            call_text(&rt, "mcp__x__echo", json!({"text": "after"})).await,
            "after"
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn concurrent_calls_after_a_session_loss_initialize_once() {
    let record = temp_path("expire-on");
    let srv = http_fixture("expire-on", &["--record", record.to_str().unwrap()]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    run(LIMIT, || async move {
        let rt = start(vec![http_spec("x", url, false)], RestartPolicy::default());
        connected(&rt, "x", Duration::from_secs(10)).await;
        assert_eq!(
            call_text(&rt, "mcp__x__echo", json!({"text": "expire"})).await,
            "expire"
        );
        let calls = (0..6).map(|i| {
            let reg = rt.registry.clone();
            async move {
                ToolRegistry::call(
                    &reg,
                    "mcp__x__echo",
                    Some(json!({ "text": format!("c{i}") })),
                    None,
                )
                .await
                .map(|r| r.text())
            }
        });
        for (i, r) in futures_util::future::join_all(calls)
            .await
            .into_iter()
            .enumerate()
        {
            assert_eq!(
                r.unwrap_or_else(|e| panic!("call {i}: {e}")),
                format!("c{i}")
            );
        }
        let inits = recorded(&record)
            .iter()
            .filter(|r| {
                r["body"]
                    .as_str()
                    .unwrap_or("")
                    .contains(r#""method":"initialize""#)
            })
            .count();
        assert_eq!(inits, 2, "one initialize at start, one after the loss");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_legacy_endpoint_on_another_origin_gets_no_request_and_fails_clearly() {
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port().to_string();
    let srv = http_fixture("legacy-evil", &["--other-port", &other_port]);
    let url = format!("http://127.0.0.1:{}/sse", srv.port);
    run(LIMIT, || async move {
        let spec = with_headers(
            http_spec("x", url, true),
            &[("Authorization", "Bearer s3cret")],
        );
        let rt = start(vec![spec], RestartPolicy::default());
        let st = wait_for(&rt, "x", Duration::from_secs(10), |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, .. } = st else {
            unreachable!()
        };
        assert!(error.contains("another origin"), "{error}");
        other.set_nonblocking(true).unwrap();
        assert!(
            matches!(other.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a connection reached the other origin"
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_redirect_loop_says_so() {
    let srv = http_fixture("redirect-loop", &[]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    run(LIMIT, || async move {
        let rt = start(vec![http_spec("x", url, false)], RestartPolicy::default());
        let st = wait_for(&rt, "x", Duration::from_secs(10), |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, .. } = st else {
            unreachable!()
        };
        assert!(error.contains("redirect loop"), "{error}");
        assert!(
            error.contains("/mcp -> ") && error.contains("/mcp2"),
            "{error}"
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_redirect_to_another_origin_carries_none_of_the_configured_headers() {
    let away_record = temp_path("away");
    let away = http_fixture("ok", &["--record", away_record.to_str().unwrap()]);
    let srv = http_fixture("redirect-away", &["--other-port", &away.port.to_string()]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    run(LIMIT, || async move {
        let spec = with_headers(
            http_spec("x", url, false),
            &[
                ("Authorization", "Bearer s3cret"),
                ("X-Api-Key", "k3y-s3cret"),
            ],
        );
        let rt = start(vec![spec], RestartPolicy::default());
        connected(&rt, "x", Duration::from_secs(10)).await;
        assert_eq!(
            call_text(&rt, "mcp__x__echo", json!({"text": "there"})).await,
            "there"
        );
        let got = recorded(&away_record);
        assert!(!got.is_empty(), "nothing reached the redirect's target");
        for r in &got {
            let h = r["headers"].to_string().to_ascii_lowercase();
            assert!(
                !h.contains("s3cret") && !h.contains("x-api-key") && !h.contains("authorization"),
                "a configured header crossed origins: {h}"
            );
        }
        shutdown(rt, &[]).await;
    });
}

#[test]
fn bodies_delimited_by_the_connection_close_are_read_to_the_close() {
    for mode in ["close-body", "close-sse"] {
        let srv = http_fixture(mode, &[]);
        let url = format!("http://127.0.0.1:{}/mcp", srv.port);
        run(LIMIT, || async move {
            let rt = start(vec![http_spec("x", url, false)], RestartPolicy::default());
            connected(&rt, "x", Duration::from_secs(10)).await;
            let big = call_text(&rt, "mcp__x__big", json!({"bytes": 300_000})).await;
            assert_eq!(big.len(), 300_000, "{mode}");
            assert_eq!(
                call_text(&rt, "mcp__x__echo", json!({"text": mode})).await,
                mode
            );
            shutdown(rt, &[]).await;
        });
    }
}

#[test]
fn an_http_server_that_floods_requests_and_stalls_our_answers_leaves_memory_bounded() {
    let srv = http_fixture("flood-get", &[]);
    let cfg = config(
        "http-flood",
        json!({"x": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", srv.port)}}),
    );
    let m = measured(
        &cfg,
        &[
            "mcp",
            "call",
            "x",
            "sleep",
            "--args",
            r#"{"ms":1}"#,
            "--timeout",
            "5",
        ],
        &[],
    );
    eprintln!("http flood: peak RSS {} KiB over {:?}", m.peak_kib, m.took);
    // Answers past 256 POSTs in flight wait in the bounded queue, then are dropped; the call
    // itself may be starved by the stalled POSTs and then times out: either way, bounded.
    // The drops are counted and said (at each power of two): a full queue of 1024 and more.
    let dropped = m
        .stderr
        .lines()
        .filter(|l| l.contains("answers and notifications are dropped") && l.contains("server=x"))
        .filter_map(|l| {
            l.split("dropped=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .max();
    assert!(
        dropped.is_some_and(|n| n >= 1024),
        "no count of dropped answers reached 1024 (most: {dropped:?}):\n{}",
        m.stderr
    );
    assert!(
        matches!(m.code, Some(0 | 1)),
        "exit {:?}: {}",
        m.code,
        m.stderr
    );
    if m.code == Some(1) {
        assert!(
            m.stderr.contains(
                r#"server "x" is not reading its input: tool "sleep" got no answer within 5 s"#
            ),
            "{}",
            m.stderr
        );
    }
    assert!(
        m.peak_kib < 64 * 1024,
        "peak RSS {} MiB over {:?}: {}",
        m.peak_kib / 1024,
        m.took,
        m.stderr
    );
}
