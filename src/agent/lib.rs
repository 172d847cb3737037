//! The agent: the [`engine`] that runs turns, the [`model`] clients it calls, and the
//! [`builtins`] tools it has besides the MCP servers'.
#![warn(missing_docs)]

pub mod builtins;
pub mod engine;
pub mod model;
pub mod permissions;
pub mod toolsearch;
