//! One actor per MCP server: it owns its child process (or HTTP client) and its pending map.

mod http;
mod http_io;
mod process;
mod stdio;

pub use process::{kill_all_groups, live_group_count, register_group, unregister_group};
pub use stdio::McpServer;
