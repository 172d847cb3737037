//! Tasks (`io.modelcontextprotocol/tasks`, SEP-2663): a stateless-era `tools/call` answered
//! with `resultType: "task"` is followed here to its end. `tasks/get` is polled at the task's
//! `pollIntervalMs`, kept between [`MIN_POLL`] and [`MAX_POLL`]; an `input_required` task's
//! `inputRequests` are answered through the same seam as a call's (each key once) and sent
//! with `tasks/update`; the caller's cancellation and the server's `taskTimeoutSec` send
//! `tasks/cancel` (never `notifications/cancelled`), bounded by [`CANCEL_BOUND`]. A task is
//! not bound by the tool timeout: each `tasks/*` request is. A hostile server stays bounded:
//! status messages are cut to [`MAX_STATUS_CHARS`] and reported only when they change, a
//! poll interval of 0 is [`MIN_POLL`], an endless `working` ends at `taskTimeoutSec` (or its
//! `ttlMs`), at most [`MAX_TASK_INPUTS`] questions are asked per task, and a task id longer
//! than [`MAX_TASK_ID`] is refused.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::outbound::{Backlog, CancelRequest, Reply};
use super::tool_call::{answer_requests, Answerer};
use super::{McpServer, Payload, ReplyError};
use crate::error::{fmt_duration, CallError, RequestError};
use crate::messages::ToolProgress;
use crate::messages::{AwaitTask, CancelServerTask, GetTaskStatus, ProgressSink, TaskStatus};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::methods::{self as m, Request};
use crate::protocol::types::{
    CallToolResult, ContentBlock, DetailedTask, TaskParams, TaskRef, UpdateTaskParams,
};

/// The shortest wait between two `tasks/get` (a server's `pollIntervalMs` of 0 included).
pub(crate) const MIN_POLL: Duration = Duration::from_millis(250);
/// The longest wait between two `tasks/get`, whatever the server asks.
const MAX_POLL: Duration = Duration::from_secs(30);
/// The wait when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// How long a `tasks/cancel` may take before the caller is told the task was cancelled anyway.
const CANCEL_BOUND: Duration = Duration::from_secs(5);
/// The most characters of a status message that are reported.
const MAX_STATUS_CHARS: usize = 200;
/// The most input requests answered over one task's life.
const MAX_TASK_INPUTS: usize = 32;
/// The longest task id accepted (it travels in every `tasks/*` request and `Mcp-Name`).
const MAX_TASK_ID: usize = 512;
/// `tasks/get` failures in a row (timeouts, transport) before the task is given up.
const MAX_POLL_FAILURES: u32 = 3;

/// JSON-RPC "invalid params": what a server answers for a task it does not know (any more).
const INVALID_PARAMS: i64 = -32602;

/// Sends one `tasks/*` request (the stateless `_meta` stamped): its id, where its reply comes,
/// and its line if the write queue was full; `None` when the server cannot take it now.
#[derive(Message)]
#[rtype(result = "Option<(i64, oneshot::Receiver<Reply>, Option<Backlog>)>")]
struct TaskRpc {
    method: &'static str,
    params: Value,
}

impl Handler<TaskRpc> for McpServer {
    type Result = MessageResult<TaskRpc>;

    fn handle(&mut self, msg: TaskRpc, _ctx: &mut Context<Self>) -> Self::Result {
        if !self.accepting() {
            return MessageResult(None);
        }
        let id = self.alloc_id();
        // A 2025-11-25 task's requests (a handshake-era connection) carry no `_meta`.
        let params = match self.stateless() {
            Some(version) => self.client.stamp(Some(msg.params), version),
            None => msg.params,
        };
        let (trace, op) = self.op(msg.method, None, id, &tracing::Span::none());
        let params = match trace {
            Some(tc) => tc.stamp(Some(params)).unwrap_or_default(),
            None => params,
        };
        let line = jsonrpc::request_line(id, msg.method, Some(&params));
        let (rx, backlog) = self.request(msg.method, id, line, Vec::new(), op);
        MessageResult(Some((id, rx, backlog)))
    }
}

/// Why one `tasks/*` request did not give a result.
enum TaskReqError {
    /// The server answered with a JSON-RPC error.
    Rpc(ErrorObject),
    /// No answer in time, the transport failed, or the server went away.
    Other(String),
}

impl std::fmt::Display for TaskReqError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskReqError::Rpc(e) => write!(f, "{e}"),
            TaskReqError::Other(s) => f.write_str(s),
        }
    }
}

/// One `tasks/*` request of a task, within `after`; a late one is withdrawn
/// (`notifications/cancelled` of that request, not of the task).
async fn task_request(
    addr: &Addr<McpServer>,
    method: &'static str,
    params: Value,
    after: Duration,
) -> Result<Payload, TaskReqError> {
    let sent = addr.send(TaskRpc { method, params }).await.ok().flatten();
    let Some((id, rx, backlog)) = sent else {
        return Err(TaskReqError::Other(
            "the server is not connected".to_owned(),
        ));
    };
    let wait = async {
        if let Some(b) = backlog {
            b.send().await;
        }
        rx.await
    };
    match tokio::time::timeout(after, wait).await {
        Ok(Ok(Ok(p))) => Ok(p),
        Ok(Ok(Err(ReplyError::Rpc(e)))) => Err(TaskReqError::Rpc(e)),
        Ok(Ok(Err(e))) => Err(TaskReqError::Other(super::features::reply_detail(e))),
        Ok(Err(_)) => Err(TaskReqError::Other("the server stopped".to_owned())),
        Err(_) => {
            addr.do_send(CancelRequest {
                id,
                reason: "timed out",
            });
            Err(TaskReqError::Other(format!(
                "no answer to {method} within {}",
                fmt_duration(after)
            )))
        }
    }
}

/// `tasks/get` of `task_id`, parsed and checked (the same task, a known result type).
async fn get_task(
    addr: &Addr<McpServer>,
    task_id: &str,
    after: Duration,
) -> Result<DetailedTask, TaskReqError> {
    let params = serde_json::json!({ "taskId": task_id });
    let raw = task_request(addr, m::GetTask::METHOD, params, after).await?;
    let task = parse_task(&raw).map_err(TaskReqError::Other)?;
    if task.task_id != task_id {
        return Err(TaskReqError::Other(format!(
            "tasks/get answered about another task ({:?})",
            cut(&task.task_id)
        )));
    }
    Ok(task)
}

/// A `CreateTaskResult` or `tasks/get` result as a task.
fn parse_task(raw: &Payload) -> Result<DetailedTask, String> {
    raw.parse::<DetailedTask>()
        .map_err(|e| format!("invalid task: {e}"))
        .and_then(|t| {
            check_id(&t.task_id)?;
            Ok(t)
        })
}

/// A task id fit to poll: not empty, at most [`MAX_TASK_ID`] characters.
fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("the task has an empty taskId".to_owned());
    }
    if id.chars().count() > MAX_TASK_ID {
        return Err(format!(
            "the taskId is longer than {MAX_TASK_ID} characters"
        ));
    }
    Ok(())
}

/// Sends `tasks/cancel` of `task_id`, within [`CANCEL_BOUND`].
async fn cancel_task(addr: &Addr<McpServer>, task_id: &str) -> Result<(), TaskReqError> {
    let params = serde_json::to_value(TaskParams { task_id }).unwrap_or_default();
    task_request(addr, m::CancelTask::METHOD, params, CANCEL_BOUND)
        .await
        .map(|_| ())
}

/// At most [`MAX_STATUS_CHARS`] characters of `s`, on one line.
pub(crate) fn cut(s: &str) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_STATUS_CHARS + 1)
        .collect();
    if one.chars().count() > MAX_STATUS_CHARS {
        let mut short: String = one.chars().take(MAX_STATUS_CHARS).collect();
        short.push('…');
        short
    } else {
        one
    }
}

/// How long to wait before the next `tasks/get`: the server's wish within our bounds.
pub(crate) fn poll_wait(poll_interval_ms: Option<f64>) -> Duration {
    match poll_interval_ms {
        None => DEFAULT_POLL,
        Some(ms) if ms.is_finite() && ms > 0.0 => {
            Duration::from_secs_f64((ms / 1000.0).min(MAX_POLL.as_secs_f64()))
                .clamp(MIN_POLL, MAX_POLL)
        }
        Some(_) => MIN_POLL,
    }
}

/// The handle a detached call answers with.
pub(super) fn handle_result(server: &str, tool: &str, task: &DetailedTask) -> CallToolResult {
    let text = format!(
        "started task {} on server \"{server}\" (tool \"{tool}\"); you will get its result",
        cut(&task.task_id)
    );
    CallToolResult {
        content: vec![ContentBlock::Text { text }],
        structured_content: None,
        is_error: false,
        result_type: None,
        schema_error: None,
        task: Some(TaskRef {
            server: server.to_owned(),
            tool: tool.to_owned(),
            task_id: task.task_id.clone(),
            status: cut(&task.status),
            status_message: task.status_message.as_deref().map(cut),
        }),
    }
}

/// The JSON-RPC error of a `failed` task, as text.
fn error_text(error: Option<&Value>) -> String {
    let Some(e) = error else {
        return "no error given".to_owned();
    };
    match serde_json::from_value::<ErrorObject>(e.clone()) {
        Ok(obj) => format!("{} (code {})", cut(&obj.message), obj.code),
        Err(_) => cut(&e.to_string()),
    }
}

/// Follows one task to its end for a caller.
pub(super) struct Follower {
    pub(super) addr: Addr<McpServer>,
    pub(super) server: String,
    pub(super) tool: String,
    pub(super) by: Arc<Answerer>,
    /// Each `tasks/*` request's bound (the server's tool timeout).
    pub(super) request_timeout: Duration,
    /// The task's own bound (`taskTimeoutSec`).
    pub(super) bound: Duration,
    pub(super) cancel: CancellationToken,
    pub(super) progress: Option<ProgressSink>,
}

impl Follower {
    fn error(&self, task_id: &str, detail: impl Into<String>) -> CallError {
        CallError::Task {
            server: self.server.clone(),
            tool: self.tool.clone(),
            task_id: cut(task_id),
            detail: detail.into(),
        }
    }

    /// Reports a status (and its message) that differs from the last one reported.
    fn report(
        &self,
        task: &DetailedTask,
        last: &mut Option<(String, Option<String>)>,
        since: Instant,
    ) {
        let now = (cut(&task.status), task.status_message.as_deref().map(cut));
        if last.as_ref() == Some(&now) {
            return;
        }
        if let Some(sink) = &self.progress {
            let message = match &now.1 {
                Some(m) => format!("task {} {}: {m}", cut(&task.task_id), now.0),
                None => format!("task {} {}", cut(&task.task_id), now.0),
            };
            sink.send(ToolProgress {
                server: self.server.clone(),
                progress: since.elapsed().as_secs_f64().round(),
                total: None,
                message: Some(message),
            });
        }
        *last = Some(now);
    }

    /// Sends `tasks/cancel` (bounded) and says why the task ended.
    async fn cancel_with(&self, task_id: &str, err: CallError) -> CallError {
        if let Err(e) = cancel_task(&self.addr, task_id).await {
            tracing::debug!(target: "mcp", server = %self.server, "tasks/cancel of {}: {e}", cut(task_id));
        }
        err
    }

    /// Polls the task from `seed` (or from its first `tasks/get`) to its end.
    pub(super) async fn follow(
        self,
        task_id: String,
        seed: Option<DetailedTask>,
    ) -> Result<CallToolResult, CallError> {
        check_id(&task_id).map_err(|e| self.error(&task_id, format!("cannot be followed: {e}")))?;
        let started = Instant::now();
        let mut deadline = started + self.bound;
        let mut answered: HashSet<String> = HashSet::new();
        let mut last = None;
        let mut failures = 0;
        let mut task = match seed {
            Some(t) => t,
            None => self.poll(&task_id, &mut failures).await?,
        };
        let expires = task.ttl().map(|ttl| started + ttl);
        loop {
            self.report(&task, &mut last, started);
            match task.status.as_str() {
                "completed" => return self.completed(task),
                "failed" => {
                    let why = error_text(task.error.as_ref());
                    return Err(self.error(&task_id, format!("failed: {why}")));
                }
                "cancelled" => {
                    let why = task
                        .status_message
                        .as_deref()
                        .map(|m| format!(": {}", cut(m)))
                        .unwrap_or_default();
                    return Err(self.error(&task_id, format!("was cancelled on the server{why}")));
                }
                "input_required" => {
                    let asked = tokio::time::Instant::now();
                    let answered_now = tokio::select! {
                        biased;
                        _ = self.cancel.cancelled() => {
                            return Err(self.cancelled(&task_id).await);
                        }
                        r = self.answer(&task_id, &task, &mut answered) => r,
                    };
                    // The time a person took does not count toward the task's bound.
                    deadline += asked.elapsed();
                    answered_now?;
                }
                "working" => {}
                other => {
                    let e = self.error(
                        &task_id,
                        format!("has an unknown status {:?}; it was cancelled", cut(other)),
                    );
                    return Err(self.cancel_with(&task_id, e).await);
                }
            }
            let next = (Instant::now() + poll_wait(task.poll_interval_ms)).min(deadline);
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Err(self.cancelled(&task_id).await),
                _ = tokio::time::sleep_until(next) => {}
            }
            if Instant::now() >= deadline {
                let e = self.error(
                    &task_id,
                    format!(
                        "ran longer than its bound of {}; it was cancelled (raise taskTimeoutSec for \"{}\" in .mcp.json if it needs longer)",
                        fmt_duration(self.bound),
                        self.server
                    ),
                );
                return Err(self.cancel_with(&task_id, e).await);
            }
            if expires.is_some_and(|e| Instant::now() >= e) {
                let e = self.error(
                    &task_id,
                    format!(
                        "outlived its time to live ({}) on the server without an end; it was cancelled",
                        fmt_duration(task.ttl().unwrap_or_default())
                    ),
                );
                return Err(self.cancel_with(&task_id, e).await);
            }
            task = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Err(self.cancelled(&task_id).await),
                t = self.poll(&task_id, &mut failures) => t?,
            };
        }
    }

    /// A 2025-11-25 task (a handshake-era server's `CreateTaskResult` for a call sent as a
    /// task): `tasks/result` waits for its end (the server asks its questions, such as
    /// `elicitation/create`, on the way, answered as any), bounded by `taskTimeoutSec`; the
    /// user's cancel and the bound send `tasks/cancel`.
    pub(super) async fn follow_old(self, task_id: String) -> Result<CallToolResult, CallError> {
        check_id(&task_id).map_err(|e| self.error(&task_id, format!("cannot be followed: {e}")))?;
        if let Some(sink) = &self.progress {
            sink.send(ToolProgress {
                server: self.server.clone(),
                progress: 0.0,
                total: None,
                message: Some(format!("task {} working", cut(&task_id))),
            });
        }
        let params = serde_json::json!({ "taskId": task_id });
        let got = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(self.cancelled(&task_id).await),
            r = task_request(&self.addr, m::TaskResult::METHOD, params, self.bound) => r,
        };
        match got {
            Ok(raw) => raw.parse::<CallToolResult>().map_err(|e| {
                self.error(&task_id, format!("tasks/result is not a tool result: {e}"))
            }),
            Err(TaskReqError::Rpc(e)) => Err(self.error(&task_id, format!("failed: {e}"))),
            Err(TaskReqError::Other(why)) => {
                let e = self.error(
                    &task_id,
                    format!(
                        "gave no result ({why}); it was cancelled (raise taskTimeoutSec for \"{}\" in .mcp.json if it needs longer)",
                        self.server
                    ),
                );
                Err(self.cancel_with(&task_id, e).await)
            }
        }
    }

    /// The user's cancel: `tasks/cancel` sent (bounded), then the call's cancelled error.
    async fn cancelled(&self, task_id: &str) -> CallError {
        let e = CallError::Cancelled {
            server: self.server.clone(),
            tool: self.tool.clone(),
        };
        self.cancel_with(task_id, e).await
    }

    /// One `tasks/get`; a passing failure is retried at the next poll (at most
    /// [`MAX_POLL_FAILURES`] in a row), a task the server does not know ends the follow.
    async fn poll(&self, task_id: &str, failures: &mut u32) -> Result<DetailedTask, CallError> {
        loop {
            match get_task(&self.addr, task_id, self.request_timeout).await {
                Ok(t) => {
                    *failures = 0;
                    return Ok(t);
                }
                Err(TaskReqError::Rpc(e)) if e.code == INVALID_PARAMS => {
                    return Err(self.error(
                        task_id,
                        format!("is not known to the server (any more): {}", cut(&e.message)),
                    ));
                }
                Err(e) => {
                    *failures += 1;
                    if *failures >= MAX_POLL_FAILURES {
                        return Err(self.error(
                            task_id,
                            format!("could not be polled {MAX_POLL_FAILURES} times in a row: {e}"),
                        ));
                    }
                    tokio::time::sleep(MIN_POLL).await;
                }
            }
        }
    }

    /// Answers the task's input requests not answered yet (each key once over the task's
    /// life) and sends them with `tasks/update`.
    async fn answer(
        &self,
        task_id: &str,
        task: &DetailedTask,
        answered: &mut HashSet<String>,
    ) -> Result<(), CallError> {
        let fresh: Map<String, Value> = task
            .input_requests
            .iter()
            .flatten()
            .filter(|(k, _)| !answered.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        if answered.len() + fresh.len() > MAX_TASK_INPUTS {
            let e = self.error(
                task_id,
                format!("asked for more than {MAX_TASK_INPUTS} inputs; it was cancelled"),
            );
            return Err(self.cancel_with(task_id, e).await);
        }
        answered.extend(fresh.keys().cloned());
        let responses = answer_requests(fresh, &self.by).await;
        let params = serde_json::to_value(UpdateTaskParams {
            task_id,
            input_responses: &responses,
        })
        .unwrap_or_default();
        match task_request(
            &self.addr,
            m::UpdateTask::METHOD,
            params,
            self.request_timeout,
        )
        .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(self.error(task_id, format!("did not take its answers: {e}"))),
        }
    }

    /// A `completed` task's result.
    fn completed(&self, task: DetailedTask) -> Result<CallToolResult, CallError> {
        let Some(raw) = task.result else {
            return Err(self.error(&task.task_id, "completed without a result"));
        };
        serde_json::from_str::<<m::CallTool as Request>::Result>(raw.get()).map_err(|e| {
            CallError::InvalidResult {
                server: self.server.clone(),
                tool: self.tool.clone(),
                detail: format!("task {}: {e}", cut(&task.task_id)),
            }
        })
    }
}

/// The seed of a `resultType: "task"` call result.
pub(super) fn seed(raw: &Payload) -> Result<DetailedTask, String> {
    parse_task(raw)
}

impl McpServer {
    /// A follower of a task of `tool` for a caller.
    pub(super) fn follower(
        &mut self,
        ctx: &mut Context<Self>,
        tool: String,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Follower {
        Follower {
            addr: ctx.address(),
            server: self.spec.name.clone(),
            tool,
            by: self.answerer(),
            request_timeout: self.spec.tool_timeout,
            bound: self.spec.task_timeout,
            cancel,
            progress,
        }
    }

    fn tasks_ready(&self) -> Result<(), RequestError> {
        if self.stateless().is_none() {
            return Err(RequestError::Failed {
                server: self.spec.name.clone(),
                method: m::GetTask::METHOD,
                detail:
                    "tasks need a 2026-07-28 connection and this server speaks an older revision"
                        .to_owned(),
            });
        }
        Ok(())
    }
}

impl Handler<GetTaskStatus> for McpServer {
    type Result = ResponseFuture<Result<TaskStatus, RequestError>>;

    fn handle(&mut self, msg: GetTaskStatus, ctx: &mut Context<Self>) -> Self::Result {
        let ready = self.tasks_ready();
        let (addr, server, after) = (
            ctx.address(),
            self.spec.name.clone(),
            self.spec.tool_timeout,
        );
        Box::pin(async move {
            ready?;
            let failed = |detail: String| RequestError::Failed {
                server: server.clone(),
                method: m::GetTask::METHOD,
                detail,
            };
            check_id(&msg.task_id).map_err(failed)?;
            let task = get_task(&addr, &msg.task_id, after)
                .await
                .map_err(|e| failed(e.to_string()))?;
            let result = match &task.result {
                Some(raw) if task.status == "completed" => Some(
                    serde_json::from_str::<CallToolResult>(raw.get())
                        .map_err(|e| failed(format!("invalid result: {e}")))?,
                ),
                _ => None,
            };
            Ok(TaskStatus {
                status: cut(&task.status),
                status_message: task.status_message.as_deref().map(cut),
                result,
                error: (task.status == "failed").then(|| error_text(task.error.as_ref())),
            })
        })
    }
}

impl Handler<CancelServerTask> for McpServer {
    type Result = ResponseFuture<Result<(), RequestError>>;

    fn handle(&mut self, msg: CancelServerTask, ctx: &mut Context<Self>) -> Self::Result {
        let ready = self.tasks_ready();
        let (addr, server) = (ctx.address(), self.spec.name.clone());
        Box::pin(async move {
            ready?;
            let failed = |detail: String| RequestError::Failed {
                server: server.clone(),
                method: m::CancelTask::METHOD,
                detail,
            };
            check_id(&msg.task_id).map_err(failed)?;
            cancel_task(&addr, &msg.task_id)
                .await
                .map_err(|e| failed(e.to_string()))
        })
    }
}

impl Handler<AwaitTask> for McpServer {
    type Result = ResponseFuture<Result<CallToolResult, RequestError>>;

    fn handle(&mut self, msg: AwaitTask, ctx: &mut Context<Self>) -> Self::Result {
        let ready = self.tasks_ready();
        let server = self.spec.name.clone();
        let follower = self.follower(ctx, msg.tool, msg.cancel, msg.progress);
        Box::pin(async move {
            ready?;
            follower
                .follow(msg.task_id, None)
                .await
                .map_err(|e| RequestError::Failed {
                    server,
                    method: m::GetTask::METHOD,
                    detail: e.to_string(),
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_wait_is_bounded() {
        assert_eq!(poll_wait(Some(0.0)), MIN_POLL);
        assert_eq!(poll_wait(Some(-5.0)), MIN_POLL);
        assert_eq!(poll_wait(Some(f64::NAN)), MIN_POLL);
        assert_eq!(poll_wait(Some(1.0)), MIN_POLL);
        assert_eq!(poll_wait(Some(2_000.0)), Duration::from_secs(2));
        assert_eq!(poll_wait(Some(1e300)), MAX_POLL);
        assert_eq!(poll_wait(None), DEFAULT_POLL);
    }

    #[test]
    fn status_is_cut_to_one_line() {
        let long = "x".repeat(10_000);
        let c = cut(&long);
        assert_eq!(c.chars().count(), MAX_STATUS_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(cut("a\nb\u{1b}[31m"), "a b [31m");
    }

    #[test]
    fn ids_are_checked() {
        assert!(check_id("").is_err());
        assert!(check_id(&"i".repeat(MAX_TASK_ID + 1)).is_err());
        assert!(check_id("786512e2-9e0d").is_ok());
    }
}
