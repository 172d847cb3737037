//! Where harness9 keeps its configuration (`mcp.json`, `config.toml`) and its state
//! (approvals, tokens, sessions, the history, caches), in each system's usual place:
//!
//! | | config | state |
//! |---|---|---|
//! | Linux (XDG) | `~/.config/harness9` | `~/.local/state/harness9` |
//! | macOS | `~/Library/Application Support/harness9` | `~/Library/Application Support/harness9/state` |
//! | Windows | `%APPDATA%\harness9` | `%LOCALAPPDATA%\harness9` |
//!
//! `$XDG_CONFIG_HOME` and `$XDG_STATE_HOME` are honoured everywhere when set to an absolute
//! path (a relative one is ignored, as the XDG spec says). The layout is a pure function of
//! the environment ([`config_dir_in`], [`state_dir_in`]), so every system's is tested here.

use std::ffi::OsString;
use std::path::PathBuf;

/// The directory name under the system's base.
const NAME: &str = "harness9";

/// Which system's places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// XDG base directories (Linux and other Unix).
    Xdg,
    /// `~/Library/Application Support`.
    MacOs,
    /// `%APPDATA%` and `%LOCALAPPDATA%`.
    Windows,
}

/// This build's layout.
const LAYOUT: Layout = if cfg!(target_os = "macos") {
    Layout::MacOs
} else if cfg!(windows) {
    Layout::Windows
} else {
    Layout::Xdg
};

/// A variable's value when it is an absolute path.
fn absolute(env: &dyn Fn(&str) -> Option<OsString>, key: &str) -> Option<PathBuf> {
    env(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// A variable's value when it is set and not empty.
fn non_empty(env: &dyn Fn(&str) -> Option<OsString>, key: &str) -> Option<PathBuf> {
    env(key).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn config_for(layout: Layout, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(x) = absolute(env, "XDG_CONFIG_HOME") {
        return Some(x.join(NAME));
    }
    match layout {
        Layout::Xdg => Some(non_empty(env, "HOME")?.join(".config").join(NAME)),
        Layout::MacOs => Some(application_support(env)?.join(NAME)),
        Layout::Windows => Some(non_empty(env, "APPDATA")?.join(NAME)),
    }
}

fn state_for(layout: Layout, env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(x) = absolute(env, "XDG_STATE_HOME") {
        return Some(x.join(NAME));
    }
    match layout {
        Layout::Xdg => Some(
            non_empty(env, "HOME")?
                .join(".local")
                .join("state")
                .join(NAME),
        ),
        Layout::MacOs => Some(application_support(env)?.join(NAME).join("state")),
        Layout::Windows => Some(non_empty(env, "LOCALAPPDATA")?.join(NAME)),
    }
}

/// `~/Library/Application Support`.
fn application_support(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    Some(
        non_empty(env, "HOME")?
            .join("Library")
            .join("Application Support"),
    )
}

/// harness9's configuration directory with `env` as the environment; `None` when the
/// variables it needs (`HOME`; `APPDATA` on Windows) are not set.
pub fn config_dir_in(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    config_for(LAYOUT, env)
}

/// harness9's configuration directory (the table above); `None` without `HOME`.
pub fn config_dir() -> Option<PathBuf> {
    config_dir_in(&|k| std::env::var_os(k))
}

/// harness9's state directory with `env` as the environment; `None` when the variables it
/// needs are not set.
pub fn state_dir_in(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    state_for(LAYOUT, env)
}

/// harness9's state directory (the table above), else `harness9` in the temp directory.
pub fn state_dir() -> PathBuf {
    state_dir_in(&|k| std::env::var_os(k)).unwrap_or_else(|| std::env::temp_dir().join(NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn linux_keeps_the_xdg_places() {
        let home = env_of(&[("HOME", "/home/u")]);
        assert_eq!(
            config_for(Layout::Xdg, &home),
            Some(PathBuf::from("/home/u/.config/harness9"))
        );
        assert_eq!(
            state_for(Layout::Xdg, &home),
            Some(PathBuf::from("/home/u/.local/state/harness9"))
        );
        assert_eq!(config_for(Layout::Xdg, &env_of(&[])), None);
        assert_eq!(config_for(Layout::Xdg, &env_of(&[("HOME", "")])), None);
    }

    #[test]
    fn macos_uses_application_support() {
        let home = env_of(&[("HOME", "/Users/u")]);
        assert_eq!(
            config_for(Layout::MacOs, &home),
            Some(PathBuf::from(
                "/Users/u/Library/Application Support/harness9"
            ))
        );
        assert_eq!(
            state_for(Layout::MacOs, &home),
            Some(PathBuf::from(
                "/Users/u/Library/Application Support/harness9/state"
            ))
        );
    }

    #[test]
    fn windows_uses_appdata_and_localappdata() {
        let env = env_of(&[
            ("APPDATA", "C:\\Users\\u\\AppData\\Roaming"),
            ("LOCALAPPDATA", "C:\\Users\\u\\AppData\\Local"),
        ]);
        assert_eq!(
            config_for(Layout::Windows, &env),
            Some(PathBuf::from("C:\\Users\\u\\AppData\\Roaming").join("harness9"))
        );
        assert_eq!(
            state_for(Layout::Windows, &env),
            Some(PathBuf::from("C:\\Users\\u\\AppData\\Local").join("harness9"))
        );
    }

    /// An absolute path on the system the test runs on: `/x` is not one on Windows (no drive),
    /// where the tests run too (under Wine in CI).
    fn absolute_root() -> PathBuf {
        std::env::temp_dir().join("x")
    }

    #[test]
    fn xdg_variables_are_honoured_everywhere_when_absolute() {
        let root = absolute_root();
        let (config, state) = (root.join("config"), root.join("state"));
        let env = env_of(&[
            ("HOME", "/Users/u"),
            ("XDG_CONFIG_HOME", config.to_str().unwrap_or_default()),
            ("XDG_STATE_HOME", state.to_str().unwrap_or_default()),
        ]);
        for layout in [Layout::Xdg, Layout::MacOs, Layout::Windows] {
            assert_eq!(config_for(layout, &env), Some(config.join("harness9")));
            assert_eq!(state_for(layout, &env), Some(state.join("harness9")));
        }
        let relative = env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "rel")]);
        assert_eq!(
            config_for(Layout::Xdg, &relative),
            Some(PathBuf::from("/home/u").join(".config").join("harness9"))
        );
    }
}
