//! The application around the runtime: the one [`Session`] wiring every front end uses, the
//! running [`Runtime`], the [`ConfigWatcher`] that owns hot reload, the config pipeline from
//! the files to the servers' specs ([`config`]: sources, parse, expand, trust, merge), the
//! state directory and the stores in it ([`stores`]: OAuth tokens, remembered answers, tasks,
//! the tool-list cache, saved conversations), what helps find out what happened
//! ([`diagnostics`]: `doctor`, the `--trace` file and its readers, the TUI's log file), and the
//! [`asks::InputDesk`] that answers servers' elicitation and sampling requests.
#![warn(missing_docs)]

pub mod asks;
pub mod config;
pub mod diagnostics;
pub mod edit;
pub mod elicit;
pub mod import;
pub mod permissions_import;
pub use harness9_base::private_fs;
mod runtime;
pub mod sampler;
mod session;
pub mod stores;
pub mod telemetry;
pub mod user_call;
pub mod watcher;

pub use runtime::{spawn_status_lines, Runtime};
pub use session::{HeadlessLines, RuntimeOptions, Session, SessionOptions, Start, HEADLESS_GRACE};
pub use watcher::ConfigWatcher;
