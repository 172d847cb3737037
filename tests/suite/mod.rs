//! Test modules; `common` holds the shared harness.

pub mod common;
mod cli;
mod fixtures;
mod reference;
