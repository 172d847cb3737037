//! The `/mcp` overview: every server at a glance, one row each (status, tools, transport, era,
//! time to connect, the config file it comes from; a failed server's error), the config's
//! disabled servers dim at the end. ↑↓ select, Enter opens the server's view (the panel), Esc
//! closes; `r` restarts, `L` logs in, `e` edits `.mcp.json` from here too.

use crossterm::event::{KeyCode, KeyEvent};
use harness9_actors::messages::ServerStatus;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::{Effect, Modal, PanelState, State};
use super::view::status_symbol;
use super::widgets::{modal_block, step_selection, truncate_line, DIM};
use harness9_base::sanitize::clean_line;

/// The overview's selection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OverviewState {
    /// Index of the selected server (in snapshot order).
    pub selected: usize,
}

/// `/mcp`: the overview, on the first failed server (else the first).
pub(super) fn open(state: &mut State) {
    let selected = state
        .servers
        .status
        .values()
        .position(|s| matches!(s.status, ServerStatus::Failed { .. }))
        .unwrap_or_default();
    state.modal = Some(Modal::Overview(OverviewState { selected }));
}

impl super::state::ModalView for OverviewState {
    /// The overview's keys.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut o = self;
        let n = state.servers.status.len();
        o.selected = o.selected.min(n.saturating_sub(1));
        let name = state.server_at(o.selected).map(str::to_owned);
        if step_selection(&mut o.selected, n, key.code) {
            state.modal = Some(Modal::Overview(o));
            return Vec::new();
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Vec::new(),
            KeyCode::Enter | KeyCode::Right | KeyCode::Char('l') if n > 0 => {
                state.modal = Some(Modal::Panel(PanelState {
                    selected: o.selected,
                    scroll: 0,
                }));
                return super::server_view::wanted(state);
            }
            KeyCode::Char('r') => {
                if let Some(s) = name {
                    state.modal = Some(Modal::Overview(o));
                    return vec![Effect::Restart(s)];
                }
            }
            KeyCode::Char('L') => {
                let needs = name
                    .as_ref()
                    .and_then(|s| state.servers.status.get(s))
                    .is_some_and(|st| matches!(st.status, ServerStatus::NeedsLogin { .. }));
                if let (true, Some(s)) = (needs, name) {
                    state.modal = Some(Modal::Overview(o));
                    return vec![Effect::Login(s)];
                }
            }
            KeyCode::Char('e') | KeyCode::Char('E') => {
                state.modal = Some(Modal::Overview(o));
                return vec![Effect::OpenEditor];
            }
            _ => {}
        }
        state.modal = Some(Modal::Overview(o));
        Vec::new()
    }

    /// Draws the overview in `area`.
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let o = self;
        let block = modal_block("MCP overview");
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [head, body, help] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        let width = inner.width as usize;
        frame.render_widget(
            Paragraph::new(truncate_line(
                Line::styled(
                    format!(
                        " {:<18} {:<18} {:<6} {:<10} {:>7}  {}",
                        "server", "status", "via", "protocol", "connect", "config file"
                    ),
                    DIM,
                ),
                width,
            )),
            head,
        );
        frame.render_widget(
            Paragraph::new(Line::styled(
                "↑↓/jk select · Enter open · r restart · L log in · e edit .mcp.json · Esc close",
                DIM,
            )),
            help,
        );
        if state.servers.status.is_empty() && state.servers.disabled.is_empty() {
            return super::panel::draw_no_servers(state, frame, body);
        }
        let mut lines = Vec::new();
        let mut selected_line = 0;
        for (i, name) in state.servers.status.keys().enumerate() {
            if i == o.selected {
                selected_line = lines.len();
            }
            lines.extend(row(state, name, i == o.selected, width));
        }
        for d in state
            .servers
            .disabled
            .iter()
            .filter(|d| !state.servers.status.contains_key(d.as_str()))
        {
            lines.push(truncate_line(
                Line::styled(format!(" {:<18} ◌ disabled", clean_line(d)), DIM),
                width,
            ));
        }
        // Keep the selected row in view.
        let rows = body.height as usize;
        let skip = (selected_line + 2).saturating_sub(rows);
        let shown: Vec<Line<'static>> = lines.into_iter().skip(skip).take(rows).collect();
        frame.render_widget(Paragraph::new(shown), body);
    }
}

/// One server's row: name, status, tools, transport, era, connect time, source.
fn row(state: &State, name: &str, selected: bool, width: usize) -> Vec<Line<'static>> {
    let Some(st) = state.servers.status.get(name) else {
        return Vec::new();
    };
    let (sym, color, detail) = status_symbol(&st.status);
    let source = state
        .servers
        .sources
        .get(name)
        .cloned()
        .unwrap_or_else(|| state.servers.config_path.clone());
    let (era, took) = match &st.status {
        ServerStatus::Connected { info, .. } => (
            info.protocol_version.clone(),
            harness9_actors::error::fmt_duration(info.connect_time),
        ),
        _ => ("-".to_owned(), "-".to_owned()),
    };
    let name_style = if selected {
        Style::new().reversed().bold()
    } else {
        Style::new().bold()
    };
    let mut lines = vec![truncate_line(
        Line::from(vec![
            Span::styled(format!(" {:<18}", clean_line(name)), name_style),
            Span::styled(format!(" {sym} {:<16}", detail), Style::new().fg(color)),
            Span::styled(
                format!(" {:<6} {:<10} {:>7}  {}", st.transport, era, took, source),
                DIM,
            ),
        ]),
        width,
    )];
    if let ServerStatus::Failed { error, .. } | ServerStatus::NeedsLogin { error, .. } = &st.status
    {
        let first = error.lines().next().unwrap_or_default();
        lines.push(truncate_line(
            Line::styled(
                format!("   {}", clean_line(first)),
                Style::new().fg(Color::Red),
            ),
            width,
        ));
    }
    lines
}
