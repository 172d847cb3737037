//! The tool table the model is offered (rebuilt only when the registry's table or the
//! session's disabled tools change) and each tool call of a turn: refusals, the user's yes,
//! the call through the registry, its progress and result on the turn's stream.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use harness9_actors::messages::{CallTool, ProgressSink, ToolEntry};
use harness9_actors::ToolRegistry;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{
    output, system_with_servers, Answer, EngineConfig, EngineEvent, PermissionQuestion, TurnEvent,
};
use crate::model::{arguments_problem, truncate_chars, Block, ResultPart, ToolDef};
use crate::permissions::{Action, Decision, Policy, Reason, Rule, Source, ToolFacts, Verdict};
use harness9_actors::error::CallError;
use harness9_actors::protocol::types::{CallToolResult, ContentBlock};

/// The connected servers' `instructions` by server name, as the registry shares them.
pub(super) type Instructions = Arc<Vec<(String, Arc<str>)>>;

/// What the model is offered, kept between steps and turns: the tool definitions, rebuilt only
/// when the registry's table changes, and the system prompt with the servers' instructions,
/// rebuilt only when those change (not the tool-list cache of `app/tool_cache.rs`, which keeps
/// servers' listings on disk).
#[derive(Clone, Default)]
pub(super) struct ToolOffer {
    pub(super) source: Option<Arc<Vec<ToolEntry>>>,
    pub(super) defs: Arc<Vec<ToolDef>>,
    /// What the permissions know of each tool: its server and whether it is read-only.
    pub(super) facts: Arc<Facts>,
    /// Tools the user turned off for this session: not offered, and refused if called.
    pub(super) disabled: Arc<std::collections::BTreeSet<String>>,
    /// The instructions the system prompt below was built with.
    pub(super) instructions: Option<Instructions>,
    pub(super) system: Option<String>,
    /// Tool search: what is deferred, found, offered (`deferred.rs`).
    pub(super) deferral: super::deferred::Deferral,
}

/// Each registered tool's server and whether it says it is read-only (`readOnlyHint: true`).
pub(super) type Facts = std::collections::HashMap<Arc<str>, (Option<Arc<str>>, bool)>;

/// The facts of a tool table for [`crate::permissions::decide`].
pub(super) fn facts_of(table: &[ToolEntry]) -> Facts {
    table
        .iter()
        .map(|e| {
            let annotations = e.tool.annotations.as_ref().map(|a| a.get());
            let f = ToolFacts::of(&e.name, e.server.as_deref(), annotations);
            (e.name.clone(), (e.server.clone(), f.read_only))
        })
        .collect()
}

impl ToolOffer {
    /// The system prompt with the servers' `instructions` (see [`system_with_servers`]),
    /// built again only when the registry hands out another list.
    pub(super) fn system(
        &mut self,
        base: Option<&str>,
        instructions: Instructions,
    ) -> Option<String> {
        if !self
            .instructions
            .as_ref()
            .is_some_and(|i| Arc::ptr_eq(i, &instructions))
        {
            self.system = system_with_servers(base, &instructions);
            self.instructions = Some(instructions);
        }
        self.system.clone()
    }

    /// The definitions of `table`'s tools the model is offered (the disabled and those whose
    /// schema is not an object left out), built again only for another table.
    pub(super) fn definitions(&mut self, table: Arc<Vec<ToolEntry>>) -> Arc<Vec<ToolDef>> {
        if self.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, &table)) {
            return self.defs.clone();
        }
        self.facts = Arc::new(facts_of(&table));
        let defs: Vec<ToolDef> = table
            .iter()
            .filter(|e| !self.disabled.contains(&*e.name))
            .filter_map(|e| {
                let def = crate::toolsearch::entry_def(e);
                if def.is_none() {
                    // A schema that is not a JSON object would make the provider reject every
                    // request: such a tool is left out of the model's table.
                    let why = schema_object(e.tool.input_schema.get())
                        .err()
                        .unwrap_or_default();
                    tracing::warn!(target: "engine", tool = %e.name, "tool not offered to the model: its inputSchema {why}");
                }
                def
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

/// Sends one update on the turn's stream (waiting while it is full: the front end reads
/// it), unless the turn is cancelled meanwhile; a front end that is gone is ignored.
pub(super) async fn emit(
    events: &mpsc::Sender<TurnEvent>,
    cancel: &CancellationToken,
    e: EngineEvent,
) {
    tokio::select! {
        biased;
        _ = events.send(TurnEvent::Update(e)) => {}
        () = cancel.cancelled() => {}
    }
}

/// The error result of a call whose arguments [`tool_input`](crate::model::tool_input) kept
/// raw; `cut` when the reply ended at `max_tokens` inside this call.
pub(super) fn bad_arguments(name: &str, raw: &str, cut: bool) -> String {
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

/// The error result of a call of a tool no server and no built-in has, written for the model
/// (the command line's hint, `harness9 mcp list`, is for a person): what to call instead, the
/// nearest name there is, and `tool_search` while tools are deferred.
pub(super) fn unknown_tool(ctx: &CallCtx, name: &str) -> String {
    let usable = ctx
        .facts
        .keys()
        .map(|n| &**n)
        .filter(|n| !ctx.disabled.contains(*n));
    unknown_tool_text(name, usable, ctx.search.is_some())
}

/// [`unknown_tool`] over the tools there are (`names`), `deferring` while tool search is on.
fn unknown_tool_text<'a>(
    name: &str,
    names: impl Iterator<Item = &'a str>,
    deferring: bool,
) -> String {
    let nearest = nearest_name(name, names)
        .map(|n| format!(" (the nearest name is \"{n}\")"))
        .unwrap_or_default();
    let what = if deferring {
        format!(
            "call {} with what you want to do to find the tool and its exact name",
            crate::toolsearch::TOOL_SEARCH
        )
    } else {
        "call only the tools in your tool list, by their exact names".to_owned()
    };
    format!("there is no tool \"{name}\"{nearest}; {what}")
}

/// The name of `names` nearest to `name` when it is close enough to be a slip (an edit
/// distance of at most a third of its length, and at least 1 allowed).
fn nearest_name<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let typed: Vec<char> = name.chars().collect();
    let limit = (typed.len() / 3).max(1);
    names
        .map(|n| {
            let chars: Vec<char> = n.chars().collect();
            (harness9_base::text::edit_distance(&typed, &chars), n)
        })
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, n)| n)
}

/// What the model is told to do about a call the reply was cut off in.
pub(super) const SEND_AGAIN_SMALLER: &str = "send the call again with a complete JSON object, and if its content is long, split the work over several smaller calls";

/// Why a call is answered with an error instead of running, if it is: arguments that are not
/// a JSON object, a call the reply was cut off in (even when its arguments parse: `{}` before
/// any piece arrived), or the permissions ([`crate::permissions::decide`]): a refusal,
/// or the user's no when it asks (no answer, or the turn cancelled while asking, is a no). A
/// permission refusal is also put on the stream as [`EngineEvent::ToolRefused`].
pub(super) async fn refusal(
    ctx: &CallCtx,
    id: &str,
    name: &str,
    input: &Value,
    cut: bool,
    cancel: &CancellationToken,
) -> Option<String> {
    if let Some(why) = unusable(ctx, name, input, cut) {
        return Some(why);
    }
    let (server, read_only) = match facts(ctx, name).await {
        Ok(f) => f,
        Err(why) => return Some(why),
    };
    let facts = ToolFacts {
        name,
        server: server.as_deref(),
        read_only,
    };
    let policy = &ctx.config.policy;
    // As of the reply's arrival: an "always" answer to another call of the same reply, given
    // while this one waited its turn, does not run this one unseen.
    let mut verdict = policy.decide_as_of(facts, input, ctx.rules_as_of);
    if !ctx.can_ask {
        verdict = verdict.headless();
    }
    let call = Judged {
        ctx,
        id,
        name,
        server,
        verdict,
        cancel,
    };
    match call.verdict.action {
        Action::Run => None,
        Action::Refuse => Some(call.refuse().await),
        Action::Ask => call.ask(input).await,
    }
}

/// Why a call cannot run whatever the permissions say: arguments that are not a JSON object,
/// a tool the user turned off, a call the reply was cut off in.
fn unusable(ctx: &CallCtx, name: &str, input: &Value, cut: bool) -> Option<String> {
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
    None
}

/// What the permissions know of tool `name`: its server and whether it is read-only. A tool
/// not in the table (gone since the model saw it) is judged as an unannotated one; the
/// registry then says it is unknown. `Err`: the call's error result (no such tool).
async fn facts(ctx: &CallCtx, name: &str) -> Result<(Option<Arc<str>>, bool), String> {
    if super::deferred::is_search(ctx, name) {
        // The engine's own search over the tool table: it reads only.
        return Ok((None, true));
    }
    if let Some(f) = ctx.facts.get(name) {
        return Ok(f.clone());
    }
    // Not in the table this step was offered: look it up now. A tool that appeared since
    // is judged by its own facts; one that is absent gets the registry's reason (it
    // vanished, its server is down, no server has it) and never reaches a server.
    let lookup = harness9_actors::messages::LookupTool {
        name: name.to_owned(),
    };
    match ctx.registry.send(lookup).await {
        Ok(Ok(entry)) => {
            let f = ToolFacts::of(
                &entry.name,
                entry.server.as_deref(),
                entry.tool.annotations.as_ref().map(|a| a.get()),
            );
            Ok((entry.server.clone(), f.read_only))
        }
        Ok(Err(CallError::UnknownTool { .. })) => Err(unknown_tool(ctx, name)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the tool registry stopped".to_owned()),
    }
}

/// A call the permissions judged, that is refused or asked about.
struct Judged<'a> {
    ctx: &'a CallCtx,
    id: &'a str,
    name: &'a str,
    server: Option<Arc<str>>,
    verdict: Verdict,
    cancel: &'a CancellationToken,
}

impl Judged<'_> {
    /// The refusal's error result, put on the stream as [`EngineEvent::ToolRefused`] too.
    async fn refuse(&self) -> String {
        let (ctx, name) = (self.ctx, self.name);
        let rule = match &self.verdict.reason {
            Reason::Rule(r) => Some(r.describe()),
            Reason::Mode(m) => Some(format!("--permission-mode {}", m.name())),
            _ => None,
        };
        let own = ctx.config.policy.own_settings();
        let reason = self
            .verdict
            .refusal_in(name, self.server.as_deref(), !ctx.can_ask, &own);
        let refused = EngineEvent::ToolRefused {
            id: self.id.to_owned(),
            name: name.to_owned(),
            rule,
            reason: reason.clone(),
        };
        emit(&ctx.events, self.cancel, refused).await;
        reason
    }

    /// Asks the user (no answer, or the turn cancelled while asking, is a no); `None` when
    /// the call runs.
    async fn ask(self, input: &Value) -> Option<String> {
        let ctx = self.ctx;
        let (answer, rx) = oneshot::channel();
        let question = TurnEvent::Ask(PermissionQuestion {
            id: self.id.to_owned(),
            name: self.name.to_owned(),
            server: self.server.as_deref().map(str::to_owned),
            arguments: input.clone(),
            rule: match &self.verdict.reason {
                Reason::Rule(r) => Some(r.describe()),
                _ => None,
            },
            answer,
        });
        let answer = tokio::select! {
            answer = async {
                if ctx.events.send(question).await.is_err() {
                    return Answer::No;
                }
                rx.await.unwrap_or(Answer::No)
            } => answer,
            () = self.cancel.cancelled() => Answer::No,
        };
        answered(&ctx.config.policy, self.name, answer)
    }
}

/// What the user's answer about a call of `name` does: `None` runs it (an "always" answer's
/// rule learned first), else the call's error result.
fn answered(policy: &Policy, name: &str, answer: Answer) -> Option<String> {
    match answer {
        Answer::Yes => None,
        Answer::Always(text) => {
            match Rule::parse(Decision::Allow, &text, Source::Saved) {
                Ok(r) => {
                    policy.rules.learn(r);
                }
                Err(e) => {
                    tracing::warn!(target: "engine", rule = %text, "the answer's rule is not kept: {e}");
                }
            }
            None
        }
        Answer::No => Some(format!(
            "the user declined this call of \"{name}\"; do not run it again unasked: say what you wanted to do, or find another way"
        )),
        Answer::NoWith(message) => Some(format!(
            "the user declined this call of \"{name}\" and says: {message}"
        )),
    }
}

/// One tool call of a model reply.
pub(super) struct ToolCall {
    /// The model's id of the call.
    pub(super) id: String,
    /// The registered tool name.
    pub(super) name: String,
    /// Its arguments (the model's raw text as a string when they were not a JSON object).
    pub(super) input: Value,
}

/// Runs one tool call through the registry and turns its outcome into a tool-result block. A
/// call with a [`refusal`] is not run: it gets an error result, with the same events as any
/// call.
pub(super) async fn run_tool(
    ctx: CallCtx,
    call: ToolCall,
    cut: bool,
    cancel: CancellationToken,
) -> Block {
    let ToolCall { id, name, input } = call;
    let span = super::spans::tool(&ctx.span, &name, &id, &input);
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
        None => call_tool(&ctx, &id, &name, input, &span, &cancel).await,
    };
    let elapsed = started.elapsed();
    let result = ForTheModel::of(&ctx.config, &name, outcome);
    super::spans::tool_done(&span, result.is_error, &result.text);
    emit(
        &ctx.events,
        &cancel,
        EngineEvent::ToolFinished {
            id: id.clone(),
            name,
            is_error: result.is_error,
            elapsed,
            output: result.text,
            output_bytes: result.output_bytes,
            spilled: result.spilled,
        },
    )
    .await;
    Block::ToolResult {
        id,
        content: result.parts,
        is_error: result.is_error,
    }
}

/// Runs a call the permissions let run: `tool_search` here, any other tool through the
/// registry (a call that becomes a task goes to the turn's tasks).
async fn call_tool(
    ctx: &CallCtx,
    id: &str,
    name: &str,
    input: Value,
    span: &tracing::Span,
    cancel: &CancellationToken,
) -> Result<CallToolResult, String> {
    if super::deferred::is_search(ctx, name) {
        return match &ctx.search {
            Some(s) => super::deferred::search_call(s, &input),
            None => Err(format!("tool \"{name}\" is not available")),
        };
    }
    let mut msg = CallTool::new(name.to_owned(), Some(input));
    // A child: the callee may cancel its token when it is done (to stop what it
    // started), which must not cut this call's own events.
    msg.cancel = cancel.child_token();
    msg.progress = Some(progress_sink(&ctx.events, id));
    msg.parent = harness9_actors::telemetry::Parent::of(span);
    // A call that becomes a task answers at once with its handle ("started task X on
    // server Y; you will get its result"); the turn follows the task.
    msg.detach = true;
    // The server hands each progress notice to the stream before it resolves the
    // call, so ToolFinished, sent after this returns, follows all of them.
    let r = ToolRegistry::send(&ctx.registry, msg)
        .await
        .map_err(|e| match e {
            // Gone between the lookup and the call.
            CallError::UnknownTool { .. } => unknown_tool(ctx, name),
            e => e.to_string(),
        });
    if let Ok(Some(task)) = r.as_ref().map(|r| r.task.clone()) {
        let _ = ctx.tasks.send((id.to_owned(), task));
    }
    r
}

/// A call's outcome as the model gets it (cut to the output budget, the whole spilled to a
/// file) and as the front end shows it.
struct ForTheModel {
    parts: Vec<ResultPart>,
    is_error: bool,
    /// The text of what the model got (of a small result, the whole text).
    text: String,
    /// The size of the whole result's text.
    output_bytes: usize,
    spilled: Option<std::path::PathBuf>,
}

impl ForTheModel {
    /// A big result is moved into the model's parts (never copied), written to its spill file
    /// from there and cut; only what the model gets stays in memory.
    fn of(config: &EngineConfig, name: &str, outcome: Result<CallToolResult, String>) -> Self {
        let budget_bytes = config.output_budget_tokens.saturating_mul(4);
        let (parts, small_text, is_error) = match outcome {
            Ok(r) => {
                let is_error = r.is_error;
                let text = (text_len(&r) <= budget_bytes).then(|| r.text());
                (output::from_result(r), text, is_error)
            }
            Err(text) => (vec![ResultPart::Text(text.clone())], Some(text), true),
        };
        let output_bytes = output::text_bytes(&parts);
        let (parts, spilled) =
            output::apply_budget(parts, config.output_budget_tokens, &config.spill_dir, name);
        let (text, output_bytes) = match small_text {
            Some(t) if output_bytes <= budget_bytes => {
                let n = t.len();
                (t, n)
            }
            _ => (output::joined_text(&parts), output_bytes),
        };
        Self {
            parts,
            is_error,
            text,
            output_bytes,
            spilled,
        }
    }
}

/// The bytes of a result's text and text resources.
fn text_len(r: &CallToolResult) -> usize {
    r.content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Resource { resource } => resource.text.as_ref().map_or(0, String::len),
            _ => 0,
        })
        .sum::<usize>()
}

/// Puts one call's progress notices on the turn's stream as [`EngineEvent::ToolProgress`].
/// Called by the server actor, which must not wait: a notice that finds the stream full is
/// dropped (progress is a hint; the result is never dropped).
pub(super) fn progress_sink(events: &mpsc::Sender<TurnEvent>, id: &str) -> ProgressSink {
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
pub(super) struct CallCtx {
    pub(super) registry: Addr<ToolRegistry>,
    pub(super) config: Arc<EngineConfig>,
    pub(super) events: mpsc::Sender<TurnEvent>,
    /// Whether a call the permissions ask about waits for the user (else it is refused).
    pub(super) can_ask: bool,
    pub(super) facts: Arc<Facts>,
    pub(super) disabled: Arc<std::collections::BTreeSet<String>>,
    /// Tool search, while MCP tools are deferred: `tool_search` calls are answered from it.
    pub(super) search: Option<Arc<super::deferred::Search>>,
    /// The turn's span, the parent of each call's (`Span::none()` when nothing is exported).
    pub(super) span: tracing::Span,
    /// When the reply came ([`crate::permissions::Rules::moment`]): the calls of a reply are
    /// judged by the rules in force then, so an "always" answer to one of them asks again for
    /// the others (the TUI shows one question at a time; they were not seen).
    pub(super) rules_as_of: u64,
    /// Where a call that became a task (`io.modelcontextprotocol/tasks`) goes: the turn
    /// follows it and gives the model its result later.
    pub(super) tasks: mpsc::UnboundedSender<(String, harness9_actors::protocol::types::TaskRef)>,
}

#[cfg(test)]
mod tests {
    use super::unknown_tool_text;

    #[test]
    fn an_unknown_tool_is_answered_for_the_model() {
        let names = ["mcp__git__git_status", "mcp__git__git_log", "bash"];
        assert_eq!(
            unknown_tool_text("mcp__git__git_stat", names.into_iter(), false),
            "there is no tool \"mcp__git__git_stat\" (the nearest name is \"mcp__git__git_status\"); call only the tools in your tool list, by their exact names"
        );
        // Nothing near: no guess; while deferring, the search is what finds it.
        let t = unknown_tool_text("jira_create", names.into_iter(), true);
        assert_eq!(
            t,
            "there is no tool \"jira_create\"; call tool_search with what you want to do to find the tool and its exact name"
        );
    }
}
