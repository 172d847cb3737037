//! harness9's MCP client runtime on actix actors.
//!
//! ```text
//! caller --CallTool--> ToolRegistry --CallServerTool--> McpServer --stdin--> child process
//!                          ^                                |
//!            ServerTools / ServerGone                 ServerEvent
//!                          |                                v
//!                     ServerSupervisor --StatusChanged--> subscribers (TUI, CLI)
//! ```
//!
//! [`protocol`] is the `harness9-protocol` crate (pure: no actix, no tokio, no IO), re-exported. [`messages`] holds every cross-actor message.
#![warn(missing_docs)]

pub mod error;
mod framing;
pub mod messages;
pub mod naming;
pub mod registry;
pub mod server;
pub mod skills;
pub mod spec;
pub mod supervisor;
pub mod tool_cache;
pub mod trace;

pub use error::CallError;
pub use harness9_net as net;
pub use harness9_net::opener;
pub use harness9_oauth as oauth;
pub use harness9_protocol as protocol;
pub use harness9_telemetry as telemetry;
pub use registry::ToolRegistry;
pub use server::McpServer;
pub use spec::{Hold, Pinned, RestartPolicy, Roots, SandboxSpec, ServerSpec, TransportSpec};
pub use supervisor::ServerSupervisor;

/// Mailbox capacity of the runtime's actors: `send` waits only past this many queued messages.
pub const MAILBOX: usize = 1 << 16;

/// Whether the async runtime is gone: an actor that never ran is started by actix while its
/// context is dropped, after the runtime has shut down (a front end that returned early).
/// Work started then (a child process, a task, a timer) would panic; every `started` that
/// starts such work asks this first and stops instead.
pub fn runtime_gone() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}
