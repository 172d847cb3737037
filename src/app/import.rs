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

/// The servers of `text` (read from a `source` file) as `.mcp.json` entries by name, in the
/// file's order; `project` picks Claude Code's per-project servers.
pub fn servers(source: Source, text: &str, project: &Path) -> Result<Vec<(String, Value)>, String> {
    match source {
        Source::Codex => codex(text),
        _ => {
            let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
            let mut out = Vec::new();
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
            Ok(out)
        }
    }
}

/// Codex's `[mcp_servers.NAME]` tables: `command`, `args`, `env`, `cwd`, or `url` (with
/// `http_headers`).
fn codex(text: &str) -> Result<Vec<(String, Value)>, String> {
    let v: toml::Value = toml::from_str(text).map_err(|e| format!("not TOML: {e}"))?;
    let Some(toml::Value::Table(servers)) = v.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, t) in servers {
        let j = serde_json::to_value(t).map_err(|e| e.to_string())?;
        let mut entry = Map::new();
        for (from, to) in [
            ("command", "command"),
            ("args", "args"),
            ("env", "env"),
            ("cwd", "cwd"),
            ("url", "url"),
            ("http_headers", "headers"),
        ] {
            if let Some(x) = j.get(from) {
                entry.insert(to.to_owned(), x.clone());
            }
        }
        if j.get("enabled") == Some(&json!(false)) {
            entry.insert("disabled".to_owned(), json!(true));
        }
        out.push((name.clone(), Value::Object(entry)));
    }
    Ok(out)
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
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let vscode = r#"{"servers": {"gh": {"type": "http", "url": "https://x"}}}"#;
        assert_eq!(servers(Source::Vscode, vscode, p).unwrap()[0].0, "gh");
        let codex_toml = "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs\"]\nenv = { K = \"v\" }\n[mcp_servers.web]\nurl = \"https://h/mcp\"\nenabled = false\n";
        let got = servers(Source::Codex, codex_toml, p).unwrap();
        assert_eq!(got[0].0, "docs");
        assert_eq!(
            got[0].1,
            json!({"command": "npx", "args": ["-y", "docs"], "env": {"K": "v"}})
        );
        assert_eq!(got[1].1, json!({"url": "https://h/mcp", "disabled": true}));
        let cursor = r#"{"mcpServers": {"cur": {"command": "x", "env": {"K": "v"}}}}"#;
        assert_eq!(
            servers(Source::Cursor, cursor, p).unwrap(),
            [("cur".to_owned(), json!({"command": "x", "env": {"K": "v"}}))]
        );
        assert!(servers(Source::Cursor, "not json", p).is_err());
    }
}
