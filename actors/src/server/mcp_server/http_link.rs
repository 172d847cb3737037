//! The actor's end of its HTTP task (`server/http.rs`): starting it, and what it reports
//! (incoming lines, failed requests, HTTP statuses for the trace, the transport in use, its end).
//! A fatal failure stops the actor like a child's exit, so the supervisor's restarts are shared.

use std::time::{Duration, SystemTime};

use actix::prelude::*;
use tokio::sync::mpsc;

use super::requests::WRITE_QUEUE;
use super::{McpServer, ReplyError};
use crate::protocol::jsonrpc::RequestId;
use crate::server::http;
use crate::spec::TransportSpec;
use crate::trace::{Direction, HttpExchange, WireRecord};

impl McpServer {
    pub(super) fn start_http(&mut self, ctx: &mut Context<Self>) {
        let TransportSpec::Http { url, headers, sse } = &self.spec.transport else {
            return;
        };
        let target = http::HttpTarget {
            name: self.name.clone(),
            url: url.clone(),
            headers: headers.clone(),
            legacy: *sse,
            max: self.spec.max_message_bytes,
            request_timeout: self.spec.startup_timeout.max(self.spec.tool_timeout)
                + Duration::from_secs(5),
            connect_timeout: self.spec.startup_timeout.min(Duration::from_secs(10)),
            param_headers: self.param_headers.clone(),
            oauth: self.spec.oauth.clone(),
        };
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        self.writer = Some(tx);
        self.link = super::Link::Http;
        let addr = ctx.address();
        let events = http::HttpEvents {
            inbound: addr.clone().recipient(),
            failed: addr.clone().recipient(),
            status: addr.clone().recipient(),
            kind: addr.clone().recipient(),
            closed: addr.recipient(),
        };
        actix_rt::spawn(http::run(target, rx, events));
    }
}

impl Handler<http::Inbound> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: http::Inbound, ctx: &mut Context<Self>) {
        self.on_line(msg.0, ctx);
    }
}

impl Handler<http::TransportFailed> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: http::TransportFailed, ctx: &mut Context<Self>) {
        // A missing scope fails one request of a connected server; before it is connected
        // (`server/discover`, `initialize`, the first `tools/list`) there is no connection
        // without it: the server needs a login, never a fallback to the other era.
        let needs_login = msg.needs_login || (msg.step_up && !self.connected);
        self.needs_login |= needs_login;
        if let Some(p) = msg.id.and_then(|id| self.pending.remove(&id)) {
            if let Some(id) = msg.id {
                self.progress.remove(&id);
            }
            let err = if msg.reissue {
                ReplyError::StreamBroken(msg.error.clone())
            } else {
                ReplyError::Transport(msg.error.clone())
            };
            let _ = p.tx.send(Err(err));
        }
        // A refused token ends the connection too: the server then shows `needs login` (and
        // its tools leave the table) instead of failing every call while it looks connected.
        if (msg.fatal || needs_login) && !self.closing {
            tracing::info!(target: "mcp", server = %self.name, "connection lost: {}", msg.error);
            let lost = format!("lost its connection ({})", msg.error);
            self.exit_reason.get_or_insert(msg.error);
            self.fail_all(&lost);
            self.writer = None;
            ctx.stop();
        }
    }
}

impl Handler<http::HttpStatus> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: http::HttpStatus, _ctx: &mut Context<Self>) {
        tracing::debug!(target: "mcp::wire", server = %self.name, dir = "recv", id = ?msg.id,
            method = %msg.method, http_status = msg.status, session = msg.session.as_deref().unwrap_or(""));
        if let Some(tap) = &self.tap {
            self.tapped(tap.try_send(WireRecord {
                ts: SystemTime::now(),
                server: self.name.clone(),
                dir: Direction::Recv,
                id: msg.id.map(RequestId::Number),
                method: Some(msg.method),
                latency_us: None,
                // An error reply's body: a failed handshake reads from the trace alone.
                message: msg.body.unwrap_or_default(),
                http_status: Some(msg.status),
                session: msg.session,
                http: Some(std::sync::Arc::new(HttpExchange {
                    request_headers: msg.request_headers,
                    response_headers: msg.response_headers,
                })),
                era: self.era.map(|e| e.label()),
            }));
        }
    }
}

impl Handler<http::TransportKind> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: http::TransportKind, _ctx: &mut Context<Self>) {
        self.kind = msg.0;
    }
}

impl Handler<http::TransportClosed> for McpServer {
    type Result = ();

    fn handle(&mut self, _msg: http::TransportClosed, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
