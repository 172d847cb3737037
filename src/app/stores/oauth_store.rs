//! Where OAuth grants are kept: a private (0600) JSON file, `$HARNESS9_OAUTH_STORE`, else
//! the state directory's `oauth.json` (`~/.local/state/harness9/...` on Linux), keyed by the
//! server's URL and the authorization server's issuer; each entry holds the client
//! registration and the tokens with their expiry. On macOS and Windows ([`default_store`])
//! each server's grants are kept in the system's credential store instead (the Keychain, the
//! Credential Manager: [`SystemStore`]), with the file as the fallback when that store fails
//! (a locked keychain, no login session), with a warning naming why. The runtime reaches it
//! only through [`TokenStore`]. The file is written through a temp file and a rename, like the
//! approvals file ([`crate::config::trust`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use harness9_actors::oauth::{Client, Grant, TokenStore};
use harness9_platform::secrets::SecretStore;
use serde::{Deserialize, Serialize};

/// The variable that names the store file (tests point it at a temp file).
pub const ENV: &str = "HARNESS9_OAUTH_STORE";

/// Where grants are kept: `$HARNESS9_OAUTH_STORE`, else the state directory's `oauth.json`.
pub fn store_path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::stores::state_dir().join("oauth.json"),
    }
}

/// The store harness9 uses: the file named by `$HARNESS9_OAUTH_STORE` when it is set, else the
/// system's credential store where there is one (macOS, Windows) over the file as its
/// fallback, else (Linux) the file.
pub fn default_store() -> Arc<dyn TokenStore> {
    let file = FileStore::new(store_path());
    let named = std::env::var_os(ENV).is_some_and(|p| !p.is_empty());
    match harness9_platform::secrets::system_store(harness9_platform::secrets::SERVICE) {
        Some(system) if !named => Arc::new(SystemStore::new(system, file)),
        _ => Arc::new(file),
    }
}

/// One server's grants: issuer -> grant.
type Grants = BTreeMap<String, Grant>;

/// The one grant of `list` that still has tokens ([`put`] empties the others).
fn current(list: &Grants) -> Option<Grant> {
    list.values().find(|g| !g.access_token.is_empty()).cloned()
}

/// Puts `grant` in `list`: one current grant per server, another issuer's is kept only for its
/// registration.
fn put(list: &mut Grants, grant: &Grant) {
    for g in list.values_mut() {
        g.access_token.clear();
        g.refresh_token = None;
        g.expires_at = Some(0);
        // Its DPoP key bound only those tokens: not kept past them.
        g.dpop = None;
    }
    list.insert(grant.issuer.clone(), grant.clone());
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
        current(file.servers.get(server)?)
    }

    fn client(&self, server: &str, issuer: &str) -> Option<Client> {
        let _one = self.lock.lock().ok()?;
        let file = self.read().ok()?;
        Some(file.servers.get(server)?.get(issuer)?.client.clone())
    }

    fn save(&self, server: &str, grant: &Grant) -> Result<(), String> {
        let _one = self.lock.lock().map_err(|e| e.to_string())?;
        let mut file = self.read()?;
        put(file.servers.entry(server.to_owned()).or_default(), grant);
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

/// Grants in the system's credential store (one secret per server: its [`Grants`] as JSON),
/// over the file: whatever the credential store cannot do (locked, no session, a grant too
/// long for it) goes to the file, with a warning naming the store and why. A grant kept in
/// the credential store is removed from the file, so no plaintext copy stays behind; a grant
/// only the file has (saved before, or during a fallback) is still found there.
pub struct SystemStore {
    system: Box<dyn SecretStore>,
    file: FileStore,
    /// Serializes this process's read-modify-write cycles of the credential store.
    lock: Mutex<()>,
    /// The fallback reasons already warned about (one store per process: once each).
    said: Mutex<Vec<String>>,
}

impl SystemStore {
    /// `system` over `file`.
    pub fn new(system: Box<dyn SecretStore>, file: FileStore) -> Self {
        Self {
            system,
            file,
            lock: Mutex::new(()),
            said: Mutex::new(Vec::new()),
        }
    }

    fn account(server: &str) -> String {
        format!("oauth {server}")
    }

    /// Says once per distinct reason that the file is used instead of the credential store.
    fn fall_back(&self, why: &str) {
        let new = match self.said.lock() {
            Ok(mut said) if !said.iter().any(|s| s == why) => {
                said.push(why.to_owned());
                true
            }
            Ok(_) => false,
            Err(_) => true,
        };
        if new {
            tracing::warn!(
                target: "mcp",
                "{why}; OAuth tokens are kept in the file {} (0600) instead",
                self.file.path.display()
            );
        }
    }

    /// `server`'s grants in the credential store: `Ok(None)` when it has none, `Err` (said
    /// already) when it cannot be read or its secret is not valid.
    fn grants(&self, server: &str) -> Result<Option<Grants>, ()> {
        match self.system.get(&Self::account(server)) {
            Ok(None) => Ok(None),
            Ok(Some(text)) => match serde_json::from_str(&text) {
                Ok(g) => Ok(Some(g)),
                Err(e) => {
                    self.fall_back(&format!(
                        "the OAuth grants of {server} in {} are not valid ({e})",
                        self.system.name()
                    ));
                    Err(())
                }
            },
            Err(e) => {
                self.fall_back(&e);
                Err(())
            }
        }
    }
}

impl TokenStore for SystemStore {
    fn load(&self, server: &str) -> Option<Grant> {
        let _one = self.lock.lock().ok()?;
        match self.grants(server) {
            Ok(Some(list)) => current(&list).or_else(|| self.file.load(server)),
            Ok(None) | Err(()) => self.file.load(server),
        }
    }

    fn client(&self, server: &str, issuer: &str) -> Option<Client> {
        let _one = self.lock.lock().ok()?;
        match self.grants(server) {
            Ok(Some(list)) => match list.get(issuer) {
                Some(g) => Some(g.client.clone()),
                None => self.file.client(server, issuer),
            },
            Ok(None) | Err(()) => self.file.client(server, issuer),
        }
    }

    fn save(&self, server: &str, grant: &Grant) -> Result<(), String> {
        let _one = self.lock.lock().map_err(|e| e.to_string())?;
        let Ok(found) = self.grants(server) else {
            return self.file.save(server, grant);
        };
        let mut list = match found {
            Some(list) => list,
            // Registrations the file kept (from before) move over with the new grant.
            None => {
                let _file = self.file.lock.lock().map_err(|e| e.to_string())?;
                self.file
                    .read()
                    .ok()
                    .and_then(|mut f| f.servers.remove(server))
                    .unwrap_or_default()
            }
        };
        put(&mut list, grant);
        let text = serde_json::to_string(&list).map_err(|e| e.to_string())?;
        match self.system.set(&Self::account(server), &text) {
            Ok(()) => {
                if let Err(e) = self.file.forget(server) {
                    tracing::warn!(target: "mcp", "{e}");
                }
                Ok(())
            }
            Err(e) => {
                self.fall_back(&e);
                self.file.save(server, grant)
            }
        }
    }

    fn forget(&self, server: &str) -> Result<bool, String> {
        let _one = self.lock.lock().map_err(|e| e.to_string())?;
        let system = match self.system.delete(&Self::account(server)) {
            Ok(had) => had,
            Err(e) => {
                self.fall_back(&e);
                false
            }
        };
        Ok(self.file.forget(server)? || system)
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
            dpop: None,
            id_token: None,
        }
    }

    #[test]
    fn a_replaced_grant_keeps_no_dpop_key() {
        let mut list = Grants::new();
        let mut a = grant("http://a", "t1");
        a.dpop = Some(harness9_actors::oauth::dpop::Dpop::generate().unwrap());
        put(&mut list, &a);
        assert!(current(&list).unwrap().dpop.is_some());
        put(&mut list, &grant("http://b", "t2"));
        assert!(
            list["http://a"].dpop.is_none(),
            "the key went with its tokens"
        );
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

    /// A credential store in memory, or one that always fails (a locked keychain).
    struct Secrets {
        map: Mutex<BTreeMap<String, String>>,
        fail: bool,
    }

    impl Secrets {
        fn new(fail: bool) -> Box<Secrets> {
            Box::new(Secrets {
                map: Mutex::new(BTreeMap::new()),
                fail,
            })
        }
        fn check(&self) -> Result<(), String> {
            match self.fail {
                true => Err("cannot read \"x\" in the test store: the store is locked".into()),
                false => Ok(()),
            }
        }
    }

    impl SecretStore for Secrets {
        fn name(&self) -> &'static str {
            "the test store"
        }
        fn get(&self, account: &str) -> Result<Option<String>, String> {
            self.check()?;
            Ok(self.map.lock().unwrap().get(account).cloned())
        }
        fn set(&self, account: &str, secret: &str) -> Result<(), String> {
            self.check()?;
            self.map
                .lock()
                .unwrap()
                .insert(account.into(), secret.into());
            Ok(())
        }
        fn delete(&self, account: &str) -> Result<bool, String> {
            self.check()?;
            Ok(self.map.lock().unwrap().remove(account).is_some())
        }
    }

    fn temp_file(tag: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("h9-oauth-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (dir.join("oauth.json"), dir)
    }

    /// What `f` logs at warning level and above (this thread only).
    fn warnings_of(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let out = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || out.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8_lossy(&sink.0.lock().unwrap()).into_owned();
        text
    }

    #[test]
    fn a_failing_credential_store_falls_back_to_the_file() {
        let (path, dir) = temp_file("failing");
        let s = SystemStore::new(Secrets::new(true), FileStore::new(path.clone()));
        let said = warnings_of(|| {
            s.save("http://h/mcp", &grant("http://as1", "t1")).unwrap();
            s.save("http://h/mcp", &grant("http://as1", "t2")).unwrap();
            s.save("http://h/mcp", &grant("http://as1", "t1")).unwrap();
        });
        // The promised warning: the store, why, and where the tokens are kept instead; once.
        let warning = format!(
            "the store is locked; OAuth tokens are kept in the file {} (0600) instead",
            path.display()
        );
        assert!(said.contains(&warning), "{said}");
        assert_eq!(
            said.matches("OAuth tokens are kept in the file").count(),
            1,
            "{said}"
        );
        assert_eq!(s.load("http://h/mcp").unwrap().access_token, "t1");
        assert_eq!(
            s.client("http://h/mcp", "http://as1").unwrap().client_id,
            "c"
        );
        // The grant is in the private file.
        let file = FileStore::new(path.clone());
        assert_eq!(file.load("http://h/mcp").unwrap().access_token, "t1");
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&path).unwrap());
        assert_eq!(mode & 0o777, 0o600);
        assert!(s.forget("http://h/mcp").unwrap());
        assert!(s.load("http://h/mcp").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_working_credential_store_keeps_the_grants_and_empties_the_file() {
        let (path, dir) = temp_file("working");
        // A grant saved in the file before (or during a fallback) is found, then moves over.
        FileStore::new(path.clone())
            .save("http://h/mcp", &grant("http://as1", "old"))
            .unwrap();
        let s = SystemStore::new(Secrets::new(false), FileStore::new(path.clone()));
        assert_eq!(s.load("http://h/mcp").unwrap().access_token, "old");
        s.save("http://h/mcp", &grant("http://as2", "t2")).unwrap();
        assert_eq!(s.load("http://h/mcp").unwrap().access_token, "t2");
        // The other issuer's registration came over; no token stays in the file.
        assert_eq!(
            s.client("http://h/mcp", "http://as1").unwrap().client_id,
            "c"
        );
        assert!(FileStore::new(path.clone()).load("http://h/mcp").is_none());
        let kept = s.system.get("oauth http://h/mcp").unwrap().unwrap();
        assert!(kept.contains("t2"), "{kept}");
        assert!(s.forget("http://h/mcp").unwrap());
        assert!(!s.forget("http://h/mcp").unwrap());
        assert!(s.load("http://h/mcp").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
