//! Where the settings files are: the project's `./harness9.toml` and the user's own file
//! (or a `--settings` file alone), found and read.

use std::path::{Path, PathBuf};

use super::{ModelFlags, SettingsError};

/// Where the user's settings file is looked for: `flags.config_path` alone when given, else
/// `./harness9.toml`, then `$XDG_CONFIG_HOME/harness9/config.toml` (or the system's place:
/// `~/.config/harness9/config.toml` on Linux, `harness9_platform::dirs`).
pub fn candidate_paths(
    flags: &ModelFlags,
    env: &dyn Fn(&str) -> Option<String>,
    cwd: &Path,
) -> Vec<PathBuf> {
    if let Some(p) = &flags.config_path {
        return vec![p.clone()];
    }
    let mut out = vec![cwd.join("harness9.toml")];
    if let Some(dir) = harness9_platform::dirs::config_dir_in(&|k| env(k).map(Into::into)) {
        out.push(dir.join("config.toml"));
    }
    out
}

/// The user's own settings file, where `allow` rules, a looser `[permissions] shell` or
/// `[mcp] sandbox` and the endpoint go (a project's `./harness9.toml` may not set them): the
/// `--settings` file when given, else `config.toml` in the configuration directory
/// (`~/.config/harness9/config.toml` on Linux, `harness9_platform::dirs`); `None` when no
/// such directory is known.
pub fn user_settings_file(flags: &ModelFlags) -> Option<PathBuf> {
    if let Some(p) = &flags.config_path {
        return Some(p.clone());
    }
    harness9_platform::dirs::config_dir().map(|d| d.join("config.toml"))
}

/// The user's own settings file as a hint names it: `your own settings file (PATH)`.
pub fn own_settings(file: Option<&Path>) -> String {
    match file {
        Some(p) => format!("your own settings file ({})", p.display()),
        None => "your own settings file".to_owned(),
    }
}

/// The settings files that apply, as (path, text): the user's own file and the project's
/// `./harness9.toml`. A `--settings` file (`flags.config_path`) is the user's file alone.
#[derive(Debug, Default)]
pub(super) struct Layers {
    pub(super) user: Option<(PathBuf, String)>,
    pub(super) project: Option<(PathBuf, String)>,
}

/// Reads the files of [`candidate_paths`] that exist: the first (`./harness9.toml`) is the
/// project's, the other the user's; a `flags.config_path` is the user's and must exist.
pub(super) fn read_layers(flags: &ModelFlags) -> Result<Layers, SettingsError> {
    let env = |k: &str| std::env::var(k).ok();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let read = |path: PathBuf| match harness9_base::read::read_regular(
        &path,
        harness9_base::read::MAX_TEXT_BYTES,
    ) {
        Ok(text) => Ok(Some((path, text))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && flags.config_path.is_none() => {
            Ok(None)
        }
        Err(e) => Err(SettingsError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    };
    let mut paths = candidate_paths(flags, &env, &cwd).into_iter();
    if flags.config_path.is_some() {
        return Ok(Layers {
            user: paths.next().map(read).transpose()?.flatten(),
            project: None,
        });
    }
    let project = paths.next().map(read).transpose()?.flatten();
    let user = paths.next().map(read).transpose()?.flatten();
    Ok(Layers { user, project })
}
