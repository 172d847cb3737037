//! A task still pending when harness9 dies (SIGKILL) is followed again by `run --continue`:
//! its result reaches the model once (the scripted model checks it sees it), a task the server
//! no longer knows reaches it as lost, and the session's pending-task file is private and gone
//! once the result is saved. The task server (tests/python/task_server.py) keeps its tasks in
//! a state directory, so the restarted harness9's server process knows the first one's task.

use super::*;
use std::os::unix::fs::PermissionsExt as _;

/// A project whose server `jobs` is the task fixture keeping its tasks in `state`.
fn tasks_project(tag: &str) -> (PathBuf, PathBuf) {
    let dir = project(tag, Value::Null);
    let state = dir.join("task-state");
    std::fs::create_dir_all(&state).unwrap();
    let entry = json!({
        "command": repo().join(".deps/venv/bin/python"),
        "args": [repo().join("tests/python/task_server.py"), "--state", &state],
        "toolTimeoutSec": 1,
    });
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"jobs": entry}}).to_string(),
    )
    .unwrap();
    (dir, state)
}

/// Runs `go` until the model has said it waits for the task it started, then kills harness9
/// (SIGKILL: nothing of the turn is saved); the session's id and pending-task file.
fn start_and_kill(dir: &Path, model: &Model) -> (String, PathBuf) {
    let mut run = Run::start(
        anthropic(dir, model),
        &[
            "run",
            "-p",
            "go",
            "--allowed-tools",
            "mcp__jobs__slow",
            "--json",
        ],
    );
    let id = run.wait_event("start", LIMIT)["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The second model step comes after the task was started and kept.
    loop {
        if run.wait_event("model", LIMIT)["step"] == 2 {
            break;
        }
    }
    run.signal(libc::SIGKILL);
    let out = run.finish(LIMIT);
    assert_eq!(out.code, None, "killed: {out}");
    let pending = dir.join("sessions").join(format!("{id}.tasks.json"));
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(&pending).unwrap()).unwrap();
    assert_eq!(kept[0]["server"], "jobs", "{kept}");
    assert_eq!(kept[0]["tool"], "slow", "{kept}");
    assert_eq!(kept[0]["toolUseId"], "t1", "{kept}");
    assert!(
        kept[0]["taskId"].as_str().unwrap().starts_with("task-"),
        "{kept}"
    );
    let mode = std::fs::metadata(&pending).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", pending.display());
    (id, pending)
}

/// The first run's steps: the call that becomes a task, and the model saying it waits.
fn first_steps() -> Vec<Value> {
    vec![
        json!({"tool_calls": [call("t1", "mcp__jobs__slow", json!({"ms": 3000, "text": "late result"}))]}),
        json!({"text": "I will wait for it", "expect": {"last_tool_result_contains": "started task"}}),
    ]
}

#[test]
fn a_task_pending_when_harness9_was_killed_reaches_the_model_after_continue_once() {
    let mut steps = first_steps();
    steps.extend([
        // The restarted run: the model waits, and its next step is the task's result.
        json!({"text": "still waiting"}),
        json!({"text": "got it", "expect": {"last_user_text_contains": "done: late result"}}),
        json!({"text": "nothing new"}),
    ]);
    let model = Model::start("task-resume", json!({ "steps": steps }));
    let (dir, _state) = tasks_project("task-resume");
    let (id, pending) = start_and_kill(&dir, &model);

    let args = ["run", "-p", "go on", "--continue", "--json"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("start", "")["session_id"], id.as_str(), "{out}");
    assert_eq!(out.event("done", "")["text"], "got it", "{out}");
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "{out}");
    let last = requests[3]["body"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let text = content_text(&last["content"]);
    assert!(
        text.contains("the result of task task-") && text.contains("call t1 of an earlier run"),
        "{text}"
    );
    assert!(
        !pending.exists(),
        "settled once saved: {}",
        pending.display()
    );

    // Exactly once: the next turn has it once, from the saved conversation.
    let args = ["run", "-p", "anything else?", "--continue"];
    Run::start(anthropic(&dir, &model), &args)
        .finish(LIMIT)
        .ok();
    let all = model.requests()[4]["body"]["messages"].to_string();
    assert_eq!(all.matches("done: late result").count(), 1, "{all}");
}

#[test]
fn a_pending_task_the_server_no_longer_knows_reaches_the_model_as_lost() {
    let mut steps = first_steps();
    steps.extend([
        json!({"text": "still waiting"}),
        json!({"text": "it is gone", "expect": {"last_user_text_contains": "lost: the server no longer knows this task"}}),
    ]);
    let model = Model::start("task-lost", json!({ "steps": steps }));
    let (dir, state) = tasks_project("task-lost");
    let (_id, pending) = start_and_kill(&dir, &model);
    // The server forgets every task (a restart without its state).
    std::fs::remove_dir_all(&state).unwrap();
    std::fs::create_dir_all(&state).unwrap();

    let args = ["run", "-p", "go on", "--continue", "--json"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "it is gone", "{out}");
    assert_eq!(model.requests().len(), 4, "{out}");
    assert!(!pending.exists(), "{}", pending.display());
}

#[test]
fn a_pending_task_whose_server_is_not_there_stays_pending_until_it_is_back() {
    let mut steps = first_steps();
    steps.extend([
        // No `jobs` server: the model hears the task is not known yet, and it stays kept.
        json!({"text": "still waiting"}),
        json!({"text": "later then", "expect": {"last_user_text_contains": "followed again at the next turn"}}),
        // The server is back: its result comes.
        json!({"text": "still waiting"}),
        json!({"text": "got it", "expect": {"last_user_text_contains": "done: late result"}}),
    ]);
    let model = Model::start("task-kept", json!({ "steps": steps }));
    let (dir, _state) = tasks_project("task-kept");
    let (_id, pending) = start_and_kill(&dir, &model);
    let config = std::fs::read_to_string(dir.join(".mcp.json")).unwrap();
    std::fs::write(dir.join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();

    let args = ["run", "-p", "go on", "--continue", "--json"];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "later then", "{out}");
    assert!(pending.exists(), "still pending: {}", pending.display());

    std::fs::write(dir.join(".mcp.json"), config).unwrap();
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert_eq!(out.event("done", "")["text"], "got it", "{out}");
    assert_eq!(model.requests().len(), 6, "{out}");
    assert!(!pending.exists(), "{}", pending.display());
}
