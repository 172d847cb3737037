//! Running tasks in the real TUI (tmux): a scripted model's call that task_server.py turns into
//! a task shows in the MCP bar and in `/tasks` with its status; `c` there sends `tasks/cancel`
//! (never `notifications/cancelled`), the server's record shows it, and the task leaves the
//! bar as the model gets its end.

use std::time::Duration;

use serde_json::{json, Value};

use super::common::{poll_until, repo};
use super::tui::{bar, project, tmux_required, Tmux, BOUND};

/// The methods task_server.py recorded, in order.
fn recorded(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["msg"]["method"].as_str().map(str::to_owned))
        .collect()
}

/// The poll count in the task's status message (`working: step 7`), 0 when none shows.
fn step_of(screen: &str) -> u32 {
    screen
        .split("working: step ")
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_running_task_shows_in_the_bar_and_tasks_and_c_cancels_it_on_the_server() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-tasks",
        json!({"steps": [
            {"text": "Starting the build.", "tool_calls": [{"id": "t1", "name": "mcp__jobs__slow",
                "input": {"ms": 60000, "text": "never"}}]},
            {"text": "I will wait for it.", "expect": {"last_tool_result_contains": "started task"}},
            {"text": "The build was stopped."}
        ]}),
    );
    let py = repo().join(".deps/venv/bin/python");
    let script = repo().join("tests/python/task_server.py");
    let record = std::env::temp_dir().join(format!("h9-tui-tasks-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&record);
    let dir = project(
        "tui-tasks",
        |_| json!({"jobs": {"command": py, "args": [script, "--record", record]}}),
    );
    let t = Tmux::start_with(
        &dir,
        &["--allowed-tools", "mcp__jobs__slow"],
        None,
        &model.env(),
    );
    t.wait_for("jobs connected", BOUND, |s| bar(s).contains("jobs ●"));
    t.send_keys(&["go", "Enter"]);
    t.wait_for("the task in the bar", BOUND, |s| bar(s).contains("1 task"));
    t.send_keys(&["/tasks", "Enter"]);
    let s = t.wait_for("the task in /tasks with its status", BOUND, |s| {
        s.contains("jobs · slow") && s.contains("working: step")
    });
    assert!(s.contains("task task-"), "{s}");
    // The view follows the server: a later poll's status message and a growing age.
    let first = step_of(&s);
    t.wait_for("a newer status and age in /tasks", BOUND, |s| {
        step_of(s) > first && s.contains("jobs · slow   ") && !s.contains("jobs · slow   0 s")
    });
    t.send_keys(&["c"]);
    let cancelled = poll_until(BOUND, Duration::from_millis(50), || {
        recorded(&record).iter().any(|m| m == "tasks/cancel")
    });
    assert!(
        cancelled,
        "no tasks/cancel reached the server: {:?}",
        recorded(&record)
    );
    // The server's `cancelled` ends the task: it leaves the list and the bar, and the model gets
    // that end as its next step.
    t.wait_for("the task gone from /tasks", BOUND, |s| {
        s.contains("no running tasks")
    });
    t.send_keys(&["Escape"]);
    let s = t.wait_for("the turn's end", BOUND, |s| {
        s.contains("The build was stopped.") && !bar(s).contains("task")
    });
    assert!(!bar(&s).contains("task"), "{s}");
    let methods = recorded(&record);
    assert!(
        !methods.iter().any(|m| m == "notifications/cancelled"),
        "{methods:?}"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let last = requests[2]["body"]["messages"].to_string();
    assert!(last.contains("cancelled"), "{last}");
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
    let _ = std::fs::remove_file(&record);
}
