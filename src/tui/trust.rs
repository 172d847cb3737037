//! The trust screen: a project config's unapproved servers with their full command lines; its
//! selection, its keys (approve one, approve all, decline) and its drawing.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::{Effect, Entry, Modal, State};
use super::widgets::{modal_block, wrap, DIM};
use crate::sanitize::{clean, clean_line};

/// The trust screen's selection (an index into [`State::unapproved`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustView {
    /// The selected server.
    pub selected: usize,
}

/// The trust screen: ↑↓ select, `y`/Enter approves the selected server, `a` every one listed,
/// `n`/`d`/Esc declines (they stay unapproved and nothing runs; `a` in `/mcp` asks again).
pub(super) fn trust_key(state: &mut State, mut t: TrustView, key: KeyEvent) -> Vec<Effect> {
    let waiting = state.unapproved();
    let n = waiting.len();
    match key.code {
        KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('d') => {
            if n > 0 {
                state.note(Entry::Info(format!(
                    "declined {n} server{} of {}: not started; `a` in /mcp or `harness9 mcp approve` approves later",
                    if n == 1 { "" } else { "s" },
                    state.config_path
                )));
            }
            return Vec::new();
        }
        KeyCode::Up | KeyCode::Char('k') => t.selected = t.selected.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => {
            t.selected = (t.selected + 1).min(n.saturating_sub(1))
        }
        KeyCode::Char('y') | KeyCode::Enter => {
            if let Some(one) = waiting.get(t.selected) {
                state.modal = Some(Modal::Trust(t));
                return vec![Effect::ApproveServers(vec![one.clone()])];
            }
        }
        KeyCode::Char('a') if n > 0 => {
            state.modal = Some(Modal::Trust(t));
            return vec![Effect::ApproveServers(waiting)];
        }
        _ => {}
    }
    state.modal = Some(Modal::Trust(t));
    Vec::new()
}

/// The trust screen: every unapproved server of the project config with its full command line
/// (wrapped, never cut), and the keys.
pub(super) fn draw_trust(state: &State, t: &TrustView, frame: &mut Frame, area: Rect) {
    let block = modal_block(&format!(
        "approve this project's MCP servers? ({} waiting)",
        state.unapproved().len()
    ))
    .border_style(Style::new().fg(Color::Magenta));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width.max(1) as usize;
    let mut lines = Vec::new();
    wrap(
        &format!(
            "{} is a project config: its servers run commands on this machine. Nothing has been started. Approve only what you trust.",
            clean_line(&state.config_path)
        ),
        width,
        DIM,
        "",
        &mut lines,
    );
    lines.push(Line::raw(""));
    let waiting = state.unapproved();
    let blocks: Vec<Vec<Line<'static>>> = waiting
        .iter()
        .enumerate()
        .map(|(i, (name, command_line))| {
            let selected = i == t.selected;
            let mut block = vec![Line::from(vec![
                Span::raw(if selected { "> " } else { "  " }),
                Span::styled(
                    clean_line(name).into_owned(),
                    if selected {
                        Style::new().bold().fg(Color::Magenta)
                    } else {
                        Style::new().bold()
                    },
                ),
            ])];
            wrap(
                &clean(command_line),
                width,
                Style::new(),
                "    ",
                &mut block,
            );
            block
        })
        .collect();
    // Scrolled so the selected server shows whole; what is left out is counted, so `a`
    // (approve all) never approves a server the user could not know about.
    // The body is the inner area less the key line; two rows stay for the more-above/below notes.
    let room = (inner.height as usize).saturating_sub(1 + lines.len() + 2);
    let mut first = 0;
    while first < t.selected
        && blocks[first..=t.selected.min(blocks.len().saturating_sub(1))]
            .iter()
            .map(Vec::len)
            .sum::<usize>()
            > room
    {
        first += 1;
    }
    if first > 0 {
        lines.push(Line::styled(format!("  ↑ {first} more above"), DIM));
    }
    let mut used = 0;
    let mut shown = first;
    for b in &blocks[first..] {
        if used + b.len() > room && shown > t.selected {
            break;
        }
        used += b.len();
        lines.extend(b.iter().cloned());
        shown += 1;
    }
    if shown < blocks.len() {
        lines.push(Line::styled(
            format!(
                "  ↓ {} more below (a approves them too)",
                blocks.len() - shown
            ),
            Style::new().fg(Color::Yellow),
        ));
    }
    let keys = Line::from(vec![
        Span::styled("y", Style::new().fg(Color::Green).bold()),
        Span::raw(" approve selected · "),
        Span::styled("a", Style::new().fg(Color::Yellow).bold()),
        Span::raw(" approve all · "),
        Span::styled("n", Style::new().fg(Color::Red).bold()),
        Span::raw(" decline · ↑↓ select"),
    ]);
    let [body, help] = Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(inner);
    frame.render_widget(Paragraph::new(lines), body);
    frame.render_widget(Paragraph::new(keys), help);
}
