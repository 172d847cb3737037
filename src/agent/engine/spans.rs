//! The agent's OpenTelemetry spans, after the GenAI semantic conventions: a turn is an
//! `invoke_agent harness9` span, each model request a `chat {model}` client span (provider,
//! models, tokens in and out, finish reason), each tool call an `execute_tool {tool}` span
//! under which the MCP `tools/call` span goes. Off (no exporter): every span is
//! `Span::none()`, nothing is formatted. Never recorded: prompts, answers, tool arguments and
//! results, unless the user opted in (`[telemetry] record_content`), and then only a tool
//! call's arguments and result.

use harness9_actors::telemetry::{parent_or_root, record_content, TARGET};
use serde_json::Value;
use tracing::field::Empty;
use tracing::Span;

use crate::model::{ProviderConfig, StopReason, Usage};

/// The most of a tool call's arguments or result an opted-in span carries.
const MAX_CONTENT: usize = 8 * 1024;

/// A turn: `invoke_agent harness9`, under the session's span.
pub(super) fn turn() -> Span {
    let root = parent_or_root(&Span::none());
    tracing::info_span!(target: TARGET, parent: &root, "invoke_agent",
        otel.name = "invoke_agent harness9", otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent", gen_ai.agent.name = "harness9",
        gen_ai.usage.input_tokens = Empty, gen_ai.usage.output_tokens = Empty,
        error.type = Empty, otel.status_code = Empty)
}

/// One model request: `chat {model}`.
pub fn chat(parent: &Span, p: &ProviderConfig) -> Span {
    let span = tracing::info_span!(target: TARGET, parent: parent, "chat",
        otel.name = %format_args!("chat {}", p.model), otel.kind = "client",
        gen_ai.operation.name = "chat", gen_ai.provider.name = p.kind.name(),
        gen_ai.request.model = %p.model, gen_ai.response.model = Empty,
        server.address = Empty, server.port = Empty,
        gen_ai.usage.input_tokens = Empty, gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty, error.type = Empty, otel.status_code = Empty);
    if !span.is_disabled() {
        if let Ok(u) = url::Url::parse(&p.base_url) {
            if let Some(h) = u.host_str() {
                span.record("server.address", h);
            }
            if let Some(port) = u.port_or_known_default() {
                span.record("server.port", i64::from(port));
            }
        }
        span.record("gen_ai.response.model", p.model.as_str());
    }
    span
}

/// The model request's reply on its span: tokens and why it stopped.
pub fn chat_done(span: &Span, usage: &Usage, stop: &StopReason) {
    if span.is_disabled() {
        return;
    }
    // As signed integers: an unsigned one is exported as text.
    span.record("gen_ai.usage.input_tokens", tokens(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", tokens(usage.output_tokens));
    let reason = match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_call",
        StopReason::MaxTokens => "length",
        StopReason::Other(_) => "other",
    };
    span.record("gen_ai.response.finish_reasons", reason);
}

/// A failed span: `error.type` (a low-cardinality class, never a message that could carry a
/// secret) and the error status.
pub fn failed(span: &Span, kind: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
}

/// A turn's tokens, summed.
pub(super) fn turn_done(span: &Span, usage: &Usage) {
    if span.is_disabled() {
        return;
    }
    // As signed integers: an unsigned one is exported as text.
    span.record("gen_ai.usage.input_tokens", tokens(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", tokens(usage.output_tokens));
}

/// One tool call: `execute_tool {tool}`, with the model's call id; the opted-in arguments.
pub(super) fn tool(parent: &Span, name: &str, call_id: &str, arguments: &Value) -> Span {
    let span = tracing::info_span!(target: TARGET, parent: parent, "execute_tool",
        otel.name = %format_args!("execute_tool {name}"), otel.kind = "internal",
        gen_ai.operation.name = "execute_tool", gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = if name.starts_with("mcp__") { "extension" } else { "function" },
        gen_ai.tool.call.arguments = Empty, gen_ai.tool.call.result = Empty,
        error.type = Empty, otel.status_code = Empty);
    if !span.is_disabled() && record_content() {
        span.record(
            "gen_ai.tool.call.arguments",
            capped(arguments.to_string()).as_str(),
        );
    }
    span
}

/// The tool call's end: `tool_error` when its result is an error; the opted-in result.
pub(super) fn tool_done(span: &Span, is_error: bool, result: &str) {
    if span.is_disabled() {
        return;
    }
    if is_error {
        failed(span, "tool_error");
    } else if record_content() {
        span.record(
            "gen_ai.tool.call.result",
            capped(result.to_owned()).as_str(),
        );
    }
}

fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn capped(mut s: String) -> String {
    if s.len() > MAX_CONTENT {
        let mut end = MAX_CONTENT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
