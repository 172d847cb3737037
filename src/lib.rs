//! harness9: the agent, the application wiring, the front ends (the TUI and the headless CLI)
//! around the `harness9-actors` runtime.
#![warn(missing_docs)]

pub mod agent;
pub mod app;
pub mod base;
pub mod cli;
pub use base::sanitize;
pub mod tui;
