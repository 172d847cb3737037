//! What a call's failures mean for the user: a stateless server that cannot send its own
//! requests (the `protocolVersion` pin named), a missing client capability (`-32021`), a task
//! where none was declared or asked for (the 2025-11-25 form recognised).

use serde_json::Value;

use crate::protocol::types::{CallToolResult, ContentBlock};
use crate::server::mcp_server::Payload;
use crate::server::server_requests;

/// Whether a server's error text says it cannot send a server-initiated request (an
/// elicitation, a sampling request) on this connection: SDKs that implement the stateless era
/// without the input-request flow refuse `ctx.elicit()` so ("elicitation via server-initiated
/// requests is unavailable", "no back-channel for server-initiated requests").
pub(super) fn refuses_server_requests(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("server-initiated request")
        && (t.contains("unavailable")
            || t.contains("back-channel")
            || t.contains("not supported")
            || t.contains("cannot send"))
}

/// [`refuses_server_requests`] for the text of a tool result marked `isError`.
pub(super) fn result_refuses_server_requests(result: &CallToolResult) -> bool {
    result.content.iter().any(|c| match c {
        ContentBlock::Text { text } => refuses_server_requests(text),
        _ => false,
    })
}

/// The JSON-RPC error of a request that lacks a client capability the server requires.
pub(super) const MISSING_CAPABILITY: i64 = -32021;
/// The same error's code in earlier drafts of the extensions.
pub(super) const MISSING_CAPABILITY_OLD: i64 = -32003;

/// Why a task on this request is invalid: we did not declare the extension.
pub(super) fn undeclared_task() -> String {
    format!(
        "it answered with a task (resultType \"task\") though harness9 did not declare {} on this request (only a 2026-07-28 connection carries it); the server must not send a task here",
        server_requests::TASKS_EXTENSION
    )
}

/// Whether a result is a 2025-11-25 `CreateTaskResult` (a `task` object with a `taskId`).
pub(super) fn is_old_task(raw: &Payload) -> bool {
    #[derive(serde::Deserialize)]
    struct Old {
        #[serde(default)]
        task: Option<Value>,
    }
    raw.parse::<Old>()
        .ok()
        .and_then(|o| o.task)
        .is_some_and(|t| t.get("taskId").is_some())
}

/// The `taskId` of a 2025-11-25 `CreateTaskResult`.
pub(super) fn old_task_id(raw: &Payload) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Id {
        task_id: String,
    }
    #[derive(serde::Deserialize)]
    struct Old {
        task: Id,
    }
    raw.parse::<Old>().ok().map(|o| o.task.task_id)
}

/// What a `-32021` error means for the user: the capabilities the server named, and what to do.
pub(super) fn missing_capability_hint(
    server: &str,
    data: Option<&Value>,
    stateless: bool,
) -> String {
    let required = data.and_then(|d| d.get("requiredCapabilities"));
    let mut names: Vec<String> = Vec::new();
    if let Some(Value::Object(caps)) = required {
        for (k, v) in caps.iter().take(8) {
            match (k.as_str(), v) {
                ("extensions", Value::Object(ext)) => {
                    names.extend(ext.keys().take(8).map(|e| format!("extension {e}")))
                }
                _ => names.push(format!("capability {k}")),
            }
        }
    }
    let what = if names.is_empty() {
        "a client capability harness9 did not declare".to_owned()
    } else {
        names.join(", ")
    };
    let tasks = names
        .iter()
        .any(|n| n.ends_with(server_requests::TASKS_EXTENSION));
    if tasks && !stateless {
        format!(
            "server \"{server}\" requires {what}, which harness9 declares only on a 2026-07-28 connection; this connection speaks an older revision (remove a \"protocolVersion\" pin from its entry, or update the server)"
        )
    } else {
        format!("server \"{server}\" requires {what}, which harness9 does not support on this connection")
    }
}

/// What to do when a stateless server cannot ask its own questions.
pub(super) fn pin_hint(server: &str) -> String {
    format!(
        "server \"{server}\" cannot send its own requests (elicitation, sampling) on a 2026-07-28 connection; pin \"protocolVersion\": \"2025-11-25\" in its config entry to use this tool"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_capability_names_it_and_what_to_do() {
        let data =
            json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
        let old = missing_capability_hint("jobs", Some(&data), false);
        assert!(
            old.contains("extension io.modelcontextprotocol/tasks")
                && old.contains("only on a 2026-07-28 connection")
                && old.contains("protocolVersion"),
            "{old}"
        );
        let new = missing_capability_hint("jobs", Some(&data), true);
        assert!(new.contains("does not support"), "{new}");
        let none = missing_capability_hint("jobs", None, true);
        assert!(
            none.contains("a client capability harness9 did not declare"),
            "{none}"
        );
        let other = json!({"requiredCapabilities": {"sampling": {}}});
        assert!(missing_capability_hint("jobs", Some(&other), true).contains("capability sampling"));
    }
}
