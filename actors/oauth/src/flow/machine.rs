//! The grants that need no user: client credentials (RFC 6749 section 4.4, the client
//! authenticated with a secret or a signed assertion) and the JWT bearer grant with a token the
//! platform gives the workload (RFC 7523 section 2.1), or an identity assertion grant from the
//! enterprise IdP (`enterprise.rs`). The runtime gets a token with
//! [`acquire`] when the server first asks, and [`renew`]s it when it expires or is refused:
//! never a browser, never `harness9 mcp login`.

use super::discovery::{discover_for, ServerMetadata};
use super::exchange::{secret_method, token_request};
use super::guard::{guarded_client, Guard};
use super::{bounded, DISCOVERY_TIMEOUT};
use crate::parse::{self, Challenge};
use crate::{Client, Grant, GrantKind, OAuthConfig, OAuthSpec};

/// The grant type of the JWT bearer grant.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The client of an unattended grant: the configured id, authenticated as `tokenEndpointAuth`
/// says, else with the key (`private_key_jwt`), else with the secret (as the server supports),
/// else not at all.
fn machine_client(cfg: &OAuthConfig, server: &ServerMetadata) -> Result<Client, String> {
    let Some(id) = cfg.client_id.clone() else {
        return Err(format!(
            "the {} grant needs oauth.clientId",
            cfg.grant.name()
        ));
    };
    let method = match (
        &cfg.token_endpoint_auth,
        &cfg.signing_key,
        &cfg.client_secret,
    ) {
        (Some(m), _, _) => m.clone(),
        (None, Some(_), _) => "private_key_jwt".to_owned(),
        (None, None, Some(_)) => secret_method(server).to_owned(),
        (None, None, None) => "none".to_owned(),
    };
    Ok(Client {
        client_id: id,
        client_secret: cfg.client_secret.clone(),
        auth_method: method,
        redirect_uri: None,
    })
}

/// Discovers the authorization server of `server_url` (from `challenge`, if the server sent
/// one) and gets a first token with the configured unattended grant.
pub async fn acquire(
    server_url: &str,
    spec: &OAuthSpec,
    challenge: Option<&Challenge>,
) -> Result<Grant, String> {
    let cfg = &spec.config;
    let guard = Guard::new(server_url, &cfg.allow_origins).await;
    let client = guarded_client(&guard);
    let d = bounded(
        DISCOVERY_TIMEOUT,
        || format!("the OAuth discovery of {server_url}"),
        discover_for(&client, &guard, server_url, challenge, false),
    )
    .await?;
    // A hostile MCP server may name an authorization server of its own to collect the
    // client's secret or the workload's token: the configured issuer is the only one.
    if let Some(want) = &cfg.issuer {
        if !same_issuer(want, &d.server.issuer) {
            return Err(format!(
                "{server_url} names authorization server {}, not the configured oauth.issuer {want}: its credentials are not sent there",
                d.server.issuer
            ));
        }
    }
    let scopes = parse::choose_scopes(
        &cfg.scopes,
        challenge.and_then(|c| c.scope.as_deref()),
        d.resource.scopes_supported.as_deref(),
        &[],
        d.server.scopes_supported.as_deref(),
    );
    // DPoP as for a login: a key for this process's grant (tokens and key live in memory).
    let dpop = if crate::dpop::wanted(
        cfg.dpop,
        d.server.dpop_signing_alg_values_supported.as_deref(),
        &d.server.issuer,
    )? {
        Some(crate::dpop::Dpop::generate()?)
    } else {
        None
    };
    let grant = Grant {
        issuer: d.server.issuer.clone(),
        token_endpoint: d.server.token_endpoint.clone(),
        resource: d.resource.resource.clone(),
        client: machine_client(cfg, &d.server)?,
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        issued_at: None,
        scopes,
        wanted_scopes: Vec::new(),
        dpop,
        id_token: None,
    };
    renew(&client, spec, &grant).await
}

/// A new token for `grant` (same client, endpoint, resource and scopes) with the configured
/// unattended grant: the client's credentials again, or the workload's token read again (a
/// platform rotates it).
pub async fn renew(client: &awc::Client, spec: &OAuthSpec, grant: &Grant) -> Result<Grant, String> {
    let cfg = &spec.config;
    let mut g = grant.clone();
    let assertion;
    let mut params: Vec<(&str, &str)> = Vec::new();
    match cfg.grant {
        GrantKind::ClientCredentials => params.push(("grant_type", "client_credentials")),
        GrantKind::JwtBearer => {
            let source = cfg.assertion.as_ref().ok_or_else(|| {
                "the jwt_bearer grant needs oauth.assertionFile or oauth.assertionEnv".to_owned()
            })?;
            assertion = source.read()?;
            if cfg.issuer.is_none() {
                audience_fits(&assertion, &g.issuer, &g.token_endpoint)?;
            }
            // A server that quotes it back in an error is cleaned out of spans and logs.
            harness9_telemetry::redact_also(std::iter::once(assertion.as_str()));
            params.push(("grant_type", JWT_BEARER));
            params.push(("assertion", &assertion));
        }
        GrantKind::Enterprise => {
            // A fresh ID-JAG for this authorization server and resource each time: they live
            // minutes, and the IdP decides again whether the user may still have it.
            assertion = super::enterprise::id_jag(spec, &g.issuer, &g.resource, &g.scopes).await?;
            params.push(("grant_type", JWT_BEARER));
            params.push(("assertion", &assertion));
        }
        GrantKind::AuthorizationCode => {
            return Err("the authorization code grant needs `harness9 mcp login`".to_owned())
        }
    }
    let scope = g.scopes.join(" ");
    if !scope.is_empty() {
        params.push(("scope", &scope));
    }
    token_request(client, &mut g, &params, cfg.signing_key.as_ref()).await?;
    // Unattended grants get a new token from their credentials, never with a refresh token.
    g.refresh_token = None;
    Ok(g)
}

/// Two issuer identifiers that name the same server (a trailing `/` aside).
fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// A workload token is meant for one authorization server, its `aud`: sent to another (one
/// a hostile MCP server names), it could be replayed at the real one. Without a configured
/// `oauth.issuer`, the token's `aud` must name the discovered issuer or its token endpoint.
fn audience_fits(assertion: &str, issuer: &str, token_endpoint: &str) -> Result<(), String> {
    use base64::Engine as _;
    let claims: Option<serde_json::Value> = assertion
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p.trim_end_matches('='))
                .ok()
        })
        .and_then(|b| serde_json::from_slice(&b).ok());
    let aud: Vec<String> = match claims.as_ref().map(|c| &c["aud"]) {
        Some(serde_json::Value::String(a)) => vec![a.clone()],
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    if aud
        .iter()
        .any(|a| same_issuer(a, issuer) || same_issuer(a, token_endpoint))
    {
        return Ok(());
    }
    let shown: Vec<String> = aud
        .iter()
        .map(|a| harness9_net::truncate_chars(a, 100))
        .collect();
    Err(format!(
        "the workload token is for {} (its aud), not the authorization server {issuer} the MCP server names: not sent; if {issuer} is right, set oauth.issuer to it",
        if shown.is_empty() {
            "no audience".to_owned()
        } else {
            shown.join(", ")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_authenticates_as_configured_else_by_what_it_has() {
        let basic_only = ServerMetadata::default();
        let post_only = ServerMetadata {
            token_endpoint_auth_methods_supported: Some(vec!["client_secret_post".into()]),
            ..ServerMetadata::default()
        };
        let mut cfg = OAuthConfig {
            grant: GrantKind::ClientCredentials,
            ..OAuthConfig::default()
        };
        assert!(machine_client(&cfg, &basic_only).is_err(), "no client id");
        cfg.client_id = Some("c".into());
        assert_eq!(
            machine_client(&cfg, &basic_only).unwrap().auth_method,
            "none"
        );
        cfg.client_secret = Some("s".into());
        assert_eq!(
            machine_client(&cfg, &basic_only).unwrap().auth_method,
            "client_secret_basic"
        );
        assert_eq!(
            machine_client(&cfg, &post_only).unwrap().auth_method,
            "client_secret_post"
        );
        cfg.token_endpoint_auth = Some("client_secret_basic".into());
        assert_eq!(
            machine_client(&cfg, &post_only).unwrap().auth_method,
            "client_secret_basic",
            "the configured method wins"
        );
    }

    #[test]
    fn a_workload_token_goes_only_to_its_audience() {
        use base64::Engine as _;
        let jwt = |aud: serde_json::Value| {
            let b = |v: serde_json::Value| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
            };
            format!(
                "{}.{}.sig",
                b(serde_json::json!({"alg": "ES256"})),
                b(serde_json::json!({"aud": aud}))
            )
        };
        let (iss, tok) = ("https://as.example", "https://as.example/token");
        assert!(audience_fits(&jwt("https://as.example/".into()), iss, tok).is_ok());
        assert!(audience_fits(&jwt(serde_json::json!(["x", tok])), iss, tok).is_ok());
        let e = audience_fits(&jwt("https://evil.example".into()), iss, tok).unwrap_err();
        assert!(
            e.contains("https://evil.example") && e.contains("oauth.issuer"),
            "{e}"
        );
        assert!(audience_fits("not-a-jwt", iss, tok).is_err());
        assert!(same_issuer("https://a/", "https://a"));
    }
}
