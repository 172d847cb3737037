//! Secrets in the operating system's credential store: the Keychain on macOS, the Credential
//! Manager on Windows (the `keyring` crate), none on Linux (harness9 keeps its private 0600
//! files there). A store is a [`SecretStore`]: one secret per account of one service. What a
//! caller does when the store fails (a locked keychain, no login session) is its policy: the
//! OAuth store falls back to its file with a warning naming why.

#[cfg(any(target_os = "macos", windows))]
mod keyring;

/// The service name harness9's secrets are kept under.
pub const SERVICE: &str = "harness9";

/// A credential store: text secrets named by an account, under one service. Every error is a
/// sentence naming the store and what failed.
pub trait SecretStore: Send + Sync {
    /// What users call it: `the macOS Keychain`, `the Windows Credential Manager`.
    fn name(&self) -> &'static str;
    /// The secret of `account`, `None` when there is none.
    fn get(&self, account: &str) -> Result<Option<String>, String>;
    /// Keeps `secret` as `account`'s, replacing any.
    fn set(&self, account: &str, secret: &str) -> Result<(), String>;
    /// Removes `account`'s secret; whether there was one.
    fn delete(&self, account: &str) -> Result<bool, String>;
}

/// This system's credential store for `service`, `None` where harness9 uses none (Linux).
pub fn system_store(service: &str) -> Option<Box<dyn SecretStore>> {
    #[cfg(any(target_os = "macos", windows))]
    {
        Some(Box::new(keyring::Keyring::new(service)))
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        let _ = service;
        None
    }
}

#[cfg(test)]
mod tests {
    #[cfg(not(any(target_os = "macos", windows)))]
    #[test]
    fn linux_keeps_no_credential_store() {
        assert!(super::system_store(super::SERVICE).is_none());
    }
}
