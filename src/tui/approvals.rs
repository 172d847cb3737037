//! Questions about tool calls: the engine asks before a tool that changes things runs. The
//! queue of waiting calls, the tools allowed for the session, the keys that answer (yes, no,
//! always) and the box that shows the first question over the transcript.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use super::state::{CallState, Effect, Entry, State};
use super::widgets::{modal_block, wrap, BORDER_ROWS, DIM};
use crate::sanitize::{clean, clean_line};

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
}

/// The rows of arguments the box shows at most; more scroll.
const ARG_ROWS: usize = 10;

/// Sets the transcript line of the engine call `call` to `to` (a question asked or answered).
fn mark_call(state: &mut State, call: Option<&str>, to: CallState) {
    let Some(id) = call.and_then(|c| state.engine_calls.get(c)).copied() else {
        return;
    };
    for e in state.transcript.iter_mut().rev() {
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

/// The argument rows of the box at `width`: the pretty-printed lines, each wrapped.
fn arg_rows(args: &str, width: usize) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    for line in args.lines() {
        wrap(&clean(line), width, DIM, "  ", &mut rows);
    }
    rows
}

/// The box's inner width on a terminal `cols` wide.
fn box_width(cols: u16) -> usize {
    cols.saturating_sub(2).max(1) as usize
}

/// A new question: answered at once for a tool the user allowed for the session, else queued
/// (its arguments pretty-printed once, for every frame that draws them).
pub(super) fn asked(state: &mut State, mut a: Approval) -> Vec<Effect> {
    a.args = pretty(&a.args);
    if state.always_allowed.contains(&a.name) {
        return vec![Effect::Answer {
            key: a.key,
            yes: true,
        }];
    }
    mark_call(state, a.call.as_deref(), CallState::Waiting);
    state.approvals.push_back(a);
    Vec::new()
}

/// The box's choices, the safe one first: `(key, colour, what)`.
fn choices(tool: &str) -> [(&'static str, Color, String); 3] {
    [
        ("n", Color::Red, "decline".to_owned()),
        ("y", Color::Green, "run it".to_owned()),
        (
            "a",
            Color::Yellow,
            format!("always run {} this session", clean_line(tool)),
        ),
    ]
}

/// `y` runs the first waiting call, `n`/Esc declines it, `a` runs it and every later call of
/// that tool this session; ←→/Tab move the highlight (on decline at first) and Enter picks
/// it; other keys wait. (Keys typed as it opened never get here: [`super::guard`].)
pub(super) fn approval_key(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    if super::guard::move_choice(state, 3, key.code) {
        return Vec::new();
    }
    let (yes, always) = match key.code {
        KeyCode::Enter => match super::guard::choice(state, 3) {
            1 => (true, false),
            2 => (true, true),
            _ => (false, false),
        },
        KeyCode::Char('y') => (true, false),
        KeyCode::Char('n') | KeyCode::Esc => (false, false),
        KeyCode::Char('a') => (true, true),
        KeyCode::Up | KeyCode::Char('k') | KeyCode::Down | KeyCode::Char('j') => {
            // The rows the box draws: wrapped at its width, as `draw_approval` does.
            let width = box_width(state.size.0);
            if let Some(first) = state.approvals.front_mut() {
                let rows = arg_rows(&first.args, width).len();
                first.scroll = if matches!(key.code, KeyCode::Up | KeyCode::Char('k')) {
                    first.scroll.saturating_sub(1)
                } else {
                    (first.scroll + 1).min(rows.saturating_sub(ARG_ROWS))
                };
            }
            return Vec::new();
        }
        _ => return Vec::new(),
    };
    let Some(first) = state.approvals.pop_front() else {
        return Vec::new();
    };
    mark_call(state, first.call.as_deref(), CallState::Running);
    let mut effects = vec![Effect::Answer {
        key: first.key,
        yes,
    }];
    if always {
        // The same tool's other waiting calls go too.
        state.approvals.retain(|a| {
            let same = a.name == first.name;
            if same {
                effects.push(Effect::Answer {
                    key: a.key,
                    yes: true,
                });
            }
            !same
        });
        state.note(Entry::Info(format!(
            "{} runs without asking for the rest of this session",
            first.name
        )));
        state.always_allowed.insert(first.name);
    }
    effects
}

/// Declines every waiting call.
pub(super) fn decline_all(state: &mut State) -> Vec<Effect> {
    state
        .approvals
        .drain(..)
        .map(|a| Effect::Answer {
            key: a.key,
            yes: false,
        })
        .collect()
}

/// The first waiting tool call: its tool, its arguments (up to five rows), and the keys.
pub(super) fn draw_approval(state: &State, frame: &mut Frame, main: Rect) {
    let Some(a) = state.approvals.front() else {
        return;
    };
    let width = box_width(main.width);
    let mut lines = vec![Line::from(vec![
        Span::styled(clean_line(&a.name).into_owned(), Style::new().bold()),
        Span::styled(
            match state.approvals.len() {
                1 => String::new(),
                n => format!("  (1 of {n} waiting)"),
            },
            DIM,
        ),
    ])];
    let args = arg_rows(&a.args, width);
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
    lines.push(super::guard::keys_line(
        state,
        &choices(&a.name),
        "←→ Enter",
    ));
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
    use crate::tui::state::{update, Event};
    use crate::tui::test_support::{press, typed};
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
            Event::ApprovalAsked(Approval {
                key: 1,
                name: "write_file".into(),
                args,
                call: None,
                scroll: 0,
            }),
        );
        for _ in 0..3 {
            press(&mut s, KeyCode::Down);
        }
        assert_eq!(s.approvals.front().map(|a| a.scroll), Some(3));
    }

    #[test]
    fn tool_questions_queue_and_take_yes_no_always_and_ctrl_c() {
        let ask = |key: u64, name: &str| {
            Event::ApprovalAsked(Approval {
                key,
                name: name.into(),
                args: "{}".into(),
                call: None,
                scroll: 0,
            })
        };
        let answer = |key, yes| Effect::Answer { key, yes };
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        press(&mut s, KeyCode::Enter);
        assert!(update(&mut s, ask(1, "bash")).is_empty());
        assert!(update(&mut s, ask(2, "write_file")).is_empty());
        assert!(update(&mut s, ask(3, "bash")).is_empty());
        // Other keys wait; typing does not reach the input.
        assert!(press(&mut s, KeyCode::Char('x')).is_empty());
        assert_eq!(s.input, "");
        assert_eq!(press(&mut s, KeyCode::Char('n')), vec![answer(1, false)]);
        // Enter picks the highlighted choice: decline until → moves it to "run it".
        assert!(press(&mut s, KeyCode::Right).is_empty());
        assert_eq!(press(&mut s, KeyCode::Enter), vec![answer(2, true)]);
        // `a`: this one, and bash from now on without asking.
        assert_eq!(press(&mut s, KeyCode::Char('a')), vec![answer(3, true)]);
        assert_eq!(update(&mut s, ask(4, "bash")), vec![answer(4, true)]);
        assert!(update(&mut s, ask(5, "write_file")).is_empty());
        assert_eq!(press(&mut s, KeyCode::Esc), vec![answer(5, false)]);
        // Ctrl+C declines whatever waits and cancels the turn.
        update(&mut s, ask(6, "write_file"));
        update(&mut s, ask(7, "write_file"));
        let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(
            update(&mut s, ctrl_c),
            vec![answer(6, false), answer(7, false), Effect::CancelTurn]
        );
        assert!(s.approvals.is_empty());
    }
}
