//! The OTLP/HTTP-protobuf exporters of traces and metrics (posted by [`super::http::OtlpHttp`],
//! our own small blocking client: no HTTP client crate), behind [`super::redact::Redacting`];
//! the `tracing` layer that turns this crate's spans into OpenTelemetry spans; the bounded
//! flush at exit. The binary decides the [`Plan`] (the `OTEL_*` environment and the user's
//! settings); the bench binary turns it on from the environment alone. Export never waits on
//! the user's path: spans and metrics go out on the SDK's threads, a collector that is down is
//! learnt once ([`super::breaker`], with a [`Telemetry::probe`] at start), and the exit flush
//! waits only as long as [`super::breaker::exit_bound`] says (nothing for a collector known
//! down).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

use super::{breaker, http, redact};

/// The longest the exit waits for the last spans and metrics to reach a collector that
/// answered in this session ([`breaker::FLUSH_WHEN_UP`]; less when none answered yet, none
/// when it is known down).
pub const FLUSH_BOUND: Duration = breaker::FLUSH_WHEN_UP;

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
    /// Where each signal goes (traces first), as the exporters resolve it.
    endpoints: Vec<String>,
    client: http::OtlpHttp,
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

/// Where `signal` (`traces`, `metrics`) goes, as the exporter resolves it:
/// `OTEL_EXPORTER_OTLP_{SIGNAL}_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
/// `/v1/{signal}`, else the settings' endpoint, else the OTLP default on localhost:4318.
pub fn endpoint(plan: &Plan, signal: &str) -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let var = format!(
        "OTEL_EXPORTER_OTLP_{}_ENDPOINT",
        signal.to_ascii_uppercase()
    );
    env(&var)
        .or_else(|| {
            env("OTEL_EXPORTER_OTLP_ENDPOINT")
                .map(|e| format!("{}/v1/{signal}", e.trim_end_matches('/')))
        })
        .or_else(|| settings_endpoint(plan, signal))
        .unwrap_or_else(|| format!("http://localhost:4318/v1/{signal}"))
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
        endpoints: Vec::new(),
        client: client.clone(),
        tracer: None,
    };
    if plan.traces {
        let mut b = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            // A failed export is not retried: the breaker drops exports to a collector that
            // is down, and a retry's backoff would only hold the exit.
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled());
        out.endpoints.push(endpoint(plan, "traces"));
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
            .with_http_client(client)
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled());
        out.endpoints.push(endpoint(plan, "metrics"));
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
    /// Tries the first collector once, on a thread of its own, so a refused one is known
    /// (and said) before the first export and the exit does not wait for it. Called once
    /// logging is set up.
    pub fn probe(&self) {
        let Some(endpoint) = self.endpoints.first().cloned() else {
            return;
        };
        let client = self.client.clone();
        let _ = std::thread::Builder::new()
            .name("otel-probe".into())
            .spawn(move || client.probe(&endpoint));
    }

    /// Sends what is still buffered and stops the exporters, traces and metrics side by side,
    /// within [`breaker::exit_bound`] (nothing at all when every collector is known down; a
    /// collector that does not answer never holds the exit longer, and is said once).
    pub fn shutdown(self) {
        let origins: Vec<String> = self
            .endpoints
            .iter()
            .map(|e| breaker::origin(e).unwrap_or_else(|| e.clone()))
            .collect();
        let bound = breaker::exit_bound(&origins);
        if bound.is_zero() {
            tracing::debug!("telemetry: the collector is down; nothing is flushed at exit");
            // Not dropped here: a provider's drop shuts it down, which waits for an export
            // still in flight (one hung on a collector that never answers).
            std::mem::forget(self);
            return;
        }
        // Each flush says which endpoint it was for (`endpoints`: traces first) when it ends.
        let (tx, rx) = std::sync::mpsc::channel::<usize>();
        let mut waiting = Vec::new();
        let mut next = 0;
        let mut flush = |name: &str, f: Box<dyn FnOnce() + Send>| {
            let (tx, at) = (tx.clone(), next);
            next += 1;
            let spawned = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    f();
                    let _ = tx.send(at);
                });
            if spawned.is_ok() {
                waiting.push(at);
            }
        };
        // A flush that ran out of time itself is said as the outer bound's would be (the two
        // bounds are equal: whichever ends first).
        let said = move |e: &opentelemetry_sdk::error::OTelSdkError, endpoint: Option<&String>| {
            if let (opentelemetry_sdk::error::OTelSdkError::Timeout(_), Some(at)) = (e, endpoint) {
                breaker::flush_timed_out(at, bound);
            }
        };
        let endpoints = self.endpoints.clone();
        if let Some(t) = self.traces {
            let at = endpoints.first().cloned();
            let f = move || {
                if let Err(e) = t.shutdown_with_timeout(bound) {
                    said(&e, at.as_ref());
                    tracing::debug!("telemetry: spans not all sent at exit: {e}");
                }
            };
            flush("otel-flush-traces", Box::new(f));
        }
        if let Some(m) = self.metrics {
            let at = endpoints.last().cloned();
            let f = move || {
                if let Err(e) = m.shutdown_with_timeout(bound) {
                    said(&e, at.as_ref());
                    tracing::debug!("telemetry: metrics not all sent at exit: {e}");
                }
            };
            flush("otel-flush-metrics", Box::new(f));
        }
        let deadline = std::time::Instant::now() + bound;
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(done) => waiting.retain(|w| *w != done),
                Err(_) => {
                    // The exit goes on; a collector that kept it waiting is said.
                    if let Some(e) = waiting.first().and_then(|w| self.endpoints.get(*w)) {
                        breaker::flush_timed_out(e, bound);
                    }
                    return;
                }
            }
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
