//! `harness9 mcp import`: the MCP servers of another tool's config, from its standard place
//! (or a named file), as `.mcp.json` entries. Each tool's file is read in its own shape: the
//! `mcpServers` object (Claude Desktop, Claude Code, Cursor), VS Code's `servers`, Codex's
//! `[mcp_servers.NAME]` TOML tables.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

/// A tool whose MCP config can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Claude Code's `~/.claude.json` (its own servers and this project's).
    ClaudeCode,
    /// Cursor's `~/.cursor/mcp.json`.
    Cursor,
    /// VS Code's `.vscode/mcp.json` of the project.
    Vscode,
    /// Codex's `~/.codex/config.toml`.
    Codex,
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Where `source` keeps its config (`project` is the project root, for VS Code).
pub fn default_path(source: Source, project: &Path) -> PathBuf {
    match source {
        Source::ClaudeDesktop => {
            let mac = home().join("Library/Application Support/Claude/claude_desktop_config.json");
            if mac.is_file() {
                mac
            } else {
                let config = std::env::var_os("XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| home().join(".config"));
                config.join("Claude/claude_desktop_config.json")
            }
        }
        Source::ClaudeCode => home().join(".claude.json"),
        Source::Cursor => home().join(".cursor/mcp.json"),
        Source::Vscode => project.join(".vscode/mcp.json"),
        Source::Codex => home().join(".codex/config.toml"),
    }
}

/// The fields of a `.mcp.json` server entry (what an imported entry may keep).
pub const ENTRY_FIELDS: [&str; 21] = [
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "startupTimeoutSec",
    "toolTimeoutSec",
    "disabled",
    "enabledTools",
    "disabledTools",
    "maxMessageBytes",
    "maxTools",
    "sandbox",
    "protocolVersion",
    "envFile",
    "oauth",
    "roots",
    "logLevel",
    "start",
];

/// One server of another tool's file, as a `.mcp.json` entry, with the fields it had that
/// have no equivalent here (field, why) — dropped, and said so.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The server's name.
    pub name: String,
    /// Its `.mcp.json` entry.
    pub entry: Value,
    /// The fields left out: (field as the other tool spells it, what harness9 has instead).
    pub dropped: Vec<(String, String)>,
}

/// Why a field harness9 has no place for is dropped.
fn no_equivalent(field: &str) -> String {
    crate::config::foreign_reason(field)
        .map(str::to_owned)
        .unwrap_or_else(|| "harness9 has no equivalent".to_owned())
}

/// The servers of `text` (read from a `source` file) as `.mcp.json` entries by name, in the
/// file's order; `project` picks Claude Code's per-project servers.
pub fn servers(source: Source, text: &str, project: &Path) -> Result<Vec<Found>, String> {
    match source {
        Source::Codex => codex(text),
        _ => {
            let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            let mut out: Vec<(String, Value)> = Vec::new();
            let key = if source == Source::Vscode && v.get("mcpServers").is_none() {
                "servers"
            } else {
                "mcpServers"
            };
            if let Some(Value::Object(m)) = v.get(key) {
                out.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            if source == Source::ClaudeCode {
                let here = project.display().to_string();
                if let Some(Value::Object(m)) = v
                    .get("projects")
                    .and_then(|p| p.get(&here))
                    .and_then(|p| p.get("mcpServers"))
                {
                    for (k, v) in m {
                        if !out.iter().any(|(n, _)| n == k) {
                            out.push((k.clone(), v.clone()));
                        }
                    }
                }
            }
            Ok(out
                .into_iter()
                .map(|(name, entry)| json_entry(name, entry))
                .collect())
        }
    }
}

/// A JSON tool's entry: the fields `.mcp.json` has kept as they are, the others dropped (an
/// entry that is not an object is kept whole: it is refused with the reason when added).
fn json_entry(name: String, entry: Value) -> Found {
    let Value::Object(m) = entry else {
        return Found {
            name,
            entry,
            dropped: Vec::new(),
        };
    };
    let mut kept = Map::new();
    let mut dropped = Vec::new();
    for (k, v) in m {
        if ENTRY_FIELDS.contains(&k.as_str()) {
            kept.insert(k, v);
        } else {
            let why = no_equivalent(&k);
            dropped.push((k, why));
        }
    }
    Found {
        name,
        entry: Value::Object(kept),
        dropped,
    }
}

/// Codex's `[mcp_servers.NAME]` tables, each field mapped to its `.mcp.json` equivalent:
/// `command`, `args`, `env`, `cwd`, `url`; `http_headers` and `env_http_headers` (a header's
/// value from a variable) as `headers`; `bearer_token_env_var` as an `Authorization: Bearer
/// ${VAR}` header; `env_vars` (variables passed on) as `env` entries `${VAR:-}`;
/// `startup_timeout_sec` (or `_ms`), `tool_timeout_sec`, `enabled_tools`, `disabled_tools`;
/// `enabled = false` as `"disabled": true`. Any other field is dropped and named.
fn codex(text: &str) -> Result<Vec<Found>, String> {
    let v: toml::Value = toml::from_str(text).map_err(|e| format!("not TOML: {e}"))?;
    let Some(toml::Value::Table(servers)) = v.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, t) in servers {
        let j = serde_json::to_value(t).map_err(|e| e.to_string())?;
        let Value::Object(fields) = j else {
            return Err(format!("[mcp_servers.{name}] is not a table"));
        };
        out.push(codex_entry(name, fields));
    }
    Ok(out)
}

/// One Codex server table as a `.mcp.json` entry (see [`codex`]).
fn codex_entry(name: &str, fields: Map<String, Value>) -> Found {
    let mut b = CodexEntry::default();
    for (field, value) in fields {
        b.field(field, value);
    }
    let CodexEntry {
        mut entry,
        headers,
        env,
        dropped,
    } = b;
    if !env.is_empty() {
        entry.insert("env".to_owned(), Value::Object(env));
    }
    if !headers.is_empty() {
        entry.insert("headers".to_owned(), Value::Object(headers));
    }
    Found {
        name: name.to_owned(),
        entry: Value::Object(entry),
        dropped,
    }
}

/// A Codex server table on its way to a `.mcp.json` entry: the fields that carry over, the
/// env and headers gathered from the tables that make them, and the fields left out.
#[derive(Default)]
struct CodexEntry {
    entry: Map<String, Value>,
    headers: Map<String, Value>,
    env: Map<String, Value>,
    dropped: Vec<(String, String)>,
}

impl CodexEntry {
    /// Leaves `field` out, saying why.
    fn drop(&mut self, field: &str, why: &str) {
        self.dropped.push((field.to_owned(), why.to_owned()));
    }

    /// Codex's `field` = `value`, in harness9's terms.
    fn field(&mut self, field: String, value: Value) {
        let same = |to: &str, entry: &mut Map<String, Value>| {
            entry.insert(to.to_owned(), value.clone());
        };
        match field.as_str() {
            "command" | "args" | "cwd" | "url" => same(&field, &mut self.entry),
            "startup_timeout_sec" => same("startupTimeoutSec", &mut self.entry),
            "tool_timeout_sec" => same("toolTimeoutSec", &mut self.entry),
            "enabled_tools" => same("enabledTools", &mut self.entry),
            "disabled_tools" => same("disabledTools", &mut self.entry),
            "startup_timeout_ms" => match value.as_f64() {
                Some(ms) => {
                    self.entry
                        .insert("startupTimeoutSec".to_owned(), json!(ms / 1000.0));
                }
                None => self.drop(&field, "not a number of milliseconds"),
            },
            "enabled" => match value {
                Value::Bool(true) => {}
                Value::Bool(false) => {
                    self.entry.insert("disabled".to_owned(), json!(true));
                }
                _ => self.drop(&field, "not true or false"),
            },
            "env" | "http_headers" => match value {
                Value::Object(m) => {
                    let into = if field == "env" {
                        &mut self.env
                    } else {
                        &mut self.headers
                    };
                    into.extend(m);
                }
                _ => self.drop(&field, "not a table"),
            },
            "env_http_headers" => match value {
                Value::Object(m) => self.env_http_headers(m),
                _ => self.drop(&field, "not a table"),
            },
            "bearer_token_env_var" => match value.as_str() {
                Some(var) => {
                    self.headers.insert(
                        "Authorization".to_owned(),
                        json!(format!("Bearer ${{{var}}}")),
                    );
                }
                None => self.drop(&field, "not a variable name"),
            },
            "env_vars" => match value {
                Value::Array(names) => self.env_vars(names),
                _ => self.drop(&field, "not a list of variable names"),
            },
            _ => self.drop(&field, "harness9 has no equivalent"),
        }
    }

    /// `env_http_headers`: each header from a variable, as `${VAR}`.
    fn env_http_headers(&mut self, m: Map<String, Value>) {
        for (header, var) in m {
            match var.as_str() {
                Some(var) => {
                    self.headers.insert(header, json!(format!("${{{var}}}")));
                }
                None => self.drop(&format!("env_http_headers.{header}"), "not a variable name"),
            }
        }
    }

    /// `env_vars`: each variable passed through, as `${VAR:-}`.
    fn env_vars(&mut self, names: Vec<Value>) {
        for n in names {
            match n.as_str() {
                Some(var) => {
                    self.env
                        .insert(var.to_owned(), json!(format!("${{{var}:-}}")));
                }
                None => self.drop("env_vars", "an entry that is not a variable name"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tools_shape_gives_its_servers() {
        let p = Path::new("/work/p");
        let claude = r#"{"mcpServers": {"a": {"command": "x"}},
            "projects": {"/work/p": {"mcpServers": {"b": {"url": "http://h/mcp"}}},
                         "/other": {"mcpServers": {"c": {"command": "y"}}}}}"#;
        let got = servers(Source::ClaudeCode, claude, p).unwrap();
        let names: Vec<&str> = got.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let vscode = r#"{"servers": {"gh": {"type": "http", "url": "https://x"}}}"#;
        assert_eq!(servers(Source::Vscode, vscode, p).unwrap()[0].name, "gh");
        let codex_toml = "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs\"]\nenv = { K = \"v\" }\n[mcp_servers.web]\nurl = \"https://h/mcp\"\nenabled = false\n";
        let got = servers(Source::Codex, codex_toml, p).unwrap();
        assert_eq!(got[0].name, "docs");
        assert_eq!(
            got[0].entry,
            json!({"command": "npx", "args": ["-y", "docs"], "env": {"K": "v"}})
        );
        assert_eq!(
            got[1].entry,
            json!({"url": "https://h/mcp", "disabled": true})
        );
        let cursor = r#"{"mcpServers": {"cur": {"command": "x", "env": {"K": "v"}}}}"#;
        let got = servers(Source::Cursor, cursor, p).unwrap();
        assert_eq!(got[0].name, "cur");
        assert_eq!(got[0].entry, json!({"command": "x", "env": {"K": "v"}}));
        assert!(servers(Source::Cursor, "not json", p).is_err());
    }

    #[test]
    fn codex_fields_map_to_ours_and_the_rest_are_named() {
        let p = Path::new("/work/p");
        let text = "[mcp_servers.s]\nurl = \"https://h/mcp\"\nbearer_token_env_var = \"TOK\"\nenv_http_headers = { X-Team = \"TEAM\" }\nhttp_headers = { X-A = \"1\" }\nstartup_timeout_sec = 20\ntool_timeout_sec = 90.5\nenabled_tools = [\"a\"]\ndisabled_tools = [\"b\"]\nenabled = false\nsomething_new = 1\n[mcp_servers.c]\ncommand = \"x\"\nenv_vars = [\"HOME2\"]\nenv = { K = \"v\" }\nstartup_timeout_ms = 1500\n";
        let got = servers(Source::Codex, text, p).unwrap();
        let by = |n: &str| got.iter().find(|f| f.name == n).unwrap();
        let (s, c) = (by("s"), by("c"));
        assert_eq!(
            s.entry,
            json!({"url": "https://h/mcp", "startupTimeoutSec": 20, "toolTimeoutSec": 90.5,
                   "enabledTools": ["a"], "disabledTools": ["b"], "disabled": true,
                   "headers": {"Authorization": "Bearer ${TOK}", "X-Team": "${TEAM}", "X-A": "1"}})
        );
        assert_eq!(s.dropped.len(), 1);
        assert_eq!(s.dropped[0].0, "something_new");
        assert_eq!(
            c.entry,
            json!({"command": "x", "startupTimeoutSec": 1.5, "env": {"HOME2": "${HOME2:-}", "K": "v"}})
        );
        assert!(c.dropped.is_empty());
    }
}
