//! The grants that need no user: client credentials (RFC 6749 section 4.4, the client
//! authenticated with a secret or a signed assertion) and the JWT bearer grant with a token the
//! platform gives the workload (RFC 7523 section 2.1). The runtime gets a token with
//! [`acquire`] when the server first asks, and [`renew`]s it when it expires or is refused:
//! never a browser, never `harness9 mcp login`.

use super::discovery::{discover_for, ServerMetadata};
use super::exchange::{secret_method, token_request};
use super::guard::{guarded_client, Guard};
use super::{bounded, DISCOVERY_TIMEOUT};
use crate::oauth::parse::{self, Challenge};
use crate::oauth::{Client, Grant, GrantKind, OAuthConfig, OAuthSpec};

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
    let scopes = parse::choose_scopes(
        &cfg.scopes,
        challenge.and_then(|c| c.scope.as_deref()),
        d.resource.scopes_supported.as_deref(),
        &[],
        d.server.scopes_supported.as_deref(),
    );
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
            // A server that quotes it back in an error is cleaned out of spans and logs.
            crate::telemetry::redact_also(std::iter::once(assertion.as_str()));
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
}
