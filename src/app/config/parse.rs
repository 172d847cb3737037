//! Stage two, parse: a config's text as JSON (`mcpServers`, or VS Code's `servers` and
//! `inputs`), each server entry on its own, so one bad entry fails only its server (held as
//! `Invalid`, with the file, line and column), the others built into specs
//! ([`super::build`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use harness9_actors::{Hold, ServerSpec, TransportSpec};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::build::{build, validate, written_form, Collected, Lookups, Place};
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
    let file: RawFile = serde_json::from_str(text).map_err(|e| syntax_error(text, shown, &e))?;
    let mut config = Config {
        path: PathBuf::from(shown),
        ..Config::default()
    };
    let inputs = InputUse::new(lookup);
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
    let parsing = FileParse {
        text,
        place: Place {
            shown,
            base,
            defaults,
        },
        inputs: &inputs,
        declared: &declared,
    };
    for (name, value) in entries {
        config.warnings.extend(foreign_fields(shown, &name, value));
        parsing.entry(&mut config, name, value);
    }
    config.inputs = inputs.prompts(shown, &declared);
    for w in &config.warnings {
        tracing::warn!("{w}");
    }
    Ok(config)
}

/// The error of a file that is not JSON (or whose servers are not an object), naming the
/// server whose entry holds the error position.
fn syntax_error(text: &str, shown: &str, e: &serde_json::Error) -> ConfigError {
    let owner = server_positions(text)
        .into_iter()
        .rev()
        .find(|(_, l, c)| (*l, *c) <= (e.line(), e.column()))
        .map(|(name, ..)| format!("server \"{name}\": "))
        .unwrap_or_default();
    ConfigError::Syntax {
        path: shown.to_owned(),
        line: e.line(),
        column: e.column(),
        message: format!("{owner}{}", bare(e)),
    }
}

/// The VS Code inputs a file's entries use: the file's lookup, noting every `${input:ID}` the
/// current entry uses and every one without a value, with the servers that need it (asked
/// for in the TUI).
struct InputUse<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// Inputs looked up without a value, with the servers that need them.
    missing: RefCell<Vec<(String, Vec<String>)>>,
    /// The server whose entry is being built.
    current: RefCell<String>,
    /// The input ids the current entry uses.
    used: RefCell<Vec<String>>,
}

impl<'a> InputUse<'a> {
    fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            lookup,
            missing: RefCell::new(Vec::new()),
            current: RefCell::new(String::new()),
            used: RefCell::new(Vec::new()),
        }
    }

    /// From now on the references looked up are server `name`'s.
    fn start(&self, name: &str) {
        *self.current.borrow_mut() = name.to_owned();
        self.used.borrow_mut().clear();
    }

    /// Notes input `id` as used by the current entry.
    fn note_used(&self, id: &str) {
        let mut u = self.used.borrow_mut();
        if !u.iter().any(|x| x == id) {
            u.push(id.to_owned());
        }
    }

    /// The value of reference `v` (`VAR`, `input:ID`, ...), noted.
    fn value(&self, v: &str) -> Option<String> {
        let got = (self.lookup)(v);
        if let Some(id) = v.strip_prefix("input:") {
            self.note_used(id);
        }
        if let (None, Some(id)) = (&got, v.strip_prefix("input:")) {
            let server = self.current.borrow().clone();
            let mut m = self.missing.borrow_mut();
            match m.iter_mut().find(|(x, _)| x == id) {
                Some((_, servers)) if !servers.contains(&server) => servers.push(server),
                Some(_) => {}
                None => m.push((id.to_owned(), vec![server])),
            }
        }
        got
    }

    /// Reference `v` in the written form: as written, but `${workspaceFolder}` (where the
    /// project is) resolved; input ids are still noted as used.
    fn literal(&self, v: &str) -> Option<String> {
        if v == "workspaceFolder" {
            return self.value(v);
        }
        if let Some(id) = v.strip_prefix("input:") {
            self.note_used(id);
        }
        Some(format!("${{{v}}}"))
    }

    /// The inputs the current entry uses, as `declared`: (id, description, password).
    fn used(&self, declared: &Declared) -> Vec<(String, String, bool)> {
        self.used
            .borrow()
            .iter()
            .map(|id| {
                let (description, password) = declared.get(id).cloned().unwrap_or_default();
                (id.clone(), description, password)
            })
            .collect()
    }

    /// The prompts of the inputs without a value, in the file `shown`.
    fn prompts(self, shown: &str, declared: &Declared) -> Vec<InputPrompt> {
        self.missing
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
            .collect()
    }
}

/// VS Code's input declarations: id -> (description, password).
type Declared = BTreeMap<String, (String, bool)>;

/// One file's entries being parsed: its text, where it is, its inputs.
struct FileParse<'a> {
    text: &'a str,
    place: Place<'a>,
    inputs: &'a InputUse<'a>,
    declared: &'a Declared,
}

impl FileParse<'_> {
    /// Server `name`'s entry `value` into `config`: disabled, held with its error (in the
    /// file, at a position), or built, with its written form.
    fn entry(&self, config: &mut Config, name: String, value: &RawValue) {
        if let Some(problem) = name_problem(&name) {
            if is_disabled(value) {
                config.disabled.push(name);
                return;
            }
            let message = self.at_key(&name, problem);
            config.servers.push(held(&name, value, message.to_string()));
            return;
        }
        let raw = match serde_json::from_str::<RawServer>(value.get()) {
            Ok(raw) => raw,
            Err(e) => {
                if is_disabled(value) {
                    config.disabled.push(name);
                    return;
                }
                let message = self.in_entry(&name, value, &e);
                config.servers.push(held(&name, value, message.to_string()));
                return;
            }
        };
        if raw.disabled {
            config.disabled.push(name);
            return;
        }
        if let Some(file) = &raw.env_file {
            if let Ok(file) = expand(file, &|v| self.inputs.value(v)) {
                config.read_files.push(self.place.base.join(file));
            }
        }
        if let Some(problem) = validate(&raw) {
            let message = self.at_key(&name, format!("server \"{name}\" {problem}"));
            config.servers.push(held(&name, value, message.to_string()));
            return;
        }
        self.build(config, name, raw, value);
    }

    /// A valid entry built into `config`: its spec (held at its `oauth` field when that
    /// fails), its secrets and expansions, its written form.
    fn build(&self, config: &mut Config, name: String, raw: RawServer, value: &RawValue) {
        self.inputs.start(&name);
        let values = |v: &str| self.inputs.value(v);
        let literal = |v: &str| self.inputs.literal(v);
        let mut w = written_form(
            &name,
            value,
            self.place.shown,
            self.place.base,
            Lookups {
                values: &literal,
                paths: &values,
            },
            self.place.defaults,
        );
        let lookups = Lookups {
            values: &values,
            paths: &values,
        };
        let mut found = Collected::default();
        match build(&name, raw, self.place, lookups, &mut found) {
            Ok(spec) => {
                config.secrets.append(&mut found.secrets);
                config.expansions.append(&mut found.expansions);
                config.servers.push(spec);
            }
            Err(e) => {
                let start = self.offset(value);
                let message = at_oauth_field(e, self.text, start, value.get());
                config.servers.push(held(&name, value, message.to_string()))
            }
        }
        w.inputs = self.inputs.used(self.declared);
        config.written.push((name, w));
    }

    /// Error `message` at server `name`'s key.
    fn at_key(&self, name: &str, message: String) -> ConfigError {
        let (line, column) = server_positions(self.text)
            .into_iter()
            .find(|(n, ..)| n == name)
            .map(|(_, l, c)| (l, c))
            .unwrap_or((1, 1));
        ConfigError::Syntax {
            path: self.place.shown.to_owned(),
            line,
            column,
            message,
        }
    }

    /// Server `name`'s entry `value` that does not parse as an entry: serde's position is
    /// within the entry, shifted to the file's.
    fn in_entry(&self, name: &str, value: &RawValue, e: &serde_json::Error) -> ConfigError {
        let (l0, c0) = line_col(self.text, self.offset(value));
        let (line, column) = match e.line() {
            0 => (l0, c0),
            1 => (l0, c0 + e.column().saturating_sub(1)),
            l => (l0 + l - 1, e.column()),
        };
        ConfigError::Syntax {
            path: self.place.shown.to_owned(),
            line,
            column,
            message: format!("server \"{name}\": {}", bare(e)),
        }
    }

    /// Where entry `value` starts in the file's text, in bytes.
    fn offset(&self, value: &RawValue) -> usize {
        (value.get().as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize)
    }
}

/// Server `name`'s spec held as invalid with `message`: an error in one entry fails that
/// server only. It is shown with the transport its entry `value` asks for (a failed HTTP
/// server is not "stdio").
fn held(name: &str, value: &RawValue, message: String) -> ServerSpec {
    let mut spec = ServerSpec::stdio(name, "", Vec::new());
    if let Some(transport) = invalid_transport(value.get()) {
        spec.transport = transport;
    }
    spec.hold = Some(Hold::Invalid(message));
    spec
}

/// The HTTP transport a bad entry asks for (a `url`, or a `type` of http/sse without a
/// `command`), its URL as written, for the status it is shown with; `None`: stdio.
fn invalid_transport(entry: &str) -> Option<TransportSpec> {
    let v: serde_json::Value = serde_json::from_str(entry).ok()?;
    let kind = v.get("type").and_then(serde_json::Value::as_str);
    let http = match kind {
        Some("stdio") => false,
        Some(_) => true,
        None => v.get("command").is_none() && v.get("url").is_some(),
    };
    http.then(|| TransportSpec::Http {
        url: v
            .get("url")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        headers: Vec::new(),
        sse: kind == Some("sse"),
    })
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
