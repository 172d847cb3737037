//! The hints a user or the model acts on name the file that works: a headless refusal and the
//! shell sandbox's note name the user's own settings file with its path on this platform (a
//! project's `harness9.toml` may not allow, nor loosen the shell), and a warning about an
//! ignored project setting names where the effective value came from, on stderr as a
//! `harness9: warning:` line.

use super::*;

/// The user's settings file of a test's harness9 (`HOME` is [`home`], no `XDG_CONFIG_HOME`).
fn user_settings(dir: &Path) -> PathBuf {
    home(dir).join(".config/harness9/config.toml")
}

#[test]
fn a_headless_refusal_names_the_users_settings_file_and_the_flag() {
    let model = Model::start(
        "hint-refusal",
        json!({"steps": [
            {"tool_calls": [call("b", "bash", json!({"command": "touch made"}))]},
            {"text": "done", "expect": {"last_tool_result_contains": "this run cannot ask"}}
        ]}),
    );
    let dir = project("hint-refusal", Value::Null);
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let reason = out.event("tool_refused", "b")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let own = format!(
        "allow = [\"bash\"] under [permissions] in your own settings file ({})",
        user_settings(&dir).display()
    );
    assert!(reason.contains(&own), "{reason}");
    assert!(reason.contains("--allowed-tools 'bash'"), "{reason}");
    assert!(
        !reason.contains("[permissions] in harness9.toml"),
        "it names a file where allow rules are ignored: {reason}"
    );
    assert!(!dir.join("made").exists());
}

#[test]
fn the_shell_sandbox_note_names_the_users_settings_file() {
    let outside = temp_path("hint-note-outside");
    std::fs::create_dir_all(&outside).unwrap();
    let write = format!("echo out > {}", outside.join("x.txt").display());
    let model = Model::start(
        "hint-note",
        json!({"steps": [
            {"tool_calls": [call("w", "bash", json!({"command": write}))]},
            {"text": "done"}
        ]}),
    );
    let dir = project("hint-note", Value::Null);
    let args = ["run", "-p", "go", "--json", "--allowed-tools", "bash"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let text = out.event("tool_result", "w")["output"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let own = format!(
        "set [permissions] shell in your own settings file ({})",
        user_settings(&dir).display()
    );
    assert!(text.contains(&own), "{text}");
    assert!(!outside.join("x.txt").exists(), "{text}");
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn an_ignored_project_shell_names_the_default_it_kept_and_the_file_that_works() {
    let model = Model::start("hint-default", json!({"steps": [{"text": "done"}]}));
    let dir = project("hint-default", Value::Null);
    // The user's file exists but sets no shell: the value kept is the default's.
    let user = user_settings(&dir);
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "max_steps = 20\n").unwrap();
    std::fs::write(
        dir.join("harness9.toml"),
        "[permissions]\nshell = \"off\"\n",
    )
    .unwrap();
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    let warning = out
        .stderr
        .lines()
        .find(|l| l.contains("[permissions] shell = \"off\" is ignored"))
        .unwrap_or_else(|| panic!("no warning:\n{out}"))
        .to_owned();
    // As a user reads it: no timestamp, level column or module path (the log file's format).
    assert!(
        warning.starts_with("harness9: warning: ") && warning.contains("/harness9.toml:2: "),
        "{warning}"
    );
    assert!(
        warning.contains("looser than \"workspace-write\" from the default,"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!(
            "set it in your own settings file ({}) if you mean it",
            user.display()
        )),
        "{warning}"
    );
}

/// A call of a tool that does not exist gets an error result written for the model (the
/// nearest name, what to call), not the command line's hint for a person.
#[test]
fn an_unknown_tool_gets_a_result_written_for_the_model() {
    let dir = project("hint-unknown", json!({"f": fixture_json(&[], json!({}))}));
    let model = Model::start(
        "hint-unknown",
        json!({"steps": [
            {"tool_calls": [call("u", "mcp__f__ech", json!({"text": "hi"}))]},
            {"text": "done", "expect": {"last_tool_result_contains": "there is no tool"}}
        ]}),
    );
    let args = ["run", "-p", "go", "--json", "--allowed-tools", "mcp__f__*"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let reqs = model.requests();
    let result = content_text(&tool_results(&reqs[1])[0]["content"]);
    assert_eq!(
        result,
        "there is no tool \"mcp__f__ech\" (the nearest name is \"mcp__f__echo\"); call only the tools in your tool list, by their exact names"
    );
    assert!(!result.contains("harness9 mcp"), "{result}");
}

/// With no provider configured, `run -p` says where the provider may be written: the user's
/// own settings file by its path here.
#[test]
fn no_provider_names_the_users_settings_file_by_its_path() {
    let dir = project("hint-provider", Value::Null);
    let out = Run::start(harness9(&dir), &["run", "-p", "go"]).finish(LIMIT);
    assert_eq!(out.code, Some(2), "{out}");
    let own = format!(
        "write provider = \"anthropic\" or \"openai\" in {} (a project's",
        user_settings(&dir).display()
    );
    assert!(out.stderr.contains(&own), "{out}");
}
