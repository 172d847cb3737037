//! A server's questions for the user: an elicitation's form (built from its requested schema,
//! checked before it is sent: accept, decline or cancel), a URL elicitation (the full URL and
//! its host, opened only after a yes), and a sampling request's approval (the server, its
//! system prompt, its messages and token cap; yes sends it to the model). They queue like tool
//! approvals, the first one drawn over the transcript; a turn that waits on one waits for the
//! user. A question the server withdrew (it stopped waiting) leaves the queue.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;
use serde_json::{json, Map, Value};

use super::state::{Effect, State};
use super::widgets::{modal_block, wrap, BORDER_ROWS, DIM};
use harness9_app::elicit::{fields, validate, Field, FieldKind};
use harness9_app::sampler::Sampling;
use harness9_base::sanitize::{clean, clean_line};

/// Most rows of a sampling request's messages the approval shows.
const SAMPLING_ROWS: usize = 8;

/// A question waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAsk {
    /// Which question (for [`Effect::AnswerAsk`]).
    pub key: u64,
    /// The server that asks.
    pub server: String,
    /// What it asks.
    pub kind: AskKind,
}

/// The kinds of question.
#[derive(Debug, Clone, PartialEq)]
pub enum AskKind {
    /// A form to fill in.
    Form(Form),
    /// A page to open.
    Url {
        /// The server's message.
        message: String,
        /// The whole URL.
        url: String,
        /// Its host as a browser reads it, shown on its own so a look-alike link stands out.
        host: String,
        /// Why the opener refuses it (not https, hidden characters, ...): then only declining
        /// is offered.
        refused: Option<String>,
    },
    /// May this go to the model?
    Sampling {
        /// What it asks.
        sampling: Sampling,
        /// The model it would go to.
        model: String,
    },
}

/// The answer to a question.
#[derive(Debug, Clone, PartialEq)]
pub enum AskAnswer {
    /// An elicitation's result: `{"action": "accept"|"decline"|"cancel", "content"?}`.
    Elicit(Value),
    /// Whether a sampling request goes to the model.
    Sample(bool),
}

/// A form field's value while it is edited.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// Text and numbers, as typed.
    Text(String),
    /// A boolean, unset until chosen (or defaulted).
    Bool(Option<bool>),
    /// The chosen option's index.
    Choice(Option<usize>),
    /// Which options are chosen, and the one under the cursor.
    Multi {
        /// One per option.
        chosen: Vec<bool>,
        /// The option ←→ moves over.
        cursor: usize,
    },
}

/// An elicitation form.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The server's message.
    pub message: String,
    /// The fields, in the schema's order.
    pub fields: Vec<Field>,
    /// One value per field.
    pub values: Vec<Val>,
    /// The field keys go to.
    pub selected: usize,
    /// What the last Enter found wrong.
    pub error: Option<String>,
}

impl Form {
    /// The form of `params` (`message`, `requestedSchema`), filled with the defaults.
    pub fn new(params: &Value) -> Self {
        let fields = fields(params.get("requestedSchema"));
        let values = fields.iter().map(initial).collect();
        Self {
            message: params
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            fields,
            values,
            selected: 0,
            error: None,
        }
    }

    /// The `content` to send, checked against the schema; else what is wrong.
    pub fn content(&self) -> Result<Map<String, Value>, String> {
        let mut content = Map::new();
        for (f, v) in self.fields.iter().zip(&self.values) {
            let value = match (v, &f.kind) {
                (Val::Text(t), _) if t.is_empty() => None,
                (Val::Text(t), FieldKind::Number { integer: true, .. }) => Some(
                    t.trim()
                        .parse::<i64>()
                        .map(Value::from)
                        .map_err(|_| format!("{}: a whole number", f.title))?,
                ),
                (Val::Text(t), FieldKind::Number { .. }) => Some(
                    t.trim()
                        .parse::<f64>()
                        .ok()
                        .and_then(|x| serde_json::Number::from_f64(x).map(Value::Number))
                        .ok_or_else(|| format!("{}: a number", f.title))?,
                ),
                (Val::Text(t), _) => Some(Value::String(t.clone())),
                (Val::Bool(b), _) => b.map(Value::Bool),
                (Val::Choice(i), FieldKind::Choice(opts)) => {
                    i.and_then(|i| opts.get(i)).map(|(v, _)| json!(v))
                }
                (Val::Multi { chosen, .. }, FieldKind::Multi { options, .. }) => {
                    let picked: Vec<Value> = options
                        .iter()
                        .zip(chosen)
                        .filter(|(_, c)| **c)
                        .map(|((v, _), _)| json!(v))
                        .collect();
                    (!picked.is_empty() || f.required).then_some(Value::Array(picked))
                }
                _ => None,
            };
            if let Some(v) = value {
                content.insert(f.name.clone(), v);
            }
        }
        validate(&self.fields, &content)?;
        Ok(content)
    }
}

/// A field's starting value: its default, else empty.
fn initial(f: &Field) -> Val {
    let d = f.default.as_ref();
    match &f.kind {
        FieldKind::Text { .. } => Val::Text(d.and_then(Value::as_str).unwrap_or("").to_owned()),
        FieldKind::Number { .. } => Val::Text(d.map(Value::to_string).unwrap_or_default()),
        FieldKind::Boolean => Val::Bool(d.and_then(Value::as_bool)),
        FieldKind::Choice(opts) => Val::Choice(
            d.and_then(Value::as_str)
                .and_then(|d| opts.iter().position(|(v, _)| v == d)),
        ),
        FieldKind::Multi { options, .. } => {
            let picked: Vec<&str> = d
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            Val::Multi {
                chosen: options
                    .iter()
                    .map(|(v, _)| picked.contains(&v.as_str()))
                    .collect(),
                cursor: 0,
            }
        }
    }
}

/// The host of `url` as a browser reads it (WHATWG parsing: `https://a.example\\@b.example/`
/// goes to `a.example`; no user info or port; punycode), or `?` when it has none.
pub fn host_of(url: &str) -> String {
    harness9_actors::opener::host_of(url).unwrap_or_else(|| "?".to_owned())
}

/// The question of an elicitation's params: a URL to open (`mode: url`) or a form.
pub fn elicitation(key: u64, server: String, params: &Value) -> PendingAsk {
    let kind = if params.get("mode").and_then(Value::as_str) == Some("url") {
        let raw = params.get("url").and_then(Value::as_str).unwrap_or("");
        // What would be opened is the opener's checked form, shown as is; a refused URL is
        // shown cleaned, with why.
        let (url, refused) = match harness9_actors::opener::check_url(raw) {
            Ok(u) => (String::from(u), None),
            Err(e) => (raw.to_owned(), Some(e)),
        };
        AskKind::Url {
            message: params
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            host: host_of(&url),
            url,
            refused,
        }
    } else {
        AskKind::Form(Form::new(params))
    };
    PendingAsk { key, server, kind }
}

/// Most questions waiting at once; one more is cancelled at once.
pub const MAX_WAITING: usize = 64;

/// A new question joins the queue (or, when [`MAX_WAITING`] wait already, is cancelled).
pub(super) fn asked(state: &mut State, a: PendingAsk) -> Vec<Effect> {
    if state.questions.asks.len() >= MAX_WAITING {
        let answer = match a.kind {
            AskKind::Sampling { .. } => AskAnswer::Sample(false),
            _ => AskAnswer::Elicit(json!({"action": "cancel"})),
        };
        return vec![Effect::AnswerAsk { key: a.key, answer }];
    }
    state.questions.asks.push_back(a);
    Vec::new()
}

/// The server stopped waiting: its question leaves the queue.
pub(super) fn withdrawn(state: &mut State, key: u64) {
    state.questions.asks.retain(|a| a.key != key);
}

/// Cancels every waiting question (Ctrl+C during a turn).
pub(super) fn cancel_all(state: &mut State) -> Vec<Effect> {
    state
        .questions
        .asks
        .drain(..)
        .map(|a| Effect::AnswerAsk {
            key: a.key,
            answer: match a.kind {
                AskKind::Sampling { .. } => AskAnswer::Sample(false),
                _ => AskAnswer::Elicit(json!({"action": "cancel"})),
            },
        })
        .collect()
}

fn done(state: &mut State, answer: AskAnswer) -> Vec<Effect> {
    match state.questions.asks.pop_front() {
        Some(a) => vec![Effect::AnswerAsk { key: a.key, answer }],
        None => Vec::new(),
    }
}

/// The first question's keys.
pub(super) fn key(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    // Sampling and URL questions: ←→/Tab move the highlight (on decline at first), Enter
    // picks it. A form keeps Tab and Enter for its fields.
    let choices = match state.questions.asks.front().map(|a| &a.kind) {
        Some(AskKind::Sampling { .. }) => Some(2),
        Some(AskKind::Url { refused, .. }) => Some(if refused.is_none() { 2 } else { 1 }),
        _ => None,
    };
    if let Some(n) = choices {
        if super::guard::move_choice(state, n, key.code) {
            return Vec::new();
        }
    }
    let chosen = super::guard::choice(state, 2);
    let Some(first) = state.questions.asks.front_mut() else {
        return Vec::new();
    };
    match &mut first.kind {
        AskKind::Sampling { .. } => {
            let code = match key.code {
                KeyCode::Enter if chosen == 1 => KeyCode::Char('y'),
                KeyCode::Enter => KeyCode::Char('n'),
                c => c,
            };
            match code {
                KeyCode::Char('y') => done(state, AskAnswer::Sample(true)),
                KeyCode::Char('n') | KeyCode::Esc => done(state, AskAnswer::Sample(false)),
                _ => Vec::new(),
            }
        }
        AskKind::Url { url, refused, .. } => match key.code {
            KeyCode::Enter if refused.is_none() && chosen == 1 => {
                let url = url.clone();
                let mut effects = vec![Effect::OpenUrl(url)];
                effects.extend(done(state, AskAnswer::Elicit(json!({"action": "accept"}))));
                effects
            }
            KeyCode::Char('y') if refused.is_none() => {
                let url = url.clone();
                let mut effects = vec![Effect::OpenUrl(url)];
                effects.extend(done(state, AskAnswer::Elicit(json!({"action": "accept"}))));
                effects
            }
            KeyCode::Char('n') | KeyCode::Enter => {
                done(state, AskAnswer::Elicit(json!({"action": "decline"})))
            }
            KeyCode::Esc => done(state, AskAnswer::Elicit(json!({"action": "cancel"}))),
            _ => Vec::new(),
        },
        AskKind::Form(form) => {
            let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
            match key.code {
                KeyCode::Esc => done(state, AskAnswer::Elicit(json!({"action": "cancel"}))),
                KeyCode::Char('d') if ctrl => {
                    done(state, AskAnswer::Elicit(json!({"action": "decline"})))
                }
                KeyCode::Enter => match form.content() {
                    Ok(content) => done(
                        state,
                        AskAnswer::Elicit(json!({"action": "accept", "content": content})),
                    ),
                    Err(e) => {
                        form.error = Some(e);
                        Vec::new()
                    }
                },
                _ => {
                    form_key(form, key);
                    Vec::new()
                }
            }
        }
    }
}

/// Moves between fields and edits the selected one.
fn form_key(form: &mut Form, key: KeyEvent) {
    let n = form.fields.len();
    if n == 0 {
        return;
    }
    match key.code {
        KeyCode::Tab | KeyCode::Down => {
            form.selected = (form.selected + 1) % n;
            return;
        }
        KeyCode::BackTab | KeyCode::Up => {
            form.selected = (form.selected + n - 1) % n;
            return;
        }
        _ => {}
    }
    let i = form.selected;
    let Some(value) = form.values.get_mut(i) else {
        return;
    };
    let options = match &form.fields[i].kind {
        FieldKind::Choice(o) | FieldKind::Multi { options: o, .. } => o.len(),
        _ => 0,
    };
    match value {
        Val::Text(t) => match key.code {
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => t.push(c),
            KeyCode::Backspace => {
                t.pop();
            }
            _ => {}
        },
        Val::Bool(b) => {
            if matches!(
                key.code,
                KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right
            ) {
                *b = Some(!b.unwrap_or(false));
            }
        }
        Val::Choice(c) if options > 0 => match key.code {
            KeyCode::Right | KeyCode::Char(' ') => *c = Some(c.map_or(0, |c| (c + 1) % options)),
            KeyCode::Left => *c = Some(c.map_or(options - 1, |c| (c + options - 1) % options)),
            _ => {}
        },
        Val::Multi { chosen, cursor } if options > 0 => match key.code {
            KeyCode::Right => *cursor = (*cursor + 1) % options,
            KeyCode::Left => *cursor = (*cursor + options - 1) % options,
            KeyCode::Char(' ') => {
                if let Some(c) = chosen.get_mut(*cursor) {
                    *c = !*c;
                }
            }
            _ => {}
        },
        _ => {}
    }
}

/// A field's value as it is drawn.
fn value_spans(f: &Field, v: &Val, selected: bool) -> Vec<Span<'static>> {
    let hl = Style::new().fg(Color::Cyan).bold();
    match (v, &f.kind) {
        (Val::Text(t), kind) => {
            let mut out = vec![Span::raw(clean_line(t).into_owned())];
            if selected {
                out.push(Span::styled("▏", hl));
            }
            if t.is_empty() {
                let hint = match kind {
                    FieldKind::Text {
                        format: Some(fmt), ..
                    } => format!("({fmt})"),
                    FieldKind::Number { integer: true, .. } => "(integer)".to_owned(),
                    FieldKind::Number { .. } => "(number)".to_owned(),
                    _ => String::new(),
                };
                out.push(Span::styled(clean_line(&hint).into_owned(), DIM));
            }
            out
        }
        (Val::Bool(b), _) => vec![Span::raw(match b {
            Some(true) => "[x] yes",
            Some(false) => "[ ] no",
            None => "[ ] (unset)",
        })],
        (Val::Choice(c), FieldKind::Choice(opts)) => match c.and_then(|c| opts.get(c)) {
            Some((_, label)) => vec![Span::raw(format!("‹ {} ›", clean_line(label)))],
            None => vec![Span::styled("(←→ to choose)", DIM)],
        },
        (Val::Multi { chosen, cursor }, FieldKind::Multi { options, .. }) => {
            let mut out = Vec::new();
            for (i, ((_, label), on)) in options.iter().zip(chosen).enumerate() {
                let text = format!("[{}] {} ", if *on { "x" } else { " " }, clean_line(label));
                if selected && i == *cursor {
                    out.push(Span::styled(text, hl));
                } else {
                    out.push(Span::raw(text));
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

fn keys_line(keys: &[(&'static str, Color, &'static str)]) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, (k, color, what)) in keys.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", DIM));
        }
        spans.push(Span::styled(*k, Style::new().fg(*color).bold()));
        spans.push(Span::raw(format!(" {what}")));
    }
    Line::from(spans)
}

/// The form's lines: message, fields (the selected one marked, with its description), the
/// error, and the keys; the field rows scrolled so the selected one shows within `rows`.
fn form_lines(form: &Form, width: usize, rows: usize) -> Vec<Line<'static>> {
    let mut head = Vec::new();
    wrap(&clean(&form.message), width, Style::new(), "", &mut head);
    head.truncate(4);
    let mut body = Vec::new();
    let mut selected_at = 0;
    for (i, (f, v)) in form.fields.iter().zip(&form.values).enumerate() {
        let sel = i == form.selected;
        if sel {
            selected_at = body.len();
        }
        let mut spans = vec![
            Span::styled(if sel { "› " } else { "  " }, Style::new().fg(Color::Cyan)),
            Span::styled(
                clean_line(&f.title).into_owned(),
                if sel {
                    Style::new().bold()
                } else {
                    Style::new()
                },
            ),
            Span::styled(
                if f.required { "*" } else { "" },
                Style::new().fg(Color::Red),
            ),
            Span::raw(": "),
        ];
        spans.extend(value_spans(f, v, sel));
        body.push(Line::from(spans));
        if sel {
            if let Some(d) = &f.description {
                let mut desc = Vec::new();
                wrap(&clean(d), width.saturating_sub(4), DIM, "    ", &mut desc);
                desc.truncate(2);
                body.extend(desc);
            }
        }
    }
    let mut tail = Vec::new();
    if let Some(e) = &form.error {
        tail.push(Line::styled(
            clean_line(e).into_owned(),
            Style::new().fg(Color::Red),
        ));
    }
    tail.push(keys_line(&[
        ("Enter", Color::Green, "send"),
        ("Tab", Color::Cyan, "next field"),
        ("Ctrl+D", Color::Red, "decline"),
        ("Esc", Color::Yellow, "cancel"),
    ]));
    let room = rows.saturating_sub(head.len() + tail.len()).max(1);
    let start = if body.len() <= room {
        0
    } else {
        selected_at.saturating_sub(room / 2).min(body.len() - room)
    };
    let mut lines = head;
    lines.extend(body.into_iter().skip(start).take(room));
    lines.extend(tail);
    lines
}

/// The first waiting question, at the bottom of `main`.
pub(super) fn draw(state: &State, frame: &mut Frame, main: Rect) {
    let Some(a) = state.questions.asks.front() else {
        return;
    };
    let width = main.width.saturating_sub(2).max(1) as usize;
    let rows = main.height.saturating_sub(BORDER_ROWS) as usize;
    let server = clean_line(&a.server).into_owned();
    let waiting = match state.questions.asks.len() {
        1 => String::new(),
        n => format!(" (1 of {n} waiting)"),
    };
    let (title, lines) = match &a.kind {
        AskKind::Form(form) => {
            let mut lines = form_lines(form, width, rows);
            if super::guard::is_new(state) {
                lines.pop();
                lines.push(super::guard::keys_line(state, &[], ""));
            }
            (format!("{server} asks{waiting}"), lines)
        }
        AskKind::Url {
            message,
            url,
            host,
            refused,
        } => {
            let page = Page {
                message,
                url,
                host,
                refused: refused.as_deref(),
            };
            let lines = url_lines(state, &page, width);
            (format!("{server} asks you to open a page{waiting}"), lines)
        }
        AskKind::Sampling { sampling, model } => {
            let lines = sampling_lines(state, sampling, model, width);
            (format!("{server} asks to use the model{waiting}"), lines)
        }
    };
    let height = (lines.len() as u16 + BORDER_ROWS).min(main.height);
    let area = Rect {
        y: main.y + main.height - height,
        height,
        ..main
    };
    frame.render_widget(Clear, area);
    let block = modal_block(&super::guard::title(state, &title))
        .border_style(super::guard::border(state, Color::Magenta));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// A URL elicitation as drawn: [`AskKind::Url`]'s fields.
struct Page<'a> {
    message: &'a str,
    url: &'a str,
    host: &'a str,
    refused: Option<&'a str>,
}

/// A URL elicitation's lines: the message, the host on its own, the whole URL, and the keys
/// (only declining when the opener refuses it, with why).
fn url_lines(state: &State, page: &Page, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    wrap(&clean(page.message), width, Style::new(), "", &mut lines);
    lines.truncate(4);
    lines.push(Line::from(vec![
        Span::styled("opens a page on ", DIM),
        Span::styled(
            clean_line(page.host).into_owned(),
            Style::new().bold().fg(Color::Yellow),
        ),
    ]));
    let mut shown = Vec::new();
    wrap(
        &clean_line(page.url),
        width.saturating_sub(5),
        Style::new().fg(Color::Cyan),
        "",
        &mut shown,
    );
    for (i, l) in shown.into_iter().enumerate() {
        let mut spans = vec![Span::styled(if i == 0 { "url: " } else { "     " }, DIM)];
        spans.extend(l.spans);
        lines.push(Line::from(spans));
    }
    if let Some(why) = page.refused {
        let mut l = Vec::new();
        wrap(
            &format!("harness9 will not open it: {}", clean_line(why)),
            width,
            Style::new().fg(Color::Red),
            "",
            &mut l,
        );
        lines.extend(l);
        lines.push(super::guard::keys_line(
            state,
            &[("n", Color::Red, "decline".to_owned())],
            "Esc cancel",
        ));
    } else {
        lines.push(super::guard::keys_line(
            state,
            &[
                ("n", Color::Red, "decline".to_owned()),
                (
                    "y",
                    Color::Green,
                    format!("open it on {}", clean_line(page.host)),
                ),
            ],
            "Esc cancel · ←→ Enter",
        ));
    }
    lines
}

/// A sampling request's lines: the model and token cap, its system prompt and tools (cut),
/// its messages (at most [`SAMPLING_ROWS`]), and the keys.
fn sampling_lines(
    state: &State,
    sampling: &Sampling,
    model: &str,
    width: usize,
) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(vec![
        Span::styled("model: ", DIM),
        Span::raw(clean_line(model).into_owned()),
        Span::styled(" · max tokens: ", DIM),
        Span::raw(sampling.max_tokens.to_string()),
    ])];
    if let Some(sys) = &sampling.system {
        let mut l = Vec::new();
        wrap(&clean(&format!("system: {sys}")), width, DIM, "  ", &mut l);
        l.truncate(3);
        lines.extend(l);
    }
    if !sampling.tools.is_empty() {
        let names: Vec<&str> = sampling.tools.iter().map(|t| t.name.as_str()).collect();
        let mut l = Vec::new();
        wrap(
            &clean_line(&format!("tools the model may call: {}", names.join(", "))),
            width,
            DIM,
            "  ",
            &mut l,
        );
        l.truncate(2);
        lines.extend(l);
    }
    let mut msgs = Vec::new();
    for m in sampling.shown_messages() {
        wrap(&clean(&m), width, Style::new(), "  ", &mut msgs);
    }
    let more = msgs.len() > SAMPLING_ROWS;
    msgs.truncate(SAMPLING_ROWS);
    lines.extend(msgs);
    if more {
        lines.push(Line::styled("…", DIM));
    }
    lines.push(super::guard::keys_line(
        state,
        &[
            ("n", Color::Red, "decline".to_owned()),
            ("y", Color::Green, "send it to the model".to_owned()),
        ],
        "←→ Enter",
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{update, Event};
    use crate::tests::support::{press, settle};

    fn params() -> Value {
        json!({
            "message": "Who are you?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "title": "Name"},
                "age": {"type": "integer", "title": "Age", "default": 30},
                "ok": {"type": "boolean", "title": "Agree"},
                "pet": {"type": "string", "title": "Pet", "enum": ["cat", "dog"]},
                "tags": {"type": "array", "title": "Tags", "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}}
            }, "required": ["name"]}
        })
    }

    fn answer(effects: &[Effect]) -> Option<Value> {
        effects.iter().find_map(|e| match e {
            Effect::AnswerAsk {
                answer: AskAnswer::Elicit(v),
                ..
            } => Some(v.clone()),
            _ => None,
        })
    }

    #[test]
    fn a_form_is_filled_checked_and_sent() {
        let mut s = State::new("x".into(), None, String::new());
        update(
            &mut s,
            Event::Asked(elicitation(7, "srv".into(), &params())),
        );
        // Enter with the required name empty: an error, nothing sent.
        assert!(press(&mut s, KeyCode::Enter).is_empty());
        assert!(
            matches!(&s.questions.asks[0].kind, AskKind::Form(f) if f.error.as_deref() == Some("Name is required"))
        );
        for c in "Ada".chars() {
            press(&mut s, KeyCode::Char(c));
        }
        press(&mut s, KeyCode::Tab); // age
        press(&mut s, KeyCode::Backspace);
        press(&mut s, KeyCode::Backspace);
        press(&mut s, KeyCode::Char('x'));
        assert!(press(&mut s, KeyCode::Enter).is_empty(), "x is no integer");
        press(&mut s, KeyCode::Backspace);
        press(&mut s, KeyCode::Char('4'));
        press(&mut s, KeyCode::Tab); // ok
        press(&mut s, KeyCode::Char(' '));
        press(&mut s, KeyCode::Tab); // pet
        press(&mut s, KeyCode::Right);
        press(&mut s, KeyCode::Right);
        press(&mut s, KeyCode::Tab); // tags
        press(&mut s, KeyCode::Right);
        press(&mut s, KeyCode::Char(' '));
        let got = answer(&press(&mut s, KeyCode::Enter)).unwrap();
        assert_eq!(
            got,
            json!({"action": "accept", "content": {"name": "Ada", "age": 4, "ok": true, "pet": "dog", "tags": ["b"]}})
        );
        assert!(s.questions.asks.is_empty());

        // Ctrl+D declines, Esc cancels, a withdrawn question leaves.
        update(
            &mut s,
            Event::Asked(elicitation(8, "srv".into(), &params())),
        );
        update(
            &mut s,
            Event::Asked(elicitation(9, "srv".into(), &params())),
        );
        update(
            &mut s,
            Event::Asked(elicitation(10, "srv".into(), &params())),
        );
        let ctrl_d = Event::Key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
        settle(&mut s);
        assert_eq!(
            answer(&update(&mut s, ctrl_d)).unwrap(),
            json!({"action": "decline"})
        );
        update(&mut s, Event::AskWithdrawn(9));
        assert_eq!(
            answer(&press(&mut s, KeyCode::Esc)).unwrap(),
            json!({"action": "cancel"})
        );
        assert!(s.questions.asks.is_empty());
    }

    #[test]
    fn a_url_opens_only_after_yes_and_sampling_takes_yes_or_no() {
        let mut s = State::new("x".into(), None, String::new());
        let url = json!({"mode": "url", "url": "https://user@login.example.com:8443/a?b", "message": "log in"});
        let a = elicitation(1, "srv".into(), &url);
        assert!(matches!(&a.kind, AskKind::Url { host, .. } if host == "login.example.com"));
        update(&mut s, Event::Asked(a.clone()));
        // Enter picks the highlight, which starts on decline: nothing opens.
        let effects = press(&mut s, KeyCode::Enter);
        assert_eq!(effects.len(), 1, "Enter does not open: {effects:?}");
        assert_eq!(answer(&effects).unwrap(), json!({"action": "decline"}));
        update(&mut s, Event::Asked(a));
        let effects = press(&mut s, KeyCode::Char('y'));
        assert_eq!(
            effects[0],
            Effect::OpenUrl("https://user@login.example.com:8443/a?b".into())
        );
        assert_eq!(answer(&effects).unwrap(), json!({"action": "accept"}));
        update(&mut s, Event::Asked(elicitation(2, "srv".into(), &url)));
        let effects = press(&mut s, KeyCode::Char('n'));
        assert_eq!(effects.len(), 1, "no open on a no: {effects:?}");

        let sampling = Sampling::parse(&json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10})).unwrap();
        let ask = |key| PendingAsk {
            key,
            server: "srv".into(),
            kind: AskKind::Sampling {
                sampling: sampling.clone(),
                model: "anthropic m".into(),
            },
        };
        update(&mut s, Event::Asked(ask(3)));
        update(&mut s, Event::Asked(ask(4)));
        assert_eq!(
            press(&mut s, KeyCode::Char('y')),
            vec![Effect::AnswerAsk {
                key: 3,
                answer: AskAnswer::Sample(true)
            }]
        );
        assert_eq!(
            press(&mut s, KeyCode::Char('n')),
            vec![Effect::AnswerAsk {
                key: 4,
                answer: AskAnswer::Sample(false)
            }]
        );
        assert_eq!(host_of("http://[::1]:80/x"), "::1");
        assert_eq!(host_of(""), "?");
    }
}
