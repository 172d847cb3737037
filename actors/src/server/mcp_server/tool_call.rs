//! A tool call (`CallServerTool`), the hot path: the actor sends the first round and answers
//! with the rest of the call as a future ([`Routed`]) that the caller awaits in its own task (no
//! task of the actor's: the reply wakes the caller directly). It waits for room in the
//! write queue and for the reply within the call's timeout, or its cancellation; a call that
//! ends early (timeout, cancel, the caller gone) tells the server with `notifications/cancelled`.
//! In the stateless era a result may be `input_required`: its `inputRequests` are answered
//! through the server-requests seam (elicitation and sampling by the front end's handler, as in the
//! handshake era, within the call's timeout) and the call is sent again under a new id with `inputResponses` and
//! the exact `requestState` (never carried into any other call), within the same timeout.
//! A `-32042` error (URL elicitation required) has its pages asked through the same seam, and
//! the call is sent once more when every one was accepted. A stateless call whose response
//! stream broke is sent again (at most `MAX_REISSUES` times). A stateless server that refuses
//! its own `elicitation/create` gets the `protocolVersion` pin named in the error the user and
//! the model see.

//!
//! The submodules: [`round`] one round (sent, waited for within the bounds, withdrawn when it
//! ends early), [`answers`] who answers the server's questions in the middle of a call,
//! [`hints`] what a call's failures mean for the user.

mod answers;
mod hints;
mod round;

use std::future::Future;
use std::sync::Arc;

use actix::prelude::*;
use serde_json::{Map, Value};

use super::task::{self, Follower};
use super::{McpServer, Payload, ReplyError};
use crate::error::CallError;
use crate::messages::{CallServerTool, ProgressSink, Routed};
use crate::protocol::headers::param_headers;
use crate::protocol::jsonrpc::{self, ErrorObject, LineError};
use crate::protocol::methods::{CallTool, Request};
use crate::protocol::types::{
    CallParams, CallToolParams, CallToolResult, ContentBlock, DetailedTask, RequestMeta,
    StatelessCallParams, TaskAugment,
};
use crate::server::transport::Writer;
use crate::telemetry::{Op, Outcome, TraceContext};
pub(super) use answers::{answer_requests, Answerer};
use answers::{answers, open_pages, Interim, URL_ELICITATION_REQUIRED};
use futures_util::future::BoxFuture;
use hints::{
    is_old_task, missing_capability_hint, old_task_id, pin_hint, refuses_server_requests,
    result_refuses_server_requests, undeclared_task, MISSING_CAPABILITY, MISSING_CAPABILITY_OLD,
};
use round::{next_round, stopped, wait_round, CancelOnDrop, Deadline, Idle, Round, RoundError};

/// How many `input_required` rounds one call may take before it is given up.
const MAX_INPUT_ROUNDS: usize = 8;
/// How many times a stateless call whose response stream broke is sent again.
const MAX_REISSUES: usize = 2;

/// Send the next round of an `input_required` call.
#[derive(Message)]
#[rtype(result = "Option<Round>")]
struct NextRound {
    tool: String,
    arguments: Option<Value>,
    progress: Option<ProgressSink>,
    answers: Option<Map<String, Value>>,
    /// The call's trace context: every round carries the call span's.
    trace: Option<TraceContext>,
}

impl Handler<NextRound> for McpServer {
    type Result = MessageResult<NextRound>;

    fn handle(&mut self, msg: NextRound, _ctx: &mut Context<Self>) -> Self::Result {
        if !self.accepting() {
            return MessageResult(None);
        }
        MessageResult(Some(self.call_round(
            &msg.tool,
            msg.arguments.as_ref(),
            msg.progress,
            msg.answers,
            msg.trace,
        )))
    }
}

impl McpServer {
    /// The calls' answerer, built once (until the roots or the input handler change).
    pub(super) fn answerer(&mut self) -> std::sync::Arc<Answerer> {
        let (handler, server, roots, cwd) = (
            &self.questions.input,
            &self.spec.name,
            &self.roots,
            &self.cwd,
        );
        self.questions
            .answerer
            .get_or_insert_with(|| {
                std::sync::Arc::new(Answerer {
                    handler: handler.clone(),
                    server: server.clone(),
                    roots: roots.clone(),
                    cwd: cwd.clone(),
                })
            })
            .clone()
    }

    /// Whether a call of `tool` goes as a 2025-11-25 task: a handshake-era server that takes
    /// tool calls as tasks, a tool that runs only as one.
    fn as_task(&self, tool: &str) -> bool {
        self.stateless().is_none()
            && self.session.server_caps.tool_call_tasks()
            && self.tools.task_required.contains(tool)
    }

    /// Sends one round of `tools/call`: progress registered under its id, the stateless `_meta`
    /// and an MRTR round's answers merged into the params.
    fn call_round(
        &mut self,
        tool: &str,
        arguments: Option<&Value>,
        progress: Option<ProgressSink>,
        answers: Option<Map<String, Value>>,
        trace: Option<TraceContext>,
    ) -> Round {
        let id = self.alloc_id();
        let token = progress.map(|sink| {
            self.out.progress.insert(id, sink);
            id
        });
        // Serialized straight from the call's parts: the arguments are never copied.
        let client = self.client.clone();
        let params = match self.stateless() {
            None => CallParams::Handshake(CallToolParams {
                name: tool,
                arguments,
                meta: token.map(|progress_token| RequestMeta { progress_token }),
                task: self.as_task(tool).then(|| TaskAugment {
                    ttl: u64::try_from(self.spec.task_timeout.as_millis()).unwrap_or(u64::MAX),
                }),
            }),
            Some(version) => CallParams::Stateless(StatelessCallParams {
                name: tool,
                arguments,
                meta: client.meta(version, token),
                answers: answers.as_ref(),
            }),
        };
        // A tool's `x-mcp-header` params travel with its call (empty, unallocated, for most).
        let headers = self
            .tools
            .headers
            .get(tool)
            .map(|p| param_headers(p, arguments))
            .unwrap_or_default();
        // The call's span is its waiter's (it sees `isError`): the pending entry has none.
        let (rx, backlog) =
            self.send_request::<CallTool>(id, Some(&params), headers, (trace, Op::default()));
        Round { id, rx, backlog }
    }
}

impl Handler<CallServerTool> for McpServer {
    type Result = MessageResult<CallServerTool>;

    fn handle(&mut self, mut msg: CallServerTool, ctx: &mut Context<Self>) -> Self::Result {
        let server = self.spec.name.clone();
        let tool = msg.tool;
        if !self.session.connected || !self.accepting() {
            let reason = if self.session.connected {
                self.life.gone_reason()
            } else {
                "still starting".to_owned()
            };
            return MessageResult(Routed::ready(Err(CallError::ServerUnavailable {
                server,
                reason,
            })));
        }
        let stateless = self.stateless().is_some();
        let as_task = self.as_task(&tool);
        // The idle bound: every progress notice of the call starts it again (the call then
        // always asks for progress).
        let idle = self.spec.tool_idle_timeout.map(Idle::new);
        if let Some(i) = &idle {
            msg.progress = Some(i.sink(msg.progress.take()));
        }
        // Who answers the server's questions in the middle of the call: a stateless
        // `input_required` round's, or a `-32042` URL elicitation's (either era).
        let by = self.answerer();
        // Kept for a retry (an `input_required` round, a re-issue, a URL elicitation's).
        let progress = msg.progress.clone();
        let op = Op::client(
            CallTool::METHOD,
            Some(&tool),
            None,
            &msg.parent.span(),
            &self.session.otel,
        );
        let trace = op.trace_context();
        let round = self.call_round(
            &tool,
            msg.arguments.as_ref(),
            msg.progress,
            None,
            trace.clone(),
        );
        op.set_request_id(round.id);
        let guard = CancelOnDrop {
            addr: self
                .me
                .get_or_insert_with(|| ctx.address().downgrade())
                .clone(),
            id: round.id,
            armed: true,
        };
        let call = Call {
            again: Again {
                tool,
                arguments: msg.arguments,
                progress,
                trace,
            },
            server,
            stateless,
            as_task,
            detach: msg.detach,
            timeout: msg.timeout,
            cancel: msg.cancel,
            idle,
            by,
            guard,
            task_bounds: (self.spec.tool_timeout, self.spec.task_timeout),
            writer: self.out.sender(),
            clock: self.questions.clock.clone(),
            tries: Tries::default(),
        }
        .run(round);
        MessageResult(Routed(traced(call, op)))
    }
}

/// The call's future; when spans are exported, its span (`op`) ended with its outcome.
fn traced(
    call: impl Future<Output = Result<CallToolResult, CallError>> + Send + 'static,
    mut op: Op,
) -> BoxFuture<'static, Result<CallToolResult, CallError>> {
    if op.is_inert() {
        // Nothing exported: the call's future as it is (one move into its box, the hot path).
        return Box::pin(call);
    }
    Box::pin(async move {
        let result = call.await;
        op.end(match &result {
            Ok(r) if r.is_error => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(CallError::Rpc { error, .. }) => Outcome::Rpc {
                code: error.code,
                message: &error.message,
            },
            Err(e) => Outcome::Failed(e.kind()),
        });
        result
    })
}

/// What a call sends again in a later round (an `input_required` round, a re-issue, a URL
/// elicitation's retry): the same tool, arguments, progress sink and trace context.
struct Again {
    tool: String,
    arguments: Option<Value>,
    progress: Option<ProgressSink>,
    /// The call's trace context: every round carries the call span's.
    trace: Option<TraceContext>,
}

/// The retries a call has taken, each bounded on its own.
#[derive(Default)]
struct Tries {
    /// `input_required` rounds (at most [`MAX_INPUT_ROUNDS`]).
    rounds: usize,
    /// Re-issues of a stateless call whose stream broke (at most [`MAX_REISSUES`]).
    reissues: usize,
    /// Retries after a `-32042` URL elicitation (at most one).
    url_retries: usize,
    /// The answers the current round carries: a re-issued round carries them again.
    carried: Option<Map<String, Value>>,
}

/// What became of one round.
enum Step {
    /// The call's answer.
    Done(CallToolResult),
    /// A step off the common path.
    Rare(Rare),
}

/// What few calls do after a round, each run in a box of its own ([`Call::rare`]).
enum Rare {
    /// An `input_required` result: its requests are answered, then the call is sent again.
    Input(Payload),
    /// The round ended without a result: sent again when that may help, else the error.
    Recover(RoundError),
    /// The call became a 2025-11-25 task, asked for: followed to its result.
    FollowOld(String),
    /// The call became a task (`io.modelcontextprotocol/tasks`): followed to its end.
    Follow(DetailedTask),
}

/// Where a step off the common path leads.
enum Then {
    /// The call goes on with this round.
    Again(Round),
    /// The call's answer.
    Done(CallToolResult),
}

/// One tool call in flight across its rounds, as a future's state: what a retry sends again,
/// the bounds every round runs under, who answers the server's questions, the guard that
/// withdraws the round in flight, and the task follower for a call that became a task.
struct Call {
    again: Again,
    server: String,
    stateless: bool,
    /// The call goes as a 2025-11-25 task.
    as_task: bool,
    /// A call that becomes a task answers with its handle at once.
    detach: bool,
    timeout: std::time::Duration,
    cancel: tokio_util::sync::CancellationToken,
    idle: Option<Idle>,
    by: Arc<Answerer>,
    /// Withdraws the round in flight; its address is the server actor's.
    guard: CancelOnDrop,
    /// A task's bounds, should the call become one: each `tasks/*` request's (the server's
    /// tool timeout) and the task's own (`taskTimeoutSec`).
    task_bounds: (std::time::Duration, std::time::Duration),
    /// At the timeout, a full queue means the server stopped reading: say so.
    writer: Option<Writer>,
    clock: std::sync::Arc<super::ask::AskClock>,
    tries: Tries,
}

impl Call {
    /// The follower of the task the call became (built only then: most calls never do);
    /// the call's error if the server actor has stopped.
    fn follower(&self) -> Result<Follower, CallError> {
        let addr = self
            .guard
            .addr
            .upgrade()
            .ok_or_else(|| stopped(&self.server, &self.again.tool))?;
        Ok(Follower {
            addr,
            server: self.server.clone(),
            tool: self.again.tool.clone(),
            by: self.by.clone(),
            request_timeout: self.task_bounds.0,
            bound: self.task_bounds.1,
            cancel: self.cancel.clone(),
            progress: self.again.progress.clone(),
        })
    }

    /// Runs the call from its first round to its end. What most calls never do (a task
    /// followed, an `input_required` round, a recovery) runs in a box of its own
    /// ([`Call::rare`]): the call's future, boxed and moved once per call, holds only the
    /// common path's state (`a_call_future_is_small`).
    ///
    /// An `async move` block rather than an `async fn`: an `async fn` keeps its arguments twice
    /// in its future (as passed and as its locals), the block once.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would hold the call twice in its future"
    )]
    fn run(
        mut self,
        mut round: Round,
    ) -> impl Future<Output = Result<CallToolResult, CallError>> + Send + 'static {
        async move {
            // The time the server's questions stay open does not count (see `AskClock`).
            let mut deadline = Deadline::start(self.timeout, self.clock.clone());
            loop {
                // Scoped so that nothing of this round's result is held across the rare
                // step's wait but that step's box.
                let rare = {
                    let writer = &self.writer;
                    let stuck = move || writer.as_ref().is_some_and(|w| w.capacity() == 0);
                    let step = match wait_round(
                        round,
                        &mut self.guard,
                        &mut deadline,
                        (&self.cancel, self.idle.as_ref()),
                        &stuck,
                    )
                    .await
                    {
                        Ok(raw) => self.on_result(raw)?,
                        Err(e) => Step::Rare(Rare::Recover(e)),
                    };
                    match step {
                        Step::Done(result) => return Ok(result),
                        Step::Rare(step) => Box::pin(self.rare(step, &mut deadline)),
                    }
                };
                round = match rare.await? {
                    Then::Again(next) => next,
                    Then::Done(result) => return Ok(result),
                };
            }
        }
    }

    /// A step off the common path: another round (an `input_required` round's answers, a
    /// recovery), or a task followed to its end.
    async fn rare(&mut self, step: Rare, deadline: &mut Deadline) -> Result<Then, CallError> {
        match step {
            Rare::Input(raw) => self.input_round(&raw, deadline).await.map(Then::Again),
            Rare::Recover(e) => self.recover(e, deadline).await.map(Then::Again),
            Rare::FollowOld(task_id) => self.follower()?.follow_old(task_id).await.map(Then::Done),
            Rare::Follow(seed) => {
                let id = seed.task_id.clone();
                self.follower()?
                    .follow(id, Some(seed))
                    .await
                    .map(Then::Done)
            }
        }
    }

    /// A round that ended without a result: sent again when that may help (a stateless
    /// stream that broke, a URL elicitation the user accepted), else the call's error, the
    /// server's errors explained.
    async fn recover(
        &mut self,
        e: RoundError,
        deadline: &mut Deadline,
    ) -> Result<Round, CallError> {
        match e {
            // Stateless era: a response stream that broke loses the request; it is sent again
            // under a new id (a few times, within the call's timeout).
            RoundError::Reply(ReplyError::StreamBroken(why))
                if self.stateless && self.tries.reissues < MAX_REISSUES =>
            {
                self.tries.reissues += 1;
                tracing::debug!(target: "mcp", server = %self.server, tool = %self.again.tool, "{why}; sending the call again");
                let answers = self.tries.carried.clone();
                self.resend(answers, deadline).await
            }
            // The server needs the user to open a page first (`-32042`, URL elicitation on the
            // error path): the user is asked for each page (the same question as a URL
            // `elicitation/create`); when every one is accepted the call is sent again, once.
            RoundError::Reply(ReplyError::Rpc(obj))
                if obj.code == URL_ELICITATION_REQUIRED && self.tries.url_retries == 0 =>
            {
                self.tries.url_retries += 1;
                let by = self.by.clone();
                if !self.asking(open_pages(&obj, &by), deadline).await? {
                    let e = RoundError::Reply(ReplyError::Rpc(obj));
                    return Err(self.error(e));
                }
                self.resend(None, deadline).await
            }
            // A capability we did not declare is required (`-32021`, and `-32003` in earlier
            // drafts): the error names it and what to do.
            RoundError::Reply(ReplyError::Rpc(obj))
                if obj.code == MISSING_CAPABILITY || obj.code == MISSING_CAPABILITY_OLD =>
            {
                let hint = missing_capability_hint(&self.server, obj.data.as_ref(), self.stateless);
                Err(self.explained(obj, &hint))
            }
            // A stateless server that cannot send its own requests (PyPI `mcp` 2.x and
            // FastMCP's `ctx.elicit()`): the error says so and names the pin.
            RoundError::Reply(ReplyError::Rpc(obj))
                if self.stateless && refuses_server_requests(&obj.message) =>
            {
                let hint = pin_hint(&self.server);
                Err(self.explained(obj, &hint))
            }
            e => Err(self.error(e)),
        }
    }

    /// The server's error `obj` with `hint` after its message.
    fn explained(&self, mut obj: ErrorObject, hint: &str) -> CallError {
        obj.message = format!("{}; {hint}", obj.message.trim_end_matches('.'));
        self.error(RoundError::Reply(ReplyError::Rpc(obj)))
    }

    /// The call's error for a round that ended with `e`.
    fn error(&self, e: RoundError) -> CallError {
        e.into_call_error(self.server.clone(), self.again.tool.clone(), self.timeout)
    }

    /// The call's error for a result that is not valid.
    fn invalid(&self, detail: String) -> CallError {
        CallError::InvalidResult {
            server: self.server.clone(),
            tool: self.again.tool.clone(),
            detail,
        }
    }

    /// Waits for `ask` (a person answering), bounded by the call's cancellation; the time it
    /// took does not count toward the call's timeout.
    async fn asking<T>(
        &self,
        ask: impl Future<Output = T>,
        deadline: &mut Deadline,
    ) -> Result<T, CallError> {
        let started = tokio::time::Instant::now();
        let answer = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => {
                return Err(CallError::Cancelled {
                    server: self.server.clone(),
                    tool: self.again.tool.clone(),
                });
            }
            answer = ask => answer,
        };
        deadline.at += started.elapsed();
        Ok(answer)
    }

    /// Sends the call again, carrying `answers`, as its next round.
    async fn resend(
        &mut self,
        answers: Option<Map<String, Value>>,
        deadline: &Deadline,
    ) -> Result<Round, CallError> {
        let next = NextRound {
            tool: self.again.tool.clone(),
            arguments: self.again.arguments.clone(),
            progress: self.again.progress.clone(),
            answers,
            trace: self.again.trace.clone(),
        };
        next_round(next, &mut self.guard, deadline.at)
            .await
            .ok_or_else(|| stopped(&self.server, &self.again.tool))
    }

    /// One parse of a round's result; a stateless server's refusal to ask its own questions
    /// gets the pin named.
    fn parse(&self, raw: &Payload) -> Result<CallToolResult, CallError> {
        let mut result = match raw.parse_call() {
            Ok(r) => r,
            Err(LineError::Both) => {
                return Err(CallError::Rpc {
                    server: self.server.clone(),
                    tool: self.again.tool.clone(),
                    error: jsonrpc::both_result_and_error(),
                })
            }
            Err(e) => return Err(self.invalid(e.to_string())),
        };
        if self.stateless && result.is_error && result_refuses_server_requests(&result) {
            result.content.push(ContentBlock::Text {
                text: pin_hint(&self.server),
            });
        }
        Ok(result)
    }

    /// What a round's result means: the answer, a task to follow (or its handle), or an
    /// `input_required` round to answer.
    fn on_result(&mut self, raw: Payload) -> Result<Step, CallError> {
        let result = self.parse(&raw)?;
        let stateless = self.stateless;
        match result.result_type.as_deref() {
            // A task for a request that did not declare the tasks extension (a handshake-era
            // connection never does): an invalid result, never an empty success.
            Some("task") if !stateless => Err(self.invalid(undeclared_task())),
            // The 2025-11-25 task form, asked for: followed to its result (bound by
            // `taskTimeoutSec`, not the tool timeout).
            _ if self.as_task && result.content.is_empty() && is_old_task(&raw) => {
                let task_id = old_task_id(&raw).unwrap_or_default();
                self.guard.disarm();
                Ok(Step::Rare(Rare::FollowOld(task_id)))
            }
            // The 2025-11-25 task form (`{"task": {...}}`), never asked for: not an empty
            // success either.
            _ if !stateless && result.content.is_empty() && is_old_task(&raw) => {
                Err(self.invalid(undeclared_task()))
            }
            // The handshake era has no `resultType`: whatever a server put there.
            _ if !stateless => Ok(Step::Done(result)),
            None | Some("complete") => Ok(Step::Done(result)),
            Some("task") => self.became_task(&raw),
            Some("input_required") if self.tries.rounds < MAX_INPUT_ROUNDS => {
                self.tries.rounds += 1;
                Ok(Step::Rare(Rare::Input(raw)))
            }
            Some("input_required") => Err(self.invalid(format!(
                "the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
            ))),
            Some(other) => Err(self.invalid(format!("unknown resultType {other:?}"))),
        }
    }

    /// The call became a task (`io.modelcontextprotocol/tasks`): the caller gets its handle at
    /// once, or waits for its end (not bound by the tool timeout: by `taskTimeoutSec`).
    fn became_task(&mut self, raw: &Payload) -> Result<Step, CallError> {
        let seed = task::seed(raw).map_err(|detail| self.invalid(detail))?;
        // The call's request is answered: nothing to withdraw.
        self.guard.disarm();
        if self.detach {
            return Ok(Step::Done(task::handle_result(
                &self.server,
                &self.again.tool,
                &seed,
            )));
        }
        Ok(Step::Rare(Rare::Follow(seed)))
    }

    /// An `input_required` result: its requests answered (a person may be asked: each
    /// question is bounded by `ASK_TIMEOUT`, the whole by the call's cancellation, and the time
    /// it took does not count toward the call's timeout), then the call sent again with them.
    async fn input_round(
        &mut self,
        raw: &Payload,
        deadline: &mut Deadline,
    ) -> Result<Round, CallError> {
        let interim: Interim = raw.parse().map_err(|e| self.invalid(e.to_string()))?;
        let by = self.by.clone();
        let extra = self.asking(answers(interim, &by), deadline).await?;
        self.tries.carried = Some(extra.clone());
        self.resend(Some(extra), deadline).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without building its arguments.
    fn future_size<A, B, F: std::future::Future>(_: impl FnOnce(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A call's future is boxed and moved once per call: it holds the common path's state
    /// only (what few calls do is boxed apart), so it stays within the sizes an allocator
    /// serves from its per-thread cache (glibc's: up to 1,032 bytes).
    #[test]
    fn a_call_future_is_small() {
        let size = future_size(Call::run);
        assert!(size <= 1024, "Call::run's future is {size} bytes");
    }
}
