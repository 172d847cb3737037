//! The actor's side of its tool list: what it keeps of each listing (`ToolsListed`: the
//! `x-mcp-header` params of HTTP tools, invalid declarations left out, the list's `ttlMs`) and
//! how a stateless-era list stays fresh: the long-lived `subscriptions/listen` request that
//! carries `notifications/tools/list_changed` (opened after connecting when the server says it
//! sends them, opened again with backoff when it ends, and by every new generation after a
//! restart), and the `ttlMs` after which it is listed again when no subscription keeps it
//! fresh.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Map, Value};

use super::{McpServer, ReplyError};
use crate::protocol::headers::{header_params, HeaderParam};
use crate::protocol::jsonrpc::METHOD_NOT_FOUND;
use crate::protocol::methods::{Listen, Request as _};
use crate::protocol::types::Tool;

/// The first wait before a listen that ended is opened again; doubled up to [`LISTEN_MAX_WAIT`].
const LISTEN_FIRST_WAIT: Duration = Duration::from_secs(1);
/// The longest wait between two listens.
const LISTEN_MAX_WAIT: Duration = Duration::from_secs(60);
/// The shortest re-list period a `ttlMs` may ask for.
const MIN_TTL: Duration = Duration::from_secs(1);
/// The longest (a day): a larger `ttlMs` waits this long.
const MAX_TTL: Duration = Duration::from_secs(86_400);

/// What the actor keeps of its tool list and how it stays fresh. Invariants: at most one
/// re-list runs at a time (`listing`; a change meanwhile sets `relist_pending` for one more);
/// at most one `ttlMs` timer is armed; `headers` holds only tools of the latest list, and only
/// when the transport mirrors them (`mirror_headers`).
#[derive(Default)]
pub(super) struct ToolListState {
    /// A re-list is running.
    listing: bool,
    /// The list changed again while it ran: list once more after it.
    relist_pending: bool,
    /// The re-list a tool list's `ttlMs` asked for.
    ttl_timer: Option<SpawnHandle>,
    /// The last tool list's `ttlMs` (reported with it, for the tool-list cache).
    pub(super) ttl: Option<u64>,
    /// The transport sends headers with each message (HTTP): tools' `x-mcp-header` params
    /// are mirrored.
    pub(super) mirror_headers: bool,
    /// With `mirror_headers`: each listed tool's `x-mcp-header` params, by tool name.
    pub(super) headers: HashMap<String, Vec<HeaderParam>>,
    /// The tools of the latest list that run only as tasks (2025-11-25).
    pub(super) task_required: HashSet<String>,
}

impl ToolListState {
    /// A re-list is wanted: whether to start it now (`false` while one runs: one more is
    /// then listed after it).
    pub(super) fn start_relist(&mut self) -> bool {
        if self.listing {
            self.relist_pending = true;
            return false;
        }
        self.listing = true;
        true
    }

    /// The running re-list ended: whether another is wanted.
    pub(super) fn relist_done(&mut self) -> bool {
        self.listing = false;
        std::mem::take(&mut self.relist_pending)
    }
}

/// A `tools/list` walk finished: the actor keeps each tool's `x-mcp-header` params (HTTP) and
/// answers with the tools to register, those with an invalid declaration left out.
#[derive(Message)]
#[rtype(result = "Arc<[Arc<Tool>]>")]
pub(in crate::server) struct ToolsListed(
    pub(in crate::server) Vec<Arc<Tool>>,
    /// The list's `ttlMs` (stateless era).
    pub(in crate::server) Option<u64>,
);

impl Handler<ToolsListed> for McpServer {
    type Result = MessageResult<ToolsListed>;

    fn handle(&mut self, msg: ToolsListed, ctx: &mut Context<Self>) -> Self::Result {
        self.fresh_for(msg.1, ctx);
        self.tools.ttl = msg.1;
        // The tools that run only as tasks (2025-11-25 `taskSupport: "required"`): their calls
        // go task-augmented to a server that takes tool calls as tasks.
        self.tools.task_required = msg
            .0
            .iter()
            .filter(|t| t.task_required())
            .map(|t| t.name.clone())
            .collect();
        if !self.tools.mirror_headers {
            return MessageResult(msg.0.into());
        }
        // Streamable HTTP must mirror x-mcp-header params, and must leave out a tool whose
        // declaration is invalid (the rest stay usable).
        let mut headers = HashMap::new();
        let mut kept = Vec::with_capacity(msg.0.len());
        for tool in msg.0 {
            // Most schemas name no header: only those that do are parsed and checked.
            if !tool.input_schema.get().contains("x-mcp-header") {
                kept.push(tool);
                continue;
            }
            let schema: Value =
                serde_json::from_str(tool.input_schema.get()).unwrap_or(Value::Null);
            match header_params(&schema) {
                Ok(p) => {
                    if !p.is_empty() {
                        headers.insert(tool.name.clone(), p);
                    }
                    kept.push(tool);
                }
                Err(why) => {
                    tracing::warn!(target: "mcp", server = %self.name, tool = %tool.name,
                        "tool left out: its x-mcp-header declaration is invalid: {why}");
                }
            }
        }
        self.tools.headers = headers;
        MessageResult(kept.into())
    }
}

impl McpServer {
    /// The `subscriptions/listen` filter: the list changes the server says it sends, and the
    /// subscribed resources; `None` when there is nothing to listen for.
    fn listen_filter(&self) -> Option<Value> {
        let caps = &self.session.server_caps;
        let mut f = Map::new();
        if caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true) {
            f.insert("toolsListChanged".to_owned(), json!(true));
        }
        if caps.flag("prompts", "listChanged") {
            f.insert("promptsListChanged".to_owned(), json!(true));
        }
        if caps.flag("resources", "listChanged") {
            f.insert("resourcesListChanged".to_owned(), json!(true));
        }
        if !self.subs.uris.is_empty() {
            f.insert(
                "resourceSubscriptions".to_owned(),
                json!(self.subs.uris.iter().collect::<Vec<_>>()),
            );
        }
        (!f.is_empty()).then(|| json!({ "notifications": f }))
    }

    /// Opens `subscriptions/listen` for list changes and resource updates (stateless era only).
    pub(super) fn listen(&mut self, ctx: &mut Context<Self>) {
        if !(self.session.connected && self.accepting()) || self.subs.listen_id.is_some() {
            return;
        }
        let Some(version) = self.stateless() else {
            return;
        };
        let Some(filter) = self.listen_filter() else {
            return;
        };
        let id = self.alloc_id();
        let params = self.client.stamp(Some(filter), version);
        let op = self.op(Listen::METHOD, None, id, &tracing::Span::none());
        let (rx, backlog) = self.send_request::<Listen>(id, Some(&params), Vec::new(), op);
        self.subs.listen_id = Some(id);
        let fut = async move {
            if let Some(b) = backlog {
                b.send().await;
            }
            rx.await
        };
        ctx.spawn(fut.into_actor(self).map(move |res, act, ctx| {
            if act.subs.listen_id == Some(id) {
                act.subs.listen_id = None;
            }
            if act.life.closing || !act.session.connected {
                return;
            }
            match res {
                // The server does not take subscriptions: it says so once; `ttlMs` remains.
                Ok(Err(ReplyError::Rpc(e))) if e.code == METHOD_NOT_FOUND => {
                    tracing::debug!(target: "mcp", server = %act.name, "no subscriptions/listen: {e}");
                    return;
                }
                Ok(Ok(_)) => act.subs.listen_wait = LISTEN_FIRST_WAIT,
                Ok(Err(e)) => tracing::debug!(target: "mcp", server = %act.name, "subscriptions/listen ended: {e:?}"),
                // Cancelled by us (a new filter): the new listen is already open.
                Err(_) => return,
            }
            let wait = act.subs.listen_wait;
            act.subs.listen_wait = (wait * 2).min(LISTEN_MAX_WAIT);
            ctx.run_later(wait, |act, ctx| act.listen(ctx));
        }));
    }

    /// The listen filter changed (a subscription): the open listen is cancelled and a new one
    /// opened with the new filter.
    pub(super) fn listen_again(&mut self, ctx: &mut Context<Self>) {
        if let Some(id) = self.subs.listen_id.take() {
            ctx.notify(super::outbound::CancelRequest {
                id,
                reason: "the subscriptions changed",
            });
        }
        self.listen(ctx);
    }

    /// After a tools/list: honour its `ttlMs` (list again once stale) unless a subscription
    /// keeps it fresh. A `ttlMs` of 0 (immediately stale) asks for no timer.
    pub(super) fn fresh_for(&mut self, ttl_ms: Option<u64>, ctx: &mut Context<Self>) {
        if let Some(h) = self.tools.ttl_timer.take() {
            ctx.cancel_future(h);
        }
        let Some(ms) = ttl_ms.filter(|ms| *ms > 0) else {
            return;
        };
        if self.subs.listen_id.is_some() || self.life.closing {
            return;
        }
        let ttl = Duration::from_millis(ms).clamp(MIN_TTL, MAX_TTL);
        self.tools.ttl_timer = Some(ctx.run_later(ttl, |act, ctx| {
            act.tools.ttl_timer = None;
            if act.subs.listen_id.is_none() {
                act.relist(ctx);
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::ToolListState;

    /// One re-list at a time: changes while it runs ask for exactly one more.
    #[test]
    fn a_change_during_a_relist_lists_once_more() {
        let mut t = ToolListState::default();
        assert!(t.start_relist());
        assert!(!t.start_relist());
        assert!(!t.start_relist());
        assert!(t.relist_done());
        assert!(t.start_relist());
        assert!(!t.relist_done());
    }
}
