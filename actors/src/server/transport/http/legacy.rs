//! The legacy HTTP+SSE transport of 2024-11-05: a GET stream whose first `endpoint` event
//! names where to POST (on the same origin only, or the connection fails), and which carries
//! every message from the server.

use std::rc::Rc;

use bytes::Bytes;
use futures_util::StreamExt;

use super::redirects::{resolve, same_origin};
use super::{fail, Conn, Failure, TransportEvent};
use crate::net::snippet;
use crate::protocol::sse::SseParser;

impl Conn {
    /// Legacy HTTP+SSE: GET the URL, wait for the `endpoint` event, keep reading messages.
    pub(super) async fn open_legacy(self: Rc<Self>) -> Result<(), Failure> {
        let url = self.target.url.clone();
        let resp = self.send_following(awc::http::Method::GET, &url, None, false, &[]);
        let mut resp = tokio::time::timeout(self.target.request_timeout, resp)
            .await
            .map_err(|_| {
                fail(
                    format!(
                        "no response from {url} within {} s",
                        self.target.request_timeout.as_secs()
                    ),
                    false,
                )
            })??;
        if !resp.status().is_success() {
            let body = resp.body().limit(64 * 1024).await.unwrap_or_default();
            return Err(fail(
                format!(
                    "legacy SSE GET {url}: HTTP {}: {}",
                    resp.status(),
                    snippet(&body)
                ),
                false,
            ));
        }
        let mut parser = SseParser::new(self.target.max);
        let endpoint = loop {
            let next = tokio::time::timeout(self.target.request_timeout, resp.next()).await;
            let chunk = match next {
                Ok(Some(Ok(c))) => c,
                Ok(Some(Err(e))) => {
                    return Err(fail(format!("legacy SSE stream broke: {e}"), true))
                }
                Ok(None) => {
                    return Err(fail(
                        "legacy SSE stream ended before the endpoint event",
                        true,
                    ))
                }
                Err(_) => return Err(fail("no endpoint event on the legacy SSE stream", false)),
            };
            let events = parser
                .feed(&chunk)
                .map_err(|e| fail(e.to_string(), false))?;
            if let Some(ev) = events.iter().find(|e| e.event == "endpoint") {
                break resolve(&url, ev.data.trim());
            }
        };
        if !same_origin(&endpoint, &url) {
            return Err(fail(
                format!(
                    "the legacy SSE endpoint event names {endpoint}, another origin than {url}; \
                     refusing to send requests (and the configured headers) there"
                ),
                true,
            ));
        }
        tracing::info!(target: "mcp", server = %self.target.name, %endpoint, "legacy HTTP+SSE transport");
        *self.endpoint.borrow_mut() = Some(endpoint);
        self.actor.do_send(TransportEvent::Kind("sse"));
        let c = self.clone();
        let token = self.token.clone();
        actix_rt::spawn(async move {
            token
                .run_until_cancelled(async move {
                    while let Some(Ok(chunk)) = resp.next().await {
                        let Ok(events) = parser.feed(&chunk) else {
                            break;
                        };
                        for ev in events {
                            if (ev.event.is_empty() || ev.event == "message")
                                && !ev.data.trim().is_empty()
                            {
                                c.deliver(Bytes::from(ev.data), false).await;
                            }
                        }
                    }
                    c.report(None, fail("the legacy SSE stream closed", true));
                })
                .await;
        });
        Ok(())
    }

    pub(super) async fn post_legacy(&self, endpoint: &str, line: Vec<u8>) -> Result<(), Failure> {
        let mut resp = self
            .send_following(awc::http::Method::POST, endpoint, Some(&line), false, &[])
            .await?;
        if resp.status().is_success() {
            return Ok(());
        }
        let body = resp.body().limit(64 * 1024).await.unwrap_or_default();
        Err(fail(
            format!("HTTP {}: {}", resp.status(), snippet(&body)),
            false,
        ))
    }
}
