//! The session picker of `/resume` (and `harness9 --resume` without an id): this project's
//! saved conversations, newest first, one line each (id, date, model, messages, size, first
//! prompt); `a` shows every directory's, each row naming its directory (`a` again: this
//! project's). ↑↓ select, Enter resumes the selected one (as `/resume ID` does), Esc closes.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::{Effect, Modal, State};
use super::widgets::{list_frame, step_selection, truncate_line};
use harness9_app::stores::conversations::Listing;
use harness9_base::sanitize::clean_line;

/// The picker: the listing's lines (each begins with its session id) and the selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumePicker {
    /// [`harness9_app::stores::conversations::listing`]'s lists, newest first.
    pub listing: Listing,
    /// Every directory's sessions are shown (`a`), not only this project's.
    pub all: bool,
    /// Index of the selected line.
    pub selected: usize,
}

impl ResumePicker {
    /// The lines shown.
    fn lines(&self) -> &[String] {
        if self.all {
            &self.listing.all
        } else {
            &self.listing.here
        }
    }

    /// The session id of line `i`.
    fn id(&self, i: usize) -> Option<&str> {
        self.lines().get(i)?.split_whitespace().next()
    }
}

/// Opens the picker on `listing`, on this project's sessions (a note instead when there is
/// nothing to resume anywhere).
pub(super) fn open(state: &mut State, listing: Listing) {
    if listing.all.is_empty() {
        state.note(super::state::Entry::Info(
            "no saved conversations yet".to_owned(),
        ));
        return;
    }
    state.modal = Some(Modal::Resume(ResumePicker {
        listing,
        all: false,
        selected: 0,
    }));
}

impl super::state::ModalView for ResumePicker {
    /// The picker's keys.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut p = self;
        let n = p.lines().len();
        if step_selection(&mut p.selected, n, key.code) {
            state.modal = Some(Modal::Resume(p));
            return Vec::new();
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Vec::new(),
            KeyCode::Char('a') => {
                p.all = !p.all;
                p.selected = 0;
            }
            KeyCode::Enter => {
                if let Some(id) = p.id(p.selected) {
                    return vec![Effect::Resume(id.to_owned())];
                }
            }
            _ => {}
        }
        state.modal = Some(Modal::Resume(p));
        Vec::new()
    }

    /// Draws the picker in `area`.
    fn draw(&self, _state: &State, frame: &mut Frame, area: Rect) {
        let p = self;
        let (title, keys) = if p.all {
            (
                "Resume a conversation: every directory's",
                "↑↓/jk select · Enter resume · a this project's · Esc close   (newest first: id, date, directory, model, size, first prompt)",
            )
        } else {
            (
                "Resume a conversation: this project's",
                "↑↓/jk select · Enter resume · a every directory's · Esc close   (newest first: id, date, model, size, first prompt)",
            )
        };
        let body = list_frame(frame, area, title, keys);
        let width = body.width as usize;
        let rows = body.height as usize;
        if p.lines().is_empty() {
            let none = Line::styled(
                "no saved conversation of this project; a shows every directory's",
                super::widgets::DIM,
            );
            frame.render_widget(Paragraph::new(vec![none]), body);
            return;
        }
        let skip = (p.selected + 1).saturating_sub(rows);
        let lines: Vec<Line<'static>> = p
            .lines()
            .iter()
            .enumerate()
            .skip(skip)
            .take(rows)
            .map(|(i, l)| {
                let text = format!(
                    "{} {}",
                    if i == p.selected { "›" } else { " " },
                    clean_line(l)
                );
                let style = if i == p.selected {
                    Style::new().add_modifier(Modifier::REVERSED)
                } else {
                    Style::new()
                };
                truncate_line(Line::styled(text, style), width)
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), body);
    }
}
