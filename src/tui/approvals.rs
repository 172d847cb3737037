//! Questions about tool calls: the engine asks when the permissions say so (see
//! `harness9_agent::permissions`). The queue of waiting calls, the keys that answer (no; no with
//! a message for the model; yes once; always for this tool, or for this server, in this
//! project) and the box that shows the first question over the transcript.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::state::{CallState, Effect, Entry, State};
use super::widgets::{modal_block, wrap, BORDER_ROWS, DIM};
use harness9_agent::engine::Answer;
use harness9_base::sanitize::{clean, clean_line};

/// A tool call the engine wants to run, waiting for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Which question (for [`Effect::Answer`]).
    pub key: u64,
    /// The tool.
    pub name: String,
    /// Its arguments, as JSON text (pretty-printed once queued).
    pub args: String,
    /// The model's id of the call (its transcript line shows `waiting for you`).
    pub call: Option<String>,
    /// Rows of the arguments scrolled past (↑↓ in the box).
    pub scroll: usize,
    /// The tool's server; `None` for a built-in.
    pub server: Option<String>,
    /// The `ask` rule that makes it ask, when one does.
    pub rule: Option<String>,
    /// The allow rule "always for this tool" saves (`None`: not offered, e.g. a compound
    /// command line).
    pub tool_rule: Option<String>,
    /// The message for the model being typed ("no, and say why"), when it is.
    pub message: Option<String>,
    /// What an edit tool's call would change, shown instead of its arguments (set when it is
    /// queued).
    pub diff: Option<Vec<harness9_agent::builtins::diff::DiffLine>>,
}

impl Approval {
    /// A question about a call of `name` with `args` (JSON text).
    pub fn new(key: u64, name: String, args: String) -> Self {
        Approval {
            key,
            name,
            args,
            call: None,
            scroll: 0,
            server: None,
            rule: None,
            tool_rule: None,
            message: None,
            diff: None,
        }
    }

    /// The allow rule "always for this server" saves.
    fn server_rule(&self) -> Option<String> {
        self.server
            .as_deref()
            .and_then(harness9_agent::permissions::server_rule)
    }
}

/// The most characters of a message for the model.
const MAX_MESSAGE: usize = 2000;

/// The rows of arguments the box shows at most; more scroll.
const ARG_ROWS: usize = 10;

/// Sets the transcript line of the engine call `call` to `to` (a question asked or answered).
fn mark_call(state: &mut State, call: Option<&str>, to: CallState) {
    let Some(id) = call
        .and_then(|c| state.transcript.engine_calls.get(c))
        .copied()
    else {
        return;
    };
    for e in state.transcript.entries.iter_mut().rev() {
        if let Entry::Tool {
            id: eid, state: st, ..
        } = e
        {
            if *eid == id {
                if matches!(st, CallState::Running | CallState::Waiting) {
                    *st = to;
                }
                return;
            }
        }
    }
}

/// The arguments as the box shows them: pretty-printed JSON (or the text as it came).
fn pretty(args: &str) -> String {
    serde_json::from_str::<serde_json::Value>(args)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| args.to_owned())
}

/// The argument rows of the box at `width`: an edit tool's diff, else the pretty-printed
/// lines, each wrapped.
fn arg_rows(a: &Approval, width: usize) -> Vec<Line<'static>> {
    if let Some(diff) = &a.diff {
        return super::diff::rows(diff, width, usize::MAX);
    }
    let mut rows = Vec::new();
    for line in a.args.lines() {
        wrap(&clean(line), width, DIM, "  ", &mut rows);
    }
    rows
}

/// The box's inner width on a terminal `cols` wide.
fn box_width(cols: u16) -> usize {
    cols.saturating_sub(2).max(1) as usize
}

/// A new question, queued (its arguments pretty-printed once, for every frame that draws
/// them).
pub(super) fn asked(state: &mut State, mut a: Approval) -> Vec<Effect> {
    if a.server.is_none() {
        a.diff = serde_json::from_str(&a.args)
            .ok()
            .and_then(|v| harness9_agent::builtins::diff::preview(&a.name, &v));
    }
    a.args = pretty(&a.args);
    mark_call(state, a.call.as_deref(), CallState::Waiting);
    state.questions.approvals.push_back(a);
    Vec::new()
}

/// What a choice of the box does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    No,
    NoWithMessage,
    Once,
    AlwaysTool,
    AlwaysServer,
}

/// The box's choices for `a`, the safe one first: `(key, colour, what, pick)`.
fn choices(a: &Approval) -> Vec<(&'static str, Color, String, Pick)> {
    let mut out = vec![
        ("n", Color::Red, "no".to_owned(), Pick::No),
        (
            "m",
            Color::Red,
            "no, and tell the model why".to_owned(),
            Pick::NoWithMessage,
        ),
        ("y", Color::Green, "yes, once".to_owned(), Pick::Once),
    ];
    if let Some(rule) = &a.tool_rule {
        let what = if rule.starts_with("bash(") {
            format!("always {} here", clean_line(rule))
        } else {
            "always this tool here".to_owned()
        };
        out.push(("a", Color::Yellow, what, Pick::AlwaysTool));
    }
    if let Some(server) = &a.server {
        out.push((
            "s",
            Color::Yellow,
            format!("always server {} here", clean_line(server)),
            Pick::AlwaysServer,
        ));
    }
    out
}

/// The keys of the box: a choice's letter, or ←→/Tab to move the highlight (on "no" at
/// first) and Enter; Esc cancels the whole turn, as Ctrl+C does (this call and every other
/// waiting one never run, the model is not asked again); ↑↓ scroll the arguments. While a message is typed, keys edit
/// it, Enter sends it with the no, Esc goes back to the choices. (Keys typed as it opened
/// never get here: [`super::guard`].)
pub(super) fn key(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    let Some(first) = state.questions.approvals.front_mut() else {
        return Vec::new();
    };
    if let Some(message) = &mut first.message {
        match key.code {
            KeyCode::Esc => first.message = None,
            KeyCode::Enter => {
                let text = message.trim().to_owned();
                let answer = if text.is_empty() {
                    Answer::No
                } else {
                    Answer::NoWith(text)
                };
                return answer_first(state, answer);
            }
            KeyCode::Backspace => {
                message.pop();
            }
            KeyCode::Char(c) if message.chars().count() < MAX_MESSAGE => message.push(c),
            _ => {}
        }
        return Vec::new();
    }
    let options = choices(first);
    if super::guard::move_choice(state, options.len(), key.code) {
        return Vec::new();
    }
    let pick = match key.code {
        KeyCode::Enter => options[super::guard::choice(state, options.len())].3,
        KeyCode::Esc => return super::state::cancel_turn(state),
        KeyCode::Up | KeyCode::Char('k') | KeyCode::Down | KeyCode::Char('j') => {
            // The rows the box draws: wrapped at its width, as `draw_approval` does.
            let width = box_width(state.size.0);
            if let Some(first) = state.questions.approvals.front_mut() {
                let rows = arg_rows(first, width).len();
                first.scroll = if matches!(key.code, KeyCode::Up | KeyCode::Char('k')) {
                    first.scroll.saturating_sub(1)
                } else {
                    (first.scroll + 1).min(rows.saturating_sub(ARG_ROWS))
                };
            }
            return Vec::new();
        }
        KeyCode::Char(c) => match options.iter().find(|o| o.0.starts_with(c)) {
            Some(o) => o.3,
            None => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let Some(first) = state.questions.approvals.front_mut() else {
        return Vec::new();
    };
    let answer = match pick {
        Pick::No => Answer::No,
        Pick::NoWithMessage => {
            first.message = Some(String::new());
            return Vec::new();
        }
        Pick::Once => Answer::Yes,
        Pick::AlwaysTool => match first.tool_rule.clone() {
            Some(r) => Answer::Always(r),
            None => return Vec::new(),
        },
        Pick::AlwaysServer => match first.server_rule() {
            Some(r) => Answer::Always(r),
            None => return Vec::new(),
        },
    };
    answer_first(state, answer)
}

/// Answers the first waiting call (an "always" answer is for this call and those that come
/// later, never for the other waiting ones).
fn answer_first(state: &mut State, answer: Answer) -> Vec<Effect> {
    let Some(first) = state.questions.approvals.pop_front() else {
        return Vec::new();
    };
    // Running until its result (a no comes back at once as the call's error).
    mark_call(state, first.call.as_deref(), CallState::Running);
    // An "always" answer runs this call and is kept for later ones: the other waiting calls,
    // which the user has not seen, are still asked one by one (the engine judges them by the
    // rules in force when they came, without this one).
    let mut effects = Vec::new();
    effects.insert(
        0,
        Effect::Answer {
            key: first.key,
            answer,
        },
    );
    effects
}

/// Drops every waiting call for a cancelled turn, its transcript line marked failed. No answer
/// is sent: the engine's turn, cancelled first, ends each question itself, so no declined
/// call's result can reach the model before the cancel does (the actor drops the questions'
/// senders when the turn is done).
pub(super) fn cancel_all(state: &mut State) {
    let waiting: Vec<Approval> = state.questions.approvals.drain(..).collect();
    for a in waiting {
        mark_call(state, a.call.as_deref(), CallState::Failed);
    }
}

/// Declines every waiting call.
pub(super) fn decline_all(state: &mut State) -> Vec<Effect> {
    state
        .questions
        .approvals
        .drain(..)
        .map(|a| Effect::Answer {
            key: a.key,
            answer: Answer::No,
        })
        .collect()
}

/// The first waiting tool call: its tool, its arguments (up to five rows), and the keys.
pub(super) fn draw(state: &State, frame: &mut Frame, main: Rect) {
    let Some(a) = state.questions.approvals.front() else {
        return;
    };
    let width = box_width(main.width);
    let mut lines = vec![Line::from(vec![
        Span::styled(clean_line(&a.name).into_owned(), Style::new().bold()),
        Span::styled(
            match state.questions.approvals.len() {
                1 => String::new(),
                n => format!("  (1 of {n} waiting)"),
            },
            DIM,
        ),
    ])];
    let args = arg_rows(a, width);
    let total = args.len();
    let start = a.scroll.min(total.saturating_sub(ARG_ROWS));
    lines.extend(args.into_iter().skip(start).take(ARG_ROWS));
    if total > ARG_ROWS {
        lines.push(Line::styled(
            format!(
                "rows {}–{} of {total} · ↑↓ scroll",
                start + 1,
                (start + ARG_ROWS).min(total)
            ),
            DIM,
        ));
    }
    lines.push(Line::styled(
        match &a.rule {
            Some(rule) => format!("asks because of the {}", clean_line(rule)),
            None => "no rule of yours allows it yet".to_owned(),
        },
        DIM,
    ));
    match &a.message {
        Some(m) => {
            let mut rows = Vec::new();
            wrap(
                &format!("no, because: {}▏", clean(m)),
                width,
                Style::new(),
                "  ",
                &mut rows,
            );
            lines.extend(rows);
            lines.push(Line::styled(
                "Enter send this to the model with the no · Esc back",
                DIM,
            ));
        }
        None => {
            let options: Vec<(&str, Color, String)> = choices(a)
                .into_iter()
                .map(|(k, c, w, _)| (k, c, w))
                .collect();
            lines.extend(super::guard::keys_lines(state, &options, "←→ Enter", width));
        }
    }
    let height = (lines.len() as u16 + BORDER_ROWS).min(main.height);
    let area = Rect {
        y: main.y + main.height - height,
        height,
        ..main
    };
    frame.render_widget(Clear, area);
    let block = modal_block(&super::guard::title(state, "run this tool?"))
        .border_style(super::guard::border(state, Color::Yellow));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{update, Event};
    use crate::tests::support::{press, typed};
    use crossterm::event::KeyModifiers;

    /// One long argument line wraps into many rows: ↓ scrolls through them (it counted the
    /// pretty-printed lines, one here, and stayed at the top).
    #[test]
    fn a_long_argument_line_scrolls_by_its_wrapped_rows() {
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        s.size = (80, 30);
        let args = serde_json::json!({ "content": "word ".repeat(400) }).to_string();
        update(
            &mut s,
            Event::ApprovalAsked(Approval::new(1, "write_file".into(), args)),
        );
        for _ in 0..3 {
            press(&mut s, KeyCode::Down);
        }
        assert_eq!(s.questions.approvals.front().map(|a| a.scroll), Some(3));
    }

    #[test]
    fn tool_questions_queue_and_take_no_message_once_always_and_ctrl_c() {
        use harness9_agent::engine::Answer;
        let ask = |key: u64, name: &str, server: Option<&str>, args: serde_json::Value| {
            let mut a = Approval::new(key, name.into(), args.to_string());
            a.server = server.map(Into::into);
            a.tool_rule = harness9_agent::permissions::tool_rule(name, server, &args);
            Event::ApprovalAsked(a)
        };
        let bash = |key, c: &str| ask(key, "bash", None, serde_json::json!({ "command": c }));
        let answer = |key, answer| Effect::Answer { key, answer };
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        press(&mut s, KeyCode::Enter);
        assert!(update(&mut s, bash(1, "ls")).is_empty());
        assert!(update(&mut s, ask(2, "write_file", None, serde_json::json!({}))).is_empty());
        assert!(update(&mut s, bash(3, "cargo test -q")).is_empty());
        assert!(update(&mut s, bash(4, "cargo test --lib")).is_empty());
        assert!(update(&mut s, bash(5, "cargo build")).is_empty());
        // Other keys wait; typing does not reach the input.
        assert!(press(&mut s, KeyCode::Char('x')).is_empty());
        assert_eq!(s.editor.input, "");
        assert_eq!(
            press(&mut s, KeyCode::Char('n')),
            vec![answer(1, Answer::No)]
        );
        // Enter picks the highlighted choice: "no" until →→ moves it to "yes, once".
        assert!(press(&mut s, KeyCode::Right).is_empty());
        assert!(press(&mut s, KeyCode::Right).is_empty());
        assert_eq!(press(&mut s, KeyCode::Enter), vec![answer(2, Answer::Yes)]);
        // `a`: this command prefix from now on; a waiting call it covers, which the user has
        // not seen, is still asked.
        assert_eq!(
            press(&mut s, KeyCode::Char('a')),
            vec![answer(3, Answer::Always("bash(cargo test:*)".into()))]
        );
        assert_eq!(
            s.questions.approvals.front().map(|a| a.key),
            Some(4),
            "the covered call waits for its own answer"
        );
        assert_eq!(
            press(&mut s, KeyCode::Char('y')),
            vec![answer(4, Answer::Yes)]
        );
        // `m`: no, with a message for the model; Esc goes back, Enter sends.
        assert!(press(&mut s, KeyCode::Char('m')).is_empty());
        for c in "use the test db".chars() {
            assert!(press(&mut s, KeyCode::Char(c)).is_empty());
        }
        assert_eq!(
            press(&mut s, KeyCode::Enter),
            vec![answer(5, Answer::NoWith("use the test db".into()))]
        );
        // `s`: the server, for an MCP tool; a built-in has no such choice.
        update(
            &mut s,
            ask(
                6,
                "mcp__git__git_commit",
                Some("git"),
                serde_json::json!({}),
            ),
        );
        update(
            &mut s,
            ask(7, "mcp__git__git_add", Some("git"), serde_json::json!({})),
        );
        update(
            &mut s,
            ask(8, "mcp__fs__write", Some("fs"), serde_json::json!({})),
        );
        assert_eq!(
            press(&mut s, KeyCode::Char('s')),
            vec![answer(6, Answer::Always("mcp__git__*".into()))]
        );
        assert_eq!(
            press(&mut s, KeyCode::Char('y')),
            vec![answer(7, Answer::Yes)]
        );
        update(&mut s, bash(9, "ls"));
        // Ctrl+C cancels the turn; what waits goes unanswered (the cancel ends it).
        let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(update(&mut s, ctrl_c), vec![Effect::CancelTurn]);
        assert!(s.questions.approvals.is_empty());
    }

    /// Esc at a tool question cancels the whole turn, as Ctrl+C does: no answer for this
    /// call or the other waiting one (a no would let the turn go on to the model), and the
    /// next Ctrl+C quits.
    #[test]
    fn esc_at_a_tool_question_cancels_the_turn() {
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        update(&mut s, Event::Key(KeyEvent::from(KeyCode::Enter)));
        assert!(s.turn.busy);
        for k in 1..=2 {
            let a = Approval::new(k, "bash".into(), r#"{"command":"touch x"}"#.into());
            update(&mut s, Event::ApprovalAsked(a));
        }
        // Esc while a message is typed goes back to the choices.
        press(&mut s, KeyCode::Char('m'));
        assert!(press(&mut s, KeyCode::Esc).is_empty());
        assert_eq!(s.questions.approvals.len(), 2);
        assert_eq!(press(&mut s, KeyCode::Esc), vec![Effect::CancelTurn]);
        assert!(s.questions.approvals.is_empty());
        assert!(s.turn.cancelling);
        assert!(matches!(
            s.transcript.entries.last(),
            Some(Entry::Info(t)) if t.contains("cancelling the turn")
        ));
    }

    #[test]
    fn a_builtin_has_no_server_choice_and_a_compound_command_no_always() {
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        let args = serde_json::json!({"command": "ls; rm -rf x"});
        let mut a = Approval::new(1, "bash".into(), args.to_string());
        a.tool_rule = harness9_agent::permissions::tool_rule("bash", None, &args);
        update(&mut s, Event::ApprovalAsked(a));
        assert!(press(&mut s, KeyCode::Char('s')).is_empty());
        assert!(press(&mut s, KeyCode::Char('a')).is_empty());
        assert_eq!(s.questions.approvals.len(), 1);
    }
}
