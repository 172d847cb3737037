//! Test modules; `common` holds the shared harness.

mod cli;
pub mod common;
mod engine;
mod fixtures;
mod hostile;
mod hostile_output;
mod http;
mod reference;
mod reload;
mod trust;
mod tui;
