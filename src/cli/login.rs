//! `harness9 mcp login|logout <server>`: the OAuth flow driver the runtime uses, started by
//! the user (the redirect by the loopback listener or pasted on stdin), and forgetting a
//! server's grants.

use std::process::ExitCode;

use anyhow::bail;
use harness9_actors::oauth;
use harness9_actors::spec::Hold;
use harness9_actors::{ServerSpec, TransportSpec};

use super::interrupted;
use super::mcp::unknown_server;
use crate::app::config::Config;
use crate::sanitize::clean_line;

/// `mcp login <server>` (the flow driver the runtime uses, started by the user) and
/// `mcp logout <server>` (forgets the server's grants).
pub(super) async fn oauth_command(
    config: &Config,
    name: &str,
    login: bool,
) -> anyhow::Result<ExitCode> {
    let Some(spec) = config.servers.iter().find(|s| s.name == name) else {
        return Err(unknown_server(config, name).into());
    };
    let (TransportSpec::Http { url, .. }, Some(oauth)) = (&spec.transport, &spec.oauth) else {
        bail!("server \"{name}\" is not an HTTP server: OAuth is for HTTP servers only");
    };
    if !login {
        return logout(name, url, oauth);
    }
    // An unapproved project server is not contacted at all (no probe, no registration, no
    // browser): its address is the repository's word until the user approves it.
    match &spec.hold {
        Some(Hold::Unapproved) => bail!(
            "server \"{name}\" of {} is not approved, so harness9 does not contact it; approve it with `harness9 mcp approve {}` (or run with --approve-project), then log in",
            config.path.display(),
            harness9_actors::spec::shell_quote(name)
        ),
        Some(Hold::Invalid(why)) => bail!("server \"{name}\" is not usable: {why}"),
        Some(other) => bail!("server \"{name}\" is held back ({other:?}); it is not contacted"),
        None => {}
    }
    if oauth.config.grant == oauth::GrantKind::Enterprise {
        return sso_login(name, oauth).await;
    }
    if oauth.config.grant.unattended() {
        // No browser can help a grant without a user: its tokens come from its credentials.
        bail!(
            "server \"{name}\" uses the {} grant: harness9 gets its tokens by itself, with no login; if it is refused, check its oauth entry in {}",
            oauth.config.grant.name(),
            config.path.display()
        );
    }
    browser_login(spec, url, oauth).await
}

/// `mcp logout <server>`: forgets the server's grants, or the SSO login of the enterprise
/// grant, which serves every server of that grant.
fn logout(name: &str, url: &str, oauth: &oauth::OAuthSpec) -> anyhow::Result<ExitCode> {
    if let Some(idp) = &oauth.config.idp {
        // The SSO login serves every server of the enterprise grant: logging out ends it.
        let had = oauth
            .store
            .forget(&idp.store_key())
            .map_err(anyhow::Error::msg)?;
        say!(
            "{}",
            if had {
                format!(
                    "Logged out of the enterprise identity provider {}: every server of the enterprise grant needs `harness9 mcp login` again.",
                    clean_line(&idp.issuer)
                )
            } else {
                format!(
                    "No SSO login at the enterprise identity provider {} was stored.",
                    clean_line(&idp.issuer)
                )
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let had = oauth.store.forget(url).map_err(anyhow::Error::msg)?;
    say!(
        "{}",
        if had {
            format!("Logged out of server \"{name}\": its tokens and registration are forgotten.")
        } else {
            format!("Server \"{name}\" had no stored login.")
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `mcp login <server>` with a user: the server probed for its challenge, then the flow in
/// the browser (its redirect by the loopback listener, or pasted on stdin).
async fn browser_login(
    spec: &ServerSpec,
    url: &str,
    oauth: &oauth::OAuthSpec,
) -> anyhow::Result<ExitCode> {
    let name = spec.name.as_str();
    let challenge = match oauth::flow::probe_outcome(url, spec.protocol).await {
        oauth::flow::Probed::Challenge(c) => Some(c),
        // Every request answered without a login, and no OAuth metadata to log in with: the
        // flow would only end at a registration page that is not there.
        oauth::flow::Probed::Accepted if !publishes_oauth_metadata(url).await => {
            say!(
                "server \"{name}\" does not ask for a login: it answered without one (no 401) and publishes no OAuth metadata (no {}); nothing to do",
                clean_line(
                    &oauth::parse::prm_urls(url, None)
                        .first()
                        .cloned()
                        .unwrap_or_default()
                )
            );
            return Ok(ExitCode::SUCCESS);
        }
        oauth::flow::Probed::Accepted | oauth::flow::Probed::Other => None,
    };
    let show = |auth_url: &str| {
        eprintln!(
            "Opening the browser to log in to server \"{name}\" (asking for scopes: {}). If it does not open, visit:\n  {}\n\
             If the browser is on another machine, paste here the address it ends on (the page that fails to load).",
            asked_scopes(auth_url),
            clean_line(auth_url)
        );
    };
    let mut pasted = pasted_lines();
    let held = oauth.login_scopes(url);
    let flow = oauth::flow::login_with_paste(
        url,
        oauth,
        challenge.as_ref(),
        &held,
        &show,
        Some(&mut pasted),
    );
    let grant = tokio::select! {
        g = flow => g.map_err(|e| anyhow::anyhow!("login to server \"{name}\" failed: {e}"))?,
        _ = interrupted() => {
            eprintln!("[mcp] login interrupted");
            return Ok(ExitCode::from(130));
        }
    };
    say!(
        "Logged in to server \"{name}\" at {}; scopes granted: {}{}{}",
        clean_line(&grant.issuer),
        if grant.scopes.is_empty() {
            "(none)".to_owned()
        } else {
            clean_line(&grant.scopes.join(" ")).into_owned()
        },
        if grant.refresh_token.is_some() {
            " (refreshable)"
        } else {
            ""
        },
        if grant.dpop.is_some() {
            " (DPoP-bound)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `mcp login` of a server of the enterprise grant: the SSO login at the enterprise IdP of
/// the user's settings, which serves every server of that grant.
async fn sso_login(name: &str, spec: &oauth::OAuthSpec) -> anyhow::Result<ExitCode> {
    let issuer = spec
        .config
        .idp
        .as_ref()
        .map(|i| clean_line(&i.issuer).into_owned())
        .unwrap_or_default();
    let show = |auth_url: &str| {
        eprintln!(
            "Opening the browser to log in at your enterprise identity provider {issuer} (for server \"{name}\" and every server of the enterprise grant; asking for scopes: {}). If it does not open, visit:\n  {}\n\
             If the browser is on another machine, paste here the address it ends on (the page that fails to load).",
            asked_scopes(auth_url),
            clean_line(auth_url)
        );
    };
    let mut pasted = pasted_lines();
    let flow = oauth::flow::sso_login(spec, &show, Some(&mut pasted));
    let grant = tokio::select! {
        g = flow => g.map_err(|e| anyhow::anyhow!("the SSO login for server \"{name}\" failed: {e}"))?,
        _ = interrupted() => {
            eprintln!("[mcp] login interrupted");
            return Ok(ExitCode::from(130));
        }
    };
    say!(
        "Logged in at the enterprise identity provider {}{}; server \"{name}\" and every server of the enterprise grant get their tokens from it.",
        clean_line(&grant.issuer),
        if grant.refresh_token.is_some() {
            " (refreshable)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Whether the server at `url` publishes OAuth metadata: protected resource metadata at one
/// of its well-known URLs, or (2025-03-26) authorization server metadata at its origin. Each
/// GET is bounded; one that fails counts as none.
async fn publishes_oauth_metadata(url: &str) -> bool {
    let Some((origin, _)) = oauth::parse::split_url(url) else {
        return false;
    };
    let mut urls = oauth::parse::prm_urls(url, None);
    urls.push(format!("{origin}/.well-known/oauth-authorization-server"));
    let client = oauth::flow::http_client();
    for u in urls {
        let got = tokio::time::timeout(
            oauth::flow::REQUEST_TIMEOUT,
            client
                .get(u.as_str())
                .insert_header(("Accept", "application/json"))
                .send(),
        )
        .await;
        let Ok(Ok(mut resp)) = got else { continue };
        if !resp.status().is_success() {
            continue;
        }
        let body =
            tokio::time::timeout(oauth::flow::REQUEST_TIMEOUT, resp.body().limit(256 * 1024)).await;
        let is_object = body
            .ok()
            .and_then(Result::ok)
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v.is_object());
        if is_object {
            return true;
        }
    }
    false
}

/// The `scope` an authorization URL asks for, for the user to see before consenting.
fn asked_scopes(auth_url: &str) -> String {
    let query = auth_url.split_once('?').map_or("", |(_, q)| q);
    let scope = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if scope.is_empty() {
        "(none)".to_owned()
    } else {
        clean_line(&scope).into_owned()
    }
}

/// Lines of stdin (each cut at 16 KiB) on a channel, read on a thread of their own that is
/// never joined: a login ends whether or not anybody typed.
pub(super) fn pasted_lines() -> tokio::sync::mpsc::Receiver<String> {
    use std::io::{BufRead as _, Read as _};
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        loop {
            let mut line = String::new();
            match stdin.lock().take(16 * 1024).read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.blocking_send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}
