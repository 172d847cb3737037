"""tests/python/server.py with the OpenTelemetry SDK configured, for harness9's telemetry test.

The PyPI `mcp` SDK opens a SERVER span for each request it handles, parented by the
`traceparent` in the request's `params._meta`; this script exports those spans over OTLP/HTTP
to OTEL_EXPORTER_OTLP_ENDPOINT (as `service.name` = `py-fixture`), one at a time, and flushes
them at exit. It adds one tool, `leak`, that fails with a JSON-RPC error quoting the secret
in LEAK_SECRET: harness9 must not export it.
"""

import atexit
import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


class SentBy(SpanProcessor):
    """Marks every span this process makes (`test.sent_by` = `py-fixture`): the test tells the
    server's spans from harness9's by who sent them (the collector's span API keeps no resource),
    not by guessing from what they carry."""

    def on_start(self, span, parent_context=None):
        span.set_attribute("test.sent_by", "py-fixture")


provider = TracerProvider(resource=Resource.create({"service.name": "py-fixture"}))
provider.add_span_processor(SentBy())
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
atexit.register(provider.shutdown)

from mcp.shared.exceptions import MCPError  # noqa: E402

import server as fixture  # noqa: E402


@fixture.server.tool()
def leak() -> str:
    """Fails, quoting the secret it was given."""
    raise MCPError(-32001, f"denied for token {os.environ.get('LEAK_SECRET', '')}")


if __name__ == "__main__":
    try:
        fixture.server.run()
    finally:
        provider.shutdown()
