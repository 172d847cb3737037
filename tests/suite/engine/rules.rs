//! Rules mean exactly what they say, end to end through `harness9 run -p` with the scripted
//! model (README "Permissions"): a `bash` allow rule vouches only for command lines the
//! lexer fully understands, and a deny rule finds a command behind wrappers.

use super::*;

/// Runs `harness9 run -p` in a fresh project with `flags`, the model calling `bash` once with
/// each of `commands` (one call per step), and returns the project and the run's output.
fn bash_calls(tag: &str, flags: &[&str], commands: &[&str]) -> (PathBuf, Out) {
    let dir = project(tag, Value::Null);
    let mut steps: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(
            |(i, c)| json!({"tool_calls": [call(&format!("c{i}"), "bash", json!({"command": c}))]}),
        )
        .collect();
    steps.push(json!({"text": "done"}));
    let model = Model::start(tag, json!({ "steps": steps }));
    let mut args = vec!["run", "-p", "go", "--json"];
    args.extend_from_slice(flags);
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "done", "{out}");
    (dir, out)
}

/// C6: with `--allowed-tools 'bash(touch plain:*)'`, the plain command runs and no command
/// hidden behind a quoting bash reads differently (`$'\''`, a comment whose quote spans a
/// newline, a group, a substitution, a heredoc, a line continuation) runs: each is not
/// understood, so it asks, which `run -p` refuses.
#[test]
fn an_allowed_prefix_runs_only_the_plain_command_not_one_hidden_behind_it() {
    let hidden = [
        "touch plain $'\\'' ; touch hidden-ansi #'",
        "touch plain #'\ntouch hidden-comment #'",
        "touch plain && { touch hidden-group; }",
        "touch plain $(touch hidden-subst)",
        "touch plain <<EOF\nEOF\ntouch hidden-heredoc",
        "touch plain \\\n; touch hidden-continued",
    ];
    let mut commands = vec!["touch plain"];
    commands.extend(hidden);
    let (dir, out) = bash_calls(
        "rules-hidden",
        &["--allowed-tools", "bash(touch plain:*)"],
        &commands,
    );
    assert!(dir.join("plain").exists(), "the allowed command ran: {out}");
    assert_eq!(out.event("tool_result", "c0")["is_error"], false, "{out}");
    for (i, c) in hidden.iter().enumerate() {
        let id = format!("c{}", i + 1);
        assert!(
            out.event("tool_refused", &id)["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("this run cannot ask"),
            "{c:?} was not refused\n{out}"
        );
    }
    let made: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hidden"))
        .collect();
    assert!(made.is_empty(), "hidden commands ran: {made:?}\n{out}");
}

/// C6: `--disallowed-tools 'bash(rm:*)'` beside `--allowed-tools bash` refuses `rm` behind
/// `env`, `command`, `sh -c`, `eval`, `xargs`, a path and a backslash; `ls` still runs.
#[test]
fn a_deny_rule_finds_the_command_behind_wrappers() {
    let dir = project("rules-wrapped", Value::Null);
    let victims = [
        "env rm victim0",
        "command rm victim1",
        "sh -c 'rm victim2'",
        "eval 'rm victim3'",
        "echo victim4 | xargs rm",
        "/bin/rm victim5",
        "\\rm victim6",
        "timeout 5 rm victim7",
    ];
    for i in 0..victims.len() {
        std::fs::write(dir.join(format!("victim{i}")), "x").unwrap();
    }
    let mut steps: Vec<Value> = victims
        .iter()
        .enumerate()
        .map(
            |(i, c)| json!({"tool_calls": [call(&format!("c{i}"), "bash", json!({"command": c}))]}),
        )
        .collect();
    steps.push(json!({"tool_calls": [call("ls", "bash", json!({"command": "touch still-runs"}))]}));
    steps.push(json!({"text": "done"}));
    let model = Model::start("rules-wrapped", json!({ "steps": steps }));
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "bash",
        "--disallowed-tools",
        "bash(rm:*)",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    for (i, c) in victims.iter().enumerate() {
        assert!(
            dir.join(format!("victim{i}")).exists(),
            "{c:?} ran past the deny rule\n{out}"
        );
        let refused = out.event("tool_refused", &format!("c{i}"));
        assert!(
            refused["rule"]
                .as_str()
                .unwrap_or_default()
                .starts_with("deny rule \"bash(rm:*)\""),
            "{refused}"
        );
    }
    assert!(dir.join("still-runs").exists(), "{out}");
}

/// C9: `--disallowed-tools 'Bash,mcp__web'` means what it means in Claude Code: bash is
/// refused (beside `--allowed-tools bash`), and `mcp__web`, which names no configured
/// server, is warned about on stderr naming the flag; a settings file's `deny = ["bash_exec"]`
/// is warned about naming its file and line; `Bash(touch ok:*)` allows as `bash(...)` does.
#[test]
fn claude_code_spellings_deny_and_a_rule_that_denies_nothing_is_named() {
    let dir = project("rules-cc", Value::Null);
    let config = home(&dir).join(".config/harness9");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[permissions]\ndeny = [\n  \"bash_exec\",\n]\n",
    )
    .unwrap();
    let model = Model::start(
        "rules-cc",
        json!({"steps": [
            {"tool_calls": [call("b", "bash", json!({"command": "touch denied"}))]},
            {"text": "done"}
        ]}),
    );
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "bash",
        "--disallowed-tools",
        "Bash,mcp__web",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert!(!dir.join("denied").exists(), "{out}");
    let refused = out.event("tool_refused", "b");
    assert!(
        refused["rule"]
            .as_str()
            .unwrap_or_default()
            .starts_with("deny rule \"Bash\" (--disallowed-tools)"),
        "{refused}"
    );
    assert!(
        out.stderr.contains(
            "--disallowed-tools: deny rule \"mcp__web\" denies nothing: it matches no built-in tool"
        ),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("config.toml:3: deny rule \"bash_exec\" denies nothing"),
        "{out}"
    );

    // `Bash(touch ok:*)` allows exactly that; an allow rule of a tool harness9 lacks is a
    // usage error naming the flag.
    let (dir, out) = bash_calls(
        "rules-cc-allow",
        &["--allowed-tools", "Bash(touch ok:*)"],
        &["touch ok"],
    );
    assert!(dir.join("ok").exists(), "{out}");
    let args = ["run", "-p", "go", "--allowed-tools", "WebFetch"];
    let out = Run::start(harness9(&dir), &args).finish(LIMIT);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        out.stderr.contains(
            "--allowed-tools: malformed rule \"WebFetch\": harness9 has no WebFetch tool"
        ),
        "{out}"
    );
}

/// C7: paths are checked as the OS opens them. A project holds `dir/link` pointing into a
/// directory outside it whose files a deny rule refuses, a link `leak` to one of those
/// files, and `private.txt` a deny rule names. `read_file dir/link/../secret` (lexically
/// `dir/secret`, opened through the link) is refused; `grep` over the project reads neither
/// the linked nor the denied file; under `accept-edits`, `write_file` of
/// `.git/hooks/pre-commit` is refused while `src/a.txt` is written.
#[test]
fn paths_are_checked_as_opened_and_grep_skips_denied_files_and_links_out() {
    let dir = project("rules-paths", Value::Null);
    let outside = home(&dir).with_file_name(format!(
        "{}-outside",
        dir.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("secret"), "TOPSECRET-outside\n").unwrap();
    std::fs::create_dir_all(dir.join("dir")).unwrap();
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    std::os::unix::fs::symlink(outside.join("sub"), dir.join("dir/link")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), dir.join("leak")).unwrap();
    std::fs::write(dir.join("private.txt"), "TOPSECRET-private\n").unwrap();
    std::fs::write(dir.join("open.txt"), "TOPSECRET-open\n").unwrap();
    let deny = format!("read_file({}/**),read_file(private.txt)", outside.display());
    let model = Model::start(
        "rules-paths",
        json!({"steps": [
            {"tool_calls": [call("r", "read_file", json!({"path": "dir/link/../secret"}))]},
            {"tool_calls": [call("g", "grep", json!({"pattern": "TOPSECRET"}))]},
            {"tool_calls": [call("l", "list_dir", json!({}))]},
            {"tool_calls": [call("h", "write_file",
                json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}))]},
            {"tool_calls": [call("s", "write_file", json!({"path": "src/a.txt", "content": "ok"}))]},
            {"text": "done"}
        ]}),
    );
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--permission-mode",
        "accept-edits",
        "--disallowed-tools",
        &deny,
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let refused = out.event("tool_refused", "r");
    assert!(
        refused["rule"]
            .as_str()
            .unwrap_or_default()
            .starts_with("deny rule \"read_file("),
        "{refused}"
    );
    assert!(!out.stdout.contains("TOPSECRET-outside"), "{out}");
    let grep = out.event("tool_result", "g");
    let text = grep["output"].as_str().unwrap_or_default();
    assert!(text.contains("open.txt:1: TOPSECRET-open"), "{grep}");
    assert!(!text.contains("TOPSECRET-private"), "{grep}");
    assert!(text.contains("1 files left out: a deny rule"), "{grep}");
    // `leak` and `dir/link` lead out of the project.
    assert!(text.contains("2 symbolic links left out"), "{grep}");
    let list = out.event("tool_result", "l");
    let text = list["output"].as_str().unwrap_or_default();
    assert!(
        text.contains("open.txt") && !text.contains("private.txt"),
        "{list}"
    );
    // accept-edits does not run a write into .git unasked (run -p refuses it).
    let hook = out.event("tool_result", "h");
    assert_eq!(hook["is_error"], true, "{hook}");
    assert!(!dir.join(".git/hooks/pre-commit").exists(), "{out}");
    assert_eq!(out.event("tool_result", "s")["is_error"], false, "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.join("src/a.txt")).unwrap_or_default(),
        "ok"
    );

    // Even bypass: write_file itself never writes inside .git, also through a link.
    std::os::unix::fs::symlink(dir.join(".git"), dir.join("g")).unwrap();
    let model = Model::start(
        "rules-paths-bypass",
        json!({"steps": [
            {"tool_calls": [call("h", "write_file",
                json!({"path": "g/hooks/pre-commit", "content": "#!/bin/sh\n"}))]},
            {"text": "done"}
        ]}),
    );
    let args = ["run", "-p", "go", "--json", "--permission-mode", "bypass"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let hook = out.event("tool_result", "h");
    assert_eq!(hook["is_error"], true, "{hook}");
    assert!(
        hook["output"]
            .as_str()
            .unwrap_or_default()
            .contains("is inside a .git directory"),
        "{hook}"
    );
    assert!(!dir.join(".git/hooks/pre-commit").exists(), "{out}");
}
