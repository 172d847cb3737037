//! Over-long lines that name an id which is not our reply's: they must not fail our call.

use std::time::Duration;

use harness9_actors::RestartPolicy;
use serde_json::json;

use super::common::*;

const T: Duration = Duration::from_secs(60);

#[test]
fn an_over_long_server_request_or_notification_does_not_fail_our_call_of_that_id() {
    run(T, || async {
        // Before each reply the fixture sends an over-long request of its own with the id of
        // the call being answered, and an over-long notification with that id in its params;
        // the id sniffer once read either as our reply's id and failed the call as too large.
        let mut s = fixture("long", &["--big-messages-on-call", "20000"]);
        s.max_message_bytes = 4096;
        s.tool_timeout = Duration::from_secs(20);
        let rt = start(vec![s], RestartPolicy::default());
        let pid = pid_of(&connected(&rt, "long", Duration::from_secs(10)).await);
        for i in 0..3 {
            let text = format!("after big lines {i}");
            assert_eq!(
                call_text(&rt, "mcp__long__echo", json!({ "text": text })).await,
                text
            );
        }
        shutdown(rt, &[pid]).await;
    });
}
