//! What turns OpenTelemetry export on: the standard `OTEL_*` environment, else the user's
//! `[telemetry]` ([`plan`]); the exporters themselves are `harness9_actors::telemetry::export`.
//! Off by default: then nothing starts and every span is inert.

pub use harness9_actors::telemetry::export::{start, Plan, Telemetry, FLUSH_BOUND};
pub use harness9_actors::telemetry::{redact_also, written_form};

/// Registers `config`'s secrets and `${VAR}` values with the process's one registry: every
/// span, trace record and log line is cleaned of them, every printed URL, command and error
/// names the variables instead (`written_form`).
pub fn register(config: &crate::config::Config) {
    redact_also(config.secrets.iter().map(String::as_str));
    harness9_actors::telemetry::written_also(
        config
            .expansions
            .iter()
            .map(|(v, w)| (v.as_str(), w.as_str())),
    );
}

use harness9_agent::model::settings::TelemetrySettings;

/// What the environment (`env`) and the user's settings ask for; errors name the variable
/// and what it may be. `OTEL_SDK_DISABLED=true` turns everything off; `OTEL_TRACES_EXPORTER`
/// and `OTEL_METRICS_EXPORTER` (`otlp` or `none`) each override `[telemetry] export`.
pub fn plan(
    env: impl Fn(&str) -> Option<String>,
    settings: &TelemetrySettings,
) -> Result<Plan, String> {
    let get = |k: &str| {
        env(k)
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| !v.is_empty())
    };
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

/// Registers the secrets of harness9's own environment with the one registry
/// ([`redact_also`]): the model providers' keys, and the credentials in the OTLP endpoints
/// (password, query values) and header lists.
pub fn redact_process_secrets() {
    let var = |k: &str| std::env::var(k).ok();
    let keys: Vec<String> = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
        .into_iter()
        .filter_map(var)
        .collect();
    redact_also(keys.iter().map(String::as_str));
    let mut otel: Vec<String> = Vec::new();
    for k in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ] {
        otel.extend(
            var(k)
                .map(|v| harness9_actors::telemetry::url_credentials(&v))
                .unwrap_or_default(),
        );
    }
    for k in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    ] {
        otel.extend(
            var(k)
                .map(|v| harness9_actors::telemetry::header_list_values(&v))
                .unwrap_or_default(),
        );
    }
    redact_also(otel.iter().map(String::as_str));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
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
