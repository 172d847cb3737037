//! Frame time of the `/mcp` panel with 10,000 tools (the issue's bound: 5 ms a frame), plus the
//! session screen and the cost of taking in a new 10,000-tool table.
// A benchmark's own fixtures and a test backend: a failure is a broken benchmark.
#![allow(clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use harness9::tui::state::{update, Event, Modal, PanelState, State};
use harness9::tui::view::view;
use harness9_actors::messages::{ConnectionInfo, ServerState, ServerStatus, ToolEntry};
use harness9_actors::protocol::types::{Implementation, Tool};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn tools(n: usize) -> Arc<Vec<ToolEntry>> {
    let schema = harness9_actors::protocol::rawjson::RawJson::from_value(
        &serde_json::json!({"type": "object"}),
    )
    .expect("schema");
    Arc::new(
        (0..n)
            .map(|i| ToolEntry {
                name: format!("mcp__big__tool_{i:05}").into(),
                server: Some("big".into()),
                tool: Arc::new(Tool {
                    name: format!("tool_{i:05}"),
                    title: None,
                    description: Some(
                        format!("Tool number {i}: does one thing well.\nIt takes no arguments.")
                            .into(),
                    ),
                    input_schema: schema.clone(),
                    output_schema: None,
                    annotations: None,
                    execution: None,
                }),
            })
            .collect(),
    )
}

fn state(n: usize) -> State {
    let mut s = State::new(".mcp.json".into(), None, String::new());
    let info = ConnectionInfo {
        era: harness9_actors::protocol::version::Era::Handshake(
            harness9_actors::protocol::version::ProtocolVersion::V2025_11_25,
        ),
        protocol_version: "2025-11-25".into(),
        server_info: Implementation {
            name: "big".into(),
            version: "1".into(),
            title: None,
        },
        instructions: None,
        capabilities: Default::default(),
        connect_time: Duration::from_millis(80),
        transport: "stdio",
        tools_ttl_ms: None,
        cache_written: None,
        pid: Some(1),
        notes: Vec::new(),
    };
    let snap: BTreeMap<String, ServerState> = [(
        "big".to_owned(),
        ServerState {
            transport: "stdio",
            status: ServerStatus::Connected { tools: n, info },
        },
    )]
    .into();
    update(&mut s, Event::Status(Arc::new(snap)));
    update(&mut s, Event::Tools(tools(n)));
    s.size = (120, 40);
    s
}

fn bench(c: &mut Criterion) {
    let mut s = state(10_000);
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let total = s.panel_total_lines("big");
    s.modal = Some(Modal::Panel(PanelState {
        selected: 0,
        scroll: total / 2,
    }));
    c.bench_function("panel frame, 10k tools, middle", |b| {
        b.iter(|| {
            term.draw(|f| view(&s, f)).expect("draw");
        })
    });
    s.modal = Some(Modal::Panel(PanelState {
        selected: 0,
        scroll: total,
    }));
    c.bench_function("panel frame, 10k tools, end", |b| {
        b.iter(|| {
            term.draw(|f| view(&s, f)).expect("draw");
        })
    });
    s.modal = None;
    c.bench_function("session frame", |b| {
        b.iter(|| {
            term.draw(|f| view(&s, f)).expect("draw");
        })
    });
    // The newest entry is a long markdown answer (about 2,000 lines, 130 KB): laid out whole
    // on each frame while it streams.
    let para = "Some **bold** text with `code` and *emphasis*, long enough to wrap twice on a \
                terminal of one hundred and twenty columns, as answers do.\n";
    let answer = format!(
        "# Answer\n\n{}",
        (0..500)
            .map(|i| format!(
                "{para}- item {i} with `mcp__server__tool_{i}`\n```\nlet x = {i};\n```\n"
            ))
            .collect::<String>()
    );
    update(
        &mut s,
        Event::Engine(harness9::agent::engine::EngineEvent::TextDelta(answer)),
    );
    c.bench_function("session frame, a 2,000-line markdown answer", |b| {
        b.iter(|| {
            term.draw(|f| view(&s, f)).expect("draw");
        })
    });
    // A resumed conversation of 1,000 messages (500 turns: a prompt, a markdown answer with a
    // code block, a tool call), drawn from the transcript `--continue` builds.
    let mut conv = Vec::new();
    for i in 0..500 {
        use harness9::agent::model::{Block, Message, Role};
        conv.push(Message {
            role: Role::User,
            content: vec![Block::Text(format!("question {i}: what does tool {i} do?"))],
        });
        conv.push(Message {
            role: Role::Assistant,
            content: vec![
                Block::Text(format!(
                    "{para}```\ncol1    col2    {i}\n```\nSee [the docs](https://example.com/{i})."
                )),
                Block::ToolUse {
                    id: format!("t{i}"),
                    name: format!("mcp__big__tool_{i:05}"),
                    input: serde_json::json!({}),
                },
            ],
        });
    }
    let mut resumed = state(10);
    resumed.transcript.entries = harness9::tui::state::entries_of(&conv);
    c.bench_function("session frame, a resumed 1,000-message conversation", |b| {
        b.iter(|| {
            term.draw(|f| view(&resumed, f)).expect("draw");
        })
    });
    let table = tools(10_000);
    c.bench_function("take in a 10k-tool table", |b| {
        b.iter(|| update(&mut s, Event::Tools(table.clone())))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
