//! Reading a reply: a JSON body within `maxMessageBytes` and the read budget, an SSE stream
//! pumped event by event and resumed with `Last-Event-ID` when it ends early, and the bare TCP
//! connect that tells a broken stream from a server that is gone.

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;

use super::{fail, Conn, Failure, MAX_RESUMES, MAX_RETRY_MS};
use crate::protocol::jsonrpc::{Incoming, RequestId};
use crate::protocol::sse::SseParser;
use crate::server::transport::budget;

impl Conn {
    /// A JSON reply's body, at most `maxMessageBytes`, its bytes held against the read budget
    /// as they arrive (`budget.rs`) and until the reply is parsed.
    pub(super) async fn read_body<S>(
        &self,
        mut resp: awc::ClientResponse<S>,
    ) -> Result<Bytes, Failure>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let max = self.target.max;
        let too_big = |e: &dyn std::fmt::Display| {
            fail(
                format!("reading the reply failed: {e} (maximum message size {max} bytes)"),
                false,
            )
        };
        let mut lease = budget::Lease::new();
        let mut buf = bytes::BytesMut::new();
        if let Some(n) = resp
            .headers()
            .get(awc::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
        {
            if n > max {
                return Err(too_big(&"payload reached size limit"));
            }
            lease
                .hold(n)
                .map_err(|()| fail(budget::over_budget(&self.target.name), false))?;
            buf.reserve(n);
        }
        while let Some(chunk) = resp.next().await {
            let chunk = chunk.map_err(|e| too_big(&e))?;
            if buf.len() + chunk.len() > max {
                return Err(too_big(&"payload reached size limit"));
            }
            buf.reserve(chunk.len());
            // What the buffer takes in memory: its capacity, which grows by doubling.
            lease
                .hold(buf.capacity())
                .map_err(|()| fail(budget::over_budget(&self.target.name), false))?;
            buf.extend_from_slice(&chunk);
        }
        Ok(budget::leased(buf.freeze(), lease))
    }
    /// Reads an SSE reply to one POST. A handshake-era stream that ends before the reply but
    /// gave event ids is resumed: after its `retry` (bounded), a GET with `Last-Event-ID`
    /// carries on, at most [`MAX_RESUMES`] times; any other end before the reply is an error.
    pub(super) async fn pump_reply<S>(
        self: Rc<Self>,
        resp: awc::ClientResponse<S>,
        id: Option<i64>,
        is_init: bool,
    ) -> Result<(), Failure>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let mut parser = SseParser::new(self.target.max);
        match self.pump_events(resp, &mut parser, id, is_init).await? {
            true => return Ok(()),
            false if id.is_none() => return Ok(()),
            false => {}
        }
        for _ in 0..MAX_RESUMES {
            let Some(last) = parser.last_event_id().map(str::to_owned) else {
                break;
            };
            if self.stateless.get() || self.session.borrow().is_none() {
                break;
            }
            let wait = parser.retry_ms.unwrap_or(1000).min(MAX_RETRY_MS);
            tokio::time::sleep(Duration::from_millis(wait)).await;
            tracing::debug!(target: "mcp", server = %self.target.name, last_event_id = %last, "resuming an SSE reply that ended early");
            let url = self.target.url.clone();
            let req = self
                .request(awc::http::Method::GET, &url, true, &[])
                .insert_header(("Accept", "text/event-stream"))
                .insert_header(("Last-Event-ID", last))
                .timeout(self.target.request_timeout);
            let resp = req.send().await.map_err(|e| self.send_error(e))?;
            if !resp.status().is_success() {
                return Err(fail(
                    format!(
                        "the SSE reply ended before the response and resuming it got HTTP {}",
                        resp.status()
                    ),
                    false,
                ));
            }
            if self.pump_events(resp, &mut parser, id, is_init).await? {
                return Ok(());
            }
        }
        let dead = !self.alive().await;
        let why = if dead {
            "the server went away"
        } else {
            "the event was cut short"
        };
        let mut f = fail(
            format!("the SSE reply ended before the response ({why})"),
            dead,
        );
        // The stateless era has no resumption: the caller sends the request again.
        f.reissue = !dead && self.stateless.get();
        Err(f)
    }
    /// Delivers one SSE stream's messages until it ends; `true` once the reply to `id` came.
    pub(super) async fn pump_events<S>(
        &self,
        mut resp: awc::ClientResponse<S>,
        parser: &mut SseParser,
        id: Option<i64>,
        is_init: bool,
    ) -> Result<bool, Failure>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let mut answered = false;
        // The event being read holds its bytes against the read budget (`budget.rs`).
        let mut lease = budget::Lease::new();
        while let Some(chunk) = resp.next().await {
            let chunk = chunk.map_err(|e| fail(format!("the SSE reply broke off: {e}"), false))?;
            let events = parser
                .feed(&chunk)
                .map_err(|e| fail(e.to_string(), false))?;
            lease
                .hold(parser.buffered())
                .map_err(|()| fail(budget::over_budget(&self.target.name), false))?;
            for ev in events {
                if !(ev.event.is_empty() || ev.event == "message") || ev.data.trim().is_empty() {
                    continue;
                }
                if let (
                    Some(want),
                    Ok(Incoming::Response {
                        id: RequestId::Number(got),
                        ..
                    }),
                ) = (id, Incoming::parse(ev.data.as_bytes()))
                {
                    answered |= want == got;
                }
                let data = budget::leased(Bytes::from(ev.data), budget::Lease::new());
                self.deliver(data, is_init).await;
            }
            if answered {
                // Servers close the stream after the response; reading to its end (bounded)
                // lets the connection go back to the pool instead of being dropped.
                let drain = async {
                    while let Some(Ok(chunk)) = resp.next().await {
                        if let Ok(events) = parser.feed(&chunk) {
                            for ev in events.into_iter().filter(|e| !e.data.trim().is_empty()) {
                                self.deliver(Bytes::from(ev.data), false).await;
                            }
                        }
                    }
                };
                let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
                return Ok(true);
            }
        }
        Ok(false)
    }
    /// A bare TCP connect to the server: tells a server that is gone from a stream that ended.
    pub(super) async fn alive(&self) -> bool {
        let Ok(uri) = self.target.url.parse::<awc::http::Uri>() else {
            return true;
        };
        let host = uri
            .host()
            .unwrap_or("127.0.0.1")
            .trim_matches(['[', ']'])
            .to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            });
        matches!(
            tokio::time::timeout(
                Duration::from_secs(1),
                tokio::net::TcpStream::connect((host.as_str(), port))
            )
            .await,
            Ok(Ok(_))
        )
    }
}
