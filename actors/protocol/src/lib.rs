//! MCP's wire, pure: the JSON-RPC envelope, the typed method table, the payloads, the NDJSON and
//! SSE framing. No actix, no tokio, no IO: the crate depends on serde, bytes (and `bytestring`) and hashing only, and
//! `tests/suite/layers.rs` keeps it so (the runtime in `harness9-actors` does the reading and
//! writing, and re-exports this crate as `harness9_actors::protocol`).
//!
//! `jsonrpc` is the JSON-RPC 2.0 envelope, `types` the MCP payloads named as in the spec,
//! `methods` every method bound to its name, params and result,
//! `codec` the byte-level newline-delimited framing, `version` the protocol revisions and eras,
//! `rawjson` JSON text kept as sent (tools' schemas) and its validator, `tools_page` the fast
//! read of a `tools/list` page (serde_json stays the judge of anything it declines).
#![warn(missing_docs)]

pub mod call_result;
pub mod chars;
pub mod codec;
pub mod headers;
pub mod jsonrpc;
pub mod methods;
#[cfg(test)]
mod props;
pub mod rawjson;
pub mod render;
pub mod skills;
pub mod sse;
pub mod tools_page;
pub mod types;
pub mod version;
