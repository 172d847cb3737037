//! Running tasks (`io.modelcontextprotocol/tasks`): the list the turn's task events keep (each
//! task's server, tool, status message and age; an ended one dropped), its count in the MCP bar,
//! and `/tasks`: ↑↓ select, `c` cancels the selected task (`tasks/cancel` through the registry,
//! as `mcp tasks cancel` does), Esc closes.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::{Effect, Entry, Modal, State};
use super::widgets::{list_frame, step_selection, truncate_line, wrap, DIM};
use harness9_base::sanitize::clean_line;

/// The most tasks listed (a turn that starts more keeps the first ones shown).
pub const MAX_SHOWN: usize = 256;
/// The most characters kept of a task id or a status (the follower cuts them already; this
/// holds whatever reaches the list).
const MAX_CHARS: usize = 200;

/// One task a turn follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningTask {
    /// The server's name in `.mcp.json` (as the registry routes it: unsanitized).
    pub server: String,
    /// The tool's name on the server, sanitized.
    pub tool: String,
    /// The server's id of the task, as the server sent it (for `tasks/cancel`).
    pub task_id: String,
    /// Its status and status message, sanitized, on one line.
    pub status: String,
    /// When the list first saw it.
    pub since: Instant,
    /// Its cancel was asked.
    pub cancelling: bool,
}

/// The running tasks, in the order they started.
#[derive(Debug, Default)]
pub struct TasksState {
    /// Each task still running.
    pub running: Vec<RunningTask>,
}

/// `/tasks`: the selection (the list itself is [`TasksState`], kept fresh by the events).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TasksView {
    /// Index of the selected task.
    pub selected: usize,
}

/// Server text on one line, at most [`MAX_CHARS`] characters.
fn shown(s: &str) -> String {
    let line = clean_line(s);
    if line.chars().count() > MAX_CHARS {
        let mut short: String = line.chars().take(MAX_CHARS).collect();
        short.push('…');
        short
    } else {
        line.into_owned()
    }
}

/// Whether `status` (as the follower reports it: `completed`, `failed: why`, ...) is an end.
fn ended(status: &str) -> bool {
    let word = status.split([':', ' ']).next().unwrap_or("");
    matches!(word, "completed" | "failed" | "cancelled")
}

/// A task started (its first status with it).
pub(super) fn started(
    state: &mut State,
    server: String,
    tool: &str,
    task_id: String,
    status: &str,
) {
    let list = &mut state.tasks.running;
    if list
        .iter()
        .any(|t| t.server == server && t.task_id == task_id)
        || list.len() >= MAX_SHOWN
    {
        return;
    }
    list.push(RunningTask {
        server,
        tool: shown(tool),
        task_id,
        status: shown(status),
        since: state.now,
        cancelling: false,
    });
}

/// A task's status changed: shown, or the task dropped when it is an end.
pub(super) fn status(state: &mut State, server: &str, task_id: &str, status: &str) {
    if ended(status) {
        return gone(state, server, task_id);
    }
    if let Some(t) = state
        .tasks
        .running
        .iter_mut()
        .find(|t| t.server == server && t.task_id == task_id)
    {
        t.status = shown(status);
    }
}

/// A task ended: dropped from the list (and the view's selection kept in it).
pub(super) fn gone(state: &mut State, server: &str, task_id: &str) {
    state
        .tasks
        .running
        .retain(|t| !(t.server == server && t.task_id == task_id));
    let n = state.tasks.running.len();
    if let Some(Modal::Tasks(v)) = &mut state.modal {
        v.selected = v.selected.min(n.saturating_sub(1));
    }
}

/// The turn ended: the tasks it followed end with it.
pub(super) fn turn_ended(state: &mut State) {
    state.tasks.running.clear();
    if let Some(Modal::Tasks(v)) = &mut state.modal {
        v.selected = 0;
    }
}

/// Opens `/tasks`.
pub(super) fn open(state: &mut State) {
    state.modal = Some(Modal::Tasks(TasksView::default()));
}

/// The bar's word for the running tasks (`1 task`, `3 tasks`), none when there are none.
pub fn bar_word(n: usize) -> Option<String> {
    match n {
        0 => None,
        1 => Some("1 task".to_owned()),
        n => Some(format!("{n} tasks")),
    }
}

/// `4 s`, `2 m 05 s`, `1 h 02 m`: how long a task has run.
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} m {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} m", s / 3600, (s % 3600) / 60),
    }
}

impl super::state::ModalView for TasksView {
    /// The list's keys.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut v = self;
        let n = state.tasks.running.len();
        if step_selection(&mut v.selected, n, key.code) {
            state.modal = Some(Modal::Tasks(v));
            return Vec::new();
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Vec::new(),
            KeyCode::Char('c') | KeyCode::Delete => {
                if let Some(t) = state.tasks.running.get_mut(v.selected) {
                    if !t.cancelling {
                        t.cancelling = true;
                        let effect = Effect::CancelTask {
                            server: t.server.clone(),
                            task_id: t.task_id.clone(),
                        };
                        let text = format!(
                            "cancelling task {} of {} (tasks/cancel sent)",
                            shown(&t.task_id),
                            clean_line(&t.server)
                        );
                        state.note(Entry::Info(text));
                        state.modal = Some(Modal::Tasks(v));
                        return vec![effect];
                    }
                }
            }
            _ => {}
        }
        state.modal = Some(Modal::Tasks(v));
        Vec::new()
    }

    /// Draws the list in `area`.
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let body = list_frame(
            frame,
            area,
            "Tasks",
            "↑↓ select · c cancel the task (tasks/cancel) · Esc close",
        );
        let width = body.width as usize;
        let mut lines: Vec<Line<'static>> = Vec::new();
        let list = &state.tasks.running;
        if list.is_empty() {
            let text = "no running tasks: a tool call a server turns into a task (io.modelcontextprotocol/tasks) shows here while the turn follows it";
            wrap(text, width, DIM, "", &mut lines);
        }
        // Two lines a task: what it is, then its status.
        let rows = (body.height as usize / 2).max(1);
        let skip = (self.selected + 1).saturating_sub(rows);
        for (i, t) in list.iter().enumerate().skip(skip).take(rows) {
            let selected = i == self.selected;
            let style = if selected {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new()
            };
            let mark = if selected { "› " } else { "  " };
            let head = Line::from(vec![
                Span::styled(mark.to_owned(), style),
                Span::styled(
                    format!("{} · {}", clean_line(&t.server), t.tool),
                    style.add_modifier(Modifier::BOLD),
                ),
                Span::styled(
                    format!("   {}", age(state.now.saturating_duration_since(t.since))),
                    Style::new().fg(Color::Cyan),
                ),
                Span::styled(format!("   task {}", shown(&t.task_id)), DIM),
            ]);
            lines.push(truncate_line(head, width));
            let status = if t.cancelling {
                format!("    cancelling… ({})", t.status)
            } else {
                format!("    {}", t.status)
            };
            lines.push(truncate_line(
                Line::from(Span::styled(status, Style::new().fg(Color::Yellow))),
                width,
            ));
        }
        frame.render_widget(Paragraph::new(lines), body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_are_recognised_and_ages_read_well() {
        assert!(ended("completed"));
        assert!(ended("failed: boom (code 1)"));
        assert!(ended("cancelled: by the user"));
        assert!(!ended("working: 3 of 10"));
        assert!(!ended("input_required"));
        assert!(!ended("completedish"));
        assert_eq!(age(Duration::from_secs(4)), "4 s");
        assert_eq!(age(Duration::from_secs(125)), "2 m 05 s");
        assert_eq!(age(Duration::from_secs(3720)), "1 h 02 m");
        assert_eq!(bar_word(0), None);
        assert_eq!(bar_word(1).as_deref(), Some("1 task"));
        assert_eq!(bar_word(3).as_deref(), Some("3 tasks"));
    }

    #[test]
    fn a_hostile_status_is_one_clean_bounded_line() {
        let s = shown(&format!("\u{1b}[2Jx\n{}", "y".repeat(10_000)));
        assert!(!s.contains('\u{1b}') && !s.contains('\n'), "{s:?}");
        assert!(s.chars().count() <= MAX_CHARS + 1, "{}", s.len());
    }
}
