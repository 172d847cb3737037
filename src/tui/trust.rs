//! The trust screen: a project config's unapproved servers with their full command lines; when
//! it opens by itself, its selection, its keys (approve one, approve all, decline) and its
//! drawing.

use crossterm::event::{KeyCode, KeyEvent};
use harness9_actors::messages::ServerStatus;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::state::{Effect, Entry, Modal, State};
use super::widgets::{modal_block, wrap, DIM, KEYS_ROWS};
use harness9_base::sanitize::{clean, clean_line};

/// The trust screen's selection (an index into [`State::unapproved`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustView {
    /// The selected server.
    pub selected: usize,
}

impl State {
    /// The servers waiting for approval, `(name, command line)`, in snapshot order.
    pub fn unapproved(&self) -> Vec<(String, String)> {
        self.servers
            .status
            .iter()
            .filter_map(|(n, st)| match &st.status {
                ServerStatus::Unapproved { command_line, .. } => {
                    Some((n.clone(), command_line.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The servers waiting for approval as an answer names them, `(name, approval key)`: the
    /// key is the exact spec shown, so an approval never covers a later change.
    pub fn unapproved_keys(&self) -> Vec<(String, String)> {
        self.servers
            .status
            .iter()
            .filter_map(|(n, st)| match &st.status {
                ServerStatus::Unapproved { approval, .. } => Some((n.clone(), approval.clone())),
                _ => None,
            })
            .collect()
    }
}

/// After a new status snapshot: the trust screen opens for servers it has not shown yet, and
/// closes once none is left waiting. A server that leaves the list (approved) is forgotten, so
/// if it comes back (its spec changed, even only in an env value) the screen asks again.
pub(super) fn status_changed(state: &mut State) {
    let waiting = state.unapproved_keys();
    let fresh = waiting
        .iter()
        .any(|w| !state.questions.trust_seen.contains(w));
    state.questions.trust_seen = waiting.iter().cloned().collect();
    match &mut state.modal {
        Some(Modal::Trust(_)) if waiting.is_empty() => state.modal = None,
        Some(Modal::Trust(t)) => t.selected = t.selected.min(waiting.len() - 1),
        _ if fresh => state.modal = Some(Modal::Trust(TrustView::default())),
        _ => {}
    }
}

/// The trust screen's choices, the safe one first.
fn choices() -> [(&'static str, Color, String); 3] {
    [
        ("n", Color::Red, "decline".to_owned()),
        ("y", Color::Green, "approve selected".to_owned()),
        ("a", Color::Yellow, "approve all".to_owned()),
    ]
}

impl super::state::ModalView for TrustView {
    /// The trust screen: ↑↓ select, `y` approves the selected server, `a` every one listed,
    /// `n`/`d`/Esc declines (they stay unapproved and nothing runs; `a` in `/mcp` asks again);
    /// ←→/Tab move the highlight among those three (on decline at first), Enter picks it. (Keys
    /// typed as it opened never get here: [`super::guard`].)
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut t = self;
        let waiting = state.unapproved_keys();
        let n = waiting.len();
        if super::guard::move_choice(state, 3, key.code) {
            state.modal = Some(Modal::Trust(t));
            return Vec::new();
        }
        let code = match key.code {
            KeyCode::Enter => match super::guard::choice(state, 3) {
                1 => KeyCode::Char('y'),
                2 => KeyCode::Char('a'),
                _ => KeyCode::Char('n'),
            },
            c => c,
        };
        match code {
            KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('d') => {
                if n > 0 {
                    state.note(Entry::Info(format!(
                        "declined {n} server{} of {}: not started; `a` in /mcp or `harness9 mcp approve` approves later",
                        if n == 1 { "" } else { "s" },
                        state.servers.config_path
                    )));
                }
                return Vec::new();
            }
            KeyCode::Up | KeyCode::Char('k') => t.selected = t.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                t.selected = (t.selected + 1).min(n.saturating_sub(1))
            }
            KeyCode::Char('y') => {
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
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let t = self;
        let block = modal_block(&super::guard::title(
            state,
            &format!(
                "approve this project's MCP servers? ({} waiting)",
                state.unapproved().len()
            ),
        ))
        .border_style(super::guard::border(state, Color::Magenta));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let width = inner.width.max(1) as usize;
        let mut lines = Vec::new();
        wrap(
            &format!(
                "{} is a project config: its servers run commands on this machine. Nothing has been started. Approve only what you trust.",
                clean_line(&state.servers.config_path)
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
                server_block(name, command_line, i == t.selected, width)
            })
            .collect();
        // Scrolled so the selected server shows whole; what is left out is counted, so `a`
        // (approve all) never approves a server the user could not know about.
        // The body is the inner area less the key line; two rows stay for the more-above/below notes.
        let room = (inner.height as usize).saturating_sub(usize::from(KEYS_ROWS) + lines.len() + 2);
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
        let keys = super::guard::keys_line(state, &choices(), "←→ Enter · ↑↓ select");
        let [body, help] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(KEYS_ROWS)]).areas(inner);
        frame.render_widget(Paragraph::new(lines), body);
        frame.render_widget(Paragraph::new(keys), help);
    }
}

/// One unapproved server on the trust screen: its name (marked when selected), then its whole
/// command line wrapped under it.
fn server_block(
    name: &str,
    command_line: &str,
    selected: bool,
    width: usize,
) -> Vec<Line<'static>> {
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
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::state::{update, Event, PanelState};
    use crate::tests::support::press;
    use harness9_actors::messages::ServerState;

    #[test]
    fn the_trust_screen_opens_for_new_unapproved_servers_and_approves_what_it_showed() {
        let mut s = State::new(".mcp.json".into(), None, "set a key".into());
        let snap = |cmds: &[(&str, &str)]| {
            let m: BTreeMap<String, ServerState> = cmds
                .iter()
                .map(|(n, c)| {
                    let status = ServerStatus::Unapproved {
                        command_line: c.to_string(),
                        approval: c.to_string(),
                    };
                    let st = ServerState {
                        transport: "stdio",
                        status,
                    };
                    (n.to_string(), st)
                })
                .collect();
            Event::Status(Arc::new(m))
        };
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y")]));
        assert_eq!(s.modal, Some(Modal::Trust(TrustView::default())));
        press(&mut s, KeyCode::Down);
        assert_eq!(
            press(&mut s, KeyCode::Char('y')),
            vec![Effect::ApproveServers(vec![("b".into(), "npx y".into())])]
        );
        assert_eq!(
            press(&mut s, KeyCode::Char('a')),
            vec![Effect::ApproveServers(vec![
                ("a".into(), "sh -c x".into()),
                ("b".into(), "npx y".into())
            ])]
        );
        // Declined: closed, and the same servers do not reopen it; a changed one does.
        press(&mut s, KeyCode::Esc);
        assert_eq!(s.modal, None);
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y")]));
        assert_eq!(s.modal, None);
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y --evil")]));
        assert!(matches!(s.modal, Some(Modal::Trust(_))));
        press(&mut s, KeyCode::Char('n'));
        // Approved (gone from the list), then unapproved again with the same command line (an
        // env value changed): it asks again.
        update(&mut s, snap(&[("a", "sh -c x")]));
        assert_eq!(s.modal, None);
        update(&mut s, snap(&[("a", "sh -c x"), ("b", "npx y --evil")]));
        assert!(matches!(s.modal, Some(Modal::Trust(_))));
        press(&mut s, KeyCode::Esc);
        // `a` in /mcp on an unapproved server brings it back, on that server.
        s.modal = Some(Modal::Panel(PanelState {
            selected: 1,
            scroll: 0,
        }));
        press(&mut s, KeyCode::Char('a'));
        assert_eq!(s.modal, Some(Modal::Trust(TrustView { selected: 1 })));
        // Once none waits, it closes by itself.
        update(&mut s, Event::Status(Arc::new(BTreeMap::new())));
        assert_eq!(s.modal, None);
    }
}
