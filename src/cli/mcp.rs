//! `harness9 mcp list|get|call|approve|login|logout`: the servers, headless.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _};
use harness9_actors::error::fmt_duration;
use harness9_actors::messages::{
    CallTool, CompletionRef, ListTools, ProgressSink, ServerState, ServerStatus, StatusSnapshot,
    ToolEntry, ToolProgress,
};
use harness9_actors::ServerSpec;
use serde_json::{json, Value};

use super::args::TaskAction;
use super::list::{list, tool_sizes};
use super::login::oauth_command;
use super::manage::{add_entry, edit_config, import};
use super::{interrupted, McpCommand, UsageError};
use crate::app::config::{self, Config};
use crate::app::{spawn_status_lines, user_call, Runtime, Session, SessionOptions, Start};
use crate::sanitize::{clean_line, clean_text, to_json};

/// Runs a `mcp` subcommand; every child is gone when this returns.
pub async fn run_mcp(opts: &SessionOptions, cmd: &McpCommand) -> anyhow::Result<ExitCode> {
    if let Some(done) = edit_command(opts, cmd) {
        return done;
    }
    let config = opts.load_config()?;
    if let McpCommand::Login { server, .. } | McpCommand::Logout { server, .. } = cmd {
        return oauth_command(&config, server, matches!(cmd, McpCommand::Login { .. })).await;
    }
    // The tracked tasks are harness9's own list: no server is contacted.
    if let McpCommand::Tasks {
        action: TaskAction::List,
        server,
        json,
        ..
    } = cmd
    {
        if !config.servers.iter().any(|s| &s.name == server) {
            return Err(unknown_server(&config, server).into());
        }
        return super::tasks::list(server, json.json);
    }
    let only = one_server(cmd);
    let specs = specs_for(&config, only)?;
    let start = Start {
        shutdown_grace: Some(crate::app::HEADLESS_GRACE),
        // `mcp list` shows what the model would be offered (a lazy server's cached list);
        // the commands on one server want it live.
        offer_cached: matches!(cmd, McpCommand::List(_)),
        ..Start::default()
    };
    let mut session = Session::start(opts, &config, specs, start)?;
    for line in crate::app::config::trust::hint_lines(&config, only) {
        eprintln!("{line}");
    }
    spawn_status_lines(
        session.runtime.status.clone(),
        opts.verbose > 0,
        opts.lines.clone(),
    );
    // Cancelled at Ctrl+C: a call that became a task sends `tasks/cancel` before the servers
    // stop (the wait for it is bounded).
    let on = OnServers {
        opts,
        config: &config,
        cmd,
        only,
        stop: tokio_util::sync::CancellationToken::new(),
    };
    let out = {
        let mut result = std::pin::pin!(on.run(&mut session.runtime));
        tokio::select! {
            r = &mut result => r,
            _ = interrupted() => on.interrupted(result).await,
        }
    };
    session.close().await;
    out
}

/// The commands that edit the config or the approvals (`approve`, `add`, `add-json`,
/// `remove`, `import`): no server is started. `None` for every other command.
fn edit_command(opts: &SessionOptions, cmd: &McpCommand) -> Option<anyhow::Result<ExitCode>> {
    Some(match cmd {
        McpCommand::Approve { servers, .. } => approve(opts, servers),
        McpCommand::Add {
            name,
            scope,
            env,
            headers,
            transport,
            command,
            ..
        } => add_entry(env, headers, *transport, command)
            .map_err(|e| UsageError(format!("{e:#}")).into())
            .and_then(|entry| edit_config(opts, *scope, name, Some(entry))),
        McpCommand::AddJson {
            name, json, scope, ..
        } => add_json(opts, *scope, name, json),
        McpCommand::Remove { name, scope, .. } => edit_config(opts, *scope, name, None),
        McpCommand::Import {
            from, file, scope, ..
        } => import(opts, *from, file.as_deref(), *scope),
        _ => return None,
    })
}

/// `mcp approve SERVER...`: the approvals written, a line each.
fn approve(opts: &SessionOptions, servers: &[String]) -> anyhow::Result<ExitCode> {
    for line in
        crate::app::config::trust::approve(&opts.config_path, servers, &opts.runtime.entries)?
    {
        say!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp add-json NAME JSON`: the entry as given, which must be a JSON object.
fn add_json(
    opts: &SessionOptions,
    scope: super::args::Scope,
    name: &str,
    json: &str,
) -> anyhow::Result<ExitCode> {
    let entry: Value = serde_json::from_str(json).map_err(|e| {
        UsageError(format!(
            "the entry is not valid JSON ({e}): {}",
            clean_line(&format!("{json:.200}"))
        ))
    })?;
    if !entry.is_object() {
        return Err(UsageError("the entry must be a JSON object, like '{\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}'".to_owned()).into());
    }
    edit_config(opts, scope, name, Some(entry))
}

/// The one server a command is about, if it names one.
fn one_server(cmd: &McpCommand) -> Option<&str> {
    match cmd {
        McpCommand::Get { server, .. }
        | McpCommand::Call { server, .. }
        | McpCommand::Tasks { server, .. }
        | McpCommand::Resources { server, .. }
        | McpCommand::Skills { server, .. }
        | McpCommand::Read { server, .. }
        | McpCommand::Prompts { server, .. }
        | McpCommand::Prompt { server, .. }
        | McpCommand::Complete { server, .. } => Some(server.as_str()),
        _ => None,
    }
}

/// The servers to start: every configured one, or `only` (a disabled or unknown name is a
/// usage error).
fn specs_for(config: &Config, only: Option<&str>) -> anyhow::Result<Vec<ServerSpec>> {
    let Some(name) = only else {
        return Ok(config.servers.clone());
    };
    if config.disabled.iter().any(|d| d == name) {
        return Err(UsageError(format!(
            "server \"{name}\" is disabled in {}",
            config.path.display()
        ))
        .into());
    }
    let Some(s) = config.servers.iter().find(|s| s.name == name) else {
        return Err(unknown_server(config, name).into());
    };
    Ok(vec![s.clone()])
}

/// A `mcp` command that talks to the servers, run in its session.
struct OnServers<'a> {
    opts: &'a SessionOptions,
    config: &'a Config,
    cmd: &'a McpCommand,
    /// The one server started, when the command names one.
    only: Option<&'a str>,
    /// Cancelled at Ctrl+C: a call that became a task sends `tasks/cancel`.
    stop: tokio_util::sync::CancellationToken,
}

impl OnServers<'_> {
    /// Waits for the servers to settle (bounded), then runs the command.
    async fn run(&self, rt: &mut Runtime) -> anyhow::Result<ExitCode> {
        let bound = rt.max_startup + Duration::from_secs(5);
        let snap = if self.config.servers.is_empty() && self.only.is_none() {
            StatusSnapshot::default()
        } else {
            rt.settled(bound).await
        };
        match self.cmd {
            McpCommand::List(f) => {
                let sizes = tool_sizes(rt).await;
                list(self.config, &snap, &sizes, f.json.json)
            }
            McpCommand::Get { server, json, .. } => get(rt, &snap, server, json.json).await,
            McpCommand::Call {
                server,
                tool,
                args,
                timeout,
                no_wait,
                json,
                ..
            } => {
                let cwd = std::env::current_dir().context("cannot read the working directory")?;
                let (policy, _logged) = self.opts.policy(&cwd)?;
                SessionOptions::unmatched_rules(&policy, self.config);
                let how = CallHow {
                    timeout: *timeout,
                    no_wait: *no_wait,
                    json: json.json,
                    cancel: self.stop.clone(),
                };
                call(&policy, rt, &snap, server, tool, args.as_deref(), how).await
            }
            McpCommand::Tasks {
                action,
                server,
                id,
                wait,
                json,
                ..
            } => {
                ensure_connected(&snap, server)?;
                let Some(id) = id else {
                    bail!(UsageError(
                        "give the task's id: `harness9 mcp tasks get|cancel SERVER ID` (`harness9 mcp tasks list SERVER` shows them)".into()
                    ));
                };
                let ask = super::tasks::TaskAsk {
                    server,
                    id,
                    wait: *wait,
                    json: json.json,
                    cancel: self.stop.clone(),
                };
                super::tasks::run(rt, *action, ask).await
            }
            cmd => features(rt, &snap, cmd).await,
        }
    }

    /// Ctrl+C: a task in flight is cancelled on the server first (`tasks/cancel`, bounded),
    /// then the servers stop; exit code 130.
    async fn interrupted<F>(&self, mut result: std::pin::Pin<&mut F>) -> anyhow::Result<ExitCode>
    where
        F: std::future::Future<Output = anyhow::Result<ExitCode>>,
    {
        if matches!(self.cmd, McpCommand::Call { .. } | McpCommand::Tasks { .. }) {
            self.stop.cancel();
            let _ = tokio::time::timeout(TASK_CANCEL_WAIT, &mut result).await;
        }
        eprintln!("[mcp] interrupted; stopping servers");
        if self.cmd.json() {
            // No `?` here: the session is closed on every path.
            if let Ok(line) = to_json(&json!({"error": "interrupted", "code": 130}), false) {
                use std::io::Write as _;
                let _ = writeln!(std::io::stdout().lock(), "{line}");
            }
        }
        Ok(ExitCode::from(130))
    }
}

/// The commands on a server's other features: skills, resources, prompts, completion.
async fn features(
    rt: &Runtime,
    snap: &StatusSnapshot,
    cmd: &McpCommand,
) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::Skills {
            action,
            server,
            skill,
            file,
            json,
            ..
        } => {
            ensure_connected(snap, server)?;
            let ask = super::skills::Ask {
                action: *action,
                skill: skill.as_deref(),
                file: file.as_deref(),
                as_json: json.json,
            };
            super::skills::skills(rt, server, ask).await
        }
        McpCommand::Resources { server, json, .. } => {
            ensure_connected(snap, server)?;
            super::resources::resources(rt, server, json.json).await
        }
        McpCommand::Read {
            server,
            uri,
            out,
            json,
            watch,
            ..
        } => {
            ensure_connected(snap, server)?;
            super::resources::read(rt, server, uri, out.as_deref(), json.json, *watch).await
        }
        McpCommand::Prompts { server, json, .. } => {
            ensure_connected(snap, server)?;
            super::resources::prompts(rt, server, json.json).await
        }
        McpCommand::Prompt {
            server,
            name,
            args,
            json,
            ..
        } => {
            ensure_connected(snap, server)?;
            super::resources::prompt(rt, server, name, args.as_deref(), json.json).await
        }
        McpCommand::Complete {
            server,
            prompt,
            resource,
            arg,
            value,
            context,
            json,
            ..
        } => {
            ensure_connected(snap, server)?;
            let reference = match (prompt, resource) {
                (Some(p), _) => CompletionRef::Prompt(p.clone()),
                (None, Some(r)) => CompletionRef::Resource(r.clone()),
                (None, None) => bail!(UsageError("give --prompt or --resource".into())),
            };
            let ask = super::resources::Ask {
                reference,
                argument: arg,
                value,
                context: context.as_deref(),
            };
            super::resources::complete(rt, snap, server, ask, json.json).await
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The usage error of a command naming a server the config does not have.
pub(super) fn unknown_server(config: &Config, name: &str) -> UsageError {
    let known: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    UsageError(format!(
        "no server named \"{name}\" in {} (servers: {})",
        config.path.display(),
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    ))
}

/// Fails with a readable reason unless `server` is connected in `snap`.
pub(super) fn ensure_connected(snap: &StatusSnapshot, server: &str) -> anyhow::Result<()> {
    match snap.get(server).map(|s| &s.status) {
        Some(ServerStatus::Connected { .. }) => Ok(()),
        Some(ServerStatus::Failed { error, stderr_tail }) => {
            let mut msg = format!("server \"{server}\" failed: {error}");
            for l in stderr_tail.iter().rev().take(10).rev() {
                msg.push_str("\n  stderr: ");
                msg.push_str(l);
            }
            bail!(msg)
        }
        Some(ServerStatus::NeedsLogin { error, .. }) => bail!("{error}"),
        Some(ServerStatus::Unapproved { .. }) => bail!(
            "server {server:?} is not approved (see above); approve it with `harness9 mcp approve {}` or run with --approve-project",
            harness9_actors::spec::shell_quote(server)
        ),
        Some(other) => bail!("server \"{server}\" is {}", other.label()),
        None => bail!("server \"{server}\" is not running"),
    }
}

/// The registry's tools that belong to `server`.
pub(super) async fn server_tools(rt: &Runtime, server: &str) -> anyhow::Result<Vec<ToolEntry>> {
    let all = rt
        .registry
        .send(ListTools)
        .await
        .context("the tool registry stopped")?;
    Ok(all
        .iter()
        .filter(|t| t.server.as_deref() == Some(server))
        .cloned()
        .collect())
}

async fn get(
    rt: &Runtime,
    snap: &StatusSnapshot,
    server: &str,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    ensure_connected(snap, server)?;
    let tools = server_tools(rt, server).await?;
    if let Some(ServerState {
        status: ServerStatus::Connected { info, .. },
        ..
    }) = snap.get(server)
    {
        for n in &info.notes {
            eprintln!("[mcp] {server}: {}", clean_line(n));
        }
    }
    if as_json {
        let rows: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "tool": t.tool.name,
                    "title": t.tool.title,
                    "description": t.tool.description,
                    "inputSchema": t.tool.input_schema,
                    "outputSchema": t.tool.output_schema,
                    "annotations": t.tool.annotations,
                })
            })
            .collect();
        say!("{}", to_json(&rows, true)?);
    } else {
        say!("server \"{}\": {} tools", clean_line(server), tools.len());
        for t in &tools {
            say!("\n{}  ({})", clean_line(&t.name), clean_line(&t.tool.name));
            if let Some(title) = &t.tool.title {
                say!("  title: {}", clean_line(title));
            }
            if let Some(d) = &t.tool.description {
                for l in clean_text(d).lines() {
                    say!("  {l}");
                }
            }
            // The hints say which tools ask before running (destructive, not read-only).
            if let Some(a) = &t.tool.annotations {
                say!("  annotations: {}", clean_line(a.get()));
            }
            match crate::agent::engine::schema_object(t.tool.input_schema.get()) {
                Ok(schema) => {
                    // JSON escapes C0 controls in strings, but not DEL or C1.
                    let pretty = serde_json::to_string_pretty(&schema)?;
                    say!("  input schema:");
                    for l in clean_text(&pretty).lines() {
                        say!("    {l}");
                    }
                }
                Err(why) => say!(
                    "  input schema: it {}; the tool is not offered to the model",
                    clean_text(&why)
                ),
            }
            if let Some(out) = &t.tool.output_schema {
                say!("  output schema:");
                let pretty = serde_json::from_str::<Value>(out.get())
                    .and_then(|v| serde_json::to_string_pretty(&v))
                    .unwrap_or_else(|_| out.get().to_owned());
                for l in clean_text(&pretty).lines() {
                    say!("    {l}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a progress notification of a headless call to stderr.
pub(super) fn print_progress(p: ToolProgress) {
    let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
    eprintln!(
        "[mcp] progress {}{total} {}",
        p.progress,
        clean_line(p.message.as_deref().unwrap_or_default())
    );
}

/// How many progress notices of a call wait to be printed; more are dropped (the server actor
/// hands them over without waiting).
pub(super) const PROGRESS_QUEUE: usize = 256;

/// How long Ctrl+C waits for a call's task to be cancelled on its server.
const TASK_CANCEL_WAIT: Duration = Duration::from_secs(7);

/// How `mcp call` calls: its flags and its cancellation.
struct CallHow {
    timeout: Option<f64>,
    no_wait: bool,
    json: bool,
    cancel: tokio_util::sync::CancellationToken,
}

/// `mcp call SERVER TOOL [--args JSON]`: the tool found by any of its names, the user's own
/// call checked ([`user_call::check`]) and sent, its progress on stderr, its result on stdout.
async fn call(
    policy: &crate::agent::permissions::Policy,
    rt: &Runtime,
    snap: &StatusSnapshot,
    server: &str,
    tool: &str,
    args: Option<&str>,
    how: CallHow,
) -> anyhow::Result<ExitCode> {
    let (timeout, as_json) = (how.timeout, how.json);
    let arguments = match args {
        None => None,
        Some(text) => Some(args_object(text)?),
    };
    let timeout = match timeout.map(|t| config::timeout_secs("--timeout", t)) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return Err(UsageError(e).into()),
        None => None,
    };
    ensure_connected(snap, server)?;
    let tools = server_tools(rt, server).await?;
    let Some(entry) = find_tool(&tools, server, tool) else {
        return Err(no_such_tool(rt, &tools, server, tool).await);
    };
    // The user's own call: it runs unless a deny rule of theirs names it.
    user_call::check(policy, &entry.name, Some(entry), arguments.as_ref())?;
    let mut msg = CallTool::new(&*entry.name, arguments);
    msg.timeout = timeout;
    msg.detach = how.no_wait;
    msg.cancel = how.cancel;
    let (progress, mut notices) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
    msg.progress = Some(ProgressSink::new(move |p| {
        let _ = progress.try_send(p);
    }));
    let started = std::time::Instant::now();
    let mut result = std::pin::pin!(user_call::call_tool(&rt.registry, msg));
    let result = loop {
        tokio::select! {
            r = &mut result => break r,
            Some(p) = notices.recv() => print_progress(p),
        }
    };
    let elapsed = started.elapsed();
    // The server queued every notice before it answered: the rest are printed before the
    // result.
    while let Ok(p) = notices.try_recv() {
        print_progress(p);
    }
    match result {
        Ok(r) if r.task.is_some() => super::tasks::started(&r, as_json),
        Ok(r) => {
            if as_json {
                say!("{}", to_json(&r, true)?);
            } else {
                say!("{}", clean_text(&r.text()));
            }
            tracing::info!(tool = %entry.name, elapsed = %fmt_duration(elapsed), is_error = r.is_error, "call done");
            Ok(if r.is_error {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        // With --json, `main` prints it as JSON too.
        Err(e) => Err(anyhow::Error::new(e)),
    }
}

/// The usage error of a call of a tool `server` does not have: why the registry filtered it
/// out, else the nearest name and every tool's.
async fn no_such_tool(
    rt: &Runtime,
    tools: &[ToolEntry],
    server: &str,
    tool: &str,
) -> anyhow::Error {
    let why = harness9_actors::messages::WhyFiltered {
        server: server.to_owned(),
        tool: tool.to_owned(),
    };
    if let Ok(Some(e)) = rt.registry.send(why).await {
        return UsageError(e.to_string()).into();
    }
    let names: Vec<&str> = tools.iter().map(|t| t.tool.name.as_str()).collect();
    let hint = nearest(&names, tool)
        .map(|n| format!("; did you mean \"{}\"?", clean_line(n)))
        .unwrap_or_default();
    UsageError(format!(
        "server \"{server}\" has no tool \"{}\"{hint} (tools: {})",
        clean_line(tool),
        names.join(", ")
    ))
    .into()
}

/// The tool `name` names on `server`: its name on the server, else the registered name the
/// model and the TUI use (`mcp__server__tool`), else that name without its prefix (a server
/// tool's dashes written as underscores).
pub(super) fn find_tool<'a>(
    tools: &'a [ToolEntry],
    server: &str,
    name: &str,
) -> Option<&'a ToolEntry> {
    tools
        .iter()
        .find(|t| t.tool.name == name)
        .or_else(|| tools.iter().find(|t| &*t.name == name))
        .or_else(|| {
            let registered = harness9_actors::naming::full_name(server, name);
            tools.iter().find(|t| *t.name == *registered)
        })
}

/// The name in `names` nearest to `typed` (edit distance, case ignored), when it is near
/// enough to be a typo: at most a third of the name's length, and at least 2.
pub(super) fn nearest<'a>(names: &[&'a str], typed: &str) -> Option<&'a str> {
    let typed: Vec<char> = typed.to_lowercase().chars().collect();
    let bound = (typed.len() / 3).max(2);
    names
        .iter()
        .map(|n| {
            let n_chars: Vec<char> = n.to_lowercase().chars().collect();
            (crate::base::text::edit_distance(&n_chars, &typed), *n)
        })
        .filter(|(d, _)| *d <= bound)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// `--args`: a JSON object given inline, or `-` to read it from stdin; anything else is a
/// usage error (exit 2).
pub(super) fn args_object(text: &str) -> anyhow::Result<Value> {
    let text = if text == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read --args from stdin")?;
        s
    } else {
        text.to_owned()
    };
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("--args is not valid JSON ({e}): {text:.200}")))?;
    if !v.is_object() {
        return Err(UsageError(
            "--args must be a JSON object, like '{\"text\": \"hi\"}'".to_owned(),
        )
        .into());
    }
    Ok(v)
}
