//! The exporter wrapper that takes the session's known secrets (the values of the servers'
//! `env` and `headers`, the model's key) out of every string a span carries before it leaves:
//! a server's error text that echoes a token never reaches the collector.

use std::sync::{OnceLock, RwLock};

use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not looked for (a one-letter value would redact everything).
const MIN_SECRET: usize = 4;

/// The secrets of this process's sessions (the exporter is the process's, as OpenTelemetry's
/// providers are).
fn secrets() -> &'static RwLock<Vec<String>> {
    static S: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    S.get_or_init(|| RwLock::new(Vec::new()))
}

/// Adds `values` to what every exported span is cleaned of.
pub fn redact_also<'a>(values: impl IntoIterator<Item = &'a str>) {
    let Ok(mut s) = secrets().write() else {
        return;
    };
    for v in values {
        if v.len() >= MIN_SECRET && !s.iter().any(|k| k == v) {
            s.push(v.to_owned());
        }
    }
}

fn clean(text: &str, secrets: &[String]) -> Option<String> {
    let mut out: Option<String> = None;
    for s in secrets {
        let cur = out.as_deref().unwrap_or(text);
        if cur.contains(s.as_str()) {
            out = Some(cur.replace(s.as_str(), REDACTED));
        }
    }
    out
}

fn clean_kv(kv: &mut KeyValue, secrets: &[String]) {
    if let Value::String(s) = &kv.value {
        if let Some(c) = clean(s.as_str(), secrets) {
            kv.value = Value::from(c);
        }
    }
}

/// A span exporter that redacts, then hands the batch on.
#[derive(Debug)]
pub(crate) struct Redacting<E>(pub(crate) E);

impl<E: SpanExporter> SpanExporter for Redacting<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        let known = secrets().read().map(|s| s.clone()).unwrap_or_default();
        if !known.is_empty() {
            for span in &mut batch {
                redact_span(span, &known);
            }
        }
        self.0.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.0.set_resource(resource);
    }
}

fn redact_span(span: &mut SpanData, known: &[String]) {
    if let Some(c) = clean(&span.name, known) {
        span.name = c.into();
    }
    span.attributes
        .iter_mut()
        .for_each(|kv| clean_kv(kv, known));
    if let opentelemetry::trace::Status::Error { description } = &span.status {
        if let Some(c) = clean(description, known) {
            span.status = opentelemetry::trace::Status::error(c);
        }
    }
    for e in &mut span.events.events {
        if let Some(c) = clean(&e.name, known) {
            e.name = c.into();
        }
        e.attributes.iter_mut().for_each(|kv| clean_kv(kv, known));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_secret_is_taken_out() {
        let known = vec!["tok-12345".to_owned(), "hdr-secret".to_owned()];
        assert_eq!(
            clean("bad token tok-12345 and hdr-secret, tok-12345", &known).as_deref(),
            Some("bad token [redacted] and [redacted], [redacted]")
        );
        assert_eq!(clean("nothing here", &known), None);
    }
}
