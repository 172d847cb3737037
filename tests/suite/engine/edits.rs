//! The edit tools end to end through `harness9 run -p` (README "Editing files"): the
//! scripted model calls `edit_file` and `apply_patch`, the files change on disk, stdout says
//! what changed a line per file, and a path a `write_file` deny rule covers stays untouched.

use super::*;

fn patch(body: &str) -> Value {
    json!({"input": format!("*** Begin Patch\n{body}\n*** End Patch\n")})
}

/// A project with `src/main.rs`, `notes.txt`, `old.txt`, `secrets/key`.
fn files(tag: &str) -> PathBuf {
    let dir = project(tag, Value::Null);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "one\r\ntwo\r\n").unwrap();
    std::fs::write(dir.join("old.txt"), "bye\n").unwrap();
    std::fs::write(dir.join("secrets/key"), "k1\n").unwrap();
    dir
}

#[test]
fn run_p_edits_and_patches_files_and_prints_a_line_per_changed_file() {
    let dir = files("edit-run");
    let model = Model::start(
        "edit-run",
        json!({"steps": [
            {"tool_calls": [call("e", "edit_file", json!({
                "path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"hello\""}))]},
            {"tool_calls": [call("p", "apply_patch", patch(
                "*** Add File: docs/a.md\n+# A\n*** Update File: notes.txt\n*** Move to: doc/notes.txt\n@@\n one\n-two\n+2\n+3\n*** Delete File: old.txt"))],
             "expect": {"last_tool_result_contains": "edited src/main.rs: +1 -1"}},
            {"tool_calls": [
                call("s1", "edit_file", json!({"path": "src/../secrets/key", "old_string": "k1", "new_string": "k2"})),
                call("s2", "apply_patch", patch("*** Update File: src/main.rs\n*** Move to: secrets/main.rs\n@@\n-fn main() {\n+fn main2() {")),
            ], "expect": {"last_tool_result_contains": "moved notes.txt -> doc/notes.txt: +2 -1"}},
            {"text": "all done", "expect": {"last_tool_result_contains": "write_file(secrets/**)"}}
        ]}),
    );
    let args = [
        "run",
        "-p",
        "tidy up",
        "--permission-mode",
        "accept-edits",
        "--disallowed-tools",
        "write_file(secrets/**)",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(
        out.stdout,
        "edited src/main.rs: +1 -1\nadded docs/a.md: +1\nmoved notes.txt -> doc/notes.txt: +2 -1\ndeleted old.txt: -1\nall done",
        "{out}"
    );
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap_or_default();
    assert_eq!(
        read("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n"
    );
    assert_eq!(read("docs/a.md"), "# A\n");
    assert_eq!(read("doc/notes.txt"), "one\r\n2\r\n3\r\n", "CRLF kept");
    assert!(!dir.join("notes.txt").exists() && !dir.join("old.txt").exists());
    // The deny rule on write_file stopped both edit tools, the Move target included.
    assert_eq!(read("secrets/key"), "k1\n");
    assert!(!dir.join("secrets/main.rs").exists());
    for tool in ["edit_file", "apply_patch"] {
        assert!(
            out.stderr.contains(&format!("[permission] {tool} refused")),
            "{out}"
        );
    }
}

#[test]
fn run_json_carries_the_changes_and_a_hunk_that_does_not_apply_writes_nothing() {
    let dir = files("edit-json");
    let model = Model::start(
        "edit-json",
        json!({"steps": [
            {"tool_calls": [call("bad", "apply_patch", patch(
                "*** Update File: src/main.rs\n@@\n-fn main() {\n+fn start() {\n*** Update File: old.txt\n@@\n-hello\n+bye"))]},
            {"tool_calls": [call("good", "edit_file", json!({
                "path": "old.txt", "old_string": "bye", "new_string": "ciao"}))],
             "expect": {"last_tool_result_contains": "hunk 1 of old.txt (from \"hello\") does not apply"}},
            {"text": "ok"}
        ]}),
    );
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--permission-mode",
        "accept-edits",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let bad = out.event("tool_result", "bad");
    assert_eq!(bad["is_error"], true, "{bad}");
    assert!(bad.get("changes").is_none(), "{bad}");
    assert_eq!(
        std::fs::read_to_string(dir.join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"hi\");\n}\n",
        "nothing written"
    );
    let good = out.event("tool_result", "good");
    assert_eq!(good["changes"], json!(["edited old.txt: +1 -1"]), "{good}");
}

/// A real git repository, `--permission-mode bypass`: a patch that writes a hook is refused
/// whole, a link into a denied directory is no way around the rule, and a file changed on disk
/// (by the model's own `bash`) after the model read it is refused until it reads it again.
#[test]
fn no_hook_no_link_around_a_deny_and_a_stale_file_is_read_again() {
    let dir = files("edit-guard");
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&dir)
        .status()
        .expect("git");
    assert!(git.success());
    std::os::unix::fs::symlink("secrets", dir.join("lnk")).unwrap();
    let model = Model::start(
        "edit-guard",
        json!({"steps": [
            {"tool_calls": [call("hook", "apply_patch", patch(
                "*** Update File: old.txt\n@@\n-bye\n+ciao\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n+touch pwned"))]},
            {"tool_calls": [call("lnk", "edit_file", json!({"path": "lnk/key", "old_string": "k1", "new_string": "k2"}))],
             "expect": {"last_tool_result_contains": "inside a .git directory"}},
            {"tool_calls": [call("read", "read_file", json!({"path": "src/main.rs"}))],
             "expect": {"last_tool_result_contains": "write_file(secrets/**)"}},
            {"tool_calls": [call("sh", "bash", json!({"command": "printf '// touched\\n' >> src/main.rs"}))]},
            {"tool_calls": [call("stale", "edit_file", json!({
                "path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"yo\""}))]},
            {"tool_calls": [call("again", "read_file", json!({"path": "src/main.rs"}))],
             "expect": {"last_tool_result_contains": "changed on disk since you last read or wrote it"}},
            {"tool_calls": [call("fresh", "edit_file", json!({
                "path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"yo\""}))]},
            {"text": "done", "expect": {"last_tool_result_contains": "edited src/main.rs: +1 -1"}}
        ]}),
    );
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--permission-mode",
        "bypass",
        "--disallowed-tools",
        "write_file(secrets/**)",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert!(!dir.join(".git/hooks/pre-commit").exists(), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.join("old.txt")).unwrap(),
        "bye\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("secrets/key")).unwrap(),
        "k1\n"
    );
    out.event("tool_refused", "lnk");
    assert_eq!(
        std::fs::read_to_string(dir.join("src/main.rs")).unwrap(),
        "fn main() {\n    println!(\"yo\");\n}\n// touched\n"
    );
}
