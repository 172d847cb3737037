//! Inbound, server to client: what a server sends us: replies routed to their pending request
//! (the fast path first), the server's own requests answered through the server-requests seam
//! (`server_requests.rs`: `ping` and `roots/list` at once;
//! elicitation and sampling asked of the front end in a spawned future, withdrawn on the
//! server's `notifications/cancelled`; else an error), notifications
//! (list_changed starts a bounded re-list, progress goes to the call's sink, logging to
//! tracing and, like resource updates and resource or prompt list changes, to the supervisor
//! as a notice), and over-long messages (their id sniffed to fail that request). Notices go
//! with `try_send`, dropped and counted when the supervisor is behind, and carry at most
//! [`MAX_NOTICE_TEXT`] bytes of a log line.

use actix::prelude::*;
use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;

use super::ask;
use super::handshake::list_tools;
use super::{McpServer, Payload, ReplyError};
use crate::messages::{NoticeKind, ServerEvent, ServerEventKind, ToolProgress};
use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::jsonrpc::{self, fast_response_id, sniff_id, Incoming, RequestId};
use crate::protocol::methods::{
    Cancelled, LoggingMessage, Notification, Progress, PromptListChanged, ResourceListChanged,
    ResourceUpdated, SubscriptionsAcknowledged, ToolListChanged,
};
use crate::server::server_requests;
use crate::telemetry::{Op, Outcome};
use crate::trace::Direction;

/// The line that answers a server's request `id`, its span (`op`) ended with the outcome.
fn reply_line(id: &RequestId, answer: &Result<Value, ErrorObject>, mut op: Op) -> Vec<u8> {
    match answer {
        Ok(result) => {
            op.end(Outcome::Ok);
            jsonrpc::result_line(id, result)
        }
        Err(e) => {
            op.end(Outcome::Rpc {
                code: e.code,
                message: &e.message,
            });
            jsonrpc::error_line(id, e)
        }
    }
}

/// The most of one log line a notice carries (the wire trace keeps it whole).
const MAX_NOTICE_TEXT: usize = 4096;

impl McpServer {
    pub(super) fn on_line(&mut self, line: Bytes, ctx: &mut Context<Self>) {
        if let Some(n) = fast_response_id(&line) {
            if let Some(p) = self.out.take(n) {
                let id = Some(RequestId::Number(n));
                self.trace(
                    Direction::Recv,
                    &line,
                    id,
                    Some(p.method),
                    Some(p.sent.elapsed()),
                );
                p.settle(Ok(Payload::Line(line)));
                return;
            }
        }
        let msg = match Incoming::parse(&line) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(target: "mcp", server = %self.name, error = %e,
                    line = %String::from_utf8_lossy(&line[..line.len().min(200)]), "skipped a line that is not JSON-RPC");
                return;
            }
        };
        match msg {
            Incoming::Response { id, outcome } => {
                let pending = match id {
                    RequestId::Number(n) => self.out.take(n),
                    RequestId::String(_) => None,
                };
                let Some(p) = pending else {
                    self.trace(Direction::Recv, &line, Some(id), None, None);
                    tracing::debug!(target: "mcp", server = %self.name, "reply to no pending request (late or cancelled)");
                    return;
                };
                self.trace(
                    Direction::Recv,
                    &line,
                    Some(id),
                    Some(p.method),
                    Some(p.sent.elapsed()),
                );
                let reply = match outcome {
                    Ok(raw) => Ok(Payload::Raw(raw.to_owned())),
                    Err(e) => Err(ReplyError::Rpc(e)),
                };
                p.settle(reply);
            }
            Incoming::Request { id, method, params } => {
                self.trace(
                    Direction::Recv,
                    &line,
                    Some(id.clone()),
                    Some(&method),
                    None,
                );
                let params: Option<Value> = params.and_then(|p| serde_json::from_str(p.get()).ok());
                let method = method.into_owned();
                // Its span, under the trace context its `_meta` carries.
                let op = Op::incoming(
                    &method,
                    params.as_ref(),
                    Some(id.to_string()),
                    &self.session.otel,
                );
                if ask::is_ask(&method) {
                    self.ask(id, method, params, op, ctx);
                    return;
                }
                let answer =
                    server_requests::answer(&method, params.as_ref(), &self.roots, &self.cwd);
                self.write(reply_line(&id, &answer, op), Some(id), &method);
            }
            Incoming::Notification { method, params } => {
                self.trace(Direction::Recv, &line, None, Some(&method), None);
                self.on_notification(&method, params, ctx);
            }
        }
    }

    /// A question for a person (elicitation, sampling): asked in a spawned future, answered
    /// when the answer comes, never if the server cancels the request first; at most
    /// [`ask::MAX_OPEN_ASKS`] wait at once.
    fn ask(
        &mut self,
        id: RequestId,
        method: String,
        params: Option<Value>,
        op: Op,
        ctx: &mut Context<Self>,
    ) {
        if !self.questions.has_room_for(&id) {
            let e = ErrorObject {
                code: jsonrpc::INTERNAL_ERROR,
                message: format!(
                    "too many questions open (at most {}), or a repeated request id",
                    ask::MAX_OPEN_ASKS
                ),
                data: None,
            };
            self.write(reply_line(&id, &Err(e), op), Some(id), &method);
            return;
        }
        let handler = self.questions.input.clone();
        let server = self.spec.name.clone();
        let cwd = self.cwd.clone();
        let m = method.clone();
        let open = ask::OpenAsk::new(&self.questions.clock);
        let parent = crate::telemetry::Parent::of(&op.span());
        let fut = async move {
            let _open = open;
            ask::ask(handler, server, m, params, &cwd, ask::ASK_TIMEOUT, parent).await
        };
        let key = id.clone();
        let handle = ctx.spawn(fut.into_actor(self).map(move |answer, act, _| {
            act.questions.asks.remove(&key);
            // Withdrawn (the future dropped): the span ends as `cancelled`.
            act.write(reply_line(&key, &answer, op), Some(key), &method);
        }));
        self.questions.asks.insert(id, handle);
    }

    /// The server gave up on one of its requests: a question still open is withdrawn (the
    /// handler sees its reply channel close) and gets no answer.
    fn on_cancelled(&mut self, params: Option<&RawValue>, ctx: &mut Context<Self>) {
        let Some(v) = params.and_then(|p| serde_json::from_str::<Value>(p.get()).ok()) else {
            return;
        };
        let id = match v.get("requestId") {
            Some(Value::Number(n)) => n.as_i64().map(RequestId::Number),
            Some(Value::String(s)) => Some(RequestId::String(s.clone())),
            _ => None,
        };
        if let Some(handle) = id.and_then(|id| self.questions.asks.remove(&id)) {
            tracing::debug!(target: "mcp", server = %self.name, "the server withdrew its question");
            ctx.cancel_future(handle);
        }
    }

    /// A notification from the server, by its method.
    fn on_notification(
        &mut self,
        method: &str,
        params: Option<&RawValue>,
        ctx: &mut Context<Self>,
    ) {
        match method {
            ToolListChanged::METHOD => self.relist(ctx),
            ResourceListChanged::METHOD => self.notice(NoticeKind::ResourcesChanged),
            SubscriptionsAcknowledged::METHOD => self.on_acknowledged(params),
            PromptListChanged::METHOD => self.notice(NoticeKind::PromptsChanged),
            ResourceUpdated::METHOD => self.on_resource_updated(params),
            Cancelled::METHOD => self.on_cancelled(params, ctx),
            Progress::METHOD => self.on_progress(params),
            LoggingMessage::METHOD => self.on_log(params),
            _ => {
                tracing::debug!(target: "mcp", server = %self.name, method, "notification ignored")
            }
        }
    }

    /// The filter the server honours: a subscription change is done once it shows.
    fn on_acknowledged(&mut self, params: Option<&RawValue>) {
        let honored: Vec<String> = params
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|v| {
                serde_json::from_value(v.pointer("/notifications/resourceSubscriptions")?.clone())
                    .ok()
            })
            .unwrap_or_default();
        self.subs.acknowledged(&honored);
    }

    /// A subscribed resource changed: a notice naming it.
    fn on_resource_updated(&mut self, params: Option<&RawValue>) {
        let uri = params
            .and_then(|p| {
                serde_json::from_str::<<ResourceUpdated as Notification>::Params<'_>>(p.get()).ok()
            })
            .and_then(|v| v.get("uri").and_then(Value::as_str).map(str::to_owned));
        if let Some(uri) = uri {
            self.notice(NoticeKind::ResourceUpdated { uri });
        }
    }

    /// Progress of one of our requests: to its call's sink.
    fn on_progress(&mut self, params: Option<&RawValue>) {
        let Some(p) = params.and_then(|p| {
            serde_json::from_str::<<Progress as Notification>::Params<'_>>(p.get()).ok()
        }) else {
            return;
        };
        tracing::info!(target: "mcp::progress", server = %self.name, progress = p.progress, total = ?p.total, message = ?p.message);
        if let Some(sink) = p
            .progress_token
            .as_i64()
            .and_then(|t| self.out.progress.get(&t))
        {
            sink.send(ToolProgress {
                server: self.spec.name.clone(),
                progress: p.progress,
                total: p.total,
                message: p.message,
            });
        }
    }

    /// A log line of the server's: a notice (at most [`MAX_NOTICE_TEXT`] bytes of it) and
    /// tracing at its level (whole).
    fn on_log(&mut self, params: Option<&RawValue>) {
        let Some(m) = params.and_then(|p| {
            serde_json::from_str::<<LoggingMessage as Notification>::Params<'_>>(p.get()).ok()
        }) else {
            return;
        };
        let data = match &m.data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let logger = m.logger.as_deref().unwrap_or("");
        // A log line is kept whole in the trace; a notice carries at most 4 KiB of it.
        let mut end = data.len().min(MAX_NOTICE_TEXT);
        while !data.is_char_boundary(end) {
            end -= 1;
        }
        self.notice(NoticeKind::Log {
            level: m.level.chars().take(16).collect(),
            logger: m.logger.as_ref().map(|l| l.chars().take(64).collect()),
            text: data[..end].to_owned(),
        });
        match m.level.as_str() {
            "debug" => {
                tracing::debug!(target: "mcp::server", server = %self.name, logger, "{data}")
            }
            "info" | "notice" => {
                tracing::info!(target: "mcp::server", server = %self.name, logger, "{data}")
            }
            "warning" => {
                tracing::warn!(target: "mcp::server", server = %self.name, logger, "{data}")
            }
            _ => {
                tracing::error!(target: "mcp::server", server = %self.name, logger, level = %m.level, "{data}")
            }
        }
    }

    /// Hands a notice to the supervisor without waiting: a full mailbox drops it (counted).
    fn notice(&mut self, kind: NoticeKind) {
        let ev = ServerEvent {
            server: self.spec.name.clone(),
            generation: self.generation,
            kind: ServerEventKind::Notice(kind),
        };
        if self.events.try_send(ev).is_err() {
            self.dropped_notices += 1;
            if self.dropped_notices.is_power_of_two() {
                tracing::warn!(target: "mcp", server = %self.name, dropped = self.dropped_notices,
                    "the supervisor is behind; server notices dropped");
            }
        }
    }

    /// Lists the tools again (bounded like the handshake) and reports the new list; one
    /// re-list at a time, a change meanwhile lists once more after it.
    pub(super) fn relist(&mut self, ctx: &mut Context<Self>) {
        if !self.session.connected || self.life.closing {
            return;
        }
        if !self.tools.start_relist() {
            return;
        }
        // A re-list is bounded like the handshake.
        let bound = self.spec.startup_timeout;
        let list = list_tools(ctx.address(), self.spec.max_tools);
        let fut = async move {
            tokio::time::timeout(bound, list).await.unwrap_or_else(|_| {
                Err(format!(
                    "tools/list did not finish within {} (startupTimeoutSec)",
                    crate::error::fmt_duration(bound)
                ))
            })
        };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            let again = act.tools.relist_done();
            match res {
                Ok(tools) => act.events.do_send(ServerEvent {
                    server: act.spec.name.clone(),
                    generation: act.generation,
                    kind: ServerEventKind::ToolsChanged {
                        tools,
                        ttl_ms: act.tools.ttl,
                    },
                }),
                Err(e) => tracing::warn!(target: "mcp", server = %act.name, "tools/list after list_changed failed: {e}"),
            }
            if again {
                act.relist(ctx);
            }
        }));
    }

    /// A line given up for the read budget: its call (id sniffed) fails naming the budget.
    pub(super) fn on_over_budget(&mut self, prefix: Bytes) {
        let id = sniff_id(&prefix);
        let error = crate::server::transport::budget::over_budget(&self.name);
        tracing::warn!(target: "mcp", server = %self.name, id = ?id, "{error}");
        if let Some(RequestId::Number(n)) = id {
            if let Some(p) = self.out.take(n) {
                p.settle(Err(ReplyError::Transport(error)));
            }
        }
    }

    pub(super) fn on_too_long(&mut self, prefix: Bytes, max: usize) {
        let id = sniff_id(&prefix);
        tracing::warn!(target: "mcp", server = %self.name, id = ?id, max, "discarded a message over the maximum message size");
        if let Some(RequestId::Number(n)) = id {
            if let Some(p) = self.out.take(n) {
                p.settle(Err(ReplyError::TooLarge(max)));
            }
        }
    }
}
