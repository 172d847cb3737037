//! OAuth for remote (Streamable HTTP) servers, as the MCP authorization spec asks: a `401`
//! with a `Bearer` challenge leads to protected resource metadata (RFC 9728), authorization
//! server metadata (RFC 8414 / OpenID discovery), a client (pre-registered, a client ID
//! metadata document, or dynamic registration, RFC 7591), and the authorization code flow with
//! PKCE S256 (RFC 7636), resource indicators (RFC 8707) and `iss` checks (RFC 9207).
//!
//! - [`parse`]: the pure parts (challenge, well-known URLs, scopes, PKCE, URLs, redirects).
//! - [`flow`]: the HTTP exchanges and the loopback redirect listener; [`flow::login`] is the
//!   one flow driver, used by `harness9 mcp login` and by a login started from the TUI's panel
//!   (the runtime itself never starts one: a server that asks ends with `needs login`).
//!
//! Tokens are kept through a [`TokenStore`] the caller provides (the app keeps a 0600 file);
//! the runtime only sees the trait. No token, code or verifier is ever logged or traced:
//! [`Grant`]'s `Debug` redacts them.
#![warn(missing_docs)]

pub mod dpop;
pub mod flow;
pub mod jwt;
pub mod parse;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// The `oauth` entry of an HTTP server in `.mcp.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// A pre-registered client id (skips registration).
    pub client_id: Option<String>,
    /// Its secret, if it is a confidential client.
    pub client_secret: Option<String>,
    /// The scopes to ask for (else the server's challenge or metadata decides).
    pub scopes: Vec<String>,
    /// The loopback port of the redirect URI (else one the OS picks).
    pub callback_port: Option<u16>,
    /// The URL of this client's metadata document, used as its client id when the
    /// authorization server supports client ID metadata documents.
    pub client_metadata_url: Option<String>,
    /// Origins (`scheme://host:port`) the user trusts for this server's OAuth whatever their
    /// address or scheme (`"allowOrigins"`): the one way to use an authorization server on a
    /// link-local address, on another kind of private address than the MCP server's, or
    /// over plain http off loopback ([`flow::Guard`]).
    pub allow_origins: Vec<String>,
    /// Which grant the tokens come from (`"grant"`; the authorization code flow by default).
    pub grant: GrantKind,
    /// How the client authenticates at the token endpoint (`"tokenEndpointAuth"`:
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt`); else from what is
    /// configured (a key: `private_key_jwt`; a secret: what the server supports; else `none`).
    pub token_endpoint_auth: Option<String>,
    /// The key of `private_key_jwt` (`"privateKeyFile"`/`"privateKeyEnv"`), checked at load.
    pub signing_key: Option<jwt::SigningKey>,
    /// The workload's token for the JWT bearer grant (`"assertionFile"`/`"assertion"`).
    pub assertion: Option<AssertionSource>,
    /// The authorization server the client is registered with (`"issuer"`): a grant without a
    /// user sends its credentials to no other, whatever the MCP server's metadata names.
    pub issuer: Option<String>,
    /// DPoP (RFC 9449) for this server's tokens (`"dpop"`): `Some(true)` always, `Some(false)`
    /// never, `None` when the authorization server advertises it ([`dpop::wanted`]).
    pub dpop: Option<bool>,
    /// The enterprise identity provider of the `enterprise` grant: the user's
    /// `[enterprise_idp]` settings (never a project's), set at load for a server of that grant.
    pub idp: Option<IdpConfig>,
}

/// The enterprise identity provider (`[enterprise_idp]` of the user's settings) that logs
/// the user in once (SSO, an OpenID Connect login in the browser) and exchanges the user's ID
/// token for an identity assertion grant (ID-JAG, RFC 8693) per MCP authorization server.
#[derive(Clone, PartialEq, Eq)]
pub struct IdpConfig {
    /// Its issuer (OpenID discovery at `{issuer}/.well-known/openid-configuration`).
    pub issuer: String,
    /// harness9's client at the IdP.
    pub client_id: String,
    /// Its secret, if the IdP registered harness9 as a confidential client.
    pub client_secret: Option<String>,
    /// The scopes of the SSO login (`openid` always among them).
    pub scopes: Vec<String>,
    /// The loopback port of the login's redirect URI (IdPs register exact redirect URIs).
    pub callback_port: Option<u16>,
    /// An ID token another SSO tool keeps fresh in a file (`id_token_file`), read for every
    /// exchange, instead of harness9's own login.
    pub id_token_file: Option<PathBuf>,
}

impl std::fmt::Debug for IdpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdpConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("id_token_file", &self.id_token_file)
            .finish_non_exhaustive()
    }
}

impl IdpConfig {
    /// The key of the SSO login's grant in the token store (beside the servers' URLs).
    pub fn store_key(&self) -> String {
        format!("sso:{}", self.issuer.trim_end_matches('/'))
    }
}

/// The OAuth grant a server's tokens come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GrantKind {
    /// The authorization code flow in a browser (`harness9 mcp login`).
    #[default]
    AuthorizationCode,
    /// The client credentials grant (RFC 6749 section 4.4): no user, no browser.
    ClientCredentials,
    /// The JWT bearer grant (RFC 7523) with a token the platform gives the workload.
    JwtBearer,
    /// Enterprise-managed authorization: the user's ID token from the enterprise IdP
    /// exchanged there for an ID-JAG (RFC 8693), then the JWT bearer grant with it at the MCP
    /// server's authorization server. One SSO login (`harness9 mcp login`) serves every such
    /// server; the runtime does the rest.
    Enterprise,
}

impl GrantKind {
    /// Every grant's config name, in the order shown in errors.
    pub const NAMES: [&'static str; 4] = [
        "authorization_code",
        "client_credentials",
        "jwt_bearer",
        "enterprise",
    ];

    /// The grant of config name `s`.
    pub fn parse(s: &str) -> Option<GrantKind> {
        match s {
            "authorization_code" => Some(GrantKind::AuthorizationCode),
            "client_credentials" => Some(GrantKind::ClientCredentials),
            "jwt_bearer" => Some(GrantKind::JwtBearer),
            "enterprise" => Some(GrantKind::Enterprise),
            _ => None,
        }
    }

    /// Its config name.
    pub fn name(self) -> &'static str {
        match self {
            GrantKind::AuthorizationCode => "authorization_code",
            GrantKind::ClientCredentials => "client_credentials",
            GrantKind::JwtBearer => "jwt_bearer",
            GrantKind::Enterprise => "enterprise",
        }
    }

    /// Whether the runtime gets and renews tokens itself, with no user and no login.
    pub fn unattended(self) -> bool {
        self != GrantKind::AuthorizationCode
    }
}

/// Where a workload's token (the JWT bearer grant's assertion) comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum AssertionSource {
    /// A file the platform writes (and rotates): read again for every token request.
    File(PathBuf),
    /// The value of an environment variable, read at load.
    Value(String),
}

impl std::fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AssertionSource::File(p) => f.debug_tuple("File").field(p).finish(),
            AssertionSource::Value(_) => f.write_str("Value([redacted])"),
        }
    }
}

/// The largest workload token read from a file.
pub const MAX_ASSERTION_BYTES: u64 = 64 * 1024;

impl AssertionSource {
    /// The assertion now: the file's current content (trimmed), or the value. Errors name the
    /// file, never its content.
    pub fn read(&self) -> Result<String, String> {
        let text = match self {
            AssertionSource::Value(v) => v.clone(),
            AssertionSource::File(p) => {
                use std::io::Read as _;
                let mut s = String::new();
                std::fs::File::open(p)
                    .and_then(|f| f.take(MAX_ASSERTION_BYTES + 1).read_to_string(&mut s))
                    .map_err(|e| {
                        format!("cannot read the workload token file {}: {e}", p.display())
                    })?;
                if s.len() as u64 > MAX_ASSERTION_BYTES {
                    return Err(format!(
                        "the workload token file {} is over {MAX_ASSERTION_BYTES} bytes: not a token",
                        p.display()
                    ));
                }
                s
            }
        };
        let t = text.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(match self {
                AssertionSource::File(p) => format!(
                    "the workload token file {} is empty or not a token (one line of printable ASCII)",
                    p.display()
                ),
                AssertionSource::Value(_) => {
                    "the workload token is empty or not a token (printable ASCII)".to_owned()
                }
            });
        }
        Ok(t.to_owned())
    }
}

/// A registered client, for one issuer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
    /// The redirect URI registered with it, if registered dynamically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .finish_non_exhaustive()
    }
}

/// What a login leaves: the client and the tokens of one server at one issuer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// The authorization server's issuer.
    pub issuer: String,
    /// Its token endpoint (for refreshes without discovery).
    pub token_endpoint: String,
    /// The resource indicator the tokens are for.
    pub resource: String,
    /// The client the tokens were issued to.
    pub client: Client,
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the epoch), if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the access token was issued (seconds since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scopes granted (or asked for, when the server did not say).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Scopes the server's latest `403 insufficient_scope` asked for that this grant lacks, when
    /// nobody could log in at the time (a later challenge replaces them, never adds to them):
    /// the next login asks for them too ([`OAuthSpec::login_scopes`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
    /// The DPoP key the tokens are bound to (their `token_type` was `DPoP`): every request
    /// with them carries a proof made with it and `Authorization: DPoP`. `None`: bearer tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop: Option<dpop::Dpop>,
    /// The OpenID Connect ID token of an SSO login at the enterprise IdP (its grant only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lived_tokens_are_not_always_expiring() {
        let now = now_secs();
        let client = Client {
            client_id: "c".into(),
            client_secret: None,
            auth_method: "none".into(),
            redirect_uri: None,
        };
        let mut g = Grant {
            issuer: "i".into(),
            token_endpoint: "t".into(),
            resource: "r".into(),
            client,
            access_token: "a".into(),
            refresh_token: None,
            expires_at: Some(now + 100),
            issued_at: Some(now),
            scopes: Vec::new(),
            wanted_scopes: Vec::new(),
            dpop: None,
            id_token: None,
        };
        assert!(!g.expiring(30));
        g.expires_at = Some(now + 20);
        assert!(!g.expiring(30), "a quarter of 20 s is the margin");
        g.expires_at = Some(now + 4);
        g.issued_at = Some(now - 16);
        assert!(g.expiring(30));
        g.expires_at = None;
        assert!(!g.expiring(30));
        assert!(!format!("{g:?}").contains("\"a\""));
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("issuer", &self.issuer)
            .field("client", &self.client)
            .field("scopes", &self.scopes)
            .field("expires_at", &self.expires_at)
            .field("dpop", &self.dpop)
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[redacted]"),
            )
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// Whether the access token expires within `margin_secs`, or within a quarter of its
    /// lifetime if that is shorter (never, if the expiry is unknown).
    pub fn expiring(&self, margin_secs: u64) -> bool {
        let Some(at) = self.expires_at else {
            return false;
        };
        let lifetime = self.issued_at.map_or(u64::MAX, |i| at.saturating_sub(i));
        now_secs().saturating_add(margin_secs.min(lifetime / 4)) >= at
    }
}

/// Seconds since the epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Where grants are kept, keyed by the server's URL and the issuer. Implementations must be
/// quick (a small file at most): they are called on the runtime's thread.
pub trait TokenStore: Send + Sync {
    /// The grant last saved for `server` (any issuer).
    fn load(&self, server: &str) -> Option<Grant>;
    /// The client registered for `server` at `issuer`, if any grant there kept one.
    fn client(&self, server: &str, issuer: &str) -> Option<Client>;
    /// Saves `grant` for `server` (replacing the one of its issuer).
    fn save(&self, server: &str, grant: &Grant) -> Result<(), String>;
    /// Forgets everything of `server`; whether there was anything.
    fn forget(&self, server: &str) -> Result<bool, String>;
}

/// A store in memory (tests').
#[derive(Default)]
pub struct MemoryStore(Mutex<HashMap<String, Vec<Grant>>>);

impl TokenStore for MemoryStore {
    fn load(&self, server: &str) -> Option<Grant> {
        self.0.lock().ok()?.get(server)?.last().cloned()
    }
    fn client(&self, server: &str, issuer: &str) -> Option<Client> {
        let map = self.0.lock().ok()?;
        map.get(server)?
            .iter()
            .find(|g| g.issuer == issuer)
            .map(|g| g.client.clone())
    }
    fn save(&self, server: &str, grant: &Grant) -> Result<(), String> {
        let mut map = self.0.lock().map_err(|e| e.to_string())?;
        let list = map.entry(server.to_owned()).or_default();
        list.retain(|g| g.issuer != grant.issuer);
        list.push(grant.clone());
        Ok(())
    }
    fn forget(&self, server: &str) -> Result<bool, String> {
        let mut map = self.0.lock().map_err(|e| e.to_string())?;
        Ok(map.remove(server).is_some())
    }
}

/// How a server logs in: its configuration and the store. The runtime never starts a login
/// by itself: a server that asks for one ends with `needs login`, and the user logs in
/// (`harness9 mcp login`, or the TUI's panel).
#[derive(Clone)]
pub struct OAuthSpec {
    /// The `oauth` entry of the config (all defaults when absent).
    pub config: OAuthConfig,
    /// Where grants are kept.
    pub store: Arc<dyn TokenStore>,
    /// How long a login waits for the browser's redirect.
    pub login_timeout: std::time::Duration,
}

impl OAuthSpec {
    /// A spec with `config`, kept in `store`, with a 5 minute login timeout.
    pub fn new(config: OAuthConfig, store: Arc<dyn TokenStore>) -> Self {
        Self {
            config,
            store,
            login_timeout: std::time::Duration::from_secs(300),
        }
    }

    /// The scopes a login to `server` starts from besides what it chooses itself: those of
    /// the stored grant and those the server's latest step-up challenge asked for
    /// ([`Grant::wanted_scopes`]), so a step-up that had to wait for `harness9 mcp login` asks
    /// for what was granted plus what is needed now, not every scope any challenge named.
    pub fn login_scopes(&self, server: &str) -> Vec<String> {
        let Some(g) = self.store.load(server) else {
            return Vec::new();
        };
        let mut out = g.scopes;
        for s in g.wanted_scopes {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

impl std::fmt::Debug for OAuthSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSpec")
            .field("client_id", &self.config.client_id)
            .field("scopes", &self.config.scopes)
            .field("grant", &self.config.grant)
            .finish_non_exhaustive()
    }
}

/// Two specs are equal when their configuration is: the store is where, not what.
impl PartialEq for OAuthSpec {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
    }
}

impl Eq for OAuthSpec {}
