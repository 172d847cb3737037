//! Test modules; `common` holds the shared harness.

mod cli;
pub mod common;
mod engine;
mod fixtures;
mod http;
mod overlong;
mod reference;
mod reload;
mod tui;
