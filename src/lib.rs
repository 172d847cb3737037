//! harness9: the command line (`cli`) over the layers below it, each its own member crate so
//! that a wrong arrow does not compile. From the top, each layer may use only those under it:
//!
//! 1. this crate: `cli` and the binary's `main`;
//! 2. [`tui`] (`harness9-tui`), the interactive front end;
//! 3. [`app`] (`harness9-app`), the session wiring, config, trust and the stores;
//! 4. [`agent`] (`harness9-agent`), the turn engine, model clients, built-ins, permissions;
//! 5. [`base`] (`harness9-base`), private files, bounded reads, time, the sanitizer;
//! 6. `harness9-actors`, the MCP client runtime.
//!
//! The layers are re-exported here under their short names, the paths tests and benches use.
#![warn(missing_docs)]

pub use harness9_agent as agent;
pub use harness9_app as app;
pub use harness9_base as base;
pub use harness9_base::sanitize;
pub mod cli;
pub use harness9_tui as tui;
