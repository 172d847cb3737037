//! The agent engine: the `Engine` actor holds the conversation and runs turns. A turn calls the
//! model with every registered tool, runs the reply's tool calls in parallel through the
//! registry (each under its server's `toolTimeoutSec`), feeds the results back (errors marked as
//! errors), and repeats until the model answers or `max_steps` is reached. A call whose
//! arguments are not a JSON object (cut off at `max_tokens`, or broken JSON) is not run: it gets
//! an error result saying so, and the model can send it again. MCP tools are ordinary tools
//! here: the engine has no MCP special case.
//!
//! A turn is a `ResponseActFuture`, so `CancelTurn` is handled while it runs; each tool call
//! runs under a child of the turn's cancellation token. A failed or cancelled turn leaves the
//! conversation as it was before it; a finished one's new messages go to the
//! [`ConversationLog`]. The system prompt is built once per session
//! ([`EngineConfig::with_environment`]) and each step appends the connected servers'
//! `instructions` ([`system_with_servers`]), so both stay a stable prompt-cache prefix.
//!
//! ```text
//! RunTurn --> Engine --Model::complete--> model (streaming; TextDelta events)
//!               |  tool calls, all at once
//!               +--CallTool--> ToolRegistry --> McpServer / Builtins
//!               +--TurnEvent--> the turn's one ordered stream (TUI, headless printer):
//!                                   text, tool calls, progress, results, questions, outcome last
//! ```

mod calls;
pub mod compact;
mod control;
mod deferred;
pub mod output;
pub mod spans;
mod turn;
#[cfg(test)]
mod turn_tests;

pub use calls::schema_object;
use calls::ToolOffer;
pub use control::{
    Compact, DisableTools, ListOffered, OfferedTools, ResumeConversation, SetProvider,
};
use turn::{turn, Turn, TurnEnd};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use harness9_actors::ToolRegistry;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::model::{Block, Message, Model, ModelError, Usage};
use crate::permissions::Policy;

/// The system prompt.
pub const SYSTEM_PROMPT: &str = "You are harness9, a terminal coding agent. Use the tools to inspect and change the user's project; tool names of the form mcp__{server}__{tool} come from MCP servers. Call several tools at once when they do not depend on each other. When a tool result says it was cut, read the saved file in parts. Answer concisely.";

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Model calls per turn.
    pub max_steps: u32,
    /// A tool result over this many (estimated) tokens is cut for the model.
    pub output_budget_tokens: usize,
    /// Under which directory the session's private directory for whole cut results is made
    /// (see `base::private_fs::session_dir`).
    pub spill_dir: PathBuf,
    /// The system prompt.
    pub system: Option<String>,
    /// The model's context window in tokens, when known (settings `[context_windows]`).
    pub context_window: Option<u64>,
    /// Compact before a turn once the last request used this share of the window (0: never).
    pub compact_at: f64,
    /// Which tool calls run, ask or are refused (see [`crate::permissions`]).
    pub policy: Arc<Policy>,
    /// When MCP tools are deferred behind `tool_search` (settings `[tool_search]`).
    pub tool_search: crate::toolsearch::ToolSearchSettings,
}

/// The most of a project's instructions file that goes into the system prompt.
const MAX_INSTRUCTIONS: usize = 32 * 1024;

impl EngineConfig {
    /// `max_steps` model calls a turn, a budget of `output_budget_tokens`, spills in the
    /// session's private directory under the temp dir, and the built-in system prompt.
    pub fn new(max_steps: u32, output_budget_tokens: usize) -> Self {
        Self {
            max_steps,
            output_budget_tokens,
            spill_dir: std::env::temp_dir(),
            system: Some(SYSTEM_PROMPT.to_owned()),
            context_window: None,
            compact_at: 0.8,
            policy: Arc::new(Policy::default()),
            tool_search: Default::default(),
        }
    }

    /// The built-in system prompt plus where the agent runs: the working directory, the
    /// platform, today's date, and the project's instructions (`AGENTS.md`, else `CLAUDE.md`,
    /// in `cwd`; at most 32 KiB). Built once, so it stays the same all session (a stable
    /// prompt-cache prefix).
    pub fn with_environment(mut self, cwd: &Path) -> Self {
        let today = harness9_base::time::rfc3339(std::time::SystemTime::now());
        let mut s = format!(
            "{SYSTEM_PROMPT}\n\nEnvironment:\n- working directory: {}\n- platform: {} {}\n- today: {}",
            cwd.display(),
            std::env::consts::OS,
            std::env::consts::ARCH,
            today.get(..10).unwrap_or(&today)
        );
        for name in ["AGENTS.md", "CLAUDE.md"] {
            let Ok(text) = std::fs::read_to_string(cwd.join(name)) else {
                continue;
            };
            let mut end = text.len().min(MAX_INSTRUCTIONS);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            s.push_str(&format!(
                "\n\nThe project's instructions ({name}):\n{}",
                text[..end].trim_end()
            ));
            if end < text.len() {
                s.push_str(&format!(
                    "\n[cut at {MAX_INSTRUCTIONS} bytes; read {name} for the rest]"
                ));
            }
            break;
        }
        self.system = Some(s);
        self
    }
}

/// The most of one server's `instructions` that goes into the system prompt.
pub const MAX_SERVER_INSTRUCTIONS: usize = 8 * 1024;

/// The system prompt with the connected servers' `instructions` after it: in server-name
/// order, each cleaned of control characters and cut at [`MAX_SERVER_INSTRUCTIONS`] bytes, so
/// the prompt is the same until a server with instructions connects or leaves (a stable
/// prompt-cache prefix).
pub fn system_with_servers(system: Option<&str>, servers: &[(String, Arc<str>)]) -> Option<String> {
    if servers.is_empty() {
        return system.map(str::to_owned);
    }
    let mut s = system.unwrap_or_default().to_owned();
    s.push_str(
        "\n\nInstructions from the connected MCP servers (written by each server, not by the user):",
    );
    for (server, text) in servers {
        let text = harness9_base::sanitize::clean_text(text);
        let text = text.trim();
        let mut end = text.len().min(MAX_SERVER_INSTRUCTIONS);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        s.push_str(&format!(
            "\n\n## server {}\n{}",
            harness9_base::sanitize::clean_line(server),
            &text[..end]
        ));
        if end < text.len() {
            s.push_str(&format!("\n[cut at {MAX_SERVER_INSTRUCTIONS} bytes]"));
        }
    }
    Some(s)
}

/// Something that happened during a turn, for whoever watches it.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// A piece of assistant text.
    TextDelta(String),
    /// The model call is being retried.
    ModelRetrying {
        /// Which retry.
        attempt: u32,
        /// After how long.
        after: Duration,
        /// Why.
        reason: String,
    },
    /// One model call finished.
    ModelDone {
        /// 1-based step.
        step: u32,
        /// Its text.
        text: String,
        /// How many tool calls it asked for.
        tool_calls: usize,
        /// How long it took.
        elapsed: Duration,
        /// Tokens.
        usage: Usage,
        /// The MCP tools the request carried and those it deferred.
        tools: crate::toolsearch::ToolsOffered,
    },
    /// A tool call started.
    ToolStarted {
        /// The model's call id.
        id: String,
        /// The registered tool name.
        name: String,
        /// Its arguments: a JSON object, or the model's raw text as a string when it was not
        /// one (the call then fails at once).
        arguments: Value,
    },
    /// A tool call was refused by the permissions (a deny rule, the mode, or a call that
    /// would ask where no one can be asked); its error result follows in `ToolFinished`.
    ToolRefused {
        /// The model's call id.
        id: String,
        /// The registered tool name.
        name: String,
        /// The rule that decided (`deny rule "bash(rm:*)" (file:line)`), or the mode.
        rule: Option<String>,
        /// The error result the model gets.
        reason: String,
    },
    /// A tool call reported progress (`notifications/progress`).
    ToolProgress {
        /// The model's call id.
        id: String,
        /// Progress so far.
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// The server's message.
        message: Option<String>,
    },
    /// Older turns were replaced by a summary (before a turn near the window's end, or after
    /// the provider refused a request as too long).
    Compacted {
        /// Why.
        reason: String,
        /// What it did.
        compacted: compact::Compacted,
    },
    /// A call of this turn became a task (`io.modelcontextprotocol/tasks`) that the turn now
    /// follows; its end is [`EngineEvent::TaskEnded`].
    TaskStarted {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The server's id of the task (server text: the front end sanitizes and cuts it).
        task_id: String,
        /// Its status and the server's status message (`working: 3 of 10`), cut to one line
        /// (server text: the front end sanitizes it).
        status: String,
    },
    /// A followed task's status or status message changed.
    TaskStatus {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The server's id of the task.
        task_id: String,
        /// Its status and status message, as in [`EngineEvent::TaskStarted`].
        status: String,
    },
    /// A followed task ended (completed, failed, cancelled, or given up); its result goes to
    /// the model.
    TaskEnded {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The server's id of the task.
        task_id: String,
    },
    /// A tool call ended.
    ToolFinished {
        /// The model's call id.
        id: String,
        /// The registered tool name.
        name: String,
        /// Whether the model got an error result.
        is_error: bool,
        /// From the call's start to its result.
        elapsed: Duration,
        /// The text of the result (or the error); of a result cut for the model, what the model
        /// got (the whole is in `spilled`).
        output: String,
        /// The size of the whole result's text.
        output_bytes: usize,
        /// Where the whole result was written when it was cut for the model.
        spilled: Option<PathBuf>,
    },
}

/// One item of a turn's stream. The engine sends every item of a turn on one channel in the
/// order things happened (a call's progress before its result, every result before the
/// outcome), and [`TurnEvent::Done`] is always the last item.
#[derive(Debug)]
pub enum TurnEvent {
    /// Something happened.
    Update(EngineEvent),
    /// A tool call waits for the user's answer (see [`crate::permissions`]).
    Ask(PermissionQuestion),
    /// How the turn ended; nothing follows it.
    Done(Result<TurnOutcome, EngineError>),
}

/// May this tool call run? A front end asks the user and answers on `answer`; a dropped
/// `answer` (the asker is gone) declines it, and the model gets an error result saying so.
#[derive(Debug)]
pub struct PermissionQuestion {
    /// The model's call id.
    pub id: String,
    /// The registered tool name.
    pub name: String,
    /// The tool's server; `None` for a built-in.
    pub server: Option<String>,
    /// The call's arguments.
    pub arguments: Value,
    /// The `ask` rule that makes it ask, when one does (else no rule allows it).
    pub rule: Option<String>,
    /// Takes the user's answer.
    pub answer: oneshot::Sender<Answer>,
}

/// The user's answer to a [`PermissionQuestion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run it, this once.
    Yes,
    /// Run it, and from now on whatever this allow rule names (`mcp__git__*`,
    /// `bash(cargo test:*)`); the front end remembers it for the project.
    Always(String),
    /// Do not run it.
    No,
    /// Do not run it, and tell the model this (it is the call's result).
    NoWith(String),
}

/// How many items a turn's stream holds before the engine waits for the front end. Progress
/// notices (sent from the server actor, which must not wait) are dropped while it is full.
pub const TURN_STREAM: usize = 1024;

/// A new turn stream: the sender goes into [`RunTurn`], the front end reads the receiver
/// until [`TurnEvent::Done`] (or its end: the engine stopped).
pub fn turn_stream() -> (mpsc::Sender<TurnEvent>, mpsc::Receiver<TurnEvent>) {
    mpsc::channel(TURN_STREAM)
}

/// How a turn ended well.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    /// The model's final text.
    pub text: String,
    /// Model calls made.
    pub steps: u32,
    /// Tokens over the turn.
    pub usage: Usage,
    /// Wall time.
    pub elapsed: Duration,
}

/// Why a turn did not end with an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The model call failed (after its retries).
    #[error("{0}")]
    Model(ModelError),
    /// The loop hit `max_steps`.
    #[error("stopped after {0} model calls without a final answer (max_steps); raise max_steps in harness9.toml or ask for less")]
    MaxSteps(u32),
    /// The turn was cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
    /// A turn is already running.
    #[error("a turn is already running; wait for it or cancel it")]
    Busy,
}

/// Run one user turn; everything about it, the outcome last, arrives on `events`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RunTurn {
    /// What the user said.
    pub prompt: String,
    /// What follows the text in the user's message: an MCP prompt's images.
    pub attachments: Vec<Block>,
    /// The turn's stream (see [`turn_stream`]).
    pub events: mpsc::Sender<TurnEvent>,
    /// Whether a call the permissions say to ask about waits for a [`TurnEvent::Ask`] answer;
    /// `false` (headless `run -p`) refuses it with an error result naming what would allow it.
    pub can_ask: bool,
}

/// Cancel the running turn: the model request and every tool call in flight (MCP servers get
/// `notifications/cancelled`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CancelTurn;

/// Forget the conversation: the next turn starts a new one. Ignored while a turn runs (the
/// turn hands its conversation back when it ends).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ClearConversation;

/// Where a conversation is saved as it grows. The engine owns this interface; the app's
/// session file implements it (so the engine needs nothing of the app's). A failed write stops
/// the saving, never the conversation.
pub trait ConversationLog: Send {
    /// Adds the messages of a finished turn.
    fn append(&mut self, messages: &[Message]) -> Result<(), String>;
    /// Notes that later turns use `model`.
    fn record_model(&mut self, model: &str) -> Result<(), String>;
    /// Replaces the whole conversation (after a compaction or a clear), saying why.
    fn replace(&mut self, reason: &str, messages: &[Message]) -> Result<(), String>;
    /// Where this conversation's pending tasks are kept (`None`: nowhere, a restart loses
    /// them).
    fn tasks(&self) -> Option<Arc<dyn TaskJournal>> {
        None
    }
}

/// A task a call became whose result is not yet in the saved conversation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingTask {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The server's id of the task.
    pub task_id: String,
    /// The id of the tool call the model made (its `tool_use` id).
    pub tool_use_id: String,
}

/// The pending tasks of a saved conversation, kept beside it so that a restarted harness9
/// (`--continue`, `/resume`) follows them again and gives their results to the model, once:
/// a task is added when its call returns and removed once its result is saved in the
/// conversation (or it was cancelled with its turn). A failed write is logged, never fatal.
pub trait TaskJournal: Send + Sync {
    /// Adds a task that just started.
    fn started(&self, task: &PendingTask);
    /// Removes tasks whose results are saved (or that were cancelled).
    fn settled(&self, tasks: &[PendingTask]);
    /// Every task still pending, oldest first.
    fn pending(&self) -> Vec<PendingTask>;
}

/// The engine actor.
pub struct Engine {
    /// The model (the HTTP [`Provider`]; a scripted one in the tests).
    provider: Arc<dyn Model>,
    registry: Addr<ToolRegistry>,
    config: Arc<EngineConfig>,
    conversation: Vec<Message>,
    running: Option<CancellationToken>,
    offer: ToolOffer,
    /// Tools the user turned off for this session (`/tools off`); a turn's offer follows it.
    disabled: Arc<std::collections::BTreeSet<String>>,
    /// Where finished turns are saved (`None`: not saved).
    log: Option<Box<dyn ConversationLog>>,
    /// Input tokens of the last model request (the context in use).
    last_input: u64,
    /// Told when a new conversation starts: the built-ins forget what the model saw of each
    /// file (their edit tools refuse a file changed since it was seen).
    forget_files: Option<Recipient<crate::builtins::ForgetFiles>>,
}

impl Engine {
    /// An engine for `provider` calling tools through `registry`.
    pub fn new(
        provider: impl Model + 'static,
        registry: Addr<ToolRegistry>,
        config: EngineConfig,
    ) -> Self {
        Self {
            provider: Arc::new(provider),
            registry,
            config: Arc::new(config),
            conversation: Vec::new(),
            running: None,
            offer: ToolOffer::default(),
            disabled: Arc::default(),
            log: None,
            last_input: 0,
            forget_files: None,
        }
    }

    /// Tells `builtins` when a new conversation starts (`/clear`, `/resume`).
    pub fn forgetting_files(mut self, builtins: Recipient<crate::builtins::ForgetFiles>) -> Self {
        self.forget_files = Some(builtins);
        self
    }

    /// A new conversation starts: the built-ins forget what the model saw.
    fn new_conversation(&self) {
        if let Some(r) = &self.forget_files {
            r.do_send(crate::builtins::ForgetFiles);
        }
    }

    /// Saves every finished turn to `log`, continuing `conversation` (a resumed session's, or
    /// empty for a new one).
    pub fn saving(
        mut self,
        log: impl ConversationLog + 'static,
        conversation: Vec<Message>,
    ) -> Self {
        self.log = Some(Box::new(log));
        self.conversation = conversation;
        self
    }

    /// The tool offer for a turn: a fresh one when the disabled tools changed since it was
    /// built (a change during a turn takes effect at the next).
    fn take_offer(&mut self) -> ToolOffer {
        let offer = std::mem::take(&mut self.offer);
        if offer.disabled == self.disabled {
            return offer;
        }
        // The tools found and used in this conversation stay found.
        ToolOffer {
            disabled: self.disabled.clone(),
            deferral: offer.deferral,
            ..ToolOffer::default()
        }
    }

    fn save(&mut self, new: &[Message]) {
        if let Some(log) = &mut self.log {
            if let Err(e) = log.append(new) {
                tracing::warn!("{e}; this conversation is no longer saved");
                self.log = None;
            }
        }
    }

    /// Records that the conversation was replaced (a compaction).
    fn save_whole(&mut self, reason: &str) {
        if let Some(log) = &mut self.log {
            if let Err(e) = log.replace(reason, &self.conversation) {
                tracing::warn!("{e}; this conversation is no longer saved");
                self.log = None;
            }
        }
    }
}

impl Actor for Engine {
    type Context = Context<Self>;
}

impl Handler<RunTurn> for Engine {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: RunTurn, _ctx: &mut Context<Self>) -> Self::Result {
        let events = msg.events;
        if self.running.is_some() {
            return Box::pin(
                async move {
                    let _ = events.send(TurnEvent::Done(Err(EngineError::Busy))).await;
                }
                .into_actor(self),
            );
        }
        let cancel = CancellationToken::new();
        self.running = Some(cancel.clone());
        let saved = self.conversation.len();
        let fut = turn(
            Turn {
                provider: self.provider.clone(),
                registry: self.registry.clone(),
                config: self.config.clone(),
                offer: self.take_offer(),
                messages: std::mem::take(&mut self.conversation),
                cancel,
                events: events.clone(),
                can_ask: msg.can_ask,
                last_input: self.last_input,
                journal: self.log.as_ref().and_then(|l| l.tasks()),
            },
            msg.prompt,
            msg.attachments,
        );
        Box::pin(fut.into_actor(self).then(move |end, act, _| {
            let TurnEnd {
                messages,
                offer,
                result,
                last_input,
                compacted,
                settled,
            } = end;
            act.last_input = last_input;
            let journal = act.log.as_ref().and_then(|l| l.tasks());
            if compacted {
                act.conversation = messages;
                act.save_whole("compact");
            } else {
                if result.is_ok() {
                    act.save(messages.get(saved..).unwrap_or_default());
                }
                act.conversation = messages;
            }
            // Only after their results are saved: a crash before this delivers them again.
            if let (Some(j), false) = (journal, settled.is_empty()) {
                j.settled(&settled);
            }
            act.offer = offer;
            act.running = None;
            // The outcome goes on the same stream, behind every event of the turn.
            async move {
                let _ = events.send(TurnEvent::Done(result)).await;
            }
            .into_actor(act)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::calls::bad_arguments;
    use super::*;
    use harness9_actors::messages::ToolEntry;

    #[test]
    fn read_only_is_what_the_annotations_say_and_nothing_else() {
        let entry = |name: &str, server: Option<&str>, hints: Option<&str>| ToolEntry {
            name: name.into(),
            server: server.map(Into::into),
            tool: Arc::new(harness9_actors::protocol::types::Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: harness9_actors::protocol::rawjson::RawJson::from_value(
                    &serde_json::json!({}),
                )
                .expect("schema"),
                output_schema: None,
                annotations: hints
                    .map(|h| harness9_actors::protocol::rawjson::RawJson::parse(h).expect("json")),
                execution: None,
            }),
        };
        // The built-ins as registered: their own annotations decide.
        let builtin = |name: &str| {
            let tool = crate::builtins::definitions()
                .into_iter()
                .find(|t| t.name == name)
                .expect("a built-in");
            ToolEntry {
                name: name.into(),
                server: None,
                tool: Arc::new(tool),
            }
        };
        // Read-only: the built-in read tools, and an MCP tool with `readOnlyHint: true`;
        // `destructiveHint` alone, no annotations or broken ones are not.
        let cases = [
            (builtin("bash"), false),
            (builtin("write_file"), false),
            (builtin("edit_file"), false),
            (builtin("apply_patch"), false),
            (builtin("read_file"), true),
            (builtin("list_dir"), true),
            (builtin("grep"), true),
            (
                entry(
                    "mcp__f__remove",
                    Some("f"),
                    Some(r#"{"destructiveHint":true}"#),
                ),
                false,
            ),
            (
                entry(
                    "mcp__f__odd",
                    Some("f"),
                    Some(r#"{"destructiveHint":true,"readOnlyHint":true}"#),
                ),
                true,
            ),
            (
                entry("mcp__f__echo", Some("f"), Some(r#"{"readOnlyHint":true}"#)),
                true,
            ),
            (
                entry(
                    "mcp__f__nd",
                    Some("f"),
                    Some(r#"{"destructiveHint":false}"#),
                ),
                false,
            ),
            (entry("mcp__f__plain", Some("f"), None), false),
            (entry("mcp__f__bad", Some("f"), Some("[1]")), false),
        ];
        let mut offer = ToolOffer::default();
        offer.definitions(Arc::new(cases.iter().map(|(e, _)| e.clone()).collect()));
        for (e, want) in &cases {
            assert_eq!(
                offer.facts.get(&e.name).map(|f| f.1),
                Some(*want),
                "{}",
                e.name
            );
            assert_eq!(offer.facts[&e.name].0, e.server, "{}", e.name);
        }
    }

    #[test]
    fn bad_arguments_name_the_tool_the_problem_and_the_text() {
        assert_eq!(
            bad_arguments("edit", "{\"a\": tru}", false),
            "the arguments of tool \"edit\" are not valid JSON (expected ident at line 1 column 10): {\"a\": tru}; send the call again with a complete JSON object"
        );
        let cut = bad_arguments(
            "write_file",
            &format!("{{\"content\": \"{}", "x".repeat(300)),
            true,
        );
        assert!(
            cut.starts_with("the arguments of tool \"write_file\" are not valid JSON (EOF while parsing a string at line 1 column 313): {\"content\": \"xxx"),
            "{cut}"
        );
        assert!(
            cut.ends_with("xxx...; the reply was cut off at max_tokens, so they are incomplete; send the call again with a complete JSON object, and if its content is long, split the work over several smaller calls"),
            "{cut}"
        );
        assert_eq!(
            bad_arguments("ls", "[1]", false),
            "the arguments of tool \"ls\" are an array, not a JSON object: [1]; send the call again with a complete JSON object"
        );
    }
}
