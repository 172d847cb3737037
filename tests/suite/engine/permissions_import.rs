//! `harness9 permissions import` through the real binary, with files in a temp `HOME`: Claude
//! Code's rules and Codex's sandbox mode go into the user's settings file (its comments and
//! other settings kept, 0600, nothing written on a dry run or when anything is wrong), and the
//! rules imported are the ones a `run -p` then obeys.

use super::*;

/// `harness9 permissions import ARGS` in `dir` (its `HOME` the test's).
fn import(dir: &Path, args: &[&str]) -> Out {
    let mut all = vec!["permissions", "import"];
    all.extend_from_slice(args);
    Run::start(harness9(dir), &all).finish(LIMIT)
}

/// The user's settings file of `dir`'s harness9.
fn user_settings(dir: &Path) -> PathBuf {
    home(dir).join(".config/harness9/config.toml")
}

#[test]
fn claude_code_rules_are_imported_into_the_user_file_and_obeyed() {
    let dir = project("perm-import-claude", Value::Null);
    let claude = home(&dir).join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({"model": "opus", "permissions": {
            "allow": ["Bash(touch imported:*)", "WebFetch(domain:example.com)", "mcp__fx",
                      "Bash(true)"],
            "deny": ["Read(./secret.txt)"],
            "defaultMode": "acceptEdits"}})
        .to_string(),
    )
    .unwrap();
    let settings = user_settings(&dir);
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let before = "# my own settings\nmax_steps = 20 # keep this\n\n[permissions]\nallow = [\n  \"bash(true)\",\n]\n";
    std::fs::write(&settings, before).unwrap();
    // The project's settings file is never written.
    let project_file = "[permissions]\ndeny = [\"bash(rm:*)\"]\n";
    std::fs::write(dir.join("harness9.toml"), project_file).unwrap();

    let out = import(&dir, &["--from", "claude-code", "--dry-run"]);
    out.ok();
    assert!(
        out.stdout
            .contains("would add allow Bash(touch imported:*)"),
        "{out}"
    );
    assert!(out.stdout.contains("nothing written"), "{out}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);

    let out = import(&dir, &["--from", "claude-code"]);
    out.ok();
    for line in [
        "added deny  Read(./secret.txt)",
        "added allow Bash(touch imported:*)",
        "added allow mcp__fx",
        "already there: allow Bash(true)",
        "not imported: allow WebFetch(domain:example.com): harness9 has no WebFetch tool",
        "not written: defaultMode \"acceptEdits\" is `--permission-mode accept-edits`",
    ] {
        assert!(out.stdout.contains(line), "{line:?}\n{out}");
    }
    let after = std::fs::read_to_string(&settings).unwrap();
    assert_eq!(
        after,
        "# my own settings\nmax_steps = 20 # keep this\n\n[permissions]\ndeny = [\"Read(./secret.txt)\"]\nallow = [\n  \"bash(true)\",\n  \"Bash(touch imported:*)\",\n  \"mcp__fx\",\n]\n"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&settings).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::read_to_string(dir.join("harness9.toml")).unwrap(),
        project_file
    );
    // Again: nothing new, nothing written.
    let out = import(&dir, &["--from", "claude-code"]);
    out.ok();
    assert!(out.stdout.contains("nothing to add"), "{out}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), after);

    // The rules are in force: the allowed command runs unasked in `run -p`, the denied read
    // is refused, naming the imported rule.
    std::fs::write(dir.join("secret.txt"), "s3cret").unwrap();
    let model = Model::start(
        "perm-import-claude",
        json!({"steps": [
            {"tool_calls": [call("b1", "bash", json!({"command": "touch imported"}))]},
            {"tool_calls": [call("r1", "read_file", json!({"path": "secret.txt"}))]},
            {"text": "done"}
        ]}),
    );
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("tool_result", "b1")["is_error"], false, "{out}");
    assert!(dir.join("imported").exists(), "{out}");
    let refused = out.event("tool_refused", "r1");
    assert!(
        refused["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("Read(./secret.txt)"),
        "{refused}"
    );
    assert!(!out.stdout.contains("s3cret"), "{out}");

    // A repository's own Claude Code settings may be imported on purpose, and are said to be
    // a repository's: their rules now apply everywhere.
    std::fs::create_dir_all(dir.join(".claude")).unwrap();
    std::fs::write(
        dir.join(".claude/settings.json"),
        json!({"permissions": {"allow": ["Bash(touch repo:*)"]}}).to_string(),
    )
    .unwrap();
    let out = import(
        &dir,
        &["--from", "claude-code", "--file", ".claude/settings.json"],
    );
    out.ok();
    assert!(
        out.stdout.contains("added allow Bash(touch repo:*)"),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("is inside this directory, not your own settings"),
        "{out}"
    );
}

#[test]
fn codex_sandbox_mode_becomes_the_shell_and_a_set_shell_is_kept() {
    let dir = project("perm-import-codex", Value::Null);
    let codex = dir.with_file_name("perm-import-codex-codexhome");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(
        codex.join("config.toml"),
        "model = \"gpt-5\"\napproval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n\n[sandbox_workspace_write]\nnetwork_access = true\n",
    )
    .unwrap();
    let mut c = harness9(&dir);
    c.env("CODEX_HOME", &codex);
    let out = Run::start(c, &["permissions", "import", "--from", "codex"]).finish(LIMIT);
    out.ok();
    assert!(out.stdout.contains("added shell = \"network\""), "{out}");
    assert!(out.stdout.contains("`--permission-mode bypass`"), "{out}");
    let settings = user_settings(&dir);
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "[permissions]\nshell = \"network\"\n"
    );
    // A shell the user set is theirs: kept, and said.
    std::fs::write(&settings, "[permissions]\nshell = \"read-only\"\n").unwrap();
    let mut c = harness9(&dir);
    c.env("CODEX_HOME", &codex);
    let out = Run::start(c, &["permissions", "import", "--from", "codex"]).finish(LIMIT);
    out.ok();
    assert!(out.stdout.contains("kept shell = \"read-only\""), "{out}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "[permissions]\nshell = \"read-only\"\n"
    );
}

#[test]
fn anything_wrong_writes_nothing_and_says_where() {
    let dir = project("perm-import-bad", Value::Null);
    let claude = home(&dir).join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    let source = claude.join("settings.json");
    let settings = user_settings(&dir);
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let good = json!({"permissions": {"allow": ["Bash(ls:*)"]}}).to_string();

    // The other agent's file does not parse.
    std::fs::write(&source, "{\"permissions\": ").unwrap();
    let out = import(&dir, &["--from", "claude-code"]);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        out.stderr
            .contains(&format!("{}: not valid JSON", source.display())),
        "{out}"
    );
    assert!(!settings.exists());

    // The user's file does not parse, or says something harness9 does not read.
    std::fs::write(&source, &good).unwrap();
    for (text, at) in [
        ("[permissions]\nallow = [\n", ":2:"),
        ("model = \"x\"\n", ":1:"),
        ("[permissions]\nallow = [\"bash(\"]\n", ":2:"),
    ] {
        std::fs::write(&settings, text).unwrap();
        let out = import(&dir, &["--from", "claude-code"]);
        assert_eq!(out.code, Some(2), "{text:?}\n{out}");
        assert!(
            out.stderr.contains(&format!("{}{at}", settings.display())),
            "{text:?}\n{out}"
        );
        assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    }

    // Never a project's settings file, never through a link.
    std::fs::remove_file(&settings).unwrap();
    let out = import(
        &dir,
        &["--from", "claude-code", "--settings", "harness9.toml"],
    );
    assert_eq!(out.code, Some(2), "{out}");
    assert!(out.stderr.contains("this project's settings file"), "{out}");
    assert!(!dir.join("harness9.toml").exists());
    let elsewhere = dir.with_file_name("perm-import-bad-target.toml");
    std::fs::write(&elsewhere, "").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &settings).unwrap();
    let out = import(&dir, &["--from", "claude-code"]);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(out.stderr.contains("symbolic link"), "{out}");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");
    // As the message says, a dry run still shows what to add.
    let out = import(&dir, &["--from", "claude-code", "--dry-run"]);
    out.ok();
    assert!(out.stdout.contains("would add allow Bash(ls:*)"), "{out}");
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "");

    // A missing file names where it was looked for and the flag.
    let out = import(&dir, &["--from", "codex"]);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        out.stderr.contains(".codex/config.toml") && out.stderr.contains("--file"),
        "{out}"
    );
}
