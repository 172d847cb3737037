//! The transcript: its entries (the user's lines, the model's answers, notes, tool calls with
//! their progress and results), how the engine's events and finished calls change them, paging
//! back through it, and its drawing (answers as markdown, tool results folded).

use harness9_actors::protocol::render::SCHEMA_NOTE_HEAD;
use std::time::Duration;

use harness9_actors::error::fmt_duration;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::State;
use super::widgets::{truncate_line, wrap, DIM};
use harness9_agent::builtins::diff::DiffLine;
use harness9_agent::engine::EngineEvent;
use harness9_base::sanitize::{clean, clean_line};

/// The conversation as the screen shows it.
#[derive(Debug)]
pub struct TranscriptState {
    /// The entries, oldest first.
    pub entries: Vec<Entry>,
    /// Lines scrolled back from the bottom.
    pub scroll_back: usize,
    /// The engine's tool lines show their arguments and results (Ctrl+O toggles).
    pub expand_tools: bool,
    /// The engine's call ids -> transcript call ids.
    pub engine_calls: std::collections::BTreeMap<String, u64>,
    /// Next call id.
    pub next_call: u64,
    /// What each edit tool call that ran changed, by call id: drawn under its line.
    pub diffs: std::collections::BTreeMap<u64, Vec<DiffLine>>,
}

impl Default for TranscriptState {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            scroll_back: 0,
            expand_tools: false,
            engine_calls: Default::default(),
            next_call: 1,
            diffs: Default::default(),
        }
    }
}

/// Lines of a tool result shown in the transcript before it is folded.
pub const RESULT_LINES: usize = 40;
/// Rows of an edit's diff under its folded line (Ctrl+O shows up to [`DIFF_ROWS_EXPANDED`]).
const DIFF_ROWS: usize = 12;
/// Edit calls whose diff the transcript keeps.
const MAX_DIFFS: usize = 256;
/// Rows of an edit's diff when tool lines are expanded.
const DIFF_ROWS_EXPANDED: usize = 400;

/// How a tool line in the transcript stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallState {
    /// In flight.
    Running,
    /// Waiting for the user's yes or no before it runs.
    Waiting,
    /// Done.
    Ok,
    /// Failed or `isError`.
    Failed,
}

/// One transcript entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// What the user typed.
    User(String),
    /// Assistant text.
    Assistant(String),
    /// A neutral note.
    Info(String),
    /// An error note.
    Error(String),
    /// A tool call and, once done, its output.
    Tool {
        /// Call id.
        id: u64,
        /// Registered tool name.
        name: String,
        /// Arguments as typed (compact JSON).
        args: String,
        /// Where it stands.
        state: CallState,
        /// Duration once done.
        elapsed: Option<Duration>,
        /// Output (sanitized).
        output: String,
        /// Always shown with arguments and output (a `/call`); engine calls follow
        /// [`State::expand_tools`].
        pinned: bool,
        /// The latest progress while running (`3/10 step 3`).
        progress: Option<String>,
    },
}

impl State {
    /// Adds an entry to the transcript and scrolls to the bottom.
    pub(super) fn note(&mut self, e: Entry) {
        self.transcript.entries.push(e);
        self.transcript.scroll_back = 0;
    }
}

/// Puts the config's warnings (`Config::warnings`: fields of other tools that are ignored, and
/// the like) in the transcript, one note each: in the TUI the log file is no place for them.
pub fn config_warnings(state: &mut State, warnings: Vec<String>) {
    for w in warnings {
        state.note(Entry::Info(format!("warning: {w}")));
    }
}

/// PgUp (`up`) or PgDn: scrolls the transcript back or forward by a page less one row.
pub(super) fn page(state: &mut State, up: bool) {
    let page = state.body_rows().saturating_sub(1).max(1);
    if up {
        state.transcript.scroll_back += page;
    } else {
        state.transcript.scroll_back = state.transcript.scroll_back.saturating_sub(page);
    }
}

/// Shows a running call's progress (`3/10 step 3`) on its entry; a finished entry keeps its
/// result.
pub fn call_progress(
    state: &mut State,
    id: u64,
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
) {
    let mut text = match total {
        Some(t) => format!("{progress}/{t}"),
        None => progress.to_string(),
    };
    if let Some(m) = message {
        text.push(' ');
        text.push_str(&harness9_base::sanitize::clean_line(&m));
    }
    for e in state.transcript.entries.iter_mut().rev() {
        if let Entry::Tool {
            id: eid,
            progress: p,
            state: st,
            ..
        } = e
        {
            if *eid == id {
                // A call's progress comes before its result; this guard only keeps a finished
                // entry as it is.
                if matches!(st, CallState::Running | CallState::Waiting) {
                    *p = Some(text);
                }
                break;
            }
        }
    }
}

/// The transcript of a resumed conversation: what the user said, the model's text, and a note
/// per tool call (tool results are in the conversation, not drawn again).
pub fn entries_of(messages: &[harness9_agent::model::Message]) -> Vec<Entry> {
    use harness9_agent::model::{Block, Role};
    let mut out = Vec::new();
    for m in messages {
        for b in &m.content {
            match (m.role, b) {
                (Role::User, Block::Text(t)) => out.push(Entry::User(t.clone())),
                (Role::Assistant, Block::Text(t)) if !t.trim().is_empty() => {
                    out.push(Entry::Assistant(t.clone()))
                }
                (Role::Assistant, Block::ToolUse { name, .. }) => {
                    out.push(Entry::Info(format!("⚙ {name}")))
                }
                _ => {}
            }
        }
    }
    out
}

/// Ends a tool entry: its state, duration and (sanitized) output; the view follows the newest.
pub(super) fn finish_call(
    state: &mut State,
    id: u64,
    output: &str,
    is_error: bool,
    elapsed: Duration,
) {
    for e in state.transcript.entries.iter_mut().rev() {
        if let Entry::Tool {
            id: eid,
            state: st,
            elapsed: el,
            output: out,
            ..
        } = e
        {
            if *eid == id {
                *st = if is_error {
                    CallState::Failed
                } else {
                    CallState::Ok
                };
                *el = Some(elapsed);
                *out = clean(output).into_owned();
                break;
            }
        }
    }
    state.transcript.scroll_back = 0;
}

/// Shows something the engine did: streamed text, a retry, a tool call starting, its progress,
/// its result.
pub(super) fn engine_event(state: &mut State, e: EngineEvent) {
    match e {
        EngineEvent::TextDelta(t) => text_delta(state, t),
        EngineEvent::ModelRetrying { reason, after, .. } => state.note(Entry::Info(format!(
            "{reason}; retrying in {}",
            harness9_actors::error::fmt_duration(after)
        ))),
        EngineEvent::ModelDone { usage, tools, .. } => {
            state.model.context_used = Some(usage.input_tokens);
            state.model.tools_offered = Some(tools);
            state.count_usage(&usage);
        }
        EngineEvent::Compacted { reason, compacted } => {
            state.model.context_used = Some(compacted.tokens_after as u64);
            state.count_usage(&compacted.usage);
            state.note(Entry::Info(format!(
                "compacted {} earlier messages into a summary (~{} -> ~{} tokens): {reason}",
                compacted.replaced, compacted.tokens_before, compacted.tokens_after
            )))
        }
        EngineEvent::ToolStarted {
            id: key,
            name,
            arguments,
        } => tool_started(state, key, name, arguments),
        // The refusal is the call's result, shown when it finishes.
        EngineEvent::ToolRefused { .. } => {}
        EngineEvent::TaskStarted {
            server,
            tool,
            task_id,
            status,
        } => super::tasks::started(state, server, &tool, task_id, &status),
        EngineEvent::TaskStatus {
            server,
            task_id,
            status,
        } => super::tasks::status(state, &server, &task_id, &status),
        EngineEvent::TaskEnded { server, task_id } => super::tasks::gone(state, &server, &task_id),
        EngineEvent::ToolProgress {
            id: key,
            progress,
            total,
            message,
        } => {
            if let Some(id) = state.transcript.engine_calls.get(&key).copied() {
                call_progress(state, id, progress, total, message);
            }
        }
        EngineEvent::ToolFinished {
            id: key,
            name,
            is_error,
            elapsed,
            output,
            spilled,
            ..
        } => {
            if let Some(id) = state.transcript.engine_calls.get(&key).copied() {
                if !is_error {
                    remember_diff(state, id, &name);
                }
                let output = match spilled {
                    Some(p) => format!(
                        "{output}\n[cut for the model; whole result in {}]",
                        p.display()
                    ),
                    None => output,
                };
                finish_call(state, id, &output, is_error, elapsed);
            }
        }
    }
}

/// Streamed text: onto the answer being written, or a new one.
fn text_delta(state: &mut State, t: String) {
    if let Some(Entry::Assistant(text)) = state.transcript.entries.last_mut() {
        text.push_str(&t);
        state.transcript.scroll_back = 0;
    } else {
        state.note(Entry::Assistant(t));
    }
}

/// The engine's tool call `key` started: a running entry of its own id.
fn tool_started(state: &mut State, key: String, name: String, arguments: serde_json::Value) {
    let id = state.transcript.next_call;
    state.transcript.next_call += 1;
    state.transcript.engine_calls.insert(key, id);
    state.note(Entry::Tool {
        id,
        name,
        // Malformed arguments come as the model's raw text: shown as it came.
        args: match arguments {
            serde_json::Value::String(raw) => raw,
            v => v.to_string(),
        },
        state: CallState::Running,
        elapsed: None,
        output: String::new(),
        pinned: false,
        progress: None,
    });
}

/// Keeps what the edit tool call `id` changed (worked out once from its arguments), for its
/// transcript line.
fn remember_diff(state: &mut State, id: u64, name: &str) {
    let args = state.transcript.entries.iter().rev().find_map(|e| match e {
        Entry::Tool { id: eid, args, .. } if *eid == id => Some(args),
        _ => None,
    });
    let diff = args
        .and_then(|a| serde_json::from_str(a).ok())
        .and_then(|v| harness9_agent::builtins::diff::preview(name, &v));
    if let Some(d) = diff {
        let diffs = &mut state.transcript.diffs;
        // The oldest go first: a long session keeps the last few hundred.
        while diffs.len() >= MAX_DIFFS {
            diffs.pop_first();
        }
        diffs.insert(id, d);
    }
}

/// The lines of one transcript entry; of a long answer only the last ones, at least `need`.
/// An edit tool's line has its diff under it.
fn entry_lines(
    entry: &Entry,
    width: usize,
    expand_tools: bool,
    need: usize,
    diffs: &std::collections::BTreeMap<u64, Vec<DiffLine>>,
) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    match entry {
        Entry::User(t) => wrap(
            &format!("› {}", clean(t)),
            width,
            Style::new().fg(Color::Cyan).bold(),
            "",
            &mut out,
        ),
        Entry::Assistant(t) => super::markdown::render(&clean(t), width, need, &mut out),
        Entry::Info(t) => wrap(&clean(t), width, DIM, "", &mut out),
        Entry::Error(t) => wrap(&clean(t), width, Style::new().fg(Color::Red), "", &mut out),
        Entry::Tool { .. } => tool_lines(entry, width, expand_tools, diffs, &mut out),
    }
    out
}

/// A tool call's entry: its head line, its diff, and, expanded (pinned or Ctrl+O), its
/// arguments and its result's first [`RESULT_LINES`] lines.
fn tool_lines(
    entry: &Entry,
    width: usize,
    expand_tools: bool,
    diffs: &std::collections::BTreeMap<u64, Vec<DiffLine>>,
    out: &mut Vec<Line<'static>>,
) {
    let Entry::Tool {
        id,
        args,
        state,
        output,
        pinned,
        ..
    } = entry
    else {
        return;
    };
    let expanded = *pinned || expand_tools;
    out.push(truncate_line(tool_head(entry), width));
    let diff = diffs.get(id);
    if let Some(d) = diff {
        let max = if expanded {
            DIFF_ROWS_EXPANDED
        } else {
            DIFF_ROWS
        };
        out.extend(super::diff::rows(d, width, max));
    }
    if !expanded {
        return;
    }
    if !*pinned && diff.is_none() {
        wrap(&format!("args {}", clean_line(args)), width, DIM, "  ", out);
    }
    let lines: Vec<&str> = output.trim_end().split('\n').collect();
    let shown = lines.len().min(RESULT_LINES);
    let style = if *state == CallState::Failed {
        Style::new().fg(Color::Red)
    } else {
        Style::new()
    };
    if !output.is_empty() {
        wrap(&lines[..shown].join("\n"), width, style, "  ", out);
    }
    if lines.len() > shown {
        out.push(Line::styled(
            format!("  … {} more lines", lines.len() - shown),
            DIM,
        ));
    }
}

/// A tool call's head line: its mark, name, server, time or progress, a result that does
/// not match its schema, and a pinned call's arguments (not cut to the width yet).
fn tool_head(entry: &Entry) -> Line<'static> {
    let Entry::Tool {
        name,
        args,
        state,
        elapsed,
        output,
        pinned,
        progress,
        ..
    } = entry
    else {
        return Line::default();
    };
    let (mark, color) = match state {
        CallState::Running => ("…", Color::Yellow),
        CallState::Waiting => ("?", Color::Yellow),
        CallState::Ok => ("✓", Color::Green),
        CallState::Failed => ("✗", Color::Red),
    };
    let took = match (elapsed, progress) {
        _ if *state == CallState::Waiting => "waiting for you".into(),
        (Some(e), _) => fmt_duration(*e),
        (None, Some(p)) => format!("running {p}"),
        (None, None) => "running".into(),
    };
    let server = name
        .strip_prefix("mcp__")
        .and_then(|r| r.split("__").next())
        .unwrap_or("builtin");
    let mut head = vec![
        Span::styled(format!("{mark} "), Style::new().fg(color).bold()),
        Span::styled(clean_line(name).into_owned(), Style::new().bold()),
        Span::styled(format!(" {server} · {took} "), DIM),
    ];
    // A result that does not match the tool's outputSchema says so on its line too,
    // where it shows folded (the reason is in the result, Ctrl+O).
    let last = output.trim_end().rsplit('\n').next().unwrap_or_default();
    if last.starts_with(SCHEMA_NOTE_HEAD) {
        head.push(Span::styled(
            "· result does not match its outputSchema ",
            Style::new().fg(Color::Yellow),
        ));
    }
    if *pinned {
        head.push(Span::styled(clean_line(args).into_owned(), DIM));
    }
    Line::from(head)
}

/// Draws the transcript's newest lines (less what is scrolled back), or a welcome while it is
/// empty.
pub(super) fn draw_transcript(state: &State, frame: &mut Frame, area: Rect) {
    let rows = area.height as usize;
    let width = area.width as usize;
    if state.transcript.entries.is_empty() {
        let mut lines = vec![
            Line::styled("harness9", Style::new().bold()),
            Line::styled(
                "Type /help for commands, /mcp for the servers, /call <tool> <json> to run a tool.",
                DIM,
            ),
        ];
        if state.model.label.is_none() {
            let mut help = Vec::new();
            wrap(&state.model.help, width, DIM, "", &mut help);
            lines.push(Line::raw(""));
            lines.extend(help);
        }
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    // Lay out from the newest entry back, only as far as the screen (and scroll) needs.
    let need = rows + state.transcript.scroll_back;
    let mut lines: Vec<Line<'static>> = Vec::new();
    for e in state.transcript.entries.iter().rev() {
        let mut l = entry_lines(
            e,
            width,
            state.transcript.expand_tools,
            need.saturating_sub(lines.len()),
            &state.transcript.diffs,
        );
        l.push(Line::raw(""));
        l.extend(lines);
        lines = l;
        if lines.len() > need {
            break;
        }
    }
    if lines.last().is_some_and(|l| l.width() == 0) {
        lines.pop();
    }
    let back = state
        .transcript
        .scroll_back
        .min(lines.len().saturating_sub(rows));
    let end = lines.len() - back;
    let start = end.saturating_sub(rows);
    let visible: Vec<Line<'static>> = lines.drain(start..end).collect();
    frame.render_widget(Paragraph::new(visible), area);
}
