//! The MCP client's spans through the real OpenTelemetry SDK (an in-memory exporter): the
//! kinds (which Phoenix's API does not keep, so the end-to-end test cannot read them), names,
//! attributes, error statuses, and the remote parent a server's `_meta` gives. Its own process:
//! it turns the process-wide telemetry switch on.

use harness9_actors::telemetry::{self, Conn, Op, Outcome, TraceContext};
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Span;
use tracing_subscriber::layer::SubscriberExt as _;

fn attr<'a>(s: &'a SpanData, key: &str) -> Option<&'a Value> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(s: &SpanData, key: &str) -> String {
    attr(s, key).map(|v| v.to_string()).unwrap_or_default()
}

#[test]
fn requests_are_client_spans_a_servers_request_a_server_span_under_its_meta() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("test");
    let subscriber = tracing_subscriber::registry().with(telemetry::export::layer(tracer));
    let _guard = tracing::subscriber::set_default(subscriber);
    telemetry::enable(true, false, false);
    let root =
        tracing::info_span!(target: telemetry::TARGET, "session", otel.name = "harness9 test");
    telemetry::set_root(root.clone());
    let conn = Conn {
        server: "py".into(),
        transport: "tcp",
        address: Some(("127.0.0.1".into(), 8080)),
        version: Some("2025-11-25"),
        session: Some(telemetry::hash_session("sess-1")),
    };

    // A tool call: CLIENT, named after the tool, its trace context in `_meta`; ends as a tool
    // error.
    let mut call = Op::client("tools/call", Some("greet"), Some(7), &Span::none(), &conn);
    let tc = call
        .trace_context()
        .expect("a recorded span has a trace context");
    let stamped = tc.stamp(Some(json!({"name": "greet"}))).unwrap_or_default();
    assert_eq!(stamped["_meta"]["traceparent"], json!(tc.traceparent));
    call.end(Outcome::ToolError);
    drop(call);
    // A JSON-RPC error.
    let mut list = Op::client("prompts/get", Some("review"), Some(8), &Span::none(), &conn);
    list.end(Outcome::Rpc {
        code: -32602,
        message: "no such prompt",
    });
    drop(list);
    // A request the server sends, carrying our call's context: a SERVER span under it.
    let params = json!({"_meta": {"traceparent": tc.traceparent}});
    let mut asked = Op::incoming("elicitation/create", Some(&params), Some("3".into()), &conn);
    asked.end(Outcome::Ok);
    drop(asked);
    // A method nobody knows is named `other`, never what the server wrote.
    let mut odd = Op::incoming("x\u{1b}[31m/evil", None, None, &conn);
    odd.end(Outcome::Ok);
    drop(odd);
    Op::notification("notifications/initialized", &Span::none(), &conn);
    telemetry::end_root();
    drop(root);
    let _ = provider.force_flush();

    let spans = exporter.get_finished_spans().expect("spans");
    let by = |name: &str| {
        spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
            panic!(
                "no span {name}: {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        })
    };
    let session = by("harness9 test");
    let call = by("tools/call greet");
    assert_eq!(call.span_kind, SpanKind::Client);
    assert_eq!(call.parent_span_id, session.span_context.span_id());
    assert_eq!(text(call, "mcp.method.name"), "tools/call");
    assert_eq!(text(call, "gen_ai.tool.name"), "greet");
    assert_eq!(text(call, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(call, "jsonrpc.request.id"), "7");
    assert_eq!(text(call, "network.transport"), "tcp");
    assert_eq!(text(call, "server.address"), "127.0.0.1");
    assert_eq!(attr(call, "server.port"), Some(&Value::I64(8080)));
    assert_eq!(text(call, "mcp.protocol.version"), "2025-11-25");
    assert_eq!(text(call, "mcp.session.id").len(), 32);
    assert!(!text(call, "mcp.session.id").contains("sess-1"));
    assert_eq!(text(call, "error.type"), "tool_error");
    assert!(matches!(call.status, Status::Error { .. }));
    assert_eq!(
        format!(
            "00-{}-{}-01",
            call.span_context.trace_id(),
            call.span_context.span_id()
        ),
        tc.traceparent
    );

    let prompt = by("prompts/get review");
    assert_eq!(prompt.span_kind, SpanKind::Client);
    assert_eq!(text(prompt, "gen_ai.prompt.name"), "review");
    assert_eq!(text(prompt, "error.type"), "-32602");
    assert_eq!(text(prompt, "rpc.response.status_code"), "-32602");
    assert_eq!(
        prompt.status,
        Status::Error {
            description: "no such prompt".into()
        }
    );

    let asked = by("elicitation/create");
    assert_eq!(asked.span_kind, SpanKind::Server);
    assert_eq!(asked.parent_span_id, call.span_context.span_id());
    assert!(asked.parent_span_is_remote);
    assert_eq!(asked.span_context.trace_id(), call.span_context.trace_id());
    assert_eq!(text(asked, "jsonrpc.request.id"), "3");

    let odd = by("other");
    assert_eq!(odd.span_kind, SpanKind::Server);
    assert_eq!(text(odd, "mcp.method.name"), "other");
    // No `_meta`: under the session.
    assert_eq!(odd.parent_span_id, session.span_context.span_id());

    let note = by("notifications/initialized");
    assert_eq!(note.span_kind, SpanKind::Client);
    assert!(matches!(note.status, Status::Unset));

    // After the session's span ended, nothing opens a trace of its own.
    let late = Op::client("notifications/cancelled", None, None, &Span::none(), &conn);
    assert!(late.is_inert());
    let _: Option<TraceContext> = late.trace_context();
}
