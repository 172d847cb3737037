//! One turn: model steps and their tool calls until the model answers or `max_steps`, with
//! compaction before a turn near the window's end and after a context-length refusal.
//!
//! A turn is a [`TurnState`]: its steps are its methods ([`TurnState::step`] calls the model
//! and runs the reply's calls), it compacts through one method ([`TurnState::compact`]) and
//! it ends through [`TurnState::end`], [`TurnState::fail`] or [`TurnState::cancelled`].

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use futures_util::future::join_all;
use harness9_actors::messages::{GetInstructions, ListTools};
use harness9_actors::protocol::types::TaskRef;
use harness9_actors::ToolRegistry;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::calls::{emit, run_tool, CallCtx, ToolCall, ToolOffer};
use super::{
    compact, EngineConfig, EngineError, EngineEvent, PendingTask, TaskJournal, TurnEvent,
    TurnOutcome,
};
use crate::model::{
    truncate_chars, Block, Message, Model, ModelError, ModelReply, ModelRequest, Role, StopReason,
    StreamEvent, Usage,
};

/// What one turn runs with; the conversation and tool offer go back to the actor at its end.
pub(super) struct Turn {
    pub(super) provider: Arc<dyn Model>,
    pub(super) registry: Addr<ToolRegistry>,
    pub(super) config: Arc<EngineConfig>,
    pub(super) offer: ToolOffer,
    pub(super) messages: Vec<Message>,
    pub(super) cancel: CancellationToken,
    pub(super) events: mpsc::Sender<TurnEvent>,
    pub(super) can_ask: bool,
    /// Input tokens of the conversation's last request.
    pub(super) last_input: u64,
    /// Where the conversation's pending tasks are kept across restarts.
    pub(super) journal: Option<Arc<dyn TaskJournal>>,
}

/// How a turn ended, for the actor.
pub(super) struct TurnEnd {
    pub(super) messages: Vec<Message>,
    pub(super) offer: ToolOffer,
    pub(super) result: Result<TurnOutcome, EngineError>,
    pub(super) last_input: u64,
    /// The conversation before the turn was compacted (the log is rewritten whole).
    pub(super) compacted: bool,
    /// Tasks no longer pending once this turn's messages are saved.
    pub(super) settled: Vec<PendingTask>,
}

/// Replaces `messages[..upto]` with a summary; returns what it did.
pub(super) async fn compact_prefix(
    provider: &dyn Model,
    config: &Arc<EngineConfig>,
    messages: &mut Vec<Message>,
    upto: usize,
    cancel: &CancellationToken,
) -> Result<compact::Compacted, ModelError> {
    let tokens_before = compact::estimate_tokens(messages);
    let (summary, usage) =
        compact::summarize(provider, config, &messages[..upto], None, cancel).await?;
    messages.splice(..upto, summary);
    Ok(compact::Compacted {
        replaced: upto,
        tokens_before,
        tokens_after: compact::estimate_tokens(messages),
        usage,
    })
}

/// What a turn's request says again after its own steps were compacted.
pub(super) const CONTINUE_NOTE: &str =
    "[This request was compacted while it was being worked on: the summary \
     above says what was already done. Continue from there; do not start over.]";

/// Whether `earlier` (the turns before this one) would shrink as a summary: anything but
/// nothing, or a summary and its acknowledgement alone.
pub(super) fn worth_summarizing(earlier: &[Message]) -> bool {
    let only_a_summary = earlier.len() == 2
        && matches!(earlier[0].content.first(),
            Some(Block::Text(t)) if t.starts_with(compact::SUMMARY_HEAD));
    earlier.len() >= 2 && !only_a_summary
}

/// Whether the last request used `compact_at` of the model's window.
fn near_the_end(config: &EngineConfig, last_input: u64) -> bool {
    config.context_window.is_some_and(|w| {
        config.compact_at > 0.0 && last_input as f64 >= config.compact_at * w as f64
    })
}

/// Runs a turn. The tasks a restarted session left pending are followed from its start (each
/// result given to the model when it waits, as for the turn's own tasks); the turn's own tasks
/// are kept in the journal while they run.
pub(super) async fn turn(t: Turn, prompt: String, attachments: Vec<Block>) -> TurnEnd {
    let mut tasks = Tasks::new(&t.registry, &t.cancel, &t.events, t.journal.clone());
    tasks.resume();
    TurnState::new(t, prompt, tasks).run(attachments).await
}

/// How a step of a turn ended.
enum Step {
    /// The reply's calls ran (or the model waited for a task): the next step follows.
    Next,
    /// The conversation was compacted after a context-length refusal: the step runs again.
    Again,
    /// The model answered.
    Answered(TurnOutcome),
    /// The turn was cancelled.
    Cancelled,
    /// The turn failed.
    Failed(EngineError),
}

/// A turn under way: what it runs with, the conversation it grows, and what it has cost.
struct TurnState {
    provider: Arc<dyn Model>,
    registry: Addr<ToolRegistry>,
    config: Arc<EngineConfig>,
    offer: ToolOffer,
    messages: Vec<Message>,
    cancel: CancellationToken,
    events: mpsc::Sender<TurnEvent>,
    can_ask: bool,
    /// Input tokens of the conversation's last request.
    last_input: u64,
    /// What the user said (said again after the turn's own steps are compacted).
    prompt: String,
    /// The tasks this turn's calls became (and an earlier run's), followed to their ends; each
    /// result is given to the model once, when it has nothing else to do (cancelled with the
    /// turn).
    tasks: Tasks,
    started: Instant,
    /// The turn's span; its model requests and tool calls go under it.
    span: tracing::Span,
    /// Whether the conversation was compacted during the turn.
    compacted: bool,
    /// The turn's tokens; the summary requests count too: they are part of what it cost.
    usage: Usage,
    /// Where the turn's request is: `messages[..before]` is the conversation before it.
    before: usize,
    /// The 1-based step running.
    step: u32,
    /// Whether a context-length refusal was already answered with a compaction.
    overflow_retried: bool,
}

impl TurnState {
    fn new(t: Turn, prompt: String, tasks: Tasks) -> Self {
        let started = Instant::now();
        let span = super::spans::turn();
        Self {
            provider: t.provider,
            registry: t.registry,
            config: t.config,
            offer: t.offer,
            before: t.messages.len(),
            messages: t.messages,
            cancel: t.cancel,
            events: t.events,
            can_ask: t.can_ask,
            last_input: t.last_input,
            prompt,
            tasks,
            started,
            span,
            compacted: false,
            usage: Usage::default(),
            step: 0,
            overflow_retried: false,
        }
    }

    /// The turn from its start to its end: near the end of the window, the earlier turns
    /// become a summary first; then the request and the steps, at most `max_steps`.
    async fn run(mut self, attachments: Vec<Block>) -> TurnEnd {
        if near_the_end(&self.config, self.last_input) {
            let reason = self.window_used();
            if let Err(e) = self.compact(reason).await {
                tracing::warn!("automatic compaction failed: {e}");
            }
        }
        self.before = self.messages.len();
        let mut content = vec![Block::Text(self.prompt.clone())];
        content.extend(attachments);
        self.messages.push(Message {
            role: Role::User,
            content,
        });
        while self.step < self.config.max_steps {
            self.step += 1;
            match self.step().await {
                Step::Next => {}
                Step::Again => self.step -= 1,
                Step::Answered(outcome) => return self.end(Ok(outcome)),
                Step::Cancelled => return self.cancelled(),
                Step::Failed(e) => return self.fail(e),
            }
        }
        let max = self.config.max_steps;
        self.fail(EngineError::MaxSteps(max))
    }

    /// Why a compaction near the window's end happens.
    fn window_used(&self) -> String {
        format!(
            "the last request used {} of {} tokens",
            self.last_input,
            self.config.context_window.unwrap_or(0)
        )
    }

    /// The turn's one way to compact, for `reason`. With steps of this turn after its request,
    /// everything becomes the summary and the request follows it again with a note; without,
    /// the earlier turns become the summary and the request stays as it is (before the
    /// request is added, the whole conversation is the earlier turns). The summary request
    /// counts in the turn's tokens, the context in use becomes the summary's size, and the
    /// front end hears why. `Ok(false)` when there is nothing worth summarizing. The turn's
    /// request is again at index 2 afterwards.
    async fn compact(&mut self, reason: String) -> Result<bool, ModelError> {
        let before = self.before;
        let steps = self.messages.len() > before + 1;
        if !steps && !worth_summarizing(&self.messages[..before]) {
            return Ok(false);
        }
        let upto = if steps { self.messages.len() } else { before };
        let c = compact_prefix(
            &*self.provider,
            &self.config,
            &mut self.messages,
            upto,
            &self.cancel,
        )
        .await?;
        if steps {
            self.messages.push(Message {
                role: Role::User,
                content: vec![Block::Text(format!("{}\n\n{CONTINUE_NOTE}", self.prompt))],
            });
        }
        self.compacted = true;
        self.before = 2;
        self.usage.add(&c.usage);
        self.last_input = c.tokens_after as u64;
        let compacted = EngineEvent::Compacted {
            reason,
            compacted: c,
        };
        emit(&self.events, &self.cancel, compacted).await;
        Ok(true)
    }

    /// One step: a long turn near the end of the window compacts its own steps first (one
    /// compaction per new step at most: after one, the turn's request stands alone); then the
    /// model call, and the reply's calls or the next task's result.
    async fn step(&mut self) -> Step {
        if self.step > 1 && near_the_end(&self.config, self.last_input) {
            let reason = self.window_used();
            match self.compact(reason).await {
                Ok(_) => {}
                Err(ModelError::Cancelled) => return Step::Cancelled,
                Err(e) => tracing::warn!("compaction during a turn failed: {e}"),
            }
        }
        let req = self.request().await;
        let call_started = Instant::now();
        let reply = match self.call_model(&req).await {
            Ok(r) => r,
            Err(ModelError::Cancelled) => return Step::Cancelled,
            Err(e) => return self.refused(e).await,
        };
        self.last_input = reply.usage.input_tokens;
        self.usage.add(&reply.usage);
        let text = reply.text();
        let calls = tool_calls(&reply);
        // Cut off at max_tokens with a call last: that call's arguments may be incomplete.
        let cut_id = match (&reply.stop_reason, reply.content.last()) {
            (StopReason::MaxTokens, Some(Block::ToolUse { id, .. })) => Some(id.clone()),
            _ => None,
        };
        let done = EngineEvent::ModelDone {
            step: self.step,
            text: text.clone(),
            tool_calls: calls.len(),
            elapsed: call_started.elapsed(),
            usage: reply.usage,
            tools: self.offer.deferral.offered(),
        };
        emit(&self.events, &self.cancel, done).await;
        self.messages.push(Message {
            role: Role::Assistant,
            content: reply.content,
        });
        if calls.is_empty() && !self.tasks.is_empty() {
            return self.wait_for_tasks().await;
        }
        if calls.is_empty() {
            return self.answered(text);
        }
        self.run_calls(calls, cut_id).await
    }

    /// The step's request: the tool table and the servers' instructions as the registry has
    /// them now, offered through the turn's [`ToolOffer`].
    async fn request(&mut self) -> ModelRequest {
        let table = match self.registry.send(ListTools).await {
            Ok(t) => t,
            Err(_) => Arc::new(Vec::new()),
        };
        let instructions = self
            .registry
            .send(GetInstructions)
            .await
            .unwrap_or_default();
        let (system, tools) = self.offer.for_step(
            &self.config,
            self.provider.config().kind,
            table,
            instructions,
            &self.messages,
        );
        ModelRequest {
            system,
            messages: self.messages.clone(),
            tools,
            max_tokens: 0,
        }
    }

    /// The model call under its `chat` span, its text and retries forwarded to the stream.
    async fn call_model(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let forward = actix_rt::spawn(forward_stream(rx, self.events.clone(), self.cancel.clone()));
        let chat = super::spans::chat(&self.span, self.provider.config());
        let reply = self.provider.complete(req, &tx, &self.cancel).await;
        drop(tx);
        let _ = forward.await;
        match &reply {
            Ok(r) => super::spans::chat_done(&chat, &r.usage, &r.stop_reason),
            Err(ModelError::Cancelled) => super::spans::failed(&chat, "cancelled"),
            Err(e) => super::spans::failed(&chat, e.kind()),
        }
        reply
    }

    /// A failed model call. Too long for the model: the conversation becomes a summary (this
    /// turn's steps too, when there are any), and the step runs again (once); else the turn
    /// fails.
    async fn refused(&mut self, e: ModelError) -> Step {
        if compact::is_context_overflow(&e) && !self.overflow_retried {
            self.overflow_retried = true;
            let reason = format!("the model refused the request: {e}");
            match self.compact(reason).await {
                Ok(true) => return Step::Again,
                Ok(false) => {}
                Err(ce) => tracing::warn!("compaction after a context overflow failed: {ce}"),
            }
        }
        Step::Failed(EngineError::Model(e))
    }

    /// The model waits for its tasks: the next one to end is its next step.
    async fn wait_for_tasks(&mut self) -> Step {
        let Some(content) = self.tasks.next_results(&self.config).await else {
            return Step::Cancelled;
        };
        self.messages.push(Message {
            role: Role::User,
            content,
        });
        Step::Next
    }

    /// The model answered with `text` and no calls: the turn's outcome.
    fn answered(&self, text: String) -> Step {
        super::spans::turn_done(&self.span, &self.usage);
        Step::Answered(TurnOutcome {
            text,
            steps: self.step,
            usage: self.usage,
            elapsed: self.started.elapsed(),
        })
    }

    /// Every call of the reply at once; each has its own child token of the turn's. Their
    /// results are the next message, and the tasks they became are followed.
    async fn run_calls(&mut self, calls: Vec<ToolCall>, cut_id: Option<String>) -> Step {
        let ctx = CallCtx {
            registry: self.registry.clone(),
            config: self.config.clone(),
            events: self.events.clone(),
            can_ask: self.can_ask,
            facts: self.offer.facts.clone(),
            disabled: self.offer.disabled.clone(),
            search: self.offer.deferral.search.clone(),
            span: self.span.clone(),
            rules_as_of: self.config.policy.rules.moment(),
            tasks: self.tasks.sender(),
        };
        let results = join_all(calls.into_iter().map(|call| {
            let cut = cut_id.as_ref() == Some(&call.id);
            run_tool(ctx.clone(), call, cut, self.cancel.child_token())
        }))
        .await;
        if self.cancel.is_cancelled() {
            return Step::Cancelled;
        }
        self.messages.push(Message {
            role: Role::User,
            content: results,
        });
        self.tasks.follow_new();
        Step::Next
    }

    /// Ends the turn with `result`, the tasks no longer pending worked out from it.
    fn end(self, result: Result<TurnOutcome, EngineError>) -> TurnEnd {
        let settled = self.tasks.settled(result.is_ok());
        TurnEnd {
            messages: self.messages,
            offer: self.offer,
            result,
            last_input: self.last_input,
            compacted: self.compacted,
            settled,
        }
    }

    /// A cancelled turn leaves the conversation as it was before it.
    fn cancelled(mut self) -> TurnEnd {
        self.messages.truncate(self.before);
        self.end(Err(EngineError::Cancelled))
    }

    /// A failed turn cancels the tasks it follows and leaves the conversation as it was
    /// before it.
    fn fail(mut self, e: EngineError) -> TurnEnd {
        self.tasks.cancel();
        self.messages.truncate(self.before);
        self.end(Err(e))
    }
}

/// The tool calls of a reply, in its order.
fn tool_calls(reply: &ModelReply) -> Vec<ToolCall> {
    reply
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some(ToolCall {
                id: id.clone(),
                name: name.clone(),
                input: input.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Puts a model call's text and retries on the turn's stream as they come.
async fn forward_stream(
    mut rx: mpsc::UnboundedReceiver<StreamEvent>,
    events: mpsc::Sender<TurnEvent>,
    cancel: CancellationToken,
) {
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
}

/// The tasks a turn follows: its calls' and those a restarted session left pending, each
/// followed through the registry ([`AwaitTask`]) under a child of the turn's token, kept in the
/// journal while pending, its result given to the model once.
struct Tasks {
    registry: Addr<ToolRegistry>,
    cancel: CancellationToken,
    /// The turn's stream: each task's start, status changes and end go to the front end.
    events: mpsc::Sender<TurnEvent>,
    journal: Option<Arc<dyn TaskJournal>>,
    tx: mpsc::UnboundedSender<(String, TaskRef)>,
    rx: mpsc::UnboundedReceiver<(String, TaskRef)>,
    running: futures_util::stream::FuturesUnordered<
        futures_util::future::LocalBoxFuture<'static, (PendingTask, Block, bool)>,
    >,
    /// Every task followed, those whose results the model got, and those of an earlier run
    /// whose server could not be reached (still pending: the next turn tries again).
    followed: Vec<PendingTask>,
    delivered: Vec<PendingTask>,
    kept: Vec<PendingTask>,
}

impl Tasks {
    fn new(
        registry: &Addr<ToolRegistry>,
        turn: &CancellationToken,
        events: &mpsc::Sender<TurnEvent>,
        journal: Option<Arc<dyn TaskJournal>>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            registry: registry.clone(),
            cancel: turn.child_token(),
            events: events.clone(),
            journal,
            tx,
            rx,
            running: Default::default(),
            followed: Vec::new(),
            delivered: Vec::new(),
            kept: Vec::new(),
        }
    }

    fn sender(&self) -> mpsc::UnboundedSender<(String, TaskRef)> {
        self.tx.clone()
    }

    fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Follows again every task the journal still holds (an earlier run of this conversation
    /// ended before their results were saved).
    fn resume(&mut self) {
        let pending = self
            .journal
            .as_ref()
            .map(|j| j.pending())
            .unwrap_or_default();
        for task in pending {
            self.follow(task, true, "working".to_owned());
        }
    }

    /// Starts following every task the last calls became.
    fn follow_new(&mut self) {
        while let Ok((tool_use_id, task)) = self.rx.try_recv() {
            let status = match &task.status_message {
                Some(m) => format!("{}: {m}", task.status),
                None => task.status.clone(),
            };
            let task = PendingTask {
                server: task.server,
                tool: task.tool,
                task_id: task.task_id,
                tool_use_id,
            };
            if let Some(j) = &self.journal {
                j.started(&task);
            }
            self.follow(task, false, status);
        }
    }

    /// Follows `task` (`resumed`: of an earlier run) to its end, its start, status changes
    /// and end told to the front end.
    fn follow(&mut self, task: PendingTask, resumed: bool, status: String) {
        use futures_util::FutureExt as _;
        self.tell(EngineEvent::TaskStarted {
            server: task.server.clone(),
            tool: task.tool.clone(),
            task_id: task.task_id.clone(),
            status,
        });
        let wait = self.registry.send(harness9_actors::messages::AwaitTask {
            server: task.server.clone(),
            tool: task.tool.clone(),
            task_id: task.task_id.clone(),
            cancel: self.cancel.clone(),
            progress: Some(task_status_sink(&self.events, &task.server, &task.task_id)),
        });
        self.followed.push(task.clone());
        let events = self.events.clone();
        let cancel = self.cancel.clone();
        self.running.push(
            async move {
                let outcome = wait.await;
                let ended = EngineEvent::TaskEnded {
                    server: task.server.clone(),
                    task_id: task.task_id.clone(),
                };
                emit(&events, &cancel, ended).await;
                // A task of an earlier run whose server is not up (yet): not lost, kept.
                let keep = resumed
                    && matches!(
                        outcome,
                        Ok(Err(
                            harness9_actors::error::RequestError::Unavailable { .. }
                        ))
                    );
                let text = result_text(&task, resumed, outcome);
                (task, Block::Text(text), keep)
            }
            .boxed_local(),
        );
    }

    /// Hands `e` to the front end without waiting (a full stream drops it: the front end's
    /// list is a view, the task goes on).
    fn tell(&self, e: EngineEvent) {
        if self.events.try_send(TurnEvent::Update(e)).is_err() {
            tracing::debug!(target: "engine", "a task event dropped: the turn stream is full");
        }
    }

    /// Waits for the next task to end and takes every other that has ended too, each once, in
    /// the order they ended (each cut to the output budget); `None` when the turn is cancelled.
    async fn next_results(&mut self, config: &EngineConfig) -> Option<Vec<Block>> {
        use futures_util::{FutureExt as _, StreamExt as _};
        let first = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return None,
            b = self.running.next() => b?,
        };
        let mut out = vec![first];
        while let Some(Some(b)) = self.running.next().now_or_never() {
            out.push(b);
        }
        let budget = config.output_budget_tokens.saturating_mul(4);
        let mut blocks = Vec::with_capacity(out.len());
        for (task, b, keep) in out {
            if keep {
                self.kept.push(task);
            } else {
                self.delivered.push(task);
            }
            blocks.push(match b {
                Block::Text(t) if t.len() > budget => {
                    Block::Text(truncate_chars(&t, budget).to_owned())
                }
                b => b,
            });
        }
        Some(blocks)
    }

    /// Cancels every task still followed (`tasks/cancel`): the turn ends without them.
    fn cancel(&self) {
        if !self.running.is_empty() {
            self.cancel.cancel();
        }
    }

    /// The tasks no longer pending once the turn is saved: after a finished turn, those whose
    /// results the model got; after a failed one (its messages dropped), those cancelled with
    /// it, so a result the model got in the dropped turn is given again later.
    fn settled(&self, finished: bool) -> Vec<PendingTask> {
        if finished {
            return self.delivered.clone();
        }
        self.followed
            .iter()
            .filter(|t| !self.delivered.contains(t) && !self.kept.contains(t))
            .cloned()
            .collect()
    }
}

/// What the model reads of a task's end: its result, its failure, or that the server no
/// longer knows it (lost). A task of an earlier run names the call it came from.
fn result_text(
    task: &PendingTask,
    resumed: bool,
    outcome: Result<
        Result<
            harness9_actors::protocol::types::CallToolResult,
            harness9_actors::error::RequestError,
        >,
        MailboxError,
    >,
) -> String {
    let earlier = if resumed {
        format!(
            ", call {} of an earlier run of this conversation that ended before it finished",
            task.tool_use_id
        )
    } else {
        String::new()
    };
    let head = format!(
        "the result of task {} (tool \"{}\" on server \"{}\"{earlier}):",
        task.task_id, task.tool, task.server
    );
    let body = match outcome {
        Ok(Ok(r)) if r.is_error => format!("(an error result)\n{}", r.text()),
        Ok(Ok(r)) => r.text(),
        // The follower's words for a task the server answers "invalid params" about.
        Ok(Err(harness9_actors::error::RequestError::Failed { detail, .. }))
            if detail.contains("is not known to the server") =>
        {
            format!(
                "(lost: the server no longer knows this task; its result cannot be had) {detail}"
            )
        }
        Ok(Err(e @ harness9_actors::error::RequestError::Unavailable { .. })) if resumed => {
            format!("(not known yet) {e}; it is followed again at the next turn")
        }
        Ok(Err(e)) => format!("(it failed) {e}"),
        Err(_) => "(it failed) the tool registry stopped".to_owned(),
    };
    format!("{head}\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness9_actors::error::RequestError;

    fn task() -> crate::engine::PendingTask {
        crate::engine::PendingTask {
            server: "jobs".into(),
            tool: "slow".into(),
            task_id: "task-1".into(),
            tool_use_id: "toolu_9".into(),
        }
    }

    fn failed(detail: &str) -> RequestError {
        RequestError::Failed {
            server: "jobs".into(),
            method: "tasks/get",
            detail: detail.into(),
        }
    }

    #[test]
    fn a_task_the_server_forgot_is_lost_and_an_earlier_runs_names_its_call() {
        let lost = result_text(
            &task(),
            true,
            Ok(Err(failed(
                "task task-1 is not known to the server (any more): Task not found",
            ))),
        );
        assert!(lost.starts_with("the result of task task-1 (tool \"slow\" on server \"jobs\", call toolu_9 of an earlier run"), "{lost}");
        assert!(
            lost.contains("(lost: the server no longer knows this task"),
            "{lost}"
        );
        let other = result_text(&task(), false, Ok(Err(failed("the connection closed"))));
        assert!(
            other.contains("(it failed)") && !other.contains("lost"),
            "{other}"
        );
        assert!(!other.contains("earlier run"), "{other}");
    }
}

/// Where a followed task's status changes go: [`EngineEvent::TaskStatus`] on the turn's stream
/// (never blocking: a full stream drops one), the follower's "task ID " prefix taken off.
fn task_status_sink(
    events: &mpsc::Sender<TurnEvent>,
    server: &str,
    task_id: &str,
) -> harness9_actors::messages::ProgressSink {
    let events = events.clone();
    let (server, task_id) = (server.to_owned(), task_id.to_owned());
    harness9_actors::messages::ProgressSink::new(move |p| {
        let Some(message) = p.message else { return };
        let e = EngineEvent::TaskStatus {
            server: server.clone(),
            status: status_of(&task_id, &message),
            task_id: task_id.clone(),
        };
        if events.try_send(TurnEvent::Update(e)).is_err() {
            tracing::debug!(target: "engine", "a task's status dropped: the turn stream is full");
        }
    })
}

/// A task's status as the follower reports it (`task ID working: step 2`) without its
/// `task ID ` prefix; a report of another shape whole.
fn status_of(task_id: &str, message: &str) -> String {
    message
        .strip_prefix("task ")
        .and_then(|m| m.strip_prefix(task_id))
        .and_then(|m| m.strip_prefix(' '))
        .unwrap_or(message)
        .to_owned()
}

#[cfg(test)]
mod task_status_tests {
    #[test]
    fn a_status_report_loses_its_task_prefix_only() {
        use super::status_of;
        assert_eq!(
            status_of("t-1", "task t-1 working: step 2"),
            "working: step 2"
        );
        assert_eq!(status_of("t-1", "task t-1 completed"), "completed");
        // Another task's report, or another shape, is kept whole.
        assert_eq!(status_of("t-1", "task t-2 working"), "task t-2 working");
        assert_eq!(status_of("t-1", "working"), "working");
        assert_eq!(status_of("t-1", "task t-1working"), "task t-1working");
    }
}
