//! Against the pinned reference servers: npm server-everything and a PyPI `mcp` server, stdio.

use std::time::Duration;

use harness9_actors::messages::{ListTools, ProgressSink, ServerStatus, ToolProgress};
use harness9_actors::protocol::types::ContentBlock;
use harness9_actors::{CallError, RestartPolicy, ToolRegistry};
use serde_json::json;

use super::common::*;

const T: Duration = Duration::from_secs(60);
const CONNECT: Duration = Duration::from_secs(30);

#[test]
fn everything_handshake_lists_its_tools() {
    run(T, || async {
        let rt = start(vec![everything("everything")], RestartPolicy::default());
        let st = connected(&rt, "everything", CONNECT).await;
        let ServerStatus::Connected { tools, info } = &st else {
            unreachable!()
        };
        assert_eq!(info.protocol_version, "2025-11-25");
        assert!(
            info.server_info.name.contains("everything"),
            "{:?}",
            info.server_info
        );
        assert!(*tools >= 10, "{tools}");
        let list = rt.registry.send(ListTools).await.unwrap();
        let names: Vec<&str> = list.iter().map(|t| &*t.name).collect();
        for n in [
            "mcp__everything__echo",
            "mcp__everything__get_sum",
            "mcp__everything__get_tiny_image",
            "mcp__everything__get_structured_content",
            "mcp__everything__trigger_long_running_operation",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        let echo = list
            .iter()
            .find(|t| &*t.name == "mcp__everything__echo")
            .unwrap();
        assert_eq!(echo.tool.name, "echo");
        assert!(echo.tool.input_schema.get().contains("message"));
        let pid = pid_of(&st);
        shutdown(rt, &[pid]).await;
    });
}

#[test]
fn everything_tools_return_every_kind_of_content() {
    run(T, || async {
        let rt = start(vec![everything("e")], RestartPolicy::default());
        let pid = pid_of(&connected(&rt, "e", CONNECT).await);

        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__e__echo",
            Some(json!({"message": "hi"})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.text(), "Echo: hi");
        assert!(!r.is_error);

        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__e__get_sum",
            Some(json!({"a": 2, "b": 40})),
            None,
        )
        .await
        .unwrap();
        assert!(r.text().contains("42"), "{}", r.text());

        let r = ToolRegistry::call(&rt.registry, "mcp__e__get_tiny_image", None, None)
            .await
            .unwrap();
        let image = r.content.iter().find_map(|b| match b {
            ContentBlock::Image { data, mime_type } => Some((data, mime_type)),
            _ => None,
        });
        let (data, mime) = image.expect("an image block");
        assert_eq!(mime, "image/png");
        assert!(data.len() > 100);
        assert!(r.text().contains("[image image/png"), "{}", r.text());

        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__e__get_structured_content",
            Some(json!({"location": "Chicago"})),
            None,
        )
        .await
        .unwrap();
        let s = r.structured_content.as_ref().expect("structuredContent");
        assert!(s.get("temperature").is_some(), "{s}");
        shutdown(rt, &[pid]).await;
    });
}

#[test]
fn everything_long_running_operation_reports_progress() {
    run(T, || async {
        let rt = start(vec![everything("e")], RestartPolicy::default());
        let pid = pid_of(&connected(&rt, "e", CONNECT).await);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut msg = harness9_actors::messages::CallTool::new(
            "mcp__e__trigger_long_running_operation",
            Some(json!({"duration": 1, "steps": 4})),
        );
        msg.progress = Some(ProgressSink::new(move |p: ToolProgress| {
            let _ = tx.send(p);
        }));
        let r = ToolRegistry::send(&rt.registry, msg).await.unwrap();
        assert!(r.text().contains("completed"), "{}", r.text());
        let mut seen = Vec::new();
        while let Ok(p) = rx.try_recv() {
            seen.push(p.progress);
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert_eq!(seen.last().copied(), Some(4.0));
        shutdown(rt, &[pid]).await;
    });
}

#[test]
fn python_sdk_server_calls() {
    run(T, || async {
        let rt = start(vec![python("py")], RestartPolicy::default());
        let st = connected(&rt, "py", CONNECT).await;
        let ServerStatus::Connected { tools, info } = &st else {
            unreachable!()
        };
        assert_eq!(*tools, 10);
        assert_eq!(info.era.label(), "stateless", "{info:?}");
        assert_eq!(info.server_info.name, "py-fixture");
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__py__multiply",
            Some(json!({"a": 6, "b": 7})),
            None,
        )
        .await
        .unwrap();
        assert_eq!(r.text(), "42");
        assert_eq!(r.structured_content, Some(json!({"result": 42})));
        python_calls(&rt, "py").await;
        // A bad argument is the tool's error, reported as isError, not a transport failure.
        let r = ToolRegistry::call(
            &rt.registry,
            "mcp__py__multiply",
            Some(json!({"a": "x"})),
            None,
        )
        .await
        .unwrap();
        assert!(r.is_error, "{r:?}");
        let pid = pid_of(&st);
        shutdown(rt, &[pid]).await;
    });
}

#[test]
fn unknown_tool_and_unavailable_server_are_distinct_errors() {
    run(T, || async {
        let mut broken = everything("broken");
        broken.transport = harness9_actors::TransportSpec::Stdio {
            command: "/nonexistent/harness9-no-such-server".into(),
            args: vec![],
            env: vec![],
            cwd: None,
        };
        let rt = start(vec![everything("e"), broken], RestartPolicy::default());
        let pid = pid_of(&connected(&rt, "e", CONNECT).await);
        let failed = wait_for(&rt, "broken", CONNECT, |s| {
            matches!(s, ServerStatus::Failed { .. })
        })
        .await;
        let ServerStatus::Failed { error, .. } = failed else {
            unreachable!()
        };
        assert_eq!(
            error,
            "spawn /nonexistent/harness9-no-such-server: No such file or directory"
        );

        let e = ToolRegistry::call(&rt.registry, "mcp__e__nope", None, None)
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::UnknownTool { .. }), "{e}");
        // The failed server's tools never registered; calls name the server and its state.
        let e = ToolRegistry::call(&rt.registry, "mcp__broken__echo", None, None)
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::ServerUnavailable { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("server \"broken\" is failed: spawn"),
            "{e}"
        );
        let e = ToolRegistry::call(
            &rt.registry,
            "mcp__e__echo",
            Some(json!({"message": "x"})),
            Some(Duration::from_nanos(1)),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, CallError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("toolTimeoutSec"), "{e}");
        shutdown(rt, &[pid]).await;
    });
}
