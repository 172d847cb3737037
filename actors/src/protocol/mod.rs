//! Pure wire types and the NDJSON codec: no actix, no IO.
//!
//! `jsonrpc` is the JSON-RPC 2.0 envelope, `types` the MCP payloads named as in the spec,
//! `methods` every method bound to its name, params and result,
//! `codec` the byte-level newline-delimited framing, `version` the protocol revisions and eras.

pub mod chars;
pub mod codec;
pub mod headers;
pub mod jsonrpc;
pub mod methods;
#[cfg(test)]
mod props;
pub mod render;
pub mod skills;
pub mod sse;
pub mod types;
pub mod version;
