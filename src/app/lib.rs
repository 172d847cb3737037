//! The application around the runtime: the one [`Session`] wiring every front end uses, the
//! running [`Runtime`], the [`ConfigWatcher`] that owns hot reload, the `.mcp.json` parser
//! ([`config`]) and its trust store ([`trust`]), the OAuth token store ([`oauth_store`]), the saved
//! conversations ([`conversations`]), VS Code input values ([`input_vars`]), the `--trace` file
//! and the TUI's log file, and the [`asks::InputDesk`] that answers servers' elicitation and
//! sampling requests.
#![warn(missing_docs)]

pub mod asks;
pub mod config;
mod config_entry;
mod config_formats;
#[cfg(test)]
mod config_props;
pub mod conversations;
pub mod doctor;
pub mod edit;
pub mod elicit;
pub mod import;
pub mod input_vars;
pub mod log_file;
pub mod oauth_store;
pub mod paths;
pub mod permission_store;
pub mod permissions_import;
pub use harness9_base::private_fs;
pub mod pending_tasks;
mod runtime;
pub mod sampler;
mod session;
pub mod sources;
pub mod task_store;
pub mod telemetry;
pub mod tool_cache;
pub mod trace_file;
pub mod trace_replay;
pub mod trace_stats;
pub mod trust;
pub mod user_call;
pub mod watcher;

pub use runtime::{spawn_event_printer, Runtime};
pub use session::{RuntimeOptions, Session, SessionOptions, Start, HEADLESS_GRACE};
pub use watcher::ConfigWatcher;
