//! Where OAuth grants are kept: a private (0600) JSON file, `$HARNESS9_OAUTH_STORE`, else
//! `$XDG_STATE_HOME/harness9/oauth.json` (`~/.local/state/...`), keyed by the server's URL and
//! the authorization server's issuer; each entry holds the client registration and the tokens
//! with their expiry. The runtime reaches it only through [`TokenStore`]. Written through a
//! temp file and a rename, like the approvals file ([`super::trust`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use harness9_actors::oauth::{Client, Grant, TokenStore};
use serde::{Deserialize, Serialize};

/// The variable that names the store file (tests point it at a temp file).
pub const ENV: &str = "HARNESS9_OAUTH_STORE";

/// Where grants are kept: `$HARNESS9_OAUTH_STORE`, else the state directory's `oauth.json`.
pub fn store_path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::paths::state_dir().join("oauth.json"),
    }
}

/// The file's shape: server URL -> issuer -> grant.
#[derive(Default, Serialize, Deserialize)]
struct StoreFile {
    #[serde(default)]
    servers: BTreeMap<String, BTreeMap<String, Grant>>,
}

/// The file store. One per process, made once with the `RuntimeOptions`, so its lock
/// serializes every update of the file.
pub struct FileStore {
    path: PathBuf,
    /// Serializes this process's read-modify-write cycles.
    lock: Mutex<()>,
}

impl FileStore {
    /// A store kept in `path`.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            lock: Mutex::new(()),
        }
    }

    fn read(&self) -> Result<StoreFile, String> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                format!(
                    "the OAuth store {} is not valid ({e}); fix or delete it",
                    self.path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile::default()),
            Err(e) => Err(format!(
                "cannot read the OAuth store {}: {e}",
                self.path.display()
            )),
        }
    }

    fn write(&self, file: &StoreFile) -> Result<(), String> {
        let body = serde_json::to_vec_pretty(file).map_err(|e| e.to_string())?;
        crate::edit::write_private(&self.path, &body)
            .map_err(|e| format!("cannot write the OAuth store {}: {e}", self.path.display()))
    }
}

impl TokenStore for FileStore {
    fn load(&self, server: &str) -> Option<Grant> {
        let _one = self.lock.lock().ok()?;
        let file = match self.read() {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(target: "mcp", "{e}");
                return None;
            }
        };
        // The one grant that still has tokens ([`FileStore::save`] empties the others).
        let list = file.servers.get(server)?;
        list.values().find(|g| !g.access_token.is_empty()).cloned()
    }

    fn client(&self, server: &str, issuer: &str) -> Option<Client> {
        let _one = self.lock.lock().ok()?;
        let file = self.read().ok()?;
        Some(file.servers.get(server)?.get(issuer)?.client.clone())
    }

    fn save(&self, server: &str, grant: &Grant) -> Result<(), String> {
        let _one = self.lock.lock().map_err(|e| e.to_string())?;
        let mut file = self.read()?;
        let entry = file.servers.entry(server.to_owned()).or_default();
        // One current grant per server: another issuer's is kept only for its registration.
        for g in entry.values_mut() {
            g.access_token.clear();
            g.refresh_token = None;
            g.expires_at = Some(0);
        }
        entry.insert(grant.issuer.clone(), grant.clone());
        self.write(&file)
    }

    fn forget(&self, server: &str) -> Result<bool, String> {
        let _one = self.lock.lock().map_err(|e| e.to_string())?;
        let mut file = self.read()?;
        let had = file.servers.remove(server).is_some();
        if had {
            self.write(&file)?;
        }
        Ok(had)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness9_actors::oauth::Client;

    fn grant(issuer: &str, token: &str) -> Grant {
        Grant {
            issuer: issuer.into(),
            token_endpoint: format!("{issuer}/token"),
            resource: "http://h/mcp".into(),
            client: Client {
                client_id: "c".into(),
                client_secret: Some("s".into()),
                auth_method: "client_secret_basic".into(),
                redirect_uri: None,
            },
            access_token: token.into(),
            refresh_token: Some("r".into()),
            expires_at: Some(harness9_actors::oauth::now_secs() + 100),
            issued_at: None,
            scopes: vec!["a".into()],
            wanted_scopes: Vec::new(),
        }
    }

    #[test]
    fn grants_are_kept_privately_per_server_and_issuer() {
        let dir = std::env::temp_dir().join(format!("h9-oauth-{}", std::process::id()));
        let path = dir.join("oauth.json");
        let s = FileStore::new(path.clone());
        assert!(s.load("http://h/mcp").is_none());
        s.save("http://h/mcp", &grant("http://as1", "t1")).unwrap();
        s.save("http://h/mcp", &grant("http://as2", "t2")).unwrap();
        assert_eq!(s.load("http://h/mcp").unwrap().access_token, "t2");
        assert_eq!(
            s.client("http://h/mcp", "http://as1").unwrap().client_id,
            "c"
        );
        assert!(s.client("http://h/mcp", "http://as3").is_none());
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&path).unwrap());
        assert_eq!(mode & 0o777, 0o600);
        assert!(s.forget("http://h/mcp").unwrap());
        assert!(!s.forget("http://h/mcp").unwrap());
        assert!(s.load("http://h/mcp").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
