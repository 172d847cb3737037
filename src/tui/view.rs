//! The pure render of the TUI [`State`]: transcript, input line, MCP bar, status line, and the
//! `/mcp`, `/trace` and `/help` modals. Every server-controlled string passes through
//! [`clean`]/[`clean_line`] on its way to the screen.

use harness9_actors::error::fmt_duration;
use harness9_actors::messages::{ServerStatus, StatusSnapshot};
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::state::{CallState, Entry, Modal, State, RESULT_LINES};
use super::widgets::{truncate_line, wrap, DIM};
use crate::sanitize::{clean, clean_line};

/// Draws the whole screen.
pub fn view(state: &State, frame: &mut Frame) {
    let area = frame.area();
    let bar = !state.servers.is_empty();
    let [main, input_sep, input, mcp, status] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(state.input_rows() as u16),
        Constraint::Length(u16::from(bar)),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_transcript(state, frame, main);
    frame.render_widget(
        Paragraph::new("─".repeat(input_sep.width as usize)).style(DIM),
        input_sep,
    );
    draw_input(state, frame, input);
    if bar {
        frame.render_widget(Paragraph::new(mcp_bar(&state.servers, mcp.width)), mcp);
    }
    frame.render_widget(Paragraph::new(status_line(state, status.width)), status);
    if let Some(modal) = &state.modal {
        let [modal_area, _] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(1 + u16::from(bar))])
                .areas(area);
        frame.render_widget(Clear, modal_area);
        match modal {
            Modal::Panel(p) => super::panel::draw_panel(state, p, frame, modal_area),
            Modal::Trace(t) => super::trace::draw_trace(state, t, frame, modal_area),
            Modal::Help => super::commands::draw_help(frame, modal_area),
            Modal::Trust(t) => super::trust::draw_trust(state, t, frame, modal_area),
        }
    }
    // A question about a tool call goes over everything: the turn waits on it.
    if state.approvals.front().is_some() {
        super::approvals::draw_approval(state, frame, main);
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
        ServerStatus::Restarting { attempt, .. } => {
            ("○", Color::Yellow, format!("restarting ({attempt})"))
        }
        ServerStatus::Failed { .. } => ("✗", Color::Red, "failed".into()),
        ServerStatus::Unapproved { .. } => ("?", Color::Magenta, "unapproved".into()),
        _ => ("-", Color::DarkGray, "stopped".into()),
    }
}

/// `[MCP] a ● 2 tools │ b ✗ failed`, cut to `width` with a count of the servers left out; never
/// wider than `width`.
pub fn mcp_bar(servers: &StatusSnapshot, width: u16) -> Line<'static> {
    let width = width as usize;
    let mut spans = vec![Span::styled("[MCP]", Style::new().bold())];
    let mut used = 5;
    let n = servers.len();
    for (i, (name, st)) in servers.iter().enumerate() {
        let (sym, color, detail) = status_symbol(&st.status);
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
        spans.push(Span::raw(name.into_owned()));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(sym, Style::new().fg(color)));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(detail, Style::new().fg(color)));
    }
    truncate_line(Line::from(spans), width)
}

fn status_line(state: &State, width: u16) -> Line<'static> {
    let model = match &state.model {
        Some(m) => format!("model {m}"),
        None => "no model: MCP console (/help)".to_owned(),
    };
    let builtin = state.tools.iter().filter(|t| t.server.is_none()).count();
    let mcp = state.tools.len() - builtin;
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
        Span::raw(tools),
        Span::styled(" │ ", DIM),
        Span::raw(state.config_path.clone()),
    ];
    if state.busy {
        spans.push(Span::styled(" │ ", DIM));
        spans.push(Span::styled(
            "working… Esc cancels",
            Style::new().fg(Color::Yellow),
        ));
    }
    spans.push(Span::styled(" │ Tab completes · /help", DIM));
    truncate_line(Line::from(spans), width as usize)
}

// ---- transcript and input -------------------------------------------------------------------

/// The lines of one transcript entry; of a long answer only the last ones, at least `need`.
fn entry_lines(entry: &Entry, width: usize, expand_tools: bool, need: usize) -> Vec<Line<'static>> {
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
        Entry::Tool {
            name,
            args,
            state,
            elapsed,
            output,
            pinned,
            progress,
            ..
        } => {
            let expanded = *pinned || expand_tools;
            let (mark, color) = match state {
                CallState::Running => ("…", Color::Yellow),
                CallState::Ok => ("✓", Color::Green),
                CallState::Failed => ("✗", Color::Red),
            };
            let took = match (elapsed, progress) {
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
            if *pinned {
                head.push(Span::styled(clean_line(args).into_owned(), DIM));
            }
            out.push(truncate_line(Line::from(head), width));
            if !expanded {
                return out;
            }
            if !*pinned {
                wrap(
                    &format!("args {}", clean_line(args)),
                    width,
                    DIM,
                    "  ",
                    &mut out,
                );
            }
            let lines: Vec<&str> = output.trim_end().split('\n').collect();
            let shown = lines.len().min(RESULT_LINES);
            let style = if *state == CallState::Failed {
                Style::new().fg(Color::Red)
            } else {
                Style::new()
            };
            if !output.is_empty() {
                wrap(&lines[..shown].join("\n"), width, style, "  ", &mut out);
            }
            if lines.len() > shown {
                out.push(Line::styled(
                    format!("  … {} more lines", lines.len() - shown),
                    DIM,
                ));
            }
        }
    }
    out
}

fn draw_transcript(state: &State, frame: &mut Frame, area: Rect) {
    let rows = area.height as usize;
    let width = area.width as usize;
    if state.transcript.is_empty() {
        let mut lines = vec![
            Line::styled("harness9", Style::new().bold()),
            Line::styled(
                "Type /help for commands, /mcp for the servers, /call <tool> <json> to run a tool.",
                DIM,
            ),
        ];
        if state.model.is_none() {
            let mut help = Vec::new();
            wrap(&state.model_help, width, DIM, "", &mut help);
            lines.push(Line::raw(""));
            lines.extend(help);
        }
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    // Lay out from the newest entry back, only as far as the screen (and scroll) needs.
    let need = rows + state.scroll_back;
    let mut lines: Vec<Line<'static>> = Vec::new();
    for e in state.transcript.iter().rev() {
        let mut l = entry_lines(
            e,
            width,
            state.expand_tools,
            need.saturating_sub(lines.len()),
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
    let back = state.scroll_back.min(lines.len().saturating_sub(rows));
    let end = lines.len() - back;
    let start = end.saturating_sub(rows);
    let visible: Vec<Line<'static>> = lines.drain(start..end).collect();
    frame.render_widget(Paragraph::new(visible), area);
}

fn draw_input(state: &State, frame: &mut Frame, area: Rect) {
    const PROMPT: &str = "> ";
    let width = (area.width as usize).saturating_sub(PROMPT.len()).max(1);
    let (cur_line, cur_col) = state.cursor_line_col();
    let lines: Vec<&str> = state.input.split('\n').collect();
    // The rows shown: all of a short input, else a window that keeps the cursor's line in view.
    let rows = (area.height as usize).max(1);
    let first = (cur_line + 1).saturating_sub(rows);
    let mut shown_lines = Vec::new();
    let mut cursor_x = 0;
    for (i, line) in lines.iter().enumerate().skip(first).take(rows) {
        // Keep the cursor visible on its line: show the tail when it is wider than the box.
        let skip_cols = if i == cur_line {
            let col: usize = line
                .chars()
                .take(cur_col)
                .map(|c| c.width().unwrap_or(0))
                .sum();
            let skip = col.saturating_sub(width - 1);
            cursor_x = col - skip;
            skip
        } else {
            0
        };
        let mut shown = String::new();
        let mut at = 0;
        for c in line.chars() {
            let w = c.width().unwrap_or(0);
            if at >= skip_cols && at + w - skip_cols <= width {
                shown.push(c);
            }
            at += w;
        }
        let prompt = if i == 0 { PROMPT } else { "  " };
        shown_lines.push(Line::from(vec![
            Span::styled(prompt, Style::new().fg(Color::Cyan).bold()),
            Span::raw(shown),
        ]));
    }
    frame.render_widget(Paragraph::new(shown_lines), area);
    if state.modal.is_none() {
        frame.set_cursor_position(Position::new(
            area.x + (PROMPT.len() + cursor_x) as u16,
            area.y + (cur_line - first) as u16,
        ));
    }
}
