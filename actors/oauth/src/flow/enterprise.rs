//! Enterprise-managed authorization (the `io.modelcontextprotocol/enterprise-managed-authorization`
//! extension, SEP-990): the user logs in once at the enterprise identity provider (an OpenID
//! Connect login in the browser, [`sso_login`], kept in the token store under
//! [`IdpConfig::store_key`]); for each MCP server of the `enterprise` grant the runtime
//! exchanges the user's ID token at the IdP for an identity assertion JWT authorization grant
//! (ID-JAG, RFC 8693 token exchange, [`id_jag`]) for that server's authorization server and
//! resource, then presents it there with the JWT bearer grant (RFC 7523, `machine.rs`). The ID
//! token goes only to the IdP of the user's own settings; the ID-JAG only to the
//! authorization server it names as its audience.

use super::discovery::{server_metadata, ServerMetadata};
use super::exchange::{code_exchange, secret_method, token_request};
use super::guard::{guarded_client, Guard};
use super::login::{browser_code, listen, BrowserLogin};
use super::{bounded, DISCOVERY_TIMEOUT};
use crate::{now_secs, AssertionSource, Client, Grant, IdpConfig, OAuthSpec};

/// RFC 8693's grant type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The subject token's type: an OpenID Connect ID token.
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The requested token's type: an identity assertion JWT authorization grant.
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The start of the error of a server whose grant needs the user's SSO login: the runtime
/// adds which command does it.
pub const SSO_NEEDED: &str = "no current SSO login at the enterprise identity provider";
/// An ID token that expires within this many seconds is renewed first.
const ID_TOKEN_MARGIN_SECS: u64 = 60;

/// The IdP of `spec`'s grant.
fn idp_of(spec: &OAuthSpec) -> Result<&IdpConfig, String> {
    spec.config.idp.as_ref().ok_or_else(|| {
        "the enterprise grant needs an identity provider: add [enterprise_idp] (issuer, client_id) to your own settings file".to_owned()
    })
}

/// The IdP's metadata (OpenID discovery, its issuer checked) and a client whose every request
/// its guard checks.
async fn idp_metadata(
    idp: &IdpConfig,
    interactive: bool,
) -> Result<(awc::Client, ServerMetadata), String> {
    let guard = Guard::new(&idp.issuer, &[]).await;
    let client = guarded_client(&guard);
    let meta = bounded(
        DISCOVERY_TIMEOUT,
        || format!("the discovery of the identity provider {}", idp.issuer),
        server_metadata(&client, &guard, &idp.issuer, interactive),
    )
    .await?;
    Ok((client, meta))
}

/// harness9's client at the IdP: a secret if configured (sent as the IdP supports), else
/// public.
fn idp_client(idp: &IdpConfig, meta: &ServerMetadata) -> Client {
    Client {
        client_id: idp.client_id.clone(),
        client_secret: idp.client_secret.clone(),
        auth_method: if idp.client_secret.is_some() {
            secret_method(meta).to_owned()
        } else {
            "none".to_owned()
        },
        redirect_uri: None,
    }
}

/// A grant at the IdP (no tokens yet) for `resource` (empty: the SSO login itself).
fn idp_grant(idp: &IdpConfig, meta: &ServerMetadata, resource: &str) -> Grant {
    Grant {
        issuer: meta.issuer.clone(),
        token_endpoint: meta.token_endpoint.clone(),
        resource: resource.to_owned(),
        client: idp_client(idp, meta),
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        issued_at: None,
        scopes: Vec::new(),
        wanted_scopes: Vec::new(),
        dpop: None,
        id_token: None,
    }
}

/// The SSO login at the enterprise IdP of `spec`'s grant: the authorization code flow with
/// PKCE, an OpenID `nonce` and the loopback redirect (or a pasted one), as a server's login
/// does; the ID token (and refresh token) kept in the store. One login serves every server of
/// the enterprise grant.
pub async fn sso_login(
    spec: &OAuthSpec,
    show: &dyn Fn(&str),
    pasted: Option<&mut tokio::sync::mpsc::Receiver<String>>,
) -> Result<Grant, String> {
    let idp = idp_of(spec)?;
    if let Some(f) = &idp.id_token_file {
        return Err(format!(
            "[enterprise_idp] takes the ID token from {} (id_token_file): the tool that writes it logs you in, not harness9",
            f.display()
        ));
    }
    let (client, meta) = idp_metadata(idp, true).await?;
    let (listener, redirect_uri) =
        listen(idp.callback_port.unwrap_or(0), idp.callback_port.is_none()).await?;
    let mut scopes = idp.scopes.clone();
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".to_owned());
    }
    let nonce = crate::parse::b64url(&harness9_net::random(16)?);
    let (code, verifier) = browser_code(
        &BrowserLogin {
            server: &meta,
            client_id: &idp.client_id,
            listener: &listener,
            redirect_uri: &redirect_uri,
            resource: "",
            scopes: &scopes,
            nonce: Some(&nonce),
            timeout: spec.login_timeout,
        },
        show,
        pasted,
    )
    .await?;
    let mut grant = idp_grant(idp, &meta, "");
    grant.scopes = scopes;
    code_exchange(&client, &mut grant, &code, &redirect_uri, &verifier).await?;
    let id_token = grant.id_token.clone().ok_or_else(|| {
        format!(
            "the identity provider {} answered the login without an ID token: is it an OpenID Connect provider?",
            idp.issuer
        )
    })?;
    check_id_token(&id_token, idp, Some(&nonce))?;
    harness9_telemetry::redact_also(std::iter::once(id_token.as_str()));
    spec.store.save(&idp.store_key(), &grant)?;
    Ok(grant)
}

/// The claims of a JWT, unverified (the IdP that issued it verifies it when it comes back).
fn claims(jwt: &str) -> Option<serde_json::Value> {
    use base64::Engine as _;
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// When `id_token` expires (its `exp`), if it says.
fn expiry(id_token: &str) -> Option<u64> {
    claims(id_token)?.get("exp")?.as_u64()
}

/// An ID token from a login is this login's: issued by the IdP, to harness9's client, with the
/// login's `nonce` (an injected token of another login is refused), not expired.
fn check_id_token(id_token: &str, idp: &IdpConfig, nonce: Option<&str>) -> Result<(), String> {
    let c = claims(id_token).ok_or_else(|| {
        format!(
            "the identity provider {} issued an ID token that is not a JWT",
            idp.issuer
        )
    })?;
    let iss = c.get("iss").and_then(|v| v.as_str()).unwrap_or("");
    if iss.trim_end_matches('/') != idp.issuer.trim_end_matches('/') {
        return Err(format!(
            "the ID token was issued by {:?}, not the identity provider {}: refusing it",
            harness9_net::truncate_chars(iss, 100),
            idp.issuer
        ));
    }
    let aud_ok = match c.get("aud") {
        Some(serde_json::Value::String(a)) => *a == idp.client_id,
        Some(serde_json::Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(&idp.client_id)),
        _ => false,
    };
    if !aud_ok {
        return Err(format!(
            "the ID token is not for harness9's client {} at {}: refusing it",
            idp.client_id, idp.issuer
        ));
    }
    if let Some(n) = nonce {
        if c.get("nonce").and_then(|v| v.as_str()) != Some(n) {
            return Err(
                "the ID token does not carry this login's nonce (a replayed or injected token): refusing it"
                    .to_owned(),
            );
        }
    }
    if expiry(id_token).is_some_and(|e| e <= now_secs()) {
        return Err("the identity provider issued an ID token that has already expired".to_owned());
    }
    Ok(())
}

/// The user's ID token now: the `id_token_file`'s (read again each time: the tool that writes
/// it renews it), else the SSO login's, renewed with its refresh token when it is about to
/// expire; else an error starting with [`SSO_NEEDED`].
async fn id_token(idp: &IdpConfig, spec: &OAuthSpec) -> Result<String, String> {
    if let Some(f) = &idp.id_token_file {
        let t = AssertionSource::File(f.clone())
            .read()
            .map_err(|e| e.replace("workload token", "ID token"))?;
        if expiry(&t).is_some_and(|e| e <= now_secs()) {
            return Err(format!(
                "the ID token in {} has expired: the tool that writes it must renew it",
                f.display()
            ));
        }
        harness9_telemetry::redact_also(std::iter::once(t.as_str()));
        return Ok(t);
    }
    let key = idp.store_key();
    let Some(g) = spec.store.load(&key) else {
        return Err(format!("{SSO_NEEDED} {}", idp.issuer));
    };
    if let Some(t) = g
        .id_token
        .as_deref()
        .filter(|t| expiry(t).is_none_or(|e| e > now_secs().saturating_add(ID_TOKEN_MARGIN_SECS)))
    {
        harness9_telemetry::redact_also(std::iter::once(t));
        return Ok(t.to_owned());
    }
    let Some(rt) = g.refresh_token.clone() else {
        return Err(format!(
            "{SSO_NEEDED} {} (the ID token expired)",
            idp.issuer
        ));
    };
    let (client, _) = idp_metadata(idp, false).await?;
    let mut fresh = g.clone();
    let scope = g.scopes.join(" ");
    let mut params = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", rt.as_str()),
    ];
    if !scope.is_empty() {
        params.push(("scope", &scope));
    }
    fresh.id_token = None;
    if let Err(e) = token_request(&client, &mut fresh, &params, None).await {
        return Err(format!(
            "{SSO_NEEDED} {} (the ID token expired and renewing it failed: {e})",
            idp.issuer
        ));
    }
    let Some(t) = fresh.id_token.clone() else {
        return Err(format!(
            "{SSO_NEEDED} {} (the ID token expired and the refresh gave no new one)",
            idp.issuer
        ));
    };
    check_id_token(&t, idp, None)?;
    harness9_telemetry::redact_also(std::iter::once(t.as_str()));
    spec.store.save(&key, &fresh)?;
    tracing::info!(target: "mcp", idp = %idp.issuer, "ID token renewed at the identity provider");
    Ok(t)
}

/// An ID-JAG for the authorization server `audience` and the MCP server `resource` (with
/// `scopes`), from the user's ID token, by a token exchange (RFC 8693) at the IdP.
pub(super) async fn id_jag(
    spec: &OAuthSpec,
    audience: &str,
    resource: &str,
    scopes: &[String],
) -> Result<String, String> {
    let idp = idp_of(spec)?;
    let subject = id_token(idp, spec).await?;
    let (client, meta) = idp_metadata(idp, false).await?;
    let mut exchange = idp_grant(idp, &meta, resource);
    let scope = scopes.join(" ");
    let mut params = vec![
        ("grant_type", TOKEN_EXCHANGE),
        ("requested_token_type", ID_JAG_TYPE),
        ("audience", audience),
        ("subject_token", subject.as_str()),
        ("subject_token_type", ID_TOKEN_TYPE),
    ];
    if !scope.is_empty() {
        params.push(("scope", &scope));
    }
    let issued = token_request(&client, &mut exchange, &params, None)
        .await
        .map_err(|e| format!("the token exchange at the identity provider failed: {e}"))?;
    if issued.as_deref() != Some(ID_JAG_TYPE) {
        return Err(format!(
            "the identity provider {} issued {:?}, not an identity assertion grant ({ID_JAG_TYPE})",
            idp.issuer,
            issued
                .as_deref()
                .map(|s| harness9_net::truncate_chars(s, 100))
        ));
    }
    let jag = exchange.access_token;
    harness9_telemetry::redact_also(std::iter::once(jag.as_str()));
    Ok(jag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(c: serde_json::Value) -> String {
        use base64::Engine as _;
        let b = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        format!("{}.{}.sig", b(serde_json::json!({"alg": "ES256"})), b(c))
    }

    fn idp() -> IdpConfig {
        IdpConfig {
            issuer: "https://idp.example".into(),
            client_id: "h9".into(),
            client_secret: None,
            scopes: Vec::new(),
            callback_port: None,
            id_token_file: None,
        }
    }

    #[test]
    fn an_id_token_must_be_this_logins() {
        let later = now_secs() + 600;
        let good = serde_json::json!({"iss": "https://idp.example/", "aud": ["x", "h9"], "nonce": "n1", "exp": later});
        assert!(check_id_token(&jwt(good.clone()), &idp(), Some("n1")).is_ok());
        let mut other = good.clone();
        other["nonce"] = "n2".into();
        assert!(check_id_token(&jwt(other), &idp(), Some("n1"))
            .unwrap_err()
            .contains("nonce"));
        let mut foreign = good.clone();
        foreign["iss"] = "https://evil.example".into();
        assert!(check_id_token(&jwt(foreign), &idp(), None)
            .unwrap_err()
            .contains("evil.example"));
        let mut aud = good.clone();
        aud["aud"] = "someone-else".into();
        assert!(check_id_token(&jwt(aud), &idp(), None).is_err());
        let mut old = good;
        old["exp"] = 5.into();
        assert!(check_id_token(&jwt(old), &idp(), None).is_err());
        assert!(check_id_token("opaque", &idp(), None).is_err());
    }

    #[test]
    fn the_store_key_is_the_issuer() {
        assert_eq!(idp().store_key(), "sso:https://idp.example");
    }
}
