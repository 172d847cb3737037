//! Discovery: the protected resource metadata (RFC 9728) and the authorization server's
//! metadata (RFC 8414), fetched through the [`Guard`], and the 2025-03-26 fallback.

use serde::Deserialize;

use super::guard::Guard;
use super::{bounded, BODY_LIMIT, MAX_METADATA_REDIRECTS, REQUEST_TIMEOUT};
use crate::parse::{self, Challenge};

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
    /// Where the user authorizes (empty when the server has none: only grants without a user).
    #[serde(default)]
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
    /// The algorithms it takes DPoP proofs in (RFC 9449 §5.1): it issues DPoP-bound tokens.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
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

/// Finds the protected resource metadata and its authorization server's metadata, for a
/// login in the browser. Refuses a `resource` that does not cover `server_url`, metadata whose
/// `issuer` is not the one it was fetched for, and a server without PKCE S256 or without an
/// authorization endpoint. Without protected resource metadata, the 2025-03-26 discovery
/// (`legacy_discovery`).
pub async fn discover(
    client: &awc::Client,
    guard: &Guard,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovery, String> {
    discover_for(client, guard, server_url, challenge, true).await
}

/// [`discover`], for a login in the browser (`interactive`: PKCE S256 and an authorization
/// endpoint required) or for a grant without a user (neither is used: only the token endpoint).
pub(super) async fn discover_for(
    client: &awc::Client,
    guard: &Guard,
    server_url: &str,
    challenge: Option<&Challenge>,
    interactive: bool,
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
        return legacy_discovery(client, guard, server_url, interactive).await;
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
    let server = server_metadata(client, guard, &issuer, interactive).await?;
    Ok(Discovery {
        resource: prm,
        server,
    })
}

/// The metadata of the authorization server `issuer` (RFC 8414, else OpenID discovery),
/// through the guard: its `issuer` must be the one asked for; for a login in the browser
/// (`interactive`), PKCE S256 and an authorization endpoint are required.
pub(super) async fn server_metadata(
    client: &awc::Client,
    guard: &Guard,
    issuer: &str,
    interactive: bool,
) -> Result<ServerMetadata, String> {
    guard.check(issuer, "the authorization server").await?;
    let mut found = None;
    for url in parse::as_metadata_urls(issuer) {
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
    if interactive
        && !server
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    {
        return Err(format!(
            "authorization server {issuer} does not advertise PKCE S256: refusing it"
        ));
    }
    check_endpoints(guard, &server, interactive).await?;
    Ok(server)
}

/// The authorization server's endpoints pass the guard (the authorization endpoint too: it
/// is opened in the user's browser).
async fn check_endpoints(
    guard: &Guard,
    server: &ServerMetadata,
    interactive: bool,
) -> Result<(), String> {
    if interactive {
        if server.authorization_endpoint.is_empty() {
            return Err(format!(
                "authorization server {} names no authorization endpoint: it cannot log a user in",
                server.issuer
            ));
        }
        guard
            .check(&server.authorization_endpoint, "the authorization endpoint")
            .await?;
    }
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
    interactive: bool,
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
            if interactive
                && m.code_challenge_methods_supported
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
    check_endpoints(guard, &server, interactive).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_their_url() {
        assert_eq!(resolve_location("http://h:1/a/b", "/c"), "http://h:1/c");
        assert_eq!(resolve_location("http://h:1/a/b", "c"), "http://h:1/a/c");
        assert_eq!(
            resolve_location("http://h:1/a", "https://x/y"),
            "https://x/y"
        );
    }
}
