//! The slash commands: the table `/help` and completion list, what each command does when the
//! input is sent, `/call`'s parsing and checks, and the `/help` screen.

use crossterm::event::{KeyCode, KeyEvent};
use harness9_actors::messages::ServerStatus;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use serde_json::Value;

use super::state::{CallState, Effect, Entry, Modal, PanelState, State, TraceView};
use super::widgets::{modal_block, DIM};

/// Slash commands, in the order `/help` and completion list them.
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "/mcp",
        "every MCP server at a glance; Enter opens one (errors, stderr, tools)",
    ),
    (
        "/trace",
        "the live JSON-RPC message trace; Tab filters by server, Enter expands",
    ),
    (
        "/call",
        "/call <tool> <json>: run a registered tool and show its result",
    ),
    (
        "/reload",
        "reload .mcp.json: added servers start, removed stop, changed restart",
    ),
    (
        "/clear",
        "clear the transcript and start a new conversation",
    ),
    (
        "/compact",
        "/compact [focus]: summarize the conversation so far to free context",
    ),
    (
        "/model",
        "/model [provider/]name: the model for the next turn",
    ),
    (
        "/status",
        "servers, model, context use, session id, cost so far",
    ),
    (
        "/tools",
        "every tool and its source; /tools off|on NAME for this session",
    ),
    (
        "/skills",
        "the skills each MCP server offers (the model loads one with load_skill)",
    ),
    (
        "/tasks",
        "the running tasks: server, tool, age, status; c cancels one",
    ),
    ("/cost", "tokens and estimated cost per model"),
    (
        "/permissions",
        "the permission rules in force and where each comes from; forget a saved answer",
    ),
    ("/subscribe", "@server:uri: show when that resource changes"),
    ("/unsubscribe", "@server:uri: stop showing its changes"),
    (
        "/resume",
        "/resume [ID]: list saved conversations, or continue one",
    ),
    ("/help", "this help"),
    (
        "/quit",
        "stop every server and exit (Ctrl+C works everywhere)",
    ),
];

/// Runs a sent line that starts with `/` (already trimmed and in the history).
pub(super) fn run(state: &mut State, line: &str) -> Vec<Effect> {
    let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
    let rest = rest.trim();
    match cmd {
        "/mcp" => return mcp_command(state, rest),
        "/trace" => {
            state.modal = Some(Modal::Trace(TraceView {
                filter: (!rest.is_empty()).then(|| rest.to_owned()),
                ..TraceView::default()
            }))
        }
        "/help" => state.modal = Some(Modal::Help(HelpView)),
        "/quit" | "/exit" => {
            state.quitting = true;
            return vec![Effect::Quit];
        }
        "/reload" => return vec![Effect::Reload],
        "/clear" if state.turn.busy => state.note(Entry::Error(
            "a turn is running; press Esc to cancel it, then /clear".to_owned(),
        )),
        "/clear" => return clear_command(state),
        "/compact" if state.turn.busy => state.note(Entry::Error(
            "a turn is running; press Esc to cancel it, then /compact".to_owned(),
        )),
        "/compact" if state.model.label.is_none() => state.note(Entry::Error(
            "no model is configured, so there is no conversation to compact".to_owned(),
        )),
        "/compact" => {
            state.note(Entry::Info("compacting the conversation…".to_owned()));
            return vec![Effect::Compact(rest.trim().to_owned())];
        }
        "/model" if rest.is_empty() => model_info(state),
        "/model" if state.turn.busy => state.note(Entry::Error(
            "a turn is running; press Esc to cancel it, then /model".to_owned(),
        )),
        "/model" if state.model.label.is_none() => state.note(Entry::Error(
            "no model is configured; see the notice above for how to set one".to_owned(),
        )),
        "/model" => return vec![Effect::SetModel(rest.to_owned())],
        "/status" => status_info(state),
        "/subscribe" | "/unsubscribe" => return subscribe_command(state, cmd, rest),
        "/cost" => cost_info(state),
        "/permissions" => return vec![Effect::ListPermissions],
        "/skills" => return vec![Effect::ListSkills],
        "/tasks" => super::tasks::open(state),
        "/tools" => return tools_command(state, rest),
        "/resume" if state.turn.busy => state.note(Entry::Error(
            "a turn is running; press Esc to cancel it, then /resume".to_owned(),
        )),
        "/resume" if state.model.label.is_none() => state.note(Entry::Error(
            "no model is configured, so there is no conversation to resume".to_owned(),
        )),
        "/resume" => return vec![Effect::Resume(rest.trim().to_owned())],
        "/call" => return call_command(state, rest),
        "/panic" if state.debug_panic => return vec![Effect::Panic],
        other if other.starts_with("/mcp__") => return super::prompts::run(state, other, rest),
        other => state.note(Entry::Error(format!(
            "unknown command {other}; /help lists the commands"
        ))),
    }
    Vec::new()
}

/// `/mcp name` opens that server's view; plain `/mcp` the overview of all, on the first
/// failed one.
fn mcp_command(state: &mut State, rest: &str) -> Vec<Effect> {
    let Some(selected) = state.servers.status.keys().position(|k| k == rest) else {
        super::overview::open(state);
        return Vec::new();
    };
    state.modal = Some(Modal::Panel(PanelState {
        selected,
        scroll: 0,
    }));
    super::server_view::wanted(state)
}

/// `/clear` (no turn running): an empty transcript, and a new conversation for the engine.
fn clear_command(state: &mut State) -> Vec<Effect> {
    state.transcript.entries.clear();
    state.transcript.scroll_back = 0;
    if state.model.label.is_some() {
        state.note(Entry::Info("new conversation".to_owned()));
        return vec![Effect::ClearConversation];
    }
    Vec::new()
}

/// `/subscribe @server:uri` or `/unsubscribe @server:uri` (`cmd`).
fn subscribe_command(state: &mut State, cmd: &str, rest: &str) -> Vec<Effect> {
    let on = cmd == "/subscribe";
    match rest
        .strip_prefix('@')
        .and_then(|r| r.split_once(':'))
        .filter(|(s, u)| !s.is_empty() && !u.is_empty())
    {
        Some((server, uri)) => vec![Effect::Subscribe {
            server: server.to_owned(),
            uri: uri.to_owned(),
            on,
        }],
        None => {
            state.note(Entry::Error(format!(
                "{cmd} takes @server:uri (Tab completes it), e.g. {cmd} @everything:demo://resource/static/document/architecture.md"
            )));
            Vec::new()
        }
    }
}

/// `/skills`' text: per server, each skill's name, description and files (entries a server
/// listed; nothing of them was read), and each refused entry with why. Server text, cleaned.
pub(super) fn skills_text(
    listings: &[(
        String,
        std::sync::Arc<harness9_actors::protocol::skills::SkillListing>,
    )],
) -> String {
    use harness9_base::sanitize::clean_line;
    if listings.is_empty() {
        return "no connected server offers skills (the io.modelcontextprotocol/skills extension)"
            .to_owned();
    }
    let mut out =
        String::from("skills (the model loads one with load_skill; none is read before):");
    for (server, l) in listings {
        out.push_str(&format!(
            "\n{}: {} skills",
            clean_line(server),
            l.skills.len()
        ));
        for e in &l.skills {
            let files = match &e.files {
                None => "dynamic: not loadable".to_owned(),
                Some(f) => format!("{} files, {} bytes", f.len(), e.total_bytes()),
            };
            out.push_str(&format!(
                "\n  {}  ({files})  {}",
                clean_line(&e.name),
                clean_line(&e.description)
            ));
        }
        for (uri, why) in &l.invalid {
            out.push_str(&format!(
                "\n  refused {}: {}",
                clean_line(uri),
                clean_line(why)
            ));
        }
    }
    out
}

/// `/call <tool> <json>`: checks that the arguments are a JSON object and the tool is registered
/// (else says what is wrong, with near names), then adds a pinned tool entry and calls it.
fn call_command(state: &mut State, rest: &str) -> Vec<Effect> {
    let (name, json) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() {
        state.note(Entry::Error(
            "usage: /call <tool> <json>, e.g. /call mcp__everything__echo {\"message\":\"hi\"}; Tab completes tool names"
                .to_owned(),
        ));
        return Vec::new();
    }
    let json = json.trim();
    let arguments = if json.is_empty() {
        None
    } else {
        match serde_json::from_str::<Value>(json) {
            Ok(v) if v.is_object() => Some(v),
            Ok(_) => {
                state.note(Entry::Error(format!(
                    "/call {name}: the arguments must be a JSON object, like {{\"text\": \"hi\"}}"
                )));
                return Vec::new();
            }
            Err(e) => {
                state.note(Entry::Error(format!(
                    "/call {name}: the arguments are not valid JSON ({e})"
                )));
                return Vec::new();
            }
        }
    };
    if !state.servers.tools.iter().any(|t| &*t.name == name) {
        // Names are sanitized (`get-sum` is registered as `get_sum`): suggest by that form.
        let want: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let tail = want.rsplit("__").next().unwrap_or(&want).to_owned();
        let near: Vec<&str> = state
            .servers
            .tools
            .iter()
            .map(|t| &*t.name)
            .filter(|n| *n == want || (!tail.is_empty() && n.ends_with(&tail)))
            .take(5)
            .collect();
        let hint = if near.is_empty() {
            "/mcp lists every tool".to_owned()
        } else {
            format!("did you mean {}?", near.join(", "))
        };
        state.note(Entry::Error(format!(
            "/call: no tool named \"{name}\" is registered; {hint}"
        )));
        return Vec::new();
    }
    let id = state.transcript.next_call;
    state.transcript.next_call += 1;
    state.note(Entry::Tool {
        id,
        name: name.to_owned(),
        args: arguments.as_ref().map(Value::to_string).unwrap_or_default(),
        state: CallState::Running,
        elapsed: None,
        output: String::new(),
        pinned: true,
        progress: None,
    });
    vec![Effect::CallTool {
        id,
        name: name.to_owned(),
        arguments,
    }]
}

/// `/help`: what each command does (no state of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelpView;

impl super::state::ModalView for HelpView {
    /// `/help` closes on Esc, `q` or Enter; other keys keep it open.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        if !matches!(key.code, KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter) {
            state.modal = Some(Modal::Help(HelpView));
        }
        Vec::new()
    }

    /// Draws `/help`: the commands, then the keys; the MCP bar's legend in the bottom border.
    fn draw(&self, _state: &State, frame: &mut Frame, area: Rect) {
        // The bar's legend sits in the bottom border, so the keys fit 24 rows.
        let block = modal_block("help").title_bottom(Span::styled(
            " MCP bar: ● connected  ○ starting or restarting (attempt)  ✗ failed; /mcp shows why ",
            DIM,
        ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let keys = [
            (
                "Enter",
                "send the line (a /command or a message for the model)",
            ),
            (
                "Alt+Enter",
                "a new line in the input (also Ctrl+J; pasted text keeps its lines)",
            ),
            ("Tab", "complete a /command, or a tool name after /call"),
            ("↑ ↓", "the input's lines, then the input history"),
            ("PgUp PgDn", "scroll the transcript"),
            (
                "Ctrl+O",
                "show or hide the arguments and results of the model's tool calls",
            ),
            ("Esc", "cancel the running turn; close a panel"),
            (
                "y n a",
                "answer a tool that changes things: run it, decline it, always run it",
            ),
            (
                "Ctrl+C",
                "cancel the running turn; clear a draft; else quit, from anywhere",
            ),
        ];
        let mut lines = vec![Line::styled("commands", Style::new().bold())];
        // The rows the commands may take: all of the window but the headings and the keys. As
        // many commands as fit get a line with what they do; the rest are named, wrapped, on the
        // rows left (`/` in the input shows what each does), so no row is left empty.
        let rows = (inner.height as usize).saturating_sub(1 + 2 + keys.len());
        let width = inner.width as usize;
        let described = (0..=COMMANDS.len())
            .rev()
            .find(|&k| k + wrapped_names(&COMMANDS[k..], width).len() <= rows)
            .unwrap_or(0);
        let w = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0) + 1;
        for (c, what) in &COMMANDS[..described] {
            lines.push(Line::from(vec![
                Span::styled(format!("  {c:<w$}"), Style::new().fg(Color::Cyan)),
                Span::raw(*what),
            ]));
        }
        for row in wrapped_names(&COMMANDS[described..], width) {
            lines.push(Line::styled(row, Style::new().fg(Color::Cyan)));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("keys", Style::new().bold()));
        for (k, what) in keys {
            lines.push(Line::from(vec![
                Span::styled(format!("  {k:<11}"), Style::new().fg(Color::Cyan)),
                Span::raw(what),
            ]));
        }
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

/// The names of `commands` in rows of at most `width` columns (after a two-space indent);
/// none for no commands.
fn wrapped_names(commands: &[(&str, &str)], width: usize) -> Vec<String> {
    let mut rows = Vec::new();
    let mut row = String::from(" ");
    for (c, _) in commands {
        if row.len() > 1 && row.len() + c.len() + 1 > width {
            rows.push(std::mem::replace(&mut row, String::from(" ")));
        }
        row.push(' ');
        row.push_str(c);
    }
    if row.len() > 1 {
        rows.push(row);
    }
    rows
}

/// `/model` alone: the model in use and the ones the settings know.
fn model_info(state: &mut State) {
    let Some(settings) = &state.model.settings else {
        return state.note(Entry::Info("no model is configured".to_owned()));
    };
    let mut known: Vec<&String> = settings
        .prices
        .keys()
        .chain(settings.context_windows.keys())
        .collect();
    known.sort();
    known.dedup();
    let names: Vec<&str> = known.iter().map(|s| s.as_str()).collect();
    state.note(Entry::Info(format!(
        "model {}; /model NAME switches for the next turn (/model openai/NAME or anthropic/NAME \
         changes the provider too). Models the settings know: {}",
        state.model.label.as_deref().unwrap_or("none"),
        names.join(", ")
    )));
}

/// The estimated cost so far: the sum over models with a price, and whether some had none.
fn cost_so_far(state: &State) -> (f64, bool) {
    let mut total = 0.0;
    let mut unpriced = false;
    for (model, (input, cached, output)) in &state.model.usage {
        match state
            .model
            .settings
            .as_ref()
            .and_then(|s| s.cost(model, *input, *cached, *output))
        {
            Some(c) => total += c,
            None => unpriced = true,
        }
    }
    (total, unpriced)
}

/// The window tool search assumes for a model `[context_windows]` does not name
/// ([`harness9_agent::toolsearch::default_window`] of the provider in use).
fn assumed_window(state: &State) -> Option<u64> {
    let settings = state.model.settings.as_ref()?;
    let kind = settings.provider.as_ref()?.kind;
    Some(harness9_agent::toolsearch::default_window(kind))
}

fn status_info(state: &mut State) {
    let total = state.servers.status.len();
    let connected = state
        .servers
        .status
        .values()
        .filter(|s| matches!(s.status, ServerStatus::Connected { .. }))
        .count();
    let failed: Vec<&str> = state
        .servers
        .status
        .iter()
        .filter(|(_, s)| matches!(s.status, ServerStatus::Failed { .. }))
        .map(|(n, _)| n.as_str())
        .collect();
    let context = match (state.model.context_used, state.model.context_window) {
        (Some(u), Some(w)) if w > 0 => format!("{u} of {w} tokens ({}%)", u * 100 / w),
        (Some(u), _) => match assumed_window(state) {
            // What tool search defers against (the engine's `Deferral`), said as assumed.
            Some(w) => format!(
                "{u} tokens of an assumed {w}-token window ({}%; tool search defers against it; name the model's under [context_windows] for compaction)",
                u * 100 / w.max(1)
            ),
            None => format!("{u} tokens (window unknown)"),
        },
        (None, _) => "no request yet".to_owned(),
    };
    let context = match state.model.tools_offered {
        Some(t) if t.loaded + t.deferred > 0 => {
            format!("{context}; {}", super::tool_sizes::offered_line(&t))
        }
        _ => context,
    };
    let (cost, unpriced) = cost_so_far(state);
    let mut lines = vec![
        format!("model: {}", state.model.label.as_deref().unwrap_or("none")),
        format!("context: {context}"),
        format!(
            "session: {}",
            state.model.session_id.as_deref().unwrap_or("not saved")
        ),
        format!(
            "servers: {connected} of {total} connected{}",
            if failed.is_empty() {
                String::new()
            } else {
                format!("; failed: {} (/mcp shows why)", failed.join(", "))
            }
        ),
        format!(
            "cost so far: ${cost:.4}{}",
            if unpriced {
                " (some models have no price)"
            } else {
                ""
            }
        ),
    ];
    if !state.model.disabled_tools.is_empty() {
        let off: Vec<&str> = state
            .model
            .disabled_tools
            .iter()
            .map(String::as_str)
            .collect();
        lines.push(format!("tools off: {}", off.join(", ")));
    }
    state.note(Entry::Info(lines.join("\n")));
}

fn cost_info(state: &mut State) {
    if state.model.usage.is_empty() {
        return state.note(Entry::Info("no model calls yet".to_owned()));
    }
    let mut lines = Vec::new();
    for (model, (input, cached, output)) in &state.model.usage {
        let cost = state
            .model
            .settings
            .as_ref()
            .and_then(|s| s.cost(model, *input, *cached, *output))
            .map_or(
                "no price (add [prices.\"MODEL\"] to your settings)".to_owned(),
                |c| format!("${c:.4}"),
            );
        lines.push(format!(
            "{model}: {input} tokens in ({cached} cached), {output} out: {cost}"
        ));
    }
    let (total, _) = cost_so_far(state);
    lines.push(format!(
        "total: ${total:.4} (estimated from the settings' prices)"
    ));
    state.note(Entry::Info(lines.join("\n")));
}

/// `/tools`: every tool with its source; `/tools off NAME` and `/tools on NAME`.
fn tools_command(state: &mut State, rest: &str) -> Vec<Effect> {
    let (verb, name) = rest.split_once(' ').unwrap_or((rest, ""));
    let name = name.trim();
    match verb {
        "" => {
            let lines: Vec<String> = state
                .servers
                .tools
                .iter()
                .map(|t| {
                    format!(
                        "{}  {}{}",
                        t.name,
                        t.server.as_deref().unwrap_or("built-in"),
                        if state.model.disabled_tools.contains(&*t.name) {
                            "  (off)"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            state.note(Entry::Info(if lines.is_empty() {
                "no tools yet".to_owned()
            } else {
                format!(
                    "{} tools (name, source); /tools off NAME turns one off for this session:\n{}\n\n{}",
                    lines.len(),
                    lines.join("\n"),
                    super::tool_sizes::per_server(state)
                )
            }));
            Vec::new()
        }
        "off" | "on" if state.turn.busy => {
            state.note(Entry::Error(
                "a turn is running; press Esc to cancel it, then /tools".to_owned(),
            ));
            Vec::new()
        }
        "off" | "on" if !state.servers.tools.iter().any(|t| &*t.name == name) => {
            state.note(Entry::Error(format!(
                "no tool named \"{name}\"; /tools lists them"
            )));
            Vec::new()
        }
        "off" => {
            state.model.disabled_tools.insert(name.to_owned());
            state.note(Entry::Info(format!(
                "{name} is off for this session: the model is not offered it"
            )));
            vec![Effect::DisableTools(state.model.disabled_tools.clone())]
        }
        "on" => {
            state.model.disabled_tools.remove(name);
            state.note(Entry::Info(format!("{name} is on again")));
            vec![Effect::DisableTools(state.model.disabled_tools.clone())]
        }
        other => {
            state.note(Entry::Error(format!(
                "/tools {other}: use /tools, /tools off NAME or /tools on NAME"
            )));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{update, Event};
    use crate::tests::support::{key_event as key, typed, with_servers};
    use crossterm::event::KeyModifiers;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn clear_starts_a_new_conversation_but_not_during_a_turn() {
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        update(&mut s, key(KeyCode::Enter));
        typed(&mut s, "/clear");
        assert!(update(&mut s, key(KeyCode::Enter)).is_empty());
        assert!(matches!(s.transcript.entries.last(), Some(Entry::Error(e)) if e.contains("Esc")));
        update(&mut s, Event::TurnDone(Ok("done".into())));
        typed(&mut s, "/clear");
        assert_eq!(
            update(&mut s, key(KeyCode::Enter)),
            vec![Effect::ClearConversation]
        );
        assert_eq!(s.transcript.entries.len(), 1, "{:?}", s.transcript.entries);
        // Without a model there is no conversation to clear.
        let mut s = State::new("x".into(), None, String::new());
        typed(&mut s, "/clear");
        assert!(update(&mut s, key(KeyCode::Enter)).is_empty());
        assert!(s.transcript.entries.is_empty());
    }

    #[test]
    fn slash_commands_open_modals_and_ctrl_c_quits_from_anywhere() {
        let mut s = with_servers(&["a", "b"], 1);
        typed(&mut s, "/mcp");
        update(&mut s, key(KeyCode::Enter));
        assert!(matches!(s.modal, Some(Modal::Overview(_))));
        // Enter opens the selected server's view; Esc goes back to the overview.
        update(&mut s, key(KeyCode::Enter));
        assert!(matches!(s.modal, Some(Modal::Panel(_))));
        update(&mut s, key(KeyCode::Esc));
        assert!(matches!(s.modal, Some(Modal::Overview(_))));
        // `/mcp NAME` opens that server's view at once.
        s.modal = None;
        typed(&mut s, "/mcp b");
        update(&mut s, key(KeyCode::Enter));
        assert!(matches!(
            s.modal,
            Some(Modal::Panel(PanelState { selected: 1, .. }))
        ));
        // Plain /mcp opens on the first failed server.
        let mut failing = (*s.servers.status).clone();
        if let Some(b) = failing.get_mut("b") {
            b.status = ServerStatus::Failed {
                error: "x".into(),
                stderr_tail: vec![],
            };
        }
        update(&mut s, Event::Status(Arc::new(failing)));
        s.modal = None;
        typed(&mut s, "/mcp");
        update(&mut s, key(KeyCode::Enter));
        assert_eq!(
            s.modal,
            Some(Modal::Overview(crate::overview::OverviewState {
                selected: 1
            }))
        );
        let quit = update(
            &mut s,
            Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        );
        assert_eq!(quit, vec![Effect::Quit]);
        let mut s = with_servers(&["a"], 1);
        typed(&mut s, "/nope");
        update(&mut s, key(KeyCode::Enter));
        assert!(
            matches!(s.transcript.entries.last(), Some(Entry::Error(e)) if e.contains("/help"))
        );
    }

    #[test]
    fn call_command_validates_and_runs() {
        let mut s = with_servers(&["e"], 2);
        typed(&mut s, "/call mcp__e__t1 {\"a\":1}");
        let fx = update(&mut s, key(KeyCode::Enter));
        assert_eq!(
            fx,
            vec![Effect::CallTool {
                id: 1,
                name: "mcp__e__t1".into(),
                arguments: Some(serde_json::json!({"a": 1}))
            }]
        );
        update(
            &mut s,
            Event::CallDone {
                id: 1,
                output: "ok\u{1b}[2J".into(),
                is_error: false,
                elapsed: Duration::from_millis(3),
            },
        );
        assert!(
            matches!(s.transcript.entries.last(), Some(Entry::Tool { state: CallState::Ok, output, .. }) if output == "ok")
        );
        typed(&mut s, "/call mcp__e__t1 [1]");
        assert!(update(&mut s, key(KeyCode::Enter)).is_empty());
        typed(&mut s, "/call mcp__e__zz {}");
        assert!(update(&mut s, key(KeyCode::Enter)).is_empty());
        assert!(
            matches!(s.transcript.entries.last(), Some(Entry::Error(e)) if e.contains("no tool named"))
        );
    }
}
