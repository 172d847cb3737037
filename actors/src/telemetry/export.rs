//! The OTLP/HTTP-protobuf exporters of traces and metrics (posted by [`super::http::OtlpHttp`],
//! our own small blocking client: no HTTP client crate), behind [`super::redact::Redacting`];
//! the `tracing` layer that turns this crate's spans into OpenTelemetry spans; the bounded
//! flush at exit. The binary decides the [`Plan`] (the `OTEL_*` environment and the user's
//! settings); the bench binary turns it on from the environment alone.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

use super::{http, redact};

/// The longest the exit waits for the last spans and metrics to reach the collector.
pub const FLUSH_BOUND: Duration = Duration::from_secs(5);

/// Which signals go out, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Spans exported.
    pub traces: bool,
    /// Metrics exported.
    pub metrics: bool,
    /// The endpoint from the settings, used only when no `OTEL_EXPORTER_OTLP_*ENDPOINT` is set.
    pub endpoint: Option<String>,
    /// Tool arguments and results on the tool spans.
    pub record_content: bool,
}

/// The running exporters: flushed and shut down (bounded) by [`Telemetry::shutdown`].
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    metrics: Option<SdkMeterProvider>,
    /// The tracer the `tracing` layer records through.
    pub tracer: Option<opentelemetry_sdk::trace::Tracer>,
}

/// The endpoint for `signal` (`traces`, `metrics`) from the settings, when no environment
/// variable names one (the exporter reads those itself, and a programmatic one would win).
fn settings_endpoint(plan: &Plan, signal: &str) -> Option<String> {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let var = format!(
        "OTEL_EXPORTER_OTLP_{}_ENDPOINT",
        signal.to_ascii_uppercase()
    );
    if set("OTEL_EXPORTER_OTLP_ENDPOINT") || set(&var) {
        return None;
    }
    plan.endpoint.as_ref().map(|e| format!("{e}/v1/{signal}"))
}

/// Starts the exporters `plan` asks for; `None` when it asks for none.
pub fn start(plan: &Plan) -> Result<Option<Telemetry>, String> {
    if !plan.traces && !plan.metrics {
        return Ok(None);
    }
    // `service.name` is harness9 unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES, which
    // the builder reads) names it otherwise.
    let mut resource = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let named = !env("OTEL_SERVICE_NAME").trim().is_empty()
        || env("OTEL_RESOURCE_ATTRIBUTES").contains("service.name=");
    if !named {
        resource = resource.with_service_name("harness9");
    }
    let resource = resource.build();
    let client = http::OtlpHttp::new();
    let mut out = Telemetry {
        traces: None,
        metrics: None,
        tracer: None,
    };
    if plan.traces {
        let mut b = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone());
        if let Some(e) = settings_endpoint(plan, "traces") {
            b = b.with_endpoint(e);
        }
        let exporter = b
            .build()
            .map_err(|e| format!("cannot start the OTLP span exporter: {e}"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(redact::Redacting(exporter))
            .with_resource(resource.clone())
            .build();
        out.tracer = Some(provider.tracer("harness9"));
        out.traces = Some(provider);
    }
    if plan.metrics {
        let mut b = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client);
        if let Some(e) = settings_endpoint(plan, "metrics") {
            b = b.with_endpoint(e);
        }
        let exporter = b
            .build()
            .map_err(|e| format!("cannot start the OTLP metric exporter: {e}"))?;
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(resource)
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        out.metrics = Some(provider);
    }
    super::enable(plan.traces, plan.metrics, plan.record_content);
    Ok(Some(out))
}

impl Telemetry {
    /// Sends what is still buffered and stops the exporters, within [`FLUSH_BOUND`] in all
    /// (a collector that does not answer never holds the exit longer).
    pub fn shutdown(self) {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("otel-flush".into())
            .spawn(move || {
                if let Some(t) = &self.traces {
                    if let Err(e) = t.shutdown_with_timeout(FLUSH_BOUND) {
                        tracing::debug!("telemetry: spans not all sent at exit: {e}");
                    }
                }
                if let Some(m) = &self.metrics {
                    if let Err(e) = m.shutdown_with_timeout(FLUSH_BOUND) {
                        tracing::debug!("telemetry: metrics not all sent at exit: {e}");
                    }
                }
                let _ = tx.send(());
            });
        if spawned.is_ok() {
            // Done, or the bound: either way the exit goes on.
            let _ = rx.recv_timeout(FLUSH_BOUND);
        }
    }
}

/// The `tracing` layer that exports this crate's spans (target [`super::TARGET`] only: no log
/// line becomes a span event), with the conventions' attributes only (no thread, source
/// location, target or timings).
pub fn layer<S>(tracer: opentelemetry_sdk::trace::Tracer) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_threads(false)
        .with_location(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target(super::TARGET, tracing::Level::TRACE),
        )
}
