//! Test modules; `common` holds the shared harness.

mod cli;
pub mod common;
mod fixtures;
mod http;
mod reference;
mod reload;
mod tui;
