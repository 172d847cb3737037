//! Errors a tool call can end with: each names the server or tool and says what to do.

use std::time::Duration;

use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::render::human_bytes;

/// Why a tool call did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool by that name is registered.
    #[error("unknown tool \"{name}\": `harness9 mcp list` shows the servers and `harness9 mcp get <server>` their tools")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The server has the tool, but its `enabledTools`/`disabledTools` leave it out.
    #[error("tool \"{tool}\" of server \"{server}\" is left out by the server's {filter} in .mcp.json; change that list to use it")]
    ToolFiltered {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// `enabledTools` or `disabledTools`.
        filter: &'static str,
    },
    /// The tool was offered (from the tool-list cache, or before a `list_changed`) but the
    /// server's live list no longer has it.
    #[error("server \"{server}\" no longer offers tool \"{tool}\": its live tool list differs from the one the model was shown (cached or older); the next step's tool list is current")]
    ToolVanished {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
    },
    /// The owning server is not connected.
    #[error("server \"{server}\" is {reason}")]
    ServerUnavailable {
        /// The server's name in `.mcp.json` (`built-in` for a built-in tool).
        server: String,
        /// Its state (failed: ..., restarting ..., stopped).
        reason: String,
    },
    /// The call took longer than its timeout; the server was sent `notifications/cancelled`.
    #[error("tool \"{tool}\" on server \"{server}\" timed out after {}; raise toolTimeoutSec for \"{server}\" in .mcp.json if it needs longer", fmt_duration(*.after))]
    Timeout {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// The timeout that ran out: the caller's, else the server's `toolTimeoutSec`.
        after: Duration,
    },
    /// The call went longer than the server's `toolIdleTimeoutSec` without a progress
    /// notification; the server was sent `notifications/cancelled`.
    #[error("tool \"{tool}\" on server \"{server}\" sent no progress for {}; raise toolIdleTimeoutSec for \"{server}\" in .mcp.json if it works silently that long", fmt_duration(*.after))]
    Idle {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// The idle timeout that ran out.
        after: Duration,
    },
    /// The server process went away while the call was in flight.
    #[error("server \"{server}\" {status} while tool \"{tool}\" was running")]
    ServerExited {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// How it ended (`exited with status 1`, `was killed by signal 9 (SIGKILL)`).
        status: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server \"{server}\" rejected tool \"{tool}\": {error}")]
    Rpc {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// The JSON-RPC error as the server sent it.
        error: ErrorObject,
    },
    /// The reply was longer than the configured maximum message size.
    #[error("reply of server \"{server}\" to tool \"{tool}\" exceeds the maximum message size of {}; raise maxMessageBytes if it is legitimate", human_bytes(*.max))]
    TooLarge {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// The limit it went over, in bytes (`maxMessageBytes`).
        max: usize,
    },
    /// The reply was not a valid `tools/call` result.
    #[error("server \"{server}\" sent an invalid result for tool \"{tool}\": {detail}")]
    InvalidResult {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// The parse error.
        detail: String,
    },
    /// The HTTP transport could not complete the call (status, content type, broken stream).
    #[error("server \"{server}\" could not complete tool \"{tool}\": {detail}")]
    Transport {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// What went wrong, with the HTTP status or cause.
        detail: String,
    },
    /// The server stopped reading: at the call's timeout the write queue to it was full (the
    /// request waited for room, or sat in the queue unread).
    #[error("server \"{server}\" is not reading its input: tool \"{tool}\" got no answer within {} and the write queue to the server is full; restart the server if it is stuck", fmt_duration(*.after))]
    NotReading {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// How long the call waited.
        after: Duration,
    },
    /// The call became a task (`io.modelcontextprotocol/tasks`) that did not end with a
    /// result: it failed, was cancelled, expired, ran past `taskTimeoutSec` (then it was sent
    /// `tasks/cancel`), or the server lost it.
    #[error("task {task_id} of tool \"{tool}\" on server \"{server}\" {detail}")]
    Task {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
        /// The server's id of the task (cleaned for the screen).
        task_id: String,
        /// What happened and what to do.
        detail: String,
    },
    /// The caller cancelled the call; the server was sent `notifications/cancelled`.
    #[error("tool \"{tool}\" on server \"{server}\" was cancelled")]
    Cancelled {
        /// The server's name in `.mcp.json` (`built-in` for a built-in tool).
        server: String,
        /// The tool's name on the server (not the registered `mcp__` name).
        tool: String,
    },
}

impl CallError {
    /// Its low-cardinality class, as telemetry's `error.type` (a JSON-RPC error is its code).
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownTool { .. } => "unknown_tool",
            CallError::ToolFiltered { .. } => "tool_filtered",
            CallError::ToolVanished { .. } => "tool_vanished",
            CallError::ServerUnavailable { .. } => "server_unavailable",
            CallError::Timeout { .. } => "timeout",
            CallError::Idle { .. } => "idle_timeout",
            CallError::ServerExited { .. } => "server_exited",
            CallError::Rpc { .. } => "rpc_error",
            CallError::TooLarge { .. } => "too_large",
            CallError::InvalidResult { .. } => "invalid_result",
            CallError::Transport { .. } => "transport",
            CallError::NotReading { .. } => "not_reading",
            CallError::Cancelled { .. } => "cancelled",
            CallError::Task { .. } => "task",
        }
    }
}

/// `1.5 s`, `250 ms`.
pub fn fmt_duration(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        let s = d.as_secs_f64();
        if s.fract() == 0.0 {
            format!("{} s", s as u64)
        } else {
            format!("{s:.1} s")
        }
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Why a request to a server other than a tool call (resources, prompts, completion) did not
/// produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The server is not connected (not configured, failed, restarting, stopped).
    #[error("server \"{server}\" is {reason}")]
    Unavailable {
        /// The server's name in `.mcp.json`.
        server: String,
        /// Its state.
        reason: String,
    },
    /// No answer within the server's `toolTimeoutSec`; the server was sent
    /// `notifications/cancelled`.
    #[error("server \"{server}\" did not answer {method} within {}; raise toolTimeoutSec for \"{server}\" in .mcp.json if it needs longer", fmt_duration(*.after))]
    Timeout {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The request's method.
        method: &'static str,
        /// The timeout that ran out.
        after: Duration,
    },
    /// The server did not declare the capability the request needs (`resources`, `prompts`,
    /// `completions`, `logging`, `resources.subscribe`): the request is not sent.
    #[error(
        "server \"{server}\" does not offer {what} (it declares no `{capability}` capability)"
    )]
    NotOffered {
        /// The server's name in `.mcp.json`.
        server: String,
        /// What it would have done, in words.
        what: &'static str,
        /// The capability it lacks.
        capability: &'static str,
    },
    /// The server answered with an error, the reply was invalid or too large, the transport
    /// failed, or the server went away.
    #[error("server \"{server}\": {method} failed: {detail}")]
    Failed {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The request's method.
        method: &'static str,
        /// What went wrong.
        detail: String,
    },
}
