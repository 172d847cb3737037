//! The input: the editor (chars, lines, cursor moves, paste), the history, Tab completion of
//! commands and tool names, sending a line, the session screen's keys, and the input box.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthChar;

use super::commands::{run, COMMANDS};
use super::state::{Effect, Entry, State};
use super::transcript::page;
use harness9_base::sanitize::clean;

/// The input box's state.
#[derive(Debug, Default)]
pub struct EditorState {
    /// The input line.
    pub input: String,
    /// Cursor position in `input`, in chars.
    pub cursor: usize,
    /// Submitted lines, oldest first.
    pub history: Vec<String>,
    /// Position while browsing history.
    pub history_pos: Option<usize>,
    /// The candidates of an ambiguous Tab, shown until the next key.
    pub popup: Option<Vec<(String, String)>>,
}

/// The most rows the input box grows to; a longer input scrolls with the cursor.
pub const MAX_INPUT_ROWS: usize = 8;

impl State {
    /// Rows of the input box: one per input line, at most [`MAX_INPUT_ROWS`].
    pub fn input_rows(&self) -> usize {
        self.editor.input.split('\n').count().min(MAX_INPUT_ROWS)
    }

    /// The cursor as (line, column in chars) within the input's lines.
    pub fn cursor_line_col(&self) -> (usize, usize) {
        let before: String = self.editor.input.chars().take(self.editor.cursor).collect();
        let line = before.matches('\n').count();
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
        (line, col)
    }
}

/// Pasted text goes into the input at the cursor: newlines stay (a pasted stack trace or code
/// keeps its shape), CRLF and CR become LF, escape sequences go.
pub(super) fn paste(state: &mut State, text: &str) {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    for c in clean(&text).chars() {
        insert_char(state, c);
    }
}

/// Inserts `c` at the cursor and moves past it.
fn insert_char(state: &mut State, c: char) {
    let at = byte_index(&state.editor.input, state.editor.cursor);
    state.editor.input.insert(at, c);
    state.editor.cursor += 1;
}

/// The byte offset of char index `chars` in `s` (its length past the end).
fn byte_index(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}

/// The session screen's keys (no modal open): editing the input (Enter sends, Alt+Enter,
/// Shift+Enter and Ctrl+J add a line, Tab completes, ↑↓ move between lines then through the
/// history), Esc cancels a running turn, PgUp/PgDn page the transcript and Ctrl+L goes back to
/// its end, Ctrl+O folds or unfolds the model's tool calls.
pub(super) fn key(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    if key.code != KeyCode::Tab {
        state.editor.popup = None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let len = state.editor.input.chars().count();
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    match key.code {
        // A new line in the input: Alt+Enter, Shift+Enter (where the terminal tells it), Ctrl+J.
        KeyCode::Enter if alt || shift => insert_char(state, '\n'),
        KeyCode::Char('j') if ctrl => insert_char(state, '\n'),
        KeyCode::Enter => return submit(state),
        KeyCode::Esc if state.turn.busy => return super::state::cancel_turn(state),
        KeyCode::Tab => return complete(state),
        KeyCode::Char('a') if ctrl => state.editor.cursor = line_start(state),
        KeyCode::Char('e') if ctrl => state.editor.cursor = line_end(state),
        KeyCode::Char('u') if ctrl => {
            state.editor.input.clear();
            state.editor.cursor = 0;
        }
        KeyCode::Char('l') if ctrl => state.transcript.scroll_back = 0,
        KeyCode::Char('o') if ctrl => {
            state.transcript.expand_tools = !state.transcript.expand_tools
        }
        KeyCode::Char(c) if !ctrl => insert_char(state, c),
        KeyCode::Backspace if state.editor.cursor > 0 => {
            state.editor.cursor -= 1;
            let at = byte_index(&state.editor.input, state.editor.cursor);
            state.editor.input.remove(at);
        }
        KeyCode::Delete if state.editor.cursor < len => {
            let at = byte_index(&state.editor.input, state.editor.cursor);
            state.editor.input.remove(at);
        }
        KeyCode::Left => state.editor.cursor = state.editor.cursor.saturating_sub(1),
        KeyCode::Right => state.editor.cursor = (state.editor.cursor + 1).min(len),
        KeyCode::Home => state.editor.cursor = line_start(state),
        KeyCode::End => state.editor.cursor = line_end(state),
        // In a multi-line input, Up and Down move between its lines; past the first or last
        // line they step through the history.
        KeyCode::Up if !move_line(state, true) => history_step(state, true),
        KeyCode::Down if !move_line(state, false) => history_step(state, false),
        KeyCode::PageUp => page(state, true),
        KeyCode::PageDown => page(state, false),
        _ => {}
    }
    Vec::new()
}

/// The char index where the cursor's line starts.
fn line_start(state: &State) -> usize {
    state.editor.cursor - state.cursor_line_col().1
}

/// The char index where the cursor's line ends (before its newline).
fn line_end(state: &State) -> usize {
    let rest = state.editor.input.chars().skip(state.editor.cursor);
    state.editor.cursor + rest.take_while(|c| *c != '\n').count()
}

/// Moves the cursor to the line above (`up`) or below, keeping its column as far as that line
/// allows; false when there is no such line.
fn move_line(state: &mut State, up: bool) -> bool {
    let (line, col) = state.cursor_line_col();
    let lines: Vec<usize> = state
        .editor
        .input
        .split('\n')
        .map(|l| l.chars().count())
        .collect();
    let target = match up {
        true if line > 0 => line - 1,
        false if line + 1 < lines.len() => line + 1,
        _ => return false,
    };
    let start: usize = lines[..target].iter().map(|n| n + 1).sum();
    state.editor.cursor = start + col.min(lines[target]);
    true
}

/// Steps back (`back`) or forward through the history; past the newest the input is empty.
fn history_step(state: &mut State, back: bool) {
    if state.editor.history.is_empty() {
        return;
    }
    let last = state.editor.history.len() - 1;
    let pos = match (state.editor.history_pos, back) {
        (None, true) => Some(last),
        (None, false) => None,
        (Some(p), true) => Some(p.saturating_sub(1)),
        (Some(p), false) if p >= last => None,
        (Some(p), false) => Some(p + 1),
    };
    state.editor.history_pos = pos;
    state.editor.input = pos
        .map(|p| state.editor.history[p].clone())
        .unwrap_or_default();
    state.editor.cursor = state.editor.input.chars().count();
}

/// Rows a completion popup shows at most.
pub(super) const POPUP_MAX: usize = 100;

/// Tab: completes a slash command (an MCP prompt's `/mcp__{server}__{prompt}` too), a tool
/// name after `/call `, or an `@server:uri` resource mention (its server's resources loaded
/// first).
fn complete(state: &mut State) -> Vec<Effect> {
    let input = state.editor.input.clone();
    let last_start = input.rfind(char::is_whitespace).map_or(0, |i| {
        i + input[i..].chars().next().map_or(1, char::len_utf8)
    });
    let last = &input[last_start..];
    if last.starts_with('@') && state.editor.cursor == input.chars().count() {
        return complete_mention(state, &input, last_start);
    }
    if let Some(effects) = super::prompts::complete_argument(state) {
        return effects;
    }
    // Each candidate with what the popup shows beside it (a tool's server).
    let (prefix, candidates): (&str, Vec<(String, String)>) =
        if let Some(rest) = input.strip_prefix("/call ") {
            if rest.contains(' ') {
                return Vec::new();
            }
            (
                rest,
                state
                    .servers
                    .tools
                    .iter()
                    .filter(|t| t.name.starts_with(rest))
                    .map(|t| {
                        let server = t.server.as_deref().unwrap_or("built-in").to_owned();
                        (t.name.to_string(), server)
                    })
                    .collect(),
            )
        } else if input.starts_with('/') && !input.contains(' ') {
            (
                input.as_str(),
                COMMANDS
                    .iter()
                    .map(|(c, _)| *c)
                    .chain(super::prompts::commands(state))
                    .filter(|c| c.starts_with(input.as_str()))
                    .map(|c| (c.to_owned(), String::new()))
                    .collect(),
            )
        } else {
            return Vec::new();
        };
    let names: Vec<&str> = candidates.iter().map(|(n, _)| n.as_str()).collect();
    let head = if input.starts_with("/call ") {
        "/call "
    } else {
        ""
    };
    match names.as_slice() {
        [] => {}
        [one] => {
            state.editor.input = format!("{head}{one} ");
        }
        many => {
            let common = common_prefix(many);
            if common.len() > prefix.len() {
                state.editor.input = format!("{head}{common}");
            } else if head.is_empty() {
                // Commands: the `/` menu above the input already lists them.
            } else {
                // Tool names: a popup over the transcript until the next key.
                state.editor.popup = Some(candidates.into_iter().take(POPUP_MAX).collect());
            }
        }
    }
    state.editor.cursor = state.editor.input.chars().count();
    Vec::new()
}

/// Tab on an `@server:uri` mention (the input's last word, from `last_start`): completed as
/// far as its candidates agree, else they show in a popup.
fn complete_mention(state: &mut State, input: &str, last_start: usize) -> Vec<Effect> {
    let last = &input[last_start..];
    let found = match super::mentions::candidates(state, last) {
        Ok(c) => c,
        Err(effects) => return effects,
    };
    let many: Vec<&str> = found.iter().map(String::as_str).collect();
    let head = &input[..last_start];
    match many.as_slice() {
        [] => {}
        [one] if one.ends_with(':') => state.editor.input = format!("{head}{one}"),
        [one] => state.editor.input = format!("{head}{one} "),
        many => {
            let common = common_prefix(many);
            if common.len() > last.len() {
                state.editor.input = format!("{head}{common}");
            } else {
                state.editor.popup = Some(
                    many.iter()
                        .map(|m| ((*m).to_owned(), String::new()))
                        .collect(),
                );
            }
        }
    }
    state.editor.cursor = state.editor.input.chars().count();
    Vec::new()
}

/// The rows of the completion menu over the input: the `/` commands matching what is typed
/// (with what each does), or the candidates of an ambiguous Tab.
pub fn menu(state: &State) -> Vec<(String, String)> {
    if let Some(p) = &state.editor.popup {
        return p.clone();
    }
    let input = state.editor.input.as_str();
    if state.modal.is_some() || !input.starts_with('/') || input.contains(char::is_whitespace) {
        return Vec::new();
    }
    let prompts = state
        .servers
        .prompts
        .all()
        .filter(|c| c.command.starts_with(input))
        .map(|c| {
            (
                c.command.clone(),
                format!("MCP prompt {} {}", c.name, c.argument_hints("")),
            )
        });
    COMMANDS
        .iter()
        .filter(|(c, _)| c.starts_with(input))
        .map(|(c, what)| ((*c).to_owned(), (*what).to_owned()))
        .chain(prompts)
        .collect()
}

/// Rows of the menu shown at most (the rest is counted).
const MENU_ROWS: usize = 8;

/// Draws the completion menu just above `input_top` over `main` (nothing when it is empty).
pub(super) fn draw_menu(state: &State, frame: &mut Frame, main: Rect) {
    let items = menu(state);
    if items.is_empty() || main.height < 3 {
        return;
    }
    let shown = items.len().min(MENU_ROWS);
    let more = items.len() - shown;
    let rows = shown + usize::from(more > 0);
    let height = (rows as u16 + 2).min(main.height);
    let area = Rect {
        y: main.y + main.height - height,
        height,
        ..main
    };
    let name_w = items
        .iter()
        .take(shown)
        .map(|(n, _)| unicode_width::UnicodeWidthStr::width(n.as_str()))
        .max()
        .unwrap_or(0);
    let mut lines: Vec<Line> = items
        .iter()
        .take(shown)
        .map(|(name, what)| {
            Line::from(vec![
                Span::styled(
                    format!("{:<name_w$}  ", harness9_base::sanitize::clean_line(name)),
                    Style::new().fg(Color::Cyan),
                ),
                Span::styled(
                    harness9_base::sanitize::clean_line(what).into_owned(),
                    super::widgets::DIM,
                ),
            ])
        })
        .collect();
    if more > 0 {
        lines.push(Line::styled(format!("… {more} more"), super::widgets::DIM));
    }
    frame.render_widget(ratatui::widgets::Clear, area);
    let block = super::widgets::modal_block("Tab completes");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The longest prefix every word shares (`words` is not empty).
fn common_prefix<'a>(words: &[&'a str]) -> &'a str {
    let first = words[0];
    let mut end = first.len();
    for w in &words[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(w.chars())
                .find(|((_, a), b)| a != b)
                .map_or(end.min(w.len()), |((i, _), _)| i),
        );
    }
    &first[..end]
}

/// Enter: sends the input, trimmed, and keeps it in the history. A `/command` runs; other text
/// starts a turn, unless no model is configured or a turn is running.
fn submit(state: &mut State) -> Vec<Effect> {
    let line = state.editor.input.trim().to_owned();
    state.editor.input.clear();
    state.editor.cursor = 0;
    state.editor.history_pos = None;
    if line.is_empty() {
        return Vec::new();
    }
    if state.editor.history.last() != Some(&line) {
        state.editor.history.push(line.clone());
    }
    if line.starts_with('/') {
        return run(state, &line);
    }
    state.note(Entry::User(line.clone()));
    if state.model.label.is_none() {
        state.note(Entry::Error(format!(
            "no model is configured, so harness9 is an MCP console: use /call <tool> <json>, /mcp and /trace.\n{}",
            state.model.help
        )));
        return Vec::new();
    }
    if state.turn.busy {
        state.note(Entry::Error(
            "a turn is running; wait for it or press Esc to cancel it".to_owned(),
        ));
        return Vec::new();
    }
    state.turn.busy = true;
    let mentions = super::mentions::mentions(state, &line);
    if !mentions.is_empty() {
        return vec![Effect::SubmitWithResources {
            prompt: line,
            mentions,
        }];
    }
    vec![Effect::Submit(line)]
}

/// Draws the input box: a window of its lines that keeps the cursor's line (and column) in
/// view, and the terminal cursor when no modal is open.
pub(super) fn draw(state: &State, frame: &mut Frame, area: Rect) {
    const PROMPT: &str = "> ";
    let width = (area.width as usize).saturating_sub(PROMPT.len()).max(1);
    let (cur_line, cur_col) = state.cursor_line_col();
    let lines: Vec<&str> = state.editor.input.split('\n').collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{update, Event};
    use crate::tests::support::{key_event as key, typed, with_servers};

    #[test]
    fn typing_editing_and_history() {
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "helo");
        update(&mut s, key(KeyCode::Left));
        update(&mut s, key(KeyCode::Char('l')));
        assert_eq!(s.editor.input, "hello");
        assert_eq!(
            update(&mut s, key(KeyCode::Enter)),
            vec![Effect::Submit("hello".into())]
        );
        assert!(s.turn.busy);
        assert!(s.editor.input.is_empty());
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.editor.input, "hello");
        update(&mut s, key(KeyCode::Down));
        assert_eq!(s.editor.input, "");
        assert_eq!(update(&mut s, key(KeyCode::Esc)), vec![Effect::CancelTurn]);
    }

    #[test]
    fn multi_line_input_alt_enter_ctrl_j_paste_and_line_moves() {
        let with = |code, m| Event::Key(KeyEvent::new(code, m));
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "first");
        update(&mut s, with(KeyCode::Enter, KeyModifiers::ALT));
        typed(&mut s, "second line");
        update(&mut s, with(KeyCode::Char('j'), KeyModifiers::CONTROL));
        typed(&mut s, "3");
        assert_eq!(s.editor.input, "first\nsecond line\n3");
        assert_eq!((s.input_rows(), s.cursor_line_col()), (3, (2, 1)));
        // Up keeps the column where the line allows; Home and End are line-wise.
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.cursor_line_col(), (1, 1));
        update(&mut s, key(KeyCode::End));
        assert_eq!(s.cursor_line_col(), (1, 11));
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.cursor_line_col(), (0, 5));
        update(&mut s, key(KeyCode::Home));
        assert_eq!(s.cursor_line_col(), (0, 0));
        // Past the last line, Down goes to history (empty here: nothing happens).
        update(&mut s, key(KeyCode::Down));
        update(&mut s, key(KeyCode::Down));
        update(&mut s, key(KeyCode::Down));
        assert_eq!(s.cursor_line_col().0, 2);
        assert_eq!(s.editor.input, "first\nsecond line\n3");
        // Enter sends all of it; the history keeps it whole.
        assert_eq!(
            update(&mut s, key(KeyCode::Enter)),
            vec![Effect::Submit("first\nsecond line\n3".into())]
        );
        update(&mut s, Event::TurnDone(Ok("done".into())));
        // Up on a one-line (empty) input is history.
        update(&mut s, key(KeyCode::Up));
        assert_eq!(s.editor.input, "first\nsecond line\n3");

        // A paste keeps its lines (CRLF and CR become LF) and its escape sequences go.
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        update(&mut s, Event::Paste("a\r\nb\rc\x1b[31m!".into()));
        assert_eq!(s.editor.input, "a\nb\nc!");
        // The box grows to at most MAX_INPUT_ROWS rows, and the body shrinks with it.
        s.size = (80, 30);
        let body = s.body_rows();
        update(&mut s, Event::Paste("\n".repeat(20)));
        assert_eq!(s.input_rows(), MAX_INPUT_ROWS);
        assert_eq!(s.body_rows(), body - (MAX_INPUT_ROWS - 3));
    }

    #[test]
    fn without_a_model_input_explains_how_to_configure_one() {
        let mut s = State::new("x".into(), None, "set ANTHROPIC_API_KEY".into());
        typed(&mut s, "hi");
        assert!(update(&mut s, key(KeyCode::Enter)).is_empty());
        assert!(
            matches!(&s.transcript.entries[1], Entry::Error(e) if e.contains("ANTHROPIC_API_KEY") && e.contains("/call"))
        );
    }

    #[test]
    fn tab_completes_commands_and_tool_names() {
        let mut s = with_servers(&["everything"], 3);
        typed(&mut s, "/mc");
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(s.editor.input, "/mcp ");
        s.editor.input.clear();
        s.editor.cursor = 0;
        typed(&mut s, "/call mcp__every");
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(s.editor.input, "/call mcp__everything__t");
        let before = s.transcript.entries.len();
        update(&mut s, key(KeyCode::Tab));
        // Ambiguous: a popup, not transcript lines; the next key closes it.
        assert_eq!(s.transcript.entries.len(), before);
        let popup = s.editor.popup.clone().unwrap_or_default();
        assert!(
            popup.iter().any(|(n, _)| n == "mcp__everything__t2"),
            "{popup:?}"
        );
        update(&mut s, key(KeyCode::Char('1')));
        assert!(s.editor.popup.is_none());
    }
}
