//! The model's side of the Skills extension (SEP-2640) through `harness9 run -p` and the
//! scripted model: the system prompt names each skill a server lists (name, description, its
//! server), `load_skill` loads one verified (then one of its files), and a tampered `SKILL.md`
//! reaches the model only as an error, never its text. The hostile fixture
//! (tests/python/skills_hostile.py) logs every read.

use super::*;

/// The hostile skills server in `mode` as `.mcp.json` entry `h`, and its read log.
fn skills_project(tag: &str, mode: &str) -> (PathBuf, PathBuf) {
    let dir = project(tag, Value::Null);
    let log = dir.join("reads.log");
    let entry = json!({
        "command": repo().join(".deps/venv/bin/python"),
        "args": [repo().join("tests/python/skills_hostile.py"), mode, log],
    });
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"h": entry}}).to_string(),
    )
    .unwrap();
    (dir, log)
}

fn system_of(request: &Value) -> String {
    match &request["body"]["system"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

#[test]
fn the_model_sees_the_skills_and_loads_one_verified() {
    let model = Model::start(
        "skills-load",
        json!({"steps": [
            {"tool_calls": [call("s1", "load_skill", json!({"server": "h", "skill": "pdf-processing"}))]},
            {"tool_calls": [call("s2", "load_skill", json!({"server": "h", "skill": "pdf-processing", "file": "references/FORMS.md"}))],
             "expect": {"last_tool_result_contains": "Skill body."}},
            {"text": "done", "expect": {"last_tool_result_contains": "Forms reference."}}
        ]}),
    );
    let (dir, log) = skills_project("skills-load", "good");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    assert_eq!(out.stdout.trim_end(), "done", "{out}");
    let requests = model.requests();
    let system = system_of(&requests[0]);
    assert!(system.contains("Skills server \"h\" offers"), "{system}");
    assert!(
        system.contains("- pdf-processing: Extract, fill, and assemble PDF documents"),
        "{system}"
    );
    assert!(offered_tools(&requests[0]).contains(&"load_skill".to_owned()));
    let loaded = content_text(&tool_results(&requests[1])[0]["content"]);
    assert!(
        loaded.starts_with("[skill pdf-processing from MCP server \"h\" (skill://pdf-processing/SKILL.md), verified"),
        "{loaded}"
    );
    assert!(
        loaded.contains("references/FORMS.md (17 bytes)"),
        "{loaded}"
    );
    // Nothing was read before the model asked, then exactly what it asked for.
    let reads = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        reads.lines().collect::<Vec<_>>(),
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md"
        ]
    );
}

#[test]
fn a_tampered_skill_reaches_the_model_only_as_an_error() {
    let model = Model::start(
        "skills-digest",
        json!({"steps": [
            {"tool_calls": [call("s1", "load_skill", json!({"server": "h", "skill": "pdf-processing"}))]},
            {"text": "refused", "expect": {"last_tool_result_contains": "digest mismatch"}}
        ]}),
    );
    let (dir, _) = skills_project("skills-digest", "digest");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    let sent = &tool_results(&model.requests()[1])[0];
    assert_eq!(sent["is_error"], true, "{sent}");
    for r in model.requests() {
        assert!(!r.to_string().contains("Evil body"), "{r}");
    }
}

#[test]
fn a_deny_rule_refuses_load_skill_like_any_tool() {
    let model = Model::start(
        "skills-deny",
        json!({"steps": [
            {"tool_calls": [call("s1", "load_skill", json!({"server": "h", "skill": "pdf-processing"}))]},
            {"text": "ok"}
        ]}),
    );
    let (dir, log) = skills_project("skills-deny", "good");
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "go", "--disallowed-tools", "load_skill"],
    )
    .finish(LIMIT);
    out.ok();
    let sent = &tool_results(&model.requests()[1])[0];
    assert_eq!(sent["is_error"], true, "{sent}");
    assert!(std::fs::read_to_string(&log).unwrap_or_default().is_empty());
}

#[test]
fn a_loaded_skills_files_are_read_against_the_entry_it_was_loaded_from() {
    // The server adds a file to the skill after the model loaded it: the held entry does not
    // list it, so it is refused without a read until the skill is loaded again.
    let model = Model::start(
        "skills-held",
        json!({"steps": [
            {"tool_calls": [call("s1", "load_skill", json!({"server": "h", "skill": "pdf-processing"}))]},
            {"tool_calls": [call("s2", "load_skill", json!({"server": "h", "skill": "pdf-processing", "file": "references/NEW.md"}))]},
            {"text": "refused", "expect": {"last_tool_result_contains": "is not among the skill's 2 listed files"}}
        ]}),
    );
    let (dir, log) = skills_project("skills-held", "grow");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    assert_eq!(out.stdout.trim_end(), "refused", "{out}");
    let reads = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        reads.lines().collect::<Vec<_>>(),
        ["skill://pdf-processing/SKILL.md"]
    );
}
