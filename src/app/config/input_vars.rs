//! VS Code's `${input:ID}` values the user gave: asked once in the TUI and kept in a private
//! (0600) JSON file, `$HARNESS9_INPUTS`, else `$XDG_STATE_HOME/harness9/inputs.json`
//! (`~/.local/state/...`), keyed by the config file's canonical path and the input's id.
//! Loading a config looks an input up in the environment first ([`super::input_var`]),
//! then here; written like the OAuth store ([`crate::edit::write_private`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The variable that names the store file (tests point it at a temp file).
pub const ENV: &str = "HARNESS9_INPUTS";

/// Where input values are kept: `$HARNESS9_INPUTS`, else the state directory's `inputs.json`.
pub fn store_path() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::stores::state_dir().join("inputs.json"),
    }
}

/// An input a config's servers need and that has no value yet: what the TUI asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputPrompt {
    /// The config file that declares (or uses) it.
    pub file: PathBuf,
    /// The input's id (`${input:ID}`).
    pub id: String,
    /// Its `description` in the file's `inputs`, else empty.
    pub description: String,
    /// `"password": true`: typed without echo.
    pub password: bool,
    /// The servers whose entries use it (the prompt names them).
    pub servers: Vec<String>,
}

/// The file's shape: config key -> input id -> value.
type StoreFile = BTreeMap<String, BTreeMap<String, String>>;

fn read(path: &Path) -> Result<StoreFile, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            format!(
                "the inputs file {} is not valid ({e}); fix or delete it",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile::new()),
        Err(e) => Err(format!(
            "cannot read the inputs file {}: {e}",
            path.display()
        )),
    }
}

/// The value kept in `store` for input `id` of config file `config`.
pub fn get(store: &Path, config: &Path, id: &str) -> Option<String> {
    let file = read(store).inspect_err(|e| tracing::warn!("{e}")).ok()?;
    file.get(&super::trust::config_key(config))?
        .get(id)
        .cloned()
}

/// Keeps `value` for input `id` of config file `config` in `store` (created 0600).
pub fn save(store: &Path, config: &Path, id: &str, value: &str) -> Result<(), String> {
    let mut file = read(store)?;
    file.entry(super::trust::config_key(config))
        .or_default()
        .insert(id.to_owned(), value.to_owned());
    let body = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    crate::edit::write_private(store, &body)
        .map_err(|e| format!("cannot write the inputs file {}: {e}", store.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_kept_privately_per_config_file_and_id() {
        let dir = std::env::temp_dir().join(format!("h9-inputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = dir.join("state/inputs.json");
        let (a, b) = (dir.join("a.json"), dir.join("b.json"));
        assert_eq!(get(&store, &a, "key"), None);
        save(&store, &a, "key", "s3cret").unwrap();
        save(&store, &b, "key", "other").unwrap();
        save(&store, &a, "key", "s3cret2").unwrap();
        assert_eq!(get(&store, &a, "key").as_deref(), Some("s3cret2"));
        assert_eq!(get(&store, &b, "key").as_deref(), Some("other"));
        assert_eq!(get(&store, &a, "nope"), None);
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&store).unwrap());
        assert_eq!(mode & 0o777, 0o600);
        // A broken file is an error when saving, nothing when reading.
        std::fs::write(&store, "{").unwrap();
        assert_eq!(get(&store, &a, "key"), None);
        assert!(save(&store, &a, "key", "v")
            .unwrap_err()
            .contains("not valid"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
