//! HTTP helpers shared by the runtime's HTTP transports and the model client: the one rustls
//! crypto provider, the short form of a body that error messages quote, and the OS's random
//! bytes (OAuth's PKCE and `state`, `run --json`'s session id).

/// Installs the rustls crypto provider once (awc panics at first TLS use without one).
pub fn install_crypto() {
    static ONCE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `n` bytes from the operating system's random source (PKCE verifiers, OAuth `state`,
/// session ids).
pub fn random(n: usize) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
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
