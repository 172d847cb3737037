//! Against the fixture server that misbehaves on purpose (tests/fixture-server).

use std::time::{Duration, Instant};

use harness9_actors::messages::{CallTool, ListTools, Restart, ServerStatus, SetBuiltins, Stop};
use harness9_actors::protocol::types::Tool;
use harness9_actors::{CallError, RestartPolicy, ToolRegistry};
use serde_json::json;

use super::common::*;

const T: Duration = Duration::from_secs(60);
const CONNECT: Duration = Duration::from_secs(10);

async fn echo(rt: &harness9::app::Runtime, server: &str, text: &str) -> Result<String, CallError> {
    ToolRegistry::call(
        &rt.registry,
        format!("mcp__{server}__echo"),
        Some(json!({"text": text})),
        None,
    )
    .await
    .map(|r| r.text())
}

fn record_has(path: &std::path::Path, needle: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle))
}

#[test]
fn sigkill_during_a_call_fails_it_at_once_and_the_server_comes_back_20_times() {
    run(Duration::from_secs(120), || async {
        // The breaker is out of the way here (its own test below); backoff stays real.
        let policy = RestartPolicy {
            max_exits: 1000,
            ..fast_policy()
        };
        let rt = start(vec![fixture("k", &[])], policy);
        let mut pgids = Vec::new();
        for cycle in 0..20 {
            let pid = pid_of(&connected(&rt, "k", CONNECT).await);
            pgids.push(pid);
            assert_eq!(
                echo(&rt, "k", "before").await.unwrap(),
                "before",
                "cycle {cycle}"
            );
            let registry = rt.registry.clone();
            let call = actix_rt::spawn(async move {
                ToolRegistry::call(
                    &registry,
                    "mcp__k__sleep",
                    Some(json!({"ms": 30_000})),
                    None,
                )
                .await
            });
            // The sleep call is in flight once the server could have read it; an echo that
            // returns proves the sleep request was written before it.
            assert_eq!(echo(&rt, "k", "during").await.unwrap(), "during");
            let killed = Instant::now();
            // SAFETY: SIGKILL to the fixture's own process group.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
            let err = call.await.unwrap().unwrap_err();
            let took = killed.elapsed();
            // Far below the 30 s sleep: the exit failed the call (no wall-clock race).
            assert!(
                took < Duration::from_secs(10),
                "cycle {cycle}: call failed after {took:?}"
            );
            assert!(matches!(err, CallError::ServerExited { .. }), "{err}");
            assert!(
                err.to_string()
                    .contains("server \"k\" was killed by signal 9 (SIGKILL)"),
                "{err}"
            );
            wait_for(&rt, "k", CONNECT, |s| {
                matches!(s, ServerStatus::Restarting { .. })
            })
            .await;
        }
        let pid = pid_of(&connected(&rt, "k", CONNECT).await);
        assert_eq!(echo(&rt, "k", "after").await.unwrap(), "after");
        pgids.push(pid);
        // Every group of the 21 generations is gone (the registry of live groups is process-wide
        // and shared with parallel tests, so the groups are checked one by one).
        shutdown(rt, &pgids).await;
        assert_eq!(pgids.len(), 21);
    });
}

#[test]
fn crash_loop_breaker_trips_after_5_exits_and_restart_resets_it() {
    run(T, || async {
        let rt = start(vec![fixture("c", &["--crash-after", "1"])], fast_policy());
        for _ in 0..5 {
            connected(&rt, "c", CONNECT).await;
            let err = echo(&rt, "c", "x").await.unwrap_err();
            assert!(err.to_string().contains("exited with status 1"), "{err}");
        }
        let st = wait_for(&rt, "c", CONNECT, |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, stderr_tail } = st else {
            unreachable!()
        };
        assert!(error.contains("exited 5 times"), "{error}");
        assert!(
            stderr_tail
                .iter()
                .any(|l| l.contains("crashing on purpose")),
            "{stderr_tail:?}"
        );
        let err = echo(&rt, "c", "x").await.unwrap_err();
        assert!(matches!(err, CallError::ServerUnavailable { .. }), "{err}");
        rt.supervisor
            .send(Restart("c".into()))
            .await
            .unwrap()
            .unwrap();
        connected(&rt, "c", CONNECT).await;
        shutdown(rt, &[]).await;
    });
}

/// Crashes `c` with a call; the `Restarting` status that follows, and the instants just before
/// the call (at most the exit's) and when the status was seen (at least the exit's).
async fn crash(rt: &harness9::app::Runtime) -> (usize, Instant, Instant, Instant) {
    connected(rt, "c", CONNECT).await;
    let before = Instant::now();
    let err = echo(rt, "c", "x").await.unwrap_err();
    assert!(err.to_string().contains("exited with status 1"), "{err}");
    let st = wait_for(rt, "c", CONNECT, |s| {
        matches!(s, ServerStatus::Restarting { .. })
    })
    .await;
    let seen = Instant::now();
    let ServerStatus::Restarting {
        attempt,
        next_retry,
        ..
    } = st
    else {
        unreachable!()
    };
    (attempt, next_retry, before, seen)
}

/// The supervisor's backoff doubles from `initial_backoff` up to `max_backoff` for each exit in
/// the window, and an exit older than the window no longer counts (the next crash is attempt 1
/// again, not the breaker). Checked by causality, not thresholds: the exit happened between
/// `before` and `seen`, so `next_retry` lies in `[before + delay, seen + delay]`, and the
/// server is back no earlier than `next_retry`.
#[test]
fn restart_backoff_doubles_to_its_cap_and_the_window_forgets_old_exits() {
    run(T, || async {
        let policy = RestartPolicy {
            initial_backoff: Duration::from_millis(300),
            max_backoff: Duration::from_millis(1200),
            max_exits: 5,
            // Long enough that the four exits below (about 2.5 s) fall in one window even on a
            // loaded machine.
            window: Duration::from_secs(8),
        };
        let rt = start(vec![fixture("c", &["--crash-after", "1"])], policy);
        let mut last_retry = Instant::now();
        for (n, delay_ms) in [(1, 300), (2, 600), (3, 1200), (4, 1200)] {
            let (attempt, next_retry, before, seen) = crash(&rt).await;
            let delay = Duration::from_millis(delay_ms);
            assert_eq!(attempt, n);
            assert_eq!(policy.backoff(n), delay);
            assert!(
                next_retry >= before + delay && next_retry <= seen + delay,
                "exit {n}: next retry not {delay:?} after the exit"
            );
            connected(&rt, "c", CONNECT).await;
            assert!(Instant::now() >= next_retry, "exit {n}: restarted early");
            last_retry = next_retry;
        }
        // Every exit so far is older than the window once this passes (each exit came before
        // its next_retry): the next crash is the first again, with the initial delay.
        let forget = last_retry + policy.window;
        tokio::time::sleep_until(forget.into()).await;
        let (attempt, next_retry, before, seen) = crash(&rt).await;
        assert_eq!(attempt, 1, "old exits still counted");
        assert!(next_retry >= before + policy.initial_backoff);
        assert!(next_retry <= seen + policy.initial_backoff);
        connected(&rt, "c", CONNECT).await;
        shutdown(rt, &[]).await;
    });
}

/// The startup timeout holds on a restart too: a server that connected once, crashed, and
/// then never answers its handshake is stopped at the timeout, which counts as one exit
/// (backoff, then the breaker naming the timeout); it never stays `Starting`. Before, the
/// stopped actor's exit was counted a second time ("last: was stopped").
#[test]
fn a_restart_that_hangs_counts_one_exit_per_startup_timeout() {
    let dir = temp_path("restart-hang");
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("started-once");
    // First start: a server that crashes on its first call; every later start: one that never
    // answers initialize.
    let script = format!(
        "if [ -e '{m}' ]; then exec '{f}' --no-init; else : > '{m}'; exec '{f}' --crash-after 1; fi",
        m = marker.display(),
        f = fixture_bin().display()
    );
    run(T, || async move {
        let mut spec = harness9_actors::ServerSpec::stdio("c", "sh", vec!["-c".into(), script]);
        spec.shutdown_grace = Duration::from_millis(300);
        spec.startup_timeout = Duration::from_millis(800);
        let rt = start(vec![spec], fast_policy());
        connected(&rt, "c", CONNECT).await;
        let err = echo(&rt, "c", "x").await.unwrap_err();
        assert!(err.to_string().contains("exited with status 1"), "{err}");
        // Each hung restart is one exit (the timeout), restarted with backoff; the stopped
        // actor's last word is not counted again.
        let timeout = "did not finish starting within 800 ms (startupTimeoutSec)";
        let st = wait_for(
            &rt,
            "c",
            CONNECT,
            |s| matches!(s, ServerStatus::Restarting { attempt, .. } if *attempt >= 2),
        )
        .await;
        let ServerStatus::Restarting {
            attempt,
            last_error,
            ..
        } = st
        else {
            unreachable!()
        };
        assert_eq!((attempt, last_error.as_str()), (2, timeout));
        // The crash and four timeouts: the breaker, naming the timeout.
        let st = wait_for(&rt, "c", Duration::from_secs(30), |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, .. } = st else {
            unreachable!()
        };
        assert_eq!(
            error,
            format!("exited 5 times within 60 s; last: {timeout}; restart it from the /mcp panel (r) or fix the server")
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_server_that_never_answers_initialize_fails_alone() {
    run(T, || async {
        let mut hang = fixture("hang", &["--no-init", "--stderr-lines", "3"]);
        hang.startup_timeout = Duration::from_millis(800);
        let rt = start(
            vec![hang, fixture("ok", &[]), everything("everything")],
            RestartPolicy::default(),
        );
        let started = Instant::now();
        connected(&rt, "ok", CONNECT).await;
        let st = wait_for(&rt, "hang", CONNECT, |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(800) && took < Duration::from_secs(5),
            "{took:?}"
        );
        let ServerStatus::Failed { error, .. } = st else {
            unreachable!()
        };
        assert_eq!(
            error,
            "did not finish starting within 800 ms (startupTimeoutSec)"
        );
        connected(&rt, "everything", Duration::from_secs(30)).await;
        assert_eq!(echo(&rt, "ok", "fine").await.unwrap(), "fine");
        // The stderr tail reaches the failed status once the child is gone.
        let st = wait_for(
            &rt,
            "hang",
            CONNECT,
            |s| matches!(s, ServerStatus::Failed { stderr_tail, .. } if !stderr_tail.is_empty()),
        )
        .await;
        let ServerStatus::Failed { stderr_tail, .. } = st else {
            unreachable!()
        };
        assert_eq!(
            stderr_tail,
            vec!["stderr line 0", "stderr line 1", "stderr line 2"]
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_30_mb_tools_list_line_is_accepted() {
    run(T, || async {
        let rt = start(
            vec![fixture("big", &["--pad-bytes", "30000000"])],
            RestartPolicy::default(),
        );
        connected(&rt, "big", Duration::from_secs(30)).await;
        let tools = rt.registry.send(ListTools).await.unwrap();
        let padded = tools
            .iter()
            .find(|t| &*t.name == "mcp__big__padded")
            .expect("padded tool");
        assert_eq!(
            padded.tool.description.as_deref().map(str::len),
            Some(30_000_000)
        );
        assert_eq!(echo(&rt, "big", "still fine").await.unwrap(), "still fine");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_reply_over_the_maximum_fails_at_once_and_the_connection_keeps_working() {
    run(T, || async {
        let mut s = fixture("max", &[]);
        s.max_message_bytes = 1024 * 1024;
        s.tool_timeout = Duration::from_secs(30);
        let rt = start(vec![s], RestartPolicy::default());
        connected(&rt, "max", CONNECT).await;
        let t0 = Instant::now();
        let err = ToolRegistry::call(
            &rt.registry,
            "mcp__max__big",
            Some(json!({"bytes": 3_000_000})),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "took {:?}",
            t0.elapsed()
        );
        assert!(
            matches!(err, CallError::TooLarge { max: 1_048_576, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("exceeds the maximum message size of 1.0 MB"),
            "{err}"
        );
        assert_eq!(echo(&rt, "max", "next").await.unwrap(), "next");
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__max__big",
            Some(json!({"bytes": 500_000})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.text().len(), 500_000);
        shutdown(rt, &[]).await;
    });
}

#[test]
fn garbage_lines_are_skipped() {
    run(T, || async {
        let rt = start(vec![fixture("g", &["--garbage"])], RestartPolicy::default());
        connected(&rt, "g", CONNECT).await;
        for i in 0..20 {
            assert_eq!(
                echo(&rt, "g", &format!("m{i}")).await.unwrap(),
                format!("m{i}")
            );
        }
        let r = ToolRegistry::call(&rt.registry, "mcp__g__rich", None, None)
            .await
            .unwrap();
        assert_eq!(r.content.len(), 3);
        assert_eq!(r.structured_content, Some(json!({"ok": true, "n": 3})));
        assert!(
            r.text().contains("[resource_link x.txt file:///tmp/x.txt]"),
            "{}",
            r.text()
        );
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_timed_out_call_sends_cancelled_and_others_go_on() {
    run(T, || async {
        let record = temp_path("record");
        let mut s = fixture(
            "slow",
            &["--slow-ms", "400", "--record", record.to_str().unwrap()],
        );
        s.tool_timeout = Duration::from_millis(100);
        let rt = start(vec![s], RestartPolicy::default());
        connected(&rt, "slow", CONNECT).await;
        let err = echo(&rt, "slow", "x").await.unwrap_err();
        assert!(matches!(err, CallError::Timeout { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "tool \"echo\" on server \"slow\" timed out after 100 ms; raise toolTimeoutSec for \"slow\" in .mcp.json if it needs longer"
        );
        // A longer per-call timeout wins over the server's.
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__slow__echo",
            Some(json!({"text": "y"})),
            Some(Duration::from_secs(5)),
        )
        .await
        .unwrap();
        assert_eq!(r.text(), "y");
        // The server has read the cancellation: it was written before the second call.
        assert!(record_has(&record, "notifications/cancelled"));
        shutdown(rt, &[]).await;
    });
}

#[test]
fn caller_cancellation_sends_cancelled() {
    run(T, || async {
        let record = temp_path("record");
        let rt = start(
            vec![fixture("s", &["--record", record.to_str().unwrap()])],
            RestartPolicy::default(),
        );
        connected(&rt, "s", CONNECT).await;
        let msg = CallTool::new("mcp__s__sleep", Some(json!({"ms": 30_000})));
        let token = msg.cancel.clone();
        let registry = rt.registry.clone();
        let call = actix_rt::spawn(async move { ToolRegistry::send(&registry, msg).await });
        assert_eq!(echo(&rt, "s", "a").await.unwrap(), "a");
        token.cancel();
        let err = call.await.unwrap().unwrap_err();
        assert!(matches!(err, CallError::Cancelled { .. }), "{err}");
        assert_eq!(echo(&rt, "s", "b").await.unwrap(), "b");
        let body = std::fs::read_to_string(&record).unwrap();
        assert!(body.contains("notifications/cancelled"), "{body}");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_server_that_exits_at_once_is_failed_with_its_stderr() {
    run(T, || async {
        let rt = start(
            vec![fixture("x", &["--exit-at-once"])],
            RestartPolicy::default(),
        );
        let st = wait_for(&rt, "x", CONNECT, |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, stderr_tail } = st else {
            unreachable!()
        };
        assert!(error.contains("exited with status 2"), "{error}");
        assert_eq!(stderr_tail, vec!["fatal: fixture told to exit at once"]);
        shutdown(rt, &[]).await;
    });
}

#[test]
fn a_server_that_ignores_eof_and_sigterm_is_killed_on_stop() {
    run(T, || async {
        let rt = start(
            vec![fixture("stubborn", &["--ignore-eof", "--ignore-sigterm"])],
            RestartPolicy::default(),
        );
        let pid = pid_of(&connected(&rt, "stubborn", CONNECT).await);
        let t0 = Instant::now();
        rt.supervisor
            .send(Stop("stubborn".into()))
            .await
            .unwrap()
            .unwrap();
        wait_for(&rt, "stubborn", CONNECT, |s| {
            matches!(s, ServerStatus::Stopped)
        })
        .await;
        shutdown(rt, &[pid]).await;
        // Grace 300 ms after closing stdin, 300 ms after SIGTERM, then SIGKILL.
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(600) && took < Duration::from_secs(3),
            "{took:?}"
        );
    });
}

#[test]
fn paginated_tools_list_is_followed_to_the_end() {
    run(T, || async {
        let rt = start(
            vec![fixture("p", &["--tools", "25", "--page-size", "4"])],
            RestartPolicy::default(),
        );
        let st = connected(&rt, "p", CONNECT).await;
        let ServerStatus::Connected { tools, .. } = st else {
            unreachable!()
        };
        let all = rt.registry.send(ListTools).await.unwrap();
        assert_eq!(all.len(), tools);
        assert!(all.iter().any(|t| &*t.name == "mcp__p__tool_00024"));
        assert!(all.iter().any(|t| &*t.name == "mcp__p__echo"));
        shutdown(rt, &[]).await;
    });
}

#[test]
fn list_changed_updates_the_registry() {
    run(T, || async {
        let rt = start(
            vec![fixture("lc", &["--list-changed-after", "1"])],
            RestartPolicy::default(),
        );
        let ServerStatus::Connected { tools: before, .. } = connected(&rt, "lc", CONNECT).await
        else {
            unreachable!()
        };
        echo(&rt, "lc", "x").await.unwrap();
        wait_for(
            &rt,
            "lc",
            CONNECT,
            |s| matches!(s, ServerStatus::Connected { tools, .. } if *tools == before + 1),
        )
        .await;
        let r = ToolRegistry::call(&rt.registry, "mcp__lc__added_later", None, None)
            .await
            .unwrap();
        assert_eq!(r.text(), "added later");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn server_requests_are_answered_in_their_own_id_space() {
    run(T, || async {
        let record = temp_path("record");
        let rt = start(
            vec![fixture(
                "r",
                &[
                    "--server-requests",
                    "--log-messages",
                    "--record",
                    record.to_str().unwrap(),
                ],
            )],
            RestartPolicy::default(),
        );
        connected(&rt, "r", CONNECT).await;
        // Our own ids also start at 0; the echo proves our id space is untouched.
        assert_eq!(echo(&rt, "r", "mine").await.unwrap(), "mine");
        let body = std::fs::read_to_string(&record).unwrap();
        let replies: Vec<serde_json::Value> = body
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v.get("method").is_none() && v.get("id").is_some())
            .collect();
        let by_id = |id: i64| {
            replies
                .iter()
                .find(|v| v["id"] == id)
                .unwrap_or_else(|| panic!("no reply to {id}: {body}"))
        };
        assert_eq!(by_id(0)["result"], json!({}));
        let roots = &by_id(1)["result"]["roots"];
        assert!(
            roots[0]["uri"].as_str().unwrap().starts_with("file:///"),
            "{roots}"
        );
        assert_eq!(by_id(2)["error"]["code"], -32601);
        shutdown(rt, &[]).await;
    });
}

#[test]
fn tool_filters_and_builtin_clashes() {
    run(T, || async {
        let mut s = fixture("f", &[]);
        s.disabled_tools = vec!["add".into()];
        let mut only = fixture("o", &[]);
        only.enabled_tools = Some(vec!["echo".into(), "pid".into()]);
        let rt = start(vec![s, only], RestartPolicy::default());
        connected(&rt, "f", CONNECT).await;
        let ServerStatus::Connected { tools, .. } = connected(&rt, "o", CONNECT).await else {
            unreachable!()
        };
        assert_eq!(tools, 2);
        // A built-in wins a clash with an MCP tool's registered name.
        struct Exec;
        impl actix::Actor for Exec {
            type Context = actix::Context<Self>;
        }
        impl actix::Handler<harness9_actors::messages::CallBuiltin> for Exec {
            type Result = Result<harness9_actors::protocol::types::CallToolResult, CallError>;
            fn handle(
                &mut self,
                m: harness9_actors::messages::CallBuiltin,
                _: &mut Self::Context,
            ) -> Self::Result {
                Ok(harness9_actors::protocol::types::CallToolResult {
                    content: vec![harness9_actors::protocol::types::ContentBlock::Text {
                        text: format!("builtin {}", m.name),
                    }],
                    structured_content: None,
                    is_error: false,
                    result_type: None,
                    schema_error: None,
                    task: None,
                })
            }
        }
        let tool: Tool = serde_json::from_value(
            json!({"name": "mcp__f__echo", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        use actix::Actor as _;
        rt.registry
            .send(SetBuiltins {
                tools: vec![tool],
                executor: Exec.start().recipient(),
            })
            .await
            .unwrap();
        let all = rt.registry.send(ListTools).await.unwrap();
        let names: Vec<&str> = all.iter().map(|t| &*t.name).collect();
        assert_eq!(names[0], "mcp__f__echo");
        assert!(all[0].server.is_none());
        assert_eq!(names.iter().filter(|n| **n == "mcp__f__echo").count(), 1);
        assert!(!names.contains(&"mcp__f__add"));
        assert!(
            names.contains(&"mcp__o__echo")
                && names.contains(&"mcp__o__pid")
                && !names.contains(&"mcp__o__add")
        );
        let r = ToolRegistry::call(&rt.registry, "mcp__f__echo", None, None)
            .await
            .unwrap();
        assert_eq!(r.text(), "builtin mcp__f__echo");
        shutdown(rt, &[]).await;
    });
}

#[test]
fn protocol_versions_are_negotiated() {
    run(T, || async {
        let rt = start(
            vec![
                fixture("old", &["--protocol", "2024-11-05"]),
                fixture("alien", &["--protocol", "1999-01-01"]),
            ],
            RestartPolicy::default(),
        );
        let ServerStatus::Connected { info, .. } = connected(&rt, "old", CONNECT).await else {
            unreachable!()
        };
        assert_eq!(info.protocol_version, "2024-11-05");
        let st = wait_for(&rt, "alien", CONNECT, |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, .. } = st else {
            unreachable!()
        };
        assert_eq!(
            error,
            "server answered protocol version \"1999-01-01\"; this client speaks 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25"
        );
        shutdown(rt, &[]).await;
    });
}

/// A subscriber that blocks its own thread on every message until the test lets it go, with a
/// one-slot mailbox.
struct Sluggish {
    gate: std::sync::mpsc::Receiver<()>,
    out: tokio::sync::mpsc::UnboundedSender<harness9_actors::messages::StatusSnapshot>,
}

impl actix::Actor for Sluggish {
    type Context = actix::Context<Self>;
    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1);
    }
}

/// Answered once `started` has run, so the mailbox is already down to one message.
#[derive(actix::Message)]
#[rtype(result = "()")]
struct Started;

impl actix::Handler<Started> for Sluggish {
    type Result = ();
    fn handle(&mut self, _: Started, _: &mut Self::Context) {}
}

impl actix::Handler<harness9_actors::messages::StatusChanged> for Sluggish {
    type Result = ();
    fn handle(&mut self, m: harness9_actors::messages::StatusChanged, _: &mut Self::Context) {
        let _ = self.gate.recv_timeout(Duration::from_secs(20));
        let _ = self.out.send(m.snapshot);
    }
}

#[test]
fn a_stuck_subscriber_never_stalls_the_runtime_and_gets_the_latest_status() {
    run(T, || async {
        let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
        let rt = start(
            names.iter().map(|n| fixture(n, &[])).collect(),
            RestartPolicy::default(),
        );
        let (gate_tx, gate) = std::sync::mpsc::channel();
        let (out, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let arbiter = actix::Arbiter::new();
        let stuck =
            actix::Actor::start_in_arbiter(&arbiter.handle(), move |_| Sluggish { gate, out });
        // Its arbiter thread may start late under load: until `started` sets the mailbox to
        // one message, the default capacity (16) would take every snapshot uncoalesced.
        stuck.send(Started).await.unwrap();
        rt.supervisor
            .send(harness9_actors::messages::Subscribe(stuck.recipient()))
            .await
            .unwrap();
        // The subscriber is stuck in its first message; the runtime goes on regardless.
        for n in &names {
            connected(&rt, n, CONNECT).await;
            assert_eq!(echo(&rt, n, "hi").await.unwrap(), "hi");
        }
        assert!(
            rx.try_recv().is_err(),
            "the subscriber was meant to be stuck"
        );
        for _ in 0..100 {
            gate_tx.send(()).unwrap();
        }
        // Once free, it sees every server connected, in far fewer messages than changes (9+).
        let mut got = 0;
        loop {
            // A tokio wait: the runtime shares this thread and must keep retrying meanwhile.
            let snap = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .ok()
                .flatten()
                .expect("the final status reached the subscriber");
            got += 1;
            if snap
                .values()
                .filter(|s| matches!(s.status, ServerStatus::Connected { .. }))
                .count()
                == 8
            {
                break;
            }
        }
        assert!(got <= 3, "{got} snapshots: not coalesced");
        arbiter.stop();
        shutdown(rt, &[]).await;
    });
}

/// Issue 32, point 3, past the approval: a server's pinned script (what its approval vouched
/// for) is checked again before every start, a restart after a crash included: rewritten while
/// the server ran, the restart does not run it and the status says which file changed. The
/// control: the same server, its script untouched, restarts and answers.
#[test]
fn a_pinned_script_rewritten_while_its_server_runs_is_not_run_by_the_restart() {
    let dir = temp_path("pinned-restart");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("run.sh");
    let rewritten = dir.join("REWRITTEN_RAN");
    let body = format!("exec '{}' --crash-after 1\n", fixture_bin().display());
    let spec_for = |name: &str, script: &std::path::Path| {
        std::fs::write(script, &body).unwrap();
        let mut spec =
            harness9_actors::ServerSpec::stdio(name, "sh", vec![script.display().to_string()]);
        spec.shutdown_grace = Duration::from_millis(300);
        let real = std::fs::canonicalize(script).unwrap();
        spec.pinned = vec![harness9_actors::Pinned::of(script, &real).unwrap()];
        spec
    };
    let control_script = dir.join("control.sh");
    let specs = vec![spec_for("c", &script), spec_for("ok", &control_script)];
    run(T, || async move {
        let rt = start(specs, fast_policy());
        connected(&rt, "c", CONNECT).await;
        connected(&rt, "ok", CONNECT).await;
        // Rewritten while it runs (as anything that may write the project could).
        std::fs::write(
            &script,
            format!(
                ": > '{}'\nexec '{}'\n",
                rewritten.display(),
                fixture_bin().display()
            ),
        )
        .unwrap();
        let err = echo(&rt, "c", "x").await.unwrap_err();
        assert!(err.to_string().contains("exited with status 1"), "{err}");
        let st = wait_for(&rt, "c", CONNECT, |s| match s {
            ServerStatus::Restarting { last_error, .. } => last_error.contains("changed since"),
            ServerStatus::Failed { error, .. } => error.contains("changed since"),
            _ => false,
        })
        .await;
        let said = format!("{st:?}");
        assert!(
            said.contains(&format!(
                "{} changed since server \\\"c\\\" was approved, so it is not started",
                script.display()
            )) && said.contains("harness9 mcp approve c"),
            "{said}"
        );
        assert!(!rewritten.exists(), "the rewritten script ran: {said}");
        // The control restarts as before: its new process takes the next call (and crashes
        // on it, as its script says).
        let err = echo(&rt, "ok", "x").await.unwrap_err();
        assert!(err.to_string().contains("exited with status 1"), "{err}");
        connected(&rt, "ok", CONNECT).await;
        let err = echo(&rt, "ok", "y").await.unwrap_err();
        assert!(err.to_string().contains("exited with status 1"), "{err}");
        shutdown(rt, &[]).await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// The scripted model's own checks (both endpoints streaming and not, the SSE framing, the
/// request record, an unmet `expect` answered 400, bad scripts refused): the engine and TUI
/// tests lean on them, so the suite runs them.
#[test]
fn the_scripted_model_passes_its_self_test() {
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(repo().join("tests/python/scripted_model_selftest.sh"));
    let out = output_within(cmd, None, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("PASS expectation failed -> 400"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("ALL PASS"), "{stdout}");
    assert!(!stdout.contains("FAIL "), "{stdout}");
}
