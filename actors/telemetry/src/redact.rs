//! The session's one registry of known secrets, and the cleaning every way out shares: the
//! span exporter (a server's error text that echoes a token never reaches the collector), the
//! `--trace` file and the log writers (stderr and the TUI's file) all take every registered
//! value out of the text they carry.
//!
//! What is registered: every value a config's `${VAR}` or `${input:ID}` expanded to, wherever
//! it was used (`command`, `args`, `env`, `cwd`, `url`, `headers`, OAuth fields), the values of
//! `env`, `envFile` and `headers`, the token part of a scheme-prefixed header value
//! (`Bearer X`, `Basic X`, `token X`), OAuth grants, the model's key. A value shorter than
//! [`MIN_SECRET_LEN`] characters is never looked for, and neither are the values of a few
//! variables that name public facts of the machine ([`PUBLIC_VARS`]: `HOME`, `USER`, ...).

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

const REDACTED: &str = "[redacted]";

/// Values shorter than this many characters are not looked for: a one-letter value would
/// redact every `a`, and a short one (`true`, `8080`, `stdio`) words and numbers everywhere.
/// Six characters keep every real credential (API keys, tokens, passwords worth the name) and
/// leave common short words alone.
pub const MIN_SECRET_LEN: usize = 6;

/// Variables whose values are public facts of the machine, not secrets: registering them
/// would make every path in a log unreadable (`${HOME}/bin/server`).
pub const PUBLIC_VARS: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "PWD",
    "PATH",
    "SHELL",
    "TMPDIR",
    "TMP",
    "TEMP",
    "LANG",
    "TERM",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "workspaceFolder",
];

/// Whether `value` is long enough to be looked for.
pub fn worth_hiding(value: &str) -> bool {
    value.trim().chars().count() >= MIN_SECRET_LEN
}

/// The secrets in one value: the value itself and, for a scheme-prefixed credential
/// (`Bearer X`, `Basic X`, `token X`: a word of letters, one space, the rest), the rest alone,
/// so a server that quotes the bare token is cleaned too. Only those [`worth_hiding`].
pub fn secret_parts(value: &str) -> Vec<&str> {
    let mut parts = vec![value];
    if let Some((scheme, rest)) = value.split_once(' ') {
        let rest = rest.trim();
        if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()) {
            parts.push(rest);
        }
    }
    parts.retain(|p| worth_hiding(p));
    parts
}

/// The secrets of this process's sessions (the exporter is the process's, as OpenTelemetry's
/// providers are), longest first so a whole header value goes before its token part.
fn secrets() -> &'static RwLock<Vec<String>> {
    static S: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    S.get_or_init(|| RwLock::new(Vec::new()))
}

/// Adds `values` (each with its [`secret_parts`]) to what every exported span, trace record
/// and log line is cleaned of. A registered value stays for the process: a secret removed by
/// a reload may still be quoted by a server that saw it.
pub fn redact_also<'a>(values: impl IntoIterator<Item = &'a str>) {
    let Ok(mut s) = secrets().write() else {
        return;
    };
    let before = s.len();
    for v in values {
        for p in secret_parts(v) {
            if !s.iter().any(|k| k == p) {
                s.push(p.to_owned());
            }
        }
    }
    if s.len() != before {
        s.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
}

/// `text` with every registered secret replaced by `[redacted]`.
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let Ok(known) = secrets().read() else {
        return Cow::Borrowed(text);
    };
    match clean(text, &known) {
        Some(c) => Cow::Owned(c),
        None => Cow::Borrowed(text),
    }
}

/// Every `${VAR}` value with its written form, longest value first.
fn expansions() -> &'static RwLock<Vec<(String, String)>> {
    static S: OnceLock<RwLock<Vec<(String, String)>>> = OnceLock::new();
    S.get_or_init(|| RwLock::new(Vec::new()))
}

/// Registers `(value, written)` pairs: a config's `${VAR}` values and their `${VAR}` form, so
/// what is printed ([`written_form`]) names the variable, never its value. Each value is a
/// secret too ([`redact_also`]).
pub fn written_also<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let pairs: Vec<(&str, &str)> = pairs.into_iter().filter(|(v, _)| worth_hiding(v)).collect();
    redact_also(pairs.iter().map(|(v, _)| *v));
    let Ok(mut s) = expansions().write() else {
        return;
    };
    let before = s.len();
    for (v, w) in pairs {
        if !s.iter().any(|(k, _)| k == v) {
            s.push((v.to_owned(), w.to_owned()));
        }
    }
    if s.len() != before {
        s.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    }
}

/// `text` as it may be printed: every registered `${VAR}` value replaced by its `${VAR}`
/// name, every other known secret by `[redacted]`. What a status line, an error, `doctor` or
/// `mcp list` shows of a URL, a command line or a transport's error goes through it.
pub fn written_form(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    if let Ok(known) = expansions().read() {
        for (v, w) in known.iter() {
            let cur = out.as_deref().unwrap_or(text);
            if cur.contains(v.as_str()) {
                out = Some(cur.replace(v.as_str(), w));
            }
        }
    }
    match out {
        Some(o) => Cow::Owned(redact_text(&o).into_owned()),
        None => redact_text(text),
    }
}

/// An endpoint URL as it may be printed: no userinfo (`user:password@`), every query value
/// `[redacted]` (an OTLP endpoint may carry `?api_key=...`). Not a URL: everything from the
/// first `?` is cut, and everything before an `@` in the authority.
pub fn without_credentials(url: &str) -> String {
    if let Ok(mut u) = url::Url::parse(url) {
        if u.has_host() {
            let _ = u.set_username("");
            let _ = u.set_password(None);
        }
        if u.query().is_some() {
            let pairs: Vec<(String, String)> = u
                .query_pairs()
                .map(|(k, v)| {
                    let v = if v.is_empty() { "" } else { REDACTED };
                    (k.into_owned(), v.to_owned())
                })
                .collect();
            u.set_query(None);
            if !pairs.is_empty() {
                let q = pairs
                    .iter()
                    .map(|(k, v)| {
                        if v.is_empty() {
                            k.clone()
                        } else {
                            format!("{k}={v}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("&");
                u.set_query(Some(&q));
            }
        }
        u.set_fragment(None);
        return u.to_string();
    }
    let cut = url.split(['?', '#']).next().unwrap_or_default();
    match cut.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => cut.to_owned(),
    }
}

/// The credentials a URL carries (its password, each query value), for [`redact_also`]: an
/// `OTEL_EXPORTER_OTLP_ENDPOINT` with `user:password@` or `?api_key=` is never logged.
pub fn url_credentials(url: &str) -> Vec<String> {
    let Ok(u) = url::Url::parse(url) else {
        return Vec::new();
    };
    let mut out: Vec<String> = u.password().map(str::to_owned).into_iter().collect();
    out.extend(u.query_pairs().map(|(_, v)| v.into_owned()));
    out
}

/// The values of an `OTEL_EXPORTER_OTLP_HEADERS`-style list (`k=v,k2=v2`), for [`redact_also`].
pub fn header_list_values(list: &str) -> Vec<String> {
    list.split(',')
        .filter_map(|kv| kv.split_once('=').map(|(_, v)| v.trim().to_owned()))
        .collect()
}

/// `text` cleaned of `secrets`, or `None` when it holds none of them.
pub fn clean(text: &str, secrets: &[String]) -> Option<String> {
    let mut out: Option<String> = None;
    for s in secrets {
        if s.is_empty() {
            continue;
        }
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

    #[test]
    fn a_printed_text_names_the_variable_and_redacts_other_secrets() {
        written_also([("wf-value-8812", "${WF_KEY}")]);
        redact_also(["wf-other-9923"]);
        assert_eq!(
            written_form("http://h/mcp?key=wf-value-8812&o=wf-other-9923"),
            "http://h/mcp?key=${WF_KEY}&o=[redacted]"
        );
        // The control: nothing known, nothing changed (and nothing copied).
        assert!(matches!(
            written_form("plain text"),
            Cow::Borrowed("plain text")
        ));
        // Too short to be looked for.
        written_also([("ab", "${SHORT}")]);
        assert_eq!(written_form("a cab"), "a cab");
    }

    #[test]
    fn an_endpoint_is_printed_without_its_credentials() {
        assert_eq!(
            without_credentials("https://user:pw0rd@otel.example:4318/v1/traces?api_key=k3y&x"),
            "https://otel.example:4318/v1/traces?api_key=[redacted]&x"
        );
        assert_eq!(
            without_credentials("http://127.0.0.1:4318/v1/traces"),
            "http://127.0.0.1:4318/v1/traces"
        );
        // Not a URL the parser takes: cut all the same.
        assert_eq!(
            without_credentials("http://u:p@[bad/x?k=v"),
            "http://[bad/x"
        );
    }

    #[test]
    fn the_credentials_of_an_endpoint_and_a_header_list() {
        assert_eq!(
            url_credentials("https://u:pw0rd-x@h/v1?api_key=k3y-123&x=1"),
            ["pw0rd-x", "k3y-123", "1"]
        );
        assert!(url_credentials("not a url").is_empty());
        assert_eq!(
            header_list_values("authorization=Bearer t0ken-9,x-team=abc"),
            ["Bearer t0ken-9", "abc"]
        );
    }

    #[test]
    fn a_scheme_prefixed_value_gives_its_token_and_short_values_none() {
        assert_eq!(
            secret_parts("Bearer tok-12345"),
            ["Bearer tok-12345", "tok-12345"]
        );
        assert_eq!(
            secret_parts("token abcdefgh"),
            ["token abcdefgh", "abcdefgh"]
        );
        // Not a scheme: the first word has a digit.
        assert_eq!(secret_parts("k3y abcdefgh"), ["k3y abcdefgh"]);
        // Too short to be looked for: the whole value or its token.
        assert_eq!(secret_parts("Basic ab"), ["Basic ab"]);
        assert!(secret_parts("abc").is_empty());
        assert!(secret_parts("").is_empty());
        assert!(secret_parts("      ").is_empty());
        assert!(!worth_hiding("true"));
        assert!(worth_hiding("s3cret"));
    }
}
