//! A tool call (`CallServerTool`), the hot path: a `ResponseFuture` that waits for room in the
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

use std::path::PathBuf;

use crate::spec::Roots;
use actix::prelude::*;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::ask;
use super::outbound::{Backlog, CancelRequest, Reply};
use super::task;
use super::{McpServer, ReplyError};
use crate::error::CallError;
use crate::messages::{CallServerTool, InputRequest, ProgressSink};
use crate::protocol::headers::param_headers;
use crate::protocol::jsonrpc::{self, LineError};
use crate::protocol::methods::{CallTool, Elicit, Request};
use crate::protocol::types::{
    CallParams, CallToolParams, CallToolResult, ContentBlock, RequestMeta, StatelessCallParams,
    TaskAugment,
};
use crate::server::server_requests;
use crate::telemetry::{Op, Outcome, TraceContext};

/// How many `input_required` rounds one call may take before it is given up.
const MAX_INPUT_ROUNDS: usize = 8;
/// How many times a stateless call whose response stream broke is sent again.
const MAX_REISSUES: usize = 2;

/// One round of a call in flight: its id, where its reply comes, and its line if the write
/// queue was full.
struct Round {
    id: i64,
    rx: oneshot::Receiver<Reply>,
    backlog: Option<Backlog>,
}

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

/// The parts of an `input_required` result the retry needs.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Interim {
    #[serde(default)]
    input_requests: Option<Map<String, Value>>,
    #[serde(default)]
    request_state: Option<Value>,
}

/// Who answers a stateless call's input requests: the front end's handler (elicitation,
/// sampling), and the server's roots (its configured ones, else the working directory).
pub(super) struct Answerer {
    handler: Option<Recipient<InputRequest>>,
    server: String,
    roots: Roots,
    cwd: PathBuf,
}

/// The retry's extra params: an answer for every input request the seam can answer (a
/// question for a person through the same handler as a handshake-era request, one at a time),
/// and the `requestState` exactly as it came (left out when none came). The caller bounds it
/// by the call's deadline and cancellation.
async fn answers(interim: Interim, by: &Answerer) -> Map<String, Value> {
    let responses = answer_requests(interim.input_requests.unwrap_or_default(), by).await;
    let mut extra = Map::new();
    extra.insert("inputResponses".to_owned(), Value::Object(responses));
    if let Some(state) = interim.request_state {
        extra.insert("requestState".to_owned(), state);
    }
    extra
}

/// An answer for every input request (by key) the seam can answer: a question for a person
/// through the front end's handler, one at a time; a call's round and a task's
/// `input_required` share it.
pub(super) async fn answer_requests(
    requests: Map<String, Value>,
    by: &Answerer,
) -> Map<String, Value> {
    let mut responses = Map::new();
    for (key, req) in requests {
        let method = req.get("method").and_then(Value::as_str).unwrap_or("");
        let answer = if ask::is_ask(method) {
            ask::ask(
                by.handler.clone(),
                by.server.clone(),
                method.to_owned(),
                req.get("params").cloned(),
                &by.cwd,
                ask::ASK_TIMEOUT,
                crate::telemetry::Parent::default(),
            )
            .await
        } else {
            server_requests::answer(method, req.get("params"), &by.roots, &by.cwd)
        };
        if let Ok(v) = answer {
            responses.insert(key, v);
        }
    }
    responses
}

/// The JSON-RPC error a server answers a call with when the user must first open a page
/// (URL-mode elicitation on the error path, 2025-11-25).
const URL_ELICITATION_REQUIRED: i64 = -32042;

/// Asks the user about each URL elicitation in a `-32042` error's `data.elicitations`; `true`
/// when there was at least one and every one was accepted.
async fn open_pages(error: &crate::protocol::jsonrpc::ErrorObject, by: &Answerer) -> bool {
    let pages: Vec<Value> = error
        .data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .map(|a| a.iter().take(4).cloned().collect())
        .unwrap_or_default();
    if pages.is_empty() {
        return false;
    }
    for mut page in pages {
        if let Some(o) = page.as_object_mut() {
            o.entry("mode").or_insert_with(|| Value::from("url"));
        }
        let answer = ask::ask(
            by.handler.clone(),
            by.server.clone(),
            Elicit::METHOD.to_owned(),
            Some(page),
            &by.cwd,
            ask::ASK_TIMEOUT,
            crate::telemetry::Parent::default(),
        )
        .await;
        let accepted = answer
            .ok()
            .and_then(|v| v.get("action").and_then(Value::as_str).map(str::to_owned))
            .is_some_and(|a| a == "accept");
        if !accepted {
            return false;
        }
    }
    true
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

/// Sends `notifications/cancelled` if the call future is dropped before its reply.
struct CancelOnDrop {
    addr: Addr<McpServer>,
    id: i64,
    armed: bool,
}

impl CancelOnDrop {
    fn fire(&mut self, reason: &'static str) {
        if std::mem::take(&mut self.armed) {
            self.addr.do_send(CancelRequest {
                id: self.id,
                reason,
            });
        }
    }
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.armed = false;
    }
}

/// Whether a server's error text says it cannot send a server-initiated request (an
/// elicitation, a sampling request) on this connection: SDKs that implement the stateless era
/// without the input-request flow refuse `ctx.elicit()` so ("elicitation via server-initiated
/// requests is unavailable", "no back-channel for server-initiated requests").
fn refuses_server_requests(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("server-initiated request")
        && (t.contains("unavailable")
            || t.contains("back-channel")
            || t.contains("not supported")
            || t.contains("cannot send"))
}

/// [`refuses_server_requests`] for the text of a tool result marked `isError`.
fn result_refuses_server_requests(result: &CallToolResult) -> bool {
    result.content.iter().any(|c| match c {
        ContentBlock::Text { text } => refuses_server_requests(text),
        _ => false,
    })
}

/// The JSON-RPC error of a request that lacks a client capability the server requires.
const MISSING_CAPABILITY: i64 = -32021;
/// The same error's code in earlier drafts of the extensions.
const MISSING_CAPABILITY_OLD: i64 = -32003;

/// Why a task on this request is invalid: we did not declare the extension.
fn undeclared_task() -> String {
    format!(
        "it answered with a task (resultType \"task\") though harness9 did not declare {} on this request (only a 2026-07-28 connection carries it); the server must not send a task here",
        server_requests::TASKS_EXTENSION
    )
}

/// Whether a result is a 2025-11-25 `CreateTaskResult` (a `task` object with a `taskId`).
fn is_old_task(raw: &super::Payload) -> bool {
    #[derive(serde::Deserialize)]
    struct Old {
        #[serde(default)]
        task: Option<Value>,
    }
    raw.parse::<Old>()
        .ok()
        .and_then(|o| o.task)
        .is_some_and(|t| t.get("taskId").is_some())
}

/// The `taskId` of a 2025-11-25 `CreateTaskResult`.
fn old_task_id(raw: &super::Payload) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Id {
        task_id: String,
    }
    #[derive(serde::Deserialize)]
    struct Old {
        task: Id,
    }
    raw.parse::<Old>().ok().map(|o| o.task.task_id)
}

/// What a `-32021` error means for the user: the capabilities the server named, and what to do.
fn missing_capability_hint(server: &str, data: Option<&Value>, stateless: bool) -> String {
    let required = data.and_then(|d| d.get("requiredCapabilities"));
    let mut names: Vec<String> = Vec::new();
    if let Some(Value::Object(caps)) = required {
        for (k, v) in caps.iter().take(8) {
            match (k.as_str(), v) {
                ("extensions", Value::Object(ext)) => {
                    names.extend(ext.keys().take(8).map(|e| format!("extension {e}")))
                }
                _ => names.push(format!("capability {k}")),
            }
        }
    }
    let what = if names.is_empty() {
        "a client capability harness9 did not declare".to_owned()
    } else {
        names.join(", ")
    };
    let tasks = names
        .iter()
        .any(|n| n.ends_with(server_requests::TASKS_EXTENSION));
    if tasks && !stateless {
        format!(
            "server \"{server}\" requires {what}, which harness9 declares only on a 2026-07-28 connection; this connection speaks an older revision (remove a \"protocolVersion\" pin from its entry, or update the server)"
        )
    } else {
        format!("server \"{server}\" requires {what}, which harness9 does not support on this connection")
    }
}

/// What to do when a stateless server cannot ask its own questions.
fn pin_hint(server: &str) -> String {
    format!(
        "server \"{server}\" cannot send its own requests (elicitation, sampling) on a 2026-07-28 connection; pin \"protocolVersion\": \"2025-11-25\" in its config entry to use this tool"
    )
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.fire("caller went away");
    }
}

impl Handler<CallServerTool> for McpServer {
    type Result = ResponseFuture<Result<CallToolResult, CallError>>;

    fn handle(&mut self, mut msg: CallServerTool, ctx: &mut Context<Self>) -> Self::Result {
        let server = self.spec.name.clone();
        let tool = msg.tool;
        if !self.session.connected || !self.accepting() {
            let reason = if self.session.connected {
                self.life.gone_reason()
            } else {
                "still starting".to_owned()
            };
            return Box::pin(async move { Err(CallError::ServerUnavailable { server, reason }) });
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
        let mut op = Op::client(
            CallTool::METHOD,
            Some(&tool),
            None,
            &msg.parent.span(),
            &self.session.otel,
        );
        let trace = op.trace_context();
        let mut round = self.call_round(
            &tool,
            msg.arguments.as_ref(),
            msg.progress,
            None,
            trace.clone(),
        );
        op.set_request_id(round.id);
        let arguments = msg.arguments;
        let writer = self.out.sender();
        // At the timeout, a full queue means the server stopped reading: say so.
        let stuck = move || writer.as_ref().is_some_and(|w| w.capacity() == 0);
        let addr = ctx.address();
        let mut guard = CancelOnDrop {
            addr: addr.clone(),
            id: round.id,
            armed: true,
        };
        let (timeout, cancel, detach) = (msg.timeout, msg.cancel, msg.detach);
        let follower = self.follower(ctx, tool.clone(), cancel.clone(), progress.clone());
        let clock = self.questions.clock.clone();
        let call = async move {
            let mut deadline = tokio::time::Instant::now() + timeout;
            // The time the server's questions stay open does not count (see `AskClock`).
            let mut asked = clock.spent();
            let paused = move || clock.spent();
            let mut rounds = 0;
            let mut reissues = 0;
            let mut url_retries = 0;
            // The answers the current round carries: a re-issued round carries them again.
            let mut carried: Option<Map<String, Value>> = None;
            loop {
                let raw = match wait_round(
                    round,
                    &mut guard,
                    (&mut deadline, &mut asked, &paused),
                    (&cancel, idle.as_ref()),
                    &stuck,
                )
                .await
                {
                    Ok(raw) => raw,
                    // Stateless era: a response stream that broke loses the request; it is
                    // sent again under a new id (a few times, within the call's timeout).
                    Err(RoundError::Reply(ReplyError::StreamBroken(why)))
                        if stateless && reissues < MAX_REISSUES =>
                    {
                        reissues += 1;
                        tracing::debug!(target: "mcp", server = %server, tool = %tool, "{why}; sending the call again");
                        let next = NextRound {
                            tool: tool.clone(),
                            arguments: arguments.clone(),
                            progress: progress.clone(),
                            answers: carried.clone(),
                            trace: trace.clone(),
                        };
                        round = next_round(&addr, next, &mut guard, deadline)
                            .await
                            .ok_or_else(|| stopped(&server, &tool))?;
                        continue;
                    }
                    // The server needs the user to open a page first (`-32042`, URL elicitation
                    // on the error path): the user is asked for each page (the same question as
                    // a URL `elicitation/create`); when every one is accepted the call is sent
                    // again, once.
                    Err(RoundError::Reply(ReplyError::Rpc(obj)))
                        if obj.code == URL_ELICITATION_REQUIRED && url_retries == 0 =>
                    {
                        url_retries += 1;
                        let started = tokio::time::Instant::now();
                        let accepted = tokio::select! {
                            biased;
                            _ = cancel.cancelled() => {
                                return Err(CallError::Cancelled { server, tool });
                            }
                            ok = open_pages(&obj, &by) => ok,
                        };
                        deadline += started.elapsed();
                        if !accepted {
                            let e = RoundError::Reply(ReplyError::Rpc(obj));
                            return Err(e.into_call_error(server, tool, timeout));
                        }
                        let next = NextRound {
                            tool: tool.clone(),
                            arguments: arguments.clone(),
                            progress: progress.clone(),
                            answers: None,
                            trace: trace.clone(),
                        };
                        round = next_round(&addr, next, &mut guard, deadline)
                            .await
                            .ok_or_else(|| stopped(&server, &tool))?;
                        continue;
                    }
                    // A capability we did not declare is required (`-32021`, and `-32003`
                    // in earlier drafts): the error names it and what to do.
                    Err(RoundError::Reply(ReplyError::Rpc(mut obj)))
                        if obj.code == MISSING_CAPABILITY || obj.code == MISSING_CAPABILITY_OLD =>
                    {
                        obj.message = format!(
                            "{}; {}",
                            obj.message.trim_end_matches('.'),
                            missing_capability_hint(&server, obj.data.as_ref(), stateless)
                        );
                        let e = RoundError::Reply(ReplyError::Rpc(obj));
                        return Err(e.into_call_error(server, tool, timeout));
                    }
                    // A stateless server that cannot send its own requests (PyPI `mcp` 2.x
                    // and FastMCP's `ctx.elicit()`): the error says so and names the pin.
                    Err(RoundError::Reply(ReplyError::Rpc(mut obj)))
                        if stateless && refuses_server_requests(&obj.message) =>
                    {
                        obj.message = format!(
                            "{}; {}",
                            obj.message.trim_end_matches('.'),
                            pin_hint(&server)
                        );
                        let e = RoundError::Reply(ReplyError::Rpc(obj));
                        return Err(e.into_call_error(server, tool, timeout));
                    }
                    Err(e) => return Err(e.into_call_error(server, tool, timeout)),
                };
                // One parse of the result; an `input_required` one is read again for its
                // requests (the rare path).
                let result = match raw.parse::<<CallTool as Request>::Result>() {
                    Ok(r) => r,
                    Err(LineError::Both) => {
                        return Err(CallError::Rpc {
                            server,
                            tool,
                            error: jsonrpc::both_result_and_error(),
                        })
                    }
                    Err(e) => {
                        return Err(CallError::InvalidResult {
                            server,
                            tool,
                            detail: e.to_string(),
                        })
                    }
                };
                let mut result = result;
                if stateless && result.is_error && result_refuses_server_requests(&result) {
                    result.content.push(ContentBlock::Text {
                        text: pin_hint(&server),
                    });
                }
                match result.result_type.as_deref() {
                    // A task for a request that did not declare the tasks extension (a
                    // handshake-era connection never does): an invalid result, never an
                    // empty success.
                    Some("task") if !stateless => {
                        return Err(CallError::InvalidResult {
                            server,
                            tool,
                            detail: undeclared_task(),
                        })
                    }
                    // The 2025-11-25 task form, asked for: followed to its result (bound by
                    // `taskTimeoutSec`, not the tool timeout).
                    _ if as_task && result.content.is_empty() && is_old_task(&raw) => {
                        let task_id = old_task_id(&raw).unwrap_or_default();
                        guard.disarm();
                        return follower.follow_old(task_id).await;
                    }
                    // The 2025-11-25 task form (`{"task": {...}}`), never asked for: not an
                    // empty success either.
                    _ if !stateless && result.content.is_empty() && is_old_task(&raw) => {
                        return Err(CallError::InvalidResult {
                            server,
                            tool,
                            detail: undeclared_task(),
                        })
                    }
                    // The handshake era has no `resultType`: whatever a server put there.
                    _ if !stateless => return Ok(result),
                    None | Some("complete") => return Ok(result),
                    // The call became a task (`io.modelcontextprotocol/tasks`): the caller
                    // gets its handle at once, or waits for its end (not bound by the tool
                    // timeout: by `taskTimeoutSec`).
                    Some("task") => {
                        let seed = task::seed(&raw).map_err(|detail| CallError::InvalidResult {
                            server: server.clone(),
                            tool: tool.clone(),
                            detail,
                        })?;
                        // The call's request is answered: nothing to withdraw.
                        guard.disarm();
                        if detach {
                            return Ok(task::handle_result(&server, &tool, &seed));
                        }
                        return follower.follow(seed.task_id.clone(), Some(seed)).await;
                    }
                    Some("input_required") if rounds < MAX_INPUT_ROUNDS => {
                        rounds += 1;
                        let interim: Interim =
                            raw.parse().map_err(|e| CallError::InvalidResult {
                                server: server.clone(),
                                tool: tool.clone(),
                                detail: e.to_string(),
                            })?;
                        // A person may be asked: each question is bounded by `ASK_TIMEOUT`,
                        // the whole by the call's cancellation, and the time it took does not
                        // count toward the call's timeout.
                        let started = tokio::time::Instant::now();
                        let extra = tokio::select! {
                            biased;
                            _ = cancel.cancelled() => {
                                return Err(CallError::Cancelled { server, tool });
                            }
                            extra = answers(interim, &by) => extra,
                        };
                        deadline += started.elapsed();
                        carried = Some(extra.clone());
                        let next = NextRound {
                            tool: tool.clone(),
                            arguments: arguments.clone(),
                            progress: progress.clone(),
                            answers: Some(extra),
                            trace: trace.clone(),
                        };
                        round = next_round(&addr, next, &mut guard, deadline)
                            .await
                            .ok_or_else(|| stopped(&server, &tool))?;
                    }
                    Some("input_required") => {
                        return Err(CallError::InvalidResult {
                            server,
                            tool,
                            detail: format!(
                                "the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
                            ),
                        })
                    }
                    Some(other) => {
                        return Err(CallError::InvalidResult {
                            server,
                            tool,
                            detail: format!("unknown resultType {other:?}"),
                        })
                    }
                }
            }
        };
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
}

/// Sends the next round of a call and points the cancel guard at its id; `None` when the
/// actor has stopped (or did not take the round before the call's deadline).
async fn next_round(
    addr: &Addr<McpServer>,
    next: NextRound,
    guard: &mut CancelOnDrop,
    deadline: tokio::time::Instant,
) -> Option<Round> {
    let r = tokio::time::timeout_at(deadline, addr.send(next))
        .await
        .ok()?
        .ok()
        .flatten()?;
    *guard = CancelOnDrop {
        addr: addr.clone(),
        id: r.id,
        armed: true,
    };
    Some(r)
}

/// The error of a call whose server actor stopped between two rounds.
fn stopped(server: &str, tool: &str) -> CallError {
    CallError::ServerExited {
        server: server.to_owned(),
        tool: tool.to_owned(),
        status: "stopped".to_owned(),
    }
}

/// Why a round ended without a reply.
enum RoundError {
    Cancelled,
    NotReading,
    Timeout,
    /// No progress within the idle timeout.
    Idle(std::time::Duration),
    Reply(ReplyError),
    Dropped,
}

impl RoundError {
    fn into_call_error(
        self,
        server: String,
        tool: String,
        after: std::time::Duration,
    ) -> CallError {
        match self {
            RoundError::Cancelled => CallError::Cancelled { server, tool },
            RoundError::NotReading => CallError::NotReading {
                server,
                tool,
                after,
            },
            RoundError::Idle(after) => CallError::Idle {
                server,
                tool,
                after,
            },
            RoundError::Timeout => CallError::Timeout {
                server,
                tool,
                after,
            },
            RoundError::Reply(ReplyError::Rpc(error)) => CallError::Rpc {
                server,
                tool,
                error,
            },
            RoundError::Reply(ReplyError::Gone(status)) => CallError::ServerExited {
                server,
                tool,
                status,
            },
            RoundError::Reply(ReplyError::TooLarge(max)) => {
                CallError::TooLarge { server, tool, max }
            }
            RoundError::Reply(ReplyError::Transport(detail) | ReplyError::StreamBroken(detail)) => {
                CallError::Transport {
                    server,
                    tool,
                    detail,
                }
            }
            RoundError::Dropped => CallError::ServerExited {
                server,
                tool,
                status: "stopped".to_owned(),
            },
        }
    }
}

/// A call's idle bound (`toolIdleTimeoutSec`): the moment of its last sign of life (a progress
/// notice, a new round), shared with the progress sink the server actor calls.
#[derive(Clone)]
struct Idle {
    after: std::time::Duration,
    base: std::time::Instant,
    /// Milliseconds after `base` of the last sign of life.
    last: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Idle {
    fn new(after: std::time::Duration) -> Self {
        Self {
            after,
            base: std::time::Instant::now(),
            last: Default::default(),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// When the call is idle for too long, as of the last sign of life.
    fn deadline(&self) -> tokio::time::Instant {
        let ms = self.last.load(std::sync::atomic::Ordering::Relaxed);
        tokio::time::Instant::from_std(self.base + std::time::Duration::from_millis(ms))
            + self.after
    }

    /// Sleeps until the idle deadline; forever without an idle bound.
    async fn sleep(idle: Option<&Idle>) {
        match idle {
            Some(i) => tokio::time::sleep_until(i.deadline()).await,
            None => std::future::pending().await,
        }
    }

    /// A progress sink that marks each notice as a sign of life and hands it on to `inner`.
    fn sink(&self, inner: Option<ProgressSink>) -> ProgressSink {
        let me = self.clone();
        ProgressSink::new(move |p| {
            me.touch();
            if let Some(s) = &inner {
                s.send(p);
            }
        })
    }
}

/// A call's deadline, the question time it has accounted for, and the server's question clock:
/// when the deadline comes while questions were open, it moves by their time.
type Deadline<'a> = (
    &'a mut tokio::time::Instant,
    &'a mut std::time::Duration,
    &'a dyn Fn() -> std::time::Duration,
);

/// Moves the deadline by the question time not yet accounted for; whether it moved.
fn extend(d: &mut Deadline<'_>) -> bool {
    let spent = (d.2)();
    let more = spent.saturating_sub(*d.1);
    *d.1 = spent;
    if more.is_zero() {
        return false;
    }
    *d.0 += more;
    true
}

/// Waits for one round's reply: room in the write queue first, then the reply, both within
/// the call's deadline (moved by the time the server's questions were open) and its
/// cancellation; an early end tells the server (the guard).
async fn wait_round(
    round: Round,
    guard: &mut CancelOnDrop,
    mut dl: Deadline<'_>,
    (cancel, idle): (&tokio_util::sync::CancellationToken, Option<&Idle>),
    stuck: &impl Fn() -> bool,
) -> Result<super::Payload, RoundError> {
    if let Some(i) = idle {
        i.touch();
    }
    if let Some(b) = round.backlog {
        // The server is not reading: wait for room, within the call's own timeout.
        tokio::select! {
            biased;
            _ = b.send() => {}
            _ = cancel.cancelled() => {
                guard.fire("cancelled by the user");
                return Err(RoundError::Cancelled);
            }
            _ = tokio::time::sleep_until(*dl.0) => {
                guard.fire("timed out");
                return Err(RoundError::NotReading);
            }
        }
    }
    if tokio::time::Instant::now() >= *dl.0 {
        // Out of time before the first look at the reply: a timeout, whatever may have
        // arrived meanwhile (so a tiny timeout times out on any machine).
        guard.fire("timed out");
        return Err(RoundError::Timeout);
    }
    let mut rx = round.rx;
    let outcome = loop {
        tokio::select! {
            biased;
            r = &mut rx => break r,
            _ = cancel.cancelled() => {
                guard.fire("cancelled by the user");
                return Err(RoundError::Cancelled);
            }
            _ = tokio::time::sleep_until(*dl.0) => {
                if extend(&mut dl) {
                    continue;
                }
                guard.fire("timed out");
                if stuck() {
                    return Err(RoundError::NotReading);
                }
                return Err(RoundError::Timeout);
            }
            _ = Idle::sleep(idle) => {
                let Some(i) = idle else { continue };
                // Progress came meanwhile, or a question was open: the wait starts again.
                if tokio::time::Instant::now() < i.deadline() {
                    continue;
                }
                if extend(&mut dl) {
                    i.touch();
                    continue;
                }
                guard.fire("no progress within the idle timeout");
                return Err(RoundError::Idle(i.after));
            }
        }
    };
    guard.disarm();
    match outcome {
        Ok(Ok(raw)) => Ok(raw),
        Ok(Err(e)) => Err(RoundError::Reply(e)),
        Err(_) => Err(RoundError::Dropped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_capability_names_it_and_what_to_do() {
        let data =
            json!({"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
        let old = missing_capability_hint("jobs", Some(&data), false);
        assert!(
            old.contains("extension io.modelcontextprotocol/tasks")
                && old.contains("only on a 2026-07-28 connection")
                && old.contains("protocolVersion"),
            "{old}"
        );
        let new = missing_capability_hint("jobs", Some(&data), true);
        assert!(new.contains("does not support"), "{new}");
        let none = missing_capability_hint("jobs", None, true);
        assert!(
            none.contains("a client capability harness9 did not declare"),
            "{none}"
        );
        let other = json!({"requiredCapabilities": {"sampling": {}}});
        assert!(missing_capability_hint("jobs", Some(&other), true).contains("capability sampling"));
    }
}
