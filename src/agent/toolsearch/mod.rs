//! Tool search: when the MCP servers' tool definitions would take more than a share of the
//! model's context window, they are deferred. The model is offered the built-ins, the pinned
//! tools, the tools already used or found in this conversation, and [`TOOL_SEARCH`]; the
//! system prompt says what is deferred ([`deferred_note`]). A search ranks the deferred tools
//! ([`rank::Index`]: BM25F, exact names and `server:` first) and the tools it returns are
//! offered from the next model step on. Pure: the engine (`agent/engine/deferred.rs`) holds
//! the state and the TUI and the benchmarks call the same [`plan`].

#[cfg(test)]
mod quality;
pub mod rank;

use std::collections::BTreeSet;

use harness9_actors::messages::ToolEntry;
use serde_json::{json, Value};

use crate::model::ProviderKind;
use crate::model::ToolDef;

/// The search tool's name (no MCP tool can have it: theirs are `mcp__server__tool`).
pub const TOOL_SEARCH: &str = "tool_search";

/// Results of one search when the model does not say how many.
pub const DEFAULT_RESULTS: usize = 5;
/// The most results one search returns.
pub const MAX_RESULTS: usize = 20;
/// The most of a query that is read.
const MAX_QUERY: usize = 1024;

/// When MCP tools are deferred (`[tool_search] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// When their definitions pass `share` of the context window.
    #[default]
    Auto,
    /// Always (any MCP tool that is not pinned).
    Always,
    /// Never: every tool is offered.
    Never,
}

/// The `[tool_search]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearchSettings {
    /// When to defer.
    pub mode: Mode,
    /// The share of the context window MCP tool definitions may take before they are deferred.
    pub share: f64,
    /// Never deferred: a server's name (all its tools) or a tool's registered name
    /// (`mcp__server__tool`).
    pub pinned: Vec<String>,
}

impl Default for ToolSearchSettings {
    fn default() -> Self {
        Self {
            mode: Mode::Auto,
            share: 0.10,
            pinned: Vec::new(),
        }
    }
}

/// The context window assumed for a model `[context_windows]` does not name: 200k tokens for
/// Anthropic's models, 128k for an OpenAI-compatible endpoint (local models are often smaller:
/// name yours in `[context_windows]`).
pub fn default_window(kind: ProviderKind) -> u64 {
    match kind {
        ProviderKind::Anthropic => 200_000,
        ProviderKind::OpenAi => 128_000,
    }
}

/// Estimated tokens of `bytes` of tool definitions (4 bytes a token).
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// The bytes a tool definition takes in a request (its name, description and input schema as
/// JSON, as both providers send them).
pub fn def_bytes(d: &ToolDef) -> usize {
    json!({"name": d.name, "description": d.description, "input_schema": d.input_schema})
        .to_string()
        .len()
}

/// Whether `e` is pinned by `pins`.
pub fn is_pinned(pins: &[String], e: &ToolEntry) -> bool {
    pins.iter()
        .any(|p| **p == *e.name || e.server.as_deref() == Some(p.as_str()))
}

/// What one model request was offered of the MCP tools: loaded (their definitions sent) and
/// deferred (found through [`TOOL_SEARCH`]), with the bytes of their definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolsOffered {
    /// Whether tools were deferred.
    pub deferring: bool,
    /// MCP tools whose definitions were sent.
    pub loaded: usize,
    /// Their bytes.
    pub loaded_bytes: usize,
    /// MCP tools deferred.
    pub deferred: usize,
    /// Their bytes (not sent).
    pub deferred_bytes: usize,
}

impl From<&Plan> for ToolsOffered {
    fn from(p: &Plan) -> Self {
        Self {
            deferring: p.deferring,
            loaded: p.loaded,
            loaded_bytes: p.loaded_bytes,
            deferred: p.deferred,
            deferred_bytes: p.deferred_bytes,
        }
    }
}

/// The definition the model is offered for a table entry (its description, else its title),
/// or `None` when its input schema is not a JSON object (such a tool is not offered).
pub fn entry_def(e: &ToolEntry) -> Option<ToolDef> {
    let input_schema = crate::engine::schema_object(e.tool.input_schema.get()).ok()?;
    Some(ToolDef {
        name: e.name.to_string(),
        description: e
            .tool
            .description
            .as_deref()
            .or(e.tool.title.as_deref())
            .unwrap_or_default()
            .to_owned(),
        input_schema,
    })
}

/// One server's line in the deferred note.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerLine {
    /// The server's name.
    pub server: String,
    /// The first line of its instructions (cleaned, at most 160 bytes).
    pub first_line: String,
    /// Its tools in the table.
    pub tools: usize,
}

/// What the model is offered for one table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// Whether MCP tools are deferred (then [`TOOL_SEARCH`] is offered).
    pub deferring: bool,
    /// For each def: offered (`true`) or deferred.
    pub offered: Vec<bool>,
    /// Bytes of the offered MCP tools' definitions.
    pub loaded_bytes: usize,
    /// Offered MCP tools.
    pub loaded: usize,
    /// Bytes of the deferred tools' definitions.
    pub deferred_bytes: usize,
    /// Deferred tools.
    pub deferred: usize,
    /// The servers with deferred tools, in table order.
    pub servers: Vec<ServerLine>,
}

/// Which of `defs` (each with its server, `None` for a built-in, and whether it is pinned)
/// the model is offered: all when MCP definitions stay under `settings.share` of `window`
/// tokens (or `mode` says never); else built-ins, pinned tools and `loaded` (used or found in
/// this conversation). `instructions` gives each server's first line.
pub fn plan(
    settings: &ToolSearchSettings,
    window: u64,
    defs: &[(&ToolDef, Option<&str>, bool)],
    loaded: &BTreeSet<String>,
    instructions: &[(String, std::sync::Arc<str>)],
) -> Plan {
    let sizes: Vec<usize> = defs.iter().map(|(d, _, _)| def_bytes(d)).collect();
    let mcp_bytes: usize = defs
        .iter()
        .zip(&sizes)
        .filter(|((_, s, _), _)| s.is_some())
        .map(|(_, b)| b)
        .sum();
    let over = tokens(mcp_bytes) as f64 > settings.share * window as f64;
    let deferring = match settings.mode {
        Mode::Never => false,
        Mode::Always => defs.iter().any(|(_, s, pin)| s.is_some() && !pin),
        Mode::Auto => over && defs.iter().any(|(_, s, pin)| s.is_some() && !pin),
    };
    let mut p = Plan {
        deferring,
        ..Plan::default()
    };
    for ((d, server, pinned), bytes) in defs.iter().zip(&sizes) {
        let offered = !deferring || server.is_none() || *pinned || loaded.contains(&d.name);
        p.offered.push(offered);
        let Some(server) = server else { continue };
        if offered {
            p.loaded += 1;
            p.loaded_bytes += bytes;
        } else {
            p.deferred += 1;
            p.deferred_bytes += bytes;
        }
        if deferring && !pinned {
            match p.servers.iter_mut().find(|l| l.server == *server) {
                Some(l) => l.tools += 1,
                None => p.servers.push(ServerLine {
                    server: (*server).to_owned(),
                    first_line: first_line(instructions, server),
                    tools: 1,
                }),
            }
        }
    }
    p
}

/// The first non-empty line of `server`'s instructions, cleaned and cut at 160 bytes.
fn first_line(instructions: &[(String, std::sync::Arc<str>)], server: &str) -> String {
    let Some((_, text)) = instructions.iter().find(|(s, _)| s == server) else {
        return String::new();
    };
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = harness9_base::sanitize::clean_line(line);
    let mut end = line.len().min(160);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

/// The system prompt's paragraph about deferred tools: one line per server with its name, the
/// first line of its instructions and how many of its tools are searchable. It does not change
/// as tools are found (a stable prompt-cache prefix).
pub fn deferred_note(plan: &Plan) -> Option<String> {
    if !plan.deferring {
        return None;
    }
    let total: usize = plan.servers.iter().map(|l| l.tools).sum();
    let mut s = format!(
        "\n\nDeferred tools: the MCP servers below have {total} tools; to save context, those not in your tool list are deferred. Call {TOOL_SEARCH} with what you need to do in a few words (or a tool's exact name; \"server: words\" or the \"server\" argument searches one server); the tools it returns can be called from your next step on. Servers:"
    );
    for l in &plan.servers {
        s.push_str(&format!(
            "\n- {} ({} tool{}){}",
            harness9_base::sanitize::clean_line(&l.server),
            l.tools,
            if l.tools == 1 { "" } else { "s" },
            if l.first_line.is_empty() {
                String::new()
            } else {
                format!(": {}", l.first_line)
            }
        ));
    }
    Some(s)
}

/// The search tool's definition.
pub fn search_def() -> ToolDef {
    ToolDef {
        name: TOOL_SEARCH.to_owned(),
        description: format!(
            "Find deferred MCP tools by what they do. Returns the best matches (name, description, input schema); they can be called from your next step on. Query with the task in a few words, or a tool's exact name; \"server: words\" or \"server\" keeps to one server, and a server's name alone lists its tools. At most {MAX_RESULTS} results (default {DEFAULT_RESULTS})."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you need to do, or a tool's exact name"},
                "server": {"type": "string", "description": "Only this server's tools"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "How many results"}
            },
            "required": ["query"]
        }),
    }
}

/// The searchable form of a table entry (`None` for a built-in).
pub fn doc(e: &ToolEntry) -> Option<rank::Doc> {
    let server = e.server.as_deref()?.to_owned();
    let schema: Value = serde_json::from_str(e.tool.input_schema.get()).unwrap_or(Value::Null);
    let mut params = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props.iter().take(64) {
            params.push(k.clone());
            if let Some(d) = v.get("description").and_then(Value::as_str) {
                params.push(d.chars().take(200).collect());
            }
        }
    }
    Some(rank::Doc {
        name: e.name.to_string(),
        server,
        tool: e.tool.name.clone(),
        title: e.tool.title.clone().unwrap_or_default(),
        description: e.tool.description.as_deref().unwrap_or_default().to_owned(),
        params,
    })
}

/// A search's arguments, checked: the query, the server, how many.
pub fn arguments(
    input: &Value,
    servers: &[&str],
) -> Result<(String, Option<String>, usize), String> {
    let query = match input.get("query") {
        Some(Value::String(q)) => q.chars().take(MAX_QUERY).collect::<String>(),
        _ => {
            return Err(format!(
                "{TOOL_SEARCH} needs \"query\": a string saying what the tool should do"
            ))
        }
    };
    let server = match input.get("server") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => {
            // Exact, case included: `GitHub` is not server `github`.
            if !servers.iter().any(|x| *x == s.trim()) {
                return Err(format!(
                    "no server \"{}\" has deferred tools; the servers are: {}",
                    harness9_base::sanitize::clean_line(s),
                    servers.join(", ")
                ));
            }
            Some(s.trim().to_owned())
        }
        Some(_) => return Err(format!("\"server\" of {TOOL_SEARCH} must be a string")),
    };
    let limit = match input.get("limit") {
        None | Some(Value::Null) => DEFAULT_RESULTS,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => (n as usize).min(MAX_RESULTS),
            _ => {
                return Err(format!(
                    "\"limit\" of {TOOL_SEARCH} must be a whole number from 1 to {MAX_RESULTS}"
                ))
            }
        },
    };
    if query.trim().is_empty() && server.is_none() {
        return Err(format!(
            "the query of {TOOL_SEARCH} is empty; say what the tool should do"
        ));
    }
    Ok((query, server, limit))
}

/// The text the model gets for a search's hits (each one's name, description and input
/// schema).
pub fn render(query: &str, hits: &[&ToolDef], servers: &[&str]) -> String {
    if hits.is_empty() {
        return format!(
            "no deferred tool matches \"{}\"; try other words, or a server's name to list its tools (servers: {})",
            harness9_base::sanitize::clean_line(query),
            servers.join(", ")
        );
    }
    let mut s = format!(
        "{} tool{} found; call {} from your next step on:",
        hits.len(),
        if hits.len() == 1 { "" } else { "s" },
        if hits.len() == 1 { "it" } else { "them" }
    );
    for d in hits {
        s.push_str(&format!(
            "\n\n## {}\n{}\ninput schema: {}",
            d.name,
            d.description.trim(),
            d.input_schema
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, bytes: usize) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: "x".repeat(bytes),
            input_schema: json!({"type": "object"}),
        }
    }

    #[test]
    fn the_share_of_the_window_decides_and_pins_builtins_and_loaded_stay() {
        let (b, t1, t2, t3) = (
            def("bash", 100),
            def("mcp__a__one", 4000),
            def("mcp__a__two", 4000),
            def("mcp__b__three", 4000),
        );
        let defs = [
            (&b, None, false),
            (&t1, Some("a"), false),
            (&t2, Some("a"), true),
            (&t3, Some("b"), false),
        ];
        let s = ToolSearchSettings::default();
        let none = BTreeSet::new();
        // ~3k tokens of MCP definitions: under 10% of 200k, over 10% of 20k.
        let p = plan(&s, 200_000, &defs, &none, &[]);
        assert!(!p.deferring && p.offered.iter().all(|o| *o), "{p:?}");
        assert_eq!(p.loaded, 3);
        let instructions = vec![(
            "a".to_owned(),
            std::sync::Arc::from("\n  Server A first line\nmore"),
        )];
        let loaded: BTreeSet<String> = ["mcp__b__three".to_owned()].into();
        let p = plan(&s, 20_000, &defs, &loaded, &instructions);
        assert!(p.deferring);
        // The built-in, the pinned tool and the loaded one are offered; the rest deferred.
        assert_eq!(p.offered, [true, false, true, true]);
        assert_eq!((p.loaded, p.deferred), (2, 1));
        assert_eq!(p.deferred_bytes, def_bytes(&t1));
        // The note counts each server's unpinned tools, loaded or not, and its first line.
        assert_eq!(
            p.servers,
            [
                ServerLine {
                    server: "a".into(),
                    first_line: "Server A first line".into(),
                    tools: 1
                },
                ServerLine {
                    server: "b".into(),
                    first_line: String::new(),
                    tools: 1
                },
            ]
        );
        let note = deferred_note(&p).unwrap_or_default();
        assert!(
            note.contains("- a (1 tool): Server A first line\n- b (1 tool)"),
            "{note}"
        );
        // never / always.
        let never = ToolSearchSettings {
            mode: Mode::Never,
            ..s.clone()
        };
        assert!(!plan(&never, 1, &defs, &none, &[]).deferring);
        let always = ToolSearchSettings {
            mode: Mode::Always,
            ..s.clone()
        };
        assert!(plan(&always, 10_000_000, &defs, &none, &[]).deferring);
        // Everything pinned: nothing to defer, no search tool.
        let all_pinned = [(&b, None, false), (&t2, Some("a"), true)];
        assert!(!plan(&always, 1, &all_pinned, &none, &[]).deferring);
        assert!(deferred_note(&plan(&s, 200_000, &defs, &none, &[])).is_none());
    }

    #[test]
    fn pins_name_a_server_or_a_tool() {
        let e = |name: &str, server: &str| ToolEntry {
            name: name.into(),
            server: Some(server.into()),
            tool: std::sync::Arc::new(harness9_actors::protocol::types::Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: harness9_actors::protocol::rawjson::RawJson::from_value(&json!({}))
                    .unwrap_or_else(|_| unreachable!()),
                output_schema: None,
                annotations: None,
                execution: None,
            }),
        };
        let pins = vec!["git".to_owned(), "mcp__gh__create_issue".to_owned()];
        assert!(is_pinned(&pins, &e("mcp__git__git_log", "git")));
        assert!(is_pinned(&pins, &e("mcp__gh__create_issue", "gh")));
        assert!(!is_pinned(&pins, &e("mcp__gh__list_issues", "gh")));
        assert!(!is_pinned(&pins, &e("mcp__gitlab__x", "gitlab")));
    }

    #[test]
    fn bad_arguments_say_what_to_send() {
        let servers = ["git", "time"];
        let err = |v: Value| arguments(&v, &servers).err().unwrap_or_default();
        assert_eq!(
            err(json!({})),
            "tool_search needs \"query\": a string saying what the tool should do"
        );
        assert_eq!(
            err(json!({"query": 3})),
            "tool_search needs \"query\": a string saying what the tool should do"
        );
        assert_eq!(
            err(json!({"query": "x", "server": "nope"})),
            "no server \"nope\" has deferred tools; the servers are: git, time"
        );
        assert_eq!(
            err(json!({"query": "x", "limit": 0})),
            "\"limit\" of tool_search must be a whole number from 1 to 20"
        );
        assert_eq!(
            err(json!({"query": "  "})),
            "the query of tool_search is empty; say what the tool should do"
        );
        assert_eq!(
            arguments(
                &json!({"query": "log", "server": "git", "limit": 99}),
                &servers
            ),
            Ok(("log".into(), Some("git".into()), MAX_RESULTS))
        );
        // A server's name is exact, case included.
        assert_eq!(
            err(json!({"query": "log", "server": "GIT"})),
            "no server \"GIT\" has deferred tools; the servers are: git, time"
        );
        assert_eq!(
            arguments(&json!({"query": "", "server": "git"}), &servers),
            Ok((String::new(), Some("git".into()), DEFAULT_RESULTS))
        );
        let long = "q".repeat(5000);
        assert_eq!(
            arguments(&json!({"query": long}), &servers).map(|a| a.0.len()),
            Ok(1024)
        );
        // No hit names the servers to try.
        assert!(render("zz", &[], &servers).ends_with("(servers: git, time)"));
    }
}
