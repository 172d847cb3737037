//! A tool call (`CallServerTool`), the hot path: a `ResponseFuture` that waits for room in the
//! write queue and for the reply within the call's timeout, or its cancellation; a call that
//! ends early (timeout, cancel, the caller gone) tells the server with `notifications/cancelled`.

use actix::prelude::*;

use super::requests::CancelRequest;
use super::{McpServer, ReplyError};
use crate::error::CallError;
use crate::messages::CallServerTool;
use crate::protocol::jsonrpc::{self, LineError};
use crate::protocol::types::{CallToolParams, CallToolResult, RequestMeta};

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

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.fire("caller went away");
    }
}

impl Handler<CallServerTool> for McpServer {
    type Result = ResponseFuture<Result<CallToolResult, CallError>>;

    fn handle(&mut self, msg: CallServerTool, ctx: &mut Context<Self>) -> Self::Result {
        let server = self.spec.name.clone();
        let tool = msg.tool;
        if !self.connected || self.closing || self.writer.is_none() {
            let reason = if self.connected {
                self.gone_reason()
            } else {
                "still starting".to_owned()
            };
            return Box::pin(async move { Err(CallError::ServerUnavailable { server, reason }) });
        }
        let id = self.alloc_id();
        let meta = msg.progress.map(|sink| {
            self.progress.insert(id, sink);
            RequestMeta { progress_token: id }
        });
        let params = CallToolParams {
            name: &tool,
            arguments: msg.arguments.as_ref(),
            meta,
        };
        let line = jsonrpc::request_line(id, "tools/call", Some(&params));
        let (rx, backlog) = self.request("tools/call", line, id);
        let writer = self.writer.clone();
        // At the timeout, a full queue means the server stopped reading: say so.
        let stuck = move || writer.as_ref().is_some_and(|w| w.capacity() == 0);
        let mut guard = CancelOnDrop {
            addr: ctx.address(),
            id,
            armed: true,
        };
        let (timeout, cancel) = (msg.timeout, msg.cancel);
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + timeout;
            if let Some(b) = backlog {
                // The server is not reading: wait for room, within the call's own timeout.
                tokio::select! {
                    biased;
                    _ = b.send() => {}
                    _ = cancel.cancelled() => {
                        guard.fire("cancelled by the user");
                        return Err(CallError::Cancelled { server, tool });
                    }
                    _ = tokio::time::sleep_until(deadline) => {
                        guard.fire("timed out");
                        return Err(CallError::NotReading { server, tool, after: timeout });
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline {
                // Out of time before the first look at the reply: a timeout, whatever may have
                // arrived meanwhile (so a tiny timeout times out on any machine).
                guard.fire("timed out");
                return Err(CallError::Timeout {
                    server,
                    tool,
                    after: timeout,
                });
            }
            let outcome = tokio::select! {
                biased;
                r = rx => r,
                _ = cancel.cancelled() => {
                    guard.fire("cancelled by the user");
                    return Err(CallError::Cancelled { server, tool });
                }
                _ = tokio::time::sleep_until(deadline) => {
                    guard.fire("timed out");
                    if stuck() {
                        return Err(CallError::NotReading { server, tool, after: timeout });
                    }
                    return Err(CallError::Timeout { server, tool, after: timeout });
                }
            };
            guard.disarm();
            match outcome {
                Ok(Ok(raw)) => match raw.parse::<CallToolResult>() {
                    Ok(r) => Ok(r),
                    Err(LineError::Both) => Err(CallError::Rpc {
                        server,
                        tool,
                        error: jsonrpc::both_result_and_error(),
                    }),
                    Err(e) => Err(CallError::InvalidResult {
                        server,
                        tool,
                        detail: e.to_string(),
                    }),
                },
                Ok(Err(ReplyError::Rpc(error))) => Err(CallError::Rpc {
                    server,
                    tool,
                    error,
                }),
                Ok(Err(ReplyError::Gone(status))) => Err(CallError::ServerExited {
                    server,
                    tool,
                    status,
                }),
                Ok(Err(ReplyError::TooLarge(max))) => {
                    Err(CallError::TooLarge { server, tool, max })
                }
                Ok(Err(ReplyError::Transport(detail))) => Err(CallError::Transport {
                    server,
                    tool,
                    detail,
                }),
                Err(_) => Err(CallError::ServerExited {
                    server,
                    tool,
                    status: "stopped".to_owned(),
                }),
            }
        })
    }
}
