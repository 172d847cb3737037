//! Rules in the real TUI (tmux): an "always" answer covers the calls that come after it, not
//! the other calls of the same reply that are waiting unseen behind the question.

use serde_json::json;

use super::common::{fixture, harness9_in, output_within, stdio_json, without_user_env};
use super::tui::{bar, project, settled, tmux_required, Tmux, BOUND};

/// The model's reply calls `mkdir -p d1` and `mkdir -p d2` at once; both wait. "Always"
/// (`bash(mkdir:*)`) on the first runs it alone: the second, which the rule would cover, is
/// still asked, and a no keeps it from running.
#[test]
fn an_always_answer_does_not_run_the_other_waiting_calls() {
    tmux_required();
    let calls = [
        json!({"id": "m1", "name": "bash", "input": {"command": "mkdir -p d1"}}),
        json!({"id": "m2", "name": "bash", "input": {"command": "mkdir -p d2"}}),
    ];
    let model = super::engine::Model::start(
        "tui-always-queued",
        json!({"steps": [
            {"text": "Making both.", "tool_calls": calls},
            {"text": "Finished."}
        ]}),
    );
    let dir = project("tui-always-queued", |_| json!({}));
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["go", "Enter"]);
    let s = t.wait_for("both calls waiting", BOUND, |s| {
        s.contains("run this tool?") && s.contains("(1 of 2 waiting)") && settled(s)
    });
    assert!(s.contains("always bash(mkdir:*)"), "{s}");
    t.send_keys(&["a"]);
    let made = |d: &str| dir.join(d).is_dir();
    assert!(
        super::common::poll_until(BOUND, std::time::Duration::from_millis(20), || made("d1")
            || made("d2")),
        "the answered call did not run"
    );
    let s = t.wait_for("the other call, asked on its own", BOUND, |s| {
        s.contains("run this tool?") && !s.contains("waiting)") && settled(s)
    });
    assert!(
        made("d1") != made("d2"),
        "the unseen waiting call ran on the other's always:\n{s}"
    );
    t.send_keys(&["n"]);
    // The turn's summary line: the turn is over (a Ctrl+C before it would cancel the turn).
    t.wait_for("the turn's end", BOUND, |s| {
        s.contains("Finished.") && s.contains("model calls")
    });
    assert!(made("d1") != made("d2"), "the declined call ran");
    // The input is empty: one Ctrl+C quits.
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// C9: a deny rule that names no built-in tool and no configured server is shown in the TUI's
/// notices at start, naming the rule and its file and line.
#[test]
fn a_deny_rule_that_denies_nothing_is_shown_at_start() {
    tmux_required();
    let dir = project("tui-unmatched", |_| json!({}));
    std::fs::write(
        dir.join("harness9.toml"),
        "[permissions]\ndeny = [\n  \"bash_exec\",\n  \"Bash(rm:*)\",\n]\n",
    )
    .unwrap();
    let t = Tmux::start_with(&dir, &[], None, &[]);
    let s = t.wait_for("the warning", BOUND, |s| {
        let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        flat.contains("harness9.toml:3: deny rule \"bash_exec\" denies nothing")
    });
    // `Bash(rm:*)` is bash's rule: nothing to warn about.
    assert!(!s.contains("Bash(rm:*)"), "{s}");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// The user's own call of a tool a deny rule names is refused in the same words by both front
/// ends: `mcp call` on stderr, the TUI's `/call` in its tool entry (`app::user_call`).
#[test]
fn a_denied_call_by_hand_is_refused_in_the_same_words_by_both_front_ends() {
    tmux_required();
    let dir = project(
        "tui-denied-call",
        |_| json!({"f": stdio_json(fixture("f", &[]))}),
    );
    std::fs::write(
        dir.join("harness9.toml"),
        "[permissions]\ndeny = [\"mcp__f__write\"]\n",
    )
    .unwrap();
    let written = dir.join("written");
    let args = json!({"path": written.display().to_string(), "text": "x"}).to_string();
    let mut cli = harness9_in(&dir);
    without_user_env(&mut cli).args(["mcp", "call", "f", "write", "--args", &args]);
    let out = output_within(cli, None, BOUND);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let words = stderr
        .lines()
        .find_map(|l| l.strip_prefix("harness9: "))
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    assert!(
        words.starts_with("the call of \"mcp__f__write\" is refused by your deny rule")
            && words.ends_with("; remove that rule to call it"),
        "{words}"
    );
    let t = Tmux::start_with(&dir, &[], None, &[]);
    t.wait_for("f connected", BOUND, |s| bar(s).contains("f ●"));
    t.send_keys(&[&format!("/call mcp__f__write {args}"), "Enter"]);
    // The entry wraps the words over lines: compared without the whitespace.
    let bare = |s: &str| s.split_whitespace().collect::<String>();
    let want = bare(words);
    t.wait_for("the same words in the TUI", BOUND, |s| {
        bare(s).contains(&want)
    });
    assert!(!written.exists(), "the denied call ran");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}
