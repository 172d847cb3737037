//! VS Code's `${input:ID}` asked once: the inputs a config's servers need and have no value
//! for wait in a queue; each opens a small prompt (masked when the input is a password) when
//! no other modal is open. Enter keeps the value ([`Effect::SaveInput`]: the actor writes it
//! to the private inputs file and reloads), Esc skips it; neither is asked again this session.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::state::{Effect, Entry, Modal, State};
use super::widgets::{modal_block, DIM};
use harness9_app::config::input_vars::InputPrompt;
use harness9_base::sanitize::clean_line;

/// The open prompt: the input and what has been typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputView {
    /// The input asked for.
    pub prompt: InputPrompt,
    /// The value typed so far.
    pub value: String,
}

/// A config (at start or after a reload) needs `inputs`: queue those not asked yet.
pub fn inputs_needed(state: &mut State, inputs: Vec<InputPrompt>) {
    for i in inputs {
        let key = (i.file.clone(), i.id.clone());
        if !state.questions.inputs_asked.contains(&key)
            && !state
                .questions
                .inputs_pending
                .iter()
                .any(|p| p.file == i.file && p.id == i.id)
        {
            state.questions.inputs_pending.push_back(i);
        }
    }
    open_next(state);
    super::guard::refresh(state);
}

/// Opens the next queued input when nothing else is on screen.
pub fn open_next(state: &mut State) {
    if state.modal.is_some() || !state.questions.approvals.is_empty() {
        return;
    }
    if let Some(prompt) = state.questions.inputs_pending.pop_front() {
        state.modal = Some(Modal::Input(InputView {
            prompt,
            value: String::new(),
        }));
    }
}

impl super::state::ModalView for InputView {
    /// A key in the prompt.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        let mut v = self;
        match key.code {
            KeyCode::Enter => {
                state
                    .questions
                    .inputs_asked
                    .insert((v.prompt.file.clone(), v.prompt.id.clone()));
                if v.value.is_empty() {
                    state.note(Entry::Info(format!(
                        "input \"{}\" left without a value",
                        v.prompt.id
                    )));
                    return Vec::new();
                }
                vec![Effect::SaveInput {
                    file: v.prompt.file,
                    id: v.prompt.id,
                    value: v.value,
                }]
            }
            KeyCode::Esc => {
                state
                    .questions
                    .inputs_asked
                    .insert((v.prompt.file.clone(), v.prompt.id.clone()));
                state.note(Entry::Info(format!(
                    "input \"{}\" skipped; its servers stay held (set {} to give it)",
                    v.prompt.id,
                    harness9_app::config::input_var(&v.prompt.id)
                )));
                Vec::new()
            }
            KeyCode::Backspace => {
                v.value.pop();
                state.modal = Some(Modal::Input(v));
                Vec::new()
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                v.value.push(c);
                state.modal = Some(Modal::Input(v));
                Vec::new()
            }
            _ => {
                state.modal = Some(Modal::Input(v));
                Vec::new()
            }
        }
    }

    /// Draws the prompt at the top of `area`.
    fn draw(&self, state: &State, frame: &mut Frame, area: Rect) {
        let v = self;
        let p = &v.prompt;
        let block = modal_block(&super::guard::title(
            state,
            &format!("input \"{}\"", clean_line(&p.id)),
        ))
        .border_style(super::guard::border(state, Color::Blue));
        let rect = Rect {
            height: area.height.min(7),
            ..area
        };
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        let shown = if p.password {
            "•".repeat(v.value.chars().count())
        } else {
            clean_line(&v.value).into_owned()
        };
        // Which server asks, from which file: the description is the repository's text.
        let servers: Vec<String> = p
            .servers
            .iter()
            .map(|s| format!("\"{}\"", clean_line(s)))
            .collect();
        let mut lines = vec![Line::raw(format!(
            "{} (for server {} in {})",
            if p.description.is_empty() {
                "A value for this input".to_owned()
            } else {
                clean_line(&p.description).into_owned()
            },
            servers.join(", "),
            clean_line(&p.file.display().to_string())
        ))];
        lines.push(Line::styled(
            format!("> {shown}▏"),
            Style::new().fg(Color::Cyan),
        ));
        lines.push(if super::guard::is_new(state) {
            super::guard::keys_line(state, &[], "")
        } else {
            Line::styled(
                "Enter keeps it in a private (0600) file, not asked again · Esc skips",
                DIM,
            )
        });
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::update;
    use crate::tests::support::{press, settle, typed};

    fn prompt(id: &str, password: bool) -> InputPrompt {
        InputPrompt {
            file: ".vscode/mcp.json".into(),
            id: id.into(),
            description: "API key".into(),
            password,
            servers: vec!["gh".into()],
        }
    }

    #[test]
    fn each_input_is_asked_once_and_enter_saves_it() {
        let mut s = State::new("x".into(), None, String::new());
        inputs_needed(&mut s, vec![prompt("a", true), prompt("b", false)]);
        assert!(matches!(&s.modal, Some(Modal::Input(v)) if v.prompt.id == "a"));
        // Typed as it opened: ignored.
        typed(&mut s, "x");
        settle(&mut s);
        typed(&mut s, "k");
        // A pasted token keeps its first line.
        update(&mut s, crate::state::Event::Paste("1\n".into()));
        let fx = press(&mut s, KeyCode::Enter);
        assert_eq!(
            fx,
            vec![Effect::SaveInput {
                file: ".vscode/mcp.json".into(),
                id: "a".into(),
                value: "k1".into()
            }]
        );
        // The next one opens; Esc skips it.
        assert!(matches!(&s.modal, Some(Modal::Input(v)) if v.prompt.id == "b"));
        assert!(press(&mut s, KeyCode::Esc).is_empty());
        assert!(s.modal.is_none());
        // A reload that still needs them does not ask again.
        inputs_needed(&mut s, vec![prompt("a", true), prompt("b", false)]);
        assert!(s.modal.is_none());
    }

    #[test]
    fn the_prompt_masks_a_password() {
        let mut s = State::new(".vscode/mcp.json".into(), None, String::new());
        inputs_needed(&mut s, vec![prompt("api-key", true)]);
        settle(&mut s);
        typed(&mut s, "hunter2");
        let screen = crate::tests::support::render(&mut s, 80, 12);
        assert!(!screen.contains("hunter2"), "{screen}");
        insta::assert_snapshot!(screen);
    }
}
