//! Snapshots of the session views (bar, transcript, input, panel, overview, trace, help)
//! through ratatui's `TestBackend`, driven by the pure update function; the TUI's other view
//! tests are its submodules (`asks`, `diff`, `views`), `support` what they all share.

mod asks;
mod diff;
pub(crate) mod support;
mod views;

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use harness9_actors::messages::{ServerState, ServerStatus, ToolEntry};
use harness9_actors::protocol::jsonrpc::RequestId;
use harness9_actors::trace::{Direction, WireRecord};

use crate::state::{update, Effect, Event, Modal, PanelState, State};

use crate::tests::support::*;

#[test]
fn bar_with_each_status_mix_and_width() {
    let mix = || {
        vec![
            ("context7", connected(2, 300)),
            ("remote-api", failed("HTTP 401", &[])),
            ("slow", starting()),
            ("flaky", restarting(2)),
            ("one", connected(1, 5)),
        ]
    };
    let mut out = String::new();
    for w in [120u16, 60, 40, 24, 12, 5] {
        out.push_str(&format!("{w:>3}: {}\n", bar_text(mix(), w)));
    }
    out.push_str(&format!(
        "one connected, one failed: {}\n",
        bar_text(
            vec![
                ("context7", connected(2, 300)),
                ("remote-api", failed("x", &[]))
            ],
            80
        )
    ));
    out.push_str(&format!(
        "all starting: {}\n",
        bar_text(vec![("a", starting()), ("b", starting())], 80)
    ));
    insta::assert_snapshot!(out);
}

#[test]
fn a_server_that_needs_a_login_says_so_in_the_bar() {
    let needs = ServerState {
        transport: "http",
        status: ServerStatus::NeedsLogin {
            error: "server \"remote\" needs a login: run `harness9 mcp login remote`".into(),
            login_page: None,
        },
    };
    let bar = bar_text(vec![("context7", connected(2, 300)), ("remote", needs)], 80);
    assert!(bar.contains("remote ! needs login"), "{bar}");
}

#[test]
fn session_screen_before_any_server_connected() {
    let mut s = state_with(vec![("everything", starting()), ("py", starting())], vec![]);
    insta::assert_snapshot!(render(&mut s, 80, 12));
}

#[test]
fn session_screen_with_a_call_result_and_an_error() {
    let mut s = state_with(
        vec![("everything", connected(2, 12))],
        vec![tool("everything", "echo", "Echoes back the input string")],
    );
    for c in "/call mcp__everything__echo {\"message\":\"hi\"}".chars() {
        key(&mut s, KeyCode::Char(c));
    }
    key(&mut s, KeyCode::Enter);
    update(
        &mut s,
        Event::CallDone {
            id: 1,
            output: "Echo: hi".into(),
            is_error: false,
            elapsed: Duration::from_millis(7),
        },
    );
    for c in "/call nope".chars() {
        key(&mut s, KeyCode::Char(c));
    }
    key(&mut s, KeyCode::Enter);
    for c in "draft".chars() {
        key(&mut s, KeyCode::Char(c));
    }
    insta::assert_snapshot!(render(&mut s, 80, 12));
}

#[test]
fn another_tools_fields_are_warned_about_in_the_transcript_at_start_and_on_reload() {
    // The warnings the config parser gives for a Cursor-style entry.
    let cfg = harness9_app::config::parse(
        r#"{"mcpServers": {"fs": {"command": "srv", "alwaysAllow": ["read"], "timeout": 60}}}"#,
        ".mcp.json",
        std::path::Path::new("/"),
        &|_| None,
        &harness9_app::config::EntryDefaults {
            sandbox: None,
            oauth_store: std::sync::Arc::new(harness9_actors::oauth::MemoryStore::default()),
            enterprise_idp: None,
            enterprise_idp_error: None,
        },
    )
    .unwrap();
    assert_eq!(cfg.warnings.len(), 2, "{:?}", cfg.warnings);
    let mut s = state_with(vec![("fs", connected(1, 5))], vec![]);
    // At start (`TuiSetup::warnings`).
    crate::transcript::config_warnings(&mut s, cfg.warnings.clone());
    // On a reload: the reload's note, then the warnings.
    update(
        &mut s,
        Event::Notice {
            error: false,
            text: "reloaded .mcp.json: no change".into(),
        },
    );
    update(&mut s, Event::ConfigWarnings(cfg.warnings));
    let screen = render(&mut s, 100, 24);
    for want in [
        "warning: .mcp.json: server \"fs\": \"alwaysAllow\" is not read by harness9; harness9 asks",
        "warning: .mcp.json: server \"fs\": \"timeout\" is not read by harness9; use toolTimeoutSec",
    ] {
        assert_eq!(screen.matches(want).count(), 2, "{want}\n{screen}");
    }
    insta::assert_snapshot!(screen);
}

#[test]
fn panel_with_a_failed_server_and_its_stderr() {
    let mut s = state_with(
        vec![
            ("everything", connected(1, 250)),
            (
                "remote-api",
                failed(
                    "initialize failed: HTTP 401 Unauthorized: missing or wrong bearer token; check the headers of server \"remote-api\" in .mcp.json",
                    &["Traceback (most recent call last):", "  File \"server.py\", line 3", "ImportError: no module named mcp"],
                ),
            ),
        ],
        vec![tool("everything", "echo", "Echoes back the input string")],
    );
    // It comes from the user's file: the panel says so.
    s.set_sources(vec![(
        "remote-api".into(),
        "/home/u/.config/harness9/mcp.json".into(),
    )]);
    s.modal = Some(Modal::Panel(PanelState {
        selected: 1,
        scroll: 0,
    }));
    insta::assert_snapshot!(render(&mut s, 80, 16));
}

#[test]
fn panel_shows_a_servers_log_and_resources_and_loads_them_once() {
    use crate::state::Effect;
    use harness9_actors::messages::{NoticeKind, ServerNotice};
    use harness9_actors::protocol::types::{Resource, ResourceTemplate};
    let mut s = state_with(
        vec![
            ("everything", connected_with_resources(1, 250)),
            ("other", connected_with_resources(0, 9)),
        ],
        vec![tool("everything", "echo", "Echoes back the input string")],
    );
    let log = |level: &str, text: &str| {
        Event::ServerNotice(ServerNotice {
            server: "everything".into(),
            kind: NoticeKind::Log {
                level: level.into(),
                logger: Some("everything-server".into()),
                text: text.into(),
            },
        })
    };
    update(
        &mut s,
        log("info", "Roots updated: 1 root(s) received from client"),
    );
    update(
        &mut s,
        log(
            "warning",
            "Warning-level message\u{1b}[2J with a tail\nsecond line",
        ),
    );
    // Opening the panel asks for the selected server's resources, once.
    typed(&mut s, "/mcp everything");
    let effects = update(&mut s, key_event(KeyCode::Enter));
    assert_eq!(effects, vec![Effect::LoadResources("everything".into())]);
    assert!(render(&mut s, 80, 20).contains("resources: loading…"));
    let resource = |uri: &str, name: &str| Resource {
        uri: uri.into(),
        name: name.into(),
        title: None,
        description: None,
        mime_type: None,
        size: None,
    };
    let template = ResourceTemplate {
        uri_template: "demo://resource/dynamic/text/{resourceId}".into(),
        name: "Dynamic Text Resource".into(),
        title: None,
        description: None,
        mime_type: None,
    };
    update(
        &mut s,
        Event::Resources {
            server: "everything".into(),
            result: Ok((
                vec![
                    resource("demo://resource/static/document/features.md", "features.md"),
                    resource("demo://resource/static/document/startup.md", "startup.md"),
                ],
                vec![template],
            )),
        },
    );
    // Tab to the other server and back: one load for it, none again for this one.
    assert_eq!(
        update(&mut s, key_event(KeyCode::Tab)),
        vec![Effect::LoadResources("other".into())]
    );
    assert_eq!(update(&mut s, key_event(KeyCode::Tab)), vec![]);
    insta::assert_snapshot!(render(&mut s, 80, 20));
    // A list change drops the list and, with the panel on the server, loads it again.
    let changed = update(
        &mut s,
        Event::ServerNotice(ServerNotice {
            server: "everything".into(),
            kind: NoticeKind::ResourcesChanged,
        }),
    );
    assert_eq!(changed, vec![Effect::LoadResources("everything".into())]);
}

#[test]
fn panel_with_10000_tools_scrolled_to_the_middle() {
    let tools: Vec<ToolEntry> = (0..10_000)
        .map(|i| {
            tool(
                "big",
                &format!("tool_{i:05}"),
                &format!("does thing {i}\nsecond line"),
            )
        })
        .collect();
    let mut s = state_with(vec![("big", connected(10_000, 80))], tools);
    s.modal = Some(Modal::Panel(PanelState::default()));
    s.size = (80, 16);
    let total = s.panel_total_lines("big");
    assert_eq!(total, 4 + 30_000);
    s.modal = Some(Modal::Panel(PanelState {
        selected: 0,
        scroll: total / 2,
    }));
    let screen = render(&mut s, 80, 16);
    assert!(screen.contains("mcp__big__tool_05000"), "{screen}");
    // j scrolls one line.
    key(&mut s, KeyCode::Char('j'));
    assert_eq!(
        s.modal,
        Some(Modal::Panel(PanelState {
            selected: 0,
            scroll: total / 2 + 1
        }))
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn a_tool_description_with_escape_sequences_is_shown_clean() {
    let evil = "Reads files.\u{1b}[2J\u{1b}[H\u{1b}]0;owned\u{7} \u{1b}[31mred\u{1b}[0m\rbell\u{7}\u{202e}gnp.exe";
    let mut s = state_with(
        vec![("evil", connected(1, 3))],
        vec![tool("evil", "read\u{1b}[8m", evil)],
    );
    s.modal = Some(Modal::Panel(PanelState::default()));
    let screen = render(&mut s, 70, 12);
    assert!(!screen.contains('\u{1b}'), "{screen}");
    assert!(
        !screen.chars().any(|c| c.is_control() && c != '\n'),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

fn record(server: &str, dir: Direction, id: i64, method: &str, message: &str) -> WireRecord {
    WireRecord {
        ts: SystemTime::UNIX_EPOCH + Duration::from_millis(1_780_000_000_000 + id as u64 * 17),
        server: server.into(),
        dir,
        id: Some(RequestId::Number(id)),
        method: Some(method.into()),
        latency_us: (dir == Direction::Recv).then_some(1234),
        message: Bytes::from(message.to_owned()),
        http_status: None,
        session: None,
        http: None,
        era: None,
    }
}

fn traced_state() -> State {
    use harness9_actors::protocol::methods::{CallTool, Request};
    let mut s = state_with(vec![("a", connected(1, 3)), ("b", connected(1, 3))], vec![]);
    for i in 0..6 {
        let server = if i % 2 == 0 { "a" } else { "b" };
        update(
            &mut s,
            Event::Trace(record(
                server,
                Direction::Send,
                i,
                CallTool::METHOD,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"hi {i}"}}}}}}"#
                ),
            )),
        );
        update(
            &mut s,
            Event::Trace(record(
                server,
                Direction::Recv,
                i,
                CallTool::METHOD,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"Echo: hi {i}\u001b[2J"}}]}}}}"#
                ),
            )),
        );
    }
    s
}

#[test]
fn trace_view_all_filtered_and_expanded() {
    let mut s = traced_state();
    s.trace.secrets = vec!["hi 5".into()];
    s.modal = Some(Modal::Trace(Default::default()));
    let all = render(&mut s, 90, 18);
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::Tab);
    let only_b = render(&mut s, 90, 18);
    key(&mut s, KeyCode::Up);
    key(&mut s, KeyCode::Enter);
    let expanded = render(&mut s, 90, 18);
    assert!(!expanded.contains('\u{1b}'));
    assert!(
        expanded.contains("[redacted]") && !expanded.contains("hi 5"),
        "{expanded}"
    );
    insta::assert_snapshot!(format!("{all}\n{only_b}\n{expanded}"));
}

#[test]
fn help_view() {
    let mut s = state_with(vec![("a", connected(1, 3))], vec![]);
    s.modal = Some(Modal::Help(crate::state::HelpView));
    insta::assert_snapshot!(render(&mut s, 90, 24));
}

#[test]
fn help_view_at_100x30_fills_its_rows_with_what_the_commands_do() {
    let mut s = state_with(vec![("a", connected(1, 3))], vec![]);
    s.modal = Some(Modal::Help(crate::state::HelpView));
    let shown = render(&mut s, 100, 30);
    assert!(!shown.contains("taller window"), "{shown}");
    // Between the modal's top border and the keys, no empty row.
    let rows: Vec<&str> = shown.lines().collect();
    let keys = rows.iter().position(|r| r.contains("│keys")).unwrap();
    let empty = rows[1..keys - 1]
        .iter()
        .filter(|r| r.trim_matches(['"', '│', ' ']).is_empty())
        .count();
    assert_eq!(empty, 0, "{shown}");
    assert!(shown.contains("every MCP server at a glance"), "{shown}");
    insta::assert_snapshot!(shown);
}

#[test]
fn help_view_tall_lists_what_each_command_does() {
    let mut s = state_with(vec![("a", connected(1, 3))], vec![]);
    s.modal = Some(Modal::Help(crate::state::HelpView));
    insta::assert_snapshot!(render(&mut s, 90, 36));
}

#[test]
fn no_servers_no_bar_and_an_empty_panel() {
    let mut s = state_with(vec![], vec![]);
    let session = render(&mut s, 60, 8);
    assert!(!session.contains("[MCP]"));
    s.modal = Some(Modal::Panel(PanelState::default()));
    insta::assert_snapshot!(format!("{session}\n{}", render(&mut s, 60, 8)));
}

#[test]
fn a_model_turn_streams_text_and_folds_tool_calls() {
    use harness9_agent::engine::EngineEvent;
    let mut s = state_with(
        vec![("everything", connected(2, 12))],
        vec![tool("everything", "echo", "Echoes back the input string")],
    );
    s.model.label = Some("anthropic claude-sonnet-4-5".into());
    for c in "say hi through echo".chars() {
        key(&mut s, KeyCode::Char(c));
    }
    key(&mut s, KeyCode::Enter);
    for piece in ["Let me ", "call echo."] {
        update(&mut s, Event::Engine(EngineEvent::TextDelta(piece.into())));
    }
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolStarted {
            id: "toolu_1".into(),
            name: "mcp__everything__echo".into(),
            arguments: serde_json::json!({"message": "hi"}),
        }),
    );
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolProgress {
            id: "toolu_1".into(),
            progress: 2.0,
            total: Some(5.0),
            message: Some("step 2\u{1b}[2J".into()),
        }),
    );
    let running = render(&mut s, 80, 12);
    assert!(running.contains("running 2/5 step 2"), "{running}");
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolFinished {
            id: "toolu_1".into(),
            name: "mcp__everything__echo".into(),
            is_error: false,
            elapsed: Duration::from_millis(6),
            output: "Echo: hi".into(),
            output_bytes: 8,
            spilled: None,
        }),
    );
    update(
        &mut s,
        Event::Engine(EngineEvent::TextDelta("Done: hi.".into())),
    );
    update(
        &mut s,
        Event::TurnDone(Ok("2 model calls · 1.2 s · 20 tokens in, 10 out".into())),
    );
    assert!(!s.turn.busy);
    let folded = render(&mut s, 80, 12);
    update(
        &mut s,
        Event::Key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL)),
    );
    let expanded = render(&mut s, 80, 14);
    insta::assert_snapshot!(format!("{running}\n{folded}\n{expanded}"));
}

#[test]
fn a_multi_line_input_grows_the_box_and_a_long_one_scrolls_with_the_cursor() {
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    update(
        &mut s,
        Event::Paste("fn main() {\n    println!(\"hi\");\n}".into()),
    );
    let screen = render(&mut s, 60, 10);
    insta::assert_snapshot!("multi_line_input", screen);
    // Twelve lines with the cursor on the last: the box shows the last eight.
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    let text: Vec<String> = (1..=12).map(|i| format!("line {i}")).collect();
    update(&mut s, Event::Paste(text.join("\n")));
    let screen = render(&mut s, 60, 14);
    assert!(
        !screen.contains("> line 1") && screen.contains("  line 12"),
        "{screen}"
    );
    insta::assert_snapshot!("long_input_window", screen);
}

#[test]
fn a_tool_call_waiting_for_the_users_answer() {
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    s.model.label = Some("anthropic claude".into());
    for (key, name, args) in [
        (
            1,
            "bash",
            r#"{"command":"cargo test --workspace 2>&1 | tail -20","timeout_secs":300}"#,
        ),
        (2, "write_file", r#"{"path":"a.txt","content":"x"}"#),
    ] {
        update(
            &mut s,
            Event::ApprovalAsked({
                let mut a = crate::state::Approval::new(key, name.into(), args.into());
                let v: serde_json::Value = serde_json::from_str(args).unwrap();
                a.tool_rule = harness9_agent::permissions::tool_rule(name, None, &v);
                a
            }),
        );
    }
    settle(&mut s);
    insta::assert_snapshot!(render(&mut s, 60, 14));
}

/// A call waiting for the user says so on its line; the box shows its arguments
/// pretty-printed, ten rows at a time, and ↓ scrolls them.
#[test]
fn a_waiting_call_says_so_and_its_long_arguments_scroll() {
    use harness9_agent::engine::EngineEvent;
    let mut s = state_with(vec![], vec![]);
    s.model.label = Some("anthropic m".into());
    typed(&mut s, "go");
    update(&mut s, key_event(KeyCode::Enter));
    let args = serde_json::json!({
        "path": "notes/plan.md",
        "content": (1..=14).map(|i| format!("line {i}")).collect::<Vec<_>>(),
    });
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolStarted {
            id: "t1".into(),
            name: "write_file".into(),
            arguments: args.clone(),
        }),
    );
    update(
        &mut s,
        Event::ApprovalAsked({
            let mut a = crate::state::Approval::new(1, "write_file".into(), args.to_string());
            a.call = Some("t1".into());
            a.tool_rule = Some("write_file".into());
            a
        }),
    );
    settle(&mut s);
    let first = render(&mut s, 70, 26);
    assert!(
        first.contains("write_file builtin · waiting for you"),
        "{first}"
    );
    update(&mut s, key_event(KeyCode::Down));
    update(&mut s, key_event(KeyCode::Down));
    insta::assert_snapshot!(format!("{first}\n{}", render(&mut s, 70, 26)));
    let effects = update(&mut s, key_event(KeyCode::Char('y')));
    assert_eq!(
        effects,
        vec![Effect::Answer {
            key: 1,
            answer: harness9_agent::engine::Answer::Yes
        }]
    );
    let after = render(&mut s, 70, 26);
    assert!(after.contains("write_file builtin · running"), "{after}");
}

/// Typing `/` opens the menu of commands with what each does, narrowed as more is typed; an
/// ambiguous Tab after `/call` lists the tools in a popup with their servers.
#[test]
fn the_slash_menu_and_the_tab_popup() {
    let mut s = with_servers(&["everything"], 3);
    typed(&mut s, "/");
    let all = render(&mut s, 80, 16);
    s.editor.input.clear();
    s.editor.cursor = 0;
    typed(&mut s, "/c");
    let narrowed = render(&mut s, 80, 16);
    s.editor.input.clear();
    s.editor.cursor = 0;
    typed(&mut s, "/call mcp__everything__t");
    update(&mut s, key_event(KeyCode::Tab));
    let popup = render(&mut s, 80, 16);
    insta::assert_snapshot!(format!("{all}\n{narrowed}\n{popup}"));
}

/// `/mcp` opens on every server at a glance, the failed one selected with its error; the
/// disabled one dim at the end; Enter opens the selected server's view.
#[test]
fn the_mcp_overview_with_a_failed_server() {
    let mut s = state_with(
        vec![
            ("everything", connected(13, 412)),
            (
                "broken",
                failed(
                    "spawn /nonexistent/nope: No such file or directory (os error 2)",
                    &[],
                ),
            ),
            ("docs", connected(2, 95)),
        ],
        vec![],
    );
    s.servers.disabled = vec!["old".into()];
    s.servers
        .sources
        .insert("docs".into(), "/home/u/.config/harness9/mcp.json".into());
    typed(&mut s, "/mcp");
    update(&mut s, key_event(KeyCode::Enter));
    let overview = render(&mut s, 100, 14);
    update(&mut s, key_event(KeyCode::Enter));
    let opened = render(&mut s, 100, 14);
    assert!(opened.contains("┌ MCP servers"), "{opened}");
    insta::assert_snapshot!(overview);
}

#[test]
fn a_server_without_the_resources_capability_is_never_asked_for_resources() {
    let mut s = state_with(
        vec![("fs", connected(14, 30))],
        vec![tool("fs", "read_file", "Read a file")],
    );
    // Neither the panel nor an `@fs:` mention loads its resources.
    typed(&mut s, "/mcp fs");
    let effects = update(&mut s, key_event(KeyCode::Enter));
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::LoadResources(_))),
        "{effects:?}"
    );
    let shown = render(&mut s, 80, 20);
    assert!(!shown.contains("resources:"), "{shown}");
    update(&mut s, key_event(KeyCode::Esc));
    typed(&mut s, "@fs:");
    let effects = update(&mut s, key_event(KeyCode::Tab));
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::LoadResources(_))),
        "{effects:?}"
    );
}

/// What the actor learns (a model switched, a conversation resumed, a compaction, the clock)
/// comes back as events: `update` is the only writer of the state.
#[test]
fn the_actors_results_are_events_update_applies() {
    use crate::state::Entry;
    use harness9_agent::engine::compact::Compacted;
    let mut s = state_with(vec![], vec![]);
    s.model.label = Some("anthropic m".into());
    let settings =
        harness9_agent::model::settings::resolve_from(&Default::default(), &|_| None, None);
    if let Ok(settings) = settings {
        update(
            &mut s,
            Event::ModelSwitched {
                model: "openai llama3".into(),
                model_id: "llama3".into(),
                context_window: Some(8192),
                settings: std::sync::Arc::new(settings),
            },
        );
        assert_eq!(s.model.label.as_deref(), Some("openai llama3"));
        assert_eq!(s.model.context_window, Some(8192));
        assert!(
            matches!(s.transcript.entries.last(), Some(Entry::Info(t)) if t == "the next turn uses openai llama3")
        );
    }
    update(
        &mut s,
        Event::Resumed {
            session_id: "abc".into(),
            entries: vec![Entry::Info("old".into())],
        },
    );
    assert_eq!(s.model.session_id.as_deref(), Some("abc"));
    assert_eq!(s.transcript.entries, vec![Entry::Info("old".into())]);
    let c = Compacted {
        replaced: 4,
        tokens_before: 900,
        tokens_after: 100,
        usage: Default::default(),
    };
    update(&mut s, Event::CompactDone(Ok(c)));
    assert_eq!(s.model.context_used, Some(100));
    update(&mut s, Event::CompactDone(Err("nothing to compact".into())));
    assert!(
        matches!(s.transcript.entries.last(), Some(Entry::Error(t)) if t == "nothing to compact")
    );
    s.turn.busy = true;
    update(&mut s, Event::Tick(Some(3)));
    assert_eq!((s.turn.spinner, s.turn.busy_secs), (1, 3));
    update(&mut s, Event::TurnNotStarted);
    update(&mut s, Event::Tick(None));
    assert!(!s.turn.busy && s.turn.busy_secs == 0);
}
