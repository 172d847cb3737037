//! An HTTP server's OAuth grant and its inputs (`grant`, `tokenEndpointAuth`, `privateKey`,
//! `privateKeyFile`, `alg`, `assertion`, `assertionFile`, `issuer`), checked at load: an unknown grant or
//! method, a missing or unreadable key, a key that does not fit `alg`, an input the grant does
//! not use. Keys and tokens join the secrets the session redacts; errors never show them.

use harness9_actors::oauth::jwt::{Alg, SigningKey};
use harness9_actors::oauth::{AssertionSource, GrantKind, IdpConfig, OAuthConfig};

use super::build::Entry;
use super::entry::RawOAuth;
use super::{read_regular, ConfigError};

/// The token endpoint auth methods a config may name.
const AUTH_METHODS: [&str; 3] = [
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
];

/// The largest key file read.
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// Fills `config`'s grant fields from `raw`, an entry `e`'s `oauth`: values expanded (a
/// `${VAR}` there is a secret, kept in `secrets`, as keys and assertions are), file paths
/// relative to the entry's directory; errors name the field.
pub(super) fn apply(
    config: &mut OAuthConfig,
    raw: &RawOAuth,
    e: &Entry<'_>,
    secrets: &mut Vec<String>,
) -> Result<(), ConfigError> {
    if let Some(g) = &raw.grant {
        config.grant = GrantKind::parse(g).ok_or_else(|| {
            e.fail(
                "oauth.grant",
                format!(
                    "unknown grant {g:?}: use one of {}",
                    GrantKind::NAMES.join(", ")
                ),
            )
        })?;
    }
    if let Some(m) = &raw.token_endpoint_auth {
        if !AUTH_METHODS.contains(&m.as_str()) {
            return Err(e.fail(
                "oauth.tokenEndpointAuth",
                format!(
                    "unknown method {m:?}: use one of {}",
                    AUTH_METHODS.join(", ")
                ),
            ));
        }
        config.token_endpoint_auth = Some(m.clone());
    }
    config.signing_key = signing_key(raw, e, secrets)?;
    config.assertion = assertion(raw, e, secrets)?;
    if let Some(i) = &raw.issuer {
        config.issuer = Some(e.x("oauth.issuer", i)?);
    }
    if config.grant == GrantKind::Enterprise {
        let defaults = e.defaults();
        if let (None, Some(why)) = (&defaults.enterprise_idp, &defaults.enterprise_idp_error) {
            return Err(e.fail("oauth.grant", why.clone()));
        }
        config.idp = defaults.enterprise_idp.clone();
    }
    check_grant_inputs(config).map_err(|(f, m)| e.fail(f, m))
}

/// The signing key of `privateKey` or `privateKeyFile` (one of them), for `alg` when given
/// (which needs a key); its text joins `secrets`.
fn signing_key(
    raw: &RawOAuth,
    e: &Entry<'_>,
    secrets: &mut Vec<String>,
) -> Result<Option<SigningKey>, ConfigError> {
    let alg = match &raw.alg {
        Some(a) => Some(Alg::parse(a).ok_or_else(|| {
            e.fail(
                "oauth.alg",
                format!(
                    "unsupported alg {a:?}: use RS256 or ES256 (or leave it out: the key's own)"
                ),
            )
        })?),
        None => None,
    };
    let pem = match (&raw.private_key, &raw.private_key_file) {
        (Some(_), Some(_)) => {
            return Err(e.fail(
                "oauth.privateKey",
                "give privateKey or privateKeyFile, not both".to_owned(),
            ))
        }
        (Some(v), None) => Some(("oauth.privateKey", e.x("oauth.privateKey", v)?)),
        (None, Some(f)) => {
            let path = e.base().join(e.x("oauth.privateKeyFile", f)?);
            let text = read_regular(&path, MAX_KEY_BYTES).map_err(|err| {
                e.fail(
                    "oauth.privateKeyFile",
                    format!("cannot read the key file {}: {err}", path.display()),
                )
            })?;
            Some(("oauth.privateKeyFile", text))
        }
        (None, None) => None,
    };
    if let Some((f, text)) = pem {
        secrets.push(text.trim().to_owned());
        let key = SigningKey::from_pem(&text, alg).map_err(|err| e.fail(f, err))?;
        Ok(Some(key))
    } else if alg.is_some() {
        Err(e.fail(
            "oauth.alg",
            "alg is for a signing key: add privateKeyFile or privateKey, or remove alg".to_owned(),
        ))
    } else {
        Ok(None)
    }
}

/// The workload token of `assertion` or `assertionFile` (one of them); a value joins
/// `secrets`, a file is read once now.
fn assertion(
    raw: &RawOAuth,
    e: &Entry<'_>,
    secrets: &mut Vec<String>,
) -> Result<Option<AssertionSource>, ConfigError> {
    match (&raw.assertion, &raw.assertion_file) {
        (Some(_), Some(_)) => Err(e.fail(
            "oauth.assertion",
            "give assertion or assertionFile, not both".to_owned(),
        )),
        (Some(v), None) => {
            let v = e.x("oauth.assertion", v)?;
            secrets.push(v.trim().to_owned());
            Ok(Some(AssertionSource::Value(v)))
        }
        (None, Some(f)) => {
            let path = e.base().join(e.x("oauth.assertionFile", f)?);
            let source = AssertionSource::File(path);
            // Checked now (a missing file is a mistake to tell at load); read again for every
            // token request, as the platform rotates it.
            source
                .read()
                .map_err(|err| e.fail("oauth.assertionFile", err))?;
            Ok(Some(source))
        }
        (None, None) => Ok(None),
    }
}

/// `private_key_jwt` needs a key.
fn key_if_private_key_jwt(c: &OAuthConfig) -> Result<(), (&'static str, String)> {
    if c.token_endpoint_auth.as_deref() == Some("private_key_jwt") && c.signing_key.is_none() {
        return Err((
            "oauth.tokenEndpointAuth",
            "private_key_jwt needs privateKeyFile or privateKey".to_owned(),
        ));
    }
    Ok(())
}

/// Whether the grant has what it needs and nothing it does not use: `(field, message)`.
fn check_grant_inputs(c: &OAuthConfig) -> Result<(), (&'static str, String)> {
    let grant = c.grant.name();
    if c.assertion.is_some() && c.grant != GrantKind::JwtBearer {
        return Err((
            "oauth.assertion",
            format!("a workload token is for grant \"jwt_bearer\", and this server's grant is \"{grant}\": set \"grant\": \"jwt_bearer\" or remove it"),
        ));
    }
    match c.grant {
        GrantKind::AuthorizationCode => Ok(()),
        GrantKind::ClientCredentials => {
            if c.client_id.is_none() {
                return Err((
                    "oauth.clientId",
                    format!("grant \"{grant}\" needs clientId (the client registered at the authorization server)"),
                ));
            }
            match (c.token_endpoint_auth.as_deref(), &c.signing_key, &c.client_secret) {
                (Some("private_key_jwt") | None, Some(_), _) => Ok(()),
                (Some("private_key_jwt"), None, _) => Err((
                    "oauth.tokenEndpointAuth",
                    "private_key_jwt needs privateKeyFile or privateKey".to_owned(),
                )),
                (_, _, Some(_)) => Ok(()),
                _ => Err((
                    "oauth.clientSecret",
                    format!("grant \"{grant}\" needs the client's credentials: clientSecret (typically \"${{VAR}}\"), or privateKeyFile for private_key_jwt"),
                )),
            }
        }
        GrantKind::Enterprise => {
            if c.idp.is_none() {
                return Err((
                    "oauth.grant",
                    format!("grant \"{grant}\" needs your enterprise identity provider: add [enterprise_idp] with issuer and client_id to your own settings file (config.toml in harness9's config folder, or the --settings file)"),
                ));
            }
            if c.client_id.is_none() {
                return Err((
                    "oauth.clientId",
                    format!("grant \"{grant}\" needs clientId (harness9's client at the MCP server's authorization server)"),
                ));
            }
            key_if_private_key_jwt(c)
        }
        GrantKind::JwtBearer => {
            if c.client_id.is_none() {
                return Err((
                    "oauth.clientId",
                    format!("grant \"{grant}\" needs clientId (the client the workload is registered as)"),
                ));
            }
            if c.assertion.is_none() {
                return Err((
                    "oauth.assertionFile",
                    format!("grant \"{grant}\" needs the workload's token: assertionFile (the file the platform writes) or assertion (typically \"${{VAR}}\")"),
                ));
            }
            key_if_private_key_jwt(c)
        }
    }
}

/// The enterprise IdP of the user's `[enterprise_idp]`: its client secret read from the
/// variable `client_secret_env` names (a secret the session redacts from then on).
pub fn enterprise_idp(
    s: harness9_agent::model::settings::EnterpriseIdp,
) -> Result<IdpConfig, String> {
    let client_secret = match &s.client_secret_env {
        Some(var) => {
            let v = std::env::var(var).map_err(|_| {
                format!("[enterprise_idp] client_secret_env names {var}, which is not set: set it, or remove client_secret_env for a public client")
            })?;
            harness9_actors::telemetry::redact_also(std::iter::once(v.as_str()));
            Some(v)
        }
        None => None,
    };
    Ok(IdpConfig {
        issuer: s.issuer,
        client_id: s.client_id,
        client_secret,
        scopes: s.scopes,
        callback_port: s.callback_port,
        id_token_file: s.id_token_file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(grant: GrantKind, f: impl FnOnce(&mut OAuthConfig)) -> OAuthConfig {
        let mut c = OAuthConfig {
            grant,
            ..OAuthConfig::default()
        };
        f(&mut c);
        c
    }

    #[test]
    fn each_grant_needs_its_inputs() {
        use GrantKind::*;
        assert!(check_grant_inputs(&with(AuthorizationCode, |_| {})).is_ok());
        let e = check_grant_inputs(&with(ClientCredentials, |_| {})).unwrap_err();
        assert_eq!(e.0, "oauth.clientId");
        let e = check_grant_inputs(&with(ClientCredentials, |c| c.client_id = Some("c".into())))
            .unwrap_err();
        assert_eq!(e.0, "oauth.clientSecret");
        let ok = with(ClientCredentials, |c| {
            c.client_id = Some("c".into());
            c.client_secret = Some("s".into());
        });
        assert!(check_grant_inputs(&ok).is_ok());
        let e = check_grant_inputs(&with(ClientCredentials, |c| {
            c.client_id = Some("c".into());
            c.client_secret = Some("s".into());
            c.token_endpoint_auth = Some("private_key_jwt".into());
        }))
        .unwrap_err();
        assert_eq!(e.0, "oauth.tokenEndpointAuth");
        let e = check_grant_inputs(&with(JwtBearer, |_| {})).unwrap_err();
        assert_eq!(e.0, "oauth.clientId");
        let e =
            check_grant_inputs(&with(JwtBearer, |c| c.client_id = Some("w".into()))).unwrap_err();
        assert_eq!(e.0, "oauth.assertionFile");
        let wif = with(JwtBearer, |c| {
            c.client_id = Some("w".into());
            c.assertion = Some(AssertionSource::Value("a.b.c".into()));
        });
        assert!(check_grant_inputs(&wif).is_ok());
        let e = check_grant_inputs(&with(AuthorizationCode, |c| {
            c.assertion = Some(AssertionSource::Value("a.b.c".into()));
        }))
        .unwrap_err();
        assert_eq!(e.0, "oauth.assertion");
        assert!(!format!("{:?}", wif.assertion).contains("a.b.c"));
        let e =
            check_grant_inputs(&with(Enterprise, |c| c.client_id = Some("m".into()))).unwrap_err();
        assert_eq!(e.0, "oauth.grant");
        assert!(e.1.contains("[enterprise_idp]"), "{}", e.1);
        let idp = IdpConfig {
            issuer: "https://idp.example".into(),
            client_id: "h9".into(),
            client_secret: None,
            scopes: Vec::new(),
            callback_port: None,
            id_token_file: None,
        };
        let e = check_grant_inputs(&with(Enterprise, |c| c.idp = Some(idp.clone()))).unwrap_err();
        assert_eq!(e.0, "oauth.clientId");
        assert!(check_grant_inputs(&with(Enterprise, |c| {
            c.idp = Some(idp);
            c.client_id = Some("m".into());
        }))
        .is_ok());
    }
}
