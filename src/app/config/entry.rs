//! What one `.mcp.json` server entry may say, as serde reads it: its fields, the `env`
//! (object or VS Code list), `sandbox` (bool or object), `roots`, `oauth`, and the `type`
//! aliases other tools use. `config.rs` checks and builds a `ServerSpec` from it.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// An entry's `type`: the transport it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum TransportType {
    Stdio,
    /// Streamable HTTP; other tools spell it `streamable-http` or `streamableHttp`.
    #[serde(alias = "streamable-http", alias = "streamableHttp")]
    Http,
    Sse,
}

#[derive(Debug, Default)]
pub(super) struct EnvField(pub(super) Vec<(String, String)>);

impl<'de> Deserialize<'de> for EnvField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = EnvField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"an object {"KEY": "VALUE"} or a list ["KEY=VALUE"]"#)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<EnvField, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(EnvField(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<EnvField, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = s.next_element::<String>()? {
                    let Some((k, v)) = item.split_once('=') else {
                        return Err(de::Error::custom(format!(
                            "env entry {item:?} is not KEY=VALUE"
                        )));
                    };
                    out.push((k.to_owned(), v.to_owned()));
                }
                Ok(EnvField(out))
            }
        }
        d.deserialize_any(V)
    }
}

pub use harness9_base::sandbox_field::SandboxField;

/// What an entry gets that it does not say itself: resolved once at startup (the session's
/// [`crate::RuntimeOptions`]) and passed to every load, so no process-wide state decides
/// what a config means.
#[derive(Clone)]
pub struct EntryDefaults {
    /// The sandbox of every stdio server whose entry has no `"sandbox"` (`[mcp] sandbox` in
    /// harness9.toml).
    pub sandbox: Option<SandboxField>,
    /// Where HTTP servers' OAuth grants are kept (one store per process, so its lock
    /// serializes every read-modify-write of the file).
    pub oauth_store: std::sync::Arc<dyn harness9_actors::oauth::TokenStore>,
    /// The enterprise identity provider of the `enterprise` grant (`[enterprise_idp]` of the
    /// user's own settings).
    pub enterprise_idp: Option<harness9_actors::oauth::IdpConfig>,
    /// Why `[enterprise_idp]` could not be used (its secret's variable is not set): the
    /// servers of the enterprise grant fail with it at load, the others are not touched.
    pub enterprise_idp_error: Option<String>,
}

impl fmt::Debug for EntryDefaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EntryDefaults")
            .field("sandbox", &self.sandbox)
            .field("enterprise_idp", &self.enterprise_idp)
            .finish_non_exhaustive()
    }
}

impl EntryDefaults {
    /// No default sandbox, grants in the default store (`oauth_store::default_store`: the
    /// file at `oauth_store::store_path` on Linux, the system's credential store elsewhere).
    pub fn new() -> Self {
        Self {
            sandbox: None,
            oauth_store: crate::stores::oauth_store::default_store(),
            enterprise_idp: None,
            enterprise_idp_error: None,
        }
    }

    /// No default sandbox, grants in memory: the unit tests' loads.
    #[cfg(test)]
    pub(crate) fn in_memory() -> Self {
        Self {
            sandbox: None,
            oauth_store: std::sync::Arc::new(harness9_actors::oauth::MemoryStore::default()),
            enterprise_idp: None,
            enterprise_idp_error: None,
        }
    }
}

impl Default for EntryDefaults {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawServer {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<TransportType>,
    #[serde(default)]
    pub(super) command: Option<String>,
    #[serde(default)]
    pub(super) args: Vec<String>,
    #[serde(default)]
    pub(super) env: EnvField,
    #[serde(default)]
    pub(super) cwd: Option<String>,
    #[serde(default)]
    pub(super) url: Option<String>,
    #[serde(default)]
    pub(super) headers: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) startup_timeout_sec: Option<f64>,
    #[serde(default)]
    pub(super) tool_timeout_sec: Option<f64>,
    #[serde(default)]
    pub(super) tool_idle_timeout_sec: Option<f64>,
    #[serde(default)]
    pub(super) task_timeout_sec: Option<f64>,
    #[serde(default)]
    pub(super) disabled: bool,
    #[serde(default)]
    pub(super) enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    pub(super) disabled_tools: Vec<String>,
    #[serde(default)]
    pub(super) max_message_bytes: Option<usize>,
    #[serde(default)]
    pub(super) max_tools: Option<usize>,
    pub(super) sandbox: Option<SandboxField>,
    #[serde(default)]
    pub(super) protocol_version: Option<String>,
    /// A file of `KEY=VALUE` lines (relative to the config file) added under `env`.
    #[serde(default)]
    pub(super) env_file: Option<String>,
    #[serde(default)]
    pub(super) oauth: Option<RawOAuth>,
    /// `false`, `true`, or a list of directories (relative to the config file).
    #[serde(default)]
    pub(super) roots: Option<RawRoots>,
    #[serde(default)]
    pub(super) log_level: Option<String>,
    /// `"eager"` or `"lazy"`: how the server starts when its tool list is cached.
    #[serde(default)]
    pub(super) start: Option<String>,
}

/// A `"roots"` entry: `false` offers none (the capability is not declared), `true` the
/// default (the server's working directory), a list those directories.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawRoots {
    On(bool),
    Paths(Vec<String>),
}

/// An HTTP server's `"oauth"` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawOAuth {
    #[serde(default)]
    pub(super) client_id: Option<String>,
    #[serde(default)]
    pub(super) client_secret: Option<String>,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    #[serde(default)]
    pub(super) callback_port: Option<u16>,
    #[serde(default)]
    pub(super) client_metadata_url: Option<String>,
    #[serde(default)]
    pub(super) allow_origins: Vec<String>,
    /// `authorization_code` (the default), `client_credentials`, `jwt_bearer`.
    #[serde(default)]
    pub(super) grant: Option<String>,
    /// `client_secret_basic`, `client_secret_post`, `private_key_jwt`.
    #[serde(default)]
    pub(super) token_endpoint_auth: Option<String>,
    /// A PEM private key, typically `${VAR}`.
    #[serde(default)]
    pub(super) private_key: Option<String>,
    /// A PEM private key file (relative to the config file).
    #[serde(default)]
    pub(super) private_key_file: Option<String>,
    /// `RS256` or `ES256` (else the key's own).
    #[serde(default)]
    pub(super) alg: Option<String>,
    /// The workload's token for the JWT bearer grant, typically `${VAR}`.
    #[serde(default)]
    pub(super) assertion: Option<String>,
    /// A file holding the workload's token (relative to the config file), read again for
    /// every token request.
    #[serde(default)]
    pub(super) assertion_file: Option<String>,
    /// The authorization server's issuer the credentials may go to.
    #[serde(default)]
    pub(super) issuer: Option<String>,
    /// DPoP-bound tokens (RFC 9449): `true` always, `false` never, absent when offered.
    #[serde(default)]
    pub(super) dpop: Option<bool>,
}
