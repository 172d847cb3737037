//! Reading a config file: only a regular file of a bounded size (a config, env or settings
//! file named by a repository is not trusted to be small), Codex's TOML refused with a clear
//! error, the text handed to [`parse`] with the file's `${...}` lookups.

use std::path::Path;

use super::entry::EntryDefaults;
use super::formats::{file_lookup, looks_like_toml};
use super::parse::parse;
use super::sources::workspace_root;
use super::types::{Config, ConfigError};

/// The largest config, env or settings file read (a repository's file is not trusted to be
/// small): 4 MiB.
pub const MAX_CONFIG_BYTES: u64 = harness9_base::read::MAX_TEXT_BYTES;

pub use harness9_base::read::read_regular;

/// Loads `path`. A missing file is an empty config unless `must_exist`; what an entry does not
/// say comes from `defaults`.
pub fn load(
    path: &Path,
    must_exist: bool,
    defaults: &EntryDefaults,
) -> Result<Config, ConfigError> {
    let shown = path.display().to_string();
    let text = match read_regular(path, MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => {
            return Ok(Config {
                path: path.to_owned(),
                ..Config::default()
            })
        }
        Err(e) => {
            return Err(ConfigError::Read {
                path: shown,
                message: e.to_string(),
            })
        }
    };
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    if looks_like_toml(&text) {
        let file = shell_word(&shown);
        return Err(ConfigError::Syntax {
            path: shown,
            line: 1,
            column: 1,
            message: format!(
                "this is TOML (Codex's config.toml format?), and harness9 reads JSON: convert it with `harness9 mcp import --from codex --file {file}`, or put the servers of [mcp_servers.NAME] in .mcp.json as {{\"mcpServers\": {{\"NAME\": {{\"command\": ..., \"args\": [...], \"env\": {{...}}}}}}}}",
            ),
        });
    }
    let root = workspace_root(&base).unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    parse(
        &text,
        &shown,
        &base,
        &file_lookup(root, path.to_owned()),
        defaults,
    )
}

/// `s` as one POSIX shell word: as is when it holds only plain characters, else single-quoted.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
