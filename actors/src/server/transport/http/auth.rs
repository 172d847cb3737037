//! OAuth in the HTTP task: requests to the server's origin carry the grant's bearer token; a
//! `401` refreshes it once (if there is a refresh token); a `401` that no refresh answers, and
//! a `403` with `insufficient_scope` (a step-up: the scopes the latest challenge asks for are
//! kept in the grant's `wanted_scopes`, replacing an earlier challenge's, so the next login
//! asks for the granted scopes plus those), fail with a message that names
//! `harness9 mcp login <server>`: the runtime never starts a login by itself (the user does,
//! with that command or from the TUI's panel). One refresh at a time per connection:
//! concurrent `401`s wait for it and retry with its token. Before a refresh, and
//! after one fails, the store is read again: another process sharing it may have refreshed
//! (rotating the refresh token this connection holds), and its grant is taken over. The token never leaves
//! this module except in the `Authorization` header of requests to the server's origin.
//! A `403 insufficient_scope` before the server is connected ends the connection with
//! `needs login` (`mcp_server/link.rs`), never a fallback to the other era.

use std::cell::RefCell;
use std::rc::Rc;

use awc::http::StatusCode;
use tokio::sync::Mutex;

use super::{Conn, Failure};
use crate::oauth::parse::{self, Challenge};
use crate::oauth::{flow, Grant, OAuthSpec};

/// Authorization rounds (refresh or login) one request may go through before it fails.
const MAX_ROUNDS_PER_REQUEST: usize = 2;
/// Refresh a token this many seconds before it expires.
const EXPIRY_MARGIN_SECS: u64 = 30;

/// Why a request needs authorization.
pub(crate) struct AuthNeeded {
    status: StatusCode,
    challenge: Challenge,
    /// A `401` `use_dpop_nonce` to a DPoP-bound token (RFC 9449 §9): its nonce is noted, the
    /// request is sent once more with it.
    pub(super) nonce: bool,
}

/// The grant of one connection and the lock of its flow.
pub(crate) struct Auth {
    spec: OAuthSpec,
    grant: RefCell<Option<Grant>>,
    flow: Mutex<()>,
    /// Why the last refresh before expiry failed, for the `needs login` that may follow.
    refresh_error: RefCell<Option<String>>,
}

impl Auth {
    pub(crate) fn new(spec: OAuthSpec, url: &str) -> Self {
        // A stored token that cannot go in a header is no token: the server needs a login.
        // An unattended grant keeps its tokens in memory only: it gets them from its
        // credentials when the server first asks.
        let grant = if spec.config.grant.unattended() {
            None
        } else {
            spec.store.load(url).filter(usable)
        };
        if let Some(g) = &grant {
            remember(g);
        }
        Self {
            spec,
            grant: RefCell::new(grant),
            flow: Mutex::new(()),
            refresh_error: RefCell::new(None),
        }
    }

    /// The access token in use.
    pub(super) fn token(&self) -> Option<String> {
        self.grant.borrow().as_ref().map(|g| g.access_token.clone())
    }

    /// The headers that authorize a `method` request to `url` (on the server's origin: the
    /// caller checks) for `server`: `Authorization: Bearer`, or for a DPoP-bound token
    /// `Authorization: DPoP` and a fresh proof for this method and URL (RFC 9449 §7.1).
    pub(super) fn headers(
        &self,
        server: &str,
        method: &str,
        url: &str,
    ) -> Vec<(&'static str, String)> {
        let grant = self.grant.borrow();
        let Some(g) = grant.as_ref().filter(|g| !g.access_token.is_empty()) else {
            return Vec::new();
        };
        let t = &g.access_token;
        let Some(key) = &g.dpop else {
            return vec![("Authorization", format!("Bearer {t}"))];
        };
        match key.proof(method, url, Some(t)) {
            Ok(proof) => vec![("Authorization", format!("DPoP {t}")), ("DPoP", proof)],
            Err(e) => {
                tracing::warn!(target: "mcp", server = %server, "no DPoP proof: {e}");
                vec![("Authorization", format!("DPoP {t}"))]
            }
        }
    }

    /// Notes the `DPoP-Nonce` of a response from `url` (on the server's origin), when the
    /// grant is DPoP-bound.
    pub(super) fn note_nonce(&self, url: &str, headers: &awc::http::header::HeaderMap) {
        let Some(n) = headers.get("dpop-nonce").and_then(|v| v.to_str().ok()) else {
            return;
        };
        if let Some(key) = self.grant.borrow().as_ref().and_then(|g| g.dpop.as_ref()) {
            key.note_nonce(url, n);
        }
    }

    /// Whether the grant's tokens are DPoP-bound.
    fn dpop(&self) -> bool {
        self.grant
            .borrow()
            .as_ref()
            .is_some_and(|g| g.dpop.is_some())
    }

    /// The store's grant when another process (a second harness9 sharing the store) saved a
    /// newer one than this connection holds: taken over, so a refresh token it rotated is not
    /// tried again here (which would fail, and ask for a login nobody needs).
    fn newer_in_store(&self, url: &str) -> bool {
        let Some(stored) = self.spec.store.load(url).filter(usable) else {
            return false;
        };
        let held = self.grant.borrow();
        let newer = held.as_ref().is_none_or(|g| {
            g.access_token != stored.access_token || g.refresh_token != stored.refresh_token
        }) && !stored.access_token.is_empty()
            && !stored.expiring(0);
        drop(held);
        if newer {
            remember(&stored);
            *self.grant.borrow_mut() = Some(stored);
        }
        newer
    }

    fn set(&self, url: &str, grant: Grant) {
        remember(&grant);
        if self.spec.config.grant.unattended() {
            *self.grant.borrow_mut() = Some(grant);
            return;
        }
        if let Err(e) = self.spec.store.save(url, &grant) {
            tracing::warn!(target: "mcp", "cannot save the OAuth grant: {e}");
        }
        *self.grant.borrow_mut() = Some(grant);
    }
}

/// A grant's tokens join the session's secrets: a server that quotes one in an error is
/// cleaned out of spans, the trace file and the logs.
fn remember(g: &Grant) {
    crate::telemetry::redact_also(
        std::iter::once(g.access_token.as_str()).chain(g.refresh_token.as_deref()),
    );
}

/// Whether a grant's tokens can be sent ([`parse::access_token_problem`]).
fn usable(g: &Grant) -> bool {
    g.access_token.is_empty() || parse::access_token_problem(&g.access_token).is_none()
}

/// Keeps the valid scopes of a step-up `challenge` that `g` lacks as its wanted scopes, in
/// place of any earlier challenge's: a step-up asks for what was granted plus what the latest
/// challenge names, never the union of every challenge a server ever sent (which would let a
/// server slip a scope into a later consent by asking for it once). `Err` with the reason,
/// and nothing wanted, when the grant's scopes and the challenge's would pass
/// [`parse::MAX_SCOPES`].
fn want_scopes(g: &mut Grant, challenge: &str) -> Result<(), String> {
    let new: Vec<String> = parse::scope_tokens(challenge)
        .into_iter()
        .filter(|s| !g.scopes.contains(s))
        .collect();
    if g.scopes.len() + new.len() > parse::MAX_SCOPES {
        g.wanted_scopes.clear();
        return Err(format!(
            "the server asks for more than {} scopes in all; not kept",
            parse::MAX_SCOPES
        ));
    }
    g.wanted_scopes = new;
    Ok(())
}

impl Conn {
    /// A `401`, or a `403` with `insufficient_scope`, when the server has an OAuth spec.
    pub(super) fn auth_needed(&self, resp: &awc::ClientResponse<impl Sized>) -> Option<AuthNeeded> {
        self.auth.as_ref()?;
        let status = resp.status();
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
            return None;
        }
        let challenges = || {
            resp.headers()
                .get_all("www-authenticate")
                .filter_map(|v| v.to_str().ok())
        };
        let challenge = challenges().find_map(Challenge::parse).unwrap_or_default();
        if status == StatusCode::FORBIDDEN && !challenge.insufficient_scope() {
            return None;
        }
        let nonce = self.auth.as_ref().is_some_and(Auth::dpop)
            && crate::oauth::dpop::rs_wants_nonce(status.as_u16(), challenges());
        Some(AuthNeeded {
            status,
            challenge,
            nonce,
        })
    }

    /// The error of a request that needs a login nobody will do here.
    pub(super) fn needs_login(&self, needed: &AuthNeeded) -> String {
        let name = &self.target.name;
        if let Some(grant) = self
            .auth
            .as_ref()
            .map(|a| a.spec.config.grant)
            .filter(|g| g.unattended())
        {
            return format!(
                "server \"{name}\" refused the token of its {} grant: check its oauth entry (client id, credentials, scopes)",
                grant.name()
            );
        }
        if needed.status == StatusCode::FORBIDDEN {
            let scope = parse::scope_tokens(needed.challenge.scope.as_deref().unwrap_or(""));
            format!(
                "server \"{name}\" needs more permissions (scope {:?}): run `harness9 mcp login {name}`",
                scope.join(" ")
            )
        } else {
            format!("server \"{name}\" needs a login: run `harness9 mcp login {name}`")
        }
    }

    /// `post`, with the token refreshed before it expires and the server's authorization
    /// requests answered (at most [`MAX_ROUNDS_PER_REQUEST`] rounds).
    pub(super) async fn post_authorized(
        self: Rc<Self>,
        line: Vec<u8>,
        id: Option<i64>,
        method: &str,
        extra: &[(String, String)],
    ) -> Result<(), Failure> {
        let mut rounds = 0;
        let mut nonce_retried = false;
        loop {
            let sent = match &self.auth {
                Some(a) => {
                    self.refresh_if_expiring(a).await;
                    a.token()
                }
                None => None,
            };
            let result = self
                .clone()
                .post(line.clone(), id, method, true, extra)
                .await;
            let Err(Failure {
                auth: Some(needed),
                error,
                ..
            }) = result
            else {
                return result;
            };
            // A token that is refused (401) takes the server down to `needs login`; a missing
            // scope (403) fails this request only: the server's other tools still work.
            let login_failure = |e: String| {
                let mut f = super::fail(e, false);
                f.needs_login = needed.status == StatusCode::UNAUTHORIZED;
                f.step_up = needed.status == StatusCode::FORBIDDEN;
                f
            };
            if needed.nonce {
                // The server's nonce was noted from this reply (`send_following`): one more
                // try with it, never more (a server cannot keep a request going round).
                if nonce_retried {
                    return Err(super::fail(
                        format!(
                            "server \"{}\" asked for a new DPoP nonce again after one retry with the nonce it gave",
                            self.target.name
                        ),
                        false,
                    ));
                }
                nonce_retried = true;
                continue;
            }
            if rounds >= MAX_ROUNDS_PER_REQUEST {
                return Err(login_failure(format!(
                    "{error} (still refused after {rounds} authorization attempts)"
                )));
            }
            rounds += 1;
            self.authorize(&needed, sent.as_deref())
                .await
                .map_err(login_failure)?;
        }
    }

    async fn refresh_if_expiring(&self, a: &Auth) {
        let unattended = a.spec.config.grant.unattended();
        let due = a.grant.borrow().as_ref().is_some_and(|g| {
            (unattended || g.refresh_token.is_some()) && g.expiring(EXPIRY_MARGIN_SECS)
        });
        if !due {
            return;
        }
        if unattended {
            let _one = a.flow.lock().await;
            let Some(g) = a.grant.borrow().clone() else {
                return;
            };
            if !g.expiring(EXPIRY_MARGIN_SECS) {
                return;
            }
            match flow::renew(&flow::http_client(), &a.spec, &g).await {
                Ok(fresh) => {
                    tracing::info!(target: "mcp", server = %self.target.name, grant = a.spec.config.grant.name(), "access token renewed before it expired");
                    a.refresh_error.borrow_mut().take();
                    a.set(&self.target.url, fresh);
                }
                Err(e) => {
                    tracing::info!(target: "mcp", server = %self.target.name, "token renewal failed: {e}");
                    *a.refresh_error.borrow_mut() = Some(e);
                }
            }
            return;
        }
        let _one = a.flow.lock().await;
        if a.newer_in_store(&self.target.url) {
            tracing::info!(target: "mcp", server = %self.target.name, "took the token another harness9 refreshed");
        }
        let Some(g) = a.grant.borrow().clone() else {
            return;
        };
        if !g.expiring(EXPIRY_MARGIN_SECS) {
            return;
        }
        match flow::refresh(&flow::http_client(), &g).await {
            Ok(fresh) => {
                tracing::info!(target: "mcp", server = %self.target.name, "access token refreshed before it expired");
                a.refresh_error.borrow_mut().take();
                a.set(&self.target.url, fresh);
            }
            Err(e) => {
                tracing::info!(target: "mcp", server = %self.target.name, "token refresh failed: {e}");
                *a.refresh_error.borrow_mut() = Some(e);
            }
        }
    }

    /// Gets a token the server should accept: another request's fresh one, or a refresh;
    /// else the error that names `harness9 mcp login`.
    async fn authorize(&self, needed: &AuthNeeded, sent: Option<&str>) -> Result<(), String> {
        let Some(a) = &self.auth else {
            return Err(self.needs_login(needed));
        };
        let _one = a.flow.lock().await;
        let step_up = needed.status == StatusCode::FORBIDDEN;
        let current = a.token();
        if !step_up && current.is_some() && current.as_deref() != sent {
            // Another request refreshed while this one waited.
            return Ok(());
        }
        if a.spec.config.grant.unattended() {
            return self.reacquire(a, needed).await;
        }
        if !step_up && a.newer_in_store(&self.target.url) {
            // Another process did (with the refresh token this one holds, if it rotates).
            tracing::info!(target: "mcp", server = %self.target.name, "took the token another harness9 saved");
            return Ok(());
        }
        let grant = a.grant.borrow().clone();
        let mut refresh_failed = None;
        if let Some(g) = grant
            .as_ref()
            .filter(|g| !step_up && g.refresh_token.is_some())
        {
            match flow::refresh(&flow::http_client(), g).await {
                Ok(fresh) => {
                    tracing::info!(target: "mcp", server = %self.target.name, "access token refreshed");
                    a.refresh_error.borrow_mut().take();
                    a.set(&self.target.url, fresh);
                    return Ok(());
                }
                Err(e) => {
                    tracing::info!(target: "mcp", server = %self.target.name, "token refresh failed: {e}");
                    refresh_failed = Some(e);
                    if a.newer_in_store(&self.target.url) {
                        // Another process refreshed first, with the same refresh token.
                        return Ok(());
                    }
                    // The refresh token is spent: forget it (here and in the store) so the
                    // next 401 does not try it again.
                    let mut spent = g.clone();
                    spent.refresh_token = None;
                    a.set(&self.target.url, spent);
                }
            }
        }
        let first = a.refresh_error.borrow_mut().take().filter(|_| !step_up);
        let mut why = first
            .or(refresh_failed)
            .map(|e| format!("the token refresh failed: {e}"));
        if step_up {
            // Kept for `harness9 mcp login`, which then asks for the granted scopes and these
            // (bounded); a challenge without a scope forgets an earlier one's.
            if let Some(mut g) = grant {
                let scope = needed.challenge.scope.as_deref().unwrap_or("");
                if let Err(e) = want_scopes(&mut g, scope) {
                    why = Some(e);
                }
                a.set(&self.target.url, g);
            }
        }
        Err(match why {
            Some(why) => format!("{} ({why})", self.needs_login(needed)),
            None => self.needs_login(needed),
        })
    }
}

impl Conn {
    /// A new token from the unattended grant's credentials, after a `401` (the token expired or
    /// was revoked) or a `403 insufficient_scope` (asked with the challenge's scopes too):
    /// discovery again (the server's challenge may name another authorization server), then
    /// one token request; a failure is reported as it is, never retried with another grant.
    async fn reacquire(&self, a: &Auth, needed: &AuthNeeded) -> Result<(), String> {
        let name = &self.target.name;
        let grant = a.spec.config.grant.name();
        let mut challenge = needed.challenge.clone();
        if let Some(held) = a.grant.borrow().as_ref() {
            let mut scopes = held.scopes.clone();
            for s in parse::scope_tokens(challenge.scope.as_deref().unwrap_or("")) {
                if !scopes.contains(&s) {
                    scopes.push(s);
                }
            }
            if !scopes.is_empty() {
                challenge.scope = Some(scopes.join(" "));
            }
        }
        match flow::acquire(&self.target.url, &a.spec, Some(&challenge)).await {
            Ok(fresh) => {
                tracing::info!(target: "mcp", server = %name, grant, "access token obtained");
                a.refresh_error.borrow_mut().take();
                a.set(&self.target.url, fresh);
                Ok(())
            }
            Err(e) if e.starts_with(flow::SSO_NEEDED) => {
                tracing::info!(target: "mcp", server = %name, grant, "{e}");
                Err(format!(
                    "server \"{name}\" needs your SSO login ({e}): run `harness9 mcp login {name}`"
                ))
            }
            Err(e) => {
                tracing::info!(target: "mcp", server = %name, grant, "token request failed: {e}");
                Err(format!(
                    "server \"{name}\": the {grant} token request failed: {e}"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::Client;

    fn grant(scopes: &[&str]) -> Grant {
        Grant {
            issuer: "i".into(),
            token_endpoint: "t".into(),
            resource: "r".into(),
            client: Client {
                client_id: "c".into(),
                client_secret: None,
                auth_method: "none".into(),
                redirect_uri: None,
            },
            access_token: "a".into(),
            refresh_token: None,
            expires_at: None,
            issued_at: None,
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            wanted_scopes: Vec::new(),
            dpop: None,
            id_token: None,
        }
    }

    #[test]
    fn a_step_up_wants_the_latest_challenge_only() {
        let mut g = grant(&["mcp"]);
        want_scopes(&mut g, "mcp admin:all").unwrap();
        assert_eq!(g.wanted_scopes, ["admin:all"]);
        want_scopes(&mut g, "mcp admin").unwrap();
        assert_eq!(g.wanted_scopes, ["admin"]);
        want_scopes(&mut g, "").unwrap();
        assert!(g.wanted_scopes.is_empty());
        let many: Vec<String> = (0..16).map(|i| format!("s{i}")).collect();
        want_scopes(&mut g, "admin").unwrap();
        assert!(want_scopes(&mut g, &many.join(" ")).is_err());
        assert!(g.wanted_scopes.is_empty(), "an over-long ask keeps nothing");
        assert_eq!(g.scopes, ["mcp"]);
    }
}
