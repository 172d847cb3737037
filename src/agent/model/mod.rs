//! Model providers: the neutral conversation types the engine speaks, and [`Provider`], which
//! streams one call to the Anthropic Messages API or an OpenAI-compatible Chat Completions
//! endpoint (OpenAI, Ollama, vLLM, llama.cpp) over awc, with retries, timeouts and cancellation.
//!
//! ```text
//! engine --ModelRequest--> Provider::complete --POST (SSE)--> provider
//!    ^                          |   anthropic.rs / openai.rs: body building, stream decoding
//!    +---StreamEvent (mpsc)-----+
//!    +---ModelReply / ModelError
//! ```
//!
//! The wire formats live in `anthropic.rs` and `openai.rs` as pure functions (no IO), with
//! what they share in `wire.rs`; `types.rs` holds the neutral types, `config.rs` the provider
//! config, `client.rs` the HTTP driver, `retry.rs` the retry policy and `errors.rs` the error
//! classification shared by both formats. `settings/` resolves the config from flags, the
//! environment and the settings files.

mod anthropic;
mod client;
mod config;
mod errors;
mod openai;
mod retry;
pub mod settings;
mod types;
mod wire;

#[cfg(test)]
mod live_tests;

pub use client::{Model, Provider};
pub use config::{MaxTokensField, ProviderConfig, ProviderKind};
pub use errors::ModelError;
pub use types::{
    arguments_problem, result_text, tool_input, Block, Message, ModelReply, ModelRequest,
    ResultPart, Role, StopReason, StreamEvent, ToolDef, Usage,
};

/// Which image types models take: resources and prompts check with it before sending one.
pub use wire::model_image_type;

/// Re-exported for the engine, which cuts argument text with it in its error results.
pub(crate) use harness9_actors::net::truncate_chars;
