//! The agent: the [`engine`] that runs turns, the [`model`] clients it calls, the
//! [`builtins`] tools it has besides the MCP servers', the [`permissions`] that decide whether
//! a call runs, asks or is refused, and [`toolsearch`], which defers MCP tools behind a search
//! when their definitions would take too much of the window.
#![warn(missing_docs)]

pub mod builtins;
pub mod engine;
pub mod model;
pub mod permissions;
pub mod toolsearch;
