//! `/permissions`: every permission rule in force (deny, ask, allow), each with where it comes
//! from (a settings file and line, a flag of this run, an "always" answer saved for this
//! project). ↑↓ select; `d`/Delete forgets a saved answer (a settings file's rule is edited in
//! the file, a flag's lasts this run); Esc closes.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::{Effect, Entry, Modal, State};
use super::widgets::{list_frame, step_selection, truncate_line, wrap, DIM};
use harness9_agent::permissions::{Decision, Rule, Source};
use harness9_base::sanitize::clean_line;

/// The list and its selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionsView {
    /// The rules, deny first, then ask, then allow.
    pub rules: Vec<Rule>,
    /// Index of the selected rule.
    pub selected: usize,
}

/// Opens (or refreshes) the list on `rules`, keeping the selection where it can.
pub(super) fn open(state: &mut State, mut rules: Vec<Rule>) {
    rules.sort_by_key(|r| std::cmp::Reverse(r.kind));
    let selected = match &state.modal {
        Some(Modal::Permissions(p)) => p.selected.min(rules.len().saturating_sub(1)),
        _ => 0,
    };
    state.modal = Some(Modal::Permissions(PermissionsView { rules, selected }));
}

impl super::state::ModalView for PermissionsView {
    /// The list's keys.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut p = self;
        if step_selection(&mut p.selected, p.rules.len(), key.code) {
            state.modal = Some(Modal::Permissions(p));
            return Vec::new();
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Vec::new(),
            KeyCode::Char('d') | KeyCode::Delete => {
                if let Some(r) = p.rules.get(p.selected) {
                    match &r.source {
                        Source::Saved => {
                            let text = r.text.clone();
                            state.modal = Some(Modal::Permissions(p));
                            return vec![Effect::ForgetRule(text)];
                        }
                        Source::File { path, line } => state.note(Entry::Info(format!(
                            "\"{}\" is written in {}:{line}; edit that file to remove it",
                            clean_line(&r.text),
                            clean_line(&path.display().to_string())
                        ))),
                        Source::Flag(flag) => state.note(Entry::Info(format!(
                            "\"{}\" comes from {flag} and lasts this run only",
                            clean_line(&r.text)
                        ))),
                    }
                }
            }
            _ => {}
        }
        state.modal = Some(Modal::Permissions(p));
        Vec::new()
    }

    /// Draws the list in `area`.
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let p = self;
        let body = list_frame(
            frame,
            area,
            "Permissions",
            "↑↓ select · d forget a saved answer · Esc close   (deny beats ask beats allow)",
        );
        let width = body.width as usize;
        let mut lines: Vec<Line<'static>> = Vec::new();
        if p.rules.is_empty() {
            let text = format!(
                "no rules: read-only tools run, every other call asks. Answer \"always\" when asked, pass --allowed-tools, or add [permissions] allow/ask/deny to {} (a project's harness9.toml adds ask and deny only)",
                clean_line(&state.own_settings)
            );
            wrap(&text, width, DIM, "", &mut lines);
        }
        let rows = body.height as usize;
        let skip = (p.selected + 1).saturating_sub(rows);
        for (i, r) in p.rules.iter().enumerate().skip(skip).take(rows) {
            let (word, colour) = match r.kind {
                Decision::Deny => ("deny ", Color::Red),
                Decision::Ask => ("ask  ", Color::Yellow),
                Decision::Allow => ("allow", Color::Green),
            };
            let mark = if i == p.selected { "› " } else { "  " };
            let style = if i == p.selected {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new()
            };
            let line = Line::from(vec![
                Span::styled(mark.to_owned(), style),
                Span::styled(word.to_owned(), Style::new().fg(colour)),
                Span::styled(format!(" {}", clean_line(&r.text)), style),
                Span::styled(format!("   {}", clean_line(&r.source.to_string())), DIM),
            ]);
            lines.push(truncate_line(line, width));
        }
        frame.render_widget(Paragraph::new(lines), body);
    }
}
