//! The agent engine: the `Engine` actor holds the conversation and runs turns. A turn calls the
//! model with every registered tool, runs the reply's tool calls in parallel through the
//! registry (each under its server's `toolTimeoutSec`), feeds the results back (errors marked as
//! errors), and repeats until the model answers or `max_steps` is reached. A call whose
//! arguments are not a JSON object (cut off at `max_tokens`, or broken JSON) is not run: it gets
//! an error result saying so, and the model can send it again. MCP tools are ordinary tools
//! here: the engine has no MCP special case.
//!
//! ```text
//! RunTurn --> Engine --Provider::complete--> model (streaming; TextDelta events)
//!               |  tool calls, all at once
//!               +--CallTool--> ToolRegistry --> McpServer / Builtins
//!               +--TurnEvent--> the turn's one ordered stream (TUI, headless printer):
//!                                   text, tool calls, progress, results, questions, outcome last
//! ```

pub mod compact;
pub mod output;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::future::join_all;
use harness9_actors::messages::{CallTool, GetInstructions, ListTools, ProgressSink, ToolEntry};
use harness9_actors::ToolRegistry;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::model::{
    arguments_problem, truncate_chars, Block, Message, ModelError, ModelRequest, Provider,
    ResultPart, Role, StopReason, StreamEvent, ToolDef, Usage,
};

/// The system prompt.
pub const SYSTEM_PROMPT: &str = "You are harness9, a terminal coding agent. Use the tools to inspect and change the user's project; tool names of the form mcp__{server}__{tool} come from MCP servers. Call several tools at once when they do not depend on each other. When a tool result says it was cut, read the saved file in parts. Answer concisely.";

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Model calls per turn.
    pub max_steps: u32,
    /// A tool result over this many (estimated) tokens is cut for the model.
    pub output_budget_tokens: usize,
    /// Where whole cut results are written.
    pub spill_dir: PathBuf,
    /// The system prompt.
    pub system: Option<String>,
    /// The model's context window in tokens, when known (settings `[context_windows]`).
    pub context_window: Option<u64>,
    /// Compact before a turn once the last request used this share of the window (0: never).
    pub compact_at: f64,
}

/// The most of a project's instructions file that goes into the system prompt.
const MAX_INSTRUCTIONS: usize = 32 * 1024;

impl EngineConfig {
    /// `max_steps` model calls a turn, a budget of `output_budget_tokens`, spills under the
    /// temp dir's `harness9-results`, and the built-in system prompt.
    pub fn new(max_steps: u32, output_budget_tokens: usize) -> Self {
        Self {
            max_steps,
            output_budget_tokens,
            spill_dir: std::env::temp_dir().join("harness9-results"),
            system: Some(SYSTEM_PROMPT.to_owned()),
            context_window: None,
            compact_at: 0.8,
        }
    }

    /// The built-in system prompt plus where the agent runs: the working directory, the
    /// platform, today's date, and the project's instructions (`AGENTS.md`, else `CLAUDE.md`,
    /// in `cwd`; at most 32 KiB). Built once, so it stays the same all session (a stable
    /// prompt-cache prefix).
    pub fn with_environment(mut self, cwd: &Path) -> Self {
        let today = crate::app::trace_file::rfc3339(std::time::SystemTime::now());
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
        let text = crate::sanitize::clean_text(text);
        let text = text.trim();
        let mut end = text.len().min(MAX_SERVER_INSTRUCTIONS);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        s.push_str(&format!(
            "\n\n## server {}\n{}",
            crate::sanitize::clean_line(server),
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
        /// The full text of the result (or the error).
        output: String,
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
    /// A tool that changes things waits for the user's yes.
    Ask(Question),
    /// How the turn ended; nothing follows it.
    Done(Result<TurnOutcome, EngineError>),
}

/// May this tool call run? A front end asks the user and answers on `answer`; `false`, or a
/// dropped `answer` (the asker is gone), declines it, and the model gets an error result saying
/// so.
#[derive(Debug)]
pub struct Question {
    /// The model's call id.
    pub id: String,
    /// The registered tool name.
    pub name: String,
    /// The call's arguments.
    pub arguments: Value,
    /// Takes the user's answer.
    pub answer: oneshot::Sender<bool>,
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
    /// The turn's stream (see [`turn_stream`]).
    pub events: mpsc::Sender<TurnEvent>,
    /// Whether a call of a tool that changes things (annotated `destructiveHint: true`, as the
    /// built-in bash and write_file are) waits for a [`TurnEvent::Ask`] answer; `false` runs
    /// every call without asking (headless `run -p`, `--yes`).
    pub ask_first: bool,
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

/// The engine actor.
pub struct Engine {
    provider: Provider,
    registry: Addr<ToolRegistry>,
    config: Arc<EngineConfig>,
    conversation: Vec<Message>,
    running: Option<CancellationToken>,
    tool_cache: ToolCache,
    /// Where finished turns are saved (`None`: not saved).
    log: Option<crate::app::sessions::SessionFile>,
    /// Input tokens of the last model request (the context in use).
    last_input: u64,
}

/// Tool definitions, rebuilt only when the registry's table changes.
#[derive(Clone, Default)]
struct ToolCache {
    source: Option<Arc<Vec<ToolEntry>>>,
    defs: Arc<Vec<ToolDef>>,
    /// The tools that run only after the user's yes (when the turn has an approver).
    ask: Arc<std::collections::HashSet<String>>,
    /// Tools the user turned off for this session: not offered, and refused if called.
    disabled: Arc<std::collections::BTreeSet<String>>,
}

/// Whether a tool asks first: one annotated `destructiveHint: true` (and not
/// `readOnlyHint: true`), a built-in (bash, write_file) or an MCP server's. Unannotated tools do
/// not ask: the spec's default (destructive) would ask for every call of most servers.
fn asks_first(e: &ToolEntry) -> bool {
    let Some(raw) = &e.tool.annotations else {
        return false;
    };
    let hints: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
    hints.get("destructiveHint") == Some(&Value::Bool(true))
        && hints.get("readOnlyHint") != Some(&Value::Bool(true))
}

impl ToolCache {
    fn get(&mut self, table: Arc<Vec<ToolEntry>>) -> Arc<Vec<ToolDef>> {
        if self.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, &table)) {
            return self.defs.clone();
        }
        self.ask = Arc::new(
            table
                .iter()
                .filter(|e| asks_first(e))
                .map(|e| e.name.clone())
                .collect(),
        );
        let defs: Vec<ToolDef> = table
            .iter()
            .filter(|e| !self.disabled.contains(&e.name))
            .filter_map(|e| {
                // A schema that is not a JSON object would make the provider reject every
                // request: such a tool is left out of the model's table.
                let input_schema = match schema_object(e.tool.input_schema.get()) {
                    Ok(s) => s,
                    Err(why) => {
                        tracing::warn!(target: "engine", tool = %e.name, "tool not offered to the model: its inputSchema {why}");
                        return None;
                    }
                };
                Some(ToolDef {
                    name: e.name.clone(),
                    description: e
                        .tool
                        .description
                        .clone()
                        .or_else(|| e.tool.title.clone())
                        .unwrap_or_default(),
                    input_schema,
                })
            })
            .collect();
        self.source = Some(table);
        self.defs = Arc::new(defs);
        self.defs.clone()
    }
}

/// A tool's `inputSchema` as a JSON object, or why it is not one.
pub fn schema_object(raw: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "is not a JSON object (it is {})",
            match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::String(_) => "a string",
                _ => "an array",
            }
        )),
        Err(e) if e.to_string().contains("recursion limit") => {
            Err("is nested too deeply to parse (over 128 levels)".to_owned())
        }
        Err(e) => Err(format!("cannot be parsed: {e}")),
    }
}

impl Engine {
    /// An engine for `provider` calling tools through `registry`.
    pub fn new(provider: Provider, registry: Addr<ToolRegistry>, config: EngineConfig) -> Self {
        Self {
            provider,
            registry,
            config: Arc::new(config),
            conversation: Vec::new(),
            running: None,
            tool_cache: ToolCache::default(),
            log: None,
            last_input: 0,
        }
    }

    /// Saves every finished turn to `log`, continuing `conversation` (a resumed session's, or
    /// empty for a new one).
    pub fn saving(
        mut self,
        log: crate::app::sessions::SessionFile,
        conversation: Vec<Message>,
    ) -> Self {
        self.log = Some(log);
        self.conversation = conversation;
        self
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

/// Sends one update on the turn's stream (waiting while it is full: the front end reads
/// it), unless the turn is cancelled meanwhile; a front end that is gone is ignored.
async fn emit(events: &mpsc::Sender<TurnEvent>, cancel: &CancellationToken, e: EngineEvent) {
    tokio::select! {
        biased;
        _ = events.send(TurnEvent::Update(e)) => {}
        () = cancel.cancelled() => {}
    }
}

/// The error result of a call whose arguments [`tool_input`](crate::agent::model::tool_input) kept
/// raw; `cut` when the reply ended at `max_tokens` inside this call.
fn bad_arguments(name: &str, raw: &str, cut: bool) -> String {
    let mut s = format!(
        "the arguments of tool \"{name}\" are {}: {}; ",
        arguments_problem(raw),
        truncate_chars(raw, 200)
    );
    if cut {
        s.push_str("the reply was cut off at max_tokens, so they are incomplete; ");
        s.push_str(SEND_AGAIN_SMALLER);
    } else {
        s.push_str("send the call again with a complete JSON object");
    }
    s
}

/// What the model is told to do about a call the reply was cut off in.
const SEND_AGAIN_SMALLER: &str = "send the call again with a complete JSON object, and if its content is long, split the work over several smaller calls";

/// Why a call is answered with an error instead of running, if it is: arguments that are not
/// a JSON object, a call the reply was cut off in (even when its arguments parse: `{}` before
/// any piece arrived), or the user's no to a tool that asks first (no answer, or the turn
/// cancelled while asking, is a no).
async fn refusal(
    ctx: &CallCtx,
    id: &str,
    name: &str,
    input: &Value,
    cut: bool,
    cancel: &CancellationToken,
) -> Option<String> {
    if let Value::String(raw) = input {
        return Some(bad_arguments(name, raw, cut));
    }
    if ctx.disabled.contains(name) {
        return Some(format!(
            "tool \"{name}\" is turned off for this session by the user; do without it"
        ));
    }
    if cut {
        return Some(format!(
            "the call of tool \"{name}\" was cut off at max_tokens before its arguments were complete; {SEND_AGAIN_SMALLER}"
        ));
    }
    if !(ctx.ask_first && ctx.ask.contains(name)) {
        return None;
    }
    let (answer, rx) = oneshot::channel();
    let question = TurnEvent::Ask(Question {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: input.clone(),
        answer,
    });
    let yes = tokio::select! {
        answer = async {
            ctx.events.send(question).await.is_ok() && rx.await.unwrap_or(false)
        } => answer,
        () = cancel.cancelled() => false,
    };
    (!yes).then(|| format!(
        "the user declined this call of \"{name}\"; do not run it again unasked: say what you wanted to do, or find another way"
    ))
}

/// Runs one tool call through the registry and turns its outcome into a tool-result block. A
/// call with a [`refusal`] is not run: it gets an error result, with the same events as any
/// call.
async fn run_tool(
    ctx: CallCtx,
    call: (String, String, Value),
    cut: bool,
    cancel: CancellationToken,
) -> Block {
    let (id, name, input) = call;
    emit(
        &ctx.events,
        &cancel,
        EngineEvent::ToolStarted {
            id: id.clone(),
            name: name.clone(),
            arguments: input.clone(),
        },
    )
    .await;
    let refused = refusal(&ctx, &id, &name, &input, cut, &cancel).await;
    // The call's time starts after the user's answer: it measures the tool, not the user.
    let started = Instant::now();
    let outcome = match refused {
        Some(why) => Err(why),
        None => {
            let mut msg = CallTool::new(name.clone(), Some(input));
            // A child: the callee may cancel its token when it is done (to stop what it
            // started), which must not cut this call's own events.
            msg.cancel = cancel.child_token();
            msg.progress = Some(progress_sink(&ctx.events, &id));
            // The server hands each progress notice to the stream before it resolves the
            // call, so ToolFinished, sent after this returns, follows all of them.
            ToolRegistry::send(&ctx.registry, msg)
                .await
                .map_err(|e| e.to_string())
        }
    };
    let elapsed = started.elapsed();
    let (parts, text, is_error) = match outcome {
        Ok(r) => {
            let (parts, text) = output::from_result(&r);
            (parts, text, r.is_error)
        }
        Err(text) => (vec![ResultPart::Text(text.clone())], text, true),
    };
    let (parts, spilled) = output::apply_budget(
        parts,
        &text,
        ctx.config.output_budget_tokens,
        &ctx.config.spill_dir,
        &name,
    );
    emit(
        &ctx.events,
        &cancel,
        EngineEvent::ToolFinished {
            id: id.clone(),
            name,
            is_error,
            elapsed,
            output: text,
            spilled,
        },
    )
    .await;
    Block::ToolResult {
        id,
        content: parts,
        is_error,
    }
}

/// Puts one call's progress notices on the turn's stream as [`EngineEvent::ToolProgress`].
/// Called by the server actor, which must not wait: a notice that finds the stream full is
/// dropped (progress is a hint; the result is never dropped).
fn progress_sink(events: &mpsc::Sender<TurnEvent>, id: &str) -> ProgressSink {
    let events = events.clone();
    let id = id.to_owned();
    ProgressSink::new(move |p| {
        let e = EngineEvent::ToolProgress {
            id: id.clone(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        };
        if events.try_send(TurnEvent::Update(e)).is_err() {
            tracing::debug!(target: "engine", call = %id, "progress dropped: the turn stream is full");
        }
    })
}

/// What each tool call of a turn runs with.
#[derive(Clone)]
struct CallCtx {
    registry: Addr<ToolRegistry>,
    config: Arc<EngineConfig>,
    events: mpsc::Sender<TurnEvent>,
    /// Whether calls of the tools in `ask` wait for the user's yes.
    ask_first: bool,
    ask: Arc<std::collections::HashSet<String>>,
    disabled: Arc<std::collections::BTreeSet<String>>,
}

/// What one turn runs with; the conversation and tool cache go back to the actor at its end.
struct Turn {
    provider: Provider,
    registry: Addr<ToolRegistry>,
    config: Arc<EngineConfig>,
    cache: ToolCache,
    messages: Vec<Message>,
    cancel: CancellationToken,
    events: mpsc::Sender<TurnEvent>,
    ask_first: bool,
    /// Input tokens of the conversation's last request.
    last_input: u64,
}

/// How a turn ended, for the actor.
struct TurnEnd {
    messages: Vec<Message>,
    cache: ToolCache,
    result: Result<TurnOutcome, EngineError>,
    last_input: u64,
    /// The conversation before the turn was compacted (the log is rewritten whole).
    compacted: bool,
}

/// Replaces `messages[..upto]` with a summary; returns what it did and the new `upto`.
async fn compact_prefix(
    provider: &Provider,
    config: &Arc<EngineConfig>,
    messages: &mut Vec<Message>,
    upto: usize,
    cancel: &CancellationToken,
) -> Result<compact::Compacted, ModelError> {
    let tokens_before = compact::estimate_tokens(messages);
    let summary = compact::summarize(provider, config, &messages[..upto], None, cancel).await?;
    let replaced = upto;
    messages.splice(..upto, summary);
    Ok(compact::Compacted {
        replaced,
        tokens_before,
        tokens_after: compact::estimate_tokens(messages),
    })
}

async fn turn(t: Turn, prompt: String) -> TurnEnd {
    let Turn {
        provider,
        registry,
        config,
        mut cache,
        mut messages,
        cancel,
        events,
        ask_first,
        mut last_input,
    } = t;
    let started = Instant::now();
    let mut compacted = false;
    // Near the end of the window: the earlier turns become a summary first.
    let full = config.context_window.is_some_and(|w| {
        config.compact_at > 0.0 && last_input as f64 >= config.compact_at * w as f64
    });
    if full && messages.len() > 2 {
        let upto = messages.len();
        match compact_prefix(&provider, &config, &mut messages, upto, &cancel).await {
            Ok(c) => {
                compacted = true;
                let reason = format!(
                    "the last request used {last_input} of {} tokens",
                    config.context_window.unwrap_or(0)
                );
                emit(
                    &events,
                    &cancel,
                    EngineEvent::Compacted {
                        reason,
                        compacted: c,
                    },
                )
                .await;
            }
            Err(e) => tracing::warn!("automatic compaction failed: {e}"),
        }
    }
    let mut before = messages.len();
    messages.push(Message {
        role: Role::User,
        content: vec![Block::Text(prompt)],
    });
    let mut usage = Usage::default();
    let mut overflow_retried = false;
    let end = |messages, cache, result, last_input, compacted| TurnEnd {
        messages,
        cache,
        result,
        last_input,
        compacted,
    };
    let mut step = 0;
    while step < config.max_steps {
        step += 1;
        let table = match registry.send(ListTools).await {
            Ok(t) => t,
            Err(_) => Arc::new(Vec::new()),
        };
        let instructions = registry.send(GetInstructions).await.unwrap_or_default();
        let req = ModelRequest {
            system: system_with_servers(config.system.as_deref(), &instructions),
            messages: messages.clone(),
            tools: cache.get(table),
            max_tokens: 0,
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let forward = {
            let events = events.clone();
            let cancel = cancel.clone();
            actix_rt::spawn(async move {
                while let Some(e) = rx.recv().await {
                    let e = match e {
                        StreamEvent::TextDelta(t) => EngineEvent::TextDelta(t),
                        StreamEvent::Retrying {
                            attempt,
                            after,
                            reason,
                        } => EngineEvent::ModelRetrying {
                            attempt,
                            after,
                            reason,
                        },
                        _ => continue,
                    };
                    emit(&events, &cancel, e).await;
                }
            })
        };
        let call_started = Instant::now();
        let reply = provider.complete(&req, &tx, &cancel).await;
        drop(tx);
        let _ = forward.await;
        let reply = match reply {
            Ok(r) => r,
            Err(ModelError::Cancelled) => {
                messages.truncate(before);
                return end(
                    messages,
                    cache,
                    Err(EngineError::Cancelled),
                    last_input,
                    compacted,
                );
            }
            Err(e) => {
                if compact::is_context_overflow(&e) && !overflow_retried && before > 2 {
                    // Too long for the model: the earlier turns become a summary, and the
                    // step runs again (once).
                    overflow_retried = true;
                    match compact_prefix(&provider, &config, &mut messages, before, &cancel).await {
                        Ok(c) => {
                            compacted = true;
                            before = 2;
                            let reason = format!("the model refused the request: {e}");
                            let ev = EngineEvent::Compacted {
                                reason,
                                compacted: c,
                            };
                            emit(&events, &cancel, ev).await;
                            step -= 1;
                            continue;
                        }
                        Err(ce) => {
                            tracing::warn!("compaction after a context overflow failed: {ce}")
                        }
                    }
                }
                messages.truncate(before);
                return end(
                    messages,
                    cache,
                    Err(EngineError::Model(e)),
                    last_input,
                    compacted,
                );
            }
        };
        last_input = reply.usage.input_tokens;
        usage.input_tokens += reply.usage.input_tokens;
        usage.output_tokens += reply.usage.output_tokens;
        usage.cached_input_tokens += reply.usage.cached_input_tokens;
        let text = reply.text();
        let calls: Vec<(String, String, Value)> = reply
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input } => {
                    Some((id.clone(), name.clone(), input.clone()))
                }
                _ => None,
            })
            .collect();
        // Cut off at max_tokens with a call last: that call's arguments may be incomplete.
        let cut_id = match (&reply.stop_reason, reply.content.last()) {
            (StopReason::MaxTokens, Some(Block::ToolUse { id, .. })) => Some(id.clone()),
            _ => None,
        };
        emit(
            &events,
            &cancel,
            EngineEvent::ModelDone {
                step,
                text: text.clone(),
                tool_calls: calls.len(),
                elapsed: call_started.elapsed(),
                usage: reply.usage,
            },
        )
        .await;
        messages.push(Message {
            role: Role::Assistant,
            content: reply.content,
        });
        if calls.is_empty() {
            let outcome = TurnOutcome {
                text,
                steps: step,
                usage,
                elapsed: started.elapsed(),
            };
            return end(messages, cache, Ok(outcome), last_input, compacted);
        }
        // Every call of this reply at once; each has its own child token of the turn's.
        let ctx = CallCtx {
            registry: registry.clone(),
            config: config.clone(),
            events: events.clone(),
            ask_first,
            ask: cache.ask.clone(),
            disabled: cache.disabled.clone(),
        };
        let results = join_all(calls.into_iter().map(|call| {
            let cut = cut_id.as_ref() == Some(&call.0);
            run_tool(ctx.clone(), call, cut, cancel.child_token())
        }))
        .await;
        if cancel.is_cancelled() {
            messages.truncate(before);
            return end(
                messages,
                cache,
                Err(EngineError::Cancelled),
                last_input,
                compacted,
            );
        }
        messages.push(Message {
            role: Role::User,
            content: results,
        });
    }
    messages.truncate(before);
    end(
        messages,
        cache,
        Err(EngineError::MaxSteps(config.max_steps)),
        last_input,
        compacted,
    )
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
                cache: std::mem::take(&mut self.tool_cache),
                messages: std::mem::take(&mut self.conversation),
                cancel,
                events: events.clone(),
                ask_first: msg.ask_first,
                last_input: self.last_input,
            },
            msg.prompt,
        );
        Box::pin(fut.into_actor(self).then(move |end, act, _| {
            let TurnEnd {
                messages,
                cache,
                result,
                last_input,
                compacted,
            } = end;
            act.last_input = last_input;
            if compacted {
                act.conversation = messages;
                act.save_whole("compact");
            } else {
                if result.is_ok() {
                    act.save(messages.get(saved..).unwrap_or_default());
                }
                act.conversation = messages;
            }
            act.tool_cache = cache;
            act.running = None;
            // The outcome goes on the same stream, behind every event of the turn.
            async move {
                let _ = events.send(TurnEvent::Done(result)).await;
            }
            .into_actor(act)
        }))
    }
}

impl Handler<ClearConversation> for Engine {
    type Result = ();

    fn handle(&mut self, _msg: ClearConversation, _ctx: &mut Context<Self>) {
        if self.running.is_none() {
            self.conversation.clear();
            if let Some(log) = &mut self.log {
                if let Err(e) = log.replace("clear", &[]) {
                    tracing::warn!("{e}");
                }
            }
        }
    }
}

/// Replace the conversation with a summary the model writes (`/compact [focus]`). Refused while
/// a turn runs; [`CancelTurn`] cancels it. The conversation is unchanged when it fails.
#[derive(Debug, Message)]
#[rtype(result = "Result<compact::Compacted, String>")]
pub struct Compact {
    /// What the summary should keep above all.
    pub focus: Option<String>,
}

impl Handler<Compact> for Engine {
    type Result = ResponseActFuture<Self, Result<compact::Compacted, String>>;

    fn handle(&mut self, msg: Compact, _ctx: &mut Context<Self>) -> Self::Result {
        if self.running.is_some() {
            return Box::pin(actix::fut::ready(Err(
                "a turn is running; press Esc to cancel it, then /compact".to_owned(),
            )));
        }
        if self.conversation.len() < 3 {
            return Box::pin(actix::fut::ready(Err("nothing to compact yet".to_owned())));
        }
        let cancel = CancellationToken::new();
        self.running = Some(cancel.clone());
        let messages = std::mem::take(&mut self.conversation);
        let (provider, config) = (self.provider.clone(), self.config.clone());
        let fut = async move {
            let tokens_before = compact::estimate_tokens(&messages);
            let summary =
                compact::summarize(&provider, &config, &messages, msg.focus.as_deref(), &cancel)
                    .await;
            (messages, summary, tokens_before)
        };
        Box::pin(
            fut.into_actor(self)
                .map(|(messages, summary, tokens_before), act, _| {
                    act.running = None;
                    match summary {
                        Ok(new) => {
                            let replaced = messages.len();
                            act.conversation = new;
                            act.save_whole("compact");
                            let tokens_after = compact::estimate_tokens(&act.conversation);
                            act.last_input = tokens_after as u64;
                            Ok(compact::Compacted {
                                replaced,
                                tokens_before,
                                tokens_after,
                            })
                        }
                        Err(e) => {
                            act.conversation = messages;
                            Err(format!("compaction failed: {e}"))
                        }
                    }
                }),
        )
    }
}

/// Use this provider (and model) from the next turn on (`/model`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetProvider(pub crate::agent::model::ProviderConfig);

impl Handler<SetProvider> for Engine {
    type Result = ();

    fn handle(&mut self, msg: SetProvider, _ctx: &mut Context<Self>) {
        self.provider = Provider::new(msg.0);
    }
}

/// The tools turned off for the rest of the session (`/tools off NAME`): the whole set.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct DisableTools(pub std::collections::BTreeSet<String>);

impl Handler<DisableTools> for Engine {
    type Result = ();

    fn handle(&mut self, msg: DisableTools, _ctx: &mut Context<Self>) {
        // A fresh cache: the next turn's definitions leave the disabled tools out.
        self.tool_cache = ToolCache {
            disabled: Arc::new(msg.0),
            ..ToolCache::default()
        };
    }
}

/// Continue a saved conversation (`/resume ID`): it replaces the current one, and later turns
/// are saved to its file. Refused (`false`) while a turn runs.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct ResumeConversation(pub crate::app::sessions::Opened);

impl Handler<ResumeConversation> for Engine {
    type Result = bool;

    fn handle(&mut self, msg: ResumeConversation, _ctx: &mut Context<Self>) -> bool {
        if self.running.is_some() {
            return false;
        }
        self.conversation = msg.0.messages;
        self.log = Some(msg.0.file);
        true
    }
}

impl Handler<CancelTurn> for Engine {
    type Result = ();

    fn handle(&mut self, _msg: CancelTurn, _ctx: &mut Context<Self>) {
        if let Some(c) = &self.running {
            c.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_that_change_things_and_destructive_mcp_tools_ask_first() {
        let entry = |name: &str, server: Option<&str>, hints: Option<&str>| ToolEntry {
            name: name.into(),
            server: server.map(Into::into),
            tool: Arc::new(harness9_actors::protocol::types::Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: serde_json::value::to_raw_value(&serde_json::json!({}))
                    .expect("schema"),
                output_schema: None,
                annotations: hints
                    .map(|h| serde_json::value::RawValue::from_string(h.into()).expect("json")),
            }),
        };
        // The built-ins as registered: their own annotations decide.
        let builtin = |name: &str| {
            let tool = crate::agent::builtins::definitions()
                .into_iter()
                .find(|t| t.name == name)
                .expect("a built-in");
            ToolEntry {
                name: name.into(),
                server: None,
                tool: Arc::new(tool),
            }
        };
        let cases = [
            (builtin("bash"), true),
            (builtin("write_file"), true),
            (builtin("read_file"), false),
            (builtin("list_dir"), false),
            (builtin("grep"), false),
            (
                entry(
                    "mcp__f__remove",
                    Some("f"),
                    Some(r#"{"destructiveHint":true}"#),
                ),
                true,
            ),
            (
                entry(
                    "mcp__f__odd",
                    Some("f"),
                    Some(r#"{"destructiveHint":true,"readOnlyHint":true}"#),
                ),
                false,
            ),
            (
                entry("mcp__f__echo", Some("f"), Some(r#"{"readOnlyHint":true}"#)),
                false,
            ),
            (entry("mcp__f__plain", Some("f"), None), false),
            (entry("mcp__f__bad", Some("f"), Some("[1]")), false),
        ];
        for (e, want) in &cases {
            assert_eq!(asks_first(e), *want, "{}", e.name);
        }
        let mut cache = ToolCache::default();
        cache.get(Arc::new(cases.iter().map(|(e, _)| e.clone()).collect()));
        let mut ask: Vec<&String> = cache.ask.iter().collect();
        ask.sort();
        assert_eq!(ask, ["bash", "mcp__f__remove", "write_file"]);
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
