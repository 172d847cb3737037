//! Every cross-actor message of the runtime, documented: the crate's contract.
//!
//! Commands are imperative (`CallTool`, `Restart`), events past-tense facts (`ServerEvent`,
//! `StatusChanged`). Flow:
//!
//! ```text
//! caller --CallTool--> ToolRegistry --CallServerTool--> McpServer --stdin--> child
//! McpServer --ServerEvent{Connected|ToolsChanged|Exited}--> ServerSupervisor
//! ServerSupervisor --ServerTools / ServerGone--> ToolRegistry
//! ServerSupervisor --StatusChanged (coalesced, never blocking)--> subscribers (TUI, CLI)
//! caller --ListResources|ReadResource|ListSkills|GetSkill|ListPrompts|GetPrompt|...--> ToolRegistry
//!        --the same message--> McpServer (the server's current actor)
//! McpServer --ServerEvent{Notice}--> ServerSupervisor --ServerNotice--> notice subscribers
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::{CallError, RequestError};
use crate::protocol::types::{
    CallToolResult, Completion, GetPromptResult, Implementation, Prompt, ReadResourceResult,
    Resource, ResourceTemplate, ServerCapabilities, Tool,
};
use crate::server::McpServer;

// ---- tool calls -------------------------------------------------------------------------------

/// Call a registered tool by its full name (`mcp__{server}__{tool}` or a built-in's name).
/// The registry answers with the call, [`Routed`], which the caller awaits
/// ([`ToolRegistry::send`](crate::ToolRegistry::send) does both).
#[derive(Debug, Message)]
#[rtype(result = "Routed")]
pub struct CallTool {
    /// The name the registry knows the tool by (what the model sees).
    pub name: String,
    /// The arguments, a JSON object; `None` sends no `arguments` member.
    pub arguments: Option<Value>,
    /// Overrides the server's `toolTimeoutSec`.
    pub timeout: Option<Duration>,
    /// Cancelling it ends the call and sends `notifications/cancelled`.
    pub cancel: CancellationToken,
    /// Gets `notifications/progress` of this call, each before the call's result resolves.
    pub progress: Option<ProgressSink>,
    /// The span the call's `tools/call` span goes under (the agent's tool span; none: the
    /// session's). Nothing (one word) when nothing is exported.
    pub parent: crate::telemetry::Parent,
    /// When the call becomes a task: `false` waits for its end (bounded by the server's
    /// `taskTimeoutSec`), `true` answers at once with the task's handle (`CallToolResult::task`).
    pub detach: bool,
}

impl CallTool {
    /// A call with default timeout, no progress, and a fresh cancellation token.
    pub fn new(name: impl Into<String>, arguments: Option<Value>) -> Self {
        Self {
            name: name.into(),
            arguments,
            timeout: None,
            cancel: CancellationToken::new(),
            progress: None,
            parent: crate::telemetry::Parent::default(),
            detach: false,
        }
    }
}

/// A call the registry has routed (or a server actor has sent): the future that makes it (sent
/// to its server, or its built-in, or waiting for a server offered from the cache), awaited in
/// the caller's own task.
/// The registry hands it over rather than running it as a task of its own: a call then costs one
/// task and one wake-up less. Dropping it withdraws the call as dropping the caller always did
/// (the call's cancellation token, which [`ToolRegistry::send`](crate::ToolRegistry::send)
/// cancels when its future is dropped).
#[must_use = "a routed call does nothing until it is awaited"]
pub struct Routed(
    pub(crate) futures_util::future::BoxFuture<'static, Result<CallToolResult, CallError>>,
);

impl std::future::IntoFuture for Routed {
    type Output = Result<CallToolResult, CallError>;
    type IntoFuture = futures_util::future::BoxFuture<'static, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        self.0
    }
}

impl Routed {
    /// A call that ends at once with `result` (an unknown tool, a server gone).
    pub(crate) fn ready(result: Result<CallToolResult, CallError>) -> Self {
        Self(Box::pin(std::future::ready(result)))
    }
}

/// Call a tool on one server actor (sent by the registry). The actor sends the call's first
/// round and answers with the rest of the call, [`Routed`], which the registry's routed call
/// awaits in its caller's task: the reply's wake-up is the caller's own.
#[derive(Debug, Message)]
#[rtype(result = "Routed")]
pub struct CallServerTool {
    /// The tool's name on the server.
    pub tool: String,
    /// The arguments, a JSON object; `None` sends no `arguments` member.
    pub arguments: Option<Value>,
    /// How long to wait for the reply: the caller's timeout, else the server's
    /// `toolTimeoutSec`.
    pub timeout: Duration,
    /// The caller's token: cancelling it ends the call.
    pub cancel: CancellationToken,
    /// Where the call's progress goes.
    pub progress: Option<ProgressSink>,
    /// The span the call's `tools/call` span goes under.
    pub parent: crate::telemetry::Parent,
    /// A task is answered with its handle at once instead of awaited (see [`CallTool`]).
    pub detach: bool,
}

/// Where one call's progress notifications go: a function the server actor calls in the
/// handler of each `notifications/progress`, so every progress notice is handed over before the
/// call's result resolves (a caller that emits the result after the call's future ends sees
/// the progress first, with no flush or round trip). It must not block: send with `try_send`
/// into a bounded channel, or print.
#[derive(Clone)]
pub struct ProgressSink(std::sync::Arc<dyn Fn(ToolProgress) + Send + Sync>);

impl ProgressSink {
    /// A sink that calls `f` for each notice.
    pub fn new(f: impl Fn(ToolProgress) + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(f))
    }

    /// Hands one notice over.
    pub fn send(&self, p: ToolProgress) {
        (self.0)(p)
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// A progress notification for one call.
#[derive(Debug, Clone)]
pub struct ToolProgress {
    /// The name (in `.mcp.json`) of the server that sent it.
    pub server: String,
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// The server's message.
    pub message: Option<String>,
}

/// A built-in tool call, sent by the registry to the built-in executor.
#[derive(Debug, Message)]
#[rtype(result = "Result<CallToolResult, CallError>")]
pub struct CallBuiltin {
    /// The built-in's name.
    pub name: String,
    /// The arguments, a JSON object; `None` when the caller gave none.
    pub arguments: Option<Value>,
    /// The caller's token: cancelling it ends the call.
    pub cancel: CancellationToken,
}

// ---- registry -----------------------------------------------------------------------------------

/// One registered tool.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// The registered name (what the model sees); shared with the registry's route.
    pub name: Arc<str>,
    /// The owning server; `None` for a built-in. One copy per server, shared by its tools.
    pub server: Option<Arc<str>>,
    /// The definition as the server listed it.
    pub tool: Arc<Tool>,
}

/// Install the built-in tools (they win every name clash) and their executor.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetBuiltins {
    /// The built-ins' definitions, listed before every server's tools.
    pub tools: Vec<Tool>,
    /// Where a call to any of them goes.
    pub executor: Recipient<CallBuiltin>,
}

/// A server's current tool list (sent by the supervisor on connect and on list_changed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ServerTools {
    /// The server's spec (filters, timeout).
    pub spec: Arc<crate::spec::ServerSpec>,
    /// Its current actor; `None` while the tools come from the cache and the server is not
    /// connected (a call then asks `starter` for it).
    pub addr: Option<Addr<McpServer>>,
    /// Who starts the server (or waits for its start) for a call of a cached tool.
    pub starter: Option<Recipient<AwaitServer>>,
    /// Every tool it listed.
    pub tools: Arc<[Arc<Tool>]>,
    /// The server's `instructions` (for the model's system prompt).
    pub instructions: Option<Arc<str>>,
}

/// The connected actor of a server whose tools were offered from the cache: a lazy server is
/// started now; the answer comes when it connected (or failed, or its startup timed out).
#[derive(Debug, Message)]
#[rtype(result = "Result<Addr<McpServer>, String>")]
pub struct AwaitServer {
    /// The server's name in `.mcp.json`.
    pub server: String,
}

/// A server's tools leave the table (failed, restarting, stopped).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ServerGone {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// Its state, for the error a call gets meanwhile (`restarting (attempt 2)`).
    pub reason: String,
}

/// Every registered tool, built-ins first.
#[derive(Debug, Message)]
#[rtype(result = "Arc<Vec<ToolEntry>>")]
pub struct ListTools;

/// Why tool `tool` of server `server` (its own name) is not registered, when its filters leave
/// it out (`None` otherwise: the server does not have it).
#[derive(Debug, Message)]
#[rtype(result = "Option<crate::error::CallError>")]
pub struct WhyFiltered {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
}

/// The registered tool `name` as the table has it now, or why a call of it would fail (it
/// vanished from its server's live list, its server is not connected, a filter leaves it out,
/// or no server has it).
#[derive(Debug, Message)]
#[rtype(result = "Result<ToolEntry, crate::error::CallError>")]
pub struct LookupTool {
    /// The registered name (`mcp__server__tool`, or a built-in's).
    pub name: String,
}

/// The names of every connected server, in order of first connect.
#[derive(Debug, Message)]
#[rtype(result = "Vec<String>")]
pub struct ListServers;

/// The `instructions` of every connected server that gave some, by server name (the same `Arc`
/// until a server with instructions connects or leaves, so a caller can cache what it builds).
#[derive(Debug, Message)]
#[rtype(result = "Arc<Vec<(String, Arc<str>)>>")]
pub struct GetInstructions;

/// The skills each connected server that declares the Skills extension listed when it
/// connected (checked entries only; no file read), by server name.
#[derive(Debug, Message)]
#[rtype(result = "Vec<(String, Arc<crate::protocol::skills::SkillListing>)>")]
pub struct GetSkills;

// ---- resources, prompts, completion -------------------------------------------------------------

/// A request for one server's features beyond tools: the registry routes it unchanged to that
/// server's current actor, which answers within the server's `toolTimeoutSec` (a late answer
/// sends `notifications/cancelled`). Lists are walked to their end like `tools/list` (bounded
/// by `maxTools` items and 10,000 pages).
pub trait ServerRequest: Message<Result = Result<Self::Output, RequestError>> + Send {
    /// What a successful answer carries.
    type Output: Send + 'static;
    /// The server's name in `.mcp.json`.
    fn server(&self) -> &str;
}

macro_rules! server_request {
    ($(#[$doc:meta])* $name:ident -> $out:ty { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            /// The server's name in `.mcp.json`.
            pub server: String,
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl Message for $name {
            type Result = Result<$out, RequestError>;
        }

        impl ServerRequest for $name {
            type Output = $out;
            fn server(&self) -> &str {
                &self.server
            }
        }
    };
}

server_request! {
    /// Tasks extension: one `tasks/get` of a task (its status, result or error as the server
    /// sent them).
    GetTaskStatus -> TaskStatus {
        /// The server's id of the task.
        task_id: String,
    }
}

server_request! {
    /// Tasks extension: `tasks/cancel` of a task (the server acknowledges; it may still end
    /// otherwise).
    CancelServerTask -> () {
        /// The server's id of the task.
        task_id: String,
    }
}

server_request! {
    /// Tasks extension: follow a task to its end as a waited call does (polls, input requests,
    /// `taskTimeoutSec`, the caller's cancellation sending `tasks/cancel`).
    AwaitTask -> CallToolResult {
        /// The tool it was a call of (for messages).
        tool: String,
        /// The server's id of the task.
        task_id: String,
        /// Cancelling it sends `tasks/cancel` and ends the wait.
        cancel: CancellationToken,
        /// Where the task's status messages go, as progress.
        progress: Option<ProgressSink>,
    }
}

/// One look at a task (`tasks/get`).
#[derive(Debug, Clone)]
pub struct TaskStatus {
    /// `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The server's status message (server text: the caller sanitizes it).
    pub status_message: Option<String>,
    /// `completed`: the result.
    pub result: Option<CallToolResult>,
    /// `failed`: the JSON-RPC error, as text.
    pub error: Option<String>,
}

/// What `completion/complete` completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// A prompt's argument (`ref/prompt`), by the prompt's name.
    Prompt(String),
    /// A resource template's variable (`ref/resource`), by the template's URI.
    Resource(String),
}

server_request! {
    /// `resources/list`, every page.
    ListResources -> Vec<Resource> {}
}

server_request! {
    /// Skills extension: `skills/list`, every page, each entry checked
    /// (`protocol::skills::SkillEntry::parse`); kept for the listing's `ttlMs` (at most an hour).
    ListSkills -> Arc<crate::protocol::skills::SkillListing> {}
}

server_request! {
    /// Skills extension: `skills/get` of one skill by the URI of its `SKILL.md`, checked.
    GetSkill -> crate::protocol::skills::SkillEntry {
        /// The URI of the skill's `SKILL.md`.
        uri: String,
    }
}

server_request! {
    /// `resources/templates/list`, every page.
    ListResourceTemplates -> Vec<ResourceTemplate> {}
}

server_request! {
    /// `resources/read` of one URI.
    ReadResource -> ReadResourceResult {
        /// The resource's URI.
        uri: String,
    }
}

server_request! {
    /// `resources/subscribe` (or `resources/unsubscribe`); in the stateless era the URI joins
    /// (or leaves) the `subscriptions/listen` filter. Updates arrive as
    /// [`NoticeKind::ResourceUpdated`].
    SubscribeResource -> () {
        /// The resource's URI.
        uri: String,
        /// `true` subscribes, `false` unsubscribes.
        on: bool,
    }
}

server_request! {
    /// `prompts/list`, every page.
    ListPrompts -> Vec<Prompt> {}
}

server_request! {
    /// `prompts/get` with the prompt's arguments.
    GetPrompt -> GetPromptResult {
        /// The prompt's name.
        name: String,
        /// Its arguments (string values, as the spec has them).
        arguments: BTreeMap<String, String>,
    }
}

server_request! {
    /// `completion/complete` of one argument's value (at most 100 values are kept).
    Complete -> Completion {
        /// What the argument belongs to.
        reference: CompletionRef,
        /// The argument's name.
        argument: String,
        /// What is typed so far.
        value: String,
        /// Arguments already chosen (`context.arguments`).
        context: BTreeMap<String, String>,
    }
}

/// Something a server told us outside any call, for whoever shows it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NoticeKind {
    /// `notifications/message`: a log line of the server's.
    Log {
        /// Its severity (`debug` .. `emergency`).
        level: String,
        /// The server's logger, if it named one.
        logger: Option<String>,
        /// The data: a string as sent, other JSON as JSON text (not sanitized).
        text: String,
    },
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourceUpdated {
        /// Its URI.
        uri: String,
    },
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// A login started from the front end ([`crate::supervisor`]'s `Login`) succeeded; the
    /// server is starting again with the new grant.
    LoggedIn {
        /// The scopes granted.
        scopes: Vec<String>,
    },
}

/// A notice of one server (sent to every notice subscriber with `try_send`: a subscriber
/// whose mailbox is full misses it).
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ServerNotice {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// What it said.
    pub kind: NoticeKind,
}

/// Receive every [`ServerNotice`] from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SubscribeNotices(pub Recipient<ServerNotice>);

/// The roots of a connected server changed (a reload changed only its `roots`): it answers
/// `roots/list` with these from now on, and a handshake-era server is sent
/// `notifications/roots/list_changed`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetRoots(pub crate::spec::Roots);

// ---- server lifecycle ---------------------------------------------------------------------------

/// What a connection settled on in its handshake.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionInfo {
    /// The negotiated revision.
    pub protocol_version: String,
    /// The era the connection speaks (handshake or stateless).
    pub era: crate::protocol::version::Era,
    /// The server's name and version.
    pub server_info: Implementation,
    /// The initialize result's `instructions`: hints for the model on using the server.
    pub instructions: Option<String>,
    /// What the server said it supports (initialize or `server/discover`).
    pub capabilities: Arc<ServerCapabilities>,
    /// Spawn (or connect) to tools listed.
    pub connect_time: Duration,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// The first tool list's `ttlMs` (stateless era), when it gave one.
    pub tools_ttl_ms: Option<u64>,
    /// When the cache entry whose tools were offered before this connection was written
    /// (`None`: the tools were not offered from the cache).
    pub cache_written: Option<std::time::SystemTime>,
    /// The child's pid (also its process group), for stdio servers.
    pub pid: Option<u32>,
    /// What the user should know about this connection's config, one line each (an
    /// `enabledTools`/`disabledTools` entry that names no tool of the server).
    pub notes: Vec<String>,
}

/// Something happened to one server actor (sent to the supervisor).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ServerEvent {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The actor's generation (stale generations are ignored).
    pub generation: u64,
    /// What happened.
    pub kind: ServerEventKind,
}

/// The kinds of [`ServerEvent`].
#[derive(Debug)]
pub enum ServerEventKind {
    /// Handshake and first tools/list done.
    Connected {
        /// Handshake facts.
        info: ConnectionInfo,
        /// Every tool of the first `tools/list` (all its pages), before the spec's filters.
        tools: Arc<[Arc<Tool>]>,
    },
    /// The server said something outside any call (a log line, a resource or list change).
    Notice(NoticeKind),
    /// The tool list was fetched again after `notifications/tools/list_changed`.
    ToolsChanged {
        /// The whole new list (all its pages), before the spec's filters.
        tools: Arc<[Arc<Tool>]>,
        /// Its `ttlMs` (stateless era), when it gave one.
        ttl_ms: Option<u64>,
    },
    /// The actor stopped (its child is gone).
    Exited {
        /// Whether it had connected.
        connected: bool,
        /// Why (`exited with status 1`, `handshake failed: ...`).
        reason: String,
        /// The last lines of stderr.
        stderr_tail: Vec<String>,
        /// A stdio server that exited while it was probed with `server/discover`: start it
        /// again in this era (the handshake), without probing.
        retry_in: Option<crate::protocol::version::Era>,
        /// It failed because the server wants a login nobody did (OAuth).
        needs_login: bool,
    },
}

/// Stop a server actor: graceful closes stdin, then SIGTERM, then SIGKILL; otherwise SIGKILL now.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Shutdown {
    /// Give the server its grace periods.
    pub graceful: bool,
    /// Each grace period (after closing stdin, after SIGTERM), instead of the spec's
    /// `shutdown_grace`: a headless command that has printed its result wants out quickly.
    pub grace: Option<std::time::Duration>,
}

// ---- supervisor ---------------------------------------------------------------------------------

/// The state of one server, as subscribers see it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Starting for the first time.
    Starting {
        /// When this start began.
        since: Instant,
    },
    /// Handshake done; tools registered.
    Connected {
        /// Tools registered for it (after filters).
        tools: usize,
        /// Handshake facts.
        info: ConnectionInfo,
    },
    /// Exited after connecting; will be started again.
    Restarting {
        /// Exits within the breaker's window.
        attempt: usize,
        /// When the next start is due.
        next_retry: Instant,
        /// Why it went away.
        last_error: String,
    },
    /// Gave up (start failed, or the crash-loop breaker tripped) until `Restart`.
    Failed {
        /// Why: the start or handshake failed or timed out, the breaker tripped (with the last
        /// exit), or the config entry is invalid.
        error: String,
        /// The last lines of stderr.
        stderr_tail: Vec<String>,
    },
    /// Its tools are offered from the tool-list cache and it is not connected yet: started
    /// in the background (`starting`), or waiting for the first call of one of its tools.
    Cached {
        /// Tools registered for it from the cache (after filters).
        tools: usize,
        /// When the cache entry was written.
        written: std::time::SystemTime,
        /// When its start began, while it starts (eager, or called).
        starting: Option<Instant>,
    },
    /// Stopped by request or disabled.
    Stopped,
    /// Held back: its spec comes from a project config the user has not approved (see
    /// [`crate::spec::Hold`]); nothing was spawned or contacted.
    Unapproved {
        /// What it would run or reach ([`crate::TransportSpec::command_line`]).
        command_line: String,
        /// The key an approval of this exact spec carries ([`crate::ServerSpec::approval`]).
        approval: String,
    },
    /// An OAuth-protected HTTP server with no token it accepts, and nobody here to log in:
    /// `harness9 mcp login NAME` (named in `error`) connects it.
    NeedsLogin {
        /// What the server answered, and the command to run.
        error: String,
        /// While a login ([`Login`]) runs: the authorization page it opened (empty until the
        /// page is known).
        login_page: Option<String>,
    },
}

impl ServerStatus {
    /// `starting`, `connected`, `restarting`, `failed`, `stopped`, `unapproved`,
    /// `needs login`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerStatus::Starting { .. } => "starting",
            ServerStatus::Connected { .. } => "connected",
            ServerStatus::Restarting { .. } => "restarting",
            ServerStatus::Failed { .. } => "failed",
            ServerStatus::Cached { .. } => "cached",
            ServerStatus::Stopped => "stopped",
            ServerStatus::Unapproved { .. } => "unapproved",
            ServerStatus::NeedsLogin { .. } => "needs login",
        }
    }

    /// Connected, failed, stopped, unapproved, needing a login, or offered from the cache
    /// and not starting (lazy): the state a headless command waits for.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            ServerStatus::Connected { .. }
                | ServerStatus::Failed { .. }
                | ServerStatus::Stopped
                | ServerStatus::Unapproved { .. }
                | ServerStatus::NeedsLogin { .. }
                | ServerStatus::Cached { starting: None, .. }
        )
    }

    /// Settled, or offering its tools from the cache while it starts: the model may be asked
    /// with its tools now (`run -p`'s first request waits for nothing more).
    pub fn is_ready(&self) -> bool {
        self.is_settled() || matches!(self, ServerStatus::Cached { .. })
    }
}

/// One server in a status snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerState {
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// Where the server is in its lifecycle.
    pub status: ServerStatus,
}

/// The status of every server, by name.
pub type StatusSnapshot = Arc<BTreeMap<String, ServerState>>;

/// Statuses changed; carries the whole current snapshot, so a dropped intermediate one loses
/// nothing.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct StatusChanged {
    /// Every server's state now.
    pub snapshot: StatusSnapshot,
}

/// Receive `StatusChanged` from now on (the current snapshot is sent at once).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe(pub Recipient<StatusChanged>);

/// The current snapshot.
#[derive(Debug, Message)]
#[rtype(result = "StatusSnapshot")]
pub struct GetStatus;

/// Start a server again (also resets the crash-loop breaker).
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct Restart(pub String);

/// Stop one server; it stays Stopped until `Restart`.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct Stop(pub String);

/// Bring the running servers in line with a new config (hot reload): servers not running yet
/// start, servers no longer listed stop and leave, servers whose spec changed restart with the new
/// spec, and unchanged servers are not touched (their calls in flight go on). A spec with a
/// `hold` is never started: a changed server whose new spec is held stops and shows its hold.
#[derive(Debug, Message)]
#[rtype(result = "ReconcileReport")]
pub struct Reconcile {
    /// Every enabled server of the new config, in file order.
    pub specs: Vec<crate::spec::ServerSpec>,
}

/// What a [`Reconcile`] did, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Started for the first time.
    pub added: Vec<String>,
    /// Stopped and forgotten.
    pub removed: Vec<String>,
    /// Restarted with a new spec.
    pub changed: Vec<String>,
    /// Left alone.
    pub unchanged: Vec<String>,
    /// Only their `roots` changed: told so, not restarted.
    pub roots_changed: Vec<String>,
}

impl ReconcileReport {
    /// `added a, b; removed c; restarted d; 3 unchanged`, or `no change`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for (what, names) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("restarted", &self.changed),
            ("new roots for", &self.roots_changed),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what} {}", names.join(", ")));
            }
        }
        if parts.is_empty() {
            return "no change".to_owned();
        }
        if !self.unchanged.is_empty() {
            parts.push(format!("{} unchanged", self.unchanged.len()));
        }
        parts.join("; ")
    }
}

/// Log in to an OAuth-protected HTTP server that needs it (the TUI panel's `L`): the browser
/// opens on its authorization page (the status shows it too); on success the server starts
/// again with its new token, on failure it stays `NeedsLogin` with the reason.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Login(pub String);

/// Stop every server; resolves once every child is gone (bounded).
#[derive(Debug, Message, Default)]
#[rtype(result = "()")]
pub struct ShutdownAll {
    /// Each server's grace periods, instead of their spec's (see [`Shutdown::grace`]).
    pub grace: Option<std::time::Duration>,
}

// ---- input from the user ----------------------------------------------------------------------

/// A server asks the client for input: `elicitation/create` or `sampling/createMessage`, as a
/// handshake-era request of its own or an `inputRequests` entry of a stateless
/// `input_required` result (both eras send the same message). The handler answers on `reply`:
/// the result (`{"action": ...}` for an elicitation, a `CreateMessageResult` for sampling), or
/// the JSON-RPC error to send back. A dropped `reply` is a cancel (elicitation) or a refusal
/// (sampling); the server actor stops waiting (and drops its receiver, which the handler can
/// see with `reply.is_closed()`) when the server cancels its request, the server exits, or
/// [`crate::server::ask::ASK_TIMEOUT`] passes.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct InputRequest {
    /// The server's name (in `.mcp.json`).
    pub server: String,
    /// `elicitation/create` or `sampling/createMessage`.
    pub method: String,
    /// The request's params as the server sent them (`Null` when it sent none).
    pub params: Value,
    /// Where the answer goes.
    pub reply: tokio::sync::oneshot::Sender<Result<Value, crate::protocol::jsonrpc::ErrorObject>>,
    /// The request's span (under the server's trace context), the parent of what answering
    /// it does (a sampling request's model call).
    pub parent: crate::telemetry::Parent,
}
