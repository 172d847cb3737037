//! `[enterprise_idp]` of the user's settings: the enterprise identity provider that logs the
//! user in once (SSO) for every MCP server of the `enterprise` OAuth grant. Only the user's
//! own file counts: a project's could send the user's ID token to an IdP of its choosing, so
//! it is ignored with a warning naming the file and line.

use std::path::PathBuf;

use super::file::{key_line, parse_file};
use super::layers::read_layers;
use super::sandbox::push_warning;
use super::{ModelFlags, SettingsError};

/// What the user's `[enterprise_idp]` says, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnterpriseIdp {
    /// The IdP's issuer URL.
    pub issuer: String,
    /// harness9's client id there.
    pub client_id: String,
    /// The variable that holds the client's secret, if it has one.
    pub client_secret_env: Option<String>,
    /// The SSO login's scopes besides `openid`.
    pub scopes: Vec<String>,
    /// The login redirect's loopback port.
    pub callback_port: Option<u16>,
    /// An ID token file another SSO tool keeps (relative paths: to the settings file's folder).
    pub id_token_file: Option<PathBuf>,
}

/// The user's `[enterprise_idp]` (none: not configured), and a warning when a project's file
/// has one.
pub fn enterprise_idp(
    flags: &ModelFlags,
    warnings: &mut Vec<String>,
) -> Result<Option<EnterpriseIdp>, SettingsError> {
    let layers = read_layers(flags)?;
    if let Some((path, text)) = &layers.project {
        let name = path.display().to_string();
        if parse_file(&name, text)?.enterprise_idp.is_set() {
            let line = first_key_line(text);
            push_warning(
                warnings,
                Some(format!(
                    "{name}:{line}: [enterprise_idp] is ignored in a project's settings (it decides where your ID token goes); set it in {}",
                    super::layers::own_settings(super::layers::user_settings_file(flags).as_deref())
                )),
            );
        }
    }
    let Some((path, text)) = &layers.user else {
        return Ok(None);
    };
    let name = path.display().to_string();
    let s = parse_file(&name, text)?.enterprise_idp;
    if !s.is_set() {
        return Ok(None);
    }
    let fail = |key: &str, message: String| SettingsError::Toml {
        path: name.clone(),
        line: key_line(text, "enterprise_idp", key),
        column: 1,
        message,
    };
    let issuer = s.issuer.clone().ok_or_else(|| {
        fail(
            "client_id",
            "[enterprise_idp] needs issuer (the identity provider's URL, e.g. \"https://login.example.com\")".to_owned(),
        )
    })?;
    check_issuer(&issuer).map_err(|m| fail("issuer", m))?;
    let client_id = s.client_id.clone().ok_or_else(|| {
        fail(
            "issuer",
            "[enterprise_idp] needs client_id (harness9's client registered at the identity provider)".to_owned(),
        )
    })?;
    if let Some(v) = &s.client_secret_env {
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(fail(
                "client_secret_env",
                format!("client_secret_env names a variable: {v:?} is not a variable name"),
            ));
        }
    }
    let base = path.parent().map(PathBuf::from).unwrap_or_default();
    Ok(Some(EnterpriseIdp {
        issuer,
        client_id,
        client_secret_env: s.client_secret_env.clone(),
        scopes: s.scopes.clone().unwrap_or_default(),
        callback_port: s.callback_port,
        id_token_file: s.id_token_file.as_ref().map(|f| base.join(f)),
    }))
}

/// The line of the section's first key (its header's when it has none).
fn first_key_line(text: &str) -> usize {
    let keys = [
        "issuer",
        "client_id",
        "client_secret_env",
        "scopes",
        "callback_port",
        "id_token_file",
    ];
    keys.iter()
        .map(|k| key_line(text, "enterprise_idp", k))
        .filter(|l| *l > 1)
        .min()
        .unwrap_or(1)
}

/// An issuer is an https URL, or http on a loopback host (an IdP on this machine).
fn check_issuer(issuer: &str) -> Result<(), String> {
    let loopback = |rest: &str| {
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = host.rsplit_once(':').map_or(host, |(h, p)| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        });
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
    };
    match issuer.split_once("://") {
        Some(("https", rest)) if !rest.is_empty() => Ok(()),
        Some(("http", rest)) if loopback(rest) => Ok(()),
        _ => Err(format!(
            "issuer {issuer:?} is not an https URL (plain http only on localhost)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_are_https_or_loopback() {
        assert!(check_issuer("https://login.example.com").is_ok());
        assert!(check_issuer("http://localhost:4444").is_ok());
        assert!(check_issuer("http://127.0.0.1:9/idp").is_ok());
        assert!(check_issuer("http://login.example.com").is_err());
        assert!(check_issuer("login.example.com").is_err());
    }
}
