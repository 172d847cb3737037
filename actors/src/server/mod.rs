//! One actor per MCP server: it owns its child process (or HTTP client) and its pending map.

mod mcp_server;
mod process;
pub mod sandbox;
pub mod server_requests;
mod transport;

pub use harness9_net::http_io::{close_bodies_tcp, CloseBodies, CloseBodyStream};
pub use harness9_platform::descendants::{
    become_subreaper, end_descendants, live_descendants, spare_session, spawn_orphan_reaper,
    REAP_PERIOD,
};
pub use mcp_server::{ask, McpServer};
pub use process::{
    kill_all_groups, live_group_count, register_group, signal_name, unregister_group,
};
pub use transport::budget::{read_budget, set_read_budget, DEFAULT_READ_BUDGET};
