//! Message-level tracing: every JSON-RPC message to or from a server, as a record for sinks.
//!
//! Server actors always emit a `tracing` event (target `mcp::wire`); when a [`WireTap`] is given
//! they also send a [`WireRecord`] to it (the `--trace` JSONL writer, the TUI's trace view).

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

use crate::protocol::jsonrpc::RequestId;

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Send,
    /// Server to client.
    Recv,
}

impl Direction {
    /// `send` or `recv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Send => "send",
            Direction::Recv => "recv",
        }
    }
}

/// One traced message.
#[derive(Debug, Clone)]
pub struct WireRecord {
    /// When the message was queued for writing (sent) or read (received).
    pub ts: SystemTime,
    /// The server's name in `.mcp.json`.
    pub server: Arc<str>,
    /// Sent by us, or received from the server.
    pub dir: Direction,
    /// Its id, if any.
    pub id: Option<RequestId>,
    /// Its method; for a response, the method of the request it answers.
    pub method: Option<String>,
    /// For a response: time since the request was written.
    pub latency_us: Option<u64>,
    /// The raw message, without the newline (secrets are redacted by the sink); empty for an
    /// HTTP response record that carried no message (e.g. 202 to a notification).
    pub message: Bytes,
    /// HTTP transports: the response status.
    pub http_status: Option<u16>,
    /// HTTP transports: the `Mcp-Session-Id` in use.
    pub session: Option<String>,
    /// HTTP transports: the headers of the exchange (credential values redacted).
    pub http: Option<Arc<HttpExchange>>,
    /// The era the connection speaks (`handshake` or `stateless`), once decided.
    pub era: Option<&'static str>,
}

/// The headers of one HTTP exchange, for the trace: what we added to the request (the
/// configured headers are left out: they may be credentials) and the response's (with
/// `set-cookie` and authentication values redacted).
#[derive(Debug, Clone, Default)]
pub struct HttpExchange {
    /// Request headers we added (`Mcp-Method`, `MCP-Protocol-Version`, `Mcp-Param-*`, ...).
    pub request_headers: Vec<(String, String)>,
    /// Response headers.
    pub response_headers: Vec<(String, String)>,
}

/// Where wire records go: a bounded channel; a sink that falls behind a flood loses records
/// (counted by the server actor) rather than growing without end.
pub type WireTap = tokio::sync::mpsc::Sender<WireRecord>;

/// Records a tap holds before it drops.
pub const TAP_CAPACITY: usize = 16 * 1024;

/// A new tap and its receiving end.
pub fn tap_channel() -> (WireTap, tokio::sync::mpsc::Receiver<WireRecord>) {
    tokio::sync::mpsc::channel(TAP_CAPACITY)
}
