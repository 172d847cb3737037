//! HTTP helpers shared by the runtime's HTTP transports and the model client: the one rustls
//! crypto provider and TLS settings (built-in web roots plus `SSL_CERT_FILE`), a URL's origin
//! (OAuth's guard, DPoP's nonces, redirects, the telemetry breaker), the short form
//! of a body that error messages quote, and the OS's random bytes (OAuth's PKCE and `state`,
//! `run --json`'s session id). [`http_io`] is the connector that reads a response as HTTP/1.0
//! to its end; [`opener`] the system opener with its URL checks. The runtime re-exports this
//! crate as `harness9_actors::net` (and `harness9_actors::opener`).
#![warn(missing_docs)]

pub mod http_io;
pub mod opener;

use std::sync::{Arc, OnceLock};

/// Installs the rustls crypto provider once (awc panics at first TLS use without one).
pub fn install_crypto() {
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The TLS settings of every HTTPS client (MCP servers, OAuth, the model): the built-in web
/// roots, plus every certificate of the PEM file `SSL_CERT_FILE` names when it is set (a
/// company's TLS-inspecting proxy, a local CA). Built once; a file that cannot be read or holds
/// no certificate is reported once (the built-in roots still apply).
pub fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            install_crypto();
            let mut roots = actix_tls::connect::rustls_0_23::webpki_roots_cert_store();
            if let Some(path) = std::env::var_os("SSL_CERT_FILE").filter(|p| !p.is_empty()) {
                match extra_roots(std::path::Path::new(&path), &mut roots) {
                    Ok(n) => tracing::debug!(target: "mcp", file = %path.to_string_lossy(),
                        certificates = n, "trusting SSL_CERT_FILE"),
                    Err(e) => tracing::warn!(target: "mcp", "{e}"),
                }
            }
            let mut config = rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Arc::new(config)
        })
        .clone()
}

/// What to add to a TLS error whose certificate we do not trust: how to trust its CA.
pub fn certificate_hint(error: &str) -> &'static str {
    if error.contains("invalid peer certificate") {
        " (if the server's CA is one you trust, name its PEM file in SSL_CERT_FILE)"
    } else {
        ""
    }
}

/// Adds the certificates of the PEM file at `path` to `roots`; how many were added.
fn extra_roots(path: &std::path::Path, roots: &mut rustls::RootCertStore) -> Result<usize, String> {
    use rustls::pki_types::{pem::PemObject as _, CertificateDer};
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| {
            format!("SSL_CERT_FILE {shown}: cannot read it ({e}); using the built-in roots only")
        })?
        .filter_map(Result::ok);
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "SSL_CERT_FILE {shown}: no PEM certificate in it; using the built-in roots only"
        ));
    }
    Ok(added)
}

/// `n` bytes from the operating system's random source (PKCE verifiers, OAuth `state`,
/// session ids).
pub fn random(n: usize) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; n];
    harness9_platform::random_bytes(&mut buf)
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(buf)
}

/// The first 300 characters of a body, whitespace collapsed, `...` when cut (UTF-8 kept whole).
pub fn snippet(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate_chars(&s, 300)
}

/// `s` cut to `max` characters, with `...` when cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

/// A response's `Content-Type`, lowercased for prefix checks (`text/event-stream`,
/// `application/json`); empty when it has none or it is not text.
pub fn content_type(headers: &awc::http::header::HeaderMap) -> String {
    headers
        .get(awc::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// `scheme://host:port` of an http(s) URL, lowercased, the default port explicit, and its host
/// (IPv6 without brackets) and port; `None` for anything else.
pub fn origin_of(url: &str) -> Option<(String, String, u16)> {
    let uri = url.parse::<awc::http::Uri>().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = uri.host()?.to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    Some((format!("{scheme}://{host}:{port}"), bare, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_are_short_and_keep_utf8_whole() {
        let long = "é".repeat(400);
        let s = snippet(long.as_bytes());
        assert_eq!(s.chars().count(), 303);
        assert_eq!(snippet(b"a\n  b\tc"), "a b c");
    }
}
