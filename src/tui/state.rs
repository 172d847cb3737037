//! The TUI's state and its pure update function: every key, status snapshot, tool list, trace
//! record and tool result is an [`Event`]; [`update`] changes the [`State`] and returns the
//! [`Effect`]s the `Tui` actor carries out. Nothing here touches a terminal or an actor.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use harness9_actors::messages::{ServerStatus, StatusSnapshot, ToolEntry};
use harness9_actors::trace::WireRecord;
use serde_json::Value;

use crate::agent::engine::EngineEvent;
use crate::sanitize::clean;

pub use super::approvals::Approval;
use super::approvals::{approval_key, asked, decline_all};
pub use super::commands::COMMANDS;
use super::commands::{help_key, run};
use super::panel::panel_key;
pub use super::panel::{tool_lines, PanelState, ToolLayout};
use super::trace::trace_key;
pub use super::trace::{TraceBuf, TraceRow, TraceView, TRACE_MESSAGE_MAX, TRACE_PER_SERVER};
use super::transcript::{engine_event, finish_call, page};
pub use super::transcript::{CallState, Entry, RESULT_LINES};
use super::trust::trust_key;
pub use super::trust::TrustView;

/// Rows the screen keeps for everything but the transcript / panel body (input, bars, borders).
const CHROME_ROWS: usize = 4;
/// The most rows the input box grows to; a longer input scrolls with the cursor.
pub const MAX_INPUT_ROWS: usize = 8;

/// Something that happened, for [`update`].
#[derive(Debug, Clone)]
pub enum Event {
    /// A key press.
    Key(KeyEvent),
    /// The engine asks whether a tool call may run; answer with [`Effect::Answer`].
    ApprovalAsked(Approval),
    /// Pasted text.
    Paste(String),
    /// The terminal's size changed.
    Resize(u16, u16),
    /// A new status snapshot from the supervisor.
    Status(StatusSnapshot),
    /// The registry's tool table.
    Tools(Arc<Vec<ToolEntry>>),
    /// A traced JSON-RPC message.
    Trace(WireRecord),
    /// A `/call` finished.
    CallDone {
        /// The call's id (the transcript entry).
        id: u64,
        /// The text to show.
        output: String,
        /// Whether it failed or reported `isError`.
        is_error: bool,
        /// How long it took.
        elapsed: Duration,
    },
    /// Something the engine did during a turn.
    Engine(EngineEvent),
    /// The turn ended: `Ok` with a summary line, `Err` with the error.
    TurnDone(Result<String, String>),
    /// A line for the transcript from the app (reload results, editor errors).
    Notice {
        /// Show as an error.
        error: bool,
        /// The text.
        text: String,
    },
}

/// What the actor must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Stop every server and exit.
    Quit,
    /// Restart one server.
    Restart(String),
    /// Open `.mcp.json` in `$EDITOR` (or the system opener), then reload.
    OpenEditor,
    /// Reload `.mcp.json` and reconcile.
    Reload,
    /// Call a registered tool; reply with [`Event::CallDone`].
    CallTool {
        /// Transcript entry id.
        id: u64,
        /// Registered name.
        name: String,
        /// Arguments.
        arguments: Option<Value>,
    },
    /// Ordinary input for the engine.
    Submit(String),
    /// Cancel the running turn.
    CancelTurn,
    /// The user's answer to [`Event::ApprovalAsked`].
    Answer {
        /// Which question.
        key: u64,
        /// Run it.
        yes: bool,
    },
    /// Start a new conversation with the model (`/clear`).
    ClearConversation,
    /// Panic on purpose (`/panic`, only with `HARNESS9_DEBUG_PANIC=1`): proves the panic path.
    Panic,
    /// Approve these servers of the project config: `(name, command line the user saw)`; a
    /// server whose spec no longer has that command line is not approved.
    ApproveServers(Vec<(String, String)>),
}

/// Which modal is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modal {
    /// `/mcp`.
    Panel(PanelState),
    /// `/trace`.
    Trace(TraceView),
    /// `/help`.
    Help,
    /// The trust screen: the project config's unapproved servers, with what they would run.
    Trust(TrustView),
}

/// The whole TUI state.
#[derive(Debug)]
pub struct State {
    /// The transcript.
    pub transcript: Vec<Entry>,
    /// Tool calls waiting for the user's yes or no, the first one shown.
    pub approvals: std::collections::VecDeque<Approval>,
    /// Tools the user allowed for the rest of the session (`a`).
    pub always_allowed: std::collections::BTreeSet<String>,
    /// Lines scrolled back from the bottom.
    pub scroll_back: usize,
    /// The input line.
    pub input: String,
    /// Cursor position in `input`, in chars.
    pub cursor: usize,
    /// Submitted lines, oldest first.
    pub history: Vec<String>,
    /// Position while browsing history.
    pub history_pos: Option<usize>,
    /// Latest server statuses.
    pub servers: StatusSnapshot,
    /// Latest tool table.
    pub tools: Arc<Vec<ToolEntry>>,
    /// Per-server layout of `tools` for the panel.
    pub layout: BTreeMap<String, ToolLayout>,
    /// The open modal.
    pub modal: Option<Modal>,
    /// Traced messages.
    pub trace: TraceBuf,
    /// The model in use (`anthropic claude-...`), if one is configured.
    pub model: Option<String>,
    /// How to configure a model, shown when none is.
    pub model_help: String,
    /// A turn is running.
    pub busy: bool,
    /// The running turn was asked to stop (Esc or Ctrl+C); the next Ctrl+C quits.
    pub cancelling: bool,
    /// The config file's display path.
    pub config_path: String,
    /// Terminal width and height.
    pub size: (u16, u16),
    /// Next call id.
    pub next_call: u64,
    /// Quit was asked.
    pub quitting: bool,
    /// The engine's tool lines show their arguments and results (Ctrl+O toggles).
    pub expand_tools: bool,
    /// The engine's call ids -> transcript call ids.
    pub engine_calls: BTreeMap<String, u64>,
    /// `/panic` is allowed (`HARNESS9_DEBUG_PANIC=1`).
    pub debug_panic: bool,
    /// Configured env and header values: `/trace` shows them as `[redacted]`.
    pub secrets: Vec<String>,
    /// Unapproved servers (name, command line) the trust screen has shown: it opens by itself
    /// only for new ones (a declined server does not ask again until its command line changes
    /// or it was approved in between).
    pub trust_seen: std::collections::BTreeSet<(String, String)>,
}

impl State {
    /// A fresh state.
    pub fn new(config_path: String, model: Option<String>, model_help: String) -> Self {
        State {
            transcript: Vec::new(),
            scroll_back: 0,
            input: String::new(),
            cursor: 0,
            history: Vec::new(),
            history_pos: None,
            servers: StatusSnapshot::default(),
            tools: Arc::new(Vec::new()),
            layout: BTreeMap::new(),
            modal: None,
            trace: TraceBuf::default(),
            model,
            model_help,
            busy: false,
            cancelling: false,
            approvals: Default::default(),
            always_allowed: Default::default(),
            config_path,
            size: (80, 24),
            next_call: 1,
            quitting: false,
            expand_tools: false,
            engine_calls: BTreeMap::new(),
            debug_panic: false,
            secrets: Vec::new(),
            trust_seen: Default::default(),
        }
    }

    /// The servers waiting for approval, `(name, command line)`, in snapshot order.
    pub fn unapproved(&self) -> Vec<(String, String)> {
        self.servers
            .iter()
            .filter_map(|(n, st)| match &st.status {
                ServerStatus::Unapproved { command_line } => {
                    Some((n.clone(), command_line.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Rows of the transcript.
    pub fn body_rows(&self) -> usize {
        (self.size.1 as usize)
            .saturating_sub(CHROME_ROWS + self.input_rows() - 1)
            .max(1)
    }

    /// Rows of the input box: one per input line, at most [`MAX_INPUT_ROWS`].
    pub fn input_rows(&self) -> usize {
        self.input.split('\n').count().min(MAX_INPUT_ROWS)
    }

    /// The cursor as (line, column in chars) within the input's lines.
    pub fn cursor_line_col(&self) -> (usize, usize) {
        let before: String = self.input.chars().take(self.cursor).collect();
        let line = before.matches('\n').count();
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
        (line, col)
    }

    /// Rows of a modal's scrolling body: the screen less the two bars, the border, and the
    /// modal's own header and key-help lines (what `view` lays out).
    pub fn modal_rows(&self) -> usize {
        (self.size.1 as usize).saturating_sub(6).max(1)
    }
}

/// Applies one event; returns what the actor must do.
pub fn update(state: &mut State, event: Event) -> Vec<Effect> {
    match event {
        Event::Key(key) => {
            if key.kind == KeyEventKind::Release {
                return Vec::new();
            }
            if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
                // From anywhere: the first Ctrl+C stops a running turn (declining what waits
                // for an answer), any other one quits.
                if state.busy && !state.cancelling {
                    state.cancelling = true;
                    state.note(Entry::Info(
                        "cancelling the turn; Ctrl+C again quits".to_owned(),
                    ));
                    let mut effects = decline_all(state);
                    effects.push(Effect::CancelTurn);
                    return effects;
                }
                state.quitting = true;
                return vec![Effect::Quit];
            }
            if !state.approvals.is_empty() {
                return approval_key(state, key);
            }
            match state.modal.take() {
                Some(Modal::Panel(p)) => panel_key(state, p, key),
                Some(Modal::Trace(t)) => trace_key(state, t, key),
                Some(Modal::Help) => help_key(state, key),
                Some(Modal::Trust(t)) => trust_key(state, t, key),
                None => session_key(state, key),
            }
        }
        Event::ApprovalAsked(a) => asked(state, a),
        Event::Paste(text) => {
            if state.modal.is_none() {
                // Newlines stay (a pasted stack trace or code keeps its shape); CRLF and CR
                // become LF.
                let text = text.replace("\r\n", "\n").replace('\r', "\n");
                for c in clean(&text).chars() {
                    insert_char(state, c);
                }
            }
            Vec::new()
        }
        Event::Resize(w, h) => {
            state.size = (w, h);
            Vec::new()
        }
        Event::Status(s) => {
            state.servers = s;
            super::panel::status_changed(state);
            // The trust screen opens for servers it has not shown yet, and closes once none is
            // left waiting.
            // A server that leaves the list (approved) is forgotten, so if it comes back (its
            // spec changed, even only in an env value) the screen asks again.
            let waiting = state.unapproved();
            let fresh = waiting.iter().any(|w| !state.trust_seen.contains(w));
            state.trust_seen = waiting.iter().cloned().collect();
            match &mut state.modal {
                Some(Modal::Trust(_)) if waiting.is_empty() => state.modal = None,
                Some(Modal::Trust(t)) => t.selected = t.selected.min(waiting.len() - 1),
                _ if fresh => state.modal = Some(Modal::Trust(TrustView::default())),
                _ => {}
            }
            Vec::new()
        }
        Event::Tools(t) => {
            state.set_tools(t);
            Vec::new()
        }
        Event::Trace(r) => {
            state.trace.push(r);
            Vec::new()
        }
        Event::CallDone {
            id,
            output,
            is_error,
            elapsed,
        } => {
            finish_call(state, id, &output, is_error, elapsed);
            Vec::new()
        }
        Event::Engine(e) => {
            engine_event(state, e);
            Vec::new()
        }
        Event::TurnDone(r) => {
            // Normally empty by now: a finished turn asks nothing more.
            let stale = decline_all(state);
            state.busy = false;
            state.cancelling = false;
            state.engine_calls.clear();
            match r {
                Ok(summary) => state.note(Entry::Info(summary)),
                Err(e) => state.note(Entry::Error(e)),
            }
            stale
        }
        Event::Notice { error, text } => {
            state.note(if error {
                Entry::Error(text)
            } else {
                Entry::Info(text)
            });
            Vec::new()
        }
    }
}

fn insert_char(state: &mut State, c: char) {
    let at = byte_index(&state.input, state.cursor);
    state.input.insert(at, c);
    state.cursor += 1;
}

fn byte_index(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}

fn session_key(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let len = state.input.chars().count();
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    match key.code {
        // A new line in the input: Alt+Enter, Shift+Enter (where the terminal tells it), Ctrl+J.
        KeyCode::Enter if alt || shift => insert_char(state, '\n'),
        KeyCode::Char('j') if ctrl => insert_char(state, '\n'),
        KeyCode::Enter => return submit(state),
        KeyCode::Esc if state.busy => {
            state.cancelling = true;
            return vec![Effect::CancelTurn];
        }
        KeyCode::Tab => complete(state),
        KeyCode::Char('a') if ctrl => state.cursor = line_start(state),
        KeyCode::Char('e') if ctrl => state.cursor = line_end(state),
        KeyCode::Char('u') if ctrl => {
            state.input.clear();
            state.cursor = 0;
        }
        KeyCode::Char('l') if ctrl => state.scroll_back = 0,
        KeyCode::Char('o') if ctrl => state.expand_tools = !state.expand_tools,
        KeyCode::Char(c) if !ctrl => insert_char(state, c),
        KeyCode::Backspace if state.cursor > 0 => {
            state.cursor -= 1;
            let at = byte_index(&state.input, state.cursor);
            state.input.remove(at);
        }
        KeyCode::Delete if state.cursor < len => {
            let at = byte_index(&state.input, state.cursor);
            state.input.remove(at);
        }
        KeyCode::Left => state.cursor = state.cursor.saturating_sub(1),
        KeyCode::Right => state.cursor = (state.cursor + 1).min(len),
        KeyCode::Home => state.cursor = line_start(state),
        KeyCode::End => state.cursor = line_end(state),
        // In a multi-line input, Up and Down move between its lines; past the first or last
        // line they step through the history.
        KeyCode::Up if !move_line(state, true) => history_step(state, true),
        KeyCode::Down if !move_line(state, false) => history_step(state, false),
        KeyCode::PageUp => page(state, true),
        KeyCode::PageDown => page(state, false),
        _ => {}
    }
    Vec::new()
}

/// The char index where the cursor's line starts.
fn line_start(state: &State) -> usize {
    state.cursor - state.cursor_line_col().1
}

/// The char index where the cursor's line ends (before its newline).
fn line_end(state: &State) -> usize {
    let rest = state.input.chars().skip(state.cursor);
    state.cursor + rest.take_while(|c| *c != '\n').count()
}

/// Moves the cursor to the line above (`up`) or below, keeping its column as far as that line
/// allows; false when there is no such line.
fn move_line(state: &mut State, up: bool) -> bool {
    let (line, col) = state.cursor_line_col();
    let lines: Vec<usize> = state.input.split('\n').map(|l| l.chars().count()).collect();
    let target = match up {
        true if line > 0 => line - 1,
        false if line + 1 < lines.len() => line + 1,
        _ => return false,
    };
    let start: usize = lines[..target].iter().map(|n| n + 1).sum();
    state.cursor = start + col.min(lines[target]);
    true
}

fn history_step(state: &mut State, back: bool) {
    if state.history.is_empty() {
        return;
    }
    let last = state.history.len() - 1;
    let pos = match (state.history_pos, back) {
        (None, true) => Some(last),
        (None, false) => None,
        (Some(p), true) => Some(p.saturating_sub(1)),
        (Some(p), false) if p >= last => None,
        (Some(p), false) => Some(p + 1),
    };
    state.history_pos = pos;
    state.input = pos.map(|p| state.history[p].clone()).unwrap_or_default();
    state.cursor = state.input.chars().count();
}

/// Tab: completes a slash command, or a tool name after `/call `.
fn complete(state: &mut State) {
    let input = state.input.clone();
    let (prefix, candidates): (&str, Vec<&str>) = if let Some(rest) = input.strip_prefix("/call ") {
        if rest.contains(' ') {
            return;
        }
        (
            rest,
            state
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .filter(|n| n.starts_with(rest))
                .collect(),
        )
    } else if input.starts_with('/') && !input.contains(' ') {
        (
            input.as_str(),
            COMMANDS
                .iter()
                .map(|(c, _)| *c)
                .filter(|c| c.starts_with(input.as_str()))
                .collect(),
        )
    } else {
        return;
    };
    let head = if input.starts_with("/call ") {
        "/call "
    } else {
        ""
    };
    match candidates.as_slice() {
        [] => {}
        [one] => {
            state.input = format!("{head}{one} ");
        }
        many => {
            let common = common_prefix(many);
            if common.len() > prefix.len() {
                state.input = format!("{head}{common}");
            } else {
                let shown: Vec<&str> = many.iter().take(12).copied().collect();
                let more = many.len().saturating_sub(shown.len());
                let mut text = shown.join("  ");
                if more > 0 {
                    text.push_str(&format!("  … {more} more"));
                }
                state.note(Entry::Info(text));
            }
        }
    }
    state.cursor = state.input.chars().count();
}

fn common_prefix<'a>(words: &[&'a str]) -> &'a str {
    let first = words[0];
    let mut end = first.len();
    for w in &words[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(w.chars())
                .find(|((_, a), b)| a != b)
                .map_or(end.min(w.len()), |((i, _), _)| i),
        );
    }
    &first[..end]
}

fn submit(state: &mut State) -> Vec<Effect> {
    let line = state.input.trim().to_owned();
    state.input.clear();
    state.cursor = 0;
    state.history_pos = None;
    if line.is_empty() {
        return Vec::new();
    }
    if state.history.last() != Some(&line) {
        state.history.push(line.clone());
    }
    if line.starts_with('/') {
        return run(state, &line);
    }
    state.note(Entry::User(line.clone()));
    if state.model.is_none() {
        state.note(Entry::Error(format!(
            "no model is configured, so harness9 is an MCP console: use /call <tool> <json>, /mcp and /trace.\n{}",
            state.model_help
        )));
        return Vec::new();
    }
    if state.busy {
        state.note(Entry::Error(
            "a turn is running; wait for it or press Esc to cancel it".to_owned(),
        ));
        return Vec::new();
    }
    state.busy = true;
    vec![Effect::Submit(line)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::tests::{key_event as key, typed, with_servers};
    use harness9_actors::messages::ServerState;

    #[test]
    fn the_trust_screen_opens_for_new_unapproved_servers_and_approves_what_it_showed() {
        let mut s = State::new(".mcp.json".into(), None, "set a key".into());
        let snap = |cmds: &[(&str, &str)]| {
            let m: BTreeMap<String, ServerState> = cmds
                .iter()
                .map(|(n, c)| {
                    let status = ServerStatus::Unapproved {
                        command_line: c.to_string(),
                    };
                    let st = ServerState {
                        transport: "stdio",
                        status,
                    };
                    (n.to_string(), st)
                })
                .collect();
            Event::Status(Arc::new(m))
        };
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y")]));
        assert_eq!(s.modal, Some(Modal::Trust(TrustView::default())));
        update(&mut s, key(KeyCode::Down));
        assert_eq!(
            update(&mut s, key(KeyCode::Char('y'))),
            vec![Effect::ApproveServers(vec![("b".into(), "npx y".into())])]
        );
        assert_eq!(
            update(&mut s, key(KeyCode::Char('a'))),
            vec![Effect::ApproveServers(vec![
                ("a".into(), "sh -c x".into()),
                ("b".into(), "npx y".into())
            ])]
        );
        // Declined: closed, and the same servers do not reopen it; a changed one does.
        update(&mut s, key(KeyCode::Esc));
        assert_eq!(s.modal, None);
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y")]));
        assert_eq!(s.modal, None);
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y --evil")]));
        assert!(matches!(s.modal, Some(Modal::Trust(_))));
        update(&mut s, key(KeyCode::Char('n')));
        // Approved (gone from the list), then unapproved again with the same command line (an
        // env value changed): it asks again.
        update(&mut s, snap(&[("a", "sh -c x")]));
        assert_eq!(s.modal, None);
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y --evil")]));
        assert!(matches!(s.modal, Some(Modal::Trust(_))));
        update(&mut s, key(KeyCode::Esc));
        // `a` in /mcp on an unapproved server brings it back, on that server.
        s.modal = Some(Modal::Panel(PanelState {
            selected: 1,
            scroll: 0,
        }));
        update(&mut s, key(KeyCode::Char('a')));
        assert_eq!(s.modal, Some(Modal::Trust(TrustView { selected: 1 })));
        // Once none waits, it closes by itself.
        update(&mut s, Event::Status(Arc::new(BTreeMap::new())));
        assert_eq!(s.modal, None);
    }

    #[test]
    fn typing_editing_and_history() {
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "helo");
        update(&mut s, key(KeyCode::Left));
        update(&mut s, key(KeyCode::Char('l')));
        assert_eq!(s.input, "hello");
        assert_eq!(
            update(&mut s, key(KeyCode::Enter)),
            vec![Effect::Submit("hello".into())]
        );
        assert!(s.busy);
        assert!(s.input.is_empty());
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.input, "hello");
        update(&mut s, key(KeyCode::Down));
        assert_eq!(s.input, "");
        assert_eq!(update(&mut s, key(KeyCode::Esc)), vec![Effect::CancelTurn]);
    }

    #[test]
    fn multi_line_input_alt_enter_ctrl_j_paste_and_line_moves() {
        let with = |code, m| Event::Key(KeyEvent::new(code, m));
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "first");
        update(&mut s, with(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut s, "second line");
        update(&mut s, with(KeyCode::Char('j'), KeyModifiers::CONTROL));
        typed(&mut s, "3");
        assert_eq!(s.input, "first\nsecond line\n3");
        assert_eq!((s.input_rows(), s.cursor_line_col()), (3, (2, 1)));
        // Up keeps the column where the line allows; Home and End are line-wise.
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.cursor_line_col(), (1, 1));
        update(&mut s, key(KeyCode::End));
        assert_eq!(s.cursor_line_col(), (1, 11));
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.cursor_line_col(), (0, 5));
        update(&mut s, key(KeyCode::Home));
        assert_eq!(s.cursor_line_col(), (0, 0));
        // Past the last line, Down goes to history (empty here: nothing happens).
        update(&mut s, key(KeyCode::Down));
        update(&mut s, key(KeyCode::Down));
        update(&mut s, key(KeyCode::Down));
        assert_eq!(s.cursor_line_col().0, 2);
        assert_eq!(s.input, "first\nsecond line\n3");
        // Enter sends all of it; the history keeps it whole.
        assert_eq!(
            update(&mut s, key(KeyCode::Enter)),
            vec![Effect::Submit("first\nsecond line\n3".into())]
        );
        update(&mut s, Event::TurnDone(Ok("done".into())));
        // Up on a one-line (empty) input is history.
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.input, "first\nsecond line\n3");

        // A paste keeps its lines (CRLF and CR become LF) and its escape sequences go.
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        update(&mut s, Event::Paste("a\r\nb\rc\x1b[31m!".into()));
        assert_eq!(s.input, "a\nb\nc!");
        // The box grows to at most MAX_INPUT_ROWS rows, and the body shrinks with it.
        s.size = (80, 30);
        let body = s.body_rows();
        update(&mut s, Event::Paste("\n".repeat(20)));
        assert_eq!(s.input_rows(), MAX_INPUT_ROWS);
        assert_eq!(s.body_rows(), body - (MAX_INPUT_ROWS - 3));
    }

    #[test]
    fn ctrl_c_cancels_a_running_turn_first_and_quits_the_second_time() {
        let ctrl_c = || Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        update(&mut s, key(KeyCode::Enter));
        // Even from a modal.
        typed(&mut s, "/help");
        update(&mut s, key(KeyCode::Enter));
        assert!(s.modal.is_some());
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::CancelTurn]);
        assert!(!s.quitting);
        assert!(
            matches!(s.transcript.last(), Some(Entry::Info(t)) if t.contains("Ctrl+C again quits"))
        );
        // The turn is still winding down: this one quits.
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::Quit]);

        // Once the cancelled turn has ended, the next turn gets its own first Ctrl+C.
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        update(&mut s, key(KeyCode::Enter));
        assert_eq!(update(&mut s, key(KeyCode::Esc)), vec![Effect::CancelTurn]);
        update(
            &mut s,
            Event::TurnDone(Err("the turn was cancelled".into())),
        );
        assert!(!s.busy);
        typed(&mut s, "again");
        update(&mut s, key(KeyCode::Enter));
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::CancelTurn]);
        // With nothing running, Ctrl+C quits at once.
        update(
            &mut s,
            Event::TurnDone(Err("the turn was cancelled".into())),
        );
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::Quit]);
    }

    #[test]
    fn without_a_model_input_explains_how_to_configure_one() {
        let mut s = State::new("x".into(), None, "set ANTHROPIC_API_KEY".into());
        typed(&mut s, "hi");
        assert!(update(&mut s, key(KeyCode::Enter)).is_empty());
        assert!(
            matches!(&s.transcript[1], Entry::Error(e) if e.contains("ANTHROPIC_API_KEY") && e.contains("/call"))
        );
    }

    #[test]
    fn tab_completes_commands_and_tool_names() {
        let mut s = with_servers(&["everything"], 3);
        typed(&mut s, "/m");
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(s.input, "/mcp ");
        s.input.clear();
        s.cursor = 0;
        typed(&mut s, "/call mcp__every");
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(s.input, "/call mcp__everything__t");
        update(&mut s, key(KeyCode::Tab));
        assert!(
            matches!(s.transcript.last(), Some(Entry::Info(t)) if t.contains("mcp__everything__t2"))
        );
    }
}
