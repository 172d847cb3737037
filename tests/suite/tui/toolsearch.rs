//! Tool search in the TUI: with the project's `harness9.toml` naming a small window, the
//! everything server's tools are deferred; a turn searches and calls one, the context gauge
//! counts loaded and deferred MCP tools apart, `/status` says their sizes, and `/tools` shows
//! each server's tool-definition size.

use super::*;

#[test]
fn the_gauge_status_and_tools_show_loaded_and_deferred_tool_sizes() {
    tmux_required();
    let model = super::super::engine::Model::start(
        "tui-toolsearch",
        json!({"steps": [
            {"tool_calls": [{"id": "s1", "name": "tool_search", "input": {"query": "add two numbers"}}]},
            {"tool_calls": [{"id": "c1", "name": "mcp__everything__get_sum", "input": {"a": 6, "b": 7}}],
             "expect": {"last_tool_result_contains": "mcp__everything__get_sum"}},
            {"text": "It is 13.", "expect": {"last_tool_result_contains": "13"}}
        ]}),
    );
    let dir = project(
        "tui-toolsearch",
        |_| json!({"everything": stdio_json(everything("x"))}),
    );
    std::fs::write(
        dir.join("harness9.toml"),
        "[context_windows]\n\"claude-sonnet-4-5\" = 4000\n",
    )
    .expect("write harness9.toml");
    let t = Tmux::with_sonnet(&dir, &model);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    t.send_keys(&["what is 6 + 7?", "Enter"]);
    let s = t.wait_for("the answer and the gauge", BOUND, |s| {
        s.contains("It is 13.") && s.contains("MCP tools ")
    });
    // The last request carried the found tools (at most 5 of them) and deferred the rest.
    let gauge = s
        .lines()
        .find(|l| l.contains("MCP tools "))
        .unwrap_or_default()
        .to_owned();
    let counts: Vec<usize> = gauge
        .split("MCP tools ")
        .nth(1)
        .unwrap_or_default()
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .take(2)
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        gauge.contains(" loaded, ") && gauge.contains(" deferred"),
        "{gauge}"
    );
    assert!(
        counts.len() == 2 && (1..=5).contains(&counts[0]) && counts[1] >= 10,
        "{gauge}"
    );
    t.send_keys(&["/status", "Enter"]);
    t.wait_for("/status", BOUND, |s| {
        s.contains(" MCP tools loaded (")
            && s.contains("deferred behind")
            && s.contains("not sent)")
    });
    t.send_keys(&["/tools", "Enter"]);
    let s = t.wait_for("/tools", BOUND, |s| s.contains("MCP in all: "));
    let row = s
        .lines()
        .find(|l| l.trim_start().starts_with("everything ") && l.contains(" bytes"))
        .unwrap_or_default();
    // Every tool of the server, loaded or deferred (the TUI's client offers sampling and
    // elicitation, so the server lists more tools than to `run -p`).
    let total = format!("{} tools", counts[0] + counts[1]);
    assert!(
        row.contains(&total) && row.contains("tokens"),
        "{total}: {s}"
    );
    assert!(
        s.contains("tool definitions by source (bytes, est. tokens = bytes/4):"),
        "{s}"
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}
