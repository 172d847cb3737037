//! The OAuth exchanges over HTTP and the login flow driver: discovery, registration, the
//! authorization code flow with a loopback redirect, token exchange and refresh. Every exchange
//! (headers and body) is bounded in time ([`REQUEST_TIMEOUT`]) and size ([`BODY_LIMIT`]), and
//! a login's whole discovery by [`DISCOVERY_TIMEOUT`]. Every URL a server names is checked by
//! a [`Guard`] before it is fetched (redirect hops included); requests that carry credentials
//! (registration, token, refresh) never follow a redirect. Tokens are checked before they are
//! kept. Errors name URLs and the server's `error`/`error_description`, never a token, code or
//! verifier.

use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::parse::{self, Callback, Challenge};
use super::{now_secs, Client, Grant, OAuthSpec};
use crate::net::{install_crypto, snippet};
use crate::protocol::version::{ProtocolVersion, LATEST, MODERN};

/// How long one OAuth exchange may take, from connecting to the last byte of the body.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a login's whole discovery (every metadata document) may take.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// The shortest access token lifetime believed: an `expires_in` below it is taken as this
/// much, so a server saying `0` does not make every request wait on a refresh first (an
/// access token that really expires earlier gets a `401`, which refreshes it once).
pub const MIN_TOKEN_LIFETIME_SECS: u64 = 60;
/// Redirect hops followed for a metadata GET (each hop checked by the [`Guard`]).
const MAX_METADATA_REDIRECTS: usize = 3;
/// How long resolving a host name for the [`Guard`] may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or token response read.
pub const BODY_LIMIT: usize = 256 * 1024;

/// An HTTP client for OAuth requests (built in the task that uses it: it is `!Send`). It
/// follows no redirect by itself: metadata GETs follow theirs through the [`Guard`], requests
/// with credentials refuse them. Its resolver refuses link-local and unusable addresses (a
/// refresh's token endpoint was checked at login; a host name may have changed since).
pub fn http_client() -> awc::Client {
    client_with(PinnedResolver {
        server_kind: None,
        trusted: Vec::new(),
    })
}

/// The OAuth client of a login, whose resolver applies `guard`'s address rule again when it
/// connects: a host name checked by [`Guard::check`] that resolves elsewhere a moment later
/// (DNS rebinding) is refused then.
fn guarded_client(guard: &Guard) -> awc::Client {
    client_with(PinnedResolver {
        server_kind: Some(guard.server_kind),
        trusted: guard.trusted_hosts.clone(),
    })
}

fn client_with(resolver: PinnedResolver) -> awc::Client {
    install_crypto();
    let tcp = actix_tls::connect::Connector::new(actix_tls::connect::Resolver::custom(resolver))
        .service();
    awc::Client::builder()
        // Metadata and token replies delimited by the close are read whole too.
        .connector(
            awc::Connector::new()
                .connector(crate::server::CloseBodies(tcp))
                .rustls_0_23(crate::net::tls_config()),
        )
        .timeout(REQUEST_TIMEOUT)
        .disable_redirects()
        .finish()
}

/// Name resolution for the OAuth client: the addresses of a host name, refused when one of
/// them is of a kind the [`Guard`] refuses (checked at connect time, not only before).
#[derive(Clone)]
struct PinnedResolver {
    /// The MCP server's address kind; `None`: refuse only link-local and unusable addresses.
    server_kind: Option<parse::AddrKind>,
    /// Hosts and ports of trusted origins (the MCP server's, `allowOrigins`): not checked.
    trusted: Vec<(String, u16)>,
}

impl actix_tls::connect::Resolve for PinnedResolver {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> futures_util::future::LocalBoxFuture<
        'a,
        Result<Vec<std::net::SocketAddr>, Box<dyn std::error::Error>>,
    > {
        Box::pin(async move {
            // An IPv6 literal comes bracketed, as in the URL.
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((bare, port)).await?.collect();
            if self
                .trusted
                .iter()
                .any(|(h, p)| *p == port && h.eq_ignore_ascii_case(bare))
            {
                return Ok(addrs);
            }
            for a in &addrs {
                let k = parse::addr_kind(a.ip());
                let ok = match self.server_kind {
                    Some(s) => parse::address_allowed(k, s),
                    None => !matches!(k, parse::AddrKind::LinkLocal | parse::AddrKind::Unusable),
                };
                if !ok {
                    return Err(format!(
                        "{host} resolves to {} address {}: refusing to connect",
                        kind_name(k),
                        a.ip()
                    )
                    .into());
                }
            }
            Ok(addrs)
        })
    }
}

/// `fut`, bounded by `limit`; past it, an error saying `what` did not finish in time.
async fn bounded<T>(
    limit: Duration,
    what: impl FnOnce() -> String,
    fut: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "{} took longer than {} s (headers and body): giving up",
            what(),
            limit.as_secs()
        )),
    }
}

/// Which URLs the OAuth client of one MCP server may reach (the MCP authorization spec's
/// communication security, and no request forgery toward the user's own network):
/// - the MCP server's own origin, and the origins the user lists in `oauth.allowOrigins`:
///   always;
/// - any other: `https` only (plain `http` only to loopback, when the MCP server is itself on
///   loopback), and every address its host resolves to must be public, or of the same kind as
///   the MCP server's own address (loopback, or private); never link-local (169.254/16,
///   fe80::/10: cloud metadata services), unspecified or multicast.
///
/// A challenge's `resource_metadata` must moreover be on the MCP server's own origin (or an
/// allowed one): the protected resource's metadata is the resource's to publish.
pub struct Guard {
    server_url: String,
    server_origin: Option<String>,
    server_kind: parse::AddrKind,
    allow: Vec<String>,
    /// Host and port of the server's origin and of the allowed ones.
    trusted_hosts: Vec<(String, u16)>,
}

impl Guard {
    /// The guard of the MCP server at `server_url`, with the user's `allow` list.
    pub async fn new(server_url: &str, allow: &[String]) -> Guard {
        let origin = parse::origin_of(server_url);
        let server_kind = match &origin {
            Some((_, host, port)) => resolve(host, *port)
                .await
                .ok()
                .and_then(|a| a.first().map(|(_, k)| *k))
                .unwrap_or(parse::AddrKind::Public),
            None => parse::AddrKind::Public,
        };
        let allowed: Vec<_> = allow.iter().filter_map(|a| parse::origin_of(a)).collect();
        let trusted_hosts = origin
            .iter()
            .chain(&allowed)
            .map(|(_, h, p)| (h.clone(), *p))
            .collect();
        Guard {
            server_url: server_url.to_owned(),
            server_origin: origin.map(|o| o.0),
            server_kind,
            allow: allowed.into_iter().map(|o| o.0).collect(),
            trusted_hosts,
        }
    }

    fn trusted(&self, origin: &str) -> bool {
        self.server_origin.as_deref() == Some(origin) || self.allow.iter().any(|a| a == origin)
    }

    /// Whether `url` (named `what` in the error) may be reached.
    pub async fn check(&self, url: &str, what: &str) -> Result<(), String> {
        let Some((origin, host, port)) = parse::origin_of(url) else {
            return Err(format!("{what} {url:?} is not an http(s) URL: refusing it"));
        };
        if self.trusted(&origin) {
            return Ok(());
        }
        let hint = format!(
            "refusing it (if you trust it, list \"{origin}\" in the \"oauth\": {{\"allowOrigins\": [...]}} of this server)"
        );
        let https = origin.starts_with("https://");
        if !https && self.server_kind != parse::AddrKind::Loopback {
            return Err(format!(
                "{what} {url} is not https (the MCP server {} is not on loopback): {hint}",
                self.server_url
            ));
        }
        let addrs = resolve(&host, port)
            .await
            .map_err(|e| format!("{what} {url}: {e}"))?;
        for (ip, kind) in addrs {
            if !parse::address_allowed(kind, self.server_kind) {
                return Err(format!(
                    "{what} {url} is at {} address {ip}, which the MCP server {} (a {} address) may not send us to: {hint}",
                    kind_name(kind),
                    self.server_url,
                    kind_name(self.server_kind)
                ));
            }
            if !https && kind != parse::AddrKind::Loopback {
                return Err(format!(
                    "{what} {url} is not https and {ip} is not loopback: {hint}"
                ));
            }
        }
        Ok(())
    }

    /// Whether a challenge's `resource_metadata` URL may be fetched: on the MCP server's own
    /// origin (or an allowed one), and passing [`Guard::check`].
    pub async fn check_resource_metadata(&self, url: &str) -> Result<(), String> {
        let origin = parse::origin_of(url).map(|o| o.0);
        if !origin.as_deref().is_some_and(|o| self.trusted(o)) {
            return Err(format!(
                "the resource metadata of {} would come from {url:?}, not on the server's own origin: refusing it (list that origin in the \"oauth\": {{\"allowOrigins\": [...]}} of this server if you trust it)",
                self.server_url
            ));
        }
        self.check(url, "the resource metadata").await
    }
}

/// The addresses `host` resolves to, with their kinds (an IP literal as itself).
async fn resolve(
    host: &str,
    port: u16,
) -> Result<Vec<(std::net::IpAddr, parse::AddrKind)>, String> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(vec![(ip, parse::addr_kind(ip))]);
    }
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| {
            format!(
                "resolving {host} took longer than {} s",
                RESOLVE_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let out: Vec<_> = found.map(|a| (a.ip(), parse::addr_kind(a.ip()))).collect();
    if out.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    Ok(out)
}

fn kind_name(k: parse::AddrKind) -> &'static str {
    match k {
        parse::AddrKind::Public => "a public",
        parse::AddrKind::Loopback => "a loopback",
        parse::AddrKind::Private => "a private",
        parse::AddrKind::LinkLocal => "a link-local",
        parse::AddrKind::Unusable => "an unusable",
    }
}

/// Protected resource metadata (RFC 9728), the fields used.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceMetadata {
    /// The protected resource.
    pub resource: String,
    /// Its authorization servers' issuers.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414), the fields used.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServerMetadata {
    /// Its issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens become access tokens.
    pub token_endpoint: String,
    /// Dynamic client registration, if offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Client ID metadata documents are accepted.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// The redirect carries `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// What discovery found for a server.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The protected resource metadata.
    pub resource: ResourceMetadata,
    /// The authorization server's metadata (its issuer checked).
    pub server: ServerMetadata,
}

/// GETs a JSON document: `Ok(None)` for a 4xx (try the next URL). Redirects are followed
/// (at most [`MAX_METADATA_REDIRECTS`]), each hop checked by `guard` (as resource metadata,
/// on the MCP server's own origin, when `resource` is set); each hop's whole exchange is
/// bounded by [`REQUEST_TIMEOUT`].
async fn get_json<T: serde::de::DeserializeOwned>(
    client: &awc::Client,
    guard: &Guard,
    url: &str,
    resource: bool,
) -> Result<Option<T>, String> {
    let mut at = url.to_owned();
    for _ in 0..=MAX_METADATA_REDIRECTS {
        if resource {
            guard.check_resource_metadata(&at).await?;
        } else {
            guard.check(&at, "the metadata URL").await?;
        }
        let hop = at.clone();
        let got = bounded(REQUEST_TIMEOUT, || format!("fetching {hop}"), async {
            let mut resp = client
                .get(&hop)
                .insert_header(("Accept", "application/json"))
                .send()
                .await
                .map_err(|e| format!("cannot fetch {hop}: {e}"))?;
            let status = resp.status();
            if status.is_redirection() {
                let to = resp
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .map(|l| resolve_location(&hop, l))
                    .ok_or_else(|| format!("{hop} answered HTTP {status} without a Location"))?;
                return Ok(Err(to));
            }
            if status.is_client_error() {
                return Ok(Ok(None));
            }
            if !status.is_success() {
                return Err(format!("{hop} answered HTTP {status}"));
            }
            let body = resp
                .body()
                .limit(BODY_LIMIT)
                .await
                .map_err(|e| format!("reading {hop} failed: {e}"))?;
            Ok(Ok(Some(body)))
        })
        .await?;
        match got {
            Ok(None) => return Ok(None),
            Ok(Some(body)) => {
                return serde_json::from_slice(&body)
                    .map(Some)
                    .map_err(|e| format!("{at} is not valid metadata: {e}"))
            }
            Err(next) => at = next,
        }
    }
    Err(format!(
        "{url} redirects more than {MAX_METADATA_REDIRECTS} times: giving up"
    ))
}

/// A `Location` resolved against the URL it came from (absolute, or absolute-path).
fn resolve_location(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    match parse::split_url(base) {
        Some((origin, _)) if location.starts_with('/') => format!("{origin}{location}"),
        Some((origin, path)) => {
            let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
            format!("{origin}{dir}{location}")
        }
        None => location.to_owned(),
    }
}

/// The error for a redirect answered to a request that carries credentials (`what`).
fn refused_redirect<S>(resp: &awc::ClientResponse<S>, what: &str) -> Option<String> {
    let status = resp.status();
    if !status.is_redirection() {
        return None;
    }
    let to = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(|l| crate::net::truncate_chars(l, 200))
        .unwrap_or_default();
    Some(format!(
        "{what} answered HTTP {status} (a redirect to {to:?}): a request that carries credentials never follows a redirect; the authorization server must answer at that endpoint itself"
    ))
}

/// Finds the protected resource metadata and its authorization server's metadata. Refuses a
/// `resource` that does not cover `server_url`, metadata whose `issuer` is not the one it was
/// fetched for, and a server without PKCE S256. Without protected resource metadata, the
/// 2025-03-26 discovery ([`legacy_discovery`]).
pub async fn discover(
    client: &awc::Client,
    guard: &Guard,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovery, String> {
    let mut prm: Option<ResourceMetadata> = None;
    let from_challenge = challenge
        .and_then(|c| c.resource_metadata.as_deref())
        .filter(|c| !c.is_empty());
    if let Some(url) = from_challenge {
        guard.check_resource_metadata(url).await?;
    }
    for url in parse::prm_urls(server_url, from_challenge) {
        if let Some(m) = get_json::<ResourceMetadata>(client, guard, &url, true).await? {
            prm = Some(m);
            break;
        }
    }
    let Some(prm) = prm else {
        return legacy_discovery(client, guard, server_url).await;
    };
    if !parse::resource_matches(&prm.resource, server_url) {
        return Err(format!(
            "the protected resource metadata names resource {:?}, which is not {server_url}: refusing to authorize",
            prm.resource
        ));
    }
    let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
        format!("the protected resource metadata of {server_url} names no authorization server")
    })?;
    guard.check(&issuer, "the authorization server").await?;
    let mut found = None;
    for url in parse::as_metadata_urls(&issuer) {
        if let Some(m) = get_json::<ServerMetadata>(client, guard, &url, false).await? {
            found = Some(m);
            break;
        }
    }
    let server =
        found.ok_or_else(|| format!("authorization server {issuer} publishes no metadata"))?;
    if server.issuer != issuer {
        return Err(format!(
            "the authorization server metadata names issuer {:?}, not {issuer:?}: refusing it",
            server.issuer
        ));
    }
    if !server
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m == "S256"))
    {
        return Err(format!(
            "authorization server {issuer} does not advertise PKCE S256: refusing it"
        ));
    }
    check_endpoints(guard, &server).await?;
    Ok(Discovery {
        resource: prm,
        server,
    })
}

/// The authorization server's endpoints pass the guard (the authorization endpoint too: it
/// is opened in the user's browser).
async fn check_endpoints(guard: &Guard, server: &ServerMetadata) -> Result<(), String> {
    guard
        .check(&server.authorization_endpoint, "the authorization endpoint")
        .await?;
    guard
        .check(&server.token_endpoint, "the token endpoint")
        .await?;
    if let Some(r) = &server.registration_endpoint {
        guard.check(r, "the registration endpoint").await?;
    }
    Ok(())
}

/// Discovery for a server without protected resource metadata, as the 2025-03-26 revision
/// had it: the MCP server's origin is its own authorization server, with RFC 8414 metadata at
/// the root well-known URL, else the default endpoints `/authorize`, `/token` and `/register`.
async fn legacy_discovery(
    client: &awc::Client,
    guard: &Guard,
    server_url: &str,
) -> Result<Discovery, String> {
    let (origin, _) = parse::split_url(server_url)
        .ok_or_else(|| format!("{server_url} is not an http(s) URL"))?;
    let meta_url = format!("{origin}/.well-known/oauth-authorization-server");
    let server = match get_json::<ServerMetadata>(client, guard, &meta_url, false).await? {
        Some(m) => {
            if m.issuer.trim_end_matches('/') != origin {
                return Err(format!(
                    "the authorization server metadata at {meta_url} names issuer {:?}, not {origin:?}: refusing it",
                    m.issuer
                ));
            }
            if m.code_challenge_methods_supported
                .as_ref()
                .is_some_and(|c| !c.iter().any(|c| c == "S256"))
            {
                return Err(format!(
                    "authorization server {origin} does not support PKCE S256: refusing it"
                ));
            }
            m
        }
        None => ServerMetadata {
            issuer: origin.clone(),
            authorization_endpoint: format!("{origin}/authorize"),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            ..ServerMetadata::default()
        },
    };
    check_endpoints(guard, &server).await?;
    tracing::info!(target: "mcp", "{server_url} publishes no protected resource metadata; using {origin} as its authorization server (2025-03-26)");
    Ok(Discovery {
        resource: ResourceMetadata {
            resource: server_url.to_owned(),
            authorization_servers: vec![origin],
            scopes_supported: None,
        },
        server,
    })
}

/// The token endpoint auth method for a confidential client: `client_secret_basic` unless the
/// server lists only `client_secret_post` (RFC 8414's default is basic).
fn secret_method(server: &ServerMetadata) -> &'static str {
    match &server.token_endpoint_auth_methods_supported {
        Some(m) if !m.iter().any(|m| m == "client_secret_basic") => {
            if m.iter().any(|m| m == "client_secret_post") {
                "client_secret_post"
            } else {
                "none"
            }
        }
        _ => "client_secret_basic",
    }
}

#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Dynamic client registration (RFC 7591) of a native client with `redirect_uri`.
async fn register(
    client: &awc::Client,
    d: &Discovery,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<Client, String> {
    let Some(endpoint) = &d.server.registration_endpoint else {
        return Err(format!(
            "authorization server {} offers no registration and no client id is configured: set \"oauth\": {{\"clientId\": ...}} for this server",
            d.server.issuer
        ));
    };
    let method = match &d.server.token_endpoint_auth_methods_supported {
        Some(m)
            if m.iter().any(|m| m == "none")
                && !m.iter().any(|m| m.starts_with("client_secret")) =>
        {
            "none"
        }
        _ => secret_method(&d.server),
    };
    let mut body = serde_json::json!({
        "client_name": "harness9",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    });
    if !scopes.is_empty() {
        body["scope"] = serde_json::Value::String(scopes.join(" "));
    }
    let what = format!("client registration at {endpoint}");
    let text = bounded(REQUEST_TIMEOUT, || what.clone(), async {
        let mut resp = client
            .post(endpoint)
            .insert_header(("Accept", "application/json"))
            .send_json(&body)
            .await
            .map_err(|e| format!("{what} failed: {e}"))?;
        if let Some(e) = refused_redirect(&resp, &what) {
            return Err(e);
        }
        success_body(&mut resp, &what).await
    })
    .await?;
    let r: Registered = serde_json::from_slice(&text)
        .map_err(|e| format!("the registration reply of {endpoint} is not valid: {e}"))?;
    let auth_method = r.token_endpoint_auth_method.unwrap_or_else(|| {
        if r.client_secret.is_some() {
            method.to_owned()
        } else {
            "none".to_owned()
        }
    });
    Ok(Client {
        client_id: r.client_id,
        client_secret: r.client_secret,
        auth_method,
        redirect_uri: Some(redirect_uri.to_owned()),
    })
}

/// The body of an OAuth endpoint's reply (bounded), or an error naming `what`, the status and
/// the OAuth error it carries.
async fn success_body<S>(
    resp: &mut awc::ClientResponse<S>,
    what: &str,
) -> Result<bytes::Bytes, String>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    let body = resp
        .body()
        .limit(BODY_LIMIT)
        .await
        .map_err(|e| format!("reading the reply of {what} failed: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!(
            "{what} got HTTP {}: {}",
            resp.status(),
            oauth_error(&body)
        ));
    }
    Ok(body)
}

/// An OAuth error body as `error: error_description` (at most 300 characters), else a short
/// snippet; never more.
fn oauth_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct E {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    // The server's words, cut short: they are shown to the user.
    let said = match serde_json::from_slice::<E>(body) {
        Ok(E {
            error,
            error_description: Some(d),
        }) => format!("{error}: {d}"),
        Ok(E { error, .. }) => error,
        Err(_) => return snippet(&body[..body.len().min(200)]),
    };
    crate::net::truncate_chars(&said, 300)
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    /// A number as RFC 6749 says, or a numeric string as some servers send.
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
    #[serde(default)]
    scope: Option<String>,
}

/// The lifetime to believe for an `expires_in`: at least [`MIN_TOKEN_LIFETIME_SECS`]; `None`
/// when absent or not a number (the expiry is then unknown, and a `401` refreshes).
fn lifetime(expires_in: Option<&serde_json::Value>) -> Option<u64> {
    let secs = match expires_in? {
        serde_json::Value::Number(n) => n.as_f64()?,
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    if !secs.is_finite() {
        return None;
    }
    // `as` saturates: negative is 0, huge is u64::MAX.
    Some((secs as u64).max(MIN_TOKEN_LIFETIME_SECS))
}

/// One token request (`authorization_code` or `refresh_token`), the client authenticated as
/// it registered; the grant's tokens replaced on success.
async fn token_request(
    client: &awc::Client,
    grant: &mut Grant,
    params: &[(&str, &str)],
) -> Result<(), String> {
    let c = &grant.client;
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        form.append_pair(k, v);
    }
    form.append_pair("resource", &grant.resource);
    let mut req = client
        .post(&grant.token_endpoint)
        .insert_header(("Accept", "application/json"))
        .content_type("application/x-www-form-urlencoded");
    match (c.auth_method.as_str(), &c.client_secret) {
        ("client_secret_basic", Some(secret)) => {
            let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", enc(&c.client_id), enc(secret));
            use base64::Engine as _;
            let b = base64::engine::general_purpose::STANDARD.encode(pair);
            req = req.insert_header(("Authorization", format!("Basic {b}")));
            // Also in the body: RFC 6749 allows it, and some servers (the Python SDK's among
            // them) look the client up by the body's `client_id` before reading the header.
            form.append_pair("client_id", &c.client_id);
        }
        ("client_secret_post", Some(secret)) => {
            form.append_pair("client_id", &c.client_id);
            form.append_pair("client_secret", secret);
        }
        _ => {
            form.append_pair("client_id", &c.client_id);
        }
    }
    let endpoint = grant.token_endpoint.clone();
    let what = format!("the token request to {endpoint}");
    let body = bounded(REQUEST_TIMEOUT, || what.clone(), async {
        let mut resp = req
            .send_body(form.finish())
            .await
            .map_err(|e| format!("{what} failed: {e}"))?;
        if let Some(e) = refused_redirect(&resp, &what) {
            return Err(e);
        }
        success_body(&mut resp, &what).await
    })
    .await?;
    let t: TokenResponse = serde_json::from_slice(&body)
        .map_err(|_| format!("the token reply of {endpoint} is not valid"))?;
    let problem = parse::access_token_problem(&t.access_token).or_else(|| {
        t.refresh_token
            .as_deref()
            .and_then(parse::refresh_token_problem)
    });
    if let Some(p) = problem {
        return Err(format!(
            "the token endpoint {endpoint} issued {p}: not kept, a new login is needed"
        ));
    }
    grant.access_token = t.access_token;
    if t.refresh_token.is_some() {
        grant.refresh_token = t.refresh_token;
    }
    let now = now_secs();
    grant.issued_at = Some(now);
    grant.expires_at = lifetime(t.expires_in.as_ref()).map(|s| now.saturating_add(s));
    if let Some(s) = t.scope {
        let granted = parse::scope_tokens(&s);
        if !granted.is_empty() {
            grant.scopes = granted;
        }
    }
    Ok(())
}

/// Refreshes `grant`'s access token with its refresh token (same client, same resource).
pub async fn refresh(client: &awc::Client, grant: &Grant) -> Result<Grant, String> {
    let Some(rt) = grant.refresh_token.clone() else {
        return Err("no refresh token".to_owned());
    };
    let mut g = grant.clone();
    token_request(
        client,
        &mut g,
        &[("grant_type", "refresh_token"), ("refresh_token", &rt)],
    )
    .await?;
    Ok(g)
}

/// Waits on `listener` for the browser's redirect to `/callback`; answers it with a short page.
async fn wait_redirect(listener: &tokio::net::TcpListener) -> Result<Callback, String> {
    loop {
        let (mut sock, _) = listener
            .accept()
            .await
            .map_err(|e| format!("the redirect listener failed: {e}"))?;
        let mut buf = Vec::with_capacity(2048);
        let mut chunk = [0u8; 2048];
        let head_read = tokio::time::timeout(Duration::from_secs(10), async {
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await;
        if head_read.is_err() {
            continue;
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("");
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if path != "/callback" {
            let _ = sock
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let cb = Callback::from_query(query);
        let page = if cb.error.is_some() {
            "harness9: the login was refused. You can close this window."
        } else {
            "harness9: login received. You can close this window."
        };
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = sock.write_all(resp.as_bytes()).await;
        let _ = sock.shutdown().await;
        return Ok(cb);
    }
}

/// The server's `Bearer` challenge, found the way the runtime connects, unauthenticated: in
/// the stateless era (unless `pinned` names a handshake-era revision) `server/discover`, then
/// `tools/list`; else `initialize`, `notifications/initialized` and `tools/list` in its
/// session. The first `401` (or `403`) with a challenge is it; `None` when every step is
/// accepted or fails otherwise (discovery then starts from the well-known URLs).
pub async fn probe(server_url: &str, pinned: Option<ProtocolVersion>) -> Option<Challenge> {
    let client = http_client();
    let stateless = pinned.is_none_or(ProtocolVersion::is_stateless);
    if stateless {
        let version = pinned.unwrap_or(MODERN);
        match probe_stateless(&client, server_url, version).await {
            Probed::Challenge(c) => return Some(c),
            // A stateless server that answered without asking: nothing more to learn.
            Probed::Accepted => return None,
            Probed::Other if pinned.is_some() => return None,
            Probed::Other => {}
        }
    }
    let offer = pinned.filter(|v| !v.is_stateless()).unwrap_or(LATEST);
    probe_handshake(&client, server_url, offer).await
}

/// What one unauthenticated request of [`probe`] got.
enum Probed {
    /// A `401`/`403` with a `Bearer` challenge.
    Challenge(Challenge),
    /// A success (`2xx`).
    Accepted,
    /// Anything else: an error status without a challenge, a JSON-RPC error, no answer.
    Other,
}

/// One unauthenticated POST of [`probe`]; `session` and `version` go in their headers.
async fn probe_post(
    client: &awc::Client,
    server_url: &str,
    body: &serde_json::Value,
    session: Option<&str>,
    version: Option<&str>,
) -> (Probed, Option<String>) {
    let method = body
        .get("method")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut req = client
        .post(server_url)
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("Mcp-Method", method));
    if let Some(s) = session {
        req = req.insert_header(("Mcp-Session-Id", s));
    }
    if let Some(v) = version {
        req = req.insert_header(("MCP-Protocol-Version", v));
    }
    let Ok(Ok(mut resp)) = tokio::time::timeout(REQUEST_TIMEOUT, req.send_json(body)).await else {
        return (Probed::Other, None);
    };
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if status == awc::http::StatusCode::UNAUTHORIZED || status == awc::http::StatusCode::FORBIDDEN {
        let challenge = resp
            .headers()
            .get_all("www-authenticate")
            .filter_map(|v| v.to_str().ok())
            .find_map(Challenge::parse);
        return (challenge.map_or(Probed::Other, Probed::Challenge), session);
    }
    if !status.is_success() {
        return (Probed::Other, session);
    }
    if status == awc::http::StatusCode::ACCEPTED {
        return (Probed::Accepted, session);
    }
    // A JSON reply (or the first event of a stream) that is a JSON-RPC error is no success:
    // a handshake-era server refusing `server/discover`.
    let head = tokio::time::timeout(REQUEST_TIMEOUT, resp.body().limit(64 * 1024))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&head);
    // The JSON body, or the first `data:` of an event stream.
    let first = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str(d.trim()).ok())
        });
    let is_error = first.is_none_or(|m| m.get("error").is_some());
    (
        if is_error {
            Probed::Other
        } else {
            Probed::Accepted
        },
        session,
    )
}

/// The stateless era's first requests, unauthenticated: `server/discover`, then `tools/list`.
async fn probe_stateless(
    client: &awc::Client,
    server_url: &str,
    version: ProtocolVersion,
) -> Probed {
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": version.as_str(),
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo":
            {"name": "harness9", "version": env!("CARGO_PKG_VERSION")},
    });
    let v = Some(version.as_str());
    for (id, method) in [(0, "server/discover"), (1, "tools/list")] {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta}
        });
        match probe_post(client, server_url, &body, None, v).await.0 {
            Probed::Accepted => {}
            other => return other,
        }
    }
    Probed::Accepted
}

/// The handshake era's first requests, unauthenticated: `initialize`, then (in its session)
/// `notifications/initialized` and `tools/list`.
async fn probe_handshake(
    client: &awc::Client,
    server_url: &str,
    offer: ProtocolVersion,
) -> Option<Challenge> {
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": offer.as_str(), "capabilities": {},
                   "clientInfo": {"name": "harness9", "version": env!("CARGO_PKG_VERSION")}}
    });
    let (got, session) = probe_post(client, server_url, &init, None, None).await;
    match got {
        Probed::Challenge(c) => return Some(c),
        Probed::Other => return None,
        Probed::Accepted => {}
    }
    let v = Some(offer.as_str());
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    if let (Probed::Challenge(c), _) =
        probe_post(client, server_url, &initialized, session.as_deref(), v).await
    {
        return Some(c);
    }
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let found = match probe_post(client, server_url, &list, session.as_deref(), v)
        .await
        .0
    {
        Probed::Challenge(c) => Some(c),
        _ => None,
    };
    if let Some(s) = &session {
        // The probe's session is not kept.
        let _ = tokio::time::timeout(
            REQUEST_TIMEOUT,
            client
                .delete(server_url)
                .insert_header(("Mcp-Session-Id", s.as_str()))
                .send(),
        )
        .await;
    }
    found
}

/// The port of a loopback redirect URI.
fn redirect_port(uri: &str) -> Option<u16> {
    let (_, rest) = uri.split_once("://")?;
    let authority = rest.split('/').next()?;
    authority.rsplit_once(':')?.1.parse().ok()
}

/// The login flow driver: discovery (from `challenge`, if a server sent one), a client
/// (configured, stored for this issuer, a metadata document, or registered), the browser on the
/// authorization URL (also given to `show`, for the user to open by hand), the loopback
/// redirect, the checks of `state` and `iss`, the token exchange; the grant is saved in the
/// spec's store and returned. `held` are scopes already granted (a step-up asks for the union).
pub async fn login(
    server_url: &str,
    spec: &OAuthSpec,
    challenge: Option<&Challenge>,
    held: &[String],
    show: &dyn Fn(&str),
) -> Result<Grant, String> {
    login_with_paste(server_url, spec, challenge, held, show, None).await
}

/// [`login`], where the redirect may also arrive as a line on `pasted`: the address the browser
/// was sent to, copied from its address bar by a user whose browser is on another machine (an
/// SSH session), where the loopback redirect cannot reach us. A line that is not that address
/// is answered on stderr and the wait goes on; the loopback listener stays open meanwhile.
pub async fn login_with_paste(
    server_url: &str,
    spec: &OAuthSpec,
    challenge: Option<&Challenge>,
    held: &[String],
    show: &dyn Fn(&str),
    pasted: Option<&mut tokio::sync::mpsc::Receiver<String>>,
) -> Result<Grant, String> {
    let guard = Guard::new(server_url, &spec.config.allow_origins).await;
    let client = guarded_client(&guard);
    let d = bounded(
        DISCOVERY_TIMEOUT,
        || format!("the OAuth discovery of {server_url}"),
        discover(&client, &guard, server_url, challenge),
    )
    .await?;
    let issuer = d.server.issuer.clone();
    let cfg = &spec.config;
    let stored = spec.store.client(server_url, &issuer);
    let port = cfg
        .callback_port
        .or_else(|| {
            stored
                .as_ref()
                .and_then(|c| c.redirect_uri.as_deref())
                .and_then(redirect_port)
        })
        .unwrap_or(0);
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(_) if cfg.callback_port.is_none() && port != 0 => {
            tokio::net::TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| format!("cannot listen for the redirect: {e}"))?
        }
        Err(e) => {
            return Err(format!(
                "cannot listen for the redirect on 127.0.0.1:{port}: {e}"
            ))
        }
    };
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot listen for the redirect: {e}"))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{bound}/callback");
    let scopes = parse::choose_scopes(
        &cfg.scopes,
        challenge.and_then(|c| c.scope.as_deref()),
        d.resource.scopes_supported.as_deref(),
        held,
        d.server.scopes_supported.as_deref(),
    );
    let oauth_client = if let Some(id) = &cfg.client_id {
        let method = match &cfg.client_secret {
            Some(_) => secret_method(&d.server),
            None => "none",
        };
        Client {
            client_id: id.clone(),
            client_secret: cfg.client_secret.clone(),
            auth_method: method.to_owned(),
            redirect_uri: None,
        }
    } else if let Some(c) =
        stored.filter(|c| c.redirect_uri.as_deref().is_none_or(|r| r == redirect_uri))
    {
        c
    } else if let (true, Some(url)) = (
        d.server.client_id_metadata_document_supported,
        &cfg.client_metadata_url,
    ) {
        Client {
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".to_owned(),
            redirect_uri: None,
        }
    } else {
        register(&client, &d, &redirect_uri, &scopes).await?
    };
    let verifier = parse::b64url(&crate::net::random(32)?);
    let state = parse::b64url(&crate::net::random(16)?);
    let url = parse::authorization_url(&parse::AuthRequest {
        endpoint: &d.server.authorization_endpoint,
        client_id: &oauth_client.client_id,
        redirect_uri: &redirect_uri,
        code_challenge: &parse::code_challenge(&verifier),
        state: &state,
        resource: &d.resource.resource,
        scopes: &scopes,
    });
    // Only an address the opener accepts is shown and opened (the same string): never an
    // option-like, `file:`, `javascript:` or custom-scheme endpoint, nor one with hidden
    // characters.
    let url = String::from(
        crate::opener::check_url(&url)
            .map_err(|e| format!("refusing the authorization server's login address: {e}"))?,
    );
    show(&url);
    if let Err(e) = crate::opener::open_url(&url, None, true) {
        tracing::warn!(target: "mcp", "cannot start the browser: {e}; open the login URL by hand");
    }
    let from_paste = async {
        let Some(rx) = pasted else {
            return std::future::pending().await;
        };
        while let Some(line) = rx.recv().await {
            match parse::pasted_redirect(&line, &redirect_uri) {
                Some(cb) => return Ok(cb),
                None if line.trim().is_empty() => {}
                None => eprintln!(
                    "That is not the redirect address; paste the whole address (it starts with {redirect_uri}) from the browser's address bar."
                ),
            }
        }
        std::future::pending().await
    };
    let either = async {
        tokio::select! {
            r = wait_redirect(&listener) => r,
            r = from_paste => r,
        }
    };
    let cb = tokio::time::timeout(spec.login_timeout, either)
        .await
        .map_err(|_| {
            format!(
                "no redirect from the browser within {} s",
                spec.login_timeout.as_secs()
            )
        })??;
    let code = cb
        .check(
            &state,
            &issuer,
            d.server.authorization_response_iss_parameter_supported,
        )?
        .to_owned();
    let mut grant = Grant {
        issuer,
        token_endpoint: d.server.token_endpoint.clone(),
        resource: d.resource.resource.clone(),
        client: oauth_client,
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        issued_at: None,
        scopes: scopes.clone(),
        wanted_scopes: Vec::new(),
    };
    token_request(
        &client,
        &mut grant,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &redirect_uri),
            ("code_verifier", &verifier),
        ],
    )
    .await?;
    spec.store.save(server_url, &grant)?;
    Ok(grant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_of_redirects() {
        assert_eq!(redirect_port("http://127.0.0.1:4242/callback"), Some(4242));
        assert_eq!(redirect_port("http://localhost/callback"), None);
    }

    /// The resolver checks a host name's addresses when it connects (a name that resolves to
    /// loopback is refused for a public server, taken for a loopback one or a trusted origin).
    #[actix_rt::test]
    async fn names_are_checked_when_connecting() {
        use actix_tls::connect::Resolve as _;
        let public = PinnedResolver {
            server_kind: Some(parse::AddrKind::Public),
            trusted: Vec::new(),
        };
        let err = public.lookup("localhost", 80).await.unwrap_err();
        assert!(err.to_string().contains("a loopback address"), "{err}");
        let local = PinnedResolver {
            server_kind: Some(parse::AddrKind::Loopback),
            trusted: Vec::new(),
        };
        assert!(!local.lookup("localhost", 80).await.unwrap().is_empty());
        let trusted = PinnedResolver {
            server_kind: Some(parse::AddrKind::Public),
            trusted: vec![("localhost".to_owned(), 80)],
        };
        assert!(trusted.lookup("localhost", 80).await.is_ok());
        let refresh = PinnedResolver {
            server_kind: None,
            trusted: Vec::new(),
        };
        assert!(refresh.lookup("localhost", 80).await.is_ok());
    }

    #[test]
    fn lifetimes_have_a_floor() {
        let v = |j: &str| serde_json::from_str::<serde_json::Value>(j).unwrap();
        assert_eq!(lifetime(Some(&v("0"))), Some(MIN_TOKEN_LIFETIME_SECS));
        assert_eq!(lifetime(Some(&v("-5"))), Some(MIN_TOKEN_LIFETIME_SECS));
        assert_eq!(lifetime(Some(&v("3600"))), Some(3600));
        assert_eq!(lifetime(Some(&v("\"120\""))), Some(120));
        assert_eq!(lifetime(Some(&v("1e30"))), Some(u64::MAX));
        assert_eq!(lifetime(Some(&v("null"))), None);
        assert_eq!(lifetime(None), None);
    }

    #[test]
    fn locations_resolve_against_their_url() {
        assert_eq!(resolve_location("http://h:1/a/b", "/c"), "http://h:1/c");
        assert_eq!(resolve_location("http://h:1/a/b", "c"), "http://h:1/a/c");
        assert_eq!(
            resolve_location("http://h:1/a", "https://x/y"),
            "https://x/y"
        );
    }

    #[test]
    fn error_bodies_are_short() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_grant","error_description":"expired"}"#),
            "invalid_grant: expired"
        );
        assert_eq!(oauth_error(b"nope"), "nope");
    }
}
