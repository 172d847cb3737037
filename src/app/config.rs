//! `.mcp.json`: parsing with file/line/column errors, `${VAR}` expansion, and conversion into the
//! runtime's `ServerSpec`s. Only a file that is not JSON, or whose `mcpServers` is not an object
//! of servers, fails as a whole; an error inside one server's entry fails that server alone.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::config_formats::{declared_inputs, file_lookup, foreign_fields, looks_like_toml};
pub use super::config_formats::{foreign_reason, input_var};
use harness9_actors::{Hold, ServerSpec, TransportSpec};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::config_entry::*;
pub use super::config_entry::{EntryDefaults, SandboxField};

mod build;
mod expand;
mod grant;
mod read;
mod scan;

use build::{build, held_transport, validate, written_form, Lookups};
pub use expand::expand;
pub use grant::enterprise_idp;
pub use read::{read_regular, MAX_CONFIG_BYTES};
use scan::{bare, line_col, server_positions};

/// The default config file, relative to the working directory.
pub const DEFAULT_PATH: &str = ".mcp.json";

/// A loaded config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Where it was read from.
    pub path: PathBuf,
    /// Every enabled server, in file order. A server whose entry is invalid (unset variable,
    /// bad field, missing command or url, bad timeout) is here with `hold` =
    /// `Hold::Invalid(message)`: it fails alone, the others start.
    pub servers: Vec<ServerSpec>,
    /// Names of servers marked `disabled`.
    pub disabled: Vec<String>,
    /// Values that must never reach a log or trace: every `${...}` value, env, `envFile` and
    /// header values, a scheme-prefixed header's token, OAuth client secrets.
    pub secrets: Vec<String>,
    /// Every value a `${VAR}` expanded to, with its written form (`${VAR}`): what a printed
    /// URL, command or error shows instead of the value.
    pub expansions: Vec<(String, String)>,
    /// Servers that come from another file than `path` (the user file), with that file.
    pub sources: Vec<(String, PathBuf)>,
    /// VS Code inputs (`${input:ID}`) that servers need and that have no value: the TUI asks
    /// for them; their servers are held with an error naming the environment variable.
    pub inputs: Vec<super::input_vars::InputPrompt>,
    /// Other files the servers' specs were read from (`envFile`s): a sandbox grant that covers
    /// one exposes the config (see `trust::load_guarded`).
    pub read_files: Vec<PathBuf>,
    /// One line per thing the file has that is ignored but should not be ignored silently
    /// (another tool's field, both `mcpServers` and `servers`), naming the file. Logged when
    /// parsed (stderr headless); the TUI shows them in its transcript.
    pub warnings: Vec<String>,
    /// Each server's entry as the file writes it (by server name): what a project approval
    /// covers ([`crate::trust::fingerprint`]) and what an unapproved server shows.
    pub written: Vec<(String, Written)>,
}

/// One server entry as its file writes it, before any of the user's values is put in.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The entry's JSON, keys sorted (every field, including those harness9 does not read).
    pub entry: serde_json::Value,
    /// The transport built from the entry with every `${VAR}` and `${input:ID}` left as
    /// written (only `${workspaceFolder}` resolved, as it names the project) and `envFile`
    /// read: what will be sent, without the user's values. `None` when the entry does not
    /// build even so (it is held as invalid).
    pub transport: Option<TransportSpec>,
    /// The `envFile` the entry names, resolved (read into `transport`'s env).
    pub env_file: Option<PathBuf>,
    /// The inputs the entry uses, as the file declares them: (id, description, password).
    pub inputs: Vec<(String, String, bool)>,
}

impl Config {
    /// The written form of server `name`'s entry, when it has one.
    pub fn written(&self, name: &str) -> Option<&Written> {
        self.written.iter().find(|(n, _)| n == name).map(|(_, w)| w)
    }
}

/// Why a config could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The io error.
        message: String,
    },
    /// Invalid JSON or an invalid field, at a position.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A `${VAR}` that cannot be expanded.
    #[error("{path}: server \"{server}\", field {field}: {message}")]
    Expand {
        /// The file.
        path: String,
        /// The server.
        server: String,
        /// The field (`args[1]`, `env.TOKEN`, ...).
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// An error in an `oauth` field, at the line and column of that field's key in the entry
/// (which starts at byte `start` of `text`), or of the `oauth` key for a missing field; any
/// other error as it is.
fn at_oauth_field(e: ConfigError, text: &str, start: usize, entry: &str) -> ConfigError {
    let ConfigError::Expand {
        path,
        server,
        field,
        message,
    } = e
    else {
        return e;
    };
    let key = field.strip_prefix("oauth.").map(|k| format!("\"{k}\""));
    // The field's key, else (a field that is missing) the `oauth` key.
    let at = key.as_deref().and_then(|k| {
        let oauth = entry.find("\"oauth\"")?;
        Some(entry[oauth..].find(k).map_or(oauth, |i| oauth + i))
    });
    match at {
        Some(i) => {
            let (line, column) = line_col(text, start + i);
            ConfigError::Syntax {
                path,
                line,
                column,
                message: format!("server \"{server}\", field {field}: {message}"),
            }
        }
        None => ConfigError::Expand {
            path,
            server,
            field,
            message,
        },
    }
}

/// The longest timeout a config or flag may give, in seconds (24 h): `Duration::from_secs_f64`
/// panics on huge values, and a longer bound is no bound.
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// A timeout in seconds from the user (config field or flag named `field`), checked: positive,
/// finite, at most [`MAX_TIMEOUT_SECS`].
pub fn timeout_secs(field: &str, t: f64) -> Result<Duration, String> {
    if t > 0.0 && t <= MAX_TIMEOUT_SECS {
        Ok(Duration::from_secs_f64(t))
    } else {
        Err(format!(
            "{field} is {t}; give a positive number of seconds up to {MAX_TIMEOUT_SECS} (24 h)"
        ))
    }
}

/// Every server entry as raw JSON text borrowed from the file: each is parsed on its own, so
/// one bad entry fails only its server.
struct Servers<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Servers<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Servers<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of servers by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Servers<'a>, A::Error> {
                let mut out: Vec<(String, &'a RawValue)> = Vec::new();
                while let Some(name) = m.next_key::<String>()? {
                    let raw: &'a RawValue = m.next_value()?;
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!(
                            "server \"{name}\" is defined twice"
                        )));
                    }
                    out.push((name, raw));
                }
                Ok(Servers(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile<'a> {
    #[serde(default, borrow)]
    mcp_servers: Option<Servers<'a>>,
    /// VS Code's `.vscode/mcp.json` shape (with `inputs`, whose `${input:id}` values come from
    /// the environment, see [`input_var`], or the TUI's prompt).
    #[serde(default, borrow)]
    servers: Option<Servers<'a>>,
    /// VS Code's input declarations (id, description, password).
    #[serde(default, borrow)]
    inputs: Option<&'a RawValue>,
}

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

/// The project folder of a config file in `dir` (its directory): `dir` itself, or the folder
/// above it for VS Code's `.vscode/mcp.json`; `None` for an empty path (the working directory).
pub fn workspace_root(dir: &Path) -> Option<PathBuf> {
    let root = match dir.file_name() {
        Some(n) if n == ".vscode" => dir.parent().unwrap_or(dir),
        _ => dir,
    };
    (!root.as_os_str().is_empty()).then(|| root.to_path_buf())
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

/// Parses config text; `base` resolves relative `cwd`s, `defaults` gives what an entry does
/// not say.
pub fn parse(
    text: &str,
    shown: &str,
    base: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    defaults: &EntryDefaults,
) -> Result<Config, ConfigError> {
    let positions = || server_positions(text);
    let file: RawFile = serde_json::from_str(text).map_err(|e| {
        // Name the server whose entry holds the error position.
        let owner = positions()
            .into_iter()
            .rev()
            .find(|(_, l, c)| (*l, *c) <= (e.line(), e.column()))
            .map(|(name, ..)| format!("server \"{name}\": "))
            .unwrap_or_default();
        ConfigError::Syntax {
            path: shown.to_owned(),
            line: e.line(),
            column: e.column(),
            message: format!("{owner}{}", bare(&e)),
        }
    })?;
    let mut config = Config {
        path: PathBuf::from(shown),
        ..Config::default()
    };
    // Inputs looked up without a value, with the servers that need them: asked for in the TUI.
    let missing = std::cell::RefCell::new(Vec::<(String, Vec<String>)>::new());
    let current = std::cell::RefCell::new(String::new());
    let used = std::cell::RefCell::new(Vec::<String>::new());
    let recording = |v: &str| {
        let got = lookup(v);
        if let Some(id) = v.strip_prefix("input:") {
            let mut u = used.borrow_mut();
            if !u.iter().any(|x| x == id) {
                u.push(id.to_owned());
            }
        }
        if let (None, Some(id)) = (&got, v.strip_prefix("input:")) {
            let server = current.borrow().clone();
            let mut m = missing.borrow_mut();
            match m.iter_mut().find(|(x, _)| x == id) {
                Some((_, servers)) if !servers.contains(&server) => servers.push(server),
                Some(_) => {}
                None => m.push((id.to_owned(), vec![server])),
            }
        }
        got
    };
    let lookup: &dyn Fn(&str) -> Option<String> = &recording;
    // The written form: every reference as written, but `${workspaceFolder}` (where the project
    // is) resolved; input ids are still recorded as used.
    let literal = |v: &str| {
        if v == "workspaceFolder" {
            return lookup(v);
        }
        if let Some(id) = v.strip_prefix("input:") {
            let mut u = used.borrow_mut();
            if !u.iter().any(|x| x == id) {
                u.push(id.to_owned());
            }
        }
        Some(format!("${{{v}}}"))
    };
    let declared = declared_inputs(file.inputs);
    let entries = match (file.mcp_servers, file.servers) {
        (Some(m), Some(_)) => {
            config.warnings.push(format!(
                "{shown}: both \"mcpServers\" and \"servers\"; \"servers\" is ignored"
            ));
            m.0
        }
        (Some(m), None) => m.0,
        (None, Some(v)) => v.0,
        (None, None) => Vec::new(),
    };
    for (name, value) in entries {
        config.warnings.extend(foreign_fields(shown, &name, value));
        // An error in one entry fails that server only (its spec is held as `Invalid`).
        let held = |message: String| {
            let mut spec = ServerSpec::stdio(&name, "", Vec::new());
            // Shown with the transport its entry asks for (a failed HTTP server is not "stdio").
            if let Some(transport) = held_transport(value.get()) {
                spec.transport = transport;
            }
            spec.hold = Some(Hold::Invalid(message));
            spec
        };
        let at_key = || {
            positions()
                .into_iter()
                .find(|(n, ..)| *n == name)
                .map(|(_, l, c)| (l, c))
                .unwrap_or((1, 1))
        };
        if let Some(problem) = name_problem(&name) {
            if is_disabled(value) {
                config.disabled.push(name);
                continue;
            }
            let (line, column) = at_key();
            let message = ConfigError::Syntax {
                path: shown.to_owned(),
                line,
                column,
                message: problem,
            };
            config.servers.push(held(message.to_string()));
            continue;
        }
        let raw = match serde_json::from_str::<RawServer>(value.get()) {
            Ok(raw) => raw,
            Err(e) => {
                if is_disabled(value) {
                    config.disabled.push(name);
                    continue;
                }
                // serde's position is within the entry: shift it to the file's.
                let start = (value.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
                let (l0, c0) = line_col(text, start);
                let (line, column) = match e.line() {
                    0 => (l0, c0),
                    1 => (l0, c0 + e.column().saturating_sub(1)),
                    l => (l0 + l - 1, e.column()),
                };
                let message = ConfigError::Syntax {
                    path: shown.to_owned(),
                    line,
                    column,
                    message: format!("server \"{name}\": {}", bare(&e)),
                };
                config.servers.push(held(message.to_string()));
                continue;
            }
        };
        if raw.disabled {
            config.disabled.push(name);
            continue;
        }
        if let Some(file) = &raw.env_file {
            if let Ok(file) = expand(file, lookup) {
                config.read_files.push(base.join(file));
            }
        }
        if let Some(problem) = validate(&raw) {
            let (line, column) = at_key();
            let message = ConfigError::Syntax {
                path: shown.to_owned(),
                line,
                column,
                message: format!("server \"{name}\" {problem}"),
            };
            config.servers.push(held(message.to_string()));
            continue;
        }
        *current.borrow_mut() = name.clone();
        used.borrow_mut().clear();
        let mut w = written_form(
            &name,
            value,
            shown,
            base,
            Lookups {
                values: &literal,
                paths: lookup,
            },
            defaults,
        );
        let mut secrets = Vec::new();
        let mut expansions = Vec::new();
        match build(
            &name,
            raw,
            shown,
            base,
            Lookups {
                values: lookup,
                paths: lookup,
            },
            defaults,
            &mut secrets,
            &mut expansions,
        ) {
            Ok(spec) => {
                config.secrets.append(&mut secrets);
                config.expansions.append(&mut expansions);
                config.servers.push(spec);
            }
            Err(e) => {
                let start = (value.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
                config.servers.push(held(
                    at_oauth_field(e, text, start, value.get()).to_string(),
                ))
            }
        }
        w.inputs = used
            .borrow()
            .iter()
            .map(|id| {
                let (description, password) = declared.get(id).cloned().unwrap_or_default();
                (id.clone(), description, password)
            })
            .collect();
        config.written.push((name, w));
    }
    config.inputs = missing
        .into_inner()
        .into_iter()
        .map(|(id, servers)| {
            let (description, password) = declared.get(&id).cloned().unwrap_or_default();
            super::input_vars::InputPrompt {
                file: PathBuf::from(shown),
                id,
                description,
                password,
                servers,
            }
        })
        .collect();
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    Ok(config)
}

/// Why `name` cannot be a server's name, if it cannot. A name is the server's identity: rules
/// spell it as written (`mcp__{server}__{tool}`, `mcp__{server}__*`), so it holds only what a
/// rule can hold, letters, digits, `.`, `-` and `_`, and never `__` or a last `_`, which would
/// make `mcp__a___x` (or `mcp__a__b__x`) mean two servers' tools.
pub fn name_problem(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        && !name.contains("__")
        && !name.ends_with('_');
    (!ok).then(|| {
        format!(
            "server {name:?}: a server's name may hold only letters, digits, \".\", \"-\" and single \"_\" (no \"__\", not at its end), as permission rules spell it (mcp__{{server}}__{{tool}}); rename it"
        )
    })
}

/// Whether an entry that does not parse still says `"disabled": true` (then it is just off).
fn is_disabled(value: &RawValue) -> bool {
    serde_json::from_str::<serde_json::Value>(value.get())
        .is_ok_and(|v| v.get("disabled") == Some(&serde_json::Value::Bool(true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness9_actors::oauth::OAuthConfig;
    use harness9_actors::{Roots, SandboxSpec};

    fn env(v: &str) -> Option<String> {
        match v {
            "HOME" => Some("/home/u".into()),
            "TOKEN" => Some("s3cret-token".into()),
            _ => None,
        }
    }

    fn p(text: &str) -> Result<Config, ConfigError> {
        parse(
            text,
            ".mcp.json",
            Path::new("/proj"),
            &env,
            &EntryDefaults::in_memory(),
        )
    }

    #[test]
    fn a_name_rules_cannot_spell_exactly_holds_its_server() {
        for ok in ["github", "brave.search", "brave-search", "a_b", "_a", "A1"] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "my server",
            "a__b",
            "a_",
            "*",
            "é",
            "a/b",
            "n\u{1b}[31m",
        ] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
        let c = p(r#"{"mcpServers": {"a__b": {"command": "x"}, "ok": {"command": "x"}, "x y": {"command": "x", "disabled": true}}}"#).unwrap();
        let Some(Hold::Invalid(why)) = &c.servers[0].hold else {
            panic!("{:?}", c.servers[0])
        };
        assert!(
            why.starts_with(".mcp.json:1:17: server \"a__b\": a server's name may hold only"),
            "{why}"
        );
        assert_eq!(c.servers[1].hold, None);
        assert_eq!(c.disabled, ["x y"]);
    }

    #[test]
    fn parses_every_field_and_infers_the_type() {
        let c = p(r#"{"mcpServers": {
            "a": {"command": "npx", "args": ["-y", "${HOME}/x"], "env": {"K": "${TOKEN}"}, "cwd": "sub",
                  "startupTimeoutSec": 5, "toolTimeoutSec": 1.5, "toolIdleTimeoutSec": 2, "taskTimeoutSec": 90,
                  "enabledTools": ["echo"], "disabledTools": ["x"]},
            "b": {"command": "srv", "env": ["A=1", "B=x=y"]},
            "c": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "d": {"type": "sse", "url": "http://h/sse"},
            "e": {"command": "off", "disabled": true}
        }}"#)
        .unwrap();
        assert_eq!(c.servers.len(), 4);
        assert_eq!(c.disabled, vec!["e".to_owned()]);
        let a = &c.servers[0];
        assert_eq!(
            a.transport,
            TransportSpec::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "/home/u/x".into()],
                env: vec![("K".into(), "s3cret-token".into())],
                cwd: Some(PathBuf::from("/proj/sub")),
            }
        );
        assert_eq!(a.startup_timeout, Duration::from_secs(5));
        assert_eq!(a.tool_timeout, Duration::from_millis(1500));
        assert_eq!(a.tool_idle_timeout, Some(Duration::from_secs(2)));
        assert_eq!(a.task_timeout, Duration::from_secs(90));
        assert!(a.tool_enabled("echo") && !a.tool_enabled("x") && !a.tool_enabled("y"));
        let TransportSpec::Stdio { env, .. } = &c.servers[1].transport else {
            panic!()
        };
        assert_eq!(
            env,
            &vec![("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
        assert_eq!(c.servers[2].transport.kind(), "http");
        assert_eq!(c.servers[3].transport.kind(), "sse");
        assert!(c.secrets.contains(&"Bearer s3cret-token".to_owned()));
        assert_eq!(c.servers[1].startup_timeout, Duration::from_secs(30));
        assert_eq!(c.servers[1].tool_timeout, Duration::from_secs(60));
        assert_eq!(c.servers[1].tool_idle_timeout, None);
        assert_eq!(
            c.servers[1].task_timeout,
            harness9_actors::spec::DEFAULT_TASK_TIMEOUT
        );
    }

    /// The message of the server `name`'s hold, when its entry is invalid.
    fn invalid<'a>(c: &'a Config, name: &str) -> Option<&'a str> {
        c.servers
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| match &s.hold {
                Some(Hold::Invalid(m)) => Some(m.as_str()),
                _ => None,
            })
    }

    #[test]
    fn errors_name_file_line_column_and_server() {
        // Not JSON: the whole file fails.
        let e = p("{\"mcpServers\": {\n  \"x\": {\"command\": \"a\",}\n}}")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(".mcp.json:2:"), "{e}");
        let e = p(r#"{"mcpServers": ["a"]}"#).unwrap_err().to_string();
        assert!(e.contains("an object of servers by name"), "{e}");
        // Inside one entry: that server fails, with the position in the file.
        let c = p("{\"mcpServers\": {\n  \"ws\": {\"type\": \"websocket\", \"url\": \"u\"}\n}}")
            .unwrap();
        let e = invalid(&c, "ws").unwrap();
        assert!(
            e.starts_with(".mcp.json:2:") && e.contains("server \"ws\"") && e.contains("websocket"),
            "{e}"
        );
        let c = p("{\"mcpServers\": {\n\n  \"empty\": {\"args\": []}\n}}").unwrap();
        let e = invalid(&c, "empty").unwrap();
        assert!(
            e.starts_with(".mcp.json:3:") && e.contains("server \"empty\" has neither"),
            "{e}"
        );
        let c = p(r#"{"mcpServers": {"s": {"command": "x", "args": ["${NOPE}"]}}}"#).unwrap();
        assert_eq!(
            invalid(&c, "s").unwrap(),
            ".mcp.json: server \"s\", field args[0]: environment variable NOPE is not set; set it or write ${NOPE:-default}"
        );
    }

    #[test]
    fn one_bad_entry_fails_only_its_server() {
        let c = p(r#"{"mcpServers": {
            "unset": {"command": "x", "env": {"T": "${NOPE}"}},
            "good": {"command": "srv", "env": {"K": "${TOKEN}"}},
            "badfield": {"command": "x", "args": 5},
            "nocmd": {"type": "stdio"},
            "notobj": 7,
            "off": {"command": 5, "disabled": true},
            "slow": {"command": "x", "toolTimeoutSec": 1e20}
        }}"#)
        .unwrap();
        let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["unset", "good", "badfield", "nocmd", "notobj", "slow"]
        );
        assert_eq!(c.disabled, ["off"]);
        assert!(c.servers[1].hold.is_none());
        assert!(invalid(&c, "unset")
            .unwrap()
            .contains("field env.T: environment variable NOPE"));
        let e = invalid(&c, "badfield").unwrap();
        assert!(
            e.starts_with(".mcp.json:4:")
                && e.contains("server \"badfield\": invalid type: integer `5`"),
            "{e}"
        );
        assert!(invalid(&c, "nocmd").unwrap().contains("has no \"command\""));
        assert!(invalid(&c, "notobj")
            .unwrap()
            .contains("server \"notobj\": invalid type"));
        assert_eq!(
            invalid(&c, "slow").unwrap(),
            ".mcp.json:8:13: server \"slow\" has a bad timeout: \"toolTimeoutSec\" is 100000000000000000000; give a positive number of seconds up to 86400 (24 h)"
        );
        // Only the good server's values are secrets.
        assert_eq!(c.secrets, ["s3cret-token"]);
    }

    #[test]
    fn oauth_entries() {
        let c = p(r#"{"mcpServers": {
            "o": {"url": "http://h/mcp", "oauth": {"clientId": "id", "clientSecret": "${TOKEN}",
                  "scopes": ["a", "b"], "callbackPort": 8765,
                  "clientMetadataUrl": "https://me.example/client.json",
                  "allowOrigins": ["http://10.0.0.9:8443"]}},
            "plain": {"url": "http://h/mcp"},
            "stdio": {"command": "x", "oauth": {}},
            "typo": {"url": "http://h/mcp", "oauth": {"client_id": "x"}}
        }}"#)
        .unwrap();
        let o = c.servers.iter().find(|s| s.name == "o").unwrap();
        let cfg = &o.oauth.as_ref().unwrap().config;
        assert_eq!(cfg.client_id.as_deref(), Some("id"));
        assert_eq!(cfg.client_secret.as_deref(), Some("s3cret-token"));
        assert_eq!(cfg.scopes, ["a", "b"]);
        assert_eq!(cfg.callback_port, Some(8765));
        assert_eq!(
            cfg.client_metadata_url.as_deref(),
            Some("https://me.example/client.json")
        );
        assert_eq!(cfg.allow_origins, ["http://10.0.0.9:8443"]);
        // The secret is redacted from traces.
        assert!(c.secrets.contains(&"s3cret-token".to_owned()));
        // Every HTTP server can log in; the defaults decide everything.
        let plain = c.servers.iter().find(|s| s.name == "plain").unwrap();
        assert_eq!(plain.oauth.as_ref().unwrap().config, OAuthConfig::default());
        assert!(invalid(&c, "stdio")
            .unwrap()
            .contains("OAuth is for HTTP servers only"));
        assert!(invalid(&c, "typo").is_some());
    }

    #[test]
    fn timeouts_are_bounded() {
        assert_eq!(timeout_secs("t", 1.5), Ok(Duration::from_millis(1500)));
        assert_eq!(timeout_secs("t", 86_400.0), Ok(Duration::from_secs(86_400)));
        for bad in [0.0, -1.0, 86_400.5, 1e20, f64::INFINITY, f64::NAN] {
            let e = timeout_secs("--timeout", bad).unwrap_err();
            assert!(
                e.starts_with("--timeout is ") && e.contains("up to 86400 (24 h)"),
                "{e}"
            );
        }
        let c = p(r#"{"mcpServers": {"a": {"command": "x", "startupTimeoutSec": 0}}}"#).unwrap();
        assert!(invalid(&c, "a")
            .unwrap()
            .contains("\"startupTimeoutSec\" is 0;"));
    }

    #[test]
    fn roots_and_log_levels() {
        let c = p(r#"{"mcpServers": {
                "a": {"command": "x"},
                "b": {"command": "x", "roots": false, "logLevel": "warning"},
                "c": {"url": "http://h/mcp", "roots": ["/srv/data", "sub dir"]},
                "d": {"command": "x", "logLevel": "loud"}
            }}"#)
        .unwrap();
        assert_eq!(c.servers[0].roots, Roots::WorkingDirectory);
        assert_eq!(c.servers[0].log_level, None);
        assert_eq!(c.servers[1].roots, Roots::Off);
        assert_eq!(c.servers[1].log_level.as_deref(), Some("warning"));
        assert_eq!(
            c.servers[2].roots,
            Roots::Paths(vec!["/srv/data".into(), "/proj/sub dir".into()])
        );
        let e = invalid(&c, "d").unwrap();
        assert!(e.contains("field logLevel") && e.contains("warning"), "{e}");
    }

    #[test]
    fn windows_paths_with_drive_letters_and_spaces_are_kept_as_written() {
        // Backslashes, a drive letter and spaces reach the spawn untouched (no escaping, no
        // splitting); `${VAR}` still expands inside them.
        let c = p(r#"{"mcpServers": {"w": {
                "command": "C:\\Program Files\\nodejs\\npx.cmd",
                "args": ["-y", "server", "C:\\Users\\Ann Lee\\My Docs", "${HOME}\\x"],
                "env": {"DATA": "D:\\data dir\\"},
                "cwd": "C:\\work dir"
            }}}"#)
        .unwrap();
        let TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } = &c.servers[0].transport
        else {
            panic!("stdio")
        };
        assert_eq!(command, r"C:\Program Files\nodejs\npx.cmd");
        assert_eq!(args[2], r"C:\Users\Ann Lee\My Docs");
        assert_eq!(args[3], r"/home/u\x");
        assert_eq!(env[0], ("DATA".into(), r"D:\data dir\".into()));
        // Absolute on Windows, kept; elsewhere not a path of this system, so under the base.
        let cwd = cwd.as_deref().expect("cwd").to_string_lossy().into_owned();
        assert!(cwd.ends_with(r"C:\work dir"), "{cwd}");
    }

    #[test]
    fn what_an_entry_does_not_say_comes_from_the_defaults_it_is_loaded_with() {
        let text = r#"{"mcpServers": {"s": {"command": "a"}, "off": {"command": "a", "sandbox": false},
            "h": {"url": "http://h/mcp"}}}"#;
        let with = |d: &EntryDefaults| {
            parse(text, ".mcp.json", Path::new("/proj"), &|_| None, d).expect("parses")
        };
        let plain = EntryDefaults::in_memory();
        let mut boxed = EntryDefaults::in_memory();
        boxed.sandbox = Some(SandboxField {
            on: true,
            ..SandboxField::default()
        });
        // Two loads in one process, each with its own defaults.
        let (a, b) = (with(&plain), with(&boxed));
        assert!(a.servers[0].sandbox.is_none());
        assert!(b.servers[0].sandbox.as_ref().is_some_and(|s| !s.network));
        assert!(b.servers[1].sandbox.is_none(), "an entry's own false wins");
        let store = |c: &Config| c.servers[2].oauth.as_ref().map(|o| o.store.clone());
        assert!(store(&a).is_some_and(|s| std::sync::Arc::ptr_eq(&s, &plain.oauth_store)));
        assert!(store(&b).is_some_and(|s| std::sync::Arc::ptr_eq(&s, &boxed.oauth_store)));
    }

    #[test]
    fn sandbox_entries() {
        let c = p(r#"{"mcpServers": {
            "on": {"command": "a", "sandbox": true},
            "with": {"command": "a", "sandbox": {"writable": ["out", "${HOME}/x"], "network": true}},
            "off": {"command": "a", "sandbox": false},
            "none": {"command": "a"}
        }}"#)
        .unwrap();
        let sb = |i: usize| c.servers[i].sandbox.clone();
        assert_eq!(
            sb(0),
            Some(SandboxSpec {
                project_dir: PathBuf::from("/proj"),
                writable: vec![],
                network: false
            })
        );
        assert_eq!(
            sb(1),
            Some(SandboxSpec {
                project_dir: PathBuf::from("/proj"),
                writable: vec![PathBuf::from("/proj/out"), PathBuf::from("/home/u/x")],
                network: true
            })
        );
        assert_eq!((sb(2), sb(3)), (None, None));
        // A bad sandbox entry fails only its own server.
        let held = |text: &str, name: &str| {
            let c = p(text).unwrap();
            invalid(&c, name)
                .map(str::to_owned)
                .expect("held as invalid")
        };
        let e = held(
            r#"{"mcpServers": {"h": {"url": "http://h/mcp", "sandbox": true}}}"#,
            "h",
        );
        assert_eq!(
            e,
            ".mcp.json: server \"h\", field sandbox: the sandbox is for stdio servers only; remove it"
        );
        let e = held(
            r#"{"mcpServers": {"s": {"command": "a", "sandbox": {"net": false}}}}"#,
            "s",
        );
        assert!(
            e.contains("server \"s\"") && e.contains("unknown field `net`"),
            "{e}"
        );
        let e = held(
            r#"{"mcpServers": {"s": {"command": "a", "sandbox": "yes"}}}"#,
            "s",
        );
        assert!(e.contains(r#"expected true, false or {"writable""#), "{e}");
    }

    #[test]
    fn expansion_defaults() {
        assert_eq!(expand("${NOPE:-d}/${HOME}", &env).unwrap(), "d//home/u");
        assert_eq!(expand("plain $HOME", &env).unwrap(), "plain $HOME");
        assert!(expand("${HOME", &env).is_err());
        assert!(expand("${A B}", &env).is_err());
    }

    #[test]
    fn only_regular_files_of_a_bounded_size_are_read() {
        let dir = std::env::temp_dir().join(format!("h9-regular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
        let e = read_regular(&fifo, 10).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::write(dir.join("big"), "x".repeat(11)).unwrap();
        assert!(read_regular(&dir.join("big"), 10)
            .unwrap_err()
            .to_string()
            .contains("larger than 10 bytes"));
        assert_eq!(read_regular(&dir.join("big"), 11).unwrap().len(), 11);
        // An envFile that is a FIFO fails its server, at once.
        let text = format!(
            r#"{{"mcpServers": {{"s": {{"command": "x", "envFile": "{}"}}}}}}"#,
            fifo.display()
        );
        let c = p(&text).unwrap();
        assert!(invalid(&c, "s").unwrap().contains("not a regular file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_is_empty_unless_required() {
        let c = load(
            Path::new("/nonexistent/.mcp.json"),
            false,
            &EntryDefaults::in_memory(),
        )
        .unwrap();
        assert!(c.servers.is_empty());
        assert!(load(
            Path::new("/nonexistent/.mcp.json"),
            true,
            &EntryDefaults::in_memory()
        )
        .is_err());
    }

    #[test]
    fn other_tools_formats_load_or_say_what_they_are() {
        let dir = std::env::temp_dir().join(format!("h9-formats-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proj/.vscode")).unwrap();
        // VS Code: `servers`, `inputs` (values from the environment headless), the workspace
        // folder, the streamable-http spelling.
        let vscode = dir.join("proj/.vscode/mcp.json");
        std::fs::write(
            &vscode,
            r#"{"inputs": [{"type": "promptString", "id": "api-key", "password": true}],
                "servers": {
                  "gh": {"type": "streamable-http", "url": "https://api.example/mcp",
                         "headers": {"Authorization": "Bearer ${input:api-key}"}},
                  "local": {"command": "${workspaceFolder}/bin/srv", "envFile": "${workspaceFolder}/.env"}}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("proj/.env"),
            "# comment\nexport A=1\nB=\"two words\"\n",
        )
        .unwrap();
        let c = load(&vscode, true, &EntryDefaults::in_memory()).unwrap();
        let gh = c.servers.iter().find(|s| s.name == "gh").unwrap();
        let Some(Hold::Invalid(why)) = &gh.hold else {
            panic!("an input without a value holds the server: {gh:?}")
        };
        assert!(why.contains("HARNESS9_INPUT_API_KEY"), "{why}");
        // The TUI asks for it: masked, as the file declares it a password.
        assert_eq!(c.inputs.len(), 1, "{:?}", c.inputs);
        assert_eq!(
            (c.inputs[0].id.as_str(), c.inputs[0].password),
            ("api-key", true)
        );
        assert_eq!(c.inputs[0].file, vscode);
        let local = c.servers.iter().find(|s| s.name == "local").unwrap();
        let TransportSpec::Stdio { command, env, .. } = &local.transport else {
            unreachable!()
        };
        assert_eq!(*command, dir.join("proj/bin/srv").display().to_string());
        assert_eq!(
            *env,
            vec![
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "two words".to_owned())
            ]
        );
        let c = parse(
            r#"{"servers": {"gh": {"type": "streamableHttp", "url": "https://x/mcp"}}}"#,
            "mcp.json",
            Path::new("/"),
            &|v| (v == "HARNESS9_INPUT_API_KEY").then(|| "k".to_owned()),
            &EntryDefaults::in_memory(),
        )
        .unwrap();
        assert!(matches!(
            c.servers[0].transport,
            TransportSpec::Http { sse: false, .. }
        ));
        // Codex's TOML: a clear error, not "expected value".
        let codex = dir.join("config.toml");
        std::fs::write(&codex, "[mcp_servers.docs]\ncommand = \"npx\"\n").unwrap();
        let e = load(&codex, true, &EntryDefaults::in_memory())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("TOML") && e.contains("Codex") && e.contains("mcpServers"),
            "{e}"
        );
        // ...and the command that converts it, with this very path.
        let convert = format!(
            "`harness9 mcp import --from codex --file {}`",
            codex.display()
        );
        assert!(e.contains(&convert), "{e}\nwanted {convert}");
        // A path a shell would split is quoted.
        let spaced = dir.join("my codex.toml");
        std::fs::write(&spaced, "[mcp_servers.docs]\ncommand = \"npx\"\n").unwrap();
        let e = load(&spaced, true, &EntryDefaults::in_memory())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("--file '{}'`", spaced.display())),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
