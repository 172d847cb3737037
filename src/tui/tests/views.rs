//! Snapshots of the session views of a configured model (the context gauge, `/status`,
//! `/tools`, `/cost`, `/resume`, a resumed and a compacted conversation) and of the MCP client
//! features in the transcript (a result that does not match its `outputSchema`, `@` mentions,
//! resource subscriptions, a disabled server in the bar, running tasks in the bar and `/tasks`),
//! driven by the pure update function.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crossterm::event::KeyCode;
use harness9_actors::messages::{NoticeKind, ServerNotice, ServerState, ServerStatus, ToolEntry};
use harness9_actors::protocol::types::{
    CallToolResult, ContentBlock, Resource, ResourceTemplate, ServerCapabilities,
};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;
use ratatui::Terminal;

use crate::state::{update, Effect, Event, State};
use crate::tests::support::{connected, failed, key_event, render, state_with, tool, typed};
use crate::view::view;
use harness9_agent::engine::EngineEvent;
use harness9_agent::model::settings::{self, ModelFlags, Settings};
use harness9_agent::model::{Block, Message, Role, Usage};

/// The shipped settings (prices, context windows) with `model` of Anthropic, as the actor
/// resolves them at start or on `/model`.
fn shipped_settings(model: &str) -> Settings {
    let env = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| "test-key".to_owned());
    let flags = ModelFlags {
        model: Some(model.to_owned()),
        ..ModelFlags::default()
    };
    settings::resolve_from(&flags, &env, None).unwrap()
}

/// Sets the model as the actor does at start (and on `/model`): its name, bare id, window and
/// the settings.
fn use_model(s: &mut State, model: &str) {
    let settings = shipped_settings(model);
    s.model.label = Some(format!("anthropic {model}"));
    s.model.id = Some(model.to_owned());
    s.model.context_window = settings.context_window(model);
    s.model.settings = Some(Arc::new(settings));
}

/// A finished model call with this usage.
fn model_done(s: &mut State, input: u64, cached: u64, output: u64) {
    update(
        s,
        Event::Engine(EngineEvent::ModelDone {
            step: 1,
            text: String::new(),
            tool_calls: 0,
            elapsed: Duration::from_millis(900),
            usage: Usage {
                input_tokens: input,
                output_tokens: output,
                cached_input_tokens: cached,
            },
            tools: Default::default(),
        }),
    );
}

/// Types a line and presses Enter; returns the effects.
fn send(s: &mut State, line: &str) -> Vec<Effect> {
    typed(s, line);
    update(s, key_event(KeyCode::Enter))
}

/// The screen's buffer, for styles.
fn render_buffer(s: &mut State, w: u16, h: u16) -> Buffer {
    s.size = (w, h);
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| view(s, f)).unwrap();
    t.backend().buffer().clone()
}

/// The bottom row of the screen: the status line.
fn status_row(s: &mut State, w: u16) -> String {
    let screen = render(s, w, 6);
    screen.lines().last().unwrap_or_default().to_owned()
}

/// The cells of row `y` whose text starts at the first `needle` on it.
fn cells_of<'a>(buf: &'a Buffer, y: u16, needle: &str) -> Vec<&'a ratatui::buffer::Cell> {
    let row: Vec<&ratatui::buffer::Cell> = (0..buf.area.width).map(|x| &buf[(x, y)]).collect();
    let text: String = row.iter().map(|c| c.symbol()).collect();
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not on row {y}: {text}"));
    let start = text[..at].chars().count();
    row[start..start + needle.chars().count()].to_vec()
}

/// server-everything connected, with the resources capability.
fn with_resources(tools: usize) -> ServerState {
    let mut st = connected(tools, 40);
    if let ServerStatus::Connected { info, .. } = &mut st.status {
        info.capabilities = Arc::new(ServerCapabilities {
            resources: Some(serde_json::json!({"subscribe": true, "listChanged": true})),
            ..Default::default()
        });
    }
    st
}

/// The status line's gauge: the last request's tokens against the window the settings know
/// (yellow from 80%), just the tokens for a model without a known window, nothing before the
/// first request.
#[test]
fn the_context_gauge_with_a_known_and_an_unknown_window() {
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    use_model(&mut s, "claude-sonnet-4-5");
    assert_eq!(s.model.context_window, Some(200_000));
    let before = status_row(&mut s, 110);
    assert!(!before.contains("context"), "{before}");
    model_done(&mut s, 50_000, 0, 300);
    let quarter = status_row(&mut s, 110);
    assert!(quarter.contains("context 25% of 200k"), "{quarter}");
    model_done(&mut s, 170_000, 0, 300);
    let full = status_row(&mut s, 110);
    assert!(full.contains("context 85% of 200k"), "{full}");
    let buf = render_buffer(&mut s, 110, 6);
    for c in cells_of(&buf, 5, "context 85% of 200k") {
        assert_eq!(c.fg, Color::Yellow, "a nearly full context is drawn yellow");
    }
    // A model the settings have no window for: the tokens alone.
    let mut u = state_with(vec![("everything", connected(2, 12))], vec![]);
    use_model(&mut u, "my-local-model");
    assert_eq!(u.model.context_window, None);
    model_done(&mut u, 12_345, 0, 10);
    let unknown = status_row(&mut u, 110);
    assert!(unknown.contains("context 12k tokens"), "{unknown}");
    let buf = render_buffer(&mut u, 110, 6);
    for c in cells_of(&buf, 5, "context 12k tokens") {
        assert_eq!(c.fg, Color::Reset, "an unknown window is never a warning");
    }
    insta::assert_snapshot!(format!("{before}\n{quarter}\n{full}\n{unknown}"));
}

/// `/status`: the model, the context against its window, the session id, the servers (the
/// failed one named), the cost so far and the tools turned off.
#[test]
fn status_shows_model_context_session_servers_and_cost() {
    let mut s = state_with(
        vec![
            ("everything", connected(2, 12)),
            (
                "broken",
                failed("spawn nope: No such file or directory", &[]),
            ),
            ("docs", connected(1, 30)),
        ],
        vec![
            tool("everything", "echo", "Echoes back the input string"),
            tool("everything", "add", "Adds two numbers"),
        ],
    );
    use_model(&mut s, "claude-sonnet-4-5");
    s.model.session_id = Some("20260301-101500-a1b2c3".into());
    // Before any request.
    send(&mut s, "/status");
    model_done(&mut s, 40_000, 30_000, 1_200);
    model_done(&mut s, 42_000, 40_000, 800);
    assert_eq!(
        send(&mut s, "/tools off mcp__everything__add"),
        vec![Effect::DisableTools(
            ["mcp__everything__add".to_owned()].into()
        )]
    );
    send(&mut s, "/status");
    let screen = render(&mut s, 90, 22);
    // 82,000 in (70,000 cached at $0.3/M, 12,000 at $3/M), 2,000 out at $15/M: $0.087.
    for want in [
        "model: anthropic claude-sonnet-4-5",
        "context: 42000 of 200000 tokens (21%)",
        "session: 20260301-101500-a1b2c3",
        "servers: 2 of 3 connected; failed: broken (/mcp shows why)",
        "cost so far: $0.0870",
        "tools off: mcp__everything__add",
        "context: no request yet",
    ] {
        assert!(screen.contains(want), "{want:?} missing:\n{screen}");
    }
    insta::assert_snapshot!(screen);
}

/// `/status` of a model `[context_windows]` does not name: the window tool search defers
/// against (the provider's default), said as assumed, not "window unknown".
#[test]
fn status_names_the_window_tool_search_assumes() {
    let mut s = state_with(vec![], vec![]);
    use_model(&mut s, "my-own-model");
    assert_eq!(s.model.context_window, None);
    model_done(&mut s, 50_000, 0, 100);
    send(&mut s, "/status");
    let screen = render(&mut s, 200, 22);
    assert!(
        screen.contains("context: 50000 tokens of an assumed 200000-token window (25%;"),
        "{screen}"
    );
    assert!(!screen.contains("window unknown"), "{screen}");
}

/// `/tools`: every tool with its source (a server, or built-in), the one turned off marked.
#[test]
fn tools_lists_each_tool_with_its_source_and_marks_the_one_off() {
    let mut tools = vec![
        tool("everything", "echo", "Echoes back the input string"),
        tool("everything", "add", "Adds two numbers"),
        tool("docs", "search", "Searches the docs"),
    ];
    tools.extend(
        harness9_agent::builtins::definitions()
            .into_iter()
            .map(|t| ToolEntry {
                name: t.name.as_str().into(),
                server: None,
                tool: Arc::new(t),
            }),
    );
    let n = tools.len();
    let mut s = state_with(
        vec![("everything", connected(2, 12)), ("docs", connected(1, 30))],
        tools,
    );
    use_model(&mut s, "claude-sonnet-4-5");
    send(&mut s, "/tools off bash");
    send(&mut s, "/tools");
    let screen = render(&mut s, 90, n as u16 + 16);
    for want in [
        &format!("{n} tools (name, source)") as &str,
        "  everything     2 tools       177 bytes  ~    45 tokens\n",
        "  built-in      10 tools",
        "  MCP in all: 257 bytes, ~65 tokens\n",
        "mcp__everything__echo  everything\n",
        "mcp__docs__search  docs\n",
        "bash  built-in  (off)",
        "read_file  built-in\n",
    ] {
        let flat: String = screen
            .lines()
            .map(|l| l.trim_matches('"').trim_end())
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        assert!(flat.contains(want), "{want:?} missing:\n{screen}");
    }
    insta::assert_snapshot!(screen);
}

/// `/cost`: the tokens and estimated cost per model (one with a price, one without), then the
/// total.
#[test]
fn cost_shows_tokens_and_the_estimate_per_model() {
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    use_model(&mut s, "claude-sonnet-4-5");
    send(&mut s, "/cost");
    model_done(&mut s, 100_000, 80_000, 2_000);
    // `/model` switches: the next calls count for the other model.
    use_model(&mut s, "claude-opus-4-1");
    model_done(&mut s, 10_000, 0, 1_000);
    use_model(&mut s, "my-local-model");
    model_done(&mut s, 5_000, 0, 500);
    send(&mut s, "/cost");
    let screen = render(&mut s, 100, 14);
    for want in [
        "no model calls yet",
        // 20,000 x $3 + 80,000 x $0.3 + 2,000 x $15, per million.
        "claude-sonnet-4-5: 100000 tokens in (80000 cached), 2000 out: $0.1140",
        // 10,000 x $15 + 1,000 x $75.
        "claude-opus-4-1: 10000 tokens in (0 cached), 1000 out: $0.2250",
        "my-local-model: 5000 tokens in (0 cached), 500 out: no price",
        "total: $0.3390",
    ] {
        assert!(screen.contains(want), "{want:?} missing:\n{screen}");
    }
    insta::assert_snapshot!(screen);
}

/// A conversation of a user question, a tool call and the answer, then a follow-up.
fn saved_conversation() -> Vec<Message> {
    let text = |role, t: &str| Message {
        role,
        content: vec![Block::Text(t.to_owned())],
    };
    vec![
        text(Role::User, "list the files in src and say which is largest"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Text("Let me look.".into()),
                Block::ToolUse {
                    id: "t1".into(),
                    name: "list_dir".into(),
                    input: serde_json::json!({"path": "src"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                id: "t1".into(),
                content: vec![harness9_agent::model::ResultPart::Text(
                    "main.rs 120 B\nlib.rs 4.1 KB".into(),
                )],
                is_error: false,
            }],
        },
        text(Role::Assistant, "`lib.rs` is the largest (4.1 KB)."),
        text(Role::User, "and the smallest?"),
        text(Role::Assistant, "`main.rs`, at 120 bytes."),
    ]
}

/// A fresh sessions directory for one test.
fn sessions_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("h9-tui-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Saves `messages` as session `id` of `dir`, last written at `modified` (seconds).
fn save_session(dir: &std::path::Path, id: &str, model: &str, messages: &[Message], modified: u64) {
    save_session_in(dir, "/home/u/project", id, model, messages, modified)
}

/// [`save_session`] of a session that ran in `cwd`.
fn save_session_in(
    dir: &std::path::Path,
    cwd: &str,
    id: &str,
    model: &str,
    messages: &[Message],
    modified: u64,
) {
    use harness9_app::stores::conversations::SessionFile;
    let mut f = SessionFile::create(dir, std::path::Path::new(cwd), model).unwrap();
    f.append(messages).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::rename(f.path(), &path).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(modified))
        .unwrap();
}

/// `/resume` without an id opens a picker of the saved conversations, newest first: id, date, model, size
/// and the first prompt (the list is the sessions module's, shown as the actor notes it).
#[test]
fn the_resume_list_shows_date_model_size_and_first_prompt() {
    let dir = sessions_dir("resume-list");
    save_session(
        &dir,
        "20260301-101500-a1b2c3",
        "claude-sonnet-4-5",
        &saved_conversation(),
        1_772_360_100,
    );
    save_session(
        &dir,
        "20260302-083000-d4e5f6",
        "gpt-4.1",
        &saved_conversation()[4..],
        1_772_440_260,
    );
    // An empty session (started, nothing said) is not offered.
    save_session(
        &dir,
        "20260303-090000-000000",
        "gpt-4.1",
        &[],
        1_772_528_400,
    );
    // Another directory's session: not in this project's list, in every directory's.
    save_session_in(
        &dir,
        "/srv/other",
        "20260304-120000-777777",
        "gpt-4.1",
        &saved_conversation()[4..],
        1_772_625_600,
    );
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    use_model(&mut s, "claude-sonnet-4-5");
    assert_eq!(send(&mut s, "/resume"), vec![Effect::Resume(String::new())]);
    let here = std::path::Path::new("/home/u/project");
    let list = harness9_app::stores::conversations::listing(&dir, here, 20);
    let _ = std::fs::remove_dir_all(&dir);
    // What the actor does for an empty id: the picker on the listing.
    crate::resume::open(&mut s, list.clone());
    let screen = render(&mut s, 130, 10);
    assert_eq!((list.here.len(), list.all.len()), (2, 3), "{list:?}");
    assert!(!screen.contains("777777"), "another directory's: {screen}");
    assert!(screen.contains("this project's"), "{screen}");
    assert!(
        screen.contains(
            "20260302-083000-d4e5f6  2026-03-02 08:31  gpt-4.1  2 msgs 1 KiB  and the smallest?"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("20260301-101500-a1b2c3  2026-03-01 10:15  claude-sonnet-4-5  6 msgs 1 KiB  list the files in src and say which is largest"),
        "{screen}"
    );
    assert!(
        screen.contains("› 20260302-083000-d4e5f6"),
        "the newest is selected: {screen}"
    );
    insta::assert_snapshot!(screen);
    // ↓ then Enter resumes the older one, as `/resume ID` would; Esc would close it.
    let key = |s: &mut State, code: KeyCode| {
        update(
            s,
            Event::Key(crossterm::event::KeyEvent::new(
                code,
                crossterm::event::KeyModifiers::NONE,
            )),
        )
    };
    assert!(key(&mut s, KeyCode::Down).is_empty());
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Resume("20260301-101500-a1b2c3".to_owned())]
    );
    assert!(s.modal.is_none());
    // `a`: every directory's, each row naming its directory; Enter resumes the selected.
    crate::resume::open(&mut s, list.clone());
    assert!(key(&mut s, KeyCode::Char('a')).is_empty());
    let screen = render(&mut s, 130, 10);
    assert!(
        screen.contains("› 20260304-120000-777777  2026-03-04 12:00  /srv/other  gpt-4.1"),
        "{screen}"
    );
    assert!(
        screen.contains("20260302-083000-d4e5f6  2026-03-02 08:31  /home/u/project  gpt-4.1"),
        "{screen}"
    );
    assert!(screen.contains("every directory's"), "{screen}");
    assert_eq!(
        key(&mut s, KeyCode::Enter),
        vec![Effect::Resume("20260304-120000-777777".to_owned())]
    );
    crate::resume::open(&mut s, list);
    assert!(key(&mut s, KeyCode::Esc).is_empty() && s.modal.is_none());
    crate::resume::open(&mut s, Default::default());
    assert!(s.modal.is_none(), "nothing to pick: a note instead");
}

/// A saved conversation opened again shows what the user said, the model's answers and a line
/// per tool call, then the note that it was resumed; a compaction later in the session says
/// what it replaced and the gauge drops to the summary's size.
#[test]
fn a_resumed_conversation_and_a_compaction_notice() {
    use harness9_agent::engine::compact::Compacted;
    use harness9_app::stores::conversations::{open, Resume};
    let dir = sessions_dir("resumed");
    save_session(
        &dir,
        "20260301-101500-a1b2c3",
        "claude-sonnet-4-5",
        &saved_conversation(),
        1_772_360_100,
    );
    let opened = open(
        &dir,
        &Resume::Id("20260301-101500-a1b2c3".into()),
        std::path::Path::new("/home/u/project"),
        "claude-sonnet-4-5",
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(opened.messages, saved_conversation());
    // As the actor does on /resume ID (and the start on --resume).
    let mut s = state_with(vec![("everything", connected(2, 12))], vec![]);
    use_model(&mut s, "claude-sonnet-4-5");
    let mut entries = crate::state::entries_of(&opened.messages);
    entries.extend(opened.note.clone().map(crate::state::Entry::Info));
    s.transcript.entries = entries;
    s.model.session_id = Some(opened.file.id.clone());
    let resumed = render(&mut s, 80, 20);
    for want in [
        "› list the files in src and say which is largest",
        "Let me look.",
        "⚙ list_dir",
        "lib.rs is the largest (4.1 KB).",
        "› and the smallest?",
        "resumed session 20260301-101500-a1b2c3 (6 messages, model",
    ] {
        assert!(resumed.contains(want), "{want:?} missing:\n{resumed}");
    }
    // A turn that starts near the window's end compacts first.
    send(&mut s, "now count the lines");
    model_done(&mut s, 170_000, 0, 20);
    update(
        &mut s,
        Event::Engine(EngineEvent::Compacted {
            reason: "the last request used 170000 of 200000 tokens".into(),
            compacted: Compacted {
                replaced: 6,
                tokens_before: 170_000,
                tokens_after: 1_200,
                usage: Default::default(),
            },
        }),
    );
    let compacted = render(&mut s, 110, 10);
    assert!(
        compacted.contains("compacted 6 earlier messages into a summary (~170000 -> ~1200"),
        "{compacted}"
    );
    assert!(compacted.contains("context 0% of 200k"), "{compacted}");
    insta::assert_snapshot!(format!("{resumed}\n{compacted}"));
}

/// A result whose `structuredContent` does not match the tool's `outputSchema`: the mismatch
/// line shows under the result of a `/call` and of the model's call (Ctrl+O), the result kept.
#[test]
fn a_result_that_does_not_match_its_output_schema_says_so() {
    let result = CallToolResult {
        content: vec![ContentBlock::Text {
            text: "{\"temperature\":\"warm\"}".into(),
        }],
        structured_content: Some(serde_json::json!({"temperature": "warm"})),
        is_error: false,
        result_type: None,
        // As the registry words it (`check_output`).
        schema_error: Some(
            "structuredContent does not match the tool's outputSchema: at /temperature: \"warm\" is not of type \"number\""
                .into(),
        ),
        task: None,
    };
    let mut s = state_with(
        vec![("weather", connected(1, 12))],
        vec![tool("weather", "get_weather", "The weather of a city")],
    );
    use_model(&mut s, "claude-sonnet-4-5");
    let effects = send(
        &mut s,
        "/call mcp__weather__get_weather {\"city\":\"Paris\"}",
    );
    assert!(
        matches!(effects.as_slice(), [Effect::CallTool { id: 1, .. }]),
        "{effects:?}"
    );
    update(
        &mut s,
        Event::CallDone {
            id: 1,
            output: result.text(),
            is_error: false,
            elapsed: Duration::from_millis(8),
        },
    );
    // The model's call of the same tool.
    send(&mut s, "and in Rome?");
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolStarted {
            id: "toolu_1".into(),
            name: "mcp__weather__get_weather".into(),
            arguments: serde_json::json!({"city": "Rome"}),
        }),
    );
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolFinished {
            id: "toolu_1".into(),
            name: "mcp__weather__get_weather".into(),
            is_error: false,
            elapsed: Duration::from_millis(9),
            output: result.text(),
            output_bytes: 0,
            spilled: None,
        }),
    );
    let folded = render(&mut s, 90, 14);
    update(
        &mut s,
        Event::Key(crossterm::event::KeyEvent::new(
            KeyCode::Char('o'),
            crossterm::event::KeyModifiers::CONTROL,
        )),
    );
    let expanded = render(&mut s, 90, 16);
    let note = "[harness9 checked the result: structuredContent does not match the tool's outputSchema: at /temperature: \"warm\" is not of type \"number\"]";
    let flat = |screen: &str| -> String {
        screen
            .lines()
            .map(|l| l.trim_matches('"').trim())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        flat(&folded).contains(note),
        "the /call shows the mismatch:\n{folded}"
    );
    assert_eq!(
        flat(&expanded).matches(note).count(),
        2,
        "both calls show the mismatch once expanded:\n{expanded}"
    );
    // Folded, the model's call says so on its own line.
    assert_eq!(
        folded
            .matches("· result does not match its outputSchema")
            .count(),
        2,
        "both tool lines are marked:\n{folded}"
    );
    insta::assert_snapshot!(format!("{folded}\n{expanded}"));
}

fn resource(uri: &str, name: &str) -> Resource {
    Resource {
        uri: uri.into(),
        name: name.into(),
        title: None,
        description: None,
        mime_type: None,
        size: None,
    }
}

/// `@` and Tab: the servers that offer resources; then a server's resources and templates
/// (loaded on the first Tab) in a popup; inside a template's variable the server's values.
#[test]
fn the_resource_mention_popup() {
    let mut s = state_with(
        vec![
            ("everything", with_resources(2)),
            ("extra", with_resources(0)),
            // Connected, but without resources: not offered.
            ("plain", connected(1, 9)),
        ],
        vec![],
    );
    use_model(&mut s, "claude-sonnet-4-5");
    typed(&mut s, "summarize @");
    // To the servers' common prefix, then the popup.
    assert_eq!(update(&mut s, key_event(KeyCode::Tab)), vec![]);
    assert_eq!(s.editor.input, "summarize @e");
    assert_eq!(update(&mut s, key_event(KeyCode::Tab)), vec![]);
    let servers = render(&mut s, 80, 14);
    assert_eq!(
        s.editor
            .popup
            .as_ref()
            .map(|p| p.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>()),
        Some(vec!["@everything:".into(), "@extra:".into()])
    );
    typed(&mut s, "v");
    update(&mut s, key_event(KeyCode::Tab));
    assert_eq!(s.editor.input, "summarize @everything:");
    // The first Tab into the server loads its resources.
    assert_eq!(
        update(&mut s, key_event(KeyCode::Tab)),
        vec![Effect::LoadResources("everything".into())]
    );
    update(
        &mut s,
        Event::Resources {
            server: "everything".into(),
            result: Ok((
                vec![
                    resource(
                        "demo://resource/static/document/architecture.md",
                        "architecture.md",
                    ),
                    resource("demo://resource/static/document/features.md", "features.md"),
                    resource("demo://resource/static/document/startup.md", "startup.md"),
                ],
                vec![ResourceTemplate {
                    uri_template: "demo://resource/dynamic/text/{resourceId}".into(),
                    name: "Dynamic Text Resource".into(),
                    title: None,
                    description: None,
                    mime_type: None,
                }],
            )),
        },
    );
    // Tab again: to the common prefix, then the popup of every candidate.
    update(&mut s, key_event(KeyCode::Tab));
    assert_eq!(s.editor.input, "summarize @everything:demo://resource/");
    update(&mut s, key_event(KeyCode::Tab));
    let uris = render(&mut s, 80, 14);
    for want in [
        "@everything:demo://resource/static/document/architecture.md",
        "@everything:demo://resource/static/document/startup.md",
        "@everything:demo://resource/dynamic/text/{resourceId}",
    ] {
        assert!(uris.contains(want), "{want:?} missing:\n{uris}");
    }
    // Into the template's variable: the server is asked for values, and its answer is the popup.
    typed(&mut s, "dynamic/text/");
    let asked = update(&mut s, key_event(KeyCode::Tab));
    assert!(
        matches!(asked.as_slice(), [Effect::CompleteTemplate { variable, .. }] if variable == "resourceId"),
        "{asked:?}"
    );
    update(
        &mut s,
        Event::MentionCompleted {
            input: "summarize @everything:demo://resource/dynamic/text/".into(),
            head: "@everything:demo://resource/dynamic/text/".into(),
            tail: String::new(),
            values: vec!["1".into(), "2".into(), "3".into()],
        },
    );
    let values = render(&mut s, 80, 14);
    assert!(
        values.contains("@everything:demo://resource/dynamic/text/2"),
        "{values}"
    );
    insta::assert_snapshot!(format!("{servers}\n{uris}\n{values}"));
}

/// `/subscribe @server:uri` asks the registry; each `notifications/resources/updated` of the
/// server then shows as a line in the transcript (the confirmation is the actor's, checked by
/// the tmux test).
#[test]
fn resource_changes_show_after_subscribe() {
    let mut s = state_with(vec![("everything", with_resources(2))], vec![]);
    use_model(&mut s, "claude-sonnet-4-5");
    let uri = "demo://resource/static/document/features.md";
    assert_eq!(
        send(&mut s, &format!("/subscribe @everything:{uri}")),
        vec![Effect::Subscribe {
            server: "everything".into(),
            uri: uri.into(),
            on: true,
        }]
    );
    // Without @server:uri: how to write it.
    assert_eq!(send(&mut s, "/subscribe features.md"), vec![]);
    for u in [uri, "demo://resource/static/document/evil\u{1b}[2J.md", uri] {
        let effects = update(
            &mut s,
            Event::ServerNotice(ServerNotice {
                server: "everything".into(),
                kind: NoticeKind::ResourceUpdated { uri: u.into() },
            }),
        );
        assert_eq!(effects, vec![]);
    }
    let screen = render(&mut s, 90, 14);
    assert!(!screen.contains('\u{1b}'), "{screen}");
    assert_eq!(
        screen
            .matches(&format!("everything: resource {uri} changed"))
            .count(),
        2,
        "{screen}"
    );
    assert_eq!(
        send(&mut s, &format!("/unsubscribe @everything:{uri}")),
        vec![Effect::Subscribe {
            server: "everything".into(),
            uri: uri.into(),
            on: false,
        }]
    );
    insta::assert_snapshot!(screen);
}

/// A server the config disables stays in the MCP bar, after the others, and dim: its name and
/// mark in dark grey while the running servers' names are not; the overview draws its row dim
/// too.
#[test]
fn a_disabled_server_is_drawn_dim_in_the_bar() {
    let mut s = state_with(
        vec![
            ("everything", connected(2, 12)),
            ("broken", failed("HTTP 401", &[])),
        ],
        vec![],
    );
    s.servers.disabled = vec!["old-server".into()];
    let (w, h) = (90, 6);
    let screen = render(&mut s, w, h);
    let bar_row = h - 2;
    let bar = screen.lines().nth(bar_row as usize).unwrap_or_default();
    assert!(
        bar.contains("[MCP] broken ✗ failed │ everything ● 2 tools │ old-server ◌ disabled"),
        "{screen}"
    );
    let buf = render_buffer(&mut s, w, h);
    for c in cells_of(&buf, bar_row, "old-server ◌ disabled") {
        if c.symbol() != " " {
            assert_eq!(c.fg, Color::DarkGray, "{:?} is not dim", c.symbol());
        }
    }
    for name in ["everything", "broken"] {
        for c in cells_of(&buf, bar_row, name) {
            assert_ne!(c.fg, Color::DarkGray, "{name} is drawn dim");
        }
    }
    // The overview lists it last, dim.
    send(&mut s, "/mcp");
    let buf = render_buffer(&mut s, w, 12);
    let row = (0..buf.area.height)
        .find(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, *y)].symbol())
                .collect::<String>()
                .contains("old-server")
        })
        .unwrap();
    for c in cells_of(&buf, row, "old-server") {
        assert_eq!(c.fg, Color::DarkGray, "the overview's row is not dim");
    }
    insta::assert_snapshot!(screen);
}

/// A login started from the panel, waiting for the browser: the whole authorization address
/// over as many lines as it takes (never cut at the panel's edge), and what to do over SSH.
#[test]
fn a_login_waiting_for_the_browser_shows_the_whole_address() {
    let page = "http://127.0.0.1:47312/authorize?response_type=code&client_id=9d476e84-ca26-4401-92c6-b4737c4701c4&redirect_uri=http%3A%2F%2F127.0.0.1%3A34123%2Fcallback&code_challenge=97lgOQcF5UWOgkes30yWHxE9VehtPpcpm8kPW7J_Ipg&code_challenge_method=S256&state=Jo735wKwJC3O9eltMAVgqw&scope=mcp";
    let waiting = ServerState {
        transport: "http",
        status: ServerStatus::NeedsLogin {
            error: "logging in to server \"notes\": waiting for the browser".into(),
            login_page: Some(page.into()),
        },
    };
    let mut s = state_with(vec![("notes", waiting)], vec![]);
    send(&mut s, "/mcp notes");
    let screen = render(&mut s, 80, 16);
    // The panel's inside, line by line, joined: the address is there whole.
    let inside: String = screen
        .lines()
        .filter_map(|l| l.trim_matches('"').strip_prefix('│'))
        .map(|l| l.trim_end_matches('│').trim_end())
        .collect();
    assert!(inside.contains(page), "{screen}");
    assert!(
        inside.contains("over SSH? run `harness9 mcp login notes` in a shell here:")
            && inside.contains("ends on; then press r here"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

/// The status line names the key that cancels the running turn now: Esc in the input or at a
/// tool question, Ctrl+C while a list (or a server's question) has Esc for itself.
#[test]
fn the_status_line_names_the_key_that_cancels_now() {
    let mut s = state_with(vec![], vec![]);
    use_model(&mut s, "claude-sonnet-4-5");
    send(&mut s, "go");
    assert!(s.turn.busy);
    assert!(render(&mut s, 120, 12).contains("working… 0s · Esc cancels"));
    send(&mut s, "/help");
    assert!(s.modal.is_some());
    let screen = render(&mut s, 120, 12);
    assert!(screen.contains("working… 0s · Ctrl+C cancels"), "{screen}");
    // Esc there closes the list, and the turn goes on.
    assert!(update(&mut s, key_event(KeyCode::Esc)).is_empty());
    assert!(s.modal.is_none() && s.turn.busy && !s.turn.cancelling);
    assert_eq!(
        update(&mut s, key_event(KeyCode::Esc)),
        vec![Effect::CancelTurn]
    );
}

/// `/skills` asks the runtime for the servers' skills, then lists each one (name, files,
/// description) and each refused entry with its reason; a server's escape sequences never reach
/// the screen.
#[test]
fn skills_lists_each_servers_skills_and_the_refused_entries() {
    use harness9_actors::protocol::skills::{SkillEntry, SkillListing};
    let mut s = state_with(vec![("docs", connected(1, 12))], vec![]);
    let effects = send(&mut s, "/skills");
    assert!(
        matches!(effects.as_slice(), [Effect::ListSkills]),
        "{effects:?}"
    );
    let body = "---\nname: pdf-processing\ndescription: x\n---\n";
    let entry = SkillEntry::parse(&serde_json::json!({
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Extract PDFs\u{1b}[2J and forms"},
        "resources": [{
            "uri": "skill://pdf-processing/SKILL.md",
            "digest": harness9_actors::protocol::skills::digest_of(body.as_bytes()),
            "size": body.len(),
        }],
    }))
    .unwrap();
    let listing = SkillListing {
        skills: vec![entry],
        invalid: vec![(
            "skill://evil/SKILL.md".to_owned(),
            "its file \"skill://other/x\" is outside the skill's directory".to_owned(),
        )],
    };
    update(
        &mut s,
        Event::Skills(vec![("docs".to_owned(), Arc::new(listing))]),
    );
    let screen = render(&mut s, 110, 14);
    assert!(screen.contains("docs: 1 skills"), "{screen}");
    assert!(
        screen.contains("pdf-processing  (1 files, 44 bytes)  Extract PDFs and forms"),
        "{screen}"
    );
    assert!(screen.contains("refused skill://evil/SKILL.md"), "{screen}");
    assert!(!screen.contains('\u{1b}'), "{screen}");
    insta::assert_snapshot!(screen);
}

/// One engine event of a task.
fn task_event(s: &mut State, e: EngineEvent) {
    update(s, Event::Engine(e));
}

#[test]
fn running_tasks_show_in_the_bar_and_in_tasks_with_their_age_and_cancel() {
    let mut s = state_with(vec![("jobs", connected(1, 3))], vec![]);
    s.turn.busy = true;
    let t0 = s.now;
    task_event(
        &mut s,
        EngineEvent::TaskStarted {
            server: "jobs".into(),
            tool: "slow".into(),
            task_id: "task-1".into(),
            status: "working".into(),
        },
    );
    s.now = t0 + Duration::from_secs(65);
    task_event(
        &mut s,
        EngineEvent::TaskStarted {
            server: "jobs".into(),
            tool: "build\u{1b}[31m".into(),
            task_id: "task-2".into(),
            status: "working".into(),
        },
    );
    // A status message is server text: escapes and line breaks never reach the screen.
    task_event(
        &mut s,
        EngineEvent::TaskStatus {
            server: "jobs".into(),
            task_id: "task-1".into(),
            status: "working: poll 3\n\u{1b}[2Jof 10".into(),
        },
    );
    s.now = t0 + Duration::from_secs(70);
    let (w, h) = (80, 12);
    let screen = render(&mut s, w, h);
    let bar = screen.lines().nth((h - 2) as usize).unwrap_or_default();
    assert!(
        bar.contains("[MCP] ⧗ 2 tasks (/tasks) │ jobs ● 1 tool"),
        "{screen}"
    );
    send(&mut s, "/tasks");
    let list = render(&mut s, w, h);
    assert!(!list.contains('\u{1b}'), "{list}");
    // ↓ selects the second; c cancels it (once: a second c sends nothing more).
    update(&mut s, key_event(KeyCode::Down));
    let effects = update(&mut s, key_event(KeyCode::Char('c')));
    assert_eq!(
        effects,
        vec![Effect::CancelTask {
            server: "jobs".into(),
            task_id: "task-2".into()
        }]
    );
    assert!(update(&mut s, key_event(KeyCode::Char('c'))).is_empty());
    let cancelling = render(&mut s, w, h);
    // The server says it is cancelled: the task leaves the list and the bar; the first
    // ends (TaskEnded) and the list is empty.
    task_event(
        &mut s,
        EngineEvent::TaskStatus {
            server: "jobs".into(),
            task_id: "task-2".into(),
            status: "cancelled".into(),
        },
    );
    let one = render(&mut s, w, h);
    assert!(one.contains("⧗ 1 task (/tasks)"), "{one}");
    task_event(
        &mut s,
        EngineEvent::TaskEnded {
            server: "jobs".into(),
            task_id: "task-1".into(),
        },
    );
    let none = render(&mut s, w, h);
    assert!(!none.contains("⧗"), "{none}");
    insta::assert_snapshot!(format!("{screen}\n{list}\n{cancelling}\n{none}"));
}

#[test]
fn a_turns_end_clears_its_tasks() {
    let mut s = state_with(vec![("jobs", connected(1, 3))], vec![]);
    s.turn.busy = true;
    task_event(
        &mut s,
        EngineEvent::TaskStarted {
            server: "jobs".into(),
            tool: "slow".into(),
            task_id: "task-1".into(),
            status: "working".into(),
        },
    );
    assert_eq!(s.tasks.running.len(), 1);
    update(
        &mut s,
        Event::TurnDone(Err("the turn was cancelled".into())),
    );
    assert!(s.tasks.running.is_empty());
}
