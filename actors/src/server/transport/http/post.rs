//! One POST per message ([`Conn::post`]): its exchange to the trace, `202` for a
//! notification (after `initialized` the GET stream opens first), a refusal (a lost session
//! initializes again, a JSON-RPC error in the body is the reply, an `initialize` an older
//! server refuses falls back to legacy HTTP+SSE), or the reply by its content type.

use std::rc::Rc;

use awc::http::StatusCode;
use bytes::Bytes;

use super::meta::header_list;
use super::{fail, Conn, Failure, GET_OPEN_WAIT};
use crate::net::snippet;
use crate::protocol::jsonrpc::{Incoming, RequestId};
use crate::protocol::methods::{Initialize, Initialized, Notification, Request};
use crate::server::transport::{HttpStatus, TransportEvent};
/// A message being POSTed: what a retry after a re-initialization, or the legacy fallback,
/// sends again.
struct Message<'a> {
    line: Vec<u8>,
    id: Option<i64>,
    method: &'a str,
    /// The headers it carries (a call's `Mcp-Param-*`, the body's mirrors).
    extra: &'a [(String, String)],
}

/// A POST answered with an error status: the status, the error body (at most 64 KiB) and the
/// session the request was sent with.
struct Refusal {
    status: StatusCode,
    body: Bytes,
    sent_session: Option<String>,
}

impl Conn {
    /// POSTs one message and takes its answer: JSON, an SSE stream, `202`, or a refusal
    /// ([`Self::refused`]); every exchange goes to the trace.
    pub(super) async fn post(
        self: Rc<Self>,
        line: Vec<u8>,
        id: Option<i64>,
        method: &str,
        may_reinit: bool,
        extra: &[(String, String)],
    ) -> Result<(), Failure> {
        let is_init = method == Initialize::METHOD;
        if !is_init {
            // A re-initialization in progress: wait for its new session rather than send
            // without one.
            drop(self.reinit.lock().await);
        }
        let sent_session = self.session.borrow().clone();
        let url = self.target.url.clone();
        let mut resp = self
            .send_following(awc::http::Method::POST, &url, Some(&line), !is_init, extra)
            .await?;
        let status = resp.status();
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.set_session(s);
        }
        let needed = self.auth_needed(&resp);
        let error_body = if status.is_success() && needed.is_none() {
            None
        } else {
            Some(resp.body().limit(64 * 1024).await.unwrap_or_default())
        };
        self.record_exchange(id, method, &resp, extra, error_body.clone());
        if let Some(needed) = needed {
            let mut f = fail(self.needs_login(&needed), false);
            f.auth = Some(needed);
            f.needs_login = true;
            return Err(f);
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            if method == Initialized::METHOD && !self.get_started.replace(true) {
                self.open_get_stream().await;
            }
            return Ok(());
        }
        let msg = Message {
            line,
            id,
            method,
            extra,
        };
        if let Some(body) = error_body {
            let refusal = Refusal {
                status,
                body,
                sent_session,
            };
            return self.refused(msg, may_reinit, refusal).await;
        }
        self.take_reply(resp, id, is_init).await
    }
    /// One HTTP exchange to the trace: its status, session, headers and an error's body.
    fn record_exchange(
        &self,
        id: Option<i64>,
        method: &str,
        resp: &awc::ClientResponse,
        extra: &[(String, String)],
        body: Option<Bytes>,
    ) {
        self.actor
            .do_send(TransportEvent::Exchange(Box::new(HttpStatus {
                id,
                method: method.to_owned(),
                status: resp.status().as_u16(),
                session: self.session.borrow().clone(),
                request_headers: extra.to_vec(),
                response_headers: header_list(resp.headers()),
                body,
            })));
    }
    /// The GET stream is open (or refused) before any later request is sent, so a request
    /// the server sends right after `initialized` has a stream to go on (waited for at most
    /// [`GET_OPEN_WAIT`]).
    async fn open_get_stream(self: &Rc<Self>) {
        let (ready, opened) = tokio::sync::oneshot::channel();
        let c = self.clone();
        let token = self.token.clone();
        actix_rt::spawn(async move {
            token.run_until_cancelled(c.get_stream(Some(ready))).await;
        });
        let _ = tokio::time::timeout(GET_OPEN_WAIT, opened).await;
    }
    /// A POST answered with an error status: a lost session initializes again and sends the
    /// message once more; a JSON-RPC error answering this very request is its reply; an
    /// `initialize` an older server refuses falls back to legacy HTTP+SSE; else the request
    /// fails, naming the status.
    async fn refused(
        self: Rc<Self>,
        msg: Message<'_>,
        may_reinit: bool,
        refusal: Refusal,
    ) -> Result<(), Failure> {
        let Refusal {
            status,
            body,
            sent_session,
        } = refusal;
        let is_init = msg.method == Initialize::METHOD;
        let text = snippet(&body);
        let had_session = sent_session.is_some();
        let session_lost = !is_init
            && had_session
            && (status == StatusCode::NOT_FOUND
                || (status == StatusCode::BAD_REQUEST
                    && text.to_ascii_lowercase().contains("session")));
        if session_lost && may_reinit {
            self.reinit(sent_session).await?;
            let Message {
                line,
                id,
                method,
                extra,
            } = msg;
            return Box::pin(self.clone().post(line, id, method, false, extra)).await;
        }
        // A JSON-RPC error answering this very request (a stateless server's -32022
        // unsupported version, -32601 unknown method, -32020 header mismatch): it is the
        // reply, not a transport failure.
        if let (
            Some(want),
            Ok(Incoming::Response {
                id: RequestId::Number(got),
                outcome: Err(_),
            }),
        ) = (msg.id, Incoming::parse(&body))
        {
            if want == got {
                self.deliver(body, false).await;
                return Ok(());
            }
        }
        let legacy_hint = matches!(status.as_u16(), 400 | 404 | 405);
        if is_init && legacy_hint && !self.target.legacy {
            tracing::info!(target: "mcp", server = %self.target.name, "initialize got HTTP {}; trying the legacy HTTP+SSE transport", status.as_u16());
            self.clone().open_legacy().await.map_err(|f| {
                fail(
                    format!(
                        "initialize got HTTP {status} and the legacy SSE fallback failed too: {}",
                        f.error
                    ),
                    f.fatal,
                )
            })?;
            let ep = self.endpoint.borrow().clone().unwrap_or_default();
            return self.post_legacy(&ep, msg.line).await;
        }
        let hint = match status.as_u16() {
            401 | 403 => format!(
                "; check the headers of server \"{}\" in .mcp.json",
                self.target.name
            ),
            _ => String::new(),
        };
        Err(fail(format!("HTTP {status}: {text}{hint}"), false))
    }
    /// A successful POST's answer by its content type: an SSE stream pumped, a JSON body
    /// delivered, anything else an error.
    async fn take_reply(
        self: Rc<Self>,
        mut resp: awc::ClientResponse,
        id: Option<i64>,
        is_init: bool,
    ) -> Result<(), Failure> {
        let ctype = crate::net::content_type(resp.headers());
        if ctype.starts_with("text/event-stream") {
            return self.clone().pump_reply(resp, id, is_init).await;
        }
        if ctype.starts_with("application/json") {
            let body = self.read_body(resp).await?;
            if !body.is_empty() {
                self.deliver(body, is_init).await;
            }
            return Ok(());
        }
        let body = resp.body().limit(64 * 1024).await.unwrap_or_default();
        Err(fail(
            format!(
                "expected JSON or an SSE stream, got {}: {}",
                if ctype.is_empty() {
                    "no content type"
                } else {
                    &ctype
                },
                snippet(&body)
            ),
            false,
        ))
    }
}
