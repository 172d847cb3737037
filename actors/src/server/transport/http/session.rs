//! The session's life: initializing again after a lost session (one at a time), the GET
//! stream for the server's own messages, and the `DELETE` that ends the session.

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;

use super::{fail, Conn, Failure};
use crate::protocol::jsonrpc;
use crate::protocol::methods::Initialized;
use crate::protocol::sse::SseParser;

impl Conn {
    /// Session `stale` lost: initialize again with the remembered initialize request. One at a
    /// time: a request that lost the same session while another re-initialized only retries.
    pub(super) async fn reinit(&self, stale: Option<String>) -> Result<(), Failure> {
        let _one = self.reinit.lock().await;
        if *self.session.borrow() != stale {
            return Ok(());
        }
        tracing::info!(target: "mcp", server = %self.target.name, "session expired; initializing again");
        let init = self
            .init_line
            .borrow()
            .clone()
            .ok_or_else(|| fail("session lost before initialize", false))?;
        *self.session.borrow_mut() = None;
        let url = self.target.url.clone();
        let mut resp = self
            .send_following(awc::http::Method::POST, &url, Some(&init), false, &[])
            .await?;
        if !resp.status().is_success() {
            return Err(fail(
                format!(
                    "re-initialize after session loss got HTTP {}",
                    resp.status()
                ),
                false,
            ));
        }
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            self.set_session(s);
        }
        // Drain the reply (JSON or a short SSE stream); its id is stale and not delivered.
        let mut drained = 0usize;
        while let Some(Ok(chunk)) = resp.next().await {
            drained += chunk.len();
            if drained > self.target.max || chunk.windows(2).any(|w| w == b"}\n" || w == b"\n\n") {
                break;
            }
        }
        let note = jsonrpc::notification::<Initialized>(None);
        let note = note.strip_suffix(b"\n").unwrap_or(&note);
        let _ = self
            .send_following(awc::http::Method::POST, &url, Some(note), true, &[])
            .await;
        Ok(())
    }
    /// The optional GET stream for server-initiated messages; resumed with `Last-Event-ID`.
    pub(super) async fn get_stream(
        self: Rc<Self>,
        mut ready: Option<tokio::sync::oneshot::Sender<()>>,
    ) {
        let mut parser = SseParser::new(self.target.max);
        // One retry with a DPoP nonce the server asks for (`use_dpop_nonce`), as for a POST.
        let mut nonce_retried = false;
        loop {
            let mut req = self.request(awc::http::Method::GET, &self.target.url, true, &[]);
            req = req.insert_header(("Accept", "text/event-stream"));
            if let Some(last) = parser.last_event_id() {
                req = req.insert_header(("Last-Event-ID", last));
            }
            let sent = req.timeout(Duration::from_secs(3600 * 24)).send().await;
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            let mut resp = match sent {
                Ok(r) if r.status().is_success() => {
                    nonce_retried = false;
                    r
                }
                Ok(r) if !nonce_retried && self.auth_needed(&r).is_some_and(|n| n.nonce) => {
                    if let Some(a) = &self.auth {
                        a.note_nonce(&self.target.url, r.headers());
                    }
                    nonce_retried = true;
                    continue;
                }
                Ok(r) => {
                    tracing::debug!(target: "mcp", server = %self.target.name, status = r.status().as_u16(), "no GET stream");
                    return;
                }
                Err(e) => {
                    let f = self.send_error(e);
                    if f.fatal {
                        self.report(None, f);
                    }
                    return;
                }
            };
            while let Some(Ok(chunk)) = resp.next().await {
                let Ok(events) = parser.feed(&chunk) else {
                    break;
                };
                for ev in events {
                    if (ev.event.is_empty() || ev.event == "message") && !ev.data.trim().is_empty()
                    {
                        self.deliver(Bytes::from(ev.data), false).await;
                    }
                }
            }
            if !self.alive().await {
                self.report(
                    None,
                    fail(
                        "the server went away (its event stream closed and it refuses connections)",
                        true,
                    ),
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(
                parser.retry_ms.unwrap_or(1000).min(30_000),
            ))
            .await;
        }
    }
    pub(super) async fn close(&self) {
        if self.endpoint.borrow().is_some() || self.session.borrow().is_none() {
            return;
        }
        let req = self
            .request(awc::http::Method::DELETE, &self.target.url, true, &[])
            .send();
        match tokio::time::timeout(Duration::from_secs(2), req).await {
            Ok(Ok(r)) => {
                tracing::debug!(target: "mcp", server = %self.target.name, status = r.status().as_u16(), "session deleted")
            }
            _ => {
                tracing::debug!(target: "mcp", server = %self.target.name, "DELETE of the session failed")
            }
        }
    }
}
