//! The exchanges that carry credentials: dynamic client registration (RFC 7591) and token
//! requests (code exchange, refresh), bounded, never following a redirect, tokens checked.

use serde::Deserialize;

use super::discovery::{Discovery, ServerMetadata};
use super::{bounded, BODY_LIMIT, MIN_TOKEN_LIFETIME_SECS, REQUEST_TIMEOUT};
use crate::jwt::{self, SigningKey};
use crate::{dpop, parse};
use crate::{now_secs, Client, Grant};
use harness9_net::snippet;

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
        .map(|l| harness9_net::truncate_chars(l, 200))
        .unwrap_or_default();
    Some(format!(
        "{what} answered HTTP {status} (a redirect to {to:?}): a request that carries credentials never follows a redirect; the authorization server must answer at that endpoint itself"
    ))
}

/// The token endpoint auth method for a confidential client: `client_secret_basic` unless the
/// server lists only `client_secret_post` (RFC 8414's default is basic).
pub(super) fn secret_method(server: &ServerMetadata) -> &'static str {
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
pub(super) async fn register(
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
    let text = credentialed_exchange(
        &what,
        client
            .post(endpoint)
            .insert_header(("Accept", "application/json"))
            .send_json(&body),
    )
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

/// One request that carries credentials (`what`, sent by `send`): bounded by
/// [`REQUEST_TIMEOUT`], a redirect refused ([`refused_redirect`]), the body of a success
/// ([`success_body`]).
async fn credentialed_exchange<S>(
    what: &str,
    send: impl std::future::Future<
        Output = Result<awc::ClientResponse<S>, awc::error::SendRequestError>,
    >,
) -> Result<bytes::Bytes, String>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    bounded(REQUEST_TIMEOUT, || what.to_owned(), async {
        let mut resp = send.await.map_err(|e| format!("{what} failed: {e}"))?;
        if let Some(e) = refused_redirect(&resp, what) {
            return Err(e);
        }
        success_body(&mut resp, what).await
    })
    .await
}

/// A token request (`what`, sent by `send` to `endpoint`): its status and body, bounded like
/// [`credentialed_exchange`], a redirect refused; a `DPoP-Nonce` it carries is noted in `dpop`.
async fn token_exchange<S>(
    what: &str,
    send: impl std::future::Future<
        Output = Result<awc::ClientResponse<S>, awc::error::SendRequestError>,
    >,
    dpop: Option<&dpop::Dpop>,
    endpoint: &str,
) -> Result<(awc::http::StatusCode, bytes::Bytes), String>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    bounded(REQUEST_TIMEOUT, || what.to_owned(), async {
        let mut resp = send.await.map_err(|e| format!("{what} failed: {e}"))?;
        if let Some(e) = refused_redirect(&resp, what) {
            return Err(e);
        }
        if let (Some(k), Some(n)) = (
            dpop,
            resp.headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok()),
        ) {
            k.note_nonce(endpoint, n);
        }
        let body = resp
            .body()
            .limit(BODY_LIMIT)
            .await
            .map_err(|e| format!("reading the reply of {what} failed: {e}"))?;
        Ok((resp.status(), body))
    })
    .await
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
    harness9_net::truncate_chars(&said, 300)
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    /// `Bearer` or `DPoP` (RFC 9449 §5).
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    /// A number as RFC 6749 says, or a numeric string as some servers send.
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
    #[serde(default)]
    scope: Option<String>,
    /// An OpenID Connect login's ID token.
    #[serde(default)]
    id_token: Option<String>,
    /// What a token exchange (RFC 8693) issued.
    #[serde(default)]
    issued_token_type: Option<String>,
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

/// One token request, for any grant (`authorization_code`, `refresh_token`,
/// `client_credentials`, the JWT bearer grant): the one place a token request is built and
/// sent. The client authenticates as its `auth_method` says (`client_secret_basic`,
/// `client_secret_post`, `private_key_jwt` with `key`, else `client_id` alone); the grant's
/// tokens are replaced on success (an ID token too, if the reply has one); the reply's
/// `issued_token_type` (a token exchange's) is returned.
pub(super) async fn token_request(
    client: &awc::Client,
    grant: &mut Grant,
    params: &[(&str, &str)],
    key: Option<&SigningKey>,
) -> Result<Option<String>, String> {
    let (form, basic) = token_form(grant, params, key)?;
    let body = send_token_request(client, grant, form, basic).await?;
    keep_tokens(grant, &body)
}

/// The form of a token request with the client's authentication (RFC 6749 §2.3, RFC 7523):
/// the body, and the `Authorization: Basic` value for `client_secret_basic`.
fn token_form(
    grant: &Grant,
    params: &[(&str, &str)],
    key: Option<&SigningKey>,
) -> Result<(String, Option<String>), String> {
    let c = &grant.client;
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        form.append_pair(k, v);
    }
    // An SSO login at the enterprise IdP is for no resource.
    if !grant.resource.is_empty() {
        form.append_pair("resource", &grant.resource);
    }
    let mut basic = None;
    match (c.auth_method.as_str(), &c.client_secret) {
        ("client_secret_basic", Some(secret)) => {
            let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", enc(&c.client_id), enc(secret));
            use base64::Engine as _;
            let b = base64::engine::general_purpose::STANDARD.encode(pair);
            basic = Some(format!("Basic {b}"));
            // Also in the body: RFC 6749 allows it, and some servers (the Python SDK's among
            // them) look the client up by the body's `client_id` before reading the header.
            form.append_pair("client_id", &c.client_id);
        }
        ("client_secret_post", Some(secret)) => {
            form.append_pair("client_id", &c.client_id);
            form.append_pair("client_secret", secret);
        }
        ("private_key_jwt", _) => {
            let key = key.ok_or_else(|| {
                format!("the client {} authenticates with private_key_jwt but no key is configured (oauth.privateKeyFile or oauth.privateKeyEnv)", c.client_id)
            })?;
            let assertion = jwt::client_assertion(key, &c.client_id, &grant.issuer, now_secs())?;
            harness9_telemetry::redact_also(std::iter::once(assertion.as_str()));
            form.append_pair("client_id", &c.client_id);
            form.append_pair(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            );
            form.append_pair("client_assertion", &assertion);
        }
        _ => {
            form.append_pair("client_id", &c.client_id);
        }
    }
    Ok((form.finish(), basic))
}

/// Posts a token request's `form` to the grant's token endpoint (a DPoP proof on each try,
/// one retry with the server's nonce, RFC 9449 §8, never more): the body of a success.
async fn send_token_request(
    client: &awc::Client,
    grant: &Grant,
    form: String,
    basic: Option<String>,
) -> Result<bytes::Bytes, String> {
    let endpoint = &grant.token_endpoint;
    let what = format!("the token request to {endpoint}");
    let dpop = grant.dpop.as_ref();
    let mut nonce_retried = false;
    loop {
        let mut req = client
            .post(endpoint)
            .insert_header(("Accept", "application/json"))
            .content_type("application/x-www-form-urlencoded");
        if let Some(b) = &basic {
            req = req.insert_header(("Authorization", b.clone()));
        }
        if let Some(k) = dpop {
            req = req.insert_header(("DPoP", k.proof("POST", endpoint, None)?));
        }
        let (status, body) =
            token_exchange(&what, req.send_body(form.clone()), dpop, endpoint).await?;
        if status.is_success() {
            return Ok(body);
        }
        if dpop.is_some() && dpop::as_wants_nonce(status.as_u16(), &body) {
            if !nonce_retried && dpop.is_some_and(|k| k.nonce_for(endpoint).is_some()) {
                nonce_retried = true;
                continue;
            }
            return Err(format!(
                "{what} asked for a DPoP nonce {}: giving up",
                if nonce_retried {
                    "again after one retry with the nonce it gave"
                } else {
                    "without giving a usable one (DPoP-Nonce)"
                }
            ));
        }
        return Err(format!("{what} got HTTP {status}: {}", oauth_error(&body)));
    }
}

/// A token endpoint's success `body` checked and kept in `grant` (its tokens, expiry and
/// granted scopes; a bearer token where a DPoP-bound one was asked for drops the key): the
/// reply's `issued_token_type`.
fn keep_tokens(grant: &mut Grant, body: &[u8]) -> Result<Option<String>, String> {
    let endpoint = &grant.token_endpoint;
    let t: TokenResponse = serde_json::from_slice(body)
        .map_err(|_| format!("the token reply of {endpoint} is not valid"))?;
    let problem = parse::access_token_problem(&t.access_token)
        .or_else(|| {
            t.refresh_token
                .as_deref()
                .and_then(parse::refresh_token_problem)
        })
        .or_else(|| {
            t.id_token
                .as_deref()
                .and_then(parse::access_token_problem)
                .map(|p| p.replace("access token", "ID token"))
        });
    if let Some(p) = problem {
        return Err(format!(
            "the token endpoint {endpoint} issued {p}: not kept, a new login is needed"
        ));
    }
    if grant.dpop.is_some() && !dpop::bound(t.token_type.as_deref()) {
        // A bearer token after all (RFC 9449 §5): it is sent as one, without proofs.
        tracing::info!(target: "mcp", endpoint = %endpoint, "the token endpoint issued a bearer token, not a DPoP-bound one");
        grant.dpop = None;
    }
    grant.access_token = t.access_token;
    if t.refresh_token.is_some() {
        grant.refresh_token = t.refresh_token;
    }
    if t.id_token.is_some() {
        grant.id_token = t.id_token;
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
    Ok(t.issued_token_type)
}

/// The authorization code exchange of a login (PKCE's `verifier`, the `redirect_uri` the code
/// was sent to): `grant`'s tokens (and ID token) replaced.
pub(super) async fn code_exchange(
    client: &awc::Client,
    grant: &mut Grant,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<(), String> {
    token_request(
        client,
        grant,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ],
        None,
    )
    .await
    .map(|_| ())
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
        None,
    )
    .await?;
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn error_bodies_are_short() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_grant","error_description":"expired"}"#),
            "invalid_grant: expired"
        );
        assert_eq!(oauth_error(b"nope"), "nope");
    }
}
