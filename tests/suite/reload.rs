//! Hot reload at the runtime level: `Reconcile` starts added servers, stops removed ones,
//! restarts changed ones and leaves unchanged ones (and their calls in flight) alone.

use std::time::Duration;

use harness9_actors::messages::{Reconcile, ReconcileReport, ServerStatus};
use harness9_actors::ToolRegistry;
use serde_json::json;

use super::common::*;

/// Starts a `sleep` call on `server` and returns once the server's record file shows it.
async fn call_in_flight(
    rt: &harness9::app::Runtime,
    server: &str,
    ms: u64,
    record: &std::path::Path,
) -> actix_rt::task::JoinHandle<
    Result<harness9_actors::protocol::types::CallToolResult, harness9_actors::CallError>,
> {
    let registry = rt.registry.clone();
    let tool = format!("mcp__{server}__sleep");
    let call = actix_rt::spawn(async move {
        ToolRegistry::call(&registry, tool, Some(json!({"ms": ms})), None).await
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(record).is_ok_and(|s| s.contains("tools/call")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call
}

#[test]
fn reconcile_adds_removes_restarts_and_leaves_unchanged_servers_untouched() {
    run(Duration::from_secs(40), || async {
        let record = temp_path("reload-record");
        let keep = fixture(
            "keep",
            &["--record", record.to_str().expect("utf-8 temp path")],
        );
        let gone = fixture("gone", &[]);
        let change = fixture("change", &[]);
        let rt = start(
            vec![keep.clone(), gone.clone(), change.clone()],
            fast_policy(),
        );
        let keep_pid = pid_of(&connected(&rt, "keep", Duration::from_secs(10)).await);
        let gone_pid = pid_of(&connected(&rt, "gone", Duration::from_secs(10)).await);
        let change_pid = pid_of(&connected(&rt, "change", Duration::from_secs(10)).await);

        // A call in flight on the unchanged server must not be disturbed; reconcile only once
        // the server has it.
        let in_flight = call_in_flight(&rt, "keep", 1500, &record).await;

        let changed = fixture("change", &["--tools", "3"]);
        let added = fixture("added", &[]);
        let report = rt
            .supervisor
            .send(Reconcile {
                specs: vec![keep, changed, added],
            })
            .await
            .expect("supervisor alive");
        assert_eq!(
            report,
            ReconcileReport {
                added: vec!["added".into()],
                removed: vec!["gone".into()],
                changed: vec!["change".into()],
                unchanged: vec!["keep".into()],
                roots_changed: vec![],
            }
        );
        assert_eq!(
            report.summary(),
            "added added; removed gone; restarted change; 1 unchanged"
        );

        let added_pid = pid_of(&connected(&rt, "added", Duration::from_secs(10)).await);
        let new_change = wait_for(&rt, "change", Duration::from_secs(10), |s| {
            matches!(s, ServerStatus::Connected { info, .. } if info.pid != Some(change_pid as u32))
        })
        .await;
        let ServerStatus::Connected { tools, .. } = &new_change else {
            unreachable!()
        };
        assert!(
            *tools > 10,
            "the changed server runs its new spec: {tools} tools"
        );
        assert!(
            !snapshot(&rt).contains_key("gone"),
            "removed server still listed"
        );

        let r = in_flight
            .await
            .expect("join")
            .expect("the unchanged server's call survived the reload");
        assert!(!r.is_error);
        let after = snapshot(&rt);
        assert_eq!(
            pid_of(&after["keep"].status),
            keep_pid,
            "unchanged server restarted"
        );
        assert_eq!(
            call_text(&rt, "mcp__keep__pid", json!({})).await,
            keep_pid.to_string()
        );
        let gone_call = ToolRegistry::call(
            &rt.registry,
            "mcp__gone__echo",
            Some(json!({"text": "x"})),
            None,
        )
        .await
        .expect_err("removed server's tools are gone");
        assert!(
            gone_call.to_string().contains("no longer in the config"),
            "{gone_call}"
        );

        // The removed server's process group is gone without a shutdown.
        let deadline = std::time::Instant::now() + Duration::from_secs(6);
        while group_alive(gone_pid) || group_alive(change_pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "removed/changed server still running"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let new_change_pid = pid_of(&new_change);
        shutdown(rt, &[keep_pid, added_pid, new_change_pid]).await;
    });
}

#[test]
fn stopping_servers_cancels_their_calls_in_flight() {
    run(Duration::from_secs(30), || async {
        let record = temp_path("shutdown-record");
        let spec = fixture(
            "busy",
            &["--record", record.to_str().expect("utf-8 temp path")],
        );
        let rt = start(vec![spec], fast_policy());
        let pid = pid_of(&connected(&rt, "busy", Duration::from_secs(10)).await);
        let call = call_in_flight(&rt, "busy", 30_000, &record).await;
        shutdown(rt, &[pid]).await;
        let err = call
            .await
            .expect("join")
            .expect_err("the call ends with the server");
        assert!(err.to_string().contains("shutting down"), "{err}");
        let seen = std::fs::read_to_string(&record).expect("record file");
        assert!(
            seen.contains("notifications/cancelled"),
            "the server was not told its call is abandoned:\n{seen}"
        );
    });
}
