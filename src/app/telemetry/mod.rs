//! OpenTelemetry export: what turns it on (the standard `OTEL_*` environment, else the user's
//! `[telemetry]`), the OTLP/HTTP-protobuf exporters of traces and metrics (posted by
//! [`http::OtlpHttp`], our own small blocking client: no HTTP client crate), the redaction of
//! the session's secrets from every exported span, and the bounded flush at exit. Off by
//! default: then nothing here runs and the spans of `harness9_actors::telemetry` are inert.

mod http;
mod redact;

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

pub use redact::redact_also;

use harness9_agent::model::settings::TelemetrySettings;

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

/// What the environment (`env`) and the user's settings ask for; errors name the variable
/// and what it may be. `OTEL_SDK_DISABLED=true` turns everything off; `OTEL_TRACES_EXPORTER`
/// and `OTEL_METRICS_EXPORTER` (`otlp` or `none`) each override `[telemetry] export`.
pub fn plan(
    env: impl Fn(&str) -> Option<String>,
    settings: &TelemetrySettings,
) -> Result<Plan, String> {
    let get = |k: &str| env(k).map(|v| v.trim().to_ascii_lowercase()).filter(|v| !v.is_empty());
    if get("OTEL_SDK_DISABLED").as_deref() == Some("true") {
        return Ok(Plan::default());
    }
    let signal = |var: &str| -> Result<bool, String> {
        match get(var).as_deref() {
            None => Ok(settings.otlp),
            Some("otlp") => Ok(true),
            Some("none") => Ok(false),
            Some(other) => Err(format!(
                "{var}={other} is not supported: harness9 exports with \"otlp\" (or \"none\")"
            )),
        }
    };
    let traces = signal("OTEL_TRACES_EXPORTER")?;
    let metrics = signal("OTEL_METRICS_EXPORTER")?;
    if traces || metrics {
        for var in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        ] {
            match get(var).as_deref() {
                None | Some("http/protobuf") => {}
                Some(other) => {
                    return Err(format!(
                    "{var}={other} is not supported: harness9 exports OTLP over HTTP with protobuf; set it to \"http/protobuf\" (a collector's port 4318)"
                ))
                }
            }
        }
    }
    let content = get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .map(|v| v == "true")
        .unwrap_or(settings.record_content);
    Ok(Plan {
        traces,
        metrics,
        endpoint: settings
            .endpoint
            .as_ref()
            .map(|e| e.trim_end_matches('/').to_owned()),
        record_content: content,
    })
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
    let var = format!("OTEL_EXPORTER_OTLP_{}_ENDPOINT", signal.to_ascii_uppercase());
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
    let resource = Resource::builder()
        .with_service_name("harness9")
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
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
    harness9_actors::telemetry::enable(plan.traces, plan.metrics, plan.record_content);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn off_unless_the_environment_or_the_user_says_so() {
        let none = TelemetrySettings::default();
        assert_eq!(plan(env(&[]), &none), Ok(Plan::default()));
        let p = plan(env(&[("OTEL_TRACES_EXPORTER", "otlp")]), &none).unwrap_or_default();
        assert!(p.traces && !p.metrics);
        let user = TelemetrySettings {
            otlp: true,
            endpoint: Some("http://c:4318/".into()),
            record_content: false,
        };
        let p = plan(env(&[("OTEL_METRICS_EXPORTER", "none")]), &user).unwrap_or_default();
        assert!(p.traces && !p.metrics);
        assert_eq!(p.endpoint.as_deref(), Some("http://c:4318"));
        let p = plan(env(&[("OTEL_SDK_DISABLED", "true")]), &user).unwrap_or_default();
        assert_eq!(p, Plan::default());
    }

    #[test]
    fn what_cannot_be_done_is_said() {
        let none = TelemetrySettings::default();
        let e = plan(env(&[("OTEL_TRACES_EXPORTER", "jaeger")]), &none);
        assert!(matches!(e, Err(m) if m.contains("OTEL_TRACES_EXPORTER=jaeger")));
        let e = plan(
            env(&[
                ("OTEL_TRACES_EXPORTER", "otlp"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ]),
            &none,
        );
        assert!(matches!(e, Err(m) if m.contains("http/protobuf")));
    }
}
