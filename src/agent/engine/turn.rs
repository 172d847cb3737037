//! One turn: model steps and their tool calls until the model answers or `max_steps`, with
//! compaction before a turn near the window's end and after a context-length refusal.

use super::*;
/// What one turn runs with; the conversation and tool cache go back to the actor at its end.
pub(super) struct Turn {
    pub(super) provider: Arc<dyn Model>,
    pub(super) registry: Addr<ToolRegistry>,
    pub(super) config: Arc<EngineConfig>,
    pub(super) cache: ToolCache,
    pub(super) messages: Vec<Message>,
    pub(super) cancel: CancellationToken,
    pub(super) events: mpsc::Sender<TurnEvent>,
    pub(super) can_ask: bool,
    /// Input tokens of the conversation's last request.
    pub(super) last_input: u64,
    /// Where the conversation's pending tasks are kept across restarts.
    pub(super) journal: Option<Arc<dyn super::TaskJournal>>,
}

/// How a turn ended, for the actor.
pub(super) struct TurnEnd {
    pub(super) messages: Vec<Message>,
    pub(super) cache: ToolCache,
    pub(super) result: Result<TurnOutcome, EngineError>,
    pub(super) last_input: u64,
    /// The conversation before the turn was compacted (the log is rewritten whole).
    pub(super) compacted: bool,
    /// Tasks no longer pending once this turn's messages are saved.
    pub(super) settled: Vec<super::PendingTask>,
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

/// Compacts during a turn whose request is `messages[before]`. With steps of this turn after
/// it, everything becomes the summary and the request follows it again with a note; without,
/// the earlier turns become the summary and the request stays as it is. `None` when there is
/// nothing worth summarizing. The turn's request is again at index 2 afterwards.
async fn compact_in_turn(
    provider: &dyn Model,
    config: &Arc<EngineConfig>,
    messages: &mut Vec<Message>,
    before: usize,
    prompt: &str,
    cancel: &CancellationToken,
) -> Option<Result<compact::Compacted, ModelError>> {
    let steps = messages.len() > before + 1;
    if !steps && !worth_summarizing(&messages[..before]) {
        return None;
    }
    let upto = if steps { messages.len() } else { before };
    Some(
        compact_prefix(provider, config, messages, upto, cancel)
            .await
            .inspect(|_| {
                if steps {
                    messages.push(Message {
                        role: Role::User,
                        content: vec![Block::Text(format!("{prompt}\n\n{CONTINUE_NOTE}"))],
                    });
                }
            }),
    )
}

/// Whether `earlier` (the turns before this one) would shrink as a summary: anything but
/// nothing, or a summary and its acknowledgement alone.
pub(super) fn worth_summarizing(earlier: &[Message]) -> bool {
    let only_a_summary = earlier.len() == 2
        && matches!(earlier[0].content.first(),
            Some(Block::Text(t)) if t.starts_with(compact::SUMMARY_HEAD));
    earlier.len() >= 2 && !only_a_summary
}

/// What every compaction of a turn does besides replacing messages: its request counts in the
/// turn's tokens, the context in use becomes the summary's size, and the front end hears why.
async fn after_compaction(
    events: &mpsc::Sender<TurnEvent>,
    cancel: &CancellationToken,
    usage: &mut Usage,
    last_input: &mut u64,
    c: compact::Compacted,
    reason: String,
) {
    usage.add(&c.usage);
    *last_input = c.tokens_after as u64;
    emit(
        events,
        cancel,
        EngineEvent::Compacted {
            reason,
            compacted: c,
        },
    )
    .await;
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
    let mut end = turn_steps(t, prompt, attachments, &mut tasks).await;
    end.settled = tasks.settled(end.result.is_ok());
    end
}

async fn turn_steps(
    t: Turn,
    prompt: String,
    attachments: Vec<Block>,
    tasks: &mut Tasks,
) -> TurnEnd {
    let Turn {
        provider,
        registry,
        config,
        mut cache,
        mut messages,
        cancel,
        events,
        can_ask,
        mut last_input,
        journal: _,
    } = t;
    let started = Instant::now();
    // The turn's span; its model requests and tool calls go under it.
    let turn_span = super::spans::turn();
    let mut compacted = false;
    // The summary requests count too: they are part of what the turn cost.
    let mut usage = Usage::default();
    // Near the end of the window: the earlier turns become a summary first.
    if near_the_end(&config, last_input) && worth_summarizing(&messages) {
        let upto = messages.len();
        match compact_prefix(&*provider, &config, &mut messages, upto, &cancel).await {
            Ok(c) => {
                compacted = true;
                let reason = format!(
                    "the last request used {last_input} of {} tokens",
                    config.context_window.unwrap_or(0)
                );
                after_compaction(&events, &cancel, &mut usage, &mut last_input, c, reason).await;
            }
            Err(e) => tracing::warn!("automatic compaction failed: {e}"),
        }
    }
    let mut before = messages.len();
    let mut content = vec![Block::Text(prompt.clone())];
    content.extend(attachments);
    messages.push(Message {
        role: Role::User,
        content,
    });
    let mut overflow_retried = false;
    let end = |messages, cache, result, last_input, compacted| TurnEnd {
        messages,
        cache,
        result,
        last_input,
        compacted,
        settled: Vec::new(),
    };
    // A cancelled turn leaves the conversation as it was before it.
    let cancelled = |mut messages: Vec<Message>, before, cache, last_input, compacted| {
        messages.truncate(before);
        end(
            messages,
            cache,
            Err(EngineError::Cancelled),
            last_input,
            compacted,
        )
    };
    // The tasks this turn's calls became (`tasks`), followed to their ends; each result is
    // given to the model once, when it has nothing else to do (cancelled with the turn).
    let mut step = 0;
    while step < config.max_steps {
        step += 1;
        // A long turn near the end of the window: its own steps become a summary (one
        // compaction per new step at most: after one, the turn's request stands alone).
        if step > 1 && near_the_end(&config, last_input) {
            let why = format!(
                "the last request used {last_input} of {} tokens",
                config.context_window.unwrap_or(0)
            );
            match compact_in_turn(&*provider, &config, &mut messages, before, &prompt, &cancel)
                .await
            {
                Some(Ok(c)) => {
                    compacted = true;
                    before = 2;
                    after_compaction(&events, &cancel, &mut usage, &mut last_input, c, why).await;
                }
                Some(Err(ModelError::Cancelled)) => {
                    return cancelled(messages, before, cache, last_input, compacted);
                }
                Some(Err(e)) => tracing::warn!("compaction during a turn failed: {e}"),
                None => {}
            }
        }
        let table = match registry.send(ListTools).await {
            Ok(t) => t,
            Err(_) => Arc::new(Vec::new()),
        };
        let instructions = registry.send(GetInstructions).await.unwrap_or_default();
        let (system, tools) = cache.offer(
            &config,
            provider.config().kind,
            table,
            instructions,
            &messages,
        );
        let req = ModelRequest {
            system,
            messages: messages.clone(),
            tools,
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
        let chat = super::spans::chat(&turn_span, provider.config());
        let reply = provider.complete(&req, &tx, &cancel).await;
        drop(tx);
        let _ = forward.await;
        let reply = match reply {
            Ok(r) => {
                super::spans::chat_done(&chat, &r.usage, &r.stop_reason);
                r
            }
            Err(ModelError::Cancelled) => {
                super::spans::failed(&chat, "cancelled");
                return cancelled(messages, before, cache, last_input, compacted);
            }
            Err(e) => {
                super::spans::failed(&chat, e.kind());
                if compact::is_context_overflow(&e) && !overflow_retried {
                    // Too long for the model: the conversation becomes a summary (this turn's
                    // steps too, when there are any), and the step runs again (once).
                    overflow_retried = true;
                    let done = compact_in_turn(
                        &*provider,
                        &config,
                        &mut messages,
                        before,
                        &prompt,
                        &cancel,
                    )
                    .await;
                    match done {
                        Some(Ok(c)) => {
                            compacted = true;
                            before = 2;
                            let reason = format!("the model refused the request: {e}");
                            let (u, l) = (&mut usage, &mut last_input);
                            after_compaction(&events, &cancel, u, l, c, reason).await;
                            step -= 1;
                            continue;
                        }
                        Some(Err(ce)) => {
                            tracing::warn!("compaction after a context overflow failed: {ce}")
                        }
                        None => {}
                    }
                }
                tasks.cancel();
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
        usage.add(&reply.usage);
        let text = reply.text();
        let calls: Vec<ToolCall> = reply
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
                tools: cache.deferral.offered(),
            },
        )
        .await;
        messages.push(Message {
            role: Role::Assistant,
            content: reply.content,
        });
        if calls.is_empty() && !tasks.is_empty() {
            // The model waits for its tasks: the next one to end is its next step.
            let Some(content) = tasks.next_results(&config).await else {
                return cancelled(messages, before, cache, last_input, compacted);
            };
            messages.push(Message {
                role: Role::User,
                content,
            });
            continue;
        }
        if calls.is_empty() {
            super::spans::turn_done(&turn_span, &usage);
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
            can_ask,
            facts: cache.facts.clone(),
            disabled: cache.disabled.clone(),
            search: cache.deferral.search.clone(),
            span: turn_span.clone(),
            rules_as_of: config.policy.rules.moment(),
            tasks: tasks.sender(),
        };
        let results = join_all(calls.into_iter().map(|call| {
            let cut = cut_id.as_ref() == Some(&call.id);
            run_tool(ctx.clone(), call, cut, cancel.child_token())
        }))
        .await;
        if cancel.is_cancelled() {
            return cancelled(messages, before, cache, last_input, compacted);
        }
        messages.push(Message {
            role: Role::User,
            content: results,
        });
        tasks.follow_new();
    }
    tasks.cancel();
    messages.truncate(before);
    end(
        messages,
        cache,
        Err(EngineError::MaxSteps(config.max_steps)),
        last_input,
        compacted,
    )
}

/// The tasks a turn follows: its calls' and those a restarted session left pending, each
/// followed through the registry ([`AwaitTask`]) under a child of the turn's token, kept in the
/// journal while pending, its result given to the model once.
struct Tasks {
    registry: Addr<ToolRegistry>,
    cancel: CancellationToken,
    /// The turn's stream: each task's start, status changes and end go to the front end.
    events: mpsc::Sender<TurnEvent>,
    journal: Option<Arc<dyn super::TaskJournal>>,
    tx: mpsc::UnboundedSender<(String, TaskRef)>,
    rx: mpsc::UnboundedReceiver<(String, TaskRef)>,
    running: futures_util::stream::FuturesUnordered<
        futures_util::future::LocalBoxFuture<'static, (super::PendingTask, Block, bool)>,
    >,
    /// Every task followed, those whose results the model got, and those of an earlier run
    /// whose server could not be reached (still pending: the next turn tries again).
    followed: Vec<super::PendingTask>,
    delivered: Vec<super::PendingTask>,
    kept: Vec<super::PendingTask>,
}

use harness9_actors::protocol::types::TaskRef;

impl Tasks {
    fn new(
        registry: &Addr<ToolRegistry>,
        turn: &CancellationToken,
        events: &mpsc::Sender<TurnEvent>,
        journal: Option<Arc<dyn super::TaskJournal>>,
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
            let task = super::PendingTask {
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
    fn follow(&mut self, task: super::PendingTask, resumed: bool, status: String) {
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
    fn settled(&self, finished: bool) -> Vec<super::PendingTask> {
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
    task: &super::PendingTask,
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
