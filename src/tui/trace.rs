//! The `/trace` view: the bounded buffer of traced JSON-RPC messages, the view's selection and
//! filter, its keys, and its drawing (a row per message; Enter expands one, secrets redacted).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use crossterm::event::{KeyCode, KeyEvent};
use harness9_actors::protocol::render::human_bytes;
use harness9_actors::trace::{Direction, WireRecord};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::state::{Effect, Modal, State};
use super::widgets::{modal_block, scroll_by, truncate_line, wrap, DIM, HEADER_ROWS, KEYS_ROWS};
use harness9_base::sanitize::{clean, clean_line};

/// Trace rows kept per server.
pub const TRACE_PER_SERVER: usize = 500;
/// Bytes of a traced message kept for display.
pub const TRACE_MESSAGE_MAX: usize = 64 * 1024;

/// One traced message as the trace view keeps it.
#[derive(Debug, Clone)]
pub struct TraceRow {
    /// Arrival order.
    pub seq: u64,
    /// When.
    pub ts: SystemTime,
    /// Which server.
    pub server: Arc<str>,
    /// Which way.
    pub dir: Direction,
    /// Its id.
    pub id: Option<String>,
    /// Its method (a response carries its request's).
    pub method: Option<String>,
    /// Response latency.
    pub latency_us: Option<u64>,
    /// HTTP status, for HTTP transports.
    pub http_status: Option<u16>,
    /// The message, cut at [`TRACE_MESSAGE_MAX`].
    pub message: Bytes,
    /// Its full size.
    pub size: usize,
}

/// The trace buffer: the last [`TRACE_PER_SERVER`] messages of each server, in arrival order.
#[derive(Debug, Default)]
pub struct TraceBuf {
    /// Configured env and header values: `/trace` shows them as `[redacted]`.
    pub secrets: Vec<String>,
    rows: VecDeque<TraceRow>,
    per_server: BTreeMap<Arc<str>, usize>,
    next_seq: u64,
}

impl TraceBuf {
    /// Adds a record, dropping the server's oldest row past the cap.
    pub fn push(&mut self, r: WireRecord) {
        let size = r.message.len();
        let message = if size > TRACE_MESSAGE_MAX {
            Bytes::copy_from_slice(&r.message[..TRACE_MESSAGE_MAX])
        } else {
            r.message
        };
        let count = self.per_server.entry(r.server.clone()).or_insert(0);
        *count += 1;
        if *count > TRACE_PER_SERVER {
            *count -= 1;
            if let Some(i) = self.rows.iter().position(|row| row.server == r.server) {
                self.rows.remove(i);
            }
        }
        self.next_seq += 1;
        self.rows.push_back(TraceRow {
            seq: self.next_seq,
            ts: r.ts,
            server: r.server,
            dir: r.dir,
            id: r.id.map(|i| i.to_string()),
            method: r.method,
            latency_us: r.latency_us,
            http_status: r.http_status,
            message,
            size,
        });
    }

    /// Rows, oldest first, of one server or all.
    pub fn rows<'a>(&'a self, filter: Option<&'a str>) -> impl Iterator<Item = &'a TraceRow> + 'a {
        self.rows
            .iter()
            .filter(move |r| filter.is_none_or(|f| &*r.server == f))
    }

    /// How many rows [`TraceBuf::rows`] yields.
    pub fn len(&self, filter: Option<&str>) -> usize {
        match filter {
            None => self.rows.len(),
            Some(f) => self.per_server.get(f).copied().unwrap_or(0),
        }
    }

    /// Servers seen, sorted.
    pub fn servers(&self) -> Vec<Arc<str>> {
        self.per_server.keys().cloned().collect()
    }
}

/// The `/trace` view's position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceView {
    /// Only this server's messages.
    pub filter: Option<String>,
    /// The selected row (index into the filtered rows); `None` follows the newest.
    pub selected: Option<usize>,
    /// The selected message is expanded.
    pub expanded: bool,
    /// Scroll inside the expanded message.
    pub expanded_scroll: usize,
}

impl super::state::ModalView for TraceView {
    /// The trace view's keys: ↑↓/jk PgUp/PgDn Home/End select (the last row follows the newest),
    /// Enter expands the selected message (then the same keys scroll it), Tab/BackTab step the
    /// server filter, Esc/q close (Esc first folds an expanded message).
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut t = self;
        let n = state.trace.len(t.filter.as_deref());
        let page = state.modal_rows();
        let last = n.saturating_sub(1);
        match key.code {
            KeyCode::Esc if t.expanded => {
                t.expanded = false;
                t.expanded_scroll = 0;
            }
            KeyCode::Esc | KeyCode::Char('q') => return Vec::new(),
            KeyCode::Enter if n > 0 => {
                t.expanded = !t.expanded;
                t.expanded_scroll = 0;
                t.selected = Some(t.selected.unwrap_or(last).min(last));
            }
            KeyCode::Tab | KeyCode::BackTab => {
                let servers = state.trace.servers();
                let idx = t
                    .filter
                    .as_deref()
                    .and_then(|f| servers.iter().position(|s| &**s == f));
                let next = if key.code == KeyCode::Tab {
                    match idx {
                        None => servers.first(),
                        Some(i) => servers.get(i + 1),
                    }
                } else {
                    match idx {
                        None => servers.last(),
                        Some(0) => None,
                        Some(i) => servers.get(i - 1),
                    }
                };
                t.filter = next.map(|s| s.to_string());
                t.selected = None;
                t.expanded = false;
            }
            code if t.expanded => {
                scroll_by(&mut t.expanded_scroll, code, page, usize::MAX / 2);
            }
            code => {
                let mut pos = t.selected.unwrap_or(last).min(last);
                if scroll_by(&mut pos, code, page, last) {
                    t.selected = if pos >= last && code != KeyCode::Up && code != KeyCode::Char('k')
                    {
                        None
                    } else {
                        Some(pos)
                    };
                }
            }
        }
        state.modal = Some(Modal::Trace(t));
        Vec::new()
    }

    /// Draws the trace view: the rows that fit, the selected one highlighted, or the selected message
    /// expanded as pretty JSON.
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let t = self;
        let title = match &t.filter {
            Some(f) => format!("trace: {}", clean_line(f)),
            None => "trace: all servers".to_owned(),
        };
        let block = modal_block(&title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [body, help] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(KEYS_ROWS)]).areas(inner);
        frame.render_widget(
            Paragraph::new(Line::styled(
                "↑↓/jk select · PgUp/PgDn Home/End · Enter expand · Tab filter by server · Esc close",
                DIM,
            )),
            help,
        );
        let filter = t.filter.as_deref();
        let n = state.trace.len(filter);
        if n == 0 {
            frame.render_widget(
                Paragraph::new(Line::styled(
                    "no messages yet; every JSON-RPC message to and from the servers shows here",
                    DIM,
                )),
                body,
            );
            return;
        }
        let selected = t.selected.unwrap_or(n - 1).min(n - 1);
        let width = body.width as usize;
        if t.expanded {
            let Some(r) = state.trace.rows(filter).nth(selected) else {
                return;
            };
            let [head, msg] =
                Layout::vertical([Constraint::Length(HEADER_ROWS), Constraint::Fill(1)])
                    .areas(body);
            frame.render_widget(Paragraph::new(trace_row_line(r, true, width)), head);
            let text = message_text(r, &state.trace.secrets);
            let mut lines = Vec::new();
            wrap(&text, width, Style::new(), "", &mut lines);
            let rows = msg.height as usize;
            let scroll = t.expanded_scroll.min(lines.len().saturating_sub(rows));
            let visible: Vec<Line<'static>> = lines.into_iter().skip(scroll).take(rows).collect();
            frame.render_widget(Paragraph::new(visible), msg);
            return;
        }
        let rows = body.height as usize;
        // Keep the selected row in view, near the bottom when following the newest.
        let start = (selected + 1).saturating_sub(rows);
        let lines: Vec<Line<'static>> = state
            .trace
            .rows(filter)
            .enumerate()
            .skip(start)
            .take(rows)
            .map(|(i, r)| trace_row_line(r, i == selected && t.selected.is_some(), width))
            .collect();
        frame.render_widget(Paragraph::new(lines), body);
    }
}

/// An expanded message as text: pretty JSON (raw text when it is not JSON), cleaned, and what
/// was cut of it. Secrets are redacted here as in the --trace file: credential keys and every
/// configured env/header value.
fn message_text(r: &TraceRow, secrets: &[String]) -> String {
    let pretty = serde_json::from_slice::<serde_json::Value>(&r.message)
        .ok()
        .and_then(|mut v| {
            harness9_app::diagnostics::trace_file::redact(&mut v, secrets);
            serde_json::to_string_pretty(&v).ok()
        })
        .unwrap_or_else(|| {
            let mut raw = String::from_utf8_lossy(&r.message).into_owned();
            for secret in secrets {
                raw = raw.replace(secret.as_str(), "[redacted]");
            }
            raw
        });
    let mut text = clean(&pretty).into_owned();
    if r.size > r.message.len() {
        text.push_str(&format!(
            "\n… cut: showing {} of {}",
            human_bytes(r.message.len()),
            human_bytes(r.size)
        ));
    }
    text
}

fn trace_row_line(r: &TraceRow, selected: bool, width: usize) -> Line<'static> {
    let ts = harness9_app::diagnostics::trace_file::rfc3339(r.ts);
    let time = ts.get(11..23).unwrap_or(&ts).to_owned();
    let (arrow, color) = match r.dir {
        Direction::Send => ("→", Color::Cyan),
        Direction::Recv => ("←", Color::Magenta),
    };
    let latency = r
        .latency_us
        .map(|us| {
            if us >= 10_000 {
                format!("{} ms", us / 1000)
            } else {
                format!("{:.1} ms", us as f64 / 1000.0)
            }
        })
        .unwrap_or_default();
    let kind = match (&r.method, &r.id, r.message.is_empty()) {
        (_, _, true) => format!("HTTP {}", r.http_status.unwrap_or(0)),
        (Some(m), _, _) => clean_line(m).into_owned(),
        (None, _, _) => "(no method)".to_owned(),
    };
    let id =
        r.id.as_deref()
            .map(|i| format!("#{}", clean_line(i)))
            .unwrap_or_default();
    let mut line = Line::from(vec![
        Span::styled(format!("{time} "), DIM),
        Span::styled(format!("{arrow} "), Style::new().fg(color).bold()),
        Span::raw(format!("{:<12} ", truncate_str(&clean_line(&r.server), 12))),
        Span::raw(format!("{:<28} ", truncate_str(&kind, 28))),
        Span::styled(format!("{id:<7} "), DIM),
        Span::raw(format!("{latency:>9} ")),
        Span::styled(human_bytes(r.size), DIM),
    ]);
    if selected {
        line = line.patch_style(Style::new().add_modifier(Modifier::REVERSED));
    }
    truncate_line(line, width)
}

fn truncate_str(s: &str, max: usize) -> String {
    if s.width() <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{update, Event};
    use crate::tests::support::{key_event as key, with_servers};

    fn record(server: &str, n: usize) -> WireRecord {
        WireRecord {
            ts: SystemTime::UNIX_EPOCH,
            server: server.into(),
            dir: Direction::Send,
            id: None,
            method: Some(format!("m{n}")),
            latency_us: None,
            message: Bytes::from(format!("{{\"n\":{n}}}")),
            http_status: None,
            session: None,
            http: None,
            era: None,
        }
    }

    #[test]
    fn trace_is_bounded_per_server_and_filterable() {
        let mut s = with_servers(&["a", "b"], 1);
        for i in 0..(TRACE_PER_SERVER + 10) {
            update(&mut s, Event::Trace(record("a", i)));
        }
        update(&mut s, Event::Trace(record("b", 0)));
        assert_eq!(s.trace.len(None), TRACE_PER_SERVER + 1);
        assert_eq!(s.trace.len(Some("a")), TRACE_PER_SERVER);
        assert_eq!(
            s.trace
                .rows(Some("a"))
                .next()
                .and_then(|r| r.method.clone()),
            Some("m10".into())
        );
        s.modal = Some(Modal::Trace(TraceView::default()));
        update(&mut s, key(KeyCode::Tab));
        let Some(Modal::Trace(t)) = &s.modal else {
            panic!("closed")
        };
        assert_eq!(t.filter.as_deref(), Some("a"));
        update(&mut s, key(KeyCode::Up));
        update(&mut s, key(KeyCode::Enter));
        let Some(Modal::Trace(t)) = &s.modal else {
            panic!("closed")
        };
        assert!(t.expanded);
        assert_eq!(t.selected, Some(TRACE_PER_SERVER - 2));
        update(&mut s, key(KeyCode::Esc));
        update(&mut s, key(KeyCode::Esc));
        assert_eq!(s.modal, None);
    }
}
