//! What the TUI's view tests share: server states, a state with servers and tools, typed keys,
//! a frame rendered as text.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use harness9_actors::messages::{ConnectionInfo, ServerState, ServerStatus, ToolEntry};
use harness9_actors::protocol::types::{Implementation, Tool};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::state::{update, Event, State};
use crate::view::{mcp_bar_with, view};

pub(crate) fn connected(tools: usize, ms: u64) -> ServerState {
    ServerState {
        transport: "stdio",
        status: ServerStatus::Connected {
            tools,
            info: ConnectionInfo {
                era: harness9_actors::protocol::version::Era::Handshake(
                    harness9_actors::protocol::version::ProtocolVersion::V2025_11_25,
                ),
                protocol_version: "2025-11-25".into(),
                server_info: Implementation {
                    name: "mcp-servers/everything".into(),
                    version: "2.0.0".into(),
                    title: None,
                },
                instructions: None,
                capabilities: Default::default(),
                connect_time: Duration::from_millis(ms),
                transport: "stdio",
                tools_ttl_ms: None,
                cache_written: None,
                pid: Some(4242),
                notes: Vec::new(),
            },
        },
    }
}

/// [`connected`], with the `resources` capability declared.
pub(crate) fn connected_with_resources(tools: usize, ms: u64) -> ServerState {
    let mut st = connected(tools, ms);
    if let ServerStatus::Connected { info, .. } = &mut st.status {
        info.capabilities = Arc::new(harness9_actors::protocol::types::ServerCapabilities {
            resources: Some(serde_json::json!({})),
            ..Default::default()
        });
    }
    st
}

pub(crate) fn failed(error: &str, tail: &[&str]) -> ServerState {
    ServerState {
        transport: "stdio",
        status: ServerStatus::Failed {
            error: error.into(),
            stderr_tail: tail.iter().map(|s| s.to_string()).collect(),
        },
    }
}

pub(crate) fn starting() -> ServerState {
    ServerState {
        transport: "http",
        status: ServerStatus::Starting {
            since: Instant::now(),
        },
    }
}

pub(crate) fn restarting(attempt: usize) -> ServerState {
    ServerState {
        transport: "stdio",
        status: ServerStatus::Restarting {
            attempt,
            next_retry: Instant::now(),
            last_error: "exited with status 1".into(),
        },
    }
}

pub(crate) fn tool(server: &str, name: &str, desc: &str) -> ToolEntry {
    ToolEntry {
        name: format!("mcp__{server}__{name}").into(),
        server: Some(server.into()),
        tool: Arc::new(Tool {
            name: name.to_owned(),
            title: None,
            description: Some(desc.into()),
            input_schema: harness9_actors::protocol::rawjson::RawJson::from_value(
                &serde_json::json!({}),
            )
            .expect("schema"),
            output_schema: None,
            annotations: None,
            execution: None,
        }),
    }
}

pub(crate) fn state_with(servers: Vec<(&str, ServerState)>, tools: Vec<ToolEntry>) -> State {
    let mut s = State::new(
        ".mcp.json".into(),
        None,
        "to chat with a model, set ANTHROPIC_API_KEY or OPENAI_API_KEY".into(),
    );
    let snap: BTreeMap<String, ServerState> = servers
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect();
    update(&mut s, Event::Status(Arc::new(snap)));
    update(&mut s, Event::Tools(Arc::new(tools)));
    s
}

/// A key press without modifiers, as an [`Event`].
pub(crate) fn key_event(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Types `s` into the input, a key per char.
pub(crate) fn typed(state: &mut State, s: &str) {
    for c in s.chars() {
        update(state, key_event(KeyCode::Char(c)));
    }
}

/// A state with these servers connected, each with `per` tools of two description lines.
pub(crate) fn with_servers(names: &[&str], per: usize) -> State {
    let mut s = State::new(".mcp.json".into(), None, "set a key".into());
    let snap: BTreeMap<String, ServerState> = names
        .iter()
        .map(|n| (n.to_string(), connected(per, 5)))
        .collect();
    update(&mut s, Event::Status(Arc::new(snap)));
    let tools: Vec<ToolEntry> = names
        .iter()
        .flat_map(|n| (0..per).map(move |i| tool(n, &format!("t{i}"), "line one\nline two")))
        .collect();
    update(&mut s, Event::Tools(Arc::new(tools)));
    s
}

pub(crate) fn render(state: &mut State, w: u16, h: u16) -> String {
    state.size = (w, h);
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view(state, f)).expect("draw");
    t.backend().to_string()
}

pub(crate) fn bar_text(servers: Vec<(&str, ServerState)>, width: u16) -> String {
    let snap: BTreeMap<String, ServerState> = servers
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect();
    let line = mcp_bar_with(&Arc::new(snap), &[], 0, width);
    assert!(
        line.width() <= width as usize,
        "bar wider than {width}: {line}"
    );
    line.to_string()
}

/// A key pressed after a pause: a question that opened is past its grace.
pub(crate) fn key(state: &mut State, code: KeyCode) {
    press(state, code);
}

/// Time passes: a question that opened is past its grace (keys count).
pub(crate) fn settle(state: &mut State) {
    state.now += crate::guard::GRACE;
}

/// A key pressed after a pause (see [`settle`]); what the update returned.
pub(crate) fn press(state: &mut State, code: KeyCode) -> Vec<crate::state::Effect> {
    settle(state);
    update(state, Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}
