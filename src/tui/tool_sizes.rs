//! What the tool definitions cost: each server's size for `/tools` (bytes and estimated
//! tokens, bytes/4), and the loaded and deferred MCP tools of the last request (tool search)
//! for the context gauge and `/status`.

use harness9_agent::toolsearch::{self, ToolsOffered};

use super::state::State;

/// What the context gauge adds when the last request deferred tools: how many MCP tools it
/// carried and how many it deferred (`/status` and `/tools` say their sizes).
pub(super) fn gauge(state: &State) -> String {
    match state.model.tools_offered {
        Some(t) if t.deferring => {
            format!(" · MCP tools {} loaded, {} deferred", t.loaded, t.deferred)
        }
        _ => String::new(),
    }
}

/// `/status`'s line on the last request's tool definitions.
pub(super) fn offered_line(t: &ToolsOffered) -> String {
    let loaded = format!(
        "{} MCP tools loaded ({} bytes, ~{} tokens)",
        t.loaded,
        t.loaded_bytes,
        toolsearch::tokens(t.loaded_bytes)
    );
    if t.deferring {
        format!(
            "{loaded}, {} deferred behind {} ({} bytes, ~{} tokens, not sent)",
            t.deferred,
            toolsearch::TOOL_SEARCH,
            t.deferred_bytes,
            toolsearch::tokens(t.deferred_bytes)
        )
    } else {
        loaded
    }
}

/// `/tools`'s table of each server's tool-definition size, built-ins last.
pub(super) fn per_server(state: &State) -> String {
    // (source, tools, bytes), in the table's order.
    let mut rows: Vec<(String, usize, usize)> = Vec::new();
    let mut builtin = (0, 0);
    for e in state.servers.tools.iter() {
        let bytes = toolsearch::entry_def(e).map_or(0, |d| toolsearch::def_bytes(&d));
        match &e.server {
            Some(s) => match rows.iter_mut().find(|r| *r.0 == **s) {
                Some(r) => {
                    r.1 += 1;
                    r.2 += bytes;
                }
                None => rows.push((s.to_string(), 1, bytes)),
            },
            None => {
                builtin.0 += 1;
                builtin.1 += bytes;
            }
        }
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(8);
    let mut out = vec!["tool definitions by source (bytes, est. tokens = bytes/4):".to_owned()];
    let line = |name: &str, n: usize, bytes: usize| {
        format!(
            "  {name:<width$}  {n:>4} tool{}  {bytes:>8} bytes  ~{:>6} tokens",
            if n == 1 { " " } else { "s" },
            toolsearch::tokens(bytes)
        )
    };
    let mcp_bytes: usize = rows.iter().map(|r| r.2).sum();
    for (s, n, b) in &rows {
        out.push(line(s, *n, *b));
    }
    if builtin.0 > 0 {
        out.push(line("built-in", builtin.0, builtin.1));
    }
    out.push(format!(
        "  MCP in all: {mcp_bytes} bytes, ~{} tokens",
        toolsearch::tokens(mcp_bytes)
    ));
    if let Some(t) = &state.model.tools_offered {
        out.push(format!("  last request: {}", offered_line(t)));
    }
    out.join("\n")
}
