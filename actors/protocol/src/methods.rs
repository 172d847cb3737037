//! Every MCP method we send, answer or read, bound to its name, params and result type.
//!
//! One unit type per method implements [`Request`] or [`Notification`]; its `METHOD` is the
//! only place the wire name is written. Lines are built from the type
//! ([`jsonrpc::request`](super::jsonrpc::request), [`jsonrpc::notification`](super::jsonrpc::notification)),
//! replies parsed into its `Result`, and incoming messages dispatched on the `METHOD` constants.
//! `Params<'a>` may borrow (a call's arguments are serialized in place, never copied); a
//! method whose payload is passed on untouched (a question for the front end, the listen
//! filter) has `Value`.

use serde_json::Value;

use super::types::{
    CallParams, CallToolResult, CancelledParams, CompleteParams, CompleteResult, DiscoverResult,
    GetPromptParams, GetPromptResult, InitializeParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListRootsResult, ListToolsResult,
    LoggingMessageParams, PaginatedParams, ProgressParams, ReadResourceResult, ResourceParams,
    SetLevelParams, TaskParams, UpdateTaskParams,
};

/// A JSON-RPC request of MCP, from either side.
pub trait Request {
    /// The method's wire name.
    const METHOD: &'static str;
    /// Its params (serialized when we send it, read when we answer it).
    type Params<'a>;
    /// Its result.
    type Result;
}

/// A JSON-RPC notification of MCP, from either side.
pub trait Notification {
    /// The method's wire name.
    const METHOD: &'static str;
    /// Its params (`()` for none).
    type Params<'a>;
}

/// No params, or an empty result.
pub type Empty = ();

macro_rules! requests {
    ($($(#[$doc:meta])* $name:ident = $method:literal, $params:ty => $result:ty;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl Request for $name {
                const METHOD: &'static str = $method;
                type Params<'a> = $params;
                type Result = $result;
            }
        )*
        /// Every request's name, in the order declared.
        pub const REQUESTS: &[&str] = &[$($method),*];
    };
}

macro_rules! notifications {
    ($($(#[$doc:meta])* $name:ident = $method:literal, $params:ty;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $name;
            impl Notification for $name {
                const METHOD: &'static str = $method;
                type Params<'a> = $params;
            }
        )*
        /// Every notification's name, in the order declared.
        pub const NOTIFICATIONS: &[&str] = &[$($method),*];
    };
}

requests! {
    /// Handshake era: the first request, offering a revision.
    Initialize = "initialize", InitializeParams<'a> => InitializeResult;
    /// Stateless era: what the server speaks and offers.
    Discover = "server/discover", Empty => DiscoverResult;
    /// Either side: are you there (we answer it in the handshake era).
    Ping = "ping", Empty => Value;
    /// The server's tools, a page at a time.
    ListTools = "tools/list", PaginatedParams<'a> => ListToolsResult;
    /// Calls one tool: the hot path.
    CallTool = "tools/call", CallParams<'a> => CallToolResult;
    /// The server's resources, a page at a time.
    ListResources = "resources/list", PaginatedParams<'a> => ListResourcesResult;
    /// The server's resource templates, a page at a time.
    ListResourceTemplates = "resources/templates/list", PaginatedParams<'a> => ListResourceTemplatesResult;
    /// One resource's contents.
    ReadResource = "resources/read", ResourceParams<'a> => ReadResourceResult;
    /// Skills extension: the server's skills, a page at a time.
    ListSkills = "skills/list", PaginatedParams<'a> => super::skills::ListSkillsResult;
    /// Skills extension: one skill's entry, by the URI of its `SKILL.md`.
    GetSkill = "skills/get", ResourceParams<'a> => super::skills::GetSkillResult;
    /// Handshake era: updates of one resource, please.
    Subscribe = "resources/subscribe", ResourceParams<'a> => Value;
    /// Handshake era: no more updates of one resource.
    Unsubscribe = "resources/unsubscribe", ResourceParams<'a> => Value;
    /// The server's prompts, a page at a time.
    ListPrompts = "prompts/list", PaginatedParams<'a> => ListPromptsResult;
    /// One prompt, its arguments filled in.
    GetPrompt = "prompts/get", GetPromptParams<'a> => GetPromptResult;
    /// Values for an argument of a prompt or a resource template.
    Complete = "completion/complete", CompleteParams<'a> => CompleteResult;
    /// Handshake era: the log level the server should send at.
    SetLevel = "logging/setLevel", SetLevelParams<'a> => Value;
    /// Stateless era: the stream of list changes and resource updates (the filter as params).
    Listen = "subscriptions/listen", Value => Value;
    /// Server to client: a model completion (passed to the front end as it came).
    CreateMessage = "sampling/createMessage", Value => Value;
    /// Server to client: a question for the user (passed to the front end as it came).
    Elicit = "elicitation/create", Value => Value;
    /// Server to client: the roots we offer.
    ListRoots = "roots/list", Empty => ListRootsResult;
    /// Tasks extension: a task's status (and its result, once it has one).
    GetTask = "tasks/get", TaskParams<'a> => Value;
    /// Tasks extension: answers to a task's input requests.
    UpdateTask = "tasks/update", UpdateTaskParams<'a> => Value;
    /// Tasks extension: please stop this task (never `notifications/cancelled`).
    CancelTask = "tasks/cancel", TaskParams<'a> => Value;
    /// 2025-11-25 tasks: a task's result, once it ended (the server answers at its end).
    TaskResult = "tasks/result", TaskParams<'a> => Value;
}

notifications! {
    /// Handshake era: the handshake is done.
    Initialized = "notifications/initialized", Empty;
    /// Either side: a request is abandoned.
    Cancelled = "notifications/cancelled", CancelledParams<'a>;
    /// Server to client: progress of one of our requests.
    Progress = "notifications/progress", ProgressParams;
    /// Server to client: a log message.
    LoggingMessage = "notifications/message", LoggingMessageParams;
    /// Server to client: the tool list changed.
    ToolListChanged = "notifications/tools/list_changed", Empty;
    /// Server to client: the resource list changed.
    ResourceListChanged = "notifications/resources/list_changed", Empty;
    /// Server to client: a subscribed resource changed (its `uri`).
    ResourceUpdated = "notifications/resources/updated", Value;
    /// Server to client: the prompt list changed.
    PromptListChanged = "notifications/prompts/list_changed", Empty;
    /// Stateless era, server to client: the listen filter the server honours.
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged", Value;
    /// Client to server: the roots we offer changed.
    RootsListChanged = "notifications/roots/list_changed", Empty;
}

/// The static name of a method of either table (`None` for one we do not know): spans and
/// metrics take a low-cardinality name, never a string a server chose.
pub fn static_name(method: &str) -> Option<&'static str> {
    REQUESTS
        .iter()
        .chain(NOTIFICATIONS.iter())
        .find(|m| **m == method)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The method names of the MCP schema (revisions 2025-06-18 .. the stateless era) that
    /// harness9 sends, answers or reads, written out once more by hand from the spec.
    const SPEC: &[&str] = &[
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        // Extensions: Skills (SEP-2640).
        "skills/list",
        "skills/get",
        // Extensions: Tasks (SEP-2663), and 2025-11-25's `tasks/result`.
        "tasks/get",
        "tasks/update",
        "tasks/cancel",
        "tasks/result",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
        "notifications/subscriptions/acknowledged",
        "notifications/roots/list_changed",
    ];

    #[test]
    fn the_table_has_each_spec_method_exactly_once() {
        let mut all: Vec<&str> = REQUESTS.iter().chain(NOTIFICATIONS).copied().collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a method is declared twice");
        let mut spec = SPEC.to_vec();
        spec.sort_unstable();
        assert_eq!(all, spec);
        // Notifications, and only they, live under `notifications/`.
        assert!(NOTIFICATIONS
            .iter()
            .all(|m| m.starts_with("notifications/")));
        assert!(!REQUESTS.iter().any(|m| m.starts_with("notifications/")));
    }

    #[test]
    fn the_constants_are_the_wire_names() {
        assert_eq!(CallTool::METHOD, "tools/call");
        assert_eq!(Elicit::METHOD, "elicitation/create");
        assert_eq!(CreateMessage::METHOD, "sampling/createMessage");
        assert_eq!(Cancelled::METHOD, "notifications/cancelled");
    }

    /// The typed params give the bytes the `json!` literals they replaced gave (every request
    /// but `tools/call` goes through a JSON value, whose keys are sorted).
    #[test]
    fn typed_params_serialize_as_the_literals_did() {
        use crate::types::{CompleteArgument, CompleteContext, CompleteRef};
        use serde_json::json;
        use std::collections::BTreeMap;
        fn bytes<T: serde::Serialize>(v: &T) -> String {
            serde_json::to_value(v).unwrap().to_string()
        }
        let none = BTreeMap::new();
        let args = BTreeMap::from([
            ("b".to_owned(), "2".to_owned()),
            ("a".to_owned(), "1".to_owned()),
        ]);
        let get = |arguments| GetPromptParams {
            name: "p",
            arguments,
        };
        assert_eq!(bytes(&get(&none)), json!({ "name": "p" }).to_string());
        let mut with = json!({ "name": "p" });
        with["arguments"] = json!(args);
        assert_eq!(bytes(&get(&args)), with.to_string());
        let complete = CompleteParams {
            reference: CompleteRef::Resource { uri: "file:///{x}" },
            argument: CompleteArgument {
                name: "x",
                value: "ab",
            },
            context: Some(CompleteContext { arguments: &args }),
        };
        let mut old = json!({
            "ref": json!({ "type": "ref/resource", "uri": "file:///{x}" }),
            "argument": { "name": "x", "value": "ab" },
        });
        old["context"] = json!({ "arguments": args });
        assert_eq!(bytes(&complete), old.to_string());
        let prompt = CompleteParams {
            reference: CompleteRef::Prompt { name: "p" },
            argument: CompleteArgument {
                name: "x",
                value: "",
            },
            context: None,
        };
        let old = json!({
            "ref": json!({ "type": "ref/prompt", "name": "p" }),
            "argument": { "name": "x", "value": "" },
        });
        assert_eq!(bytes(&prompt), old.to_string());
        assert_eq!(
            bytes(&ResourceParams { uri: "u" }),
            json!({ "uri": "u" }).to_string()
        );
        assert_eq!(
            bytes(&SetLevelParams { level: "debug" }),
            json!({ "level": "debug" }).to_string()
        );
        assert_eq!(
            bytes(&PaginatedParams { cursor: "c" }),
            json!({ "cursor": "c" }).to_string()
        );
    }

    /// `tools/call` is serialized in place, from either era's struct, as before.
    #[test]
    fn call_params_serialize_as_the_struct_they_hold() {
        use crate::jsonrpc;
        use crate::types::{CallToolParams, RequestMeta};
        let args = serde_json::json!({"z": 1, "a": [true]});
        let p = CallToolParams {
            name: "echo",
            arguments: Some(&args),
            meta: Some(RequestMeta { progress_token: 4 }),
            task: None,
        };
        let direct = jsonrpc::request_line(9, "tools/call", Some(&p));
        let typed = jsonrpc::request::<CallTool>(9, Some(&CallParams::Handshake(p)));
        assert_eq!(typed, direct);
        assert_eq!(
            String::from_utf8(typed).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":[true],\"z\":1},\"_meta\":{\"progressToken\":4}}}\n"
        );
    }

    /// The list results: `tools/list` needs its items and carries `ttlMs`; the others default
    /// their items.
    #[test]
    fn pages_split_into_items_and_cursor() {
        use crate::types::Page;
        let t: ListToolsResult =
            serde_json::from_str(r#"{"tools":[{"name":"a"}],"nextCursor":"n","ttlMs":5}"#).unwrap();
        assert_eq!((t.ttl_ms(), t.result_type()), (Some(5), None));
        let (items, next) = t.into_parts();
        assert_eq!((items[0].name.as_str(), next.as_deref()), ("a", Some("n")));
        assert!(serde_json::from_str::<ListToolsResult>(r#"{"nextCursor":"n"}"#).is_err());
        let r: ListResourceTemplatesResult =
            serde_json::from_str(r#"{"resultType":"complete","ttlMs":5}"#).unwrap();
        assert_eq!((r.ttl_ms(), r.result_type()), (None, Some("complete")));
        assert!(r.into_parts().0.is_empty());
        let p: ListPromptsResult = serde_json::from_str(r#"{"prompts":[{"name":"p"}]}"#).unwrap();
        assert_eq!(p.into_parts().0[0].name, "p");
        let r: ListResourcesResult = serde_json::from_str(r#"{"resources":[]}"#).unwrap();
        assert!(r.into_parts().1.is_none());
    }
}
