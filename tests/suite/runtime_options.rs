//! No process globals: two runtimes in one process, each with its own input capabilities,
//! tell their servers different things (a `OnceLock` made the first session's choice every
//! later one's).

use std::time::Duration;

use harness9::app::Runtime;
use harness9_actors::server::server_requests::InputCaps;
use harness9_actors::trace::{tap_channel, Direction, WireRecord};
use serde_json::Value;

use super::common::*;

const LIMIT: Duration = Duration::from_secs(60);

/// The client capabilities in the first request that carries them (`initialize`'s params, or a
/// stateless request's `_meta`).
fn declared(records: &mut tokio::sync::mpsc::Receiver<WireRecord>) -> Option<Value> {
    while let Ok(r) = records.try_recv() {
        if r.dir != Direction::Send {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&r.message) else {
            continue;
        };
        let params = &v["params"];
        if let Some(c) = params.get("capabilities") {
            return Some(c.clone());
        }
        if let Some(c) = params["_meta"].get("io.modelcontextprotocol/clientCapabilities") {
            return Some(c.clone());
        }
    }
    None
}

#[test]
fn two_runtimes_in_one_process_declare_their_own_capabilities() {
    run(LIMIT, || async {
        let (form_tap, mut form_records) = tap_channel();
        let (all_tap, mut all_records) = tap_channel();
        let form = Runtime::start_cached(
            vec![fixture("form", &[])],
            Some(form_tap),
            fast_policy(),
            None,
            InputCaps::default(),
            None,
        );
        let all = Runtime::start_cached(
            vec![fixture("all", &[])],
            Some(all_tap),
            fast_policy(),
            None,
            InputCaps {
                elicitation_form: true,
                elicitation_url: true,
                sampling: true,
            },
            None,
        );
        connected(&form, "form", Duration::from_secs(30)).await;
        connected(&all, "all", Duration::from_secs(30)).await;
        let form_caps = declared(&mut form_records).expect("the form runtime's request");
        let all_caps = declared(&mut all_records).expect("the other runtime's request");
        assert_eq!(form_caps["elicitation"], serde_json::json!({"form": {}}));
        assert!(form_caps.get("sampling").is_none(), "{form_caps}");
        assert_eq!(
            all_caps["elicitation"],
            serde_json::json!({"form": {}, "url": {}})
        );
        assert_eq!(all_caps["sampling"], serde_json::json!({"tools": {}}));
        shutdown(form, &[]).await;
        shutdown(all, &[]).await;
    });
}
