//! MCP payload types, named as in the spec (`CallToolResult`, `ListToolsResult`, ...).

use crate::rawjson::RawJson;
use bytestring::ByteString;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// A client or server name and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    #[serde(default)]
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Implementation {
    /// The name and version as shown (`name 1.2.0`): an empty or blank version is left out,
    /// never printed as a dangling space. Server text: the caller sanitizes it.
    pub fn label(&self) -> String {
        match self.version.trim() {
            "" => self.name.clone(),
            v => format!("{} {v}", self.name),
        }
    }
}

/// `initialize` request parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    /// The revision we offer.
    pub protocol_version: &'a str,
    /// What this client supports.
    pub capabilities: &'a serde_json::value::RawValue,
    /// Who we are.
    pub client_info: &'a Implementation,
}

/// The server's part of the `tools` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether `notifications/tools/list_changed` is sent.
    #[serde(default)]
    pub list_changed: Option<bool>,
}

/// The server capabilities we look at; the rest is kept raw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Tools support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Logging support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Resources support (`subscribe`, `listChanged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Prompts support (`listChanged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Value>,
    /// Argument completion support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Extensions, by identifier (`io.modelcontextprotocol/skills`), each with its settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
    /// Tasks (2025-11-25): which requests the server takes as tasks (`requests.tools.call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
}

impl ServerCapabilities {
    /// Whether `capability.flag` is `true` (`resources.subscribe`, `prompts.listChanged`).
    pub fn flag(&self, capability: &str, flag: &str) -> bool {
        let c = match capability {
            "resources" => self.resources.as_ref(),
            "prompts" => self.prompts.as_ref(),
            "logging" => self.logging.as_ref(),
            _ => None,
        };
        c.and_then(|c| c.get(flag)).and_then(Value::as_bool) == Some(true)
    }

    /// Whether the server takes a `tools/call` as a task (2025-11-25 `tasks.requests.tools.call`).
    pub fn tool_call_tasks(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|t| t.pointer("/requests/tools/call"))
            .is_some()
    }

    /// The settings of the extension `id`, when the server declares it (an object).
    pub fn extension(&self, id: &str) -> Option<&serde_json::Map<String, Value>> {
        self.extensions.as_ref()?.get(id)?.as_object()
    }
}

/// `initialize` result.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server chose.
    pub protocol_version: String,
    /// What the server supports.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    #[serde(default)]
    pub server_info: Implementation,
    /// Usage hints for the model.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// One tool definition as the server lists it; schemas and annotations stay the JSON text the
/// server sent ([`RawJson`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name on its server.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model. From a `tools/list` page, a slice sharing the page's
    /// buffer like the schemas (see `tools_page`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<ByteString>,
    /// JSON Schema of the arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: RawJson,
    /// JSON Schema of `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<RawJson>,
    /// Hints (read-only, destructive, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<RawJson>,
    /// How it may be called (2025-11-25: `taskSupport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
}

/// A tool's `execution` (2025-11-25).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// `"required"`: only as a task; `"optional"`; `"forbidden"` (or absent): never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
}

impl Tool {
    /// Whether the tool runs only as a task (2025-11-25 `taskSupport: "required"`).
    pub fn task_required(&self) -> bool {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support.as_deref())
            == Some("required")
    }
}

/// `{"type":"object"}`: the schema of a tool that lists none.
pub(crate) fn empty_object_schema() -> RawJson {
    RawJson::accepted(
        &bytestring::ByteString::from_static(r#"{"type":"object"}"#),
        0,
        17,
    )
}

/// The params of a paginated list request (`tools/list`, `resources/list`, ...): the page to
/// fetch (the first page is asked for without params).
#[derive(Debug, Serialize)]
pub struct PaginatedParams<'a> {
    /// The page to fetch.
    pub cursor: &'a str,
}

/// One page of a paginated list result: its items, the next cursor, and (stateless era) its
/// `resultType`. The four list results come from [`page!`], so they differ only in the name of
/// their items' member (and `tools/list`'s `ttlMs`).
pub trait Page {
    /// What the list holds.
    type Item;
    /// Splits the page into its items and the next cursor.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
    /// Stateless era: `complete` (or absent); anything else is an error.
    fn result_type(&self) -> Option<&str>;
    /// Stateless era: how long the list may be cached, where the result has it.
    fn ttl_ms(&self) -> Option<u64> {
        None
    }
    /// Whether [`skim`](Self::skim) ever reads a page (else a reply line is not offered to it).
    const SKIMS: bool = false;
    /// The page at `text[at..]` and the index past it, read by a fast path of its own where it
    /// has one and is sure of the text; `None` leaves it to serde_json.
    fn skim(_text: &bytestring::ByteString, _at: usize) -> Option<(Self, usize)>
    where
        Self: Sized,
    {
        None
    }
}

/// One paginated list result type: `page!(Name, "itemsMember" items: Item, ...)`; `required`
/// makes a page without its items member invalid (`tools/list`), `ttl` adds `ttlMs`.
macro_rules! page {
    ($(#[$doc:meta])* $name:ident { $member:literal $items:ident: $item:ty $(, $opt:ident)* }) => {
        page!(@struct $(#[$doc])* $name, $member, $items, $item, [$($opt)*]);
        page!(@impl $name, $items, $item, [$($opt)*]);
    };
    (@struct $(#[$doc:meta])* $name:ident, $member:literal, $items:ident, $item:ty, [required ttl]) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// This page.
            #[serde(rename = $member)]
            pub $items: Vec<$item>,
            /// The next page, if any.
            #[serde(default)]
            pub next_cursor: Option<String>,
            /// Stateless era: how long the list may be cached (0: immediately stale).
            #[serde(default)]
            pub ttl_ms: Option<u64>,
            /// Stateless era: `complete` (or absent); anything else is an error here.
            #[serde(default)]
            pub result_type: Option<String>,
        }
    };
    (@struct $(#[$doc:meta])* $name:ident, $member:literal, $items:ident, $item:ty, []) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// This page.
            #[serde(default, rename = $member)]
            pub $items: Vec<$item>,
            /// The next page, if any.
            #[serde(default)]
            pub next_cursor: Option<String>,
            /// Stateless era: `complete` (or absent).
            #[serde(default)]
            pub result_type: Option<String>,
        }
    };
    (@impl $name:ident, $items:ident, $item:ty, [$($opt:ident)*]) => {
        impl Page for $name {
            type Item = $item;
            fn into_parts(self) -> (Vec<$item>, Option<String>) {
                (self.$items, self.next_cursor)
            }
            fn result_type(&self) -> Option<&str> {
                self.result_type.as_deref()
            }
            page!(@ttl [$($opt)*]);
        }
    };
    (@ttl [required ttl]) => {
        fn ttl_ms(&self) -> Option<u64> {
            self.ttl_ms
        }
        const SKIMS: bool = true;
        fn skim(text: &bytestring::ByteString, at: usize) -> Option<(Self, usize)> {
            crate::tools_page::tools_page_at(text, at)
        }
    };
    (@ttl []) => {};
}

page! {
    /// `tools/list` result.
    ListToolsResult { "tools" tools: std::sync::Arc<Tool>, required, ttl }
}

/// `_meta` of a request that asks for progress.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestMeta {
    /// Our token for this request's progress notifications.
    pub progress_token: i64,
}

/// `tools/call` params in either era, serialized as the variant it holds.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum CallParams<'a> {
    /// The handshake era's.
    Handshake(CallToolParams<'a>),
    /// The stateless era's.
    Stateless(StatelessCallParams<'a>),
}

/// The stateless era's request `_meta`: the revision, the client's capabilities, who we are,
/// the log level asked for (and a call's progress token).
#[derive(Debug, Serialize)]
pub struct StatelessMeta<'a> {
    /// Our token for this request's progress notifications.
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<i64>,
    /// The revision.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub version: &'static str,
    /// What this client supports.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub capabilities: &'a serde_json::value::RawValue,
    /// Who we are.
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    pub info: &'static Implementation,
    /// The log level asked for.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<&'a str>,
}

/// `tools/call` params in the stateless era: the `_meta`, and an `input_required` round's
/// answers (`inputResponses`, `requestState`) beside the name and arguments.
#[derive(Debug, Serialize)]
pub struct StatelessCallParams<'a> {
    /// The tool's name on its server.
    pub name: &'a str,
    /// The arguments, a JSON object; left out when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<&'a Value>,
    /// The stateless request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: StatelessMeta<'a>,
    /// An `input_required` round's answers, as members of the params.
    #[serde(flatten)]
    pub answers: Option<&'a serde_json::Map<String, Value>>,
}

/// `resources/read`, `resources/subscribe` and `resources/unsubscribe` parameters.
#[derive(Debug, Serialize)]
pub struct ResourceParams<'a> {
    /// The resource.
    pub uri: &'a str,
}

/// `prompts/get` parameters.
#[derive(Debug, Serialize)]
pub struct GetPromptParams<'a> {
    /// The prompt's name.
    pub name: &'a str,
    /// Its arguments; left out when there are none.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub arguments: &'a std::collections::BTreeMap<String, String>,
}

/// What `completion/complete` completes an argument of.
#[derive(Debug, Serialize)]
#[serde(tag = "type")]
pub enum CompleteRef<'a> {
    /// A prompt's argument.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: &'a str,
    },
    /// A resource template's variable.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template's URI.
        uri: &'a str,
    },
}

/// The argument `completion/complete` completes.
#[derive(Debug, Serialize)]
pub struct CompleteArgument<'a> {
    /// Its name.
    pub name: &'a str,
    /// What is typed so far.
    pub value: &'a str,
}

/// `completion/complete` context: the arguments already chosen.
#[derive(Debug, Serialize)]
pub struct CompleteContext<'a> {
    /// The arguments already chosen.
    pub arguments: &'a std::collections::BTreeMap<String, String>,
}

/// `completion/complete` parameters.
#[derive(Debug, Serialize)]
pub struct CompleteParams<'a> {
    /// What the argument belongs to.
    #[serde(rename = "ref")]
    pub reference: CompleteRef<'a>,
    /// The argument.
    pub argument: CompleteArgument<'a>,
    /// The arguments already chosen, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext<'a>>,
}

/// `logging/setLevel` parameters.
#[derive(Debug, Serialize)]
pub struct SetLevelParams<'a> {
    /// The level asked for (`debug` .. `emergency`).
    pub level: &'a str,
}

/// The result of `server/discover`, the parts we use.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The revisions the server speaks (required).
    #[serde(default)]
    pub supported_versions: Vec<String>,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// The server's instructions.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Who the server is.
    #[serde(default)]
    pub server_info: Option<Implementation>,
    /// `_meta` (where some servers put `serverInfo`).
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
    /// `complete` (or absent).
    #[serde(default)]
    pub result_type: Option<String>,
}

/// `tools/call` request parameters (the handshake era).
#[derive(Debug, Serialize)]
pub struct CallToolParams<'a> {
    /// The tool's name on its server.
    pub name: &'a str,
    /// The arguments, a JSON object; left out when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<&'a Value>,
    /// `_meta` with our progress token, when the caller wants progress.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// The 2025-11-25 task augmentation (`{"ttl": ms}`): the call runs as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskAugment>,
}

/// The `task` of a task-augmented 2025-11-25 request.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TaskAugment {
    /// How long the server keeps the task and its result, in milliseconds.
    pub ttl: u64,
}

/// An embedded resource's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// One content block of a tool result; every kind the spec names is kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text as the server sent it (not sanitized).
        text: String,
    },
    /// A base64 image.
    Image {
        /// Base64 data.
        data: String,
        /// Its MIME type; empty when the server gave none.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Base64 audio.
    Audio {
        /// Base64 data.
        data: String,
        /// Its MIME type; empty when the server gave none.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An embedded resource.
    Resource {
        /// Its contents.
        resource: ResourceContents,
    },
    /// A link to a resource.
    ResourceLink {
        /// The linked resource's URI (not fetched).
        uri: String,
        /// Its name; empty when the server gave none.
        name: String,
        /// Its MIME type, if the server gave one.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// What the resource is, if the server said.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A block type this client does not know, kept by its type name.
    #[serde(untagged)]
    Unknown {
        /// The `type` field as sent.
        #[serde(rename = "type")]
        kind: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    resource: Option<ResourceContents>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let b = RawBlock::deserialize(d)?;
        let missing = |f: &str| D::Error::custom(format!("{} block without {f}", b.kind));
        Ok(match b.kind.as_str() {
            "text" => ContentBlock::Text {
                text: b.text.ok_or_else(|| missing("text"))?,
            },
            "image" | "audio" => {
                let data = b.data.ok_or_else(|| missing("data"))?;
                let mime_type = b.mime_type.unwrap_or_default();
                if b.kind == "image" {
                    ContentBlock::Image { data, mime_type }
                } else {
                    ContentBlock::Audio { data, mime_type }
                }
            }
            "resource" => ContentBlock::Resource {
                resource: b.resource.ok_or_else(|| missing("resource"))?,
            },
            "resource_link" => ContentBlock::ResourceLink {
                uri: b.uri.ok_or_else(|| missing("uri"))?,
                name: b.name.unwrap_or_default(),
                mime_type: b.mime_type,
                description: b.description,
            },
            _ => ContentBlock::Unknown { kind: b.kind },
        })
    }
}

/// `tools/call` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Every content block, in order.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// `structuredContent`: JSON output that follows the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool reports an error.
    #[serde(default)]
    pub is_error: bool,
    /// Stateless era: `complete` (or absent) for a result, `input_required` for a request for
    /// input; read, never written (it is the protocol's, not the tool's).
    #[serde(default, skip_serializing)]
    pub result_type: Option<String>,
    /// Set by the registry, never by a server: why `structuredContent` does not match the
    /// tool's `outputSchema` (or is missing though the tool declares one). Shown beside the
    /// result and told to the model; the result itself is kept whole.
    #[serde(
        rename = "structuredContentMismatch",
        default,
        skip_deserializing,
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_error: Option<String>,
    /// Set by the server actor, never by a server: the task this call became, when the caller
    /// asked not to wait for it (the result's text says so). A server's `task` member is not
    /// read here.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
}

/// A task a tool call became (`io.modelcontextprotocol/tasks`), as the caller keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRef {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The server's id of the task.
    pub task_id: String,
    /// Its status when last seen.
    pub status: String,
    /// Its status message when last seen (cut to a line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
}

/// `tasks/get` and `tasks/cancel` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams<'a> {
    /// The task.
    pub task_id: &'a str,
}

/// `tasks/update` parameters: answers to the task's input requests, by their keys.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams<'a> {
    /// The task.
    pub task_id: &'a str,
    /// One answer per input request key.
    pub input_responses: &'a serde_json::Map<String, Value>,
}

/// A task as `tasks/get` (and a `CreateTaskResult`) describe it: its status and, by status,
/// its input requests, final result or error. Every field a hostile server could make huge is
/// bounded by the message size; the caller cuts what it shows.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// The server's id of the task.
    pub task_id: String,
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// What the task is doing, for people.
    #[serde(default)]
    pub status_message: Option<String>,
    /// How long the server keeps it, from its creation (`null`: no limit).
    #[serde(default)]
    pub ttl_ms: Option<f64>,
    /// How often the server would like to be asked, in milliseconds.
    #[serde(default)]
    pub poll_interval_ms: Option<f64>,
    /// `input_required`: the server's requests, by key.
    #[serde(default)]
    pub input_requests: Option<serde_json::Map<String, Value>>,
    /// `completed`: the call's result.
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    /// `failed`: the JSON-RPC error the call ended with.
    #[serde(default)]
    pub error: Option<Value>,
}

impl DetailedTask {
    /// Its `ttlMs` as a duration (`None`: no limit, or not a usable number).
    pub fn ttl(&self) -> Option<std::time::Duration> {
        self.ttl_ms
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| std::time::Duration::from_secs_f64((ms / 1000.0).min(1e9)))
    }
}

/// `notifications/progress` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token of the request this is about.
    pub progress_token: Value,
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    #[serde(default)]
    pub total: Option<f64>,
    /// A human message.
    #[serde(default)]
    pub message: Option<String>,
}

/// `notifications/message` (logging) parameters.
#[derive(Debug, Deserialize)]
pub struct LoggingMessageParams {
    /// Severity (`debug` .. `emergency`).
    #[serde(default)]
    pub level: String,
    /// Which logger in the server wrote it, if it said.
    #[serde(default)]
    pub logger: Option<String>,
    /// What to log: a string, or any JSON value (logged as JSON text).
    #[serde(default)]
    pub data: Value,
}

/// `notifications/cancelled` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams<'a> {
    /// The request being cancelled.
    pub request_id: i64,
    /// Why, for the server's log (`timed out`, `cancelled by the user`, ...).
    pub reason: &'a str,
}

/// One resource a server lists (`resources/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI (what `resources/read` takes).
    pub uri: String,
    /// Its programmatic name.
    #[serde(default)]
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// One resource template (`resources/templates/list`): an RFC 6570 URI template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The URI template (`file:///{path}`).
    pub uri_template: String,
    /// Its programmatic name.
    #[serde(default)]
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// `resources/read` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents (one resource may have several parts).
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
    /// Stateless era: `complete` (or absent); read, never written.
    #[serde(default, skip_serializing)]
    pub result_type: Option<String>,
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// One prompt a server lists (`prompts/list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Its name (what `prompts/get` takes).
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

page! {
    /// `resources/list` result.
    ListResourcesResult { "resources" resources: Resource }
}

page! {
    /// `resources/templates/list` result.
    ListResourceTemplatesResult { "resourceTemplates" resource_templates: ResourceTemplate }
}

page! {
    /// `prompts/list` result.
    ListPromptsResult { "prompts" prompts: Prompt }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its content (text, image, audio, an embedded resource or a link).
    pub content: ContentBlock,
}

/// `prompts/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages, in order.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
    /// Stateless era: `complete` (or absent); read, never written.
    #[serde(default, skip_serializing)]
    pub result_type: Option<String>,
}

/// The values `completion/complete` offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The values (at most 100 are kept).
    #[serde(default)]
    pub values: Vec<String>,
    /// How many there are in all, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default)]
    pub has_more: bool,
}

/// `completion/complete` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The completion.
    #[serde(default)]
    pub completion: Completion,
}

/// One root the client exposes.
#[derive(Debug, Serialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    pub name: String,
}

/// `roots/list` result.
#[derive(Debug, Serialize)]
pub struct ListRootsResult {
    /// Every root: the configured ones, else the server's working directory.
    pub roots: Vec<Root>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_blocks_round_trip_every_kind() {
        let json = r#"{"content":[
            {"type":"text","text":"hi"},
            {"type":"image","data":"AAAA","mimeType":"image/png"},
            {"type":"audio","data":"AAAA","mimeType":"audio/wav"},
            {"type":"resource","resource":{"uri":"file:///a","text":"t"}},
            {"type":"resource_link","uri":"file:///b","name":"b"},
            {"type":"hologram","x":1}
        ],"structuredContent":{"a":1},"isError":true}"#;
        let r: CallToolResult = serde_json::from_str(json).unwrap();
        assert_eq!(r.content.len(), 6);
        assert!(r.is_error);
        assert_eq!(
            r.content[5],
            ContentBlock::Unknown {
                kind: "hologram".into()
            }
        );
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["content"][1]["mimeType"], "image/png");
        assert_eq!(back["content"][4]["type"], "resource_link");
        assert_eq!(back["structuredContent"]["a"], 1);
    }

    #[test]
    fn tool_keeps_schema_raw() {
        let t: Tool =
            serde_json::from_str(r#"{"name":"x","inputSchema":{"type":"object","a":[1]}}"#)
                .unwrap();
        assert_eq!(t.input_schema.get(), r#"{"type":"object","a":[1]}"#);
    }
}
