//! Test modules; `common` holds the shared harness.

mod asks;
mod cli;
pub mod common;
mod defects;
mod descendants;
mod doctor;
mod engine;
mod eras;
mod features;
mod fixtures;
mod hostile;
mod hostile_output;
pub mod http;
mod layers;
mod oauth;
mod opener;
mod overlong;
mod private_files;
mod reference;
mod reload;
mod runtime_options;
mod sandbox;
mod sources;
mod tool_cache;
mod trust;
mod tui;
mod tui_asks;
