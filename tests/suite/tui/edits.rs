//! The edit tools in the real TUI (tmux): the question box shows the change as a coloured
//! unified diff (read back with the pane's colours), the transcript keeps it after the call
//! ran, and an escape sequence in the model's text never reaches the terminal.

use serde_json::json;

use super::{settled, tmux, tmux_required, Tmux, BOUND};

impl Tmux {
    /// The pane with its colours as SGR sequences (`capture-pane -e`).
    fn styled_screen(&self) -> String {
        let out = tmux(
            &self.dir,
            &["capture-pane", "-p", "-e", "-t", &self.session],
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn pane_title(&self) -> String {
        let out = tmux(
            &self.dir,
            &[
                "display-message",
                "-p",
                "-t",
                &self.session,
                "#{pane_title}",
            ],
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

/// Whether the last SGR sequence before `text` on its line of `screen` sets foreground colour
/// `n` (1 red, 2 green; tmux writes `ESC[38;5;Nm`).
fn coloured(screen: &str, text: &str, n: u8) -> bool {
    screen.lines().any(|l| {
        l.find(text).is_some_and(|at| {
            let before = &l[..at];
            before
                .rfind("\u{1b}[")
                .is_some_and(|sgr| before[sgr..] == format!("\u{1b}[38;5;{n}m"))
        })
    })
}

#[test]
fn the_question_box_and_the_transcript_show_an_edits_diff_in_colour() {
    tmux_required();
    let dir = super::project("tui-edit", |_| json!({}));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    let patch = "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n-    println!(\"hello\");\n+    println!(\"patched\");\n*** Add File: NOTES.md\n+note one\n*** End Patch\n";
    let model = super::super::engine::Model::start(
        "tui-edit",
        json!({"steps": [
            {"text": "Editing.", "tool_calls": [{"id": "e1", "name": "edit_file", "input": {
                "path": "src/main.rs",
                "old_string": "    println!(\"hi\");",
                "new_string": "    println!(\"hello\");\n    // \u{1b}]2;pwned\u{7}tail"}}]},
            {"text": "Patching.", "expect": {"last_tool_result_contains": "edited src/main.rs: +2 -1"},
             "tool_calls": [{"id": "p1", "name": "apply_patch", "input": {"input": patch}}]},
            {"text": "All edited.", "expect": {"last_tool_result_contains": "added NOTES.md: +1"}}
        ]}),
    );
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["change the greeting", "Enter"]);
    let s = t.wait_for("the edit's question with its diff", BOUND, |s| {
        s.contains("run this tool?") && s.contains("-    println!(\"hi\");") && settled(s)
    });
    assert!(s.contains("src/main.rs"), "{s}");
    assert!(s.contains("+    println!(\"hello\");"), "{s}");
    // The escape sequence was taken out: its text shows, the terminal never got it.
    assert!(
        s.contains("+    // tail") || s.contains("+    // ]2;pwnedtail"),
        "{s}"
    );
    assert!(
        !s.contains("\"old_string\""),
        "the arguments as JSON instead of the diff: {s}"
    );
    let styled = t.styled_screen();
    assert!(coloured(&styled, "-    println!(\"hi\");", 1), "{styled}");
    assert!(
        coloured(&styled, "+    println!(\"hello\");", 2),
        "{styled}"
    );
    assert_ne!(t.pane_title(), "pwned");
    t.send_keys(&["y"]);
    let s = t.wait_for("the patch's question with its sections", BOUND, |s| {
        s.contains("update src/main.rs") && s.contains("add NOTES.md") && settled(s)
    });
    assert!(s.contains("@@ fn main() {"), "{s}");
    assert!(s.contains("+    println!(\"patched\");"), "{s}");
    // The edit that ran keeps its diff in the transcript above the question.
    assert!(s.contains("✓ edit_file"), "{s}");
    let styled = t.styled_screen();
    assert!(coloured(&styled, "+note one", 2), "{styled}");
    t.send_keys(&["y"]);
    let s = t.wait_for("the turn's end", BOUND, |s| s.contains("All edited."));
    assert!(s.contains("✓ apply_patch"), "{s}");
    assert!(
        s.contains("-    println!(\"hello\");"),
        "the transcript's diff: {s}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"patched\");\n    // \u{1b}]2;pwned\u{7}tail\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("NOTES.md")).unwrap(),
        "note one\n"
    );
    assert_ne!(t.pane_title(), "pwned");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}
