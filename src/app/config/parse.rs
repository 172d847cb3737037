//! Stage two, parse: a config's text as JSON (`mcpServers`, or VS Code's `servers` and
//! `inputs`), each server entry on its own, so one bad entry fails only its server (held as
//! `Invalid`, with the file, line and column), the others built into specs
//! ([`super::build`]).

use std::fmt;
use std::path::{Path, PathBuf};

use harness9_actors::{Hold, ServerSpec};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::build::{build, held_transport, validate, written_form, Lookups};
use super::entry::{EntryDefaults, RawServer};
use super::expand;
use super::formats::{declared_inputs, foreign_fields};
use super::input_vars::InputPrompt;
use super::scan::{bare, line_col, server_positions};
use super::types::{Config, ConfigError};

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
            InputPrompt {
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
