//! The TUI's everyday keys and texts in tmux: Esc at a tool question cancels the turn, the resume
//! picker is this project's with every directory's a key away, the trust screen names a variable once.

use serde_json::json;

use super::common::temp_path;
use super::tui::{project, settled, tmux_required, Tmux, BOUND};

/// Esc at the first of two tool questions cancels the whole turn, as Ctrl+C does and as the
/// status line says: neither call runs, the model is not asked again, the transcript says
/// the turn was cancelled, and the next prompt starts afresh.
#[test]
fn esc_at_a_tool_question_cancels_the_turn() {
    tmux_required();
    let touch = |id: &str, file: &str| json!({"id": id, "name": "bash", "input": {"command": format!("touch {file}")}});
    let model = super::engine::Model::start(
        "tui-esc",
        json!({"steps": [
            {"text": "Touching two files.", "tool_calls": [touch("b1", "one"), touch("b2", "two")]},
            {"text": "Fresh start."}
        ]}),
    );
    let dir = project("tui-esc", |_| json!({}));
    let state = temp_path("tui-esc-state").display().to_string();
    let mut vars = model.env().to_vec();
    vars.push(("XDG_STATE_HOME", state.as_str()));
    let t = Tmux::start_with(&dir, &[], None, &vars);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["touch them", "Enter"]);
    let s = t.wait_for("the first of two questions", BOUND, |s| {
        s.contains("run this tool?") && s.contains("(1 of 2 waiting)") && settled(s)
    });
    assert!(s.contains("Esc cancels"), "the status line's promise:\n{s}");
    t.send_keys(&["Escape"]);
    let s = t.wait_for("the turn cancelled", BOUND, |s| {
        s.contains("the turn was cancelled") && !s.contains("working…")
    });
    assert!(!s.contains("run this tool?"), "a question stayed:\n{s}");
    assert!(!dir.join("one").exists(), "the call asked about ran");
    assert!(!dir.join("two").exists(), "the other call ran");
    // The next prompt gets the model's next reply: the cancelled turn asked it nothing more.
    t.send_keys(&["again", "Enter"]);
    t.wait_for("the next turn's answer", BOUND, |s| {
        s.contains("Fresh start.") && !s.contains("working…")
    });
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "{reqs:#?}");
    let last = &reqs[1]["body"]["messages"];
    assert_eq!(last.as_array().map(Vec::len), Some(1), "{last}");
    assert_eq!(last[0]["content"][0]["text"], "again", "{last}");
    assert!(!dir.join("one").exists() && !dir.join("two").exists());
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    let _ = std::fs::remove_dir_all(&state);
}

/// `--resume` without an id lists this project's saved conversations; `a` shows every
/// directory's, each row naming its directory.
#[test]
fn the_resume_picker_shows_this_projects_sessions_and_a_shows_every_directorys() {
    tmux_required();
    let model = super::engine::Model::start("tui-resume-dirs", json!({"steps": []}));
    let dir = project("tui-resume-dirs", |_| json!({}));
    let here = dir.canonicalize().expect("the project dir");
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).expect("the sessions dir");
    for (id, cwd, prompt) in [
        (
            "20260301-101500-a1b2c3",
            here.display().to_string(),
            "fix the parser here",
        ),
        (
            "20260302-101500-d4e5f6",
            "/srv/elsewhere".to_owned(),
            "tune the other thing",
        ),
    ] {
        let meta = json!({"kind": "meta", "id": id, "cwd": cwd, "model": "m", "created": 1});
        let said = json!({"kind": "message", "role": "user",
                          "content": [{"type": "text", "text": prompt}]});
        std::fs::write(
            sessions.join(format!("{id}.jsonl")),
            format!("{meta}\n{said}\n"),
        )
        .expect("a session file");
    }
    let t = Tmux::start_with(&dir, &["--resume"], None, &model.env());
    let s = t.wait_for("the picker of this project's", BOUND, |s| {
        s.contains("Resume a conversation: this project's") && s.contains("fix the parser here")
    });
    assert!(
        !s.contains("tune the other thing"),
        "another directory's:\n{s}"
    );
    t.send_keys(&["a"]);
    let s = t.wait_for("every directory's", BOUND, |s| {
        s.contains("every directory's") && s.contains("tune the other thing")
    });
    let row = s
        .lines()
        .find(|l| l.contains("20260302-101500-d4e5f6"))
        .unwrap_or_default();
    assert!(row.contains("/srv/elsewhere"), "{row}");
    t.send_keys(&["Escape"]);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// The trust screen names each variable once: an env key passing the user's own through shows
/// as `$KEY`, not again in a `uses` of its own.
#[test]
fn the_trust_screen_names_a_passed_through_variable_once() {
    tmux_required();
    let dir = project("tui-trust-once", |_| {
        json!({"gh": {"command": super::common::fixture_bin(), "args": [],
                      "env": {"GH_TOKEN": "${GH_TOKEN}"}}})
    });
    let approvals = dir.join("approvals.json");
    let t = Tmux::start_with(
        &dir,
        &[],
        None,
        &[
            ("HARNESS9_APPROVALS", &approvals.to_string_lossy()),
            ("GH_TOKEN", "tok-1"),
        ],
    );
    let s = t.wait_for("the trust screen", BOUND, |s| {
        s.contains("approve this project's MCP servers?") && s.contains("> gh") && settled(s)
    });
    assert!(s.contains("(env $GH_TOKEN)"), "{s}");
    assert_eq!(s.matches("GH_TOKEN").count(), 1, "{s}");
    assert!(!s.contains("tok-1"), "{s}");
    t.send_keys(&["n"]);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}
