//! harness9: config, app wiring and the headless CLI around the `harness9-actors` runtime.
#![warn(missing_docs)]

pub mod app;
pub mod builtins;
pub mod cli;
pub mod config;
#[cfg(test)]
mod config_props;
pub mod engine;
pub mod log_file;
pub mod model;
pub mod run;
pub mod sanitize;
pub mod trace_file;
pub mod trust;
pub mod tui;
