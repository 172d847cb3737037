//! Type-ahead guard for the questions that decide something (tool approvals, a server's
//! elicitation/sampling/URL question, the trust screen, a VS Code input): keys already in
//! flight when such a question opens never answer it.
//!
//! The question in front (the one keys go to) is tracked after every [`update`]: when it
//! changes, a new [`Guard`] starts with its grace running until [`State::now`] + [`GRACE`].
//! A key that arrives before then is dropped and restarts the grace, so typing that goes on
//! answers nothing; only a key after a pause of [`GRACE`] counts. While new, the question
//! says so (title and key line). After it, a choice is deliberate: a letter (`y`, `n`, `a`),
//! or ←→/Tab to move the highlight and Enter, the highlight starting on the safe choice
//! (decline). `State::now` is the time of the event being handled, set by the actor (and by
//! tests), so `update` stays pure.
//!
//! [`update`]: super::state::update

use std::time::{Duration, Instant};

use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::state::{Modal, State};
use super::widgets::DIM;

/// Every question waiting for the user, and which one takes keys.
#[derive(Debug, Default)]
pub struct Questions {
    /// Tool calls waiting for the user's yes or no, the first one shown.
    pub approvals: std::collections::VecDeque<super::approvals::Approval>,
    /// Servers' questions waiting for the user, the first one shown (after tool approvals).
    pub asks: std::collections::VecDeque<super::elicit::PendingAsk>,
    /// VS Code inputs waiting to be asked for.
    pub inputs_pending: std::collections::VecDeque<harness9_app::config::input_vars::InputPrompt>,
    /// Inputs asked for this session (config file, id): never asked again.
    pub inputs_asked: std::collections::BTreeSet<(std::path::PathBuf, String)>,
    /// Unapproved servers (name, command line) the trust screen has shown: it opens by itself
    /// only for new ones (a declined server does not ask again until its command line changes
    /// or it was approved in between).
    pub trust_seen: std::collections::BTreeSet<(String, String)>,
    /// The question keys go to, since when it takes them, its highlighted choice.
    pub guard: Option<Guard>,
}

/// How long a new question ignores keys, counted again from each key it ignored.
pub const GRACE: Duration = Duration::from_millis(600);

/// Which question keys go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontQuestion {
    /// A tool approval (its key).
    Approval(u64),
    /// A server's question (its key).
    Ask(u64),
    /// The trust screen, with the servers it lists: a server joining makes it new again.
    Trust(Vec<(String, String)>),
    /// A VS Code input (config file, id).
    Input(std::path::PathBuf, String),
}

/// The question in front, since when it takes keys, and its highlighted choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The question.
    pub question: FrontQuestion,
    /// Keys before this instant are ignored (and push it back).
    pub armed_at: Instant,
    /// The highlighted choice (0, the first, is the safe one).
    pub choice: usize,
}

/// The question keys go to now, in the order `key_event` routes them.
fn front(state: &State) -> Option<FrontQuestion> {
    if let Some(a) = state.questions.approvals.front() {
        return Some(FrontQuestion::Approval(a.key));
    }
    if let Some(a) = state.questions.asks.front() {
        return Some(FrontQuestion::Ask(a.key));
    }
    match &state.modal {
        Some(Modal::Trust(_)) => Some(FrontQuestion::Trust(state.unapproved_keys())),
        Some(Modal::Input(v)) => Some(FrontQuestion::Input(
            v.prompt.file.clone(),
            v.prompt.id.clone(),
        )),
        _ => None,
    }
}

/// After an update: a question that just came to the front starts its grace.
pub(super) fn refresh(state: &mut State) {
    let q = front(state);
    match (q, &state.questions.guard) {
        (None, _) => state.questions.guard = None,
        (Some(q), Some(g)) if g.question == q => {}
        (Some(question), _) => {
            state.questions.guard = Some(Guard {
                question,
                armed_at: state.now + GRACE,
                choice: 0,
            })
        }
    }
}

/// Whether a key now must be ignored: a question is new. Restarts its grace when so.
pub(super) fn swallow(state: &mut State) -> bool {
    let now = state.now;
    match &mut state.questions.guard {
        Some(g) if now < g.armed_at => {
            g.armed_at = now + GRACE;
            true
        }
        _ => false,
    }
}

/// Whether the question in front is still new (keys ignored).
pub fn is_new(state: &State) -> bool {
    state
        .questions
        .guard
        .as_ref()
        .is_some_and(|g| state.now < g.armed_at)
}

/// The highlighted choice of the question in front, below `n`.
pub(super) fn choice(state: &State, n: usize) -> usize {
    state
        .questions
        .guard
        .as_ref()
        .map_or(0, |g| g.choice.min(n.saturating_sub(1)))
}

/// ←→/Tab/BackTab move the highlight among `n` choices; false for other keys.
pub(super) fn move_choice(state: &mut State, n: usize, key: KeyCode) -> bool {
    let Some(g) = &mut state.questions.guard else {
        return false;
    };
    let n = n.max(1);
    match key {
        KeyCode::Right | KeyCode::Tab => g.choice = (g.choice + 1) % n,
        KeyCode::Left | KeyCode::BackTab => g.choice = (g.choice + n - 1) % n,
        _ => return false,
    }
    true
}

/// The title of a question: marked while it is new.
pub(super) fn title(state: &State, title: &str) -> String {
    if is_new(state) {
        format!("NEW · {title}")
    } else {
        title.to_owned()
    }
}

/// The border colour of a question: red while it is new, else `usual`.
pub(super) fn border(state: &State, usual: Color) -> Style {
    Style::new().fg(if is_new(state) { Color::Red } else { usual })
}

/// The key line of a question: while new, that keys wait; then each choice
/// `(key, colour, what)` with the highlighted one reversed, and `extra` hints after them.
pub(super) fn keys_line(
    state: &State,
    choices: &[(&str, Color, String)],
    extra: &str,
) -> Line<'static> {
    if is_new(state) {
        return Line::styled(
            "new question · keys typed now are ignored until you pause",
            Style::new().fg(Color::Red).bold(),
        );
    }
    let at = choice(state, choices.len());
    let mut spans = Vec::new();
    for (i, (k, color, what)) in choices.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", DIM));
        }
        let hl = if i == at {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        // Brackets too: the highlight shows without colours.
        let (open, close) = if i == at { ("[", "]") } else { ("", "") };
        spans.push(Span::styled(format!("{open}{k}"), hl.fg(*color).bold()));
        spans.push(Span::styled(format!(" {what}{close}"), hl));
    }
    if !extra.is_empty() {
        spans.push(Span::styled(format!(" · {extra}"), DIM));
    }
    Line::from(spans)
}

/// [`keys_line`] broken between choices into lines at most `width` wide (a choice wider than
/// that gets a line of its own, cut by the frame).
pub(super) fn keys_lines(
    state: &State,
    choices: &[(&str, Color, String)],
    extra: &str,
    width: usize,
) -> Vec<Line<'static>> {
    let line = keys_line(state, choices, extra);
    if is_new(state) {
        return vec![line];
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    // The spans come as [sep] key what, per choice; a separator starts a new piece.
    let mut pieces: Vec<Vec<Span<'static>>> = Vec::new();
    for span in line.spans {
        if span.content.starts_with(" · ") || pieces.is_empty() {
            pieces.push(Vec::new());
        }
        if let Some(p) = pieces.last_mut() {
            p.push(span);
        }
    }
    for mut piece in pieces {
        let w: usize = piece.iter().map(|s| s.width()).sum();
        if used > 0 && used + w > width {
            out.push(Line::from(std::mem::take(&mut current)));
            // A line does not start with the separator.
            if let Some(first) = piece.first_mut() {
                if let Some(rest) = first.content.strip_prefix(" · ") {
                    let rest = rest.to_owned();
                    first.content = rest.into();
                }
            }
            used = 0;
        }
        used += piece.iter().map(|s| s.width()).sum::<usize>();
        current.extend(piece);
    }
    if !current.is_empty() {
        out.push(Line::from(current));
    }
    out
}
