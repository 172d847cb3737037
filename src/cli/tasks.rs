//! `harness9 mcp tasks list|get|cancel SERVER [ID]` and what `mcp call --no-wait` prints: the
//! tasks (`io.modelcontextprotocol/tasks`) harness9 started, headless.

use std::process::ExitCode;

use anyhow::Context as _;
use harness9_actors::messages::{AwaitTask, CancelServerTask, GetTaskStatus, ProgressSink};
use harness9_actors::protocol::types::CallToolResult;
use serde_json::json;

use super::args::TaskAction;
use super::mcp::{print_progress, PROGRESS_QUEUE};
use crate::app::stores::task_store::{self, TrackedTask};
use crate::app::Runtime;
use crate::sanitize::{clean_line, clean_text, to_json};

/// What `mcp tasks get|cancel` is asked.
pub(super) struct TaskAsk<'a> {
    pub(super) server: &'a str,
    pub(super) id: &'a str,
    pub(super) wait: bool,
    pub(super) json: bool,
    pub(super) cancel: tokio_util::sync::CancellationToken,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// `mcp call --no-wait` of a call that became a task: the id on stdout (the sentence on
/// stderr), and the task tracked for `mcp tasks list`.
pub(super) fn started(r: &CallToolResult, as_json: bool) -> anyhow::Result<ExitCode> {
    let Some(task) = &r.task else {
        return Ok(ExitCode::SUCCESS);
    };
    let tracked = TrackedTask {
        server: task.server.clone(),
        tool: task.tool.clone(),
        task_id: task.task_id.clone(),
        started: now_secs(),
    };
    if let Err(e) = task_store::add(&task_store::path(), tracked) {
        eprintln!("[mcp] {}", clean_line(&format!("{e:#}")));
    }
    if as_json {
        say!("{}", to_json(task, true)?);
    } else {
        eprintln!("[mcp] {}", clean_line(&r.text()));
        say!("{}", clean_line(&task.task_id));
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp tasks list SERVER`: the tasks harness9 started there and still tracks.
pub(super) fn list(server: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let all = task_store::load(&task_store::path())?;
    let mine: Vec<&TrackedTask> = all.iter().filter(|t| t.server == server).collect();
    if as_json {
        say!("{}", to_json(&mine, true)?);
        return Ok(ExitCode::SUCCESS);
    }
    if mine.is_empty() {
        say!("no tasks tracked on server \"{}\"", clean_line(server));
        return Ok(ExitCode::SUCCESS);
    }
    let now = now_secs();
    for t in mine {
        say!(
            "{}  {}  started {} s ago",
            clean_line(&t.task_id),
            clean_line(&t.tool),
            now.saturating_sub(t.started)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp tasks get|cancel SERVER ID`.
pub(super) async fn run(
    rt: &Runtime,
    action: TaskAction,
    ask: TaskAsk<'_>,
) -> anyhow::Result<ExitCode> {
    match action {
        TaskAction::List => list(ask.server, ask.json),
        TaskAction::Cancel => cancel(rt, &ask).await,
        TaskAction::Get if ask.wait => await_result(rt, &ask).await,
        TaskAction::Get => status(rt, &ask).await,
    }
}

/// No longer tracks task `id` on `server` (a failure is said, and the command goes on).
fn forget(server: &str, id: &str) {
    if let Err(e) = task_store::remove(&task_store::path(), server, id) {
        eprintln!("[mcp] {}", clean_line(&format!("{e:#}")));
    }
}

/// `mcp tasks cancel SERVER ID`: `tasks/cancel`, and the task no longer tracked.
async fn cancel(rt: &Runtime, ask: &TaskAsk<'_>) -> anyhow::Result<ExitCode> {
    rt.registry
        .send(CancelServerTask {
            server: ask.server.to_owned(),
            task_id: ask.id.to_owned(),
        })
        .await
        .context("the tool registry stopped")??;
    forget(ask.server, ask.id);
    if ask.json {
        say!(
            "{}",
            to_json(&json!({"taskId": ask.id, "cancelRequested": true}), true)?
        );
    } else {
        say!(
            "asked server \"{}\" to cancel task {}",
            clean_line(ask.server),
            clean_line(ask.id)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp tasks get --wait SERVER ID`: the task followed to its end (its progress on stderr),
/// then its result.
async fn await_result(rt: &Runtime, ask: &TaskAsk<'_>) -> anyhow::Result<ExitCode> {
    let tracked = task_store::load(&task_store::path()).unwrap_or_default();
    let tool = tracked
        .iter()
        .find(|t| t.server == ask.server && t.task_id == ask.id)
        .map(|t| t.tool.clone())
        .unwrap_or_else(|| "?".to_owned());
    let (tx, mut notices) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
    let msg = AwaitTask {
        server: ask.server.to_owned(),
        tool,
        task_id: ask.id.to_owned(),
        cancel: ask.cancel.clone(),
        progress: Some(ProgressSink::new(move |p| {
            let _ = tx.try_send(p);
        })),
    };
    let mut result = std::pin::pin!(rt.registry.send(msg));
    let result = loop {
        tokio::select! {
            r = &mut result => break r,
            Some(p) = notices.recv() => print_progress(p),
        }
    };
    while let Ok(p) = notices.try_recv() {
        print_progress(p);
    }
    let r = result.context("the tool registry stopped")?;
    forget(ask.server, ask.id);
    let r = r?;
    print_result(&r, ask.json)
}

/// `mcp tasks get SERVER ID`: one `tasks/get`, its status on stderr and what it carries
/// (a result, an error) on stdout; an ended task is no longer tracked.
async fn status(rt: &Runtime, ask: &TaskAsk<'_>) -> anyhow::Result<ExitCode> {
    let st = rt
        .registry
        .send(GetTaskStatus {
            server: ask.server.to_owned(),
            task_id: ask.id.to_owned(),
        })
        .await
        .context("the tool registry stopped")??;
    let ended = matches!(st.status.as_str(), "completed" | "failed" | "cancelled");
    if ended {
        forget(ask.server, ask.id);
    }
    if ask.json {
        let v = json!({
            "taskId": ask.id,
            "status": st.status,
            "statusMessage": st.status_message,
            "result": st.result,
            "error": st.error,
        });
        say!("{}", to_json(&v, true)?);
    } else {
        let msg = st
            .status_message
            .as_deref()
            .map(|m| format!(": {}", clean_line(m)))
            .unwrap_or_default();
        eprintln!(
            "[mcp] task {} {}{msg}",
            clean_line(ask.id),
            clean_line(&st.status)
        );
        if let Some(r) = &st.result {
            say!("{}", clean_text(&r.text()));
        }
        if let Some(e) = &st.error {
            say!("failed: {}", clean_line(e));
        }
    }
    Ok(match (st.status.as_str(), &st.result) {
        ("completed", Some(r)) if !r.is_error => ExitCode::SUCCESS,
        ("working" | "input_required", _) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

fn print_result(r: &CallToolResult, as_json: bool) -> anyhow::Result<ExitCode> {
    if as_json {
        say!("{}", to_json(r, true)?);
    } else {
        say!("{}", clean_text(&r.text()));
    }
    Ok(if r.is_error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
