//! The `/mcp` panel: the servers as tabs, the selected one's status, errors and stderr, its
//! log and resources (`server_view`), and its tools (laid out once per tool table, so a frame with 10,000 tools draws only what shows);
//! its position, its keys (scroll, select, restart, edit, approve) and its drawing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};
use harness9_actors::error::fmt_duration;
use harness9_actors::messages::{ConnectionInfo, ServerStatus, ToolEntry};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use super::state::{Effect, Modal, State, TrustView};
use super::view::status_symbol;
use super::widgets::{modal_block, scroll_by, truncate_line, DIM, HEADER_ROWS, KEYS_ROWS};
use harness9_base::sanitize::clean_line;

/// The `/mcp` panel's position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PanelState {
    /// Index of the selected server (in snapshot order).
    pub selected: usize,
    /// First body line shown.
    pub scroll: usize,
}

/// A server's tools as the panel lays them out: entry indexes and where each starts.
#[derive(Debug, Clone, Default)]
pub struct ToolLayout {
    /// Indexes into [`State::tools`].
    pub entries: Vec<usize>,
    /// `starts[i]` is the first line of tool `i`; the last element is the total.
    pub starts: Vec<usize>,
}

/// Lines a tool takes in the panel: its name, then each description line.
pub fn tool_lines(entry: &ToolEntry) -> usize {
    1 + entry
        .tool
        .description
        .as_deref()
        .map_or(0, |d| d.trim_end().lines().count())
}

impl State {
    /// The name of the server at `i` in snapshot order.
    pub fn server_at(&self, i: usize) -> Option<&str> {
        self.servers.status.keys().nth(i).map(String::as_str)
    }

    /// Keeps where each server of another file comes from (a reload's `Config::sources`).
    pub fn set_sources(&mut self, sources: Vec<(String, std::path::PathBuf)>) {
        self.servers.sources = sources
            .into_iter()
            .map(|(n, p)| (n, p.display().to_string()))
            .collect();
    }

    /// The config file server `name` comes from, as shown.
    pub fn server_source(&self, name: &str) -> &str {
        self.servers
            .sources
            .get(name)
            .unwrap_or(&self.servers.config_path)
    }

    /// Header lines the panel shows above the selected server's tools (the last two: the
    /// server's config file and a blank line).
    pub fn panel_header_lines(&self, server: &str) -> usize {
        panel_header(self, server).len()
    }

    /// Lines of the panel body for `server`.
    pub fn panel_total_lines(&self, server: &str) -> usize {
        self.panel_header_lines(server)
            + self
                .servers
                .layout
                .get(server)
                .and_then(|l| l.starts.last())
                .copied()
                .unwrap_or(0)
    }

    /// Takes in a new tool table and lays out each server's tools for the panel.
    pub(super) fn set_tools(&mut self, tools: Arc<Vec<ToolEntry>>) {
        let mut layout: BTreeMap<Arc<str>, ToolLayout> = BTreeMap::new();
        for (i, t) in tools.iter().enumerate() {
            let Some(server) = &t.server else { continue };
            // The key is the table's own shared name: no allocation per tool.
            let l = layout.entry(server.clone()).or_default();
            if l.starts.is_empty() {
                l.starts.push(0);
            }
            let next = l.starts.last().copied().unwrap_or(0) + tool_lines(t);
            l.entries.push(i);
            l.starts.push(next);
        }
        self.servers.layout = layout;
        self.servers.tools = tools;
    }
}

/// Keeps the panel's selection on a server after a new status snapshot (servers may have gone).
pub(super) fn status_changed(state: &mut State) {
    let last = state.servers.status.len().saturating_sub(1);
    match &mut state.modal {
        Some(Modal::Panel(p)) => p.selected = p.selected.min(last),
        Some(Modal::Overview(o)) => o.selected = o.selected.min(last),
        _ => {}
    }
}

impl super::state::ModalView for PanelState {
    /// The panel's keys: ↑↓/jk PgUp/PgDn Home/End scroll, Tab/←→/hl select a server, `r` restarts it,
    /// `e` edits `.mcp.json`, `a` goes back to the trust screen on an unapproved server, Esc/q close.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut p = self;
        let n = state.servers.status.len();
        let page = state.modal_rows();
        let max = state
            .server_at(p.selected)
            .map(|s| state.panel_total_lines(s).saturating_sub(page))
            .unwrap_or(0);
        p.scroll = p.scroll.min(max);
        let mut effects = Vec::new();
        match key.code {
            // Back to the overview; `q` closes.
            KeyCode::Esc => {
                state.modal = Some(Modal::Overview(super::overview::OverviewState {
                    selected: p.selected,
                }));
                return effects;
            }
            KeyCode::Char('q') => return effects,
            KeyCode::Tab | KeyCode::Right | KeyCode::Char('l') if n > 0 => {
                p.selected = (p.selected + 1) % n;
                p.scroll = 0;
                state.modal = Some(Modal::Panel(p));
                return super::server_view::wanted(state);
            }
            KeyCode::BackTab | KeyCode::Left | KeyCode::Char('h') if n > 0 => {
                p.selected = (p.selected + n - 1) % n;
                p.scroll = 0;
                state.modal = Some(Modal::Panel(p));
                return super::server_view::wanted(state);
            }
            KeyCode::Char('r') => {
                if let Some(s) = state.server_at(p.selected) {
                    effects.push(Effect::Restart(s.to_owned()));
                }
            }
            KeyCode::Char('L') => {
                // A server that needs an OAuth login: the runtime opens the browser and, once
                // logged in, starts it again.
                if let Some(s) = state.server_at(p.selected) {
                    let needs = state
                        .servers
                        .status
                        .get(s)
                        .is_some_and(|st| matches!(st.status, ServerStatus::NeedsLogin { .. }));
                    if needs {
                        effects.push(Effect::Login(s.to_owned()));
                    }
                }
            }
            KeyCode::Char('e') | KeyCode::Char('E') => effects.push(Effect::OpenEditor),
            KeyCode::Char('a') => {
                // An unapproved server: back to the trust screen, on it.
                let waiting = state.unapproved();
                let name = state.server_at(p.selected);
                if let Some(i) = waiting.iter().position(|(n, _)| Some(n.as_str()) == name) {
                    state.modal = Some(Modal::Trust(TrustView { selected: i }));
                    return effects;
                }
            }
            code => {
                scroll_by(&mut p.scroll, code, page, max);
            }
        }
        state.modal = Some(Modal::Panel(p));
        effects
    }

    /// Draws the panel: the server tabs, the selected server's header and the tools that fit, and
    /// where the body is scrolled to.
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let p = self;
        let block = modal_block("MCP servers");
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [tabs, body, help] = Layout::vertical([
            Constraint::Length(HEADER_ROWS),
            Constraint::Fill(1),
            Constraint::Length(KEYS_ROWS),
        ])
        .areas(inner);
        frame.render_widget(
            Paragraph::new(Line::styled(
                "↑↓/jk PgUp/PgDn Home/End scroll · Tab/←→ server · r restart · e edit .mcp.json · Esc overview · q close",
                DIM,
            )),
            help,
        );
        if state.servers.status.is_empty() {
            return draw_no_servers(state, frame, body);
        }
        draw_tabs(state, p.selected, frame, tabs);
        let Some(name) = state.server_at(p.selected) else {
            return;
        };
        let rows = body.height as usize;
        let total = state.panel_total_lines(name);
        let scroll = p.scroll.min(total.saturating_sub(rows));
        let lines = body_lines(state, name, scroll, body);
        frame.render_widget(Paragraph::new(lines), body);
        if total > rows {
            draw_position(frame, area, (scroll, rows, total));
        }
    }
}

/// The server tabs: each name with its status symbol, the selected one reversed.
fn draw_tabs(state: &State, selected: usize, frame: &mut Frame, tabs: Rect) {
    let mut spans = Vec::new();
    for (i, (name, st)) in state.servers.status.iter().enumerate() {
        let (sym, color, _) = status_symbol(&st.status);
        let style = if i == selected {
            Style::new().reversed().bold()
        } else {
            Style::new()
        };
        spans.push(Span::styled(format!(" {} ", clean_line(name)), style));
        spans.push(Span::styled(format!("{sym} "), Style::new().fg(color)));
    }
    frame.render_widget(
        Paragraph::new(truncate_line(Line::from(spans), tabs.width as usize)),
        tabs,
    );
}

/// The body's lines that show from `scroll` on: the header's, then the tools' (only those
/// that fit are drawn).
fn body_lines(state: &State, name: &str, scroll: usize, body: Rect) -> Vec<Line<'static>> {
    let rows = body.height as usize;
    let header = panel_header(state, name);
    let mut lines: Vec<Line<'static>> = header
        .into_iter()
        .skip(scroll)
        .take(rows)
        .map(|l| truncate_line(l, body.width as usize))
        .collect();
    let hl = state.panel_header_lines(name);
    if lines.len() < rows {
        if let Some(layout) = state.servers.layout.get(name) {
            let first_line = scroll.saturating_sub(hl);
            // The tool holding `first_line`, by binary search over the start offsets.
            let mut i = layout
                .starts
                .partition_point(|&s| s <= first_line)
                .saturating_sub(1);
            let mut skip = first_line - layout.starts.get(i).copied().unwrap_or(0);
            while lines.len() < rows && i < layout.entries.len() {
                let Some(entry) = state.servers.tools.get(layout.entries[i]) else {
                    break;
                };
                for l in tool_entry_lines(entry).into_iter().skip(skip) {
                    if lines.len() == rows {
                        break;
                    }
                    lines.push(truncate_line(l, body.width as usize));
                }
                skip = 0;
                i += 1;
            }
        }
    }
    lines
}

/// One tool as the panel shows it: its name and title, then its description indented.
fn tool_entry_lines(entry: &ToolEntry) -> Vec<Line<'static>> {
    let mut tool_lines = vec![Line::from(vec![
        Span::styled(clean_line(&entry.name).into_owned(), Style::new().bold()),
        Span::styled(
            entry
                .tool
                .title
                .as_deref()
                .map(|t| format!("  {}", clean_line(t)))
                .unwrap_or_default(),
            DIM,
        ),
    ])];
    if let Some(d) = &entry.tool.description {
        for l in d.trim_end().lines() {
            tool_lines.push(Line::raw(format!("    {}", clean_line(l))));
        }
    }
    tool_lines
}

/// Where the body is scrolled to (`first-last of total`), on the panel's bottom border.
fn draw_position(frame: &mut Frame, area: Rect, (scroll, rows, total): (usize, usize, usize)) {
    let pos = format!(
        " {}-{} of {} ",
        scroll + 1,
        (scroll + rows).min(total),
        total
    );
    let w = pos.width() as u16;
    if area.width > w + 2 {
        frame.render_widget(
            Paragraph::new(Span::styled(pos, DIM)),
            Rect::new(area.x + area.width - w - 1, area.y + area.height - 1, w, 1),
        );
    }
}

/// What the panel and the overview show when the config has no servers.
pub(super) fn draw_no_servers(state: &State, frame: &mut Frame, area: Rect) {
    frame.render_widget(
        Paragraph::new(vec![
            Line::raw(format!(
                "no MCP servers configured in {}",
                state.servers.config_path
            )),
            Line::styled("press e to create or edit it", DIM),
        ]),
        area,
    );
}

/// The header lines of the panel for one server: the count matches
/// [`State::panel_header_lines`].
pub(super) fn panel_header(state: &State, name: &str) -> Vec<Line<'static>> {
    let Some(st) = state.servers.status.get(name) else {
        return Vec::new();
    };
    let (sym, color, detail) = status_symbol(&st.status);
    let mut head = vec![
        Span::styled(clean_line(name).into_owned(), Style::new().bold()),
        Span::raw("  "),
        Span::styled(
            format!("{sym} {}", st.status.label()),
            Style::new().fg(color),
        ),
        Span::styled(format!("  transport {}", st.transport), DIM),
    ];
    let mut lines = Vec::new();
    if let ServerStatus::Connected { info, .. } = &st.status {
        head.push(Span::styled(
            format!(
                "  protocol {}  {detail}  connected in {}",
                clean_line(&info.protocol_version),
                fmt_duration(info.connect_time)
            ),
            DIM,
        ));
    }
    lines.push(Line::from(head));
    status_lines(state, name, &st.status, &mut lines);
    lines.push(Line::styled(
        format!("from {}", clean_line(state.server_source(name))),
        DIM,
    ));
    // A connected server's log and resources, last: they may be long.
    super::server_view::extra_lines(state, name, &mut lines);
    lines.push(Line::raw(""));
    lines
}

/// The lines under the header's first one: what the server's status says about it.
fn status_lines(state: &State, name: &str, status: &ServerStatus, lines: &mut Vec<Line<'static>>) {
    match status {
        ServerStatus::Connected { info, .. } => connected_lines(info, lines),
        ServerStatus::Failed { error, stderr_tail } => {
            lines.push(Line::styled(
                format!("error: {}", clean_line(error)),
                Style::new().fg(Color::Red),
            ));
            if !stderr_tail.is_empty() {
                lines.push(Line::styled(
                    format!("stderr (last {} lines):", stderr_tail.len()),
                    DIM,
                ));
                for l in stderr_tail {
                    lines.push(Line::raw(format!("  │ {}", clean_line(l))));
                }
            }
        }
        ServerStatus::Restarting {
            attempt,
            next_retry,
            last_error,
        } => {
            let wait = next_retry.saturating_duration_since(Instant::now());
            lines.push(Line::styled(
                format!(
                    "attempt {attempt}, next try in {}: {}",
                    fmt_duration(wait),
                    clean_line(last_error)
                ),
                Style::new().fg(Color::Yellow),
            ));
        }
        ServerStatus::Starting { .. } => {
            lines.push(Line::styled("starting: handshake in progress", DIM));
        }
        ServerStatus::Cached { starting, .. } => {
            lines.push(Line::styled(
                if starting.is_some() {
                    "tools from the cache; starting: handshake in progress"
                } else {
                    "tools from the cache; starts on the first call of one of them (lazy)"
                },
                DIM,
            ));
        }
        ServerStatus::NeedsLogin { error, login_page } => {
            lines.push(Line::styled(
                clean_line(error).into_owned(),
                Style::new().fg(Color::Magenta),
            ));
            login_lines(state, name, login_page.as_deref(), lines);
        }
        ServerStatus::Unapproved { command_line, .. } => {
            lines.push(Line::styled(
                format!(
                    "not approved, not started; would run: {}  (a: approve)",
                    clean_line(command_line)
                ),
                Style::new().fg(Color::Magenta),
            ));
        }
        _ => {
            lines.push(Line::styled("stopped; r starts it", DIM));
        }
    }
}

/// A connected server: who it is, its era, its notes and the start of its instructions.
fn connected_lines(info: &ConnectionInfo, lines: &mut Vec<Line<'static>>) {
    let pid = info.pid.map(|p| format!("  pid {p}")).unwrap_or_default();
    lines.push(Line::styled(
        format!(
            "server {}{pid}  {} era",
            clean_line(&info.server_info.label()),
            info.era.label()
        ),
        DIM,
    ));
    for n in &info.notes {
        lines.push(Line::styled(
            format!("! {}", clean_line(n)),
            Style::new().fg(Color::Yellow),
        ));
    }
    if let Some(instr) = &info.instructions {
        lines.push(Line::styled("instructions:", DIM));
        for l in instr.trim_end().lines().take(6) {
            lines.push(Line::styled(format!("  {}", clean_line(l)), DIM));
        }
    }
}

/// How to log in to a server that needs it: the key, or the login page's whole address and
/// what to do over SSH (nothing when the page is empty).
fn login_lines(
    state: &State,
    name: &str,
    login_page: Option<&str>,
    lines: &mut Vec<Line<'static>>,
) {
    match login_page {
        None => lines.push(Line::styled("L: log in here (opens the browser)", DIM)),
        Some("") => {}
        Some(page) => {
            // The address whole, over as many lines as it takes (a cut one is useless).
            lines.push(Line::styled("if the browser did not open, visit:", DIM));
            let width = usize::from(state.size.0.saturating_sub(2)).max(20);
            let page: Vec<char> = clean_line(page).chars().collect();
            for piece in page.chunks(width) {
                lines.push(Line::raw(piece.iter().collect::<String>()));
            }
            lines.push(Line::styled(
                format!(
                    "over SSH? run `harness9 mcp login {}` in a shell here:",
                    clean_line(name)
                ),
                DIM,
            ));
            lines.push(Line::styled(
                "it takes the address the browser ends on; then press r here",
                DIM,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::update;
    use crate::tests::support::{key_event as key, with_servers};

    #[test]
    fn panel_keys_scroll_select_restart_edit_and_close() {
        let mut s = with_servers(&["a", "b"], 100);
        s.size = (80, 24);
        s.modal = Some(Modal::Panel(PanelState::default()));
        update(&mut s, key(KeyCode::Char('j')));
        update(&mut s, key(KeyCode::Down));
        assert_eq!(
            s.modal,
            Some(Modal::Panel(PanelState {
                selected: 0,
                scroll: 2
            }))
        );
        update(&mut s, key(KeyCode::Char('k')));
        update(&mut s, key(KeyCode::PageDown));
        let Some(Modal::Panel(p)) = &s.modal else {
            panic!("panel closed")
        };
        assert_eq!(p.scroll, 1 + 18);
        update(&mut s, key(KeyCode::End));
        let Some(Modal::Panel(p)) = &s.modal else {
            panic!("panel closed")
        };
        let total = s.panel_total_lines("a");
        assert_eq!(p.scroll, total - 18);
        update(&mut s, key(KeyCode::Home));
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(
            s.modal,
            Some(Modal::Panel(PanelState {
                selected: 1,
                scroll: 0
            }))
        );
        assert_eq!(
            update(&mut s, key(KeyCode::Char('r'))),
            vec![Effect::Restart("b".into())]
        );
        update(&mut s, key(KeyCode::Left));
        assert_eq!(
            update(&mut s, key(KeyCode::Char('e'))),
            vec![Effect::OpenEditor]
        );
        // Esc goes back to the overview, q closes.
        update(&mut s, key(KeyCode::Esc));
        assert!(matches!(s.modal, Some(Modal::Overview(_))));
        update(&mut s, key(KeyCode::Enter));
        update(&mut s, key(KeyCode::Char('q')));
        assert_eq!(s.modal, None);
    }
}
