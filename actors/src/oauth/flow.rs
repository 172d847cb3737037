//! The OAuth exchanges over HTTP and the login flow driver: discovery, registration, the
//! authorization code flow with a loopback redirect, token exchange and refresh. Every request
//! is bounded in time ([`REQUEST_TIMEOUT`]) and size ([`BODY_LIMIT`]). Errors name URLs and the
//! server's `error`/`error_description`, never a token, code or verifier.

use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::parse::{self, Callback, Challenge};
use super::{now_secs, Client, Grant, OAuthSpec};
use crate::net::{install_crypto, snippet};

/// How long one OAuth request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest metadata or token response read.
pub const BODY_LIMIT: usize = 256 * 1024;

/// An HTTP client for OAuth requests (built in the task that uses it: it is `!Send`).
pub fn http_client() -> awc::Client {
    install_crypto();
    awc::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .max_redirects(3)
        .finish()
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

/// GETs a JSON document: `Ok(None)` for a 4xx (try the next URL).
async fn get_json<T: serde::de::DeserializeOwned>(
    client: &awc::Client,
    url: &str,
) -> Result<Option<T>, String> {
    let mut resp = client
        .get(url)
        .insert_header(("Accept", "application/json"))
        .send()
        .await
        .map_err(|e| format!("cannot fetch {url}: {e}"))?;
    if resp.status().is_client_error() {
        return Ok(None);
    }
    if !resp.status().is_success() {
        return Err(format!("{url} answered HTTP {}", resp.status()));
    }
    let body = resp
        .body()
        .limit(BODY_LIMIT)
        .await
        .map_err(|e| format!("reading {url} failed: {e}"))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| format!("{url} is not valid metadata: {e}"))
}

/// Finds the protected resource metadata and its authorization server's metadata. Refuses a
/// `resource` that does not cover `server_url`, metadata whose `issuer` is not the one it was
/// fetched for, and a server without PKCE S256. Without protected resource metadata, the
/// 2025-03-26 discovery ([`legacy_discovery`]).
pub async fn discover(
    client: &awc::Client,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovery, String> {
    let mut prm: Option<ResourceMetadata> = None;
    let from_challenge = challenge.and_then(|c| c.resource_metadata.as_deref());
    for url in parse::prm_urls(server_url, from_challenge) {
        if let Some(m) = get_json::<ResourceMetadata>(client, &url).await? {
            prm = Some(m);
            break;
        }
    }
    let Some(prm) = prm else {
        return legacy_discovery(client, server_url).await;
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
    let mut found = None;
    for url in parse::as_metadata_urls(&issuer) {
        if let Some(m) = get_json::<ServerMetadata>(client, &url).await? {
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
    Ok(Discovery {
        resource: prm,
        server,
    })
}

/// Discovery for a server without protected resource metadata, as the 2025-03-26 revision
/// had it: the MCP server's origin is its own authorization server, with RFC 8414 metadata at
/// the root well-known URL, else the default endpoints `/authorize`, `/token` and `/register`.
async fn legacy_discovery(client: &awc::Client, server_url: &str) -> Result<Discovery, String> {
    let (origin, _) = parse::split_url(server_url)
        .ok_or_else(|| format!("{server_url} is not an http(s) URL"))?;
    let meta_url = format!("{origin}/.well-known/oauth-authorization-server");
    let server = match get_json::<ServerMetadata>(client, &meta_url).await? {
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
    let mut resp = client
        .post(endpoint)
        .insert_header(("Accept", "application/json"))
        .send_json(&body)
        .await
        .map_err(|e| format!("client registration at {endpoint} failed: {e}"))?;
    let text = success_body(&mut resp, &format!("client registration at {endpoint}")).await?;
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

/// An OAuth error body as `error: error_description`, else a short snippet; never more.
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

fn oauth_error(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct E {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    match serde_json::from_slice::<E>(body) {
        Ok(E {
            error,
            error_description: Some(d),
        }) => format!("{error}: {d}"),
        Ok(E { error, .. }) => error,
        Err(_) => snippet(&body[..body.len().min(200)]),
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
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
    let mut resp = req
        .send_body(form.finish())
        .await
        .map_err(|e| format!("the token request to {endpoint} failed: {e}"))?;
    let body = success_body(&mut resp, &format!("the token request to {endpoint}")).await?;
    let t: TokenResponse = serde_json::from_slice(&body)
        .map_err(|_| format!("the token reply of {endpoint} is not valid"))?;
    grant.access_token = t.access_token;
    if t.refresh_token.is_some() {
        grant.refresh_token = t.refresh_token;
    }
    let now = now_secs();
    grant.issued_at = Some(now);
    grant.expires_at = t.expires_in.map(|s| now.saturating_add(s));
    if let Some(s) = t.scope {
        grant.scopes = s.split_whitespace().map(str::to_owned).collect();
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

/// The server's `Bearer` challenge, if an unauthenticated `initialize` gets one (`None` when
/// it is accepted, or on any other answer: discovery then starts from the well-known URLs).
pub async fn probe(server_url: &str) -> Option<Challenge> {
    let client = http_client();
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "harness9", "version": env!("CARGO_PKG_VERSION")}}
    });
    let resp = client
        .post(server_url)
        .insert_header(("Accept", "application/json, text/event-stream"))
        .send_json(&body)
        .await
        .ok()?;
    if resp.status() != awc::http::StatusCode::UNAUTHORIZED
        && resp.status() != awc::http::StatusCode::FORBIDDEN
    {
        return None;
    }
    resp.headers()
        .get_all("www-authenticate")
        .filter_map(|v| v.to_str().ok())
        .find_map(Challenge::parse)
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
    let client = http_client();
    let d = discover(&client, server_url, challenge).await?;
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
    if let Err(e) = crate::opener::open_url(&url, spec.browser.as_deref(), true) {
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

    #[test]
    fn error_bodies_are_short() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_grant","error_description":"expired"}"#),
            "invalid_grant: expired"
        );
        assert_eq!(oauth_error(b"nope"), "nope");
    }
}
