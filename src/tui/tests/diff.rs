//! The edit tools' diffs on screen: the question box shows the change (coloured, sanitized)
//! instead of the JSON arguments, the transcript keeps it under the call that ran.

use std::time::Duration;

use crossterm::event::KeyCode;
use harness9_agent::engine::EngineEvent;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;

use crate::state::{update, Approval, Event};
use crate::tests::support::*;
use crate::view::view;

/// The screen as text and the foreground colour of the first cell of each row that starts
/// with `-` or `+` after the box's border and indent.
fn draw(s: &mut crate::state::State, w: u16, h: u16) -> (String, Vec<(String, Color)>) {
    s.size = (w, h);
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view(s, f)).expect("draw");
    let buf = t.backend().buffer().clone();
    let mut marks = Vec::new();
    for y in 0..h {
        let row: String = (0..w).map(|x| buf[(x, y)].symbol().to_owned()).collect();
        if let Some(x) = row
            .find(['-', '+'])
            .filter(|&x| row[..x].trim_matches(['│', ' ']).is_empty())
        {
            let col = row[..x].chars().count() as u16;
            marks.push((
                row.trim().trim_matches('│').trim().to_owned(),
                buf[(col, y)].fg,
            ));
        }
    }
    (t.backend().to_string(), marks)
}

#[test]
fn an_edit_question_shows_its_diff_in_colour_and_the_transcript_keeps_it() {
    let mut s = state_with(vec![], vec![]);
    s.model.label = Some("anthropic claude".into());
    typed(&mut s, "fix it");
    key(&mut s, KeyCode::Enter);
    let args = serde_json::json!({
        "path": "src/main.rs",
        "old_string": "fn main() {\n    old();\n}\n",
        "new_string": "fn main() {\n    new(\"\u{1b}[2J\u{1b}]0;t\u{7}\");\n}\n",
    });
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolStarted {
            id: "e1".into(),
            name: "edit_file".into(),
            arguments: args.clone(),
        }),
    );
    let mut asked = Approval::new(1, "edit_file".into(), args.to_string());
    asked.call = Some("e1".into());
    update(&mut s, Event::ApprovalAsked(asked));
    settle(&mut s);
    let (screen, marks) = draw(&mut s, 70, 20);
    assert!(!screen.contains("old_string"), "{screen}");
    assert!(!screen.contains('\u{1b}'), "{screen}");
    assert_eq!(
        marks,
        [
            ("-    old();".to_owned(), Color::Red),
            ("+    new(\"\");".to_owned(), Color::Green)
        ],
        "{screen}"
    );
    insta::assert_snapshot!(screen);

    // It ran: the transcript shows the diff under the call's line.
    key(&mut s, KeyCode::Char('y'));
    update(
        &mut s,
        Event::Engine(EngineEvent::ToolFinished {
            id: "e1".into(),
            name: "edit_file".into(),
            is_error: false,
            elapsed: Duration::from_millis(3),
            output: "edited src/main.rs: +1 -1".into(),
            output_bytes: 25,
            spilled: None,
        }),
    );
    let (screen, marks) = draw(&mut s, 70, 14);
    assert!(screen.contains("✓ edit_file"), "{screen}");
    assert_eq!(marks.len(), 2, "{screen}");
    assert_eq!(marks[0].1, Color::Red, "{screen}");
}
