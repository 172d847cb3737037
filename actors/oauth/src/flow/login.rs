//! The login flow driver: discovery, the client, the browser, the loopback (or pasted)
//! redirect and the code exchange.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::discovery::{discover, Discovery, ServerMetadata};
use super::exchange::{code_exchange, register, secret_method};
use super::guard::{guarded_client, Guard};
use super::{bounded, DISCOVERY_TIMEOUT};
use crate::parse::{self, Callback, Challenge};
use crate::{Client, Grant, OAuthSpec};

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
    let dpop = dpop_key(spec, server_url, &d)?;
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
    let (listener, redirect_uri) = listen(port, cfg.callback_port.is_none()).await?;
    let scopes = parse::choose_scopes(
        &cfg.scopes,
        challenge.and_then(|c| c.scope.as_deref()),
        d.resource.scopes_supported.as_deref(),
        held,
        d.server.scopes_supported.as_deref(),
    );
    let oauth_client = match known_client(spec, &d, stored, &redirect_uri) {
        Some(c) => c,
        None => register(&client, &d, &redirect_uri, &scopes).await?,
    };
    let (code, verifier) = browser_code(
        &BrowserLogin {
            server: &d.server,
            client_id: &oauth_client.client_id,
            listener: &listener,
            redirect_uri: &redirect_uri,
            resource: &d.resource.resource,
            scopes: &scopes,
            nonce: None,
            timeout: spec.login_timeout,
        },
        show,
        pasted,
    )
    .await?;
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
        dpop,
        id_token: None,
    };
    code_exchange(&client, &mut grant, &code, &redirect_uri, &verifier).await?;
    spec.store.save(server_url, &grant)?;
    Ok(grant)
}

/// The DPoP key of a login when DPoP is in use for this server: the key of the grant this
/// replaces, if it had one (a key per server, kept with its grant), else a new one.
fn dpop_key(
    spec: &OAuthSpec,
    server_url: &str,
    d: &Discovery,
) -> Result<Option<crate::dpop::Dpop>, String> {
    if !crate::dpop::wanted(
        spec.config.dpop,
        d.server.dpop_signing_alg_values_supported.as_deref(),
        &d.server.issuer,
    )? {
        return Ok(None);
    }
    match spec.store.load(server_url).and_then(|g| g.dpop) {
        Some(k) => Ok(Some(k)),
        None => crate::dpop::Dpop::generate().map(Some),
    }
}

/// The client a login uses without registering one: the configured `clientId` (with its
/// secret's method), else the client registered before for this redirect, else the client
/// metadata document's URL where the server takes one; `None`: register a client.
fn known_client(
    spec: &OAuthSpec,
    d: &Discovery,
    stored: Option<Client>,
    redirect_uri: &str,
) -> Option<Client> {
    let cfg = &spec.config;
    if let Some(id) = &cfg.client_id {
        let method = match &cfg.client_secret {
            Some(_) => secret_method(&d.server),
            None => "none",
        };
        return Some(Client {
            client_id: id.clone(),
            client_secret: cfg.client_secret.clone(),
            auth_method: method.to_owned(),
            redirect_uri: None,
        });
    }
    if let Some(c) = stored.filter(|c| c.redirect_uri.as_deref().is_none_or(|r| r == redirect_uri))
    {
        return Some(c);
    }
    match (
        d.server.client_id_metadata_document_supported,
        &cfg.client_metadata_url,
    ) {
        (true, Some(url)) => Some(Client {
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".to_owned(),
            redirect_uri: None,
        }),
        _ => None,
    }
}

/// A loopback listener for the redirect, on `port` (0: one the OS picks; a taken port falls
/// back to one the OS picks when `may_move`), and its redirect URI.
pub(super) async fn listen(
    port: u16,
    may_move: bool,
) -> Result<(tokio::net::TcpListener, String), String> {
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(_) if may_move && port != 0 => tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("cannot listen for the redirect: {e}"))?,
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
    Ok((listener, redirect_uri))
}

/// What the browser part of a login needs: the authorization server, the client, the redirect
/// listener and its URI, the resource (empty: none, an SSO login), the scopes, an OpenID
/// `nonce` (an SSO login's), how long to wait for the redirect.
pub(super) struct BrowserLogin<'a> {
    pub(super) server: &'a ServerMetadata,
    pub(super) client_id: &'a str,
    pub(super) listener: &'a tokio::net::TcpListener,
    pub(super) redirect_uri: &'a str,
    pub(super) resource: &'a str,
    pub(super) scopes: &'a [String],
    pub(super) nonce: Option<&'a str>,
    pub(super) timeout: Duration,
}

/// The browser part of a login (`b`): PKCE and `state` (and the `nonce`), the authorization
/// URL (shown by `show`, opened in the browser), the redirect on the listener (or pasted), its
/// `state` and `iss` checked. The code and the PKCE verifier.
pub(super) async fn browser_code(
    b: &BrowserLogin<'_>,
    show: &dyn Fn(&str),
    pasted: Option<&mut tokio::sync::mpsc::Receiver<String>>,
) -> Result<(String, String), String> {
    let BrowserLogin {
        server,
        client_id,
        listener,
        redirect_uri,
        resource,
        scopes,
        nonce,
        timeout,
    } = *b;
    let verifier = parse::b64url(&harness9_net::random(32)?);
    let state = parse::b64url(&harness9_net::random(16)?);
    let url = parse::authorization_url(&parse::AuthRequest {
        endpoint: &server.authorization_endpoint,
        client_id,
        redirect_uri,
        code_challenge: &parse::code_challenge(&verifier),
        state: &state,
        resource,
        scopes,
        nonce,
    });
    // Only an address the opener accepts is shown and opened (the same string): never an
    // option-like, `file:`, `javascript:` or custom-scheme endpoint, nor one with hidden
    // characters.
    let url = String::from(
        harness9_net::opener::check_url(&url)
            .map_err(|e| format!("refusing the authorization server's login address: {e}"))?,
    );
    show(&url);
    if let Err(e) = harness9_net::opener::open_url(&url, None, true) {
        tracing::warn!(target: "mcp", "cannot start the browser: {e}; open the login URL by hand");
    }
    let from_paste = async {
        let Some(rx) = pasted else {
            return std::future::pending().await;
        };
        while let Some(line) = rx.recv().await {
            match parse::pasted_redirect(&line, redirect_uri) {
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
            r = wait_redirect(listener) => r,
            r = from_paste => r,
        }
    };
    let cb = tokio::time::timeout(timeout, either).await.map_err(|_| {
        format!(
            "no redirect from the browser within {} s",
            timeout.as_secs()
        )
    })??;
    let code = cb
        .check(
            &state,
            &server.issuer,
            server.authorization_response_iss_parameter_supported,
        )?
        .to_owned();
    Ok((code, verifier))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_of_redirects() {
        assert_eq!(redirect_port("http://127.0.0.1:4242/callback"), Some(4242));
        assert_eq!(redirect_port("http://localhost/callback"), None);
    }
}
