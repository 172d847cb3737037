//! Telemetry export to a collector that is down, with the real binary: a refused port (bound,
//! then closed) and a silent one (a listener that never accepts: the kernel completes the
//! connection, nothing ever answers). The command's own output is untouched, the failure is
//! said once (the endpoint without its credentials, never a header), `doctor` names it, and
//! the TUI says it once in the transcript; a collector that answers still gets both signals
//! at exit, and nothing is said. No timing is asserted: what is checked is what the user
//! reads and what the collector gets.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::common::*;
use super::engine::Model;
use super::tui::{project, tmux_required, Tmux, BOUND};

const LIMIT: Duration = Duration::from_secs(60);

/// A port nothing listens on: bound, then closed.
fn refused_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    l.local_addr().expect("its address").port()
}

/// A listener that never accepts: connections complete in the kernel's backlog and are never
/// answered. Kept open while the value lives.
fn silent() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = l.local_addr().expect("its address").port();
    (l, port)
}

/// A project with the fixture server `fx`.
fn fx_project(tag: &str) -> std::path::PathBuf {
    let dir = project(tag, |_| json!({ "fx": stdio_json(fixture("fx", &[])) }));
    std::fs::create_dir_all(dir.join("home")).expect("home");
    dir
}

/// `harness9` in `dir` exporting traces to `endpoint` (with an auth header that must never be
/// printed).
fn exporting(dir: &Path, endpoint: &str) -> Command {
    let mut c = harness9_in(dir);
    without_user_env(&mut c);
    c.env("HOME", dir.join("home"))
        .env("OTEL_TRACES_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer hdr-s3cret",
        )
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_METRICS_EXPORTER");
    c
}

/// How many times `text` says export to `port` failed.
fn said(text: &str, port: u16) -> usize {
    text.matches(&format!(
        "telemetry: export to http://127.0.0.1:{port}/v1/traces failed"
    ))
    .count()
}

fn texts(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_refused_collector_is_said_once_and_the_call_answers() {
    let dir = fx_project("otel-refused");
    let port = refused_port();
    let mut c = exporting(&dir, &format!("http://user:pw-s3cret@127.0.0.1:{port}"));
    c.args(["mcp", "call", "fx", "echo", "--args", r#"{"text":"hi"}"#]);
    let o = output_within(c, None, LIMIT);
    let (out, err) = texts(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.trim(), "hi", "{err}");
    assert_eq!(said(&err, port), 1, "{err}");
    assert!(err.contains("check OTEL_EXPORTER_OTLP_ENDPOINT"), "{err}");
    assert!(!err.contains("s3cret"), "a credential was printed: {err}");
}

#[test]
fn a_run_with_a_refused_collector_ends_and_says_it_once() {
    let dir = fx_project("otel-refused-run");
    let port = refused_port();
    let model = Model::start("otel-refused-run", json!({"steps": [{"text": "done"}]}));
    let mut c = exporting(&dir, &format!("http://127.0.0.1:{port}"));
    c.envs(model.env()).args(["run", "-p", "hi"]);
    let o = output_within(c, None, LIMIT);
    let (out, err) = texts(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.trim(), "done", "{err}");
    assert_eq!(said(&err, port), 1, "{err}");
    assert_eq!(model.requests().len(), 1);
}

#[test]
fn a_silent_collector_is_said_once_at_exit() {
    let dir = fx_project("otel-silent");
    let (_held, port) = silent();
    let mut c = exporting(&dir, &format!("http://127.0.0.1:{port}"));
    c.args(["mcp", "call", "fx", "echo", "--args", r#"{"text":"hi"}"#]);
    let o = output_within(c, None, LIMIT);
    let (out, err) = texts(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.trim(), "hi", "{err}");
    assert_eq!(said(&err, port), 1, "{err}");
    assert!(err.contains("no answer within"), "{err}");
    assert!(!err.contains("s3cret"), "a credential was printed: {err}");
}

#[test]
fn doctor_probes_a_silent_collector_once_within_its_bound_and_names_it() {
    let dir = fx_project("otel-doctor");
    let (_held, port) = silent();
    let mut c = exporting(&dir, &format!("http://127.0.0.1:{port}"));
    c.arg("doctor");
    let o = output_within(c, None, LIMIT);
    let (out, err) = texts(&o);
    let line = out
        .lines()
        .find(|l| l.contains("telemetry"))
        .unwrap_or_else(|| panic!("no telemetry check\n{out}\n{err}"));
    assert!(
        line.contains(&format!("http://127.0.0.1:{port}/v1/traces"))
            && line.contains("did not answer within 2 s"),
        "{line}"
    );
    // The probe's failure is what the exporters learnt: said once, not again at exit.
    assert_eq!(said(&err, port), 1, "{err}");
}

#[test]
fn the_tui_says_once_that_export_fails() {
    tmux_required();
    let dir = fx_project("otel-tui");
    let port = refused_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let vars = [
        ("OTEL_TRACES_EXPORTER", "otlp"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer hdr-s3cret",
        ),
    ];
    let t = Tmux::start_with(&dir, &[], None, &vars);
    let needle = format!("export to http://127.0.0.1:{port}/v1/traces");
    let screen = t.wait_for("the export failure line", BOUND, |s| s.contains(&needle));
    assert_eq!(screen.matches(&needle).count(), 1, "{screen}");
    assert!(!screen.contains("s3cret"), "{screen}");
}

/// A collector that answers 200 to every POST, one connection at a time: each request's path
/// and body length arrive on the channel.
fn answering() -> (u16, std::sync::mpsc::Receiver<(String, usize)>) {
    use std::io::{Read as _, Write as _};
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = l.local_addr().expect("its address").port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
            let mut raw = Vec::new();
            let mut buf = [0u8; 65536];
            let mut want = None;
            loop {
                if let Some(w) = want {
                    if raw.len() >= w {
                        break;
                    }
                }
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => raw.extend_from_slice(&buf[..n]),
                }
                if want.is_none() {
                    if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&raw[..i]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        want = Some(i + 4 + len);
                    }
                }
            }
            let head = String::from_utf8_lossy(&raw);
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let body = raw
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(0, |i| raw.len() - i - 4);
            let _ =
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = tx.send((path, body));
        }
    });
    (port, rx)
}

#[test]
fn a_collector_that_answers_gets_the_spans_and_metrics_at_exit_and_nothing_is_said() {
    let dir = fx_project("otel-up");
    let (port, got) = answering();
    let mut c = exporting(&dir, &format!("http://127.0.0.1:{port}"));
    c.env("OTEL_METRICS_EXPORTER", "otlp").args([
        "mcp",
        "call",
        "fx",
        "echo",
        "--args",
        r#"{"text":"hi"}"#,
    ]);
    let o = output_within(c, None, LIMIT);
    let (out, err) = texts(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(said(&err, port), 0, "{err}");
    assert!(!err.contains("telemetry"), "{err}");
    // The exit flushed both signals (the probe is an empty export to the traces' path).
    let mut seen: Vec<(String, usize)> = Vec::new();
    let full = |seen: &[(String, usize)], p: &str| seen.iter().any(|(q, n)| q == p && *n > 0);
    while !(full(&seen, "/v1/traces") && full(&seen, "/v1/metrics")) {
        match got.recv_timeout(Duration::from_secs(10)) {
            Ok(r) => seen.push(r),
            Err(_) => panic!("not every signal arrived: {seen:?}\n{err}"),
        }
    }
}
