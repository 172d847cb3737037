//! `harness9 mcp login|logout <server>`: the OAuth flow driver the runtime uses, started by
//! the user (the redirect by the loopback listener or pasted on stdin), and forgetting a
//! server's grants.

use std::process::ExitCode;

use anyhow::bail;
use harness9_actors::oauth;
use harness9_actors::spec::Hold;
use harness9_actors::TransportSpec;

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
        let had = oauth.store.forget(url).map_err(anyhow::Error::msg)?;
        say!(
            "{}",
            if had {
                format!(
                    "Logged out of server \"{name}\": its tokens and registration are forgotten."
                )
            } else {
                format!("Server \"{name}\" had no stored login.")
            }
        );
        return Ok(ExitCode::SUCCESS);
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
    let challenge = oauth::flow::probe(url, spec.protocol).await;
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
        "Logged in to server \"{name}\" at {}; scopes granted: {}{}",
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
        }
    );
    Ok(ExitCode::SUCCESS)
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
