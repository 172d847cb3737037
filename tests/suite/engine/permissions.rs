//! Permissions end to end through `harness9 run -p` and `harness9 mcp call` (README
//! "Permissions"): what runs, what is refused headless and why, the flags, the modes, the
//! rules of the settings files, with the scripted model and the fixture server.

use super::*;

/// A project with the fixture server as `f` (its `write` tool is unannotated) whose record
/// shows every call it got; the model calls `bash` (creating `made-by-bash`) and `f`'s
/// `write`, then answers when it has seen both results (`expect` names what the last one
/// contains).
fn two_calls(tag: &str, last_contains: &str) -> (PathBuf, Model, PathBuf) {
    let dir = project(tag, Value::Null);
    let record = dir.join("fixture-record.jsonl");
    let servers =
        json!({"f": fixture_json(&["--record", &record.display().to_string()], json!({}))});
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let written = dir.join("made-by-write");
    let model = Model::start(
        tag,
        json!({"steps": [
            {"tool_calls": [call("b", "bash", json!({"command": "touch made-by-bash"}))]},
            {"tool_calls": [call("w", "mcp__f__write",
                json!({"path": written.display().to_string(), "text": "x"}))]},
            {"text": "done", "expect": {"last_tool_result_contains": last_contains}}
        ]}),
    );
    (dir, model, record)
}

fn tool_calls_of(record: &Path) -> usize {
    methods(record)
        .iter()
        .filter(|m| *m == "tools/call")
        .count()
}

#[test]
fn run_p_refuses_an_unruled_bash_and_an_unannotated_mcp_tool_and_the_run_goes_on() {
    let (dir, model, record) = two_calls("perm-refuse", "this run cannot ask");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "done", "{out}");
    for (id, tool) in [("b", "bash"), ("w", "mcp__f__write")] {
        let refused = out.event("tool_refused", id);
        let reason = refused["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(&format!("--allowed-tools '{tool}'")),
            "the refusal names the flag that allows it: {refused}"
        );
        assert_eq!(out.event("tool_result", id)["is_error"], true, "{out}");
    }
    // The model saw the refusal as bash's result.
    let reqs = model.requests();
    let first = content_text(&tool_results(&reqs[1])[0]["content"]);
    assert!(first.contains("needs the user's permission"), "{first}");
    assert!(!dir.join("made-by-bash").exists(), "bash ran");
    assert!(!dir.join("made-by-write").exists(), "the MCP tool ran");
    assert_eq!(tool_calls_of(&record), 0, "the server got a call");
}

#[test]
fn allowed_tools_run_them_and_a_server_pattern_covers_its_tools() {
    let (dir, model, record) = two_calls("perm-allow", "wrote");
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "bash(touch:*),mcp__f__*",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "done", "{out}");
    assert!(dir.join("made-by-bash").exists(), "{out}");
    assert!(dir.join("made-by-write").exists(), "{out}");
    assert_eq!(tool_calls_of(&record), 1);
    assert!(!out.stdout.contains("tool_refused"), "{out}");
}

#[test]
fn a_denied_tool_is_refused_even_with_bypass_and_bypass_says_so_loudly() {
    let (dir, model, record) = two_calls("perm-deny", "deny rule");
    let config = home(&dir).join(".config/harness9");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[permissions]\ndeny = [\n  \"mcp__f__write\",\n]\n",
    )
    .unwrap();
    let args = ["run", "-p", "go", "--json", "--permission-mode", "bypass"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert!(
        out.stderr.contains("WARNING: --permission-mode bypass"),
        "{out}"
    );
    // bash ran (bypass), the denied tool did not.
    assert!(dir.join("made-by-bash").exists(), "{out}");
    assert!(!dir.join("made-by-write").exists(), "{out}");
    assert_eq!(tool_calls_of(&record), 0);
    let refused = out.event("tool_refused", "w");
    let rule = refused["rule"].as_str().unwrap_or_default();
    assert!(
        rule.starts_with("deny rule \"mcp__f__write\" (")
            && rule.ends_with("-home/.config/harness9/config.toml:3)"),
        "the rule and its file:line: {refused}"
    );

    // --disallowed-tools does the same for one run, and beats --allowed-tools.
    let (dir, model, _) = two_calls("perm-deny-flag", "--disallowed-tools");
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "bash,mcp__f__*",
        "--disallowed-tools",
        "mcp__f__write",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert!(dir.join("made-by-bash").exists(), "{out}");
    assert!(!dir.join("made-by-write").exists(), "{out}");
}

#[test]
fn read_only_and_accept_edits_modes() {
    // read-only: bash is refused by the mode, a read-only built-in runs.
    let dir = project("perm-ro", Value::Null);
    std::fs::write(dir.join("notes.txt"), "hello notes").unwrap();
    let model = Model::start(
        "perm-ro",
        json!({"steps": [
            {"tool_calls": [call("r", "read_file", json!({"path": "notes.txt"})),
                            call("b", "bash", json!({"command": "touch x"}))]},
            {"text": "done"}
        ]}),
    );
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--permission-mode",
        "read-only",
        "--allowed-tools",
        "bash",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let read = out.event("tool_result", "r");
    let text = read["output"].as_str().unwrap_or_default();
    assert!(text.contains("hello notes"), "{out}");
    let refused = out.event("tool_refused", "b");
    assert_eq!(refused["rule"], "--permission-mode read-only", "{refused}");
    assert!(!dir.join("x").exists());

    // accept-edits: write_file inside the project runs, outside it is refused.
    let dir = project("perm-edits", Value::Null);
    let outside = temp_path("perm-edits-outside");
    let model = Model::start(
        "perm-edits",
        json!({"steps": [
            {"tool_calls": [call("in", "write_file", json!({"path": "src/a.txt", "content": "in"})),
                            call("out", "write_file", json!({"path": outside.display().to_string(), "content": "out"}))]},
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
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(
        std::fs::read_to_string(dir.join("src/a.txt")).unwrap_or_default(),
        "in",
        "{out}"
    );
    assert!(!outside.exists(), "{out}");
    out.event("tool_refused", "out");
}

#[test]
fn a_project_file_cannot_allow_and_a_malformed_rule_names_its_file_and_line() {
    let (dir, model, record) = two_calls("perm-project", "this run cannot ask");
    std::fs::write(
        dir.join("harness9.toml"),
        "[permissions]\nallow = [\"bash\", \"mcp__f__*\"]\n",
    )
    .unwrap();
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    assert!(
        out.stderr
            .contains("harness9.toml:2: [permissions] allow rule \"bash\" is ignored"),
        "{out}"
    );
    assert!(!dir.join("made-by-bash").exists(), "{out}");
    assert_eq!(tool_calls_of(&record), 0);

    std::fs::write(
        dir.join("harness9.toml"),
        "[permissions]\ndeny = [\"mcp__f__*\",\n  \"bash(rm\"]\n",
    )
    .unwrap();
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        out.stderr
            .contains("harness9.toml:3:3: malformed [permissions] deny rule \"bash(rm\""),
        "{out}"
    );
    std::fs::remove_file(dir.join("harness9.toml")).unwrap();
    let args = ["run", "-p", "go", "--allowed-tools", "a b"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        out.stderr
            .contains("--allowed-tools: malformed rule \"a b\""),
        "{out}"
    );
}

#[test]
fn mcp_call_is_the_users_own_call_refused_only_by_a_deny_rule() {
    let dir = project("perm-call", Value::Null);
    let written = dir.join("called");
    let servers = json!({"f": fixture_json(&[], json!({}))});
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let args_json = json!({"path": written.display().to_string(), "text": "x"}).to_string();
    let call = ["mcp", "call", "f", "write", "--args", &args_json];
    let out = Run::start(harness9(&dir), &call).finish(LIMIT);
    out.ok();
    assert!(
        written.exists(),
        "an unannotated tool runs when the user calls it: {out}"
    );
    std::fs::remove_file(&written).unwrap();
    std::fs::write(
        dir.join("harness9.toml"),
        "[permissions]\ndeny = [\"mcp__f__write\"]\n",
    )
    .unwrap();
    let out = Run::start(harness9(&dir), &call).finish(LIMIT);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr
            .contains("is refused by your deny rule \"mcp__f__write\""),
        "{out}"
    );
    assert!(!written.exists());
}

#[test]
fn the_shell_will_not_write_a_project_that_holds_the_home_directory() {
    // harness9 run from the home directory: the sandbox's writable project would be all of it.
    let dir = project("perm-home", Value::Null);
    let model = Model::start(
        "perm-home",
        json!({"steps": [
            {"tool_calls": [call("b", "bash", json!({"command": "echo evil >> .bashrc"}))]},
            {"text": "done", "expect": {"last_tool_result_contains": "run harness9 from a project directory"}}
        ]}),
    );
    let mut cmd = anthropic(&dir, &model);
    cmd.env("HOME", &dir);
    let args = ["run", "-p", "go", "--json", "--allowed-tools", "bash"];
    let out = Run::start(cmd, &args).finish(LIMIT);
    out.ok();
    assert!(!dir.join(".bashrc").exists(), "{out}");
    let result = out.event("tool_result", "b");
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.contains("holds it: your shell's startup files")),
        "{result}"
    );
}
