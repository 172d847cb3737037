//! The pure render of the TUI [`State`]: the screen's layout (the rows the transcript and a
//! modal's body get, which the keys' page sizes use too), the MCP bar and the status line, and
//! the dispatch to each feature's drawing: transcript, input, the `/mcp`, `/trace`, `/help` and
//! trust modals, and the question about a tool call. Every server-controlled string passes
//! through [`clean`](harness9_base::sanitize::clean)/[`clean_line`] on its way to the screen.

use harness9_actors::messages::{ServerStatus, StatusSnapshot};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use super::state::State;
use super::widgets::{truncate_line, BORDER_ROWS, DIM, HEADER_ROWS, KEYS_ROWS};
use harness9_base::sanitize::clean_line;

/// The rule between the transcript and the input box.
const RULE_ROWS: u16 = 1;
/// The MCP bar: drawn while any server is configured; the page sizes always count it.
const BAR_ROWS: u16 = 1;
/// The status line at the bottom.
const STATUS_ROWS: u16 = 1;
/// Rows of the session screen that are neither the transcript nor the input box.
const CHROME_ROWS: u16 = RULE_ROWS + BAR_ROWS + STATUS_ROWS;

impl State {
    /// Rows of the transcript: the screen less the input box, the rule above it, the MCP bar
    /// and the status line.
    pub fn body_rows(&self) -> usize {
        (self.size.1 as usize)
            .saturating_sub(usize::from(CHROME_ROWS) + self.input_rows())
            .max(1)
    }

    /// Rows of a modal's scrolling body: the screen less the two bars below the modal, its
    /// border, and its own header and key-help lines.
    pub fn modal_rows(&self) -> usize {
        let chrome = BAR_ROWS + STATUS_ROWS + BORDER_ROWS + HEADER_ROWS + KEYS_ROWS;
        (self.size.1 as usize)
            .saturating_sub(usize::from(chrome))
            .max(1)
    }
}

/// Draws the whole screen.
pub fn view(state: &State, frame: &mut Frame) {
    let area = frame.area();
    let bar = !state.servers.status.is_empty() || !state.servers.disabled.is_empty();
    let bar_rows = if bar { BAR_ROWS } else { 0 };
    let [main, input_sep, input, mcp, status] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(RULE_ROWS),
        Constraint::Length(state.input_rows() as u16),
        Constraint::Length(bar_rows),
        Constraint::Length(STATUS_ROWS),
    ])
    .areas(area);
    super::transcript::draw_transcript(state, frame, main);
    frame.render_widget(
        Paragraph::new("─".repeat(input_sep.width as usize)).style(DIM),
        input_sep,
    );
    super::editor::draw(state, frame, input);
    super::editor::draw_menu(state, frame, main);
    if bar {
        frame.render_widget(
            Paragraph::new(mcp_bar_with(
                &state.servers.status,
                &state.servers.disabled,
                state.tasks.running.len(),
                mcp.width,
            )),
            mcp,
        );
    }
    frame.render_widget(Paragraph::new(status_line(state, status.width)), status);
    if let Some(modal) = &state.modal {
        let [modal_area, _] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(STATUS_ROWS + bar_rows),
        ])
        .areas(area);
        frame.render_widget(Clear, modal_area);
        modal.draw(state, frame, modal_area);
    }
    // A question about a tool call goes over everything: the turn waits on it.
    if state.questions.approvals.front().is_some() {
        super::approvals::draw(state, frame, main);
    } else if state.questions.asks.front().is_some() {
        // A server's question (its call, and so the turn, waits on it).
        super::elicit::draw(state, frame, main);
    }
}

// ---- bars -----------------------------------------------------------------------------------

/// The mark, its colour and a short word for a server's status, as the bar and the panel show it.
pub(super) fn status_symbol(status: &ServerStatus) -> (&'static str, Color, String) {
    match status {
        ServerStatus::Connected { tools, .. } => (
            "●",
            Color::Green,
            format!("{tools} tool{}", if *tools == 1 { "" } else { "s" }),
        ),
        ServerStatus::Starting { .. } => ("○", Color::Yellow, "starting".into()),
        // Its tools are offered from the cache; the server is starting or waits for a call.
        ServerStatus::Cached { tools, .. } => (
            "◐",
            Color::Cyan,
            format!(
                "{tools} tool{} (cached)",
                if *tools == 1 { "" } else { "s" }
            ),
        ),
        ServerStatus::Restarting { attempt, .. } => {
            ("○", Color::Yellow, format!("restarting ({attempt})"))
        }
        ServerStatus::Failed { .. } => ("✗", Color::Red, "failed".into()),
        ServerStatus::Unapproved { .. } => ("?", Color::Magenta, "unapproved".into()),
        ServerStatus::NeedsLogin { .. } => ("!", Color::Magenta, "needs login".into()),
        _ => ("-", Color::DarkGray, "stopped".into()),
    }
}

/// `[MCP] a ● 2 tools │ b ✗ failed`, the config's disabled servers after the others, dim; cut to
/// `width` with a count of the servers left out, never wider. Running tasks come first
/// (`[MCP] ⧗ 1 task │ a ● 2 tools`), so a cut bar still shows them.
pub fn mcp_bar_with(
    servers: &StatusSnapshot,
    disabled: &[String],
    tasks: usize,
    width: u16,
) -> Line<'static> {
    let width = width as usize;
    let mut spans = vec![Span::styled("[MCP]", Style::new().bold())];
    let mut used = 5;
    if let Some(word) = super::tasks::bar_word(tasks) {
        let seg = format!(" ⧗ {word} (/tasks) │");
        used += seg.width();
        spans.push(Span::styled(seg, Style::new().fg(Color::Cyan)));
    }
    let off: Vec<&String> = disabled
        .iter()
        .filter(|d| !servers.contains_key(d.as_str()))
        .collect();
    let n = servers.len() + off.len();
    let rows = servers
        .iter()
        .map(|(name, st)| (name, Some(st)))
        .chain(off.into_iter().map(|d| (d, None)));
    for (i, (name, st)) in rows.enumerate() {
        let name_style = if st.is_some() { Style::new() } else { DIM };
        let (sym, color, detail) = match st {
            Some(st) => status_symbol(&st.status),
            None => ("◌", Color::DarkGray, "disabled".to_owned()),
        };
        let name = clean_line(name);
        let sep = if i == 0 { " " } else { " │ " };
        let seg_width = sep.width() + name.width() + 1 + sym.width() + 1 + detail.width();
        let rest = n - i - 1;
        let reserve = if rest > 0 {
            format!(" │ +{rest} more").width()
        } else {
            0
        };
        if used + seg_width + reserve > width {
            let more = format!("{}+{} more", if i == 0 { " " } else { " │ " }, n - i);
            if used + more.width() <= width {
                spans.push(Span::styled(more, DIM));
            }
            break;
        }
        used += seg_width;
        spans.push(Span::styled(sep, DIM));
        spans.push(Span::styled(name.into_owned(), name_style));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(sym, Style::new().fg(color)));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(detail, Style::new().fg(color)));
    }
    truncate_line(Line::from(spans), width)
}

fn status_line(state: &State, width: u16) -> Line<'static> {
    let model = match &state.model.label {
        Some(m) => format!("model {m}"),
        None => "no model: MCP console (/help)".to_owned(),
    };
    let builtin = state
        .servers
        .tools
        .iter()
        .filter(|t| t.server.is_none())
        .count();
    let mcp = state.servers.tools.len() - builtin;
    let tools = if builtin == 0 {
        format!("{mcp} MCP tool{}", if mcp == 1 { "" } else { "s" })
    } else {
        format!("{mcp} MCP + {builtin} built-in tools")
    };
    let mut spans = vec![
        Span::styled(" harness9 ", Style::new().bold().reversed()),
        Span::raw(" "),
        Span::raw(model),
        Span::styled(" │ ", DIM),
    ];
    if state.turn.busy {
        const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        let secs = state.turn.busy_secs;
        let elapsed = if secs >= 60 {
            format!("{}m{:02}s", secs / 60, secs % 60)
        } else {
            format!("{secs}s")
        };
        // The key that cancels the turn now: Esc answers a server's question or closes a
        // modal instead (their own key lines say so), Ctrl+C cancels from anywhere.
        let esc_cancels = !state.questions.approvals.is_empty()
            || (state.questions.asks.is_empty() && state.modal.is_none());
        let key = if esc_cancels { "Esc" } else { "Ctrl+C" };
        // First after the name: a narrow terminal cuts the end of the line, never this.
        spans.push(Span::styled(
            format!(
                "{} working… {elapsed} · {key} cancels",
                FRAMES[state.turn.spinner % FRAMES.len()]
            ),
            Style::new().fg(Color::Yellow),
        ));
        spans.push(Span::styled(" │ ", DIM));
    }
    if let Some(used) = state.model.context_used {
        let k = |n: u64| {
            if n >= 10_000 {
                format!("{}k", n / 1000)
            } else {
                n.to_string()
            }
        };
        let (text, style) = match state.model.context_window.filter(|w| *w > 0) {
            Some(w) => {
                let pct = used.saturating_mul(100) / w;
                let style = if pct >= 80 {
                    Style::new().fg(Color::Yellow)
                } else {
                    Style::new()
                };
                (format!("context {pct}% of {}", k(w)), style)
            }
            None => (format!("context {} tokens", k(used)), Style::new()),
        };
        let text = format!("{text}{}", super::tool_sizes::gauge(state));
        spans.push(Span::styled(text, style));
        spans.push(Span::styled(" │ ", DIM));
    }
    spans.extend([
        Span::raw(tools),
        Span::styled(" │ ", DIM),
        Span::raw(state.servers.config_path.clone()),
    ]);
    spans.push(Span::styled(" │ Tab completes · /help", DIM));
    truncate_line(Line::from(spans), width as usize)
}
