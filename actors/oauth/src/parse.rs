//! The pure parts of OAuth: the `WWW-Authenticate` challenge, the well-known metadata URLs,
//! the resource check, scope choice, PKCE, the authorization URL and the redirect's query.
//! No IO here.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// A `Bearer` challenge from `WWW-Authenticate` (RFC 6750, RFC 9728).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge's parameters, from a header value that may hold several
    /// challenges, else the `DPoP` one's (a server that takes only DPoP-bound tokens, RFC
    /// 9449 §7.1); `None` when there is neither.
    pub fn parse(header: &str) -> Option<Challenge> {
        Self::parse_scheme(header, "bearer").or_else(|| Self::parse_scheme(header, "dpop"))
    }

    /// The parameters of the challenge of `scheme` (lowercase) in `header`.
    pub fn parse_scheme(header: &str, scheme: &str) -> Option<Challenge> {
        let lower = header.to_ascii_lowercase();
        let start = find_scheme(&lower, scheme)?;
        let mut out = Challenge::default();
        let rest = &header[start + scheme.len()..];
        let mut s = rest;
        loop {
            s = s.trim_start_matches([' ', '\t', ',']);
            let Some(eq) = s.find('=') else { break };
            let key = s[..eq].trim();
            if key.contains(' ') {
                // The next challenge's scheme: this one ends here.
                break;
            }
            let after = s[eq + 1..].trim_start();
            let (value, next) = if let Some(q) = after.strip_prefix('"') {
                let mut v = String::new();
                let mut chars = q.char_indices();
                let mut end = q.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                v.push(n);
                            }
                        }
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        c => v.push(c),
                    }
                }
                (v, &q[end.min(q.len())..])
            } else {
                let end = after.find([',', ' ']).unwrap_or(after.len());
                (after[..end].to_owned(), &after[end..])
            };
            match key.to_ascii_lowercase().as_str() {
                "resource_metadata" => out.resource_metadata = Some(value),
                "scope" => out.scope = Some(value),
                "error" => out.error = Some(value),
                _ => {}
            }
            s = next;
        }
        Some(out)
    }

    /// Whether this is a step-up challenge (`403` with `insufficient_scope`).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Where scheme `name` starts as a whole word in `lower`.
fn find_scheme(lower: &str, name: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = lower[from..].find(name) {
        let at = from + i;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',' | b'\t');
        let after = lower.as_bytes().get(at + name.len());
        if before_ok && matches!(after, None | Some(b' ') | Some(b'\t')) {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

/// A URL split into `scheme://authority` and its path (no query or fragment); `None` unless
/// http(s).
pub fn split_url(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return None;
    }
    Some((
        format!("{scheme}://{}", authority.to_ascii_lowercase()),
        path.to_owned(),
    ))
}

/// The protected resource metadata URLs to try, in order (RFC 9728, MCP authorization): the
/// challenge's `resource_metadata`, else the path-based well-known URL, then the root one.
pub fn prm_urls(server_url: &str, challenge: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = challenge.filter(|c| !c.is_empty()) {
        out.push(c.to_owned());
        return out;
    }
    if let Some((origin, path)) = split_url(server_url) {
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            out.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        out.push(format!("{origin}/.well-known/oauth-protected-resource"));
    }
    out
}

/// The authorization server metadata URLs for `issuer`, in the order the MCP spec gives: with
/// a path, RFC 8414 path insertion, OpenID path insertion, OpenID path appending; without,
/// RFC 8414 then OpenID.
pub fn as_metadata_urls(issuer: &str) -> Vec<String> {
    let Some((origin, path)) = split_url(issuer) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the protected resource metadata's `resource` covers the server URL: same origin,
/// and the server's path is the resource's path or under it.
pub fn resource_matches(resource: &str, server_url: &str) -> bool {
    let (Some((ro, rp)), Some((so, sp))) = (split_url(resource), split_url(server_url)) else {
        return false;
    };
    if ro != so {
        return false;
    }
    let rp = rp.trim_end_matches('/');
    let sp = sp.trim_end_matches('/');
    sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// The scopes to ask for: the configured ones, else the challenge's, else the resource's
/// `scopes_supported`, else none; plus the scopes already held (step-up asks for the union),
/// plus `offline_access` when the authorization server lists it (for a refresh token). Only
/// valid scope tokens ([`valid_scope`]), at most [`MAX_SCOPES`] in all.
pub fn choose_scopes(
    configured: &[String],
    challenge: Option<&str>,
    prm_supported: Option<&[String]>,
    held: &[String],
    as_supported: Option<&[String]>,
) -> Vec<String> {
    fn add(out: &mut Vec<String>, s: &str) {
        if out.len() < MAX_SCOPES && valid_scope(s) && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    let mut out: Vec<String> = Vec::new();
    if !configured.is_empty() {
        configured.iter().for_each(|s| add(&mut out, s));
    } else if let Some(c) = challenge.filter(|c| !c.trim().is_empty()) {
        c.split_whitespace().for_each(|s| add(&mut out, s));
    } else if let Some(p) = prm_supported {
        p.iter().for_each(|s| add(&mut out, s));
    }
    held.iter().for_each(|s| add(&mut out, s));
    if let Some(c) = challenge {
        // A step-up challenge's scopes are needed whatever is configured.
        c.split_whitespace().for_each(|s| add(&mut out, s));
    }
    if as_supported.is_some_and(|a| a.iter().any(|s| s == "offline_access")) && !out.is_empty() {
        add(&mut out, "offline_access");
    }
    out
}

/// The most scopes one request asks for, one grant keeps, or one step-up may add: a server's
/// `403 insufficient_scope` challenges cannot pile up scopes without end.
pub const MAX_SCOPES: usize = 16;
/// The longest scope token kept.
pub const MAX_SCOPE_LEN: usize = 128;
/// The longest access or refresh token taken (a large JWT fits; a header of megabytes does not).
pub const MAX_TOKEN_LEN: usize = 16 * 1024;

/// Whether `s` is a scope token (RFC 6749 §3.3: `1*( %x21 / %x23-5B / %x5D-7E )`) of at most
/// [`MAX_SCOPE_LEN`] bytes.
pub fn valid_scope(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_SCOPE_LEN
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

/// The valid scope tokens of a space-separated `scope` value, each once, at most
/// [`MAX_SCOPES`]; invalid tokens are dropped (and logged by the caller if it wants).
pub fn scope_tokens(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in value.split(' ').filter(|s| !s.is_empty()) {
        if out.len() >= MAX_SCOPES {
            break;
        }
        if valid_scope(s) && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

/// Why `token` is not an access token we can send as `Authorization: Bearer <token>`: it must
/// be an RFC 6750 `b64token` (`1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`)
/// of at most [`MAX_TOKEN_LEN`] bytes.
pub fn access_token_problem(token: &str) -> Option<String> {
    let body = token.trim_end_matches('=');
    if body.is_empty() {
        return Some("an empty access token".to_owned());
    }
    if token.len() > MAX_TOKEN_LEN {
        return Some(format!(
            "an access token of {} bytes (more than {MAX_TOKEN_LEN})",
            token.len()
        ));
    }
    let bad = body
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/')));
    bad.map(|c| {
        format!(
            "an access token with the character {:?}, which a bearer token cannot carry (RFC 6750 b64token)",
            c
        )
    })
}

/// Why `token` is not a refresh token we keep: it must be printable ASCII (RFC 6749
/// `1*VSCHAR`, %x20-7E) of at most [`MAX_TOKEN_LEN`] bytes.
pub fn refresh_token_problem(token: &str) -> Option<String> {
    if token.is_empty() {
        return Some("an empty refresh token".to_owned());
    }
    if token.len() > MAX_TOKEN_LEN {
        return Some(format!(
            "a refresh token of {} bytes (more than {MAX_TOKEN_LEN})",
            token.len()
        ));
    }
    token.chars().find(|c| !(' '..='~').contains(c)).map(|c| {
        format!("a refresh token with the character {c:?} (RFC 6749 allows printable ASCII only)")
    })
}

/// What kind of address an authorization-related URL reaches, for [`address_allowed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrKind {
    /// A public (globally routed) address.
    Public,
    /// Loopback: 127.0.0.0/8, ::1.
    Loopback,
    /// Private: 10/8, 172.16/12, 192.168/16, 100.64/10 (shared), fc00::/7 (unique local).
    Private,
    /// Link-local: 169.254/16 (cloud metadata services live there), fe80::/10.
    LinkLocal,
    /// Unspecified, multicast, broadcast or reserved: never a server.
    Unusable,
}

/// The kind of `ip` (an IPv4-mapped IPv6 address is taken as its IPv4 address).
pub fn addr_kind(ip: std::net::IpAddr) -> AddrKind {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            if v4.is_loopback() {
                AddrKind::Loopback
            } else if v4.is_link_local() {
                AddrKind::LinkLocal
            } else if v4.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
                AddrKind::Private
            } else if v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || o[0] == 0
                || o[0] >= 240
            {
                AddrKind::Unusable
            } else {
                AddrKind::Public
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return addr_kind(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                AddrKind::Loopback
            } else if (first & 0xffc0) == 0xfe80 {
                AddrKind::LinkLocal
            } else if (first & 0xfe00) == 0xfc00 {
                AddrKind::Private
            } else if v6.is_unspecified() || v6.is_multicast() {
                AddrKind::Unusable
            } else {
                AddrKind::Public
            }
        }
    }
}

/// Whether an authorization-related URL may reach an address of kind `to`, for an MCP server
/// whose own address is of kind `server`: a public address always; a loopback or private one
/// only when the MCP server's own address is of that same kind (a server on loopback may have
/// its authorization server there, a server on the internet may not point us at ours);
/// link-local and unusable addresses never (origins the user lists in `oauth.allowOrigins`
/// are not checked at all).
pub fn address_allowed(to: AddrKind, server: AddrKind) -> bool {
    match to {
        AddrKind::Public => true,
        AddrKind::Loopback | AddrKind::Private => to == server,
        AddrKind::LinkLocal | AddrKind::Unusable => false,
    }
}

pub use harness9_net::origin_of;

/// Unpadded base64url.
pub fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The S256 code challenge of a PKCE verifier (RFC 7636).
pub fn code_challenge(verifier: &str) -> String {
    b64url(&Sha256::digest(verifier.as_bytes()))
}

/// Everything the authorization URL carries.
pub struct AuthRequest<'a> {
    /// The authorization endpoint.
    pub endpoint: &'a str,
    /// The client id.
    pub client_id: &'a str,
    /// The loopback redirect URI.
    pub redirect_uri: &'a str,
    /// The PKCE S256 challenge.
    pub code_challenge: &'a str,
    /// The anti-CSRF state.
    pub state: &'a str,
    /// The resource indicator (RFC 8707; omitted when empty: an SSO login at an IdP).
    pub resource: &'a str,
    /// The scopes (omitted when empty).
    pub scopes: &'a [String],
    /// The OpenID Connect `nonce` the ID token must carry (an SSO login's).
    pub nonce: Option<&'a str>,
}

/// The authorization URL (`response_type=code`, PKCE S256, `state`, `resource`, `scope`).
pub fn authorization_url(r: &AuthRequest<'_>) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("response_type", "code")
        .append_pair("client_id", r.client_id)
        .append_pair("redirect_uri", r.redirect_uri)
        .append_pair("code_challenge", r.code_challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", r.state);
    if !r.resource.is_empty() {
        q.append_pair("resource", r.resource);
    }
    if !r.scopes.is_empty() {
        q.append_pair("scope", &r.scopes.join(" "));
    }
    if let Some(n) = r.nonce {
        q.append_pair("nonce", n);
    }
    let sep = if r.endpoint.contains('?') { '&' } else { '?' };
    format!("{}{sep}{}", r.endpoint, q.finish())
}

/// The authorization response from the redirect's query.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Callback {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207).
    pub iss: Option<String>,
    /// `error` (and `error_description`), when the user or server refused.
    pub error: Option<String>,
}

/// A redirect address pasted by the user: `line` (trimmed) must be `redirect_uri` itself with a
/// query (`?code=…&state=…`, or an `error`); anything else is `None`.
pub fn pasted_redirect(line: &str, redirect_uri: &str) -> Option<Callback> {
    let query = line.trim().strip_prefix(redirect_uri)?.strip_prefix('?')?;
    let cb = Callback::from_query(query);
    (cb.code.is_some() || cb.error.is_some()).then_some(cb)
}

impl Callback {
    /// Parses the query string of the redirect.
    pub fn from_query(query: &str) -> Callback {
        let mut c = Callback::default();
        let mut desc = None;
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match k.as_ref() {
                "code" => c.code = Some(v.into_owned()),
                "state" => c.state = Some(v.into_owned()),
                "iss" => c.iss = Some(v.into_owned()),
                "error" => c.error = Some(v.into_owned()),
                "error_description" => desc = Some(v.into_owned()),
                _ => {}
            }
        }
        if let (Some(e), Some(d)) = (&mut c.error, desc) {
            e.push_str(": ");
            e.push_str(&d);
        }
        c
    }

    /// Checks the response against the request: the `state` must be ours, an `iss` must equal
    /// the issuer exactly (no normalization, RFC 9207) and is required when the server
    /// advertises it; returns the code.
    pub fn check(&self, state: &str, issuer: &str, iss_required: bool) -> Result<&str, String> {
        if let Some(e) = &self.error {
            return Err(format!("the authorization server refused: {e}"));
        }
        if self.state.as_deref() != Some(state) {
            return Err("the redirect's state does not match the request's".to_owned());
        }
        match &self.iss {
            Some(iss) if iss != issuer => {
                return Err(format!(
                    "the redirect's iss {iss:?} is not the authorization server's issuer {issuer:?}"
                ))
            }
            None if iss_required => return Err(
                "the authorization server advertises the iss parameter but the redirect has none"
                    .to_owned(),
            ),
            _ => {}
        }
        self.code
            .as_deref()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| "the redirect has no authorization code".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", scope="a b", error="insufficient_scope""#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert!(c.insufficient_scope());
        let c = Challenge::parse(r#"Basic realm="x", Bearer error=invalid_token"#).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope, None);
        assert_eq!(Challenge::parse("Bearer").unwrap(), Challenge::default());
        assert!(Challenge::parse(r#"Basic realm="bearer""#).is_none());
        // A server that takes only DPoP-bound tokens challenges with `DPoP` (RFC 9449 §7.1);
        // with both, the `Bearer` one is read.
        let c = Challenge::parse(r#"DPoP algs="ES256", resource_metadata="http://h/prm""#).unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("http://h/prm"));
        let c = Challenge::parse(r#"DPoP error="use_dpop_nonce", Bearer scope="s""#).unwrap();
        assert_eq!((c.scope.as_deref(), c.error), (Some("s"), None));
        let c = Challenge::parse(r#"Bearer scope="q\"x""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("q\"x"));
    }

    #[test]
    fn well_known_urls() {
        assert_eq!(
            prm_urls("http://localhost:3000/mcp", None),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            prm_urls("http://h/", Some("http://x/prm")),
            ["http://x/prm"]
        );
        assert_eq!(
            as_metadata_urls("https://a.example/tenant1"),
            [
                "https://a.example/.well-known/oauth-authorization-server/tenant1",
                "https://a.example/.well-known/openid-configuration/tenant1",
                "https://a.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            as_metadata_urls("https://a.example"),
            [
                "https://a.example/.well-known/oauth-authorization-server",
                "https://a.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn resources_must_cover_the_server() {
        assert!(resource_matches("http://h:1/mcp", "http://h:1/mcp"));
        assert!(resource_matches("http://h:1/", "http://h:1/mcp"));
        assert!(resource_matches("http://H:1", "http://h:1/mcp/"));
        assert!(!resource_matches(
            "https://evil.example.com/mcp",
            "http://h:1/mcp"
        ));
        assert!(!resource_matches("http://h:1/mc", "http://h:1/mcp"));
        assert!(!resource_matches("http://h:2/mcp", "http://h:1/mcp"));
    }

    #[test]
    fn scope_choice() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            choose_scopes(&[], Some("a b"), Some(&s(&["c"])), &[], None),
            s(&["a", "b"])
        );
        assert_eq!(
            choose_scopes(&[], None, Some(&s(&["c"])), &[], None),
            s(&["c"])
        );
        assert!(choose_scopes(&[], None, None, &[], Some(&s(&["offline_access"]))).is_empty());
        assert_eq!(
            choose_scopes(
                &[],
                Some("w"),
                None,
                &s(&["r"]),
                Some(&s(&["offline_access"]))
            ),
            s(&["w", "r", "offline_access"])
        );
        assert_eq!(
            choose_scopes(&s(&["x"]), Some("y"), None, &[], None),
            s(&["x", "y"])
        );
    }

    #[test]
    fn scopes_and_tokens_are_checked() {
        assert!(valid_scope("mcp:tools-basic") && valid_scope("a!#[]~"));
        for bad in ["", "a\"b", "a\\b", "é", "a b", "\u{1b}x"] {
            assert!(!valid_scope(bad), "{bad:?}");
        }
        assert!(!valid_scope(&"x".repeat(MAX_SCOPE_LEN + 1)));
        let many: String = (0..40).map(|i| format!("s{i} ")).collect();
        assert_eq!(scope_tokens(&many).len(), MAX_SCOPES);
        assert_eq!(scope_tokens("a a  b c\"d"), ["a", "b"]);
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let held: Vec<String> = (0..20).map(|i| format!("h{i}")).collect();
        assert_eq!(
            choose_scopes(&[], Some("w"), None, &held, None).len(),
            MAX_SCOPES
        );
        assert_eq!(
            choose_scopes(&s(&["ok", "n\"o"]), None, None, &[], None),
            s(&["ok"])
        );

        assert_eq!(access_token_problem("eyJhbGc.iOi-_~+/x=="), None);
        for bad in ["", "===", "a b", "a\r\nX: 1", "a\u{1b}]52", "a=b", "é"] {
            assert!(access_token_problem(bad).is_some(), "{bad:?}");
        }
        assert!(access_token_problem(&"a".repeat(MAX_TOKEN_LEN + 1)).is_some());
        assert_eq!(refresh_token_problem("rt 1/~!\"x"), None);
        for bad in ["", "a\nb", "a\u{7f}", "\u{1b}"] {
            assert!(refresh_token_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn addresses_are_classified_and_allowed_by_kind() {
        use AddrKind::*;
        let k = |s: &str| addr_kind(s.parse().unwrap());
        assert_eq!(k("127.0.0.1"), Loopback);
        assert_eq!(k("::1"), Loopback);
        assert_eq!(k("::ffff:127.0.0.1"), Loopback);
        assert_eq!(k("169.254.169.254"), LinkLocal);
        assert_eq!(k("::ffff:169.254.169.254"), LinkLocal);
        assert_eq!(k("fe80::1"), LinkLocal);
        for p in [
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "100.64.0.1",
            "fd00::1",
        ] {
            assert_eq!(k(p), Private, "{p}");
        }
        for u in ["0.0.0.0", "::", "224.0.0.1", "255.255.255.255", "ff02::1"] {
            assert_eq!(k(u), Unusable, "{u}");
        }
        assert_eq!(k("93.184.216.34"), Public);
        assert_eq!(k("2606:4700::1111"), Public);
        assert!(address_allowed(Public, Loopback) && address_allowed(Public, Public));
        assert!(address_allowed(Loopback, Loopback) && !address_allowed(Loopback, Public));
        assert!(address_allowed(Private, Private) && !address_allowed(Private, Loopback));
        assert!(!address_allowed(Private, Public));
        assert!(!address_allowed(LinkLocal, LinkLocal) && !address_allowed(Unusable, Public));
        assert_eq!(
            origin_of("HTTPS://A.example/x?y").map(|o| o.0),
            Some("https://a.example:443".to_owned())
        );
        assert_eq!(
            origin_of("http://[fe80::1]:8/").map(|o| (o.1, o.2)),
            Some(("fe80::1".to_owned(), 8))
        );
        assert_eq!(origin_of("file:///etc/passwd"), None);
        assert_eq!(origin_of("javascript:alert(1)"), None);
    }

    #[test]
    fn pkce_matches_rfc_7636() {
        assert_eq!(
            code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn authorization_urls_carry_everything() {
        let url = authorization_url(&AuthRequest {
            endpoint: "http://as/authorize",
            client_id: "c 1",
            redirect_uri: "http://127.0.0.1:5/callback",
            code_challenge: "ch",
            state: "st",
            resource: "http://h/mcp",
            scopes: &["a".into(), "b".into()],
            nonce: None,
        });
        assert_eq!(
            url,
            "http://as/authorize?response_type=code&client_id=c+1&redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&code_challenge=ch&code_challenge_method=S256&state=st&resource=http%3A%2F%2Fh%2Fmcp&scope=a+b"
        );
    }

    #[test]
    fn callbacks_are_checked() {
        let c = Callback::from_query("code=k&state=s&iss=http%3A%2F%2Fas");
        assert_eq!(c.check("s", "http://as", true), Ok("k"));
        assert!(c.check("t", "http://as", false).is_err());
        assert!(c.check("s", "http://as/", false).is_err());
        let c = Callback::from_query("code=k&state=s");
        assert!(c.check("s", "http://as", true).is_err());
        assert_eq!(c.check("s", "http://as", false), Ok("k"));
        let c = Callback::from_query("error=access_denied&error_description=no&state=s");
        assert!(c
            .check("s", "x", false)
            .unwrap_err()
            .contains("access_denied: no"));
    }

    #[test]
    fn only_the_redirect_address_itself_is_taken_from_a_paste() {
        let r = "http://127.0.0.1:4000/callback";
        let cb = pasted_redirect("  http://127.0.0.1:4000/callback?code=k&state=s \n", r).unwrap();
        assert_eq!(
            (cb.code.as_deref(), cb.state.as_deref()),
            (Some("k"), Some("s"))
        );
        assert!(pasted_redirect("http://127.0.0.1:4000/callback?error=access_denied", r).is_some());
        for bad in [
            "k",
            "http://127.0.0.1:4000/callback",
            "http://127.0.0.1:4000/callback?state=s",
            "http://127.0.0.1:4001/callback?code=k&state=s",
            "http://evil.example/?r=http://127.0.0.1:4000/callback?code=k",
        ] {
            assert!(pasted_redirect(bad, r).is_none(), "{bad}");
        }
    }
}
