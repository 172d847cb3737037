//! The credential store through the `keyring` crate: the Keychain (`apple-native`) on macOS,
//! the Credential Manager (`windows-native`) on Windows.

use keyring::{Entry, Error};

use super::SecretStore;

/// One service's secrets in the system's store.
pub(super) struct Keyring {
    service: String,
}

impl Keyring {
    pub(super) fn new(service: &str) -> Keyring {
        Keyring {
            service: service.to_owned(),
        }
    }

    fn entry(&self, account: &str) -> Result<Entry, String> {
        Entry::new(&self.service, account).map_err(|e| self.failed("open", account, &e))
    }

    fn failed(&self, what: &str, account: &str, e: &Error) -> String {
        format!(
            "cannot {what} {account:?} in {}: {}",
            self.name(),
            describe(e)
        )
    }
}

/// The error in plain words, starting lowercase, without a trailing period.
fn describe(e: &Error) -> String {
    let text = match e {
        Error::NoStorageAccess(inner) => {
            format!("the store is not reachable (locked, or no login session: {inner})")
        }
        Error::PlatformFailure(inner) => inner.to_string(),
        Error::TooLong(what, max) => format!("the {what} is longer than the store's {max}"),
        other => other.to_string(),
    };
    let text = text.trim_end_matches('.');
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

impl SecretStore for Keyring {
    fn name(&self) -> &'static str {
        if cfg!(windows) {
            "the Windows Credential Manager"
        } else {
            "the macOS Keychain"
        }
    }

    fn get(&self, account: &str) -> Result<Option<String>, String> {
        match self.entry(account)?.get_password() {
            Ok(s) => Ok(Some(s)),
            Err(Error::NoEntry) => Ok(None),
            Err(e) => Err(self.failed("read", account, &e)),
        }
    }

    fn set(&self, account: &str, secret: &str) -> Result<(), String> {
        self.entry(account)?
            .set_password(secret)
            .map_err(|e| self.failed("write", account, &e))
    }

    fn delete(&self, account: &str) -> Result<bool, String> {
        match self.entry(account)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(Error::NoEntry) => Ok(false),
            Err(e) => Err(self.failed("delete", account, &e)),
        }
    }
}
