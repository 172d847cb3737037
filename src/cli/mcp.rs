//! `harness9 mcp list|get|call|approve|login|logout`: the servers, headless.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _};
use harness9_actors::error::fmt_duration;
use harness9_actors::messages::{
    CallTool, ListTools, ProgressSink, ServerState, ServerStatus, StatusSnapshot, ToolEntry,
    ToolProgress,
};
use harness9_actors::oauth;
use harness9_actors::{ServerSpec, ToolRegistry, TransportSpec};
use serde_json::{json, Value};

use super::{interrupted, McpCommand, Scope, Transport, UsageError};
use crate::app::config::{self, Config};
use crate::app::{spawn_event_printer, Runtime, Session, SessionOptions, Start};
use crate::sanitize::{clean_line, clean_text, to_json};

/// `println!` that returns an error (e.g. a closed pipe) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*)?;
    }};
}

/// Runs a `mcp` subcommand; every child is gone when this returns.
pub async fn run_mcp(opts: &SessionOptions, cmd: &McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::Approve { servers, .. } => {
            for line in crate::app::trust::approve(&opts.config_path, servers)? {
                say!("{line}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        McpCommand::Add {
            name,
            scope,
            env,
            headers,
            transport,
            command,
            ..
        } => {
            let entry = add_entry(env, headers, *transport, command)?;
            return edit_config(opts, *scope, name, Some(entry));
        }
        McpCommand::AddJson {
            name, json, scope, ..
        } => {
            let entry: Value = serde_json::from_str(json)
                .with_context(|| format!("the entry is not valid JSON: {json:.200}"))?;
            if !entry.is_object() {
                bail!("the entry must be a JSON object, like '{{\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}}'");
            }
            return edit_config(opts, *scope, name, Some(entry));
        }
        McpCommand::Remove { name, scope, .. } => return edit_config(opts, *scope, name, None),
        McpCommand::Import {
            from, file, scope, ..
        } => return import(opts, *from, file.as_deref(), *scope),
        _ => {}
    }
    let config = opts.load_config()?;
    if let McpCommand::Login { server, .. } | McpCommand::Logout { server, .. } = cmd {
        return oauth_command(&config, server, matches!(cmd, McpCommand::Login { .. })).await;
    }
    let only = match cmd {
        McpCommand::Get { server, .. }
        | McpCommand::Call { server, .. }
        | McpCommand::Resources { server, .. }
        | McpCommand::Read { server, .. }
        | McpCommand::Prompts { server, .. }
        | McpCommand::Prompt { server, .. } => Some(server.as_str()),
        _ => None,
    };
    let specs: Vec<ServerSpec> = match only {
        None => config.servers.clone(),
        Some(name) => {
            if config.disabled.iter().any(|d| d == name) {
                return Err(UsageError(format!(
                    "server \"{name}\" is disabled in {}",
                    config.path.display()
                ))
                .into());
            }
            let Some(s) = config.servers.iter().find(|s| s.name == name) else {
                return Err(unknown_server(&config, name).into());
            };
            vec![s.clone()]
        }
    };
    let start = Start {
        shutdown_grace: Some(crate::app::HEADLESS_GRACE),
        ..Start::default()
    };
    let mut session = Session::start(opts, &config, specs, start)?;
    crate::app::trust::print_hints(&config, only);
    spawn_event_printer(session.runtime.status.clone(), opts.verbose > 0);
    let rt = &mut session.runtime;
    let result = async {
        let bound = rt.max_startup + Duration::from_secs(5);
        let snap = if config.servers.is_empty() && only.is_none() {
            StatusSnapshot::default()
        } else {
            rt.settled(bound).await
        };
        match cmd {
            McpCommand::List(f) => list(&config, &snap, f.json.json),
            McpCommand::Get { server, json, .. } => get(rt, &snap, server, json.json).await,
            McpCommand::Call {
                server,
                tool,
                args,
                timeout,
                json,
                ..
            } => {
                call(
                    rt,
                    &snap,
                    server,
                    tool,
                    args.as_deref(),
                    *timeout,
                    json.json,
                )
                .await
            }
            McpCommand::Resources { server, json, .. } => {
                ensure_connected(&snap, server)?;
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
                ensure_connected(&snap, server)?;
                super::resources::read(rt, server, uri, out.as_deref(), json.json, *watch).await
            }
            McpCommand::Prompts { server, json, .. } => {
                ensure_connected(&snap, server)?;
                super::resources::prompts(rt, server, json.json).await
            }
            McpCommand::Prompt {
                server,
                name,
                args,
                json,
                ..
            } => {
                ensure_connected(&snap, server)?;
                super::resources::prompt(rt, server, name, args.as_deref(), json.json).await
            }
            _ => Ok(ExitCode::SUCCESS),
        }
    };
    let out = tokio::select! {
        r = result => r,
        _ = interrupted() => {
            eprintln!("[mcp] interrupted; stopping servers");
            let json = matches!(cmd, McpCommand::List(super::ListArgs { json, .. })
                | McpCommand::Get { json, .. }
                | McpCommand::Call { json, .. } if json.json);
            if json {
                say!("{}", to_json(&json!({"error": "interrupted", "code": 130}), false)?);
            }
            Ok(ExitCode::from(130))
        }
    };
    session.close().await;
    out
}

/// The usage error of a command naming a server the config does not have.
fn unknown_server(config: &Config, name: &str) -> UsageError {
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

/// `mcp login <server>` (the flow driver the runtime uses, started by the user) and
/// `mcp logout <server>` (forgets the server's grants).
async fn oauth_command(config: &Config, name: &str, login: bool) -> anyhow::Result<ExitCode> {
    let Some(spec) = config.servers.iter().find(|s| s.name == name) else {
        return Err(unknown_server(config, name).into());
    };
    let (TransportSpec::Http { url, .. }, Some(oauth)) = (&spec.transport, &spec.oauth) else {
        bail!("server \"{name}\" is not an HTTP server: OAuth is for HTTP servers only");
    };
    if !login {
        let had = oauth.store.forget(url).map_err(anyhow::Error::msg)?;
        say!(
            "{}",
            if had {
                format!(
                    "Logged out of server \"{name}\": its tokens and registration are forgotten."
                )
            } else {
                format!("Server \"{name}\" had no stored login.")
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let challenge = oauth::flow::probe(url).await;
    let show = |auth_url: &str| {
        eprintln!(
            "Opening the browser to log in to server \"{name}\". If it does not open, visit:\n  {}\n\
             If the browser is on another machine, paste here the address it ends on (the page that fails to load).",
            clean_line(auth_url)
        );
    };
    let mut pasted = pasted_lines();
    let flow = oauth::flow::login_with_paste(
        url,
        oauth,
        challenge.as_ref(),
        &[],
        &show,
        Some(&mut pasted),
    );
    let grant = tokio::select! {
        g = flow => g.map_err(|e| anyhow::anyhow!("login to server \"{name}\" failed: {e}"))?,
        _ = interrupted() => {
            eprintln!("[mcp] login interrupted");
            return Ok(ExitCode::from(130));
        }
    };
    say!(
        "Logged in to server \"{name}\" at {}; scopes: {}{}",
        clean_line(&grant.issuer),
        if grant.scopes.is_empty() {
            "(none)".to_owned()
        } else {
            clean_line(&grant.scopes.join(" ")).into_owned()
        },
        if grant.refresh_token.is_some() {
            " (refreshable)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Lines of stdin (each cut at 16 KiB) on a channel, read on a thread of their own that is
/// never joined: a login ends whether or not anybody typed.
fn pasted_lines() -> tokio::sync::mpsc::Receiver<String> {
    use std::io::{BufRead as _, Read as _};
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        loop {
            let mut line = String::new();
            match stdin.lock().take(16 * 1024).read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.blocking_send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn status_json(name: &str, st: &ServerState) -> Value {
    let mut v = json!({ "name": name, "transport": st.transport, "status": st.status.label() });
    match &st.status {
        ServerStatus::Connected { tools, info } => {
            v["tools"] = json!(tools);
            v["protocolVersion"] = json!(info.protocol_version);
            v["era"] = json!(info.era.label());
            v["serverInfo"] =
                json!({"name": info.server_info.name, "version": info.server_info.version});
            v["connectMs"] = json!(info.connect_time.as_secs_f64() * 1000.0);
        }
        ServerStatus::Failed { error, stderr_tail } => {
            v["error"] = json!(error);
            v["stderrTail"] = json!(stderr_tail);
        }
        ServerStatus::NeedsLogin { error, .. } => {
            v["error"] = json!(error);
            v["login"] = json!(format!(
                "harness9 mcp login {}",
                harness9_actors::spec::shell_quote(name)
            ));
        }
        ServerStatus::Restarting {
            attempt,
            last_error,
            ..
        } => {
            v["attempt"] = json!(attempt);
            v["error"] = json!(last_error);
        }
        ServerStatus::Starting { .. } => {
            v["error"] = json!("still starting (did not settle in time)")
        }
        ServerStatus::Unapproved { command_line } => {
            v["commandLine"] = json!(command_line);
            v["approve"] = json!(format!(
                "harness9 mcp approve {}",
                harness9_actors::spec::shell_quote(name)
            ));
        }
        _ => {}
    }
    v
}

fn list(config: &Config, snap: &StatusSnapshot, as_json: bool) -> anyhow::Result<ExitCode> {
    let failed = snap
        .values()
        .any(|s| !matches!(s.status, ServerStatus::Connected { .. }));
    let source = |name: &str| {
        config
            .sources
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&config.path, |(_, p)| p)
            .display()
            .to_string()
    };
    if as_json {
        let mut rows: Vec<Value> = snap
            .iter()
            .map(|(n, s)| {
                let mut v = status_json(n, s);
                v["source"] = json!(source(n));
                v
            })
            .collect();
        for d in &config.disabled {
            rows.push(json!({"name": d, "status": "disabled"}));
        }
        say!("{}", to_json(&rows, true)?);
    } else if snap.is_empty() && config.disabled.is_empty() {
        say!("no MCP servers configured in {}", config.path.display());
    } else {
        say!(
            "{:<20} {:<9} {:<11} {:>5}  {:<10} {:<9} {:>8}  DETAIL",
            "SERVER",
            "TRANSPORT",
            "STATUS",
            "TOOLS",
            "PROTOCOL",
            "ERA",
            "CONNECT"
        );
        for (name, st) in snap.iter() {
            let (tools, proto, time, detail, tail) = match &st.status {
                ServerStatus::Connected { tools, info } => (
                    tools.to_string(),
                    format!(
                        "{:<10} {:<9}",
                        clean_line(&info.protocol_version),
                        info.era.label()
                    ),
                    format!("{} ms", info.connect_time.as_millis()),
                    format!(
                        "{} {}",
                        clean_line(&info.server_info.name),
                        clean_line(&info.server_info.version)
                    ),
                    &[][..],
                ),
                ServerStatus::Failed { error, stderr_tail } => (
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    clean_line(error).into_owned(),
                    stderr_tail.as_slice(),
                ),
                ServerStatus::Restarting { last_error, .. } => (
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    clean_line(last_error).into_owned(),
                    &[][..],
                ),
                ServerStatus::NeedsLogin { error, .. } => (
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    clean_line(error).into_owned(),
                    &[][..],
                ),
                ServerStatus::Unapproved { command_line } => (
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!(
                        "would run: {command_line}; approve: harness9 mcp approve {}",
                        harness9_actors::spec::shell_quote(name)
                    ),
                    &[][..],
                ),
                _ => ("-".into(), "-".into(), "-".into(), String::new(), &[][..]),
            };
            // PROTOCOL and ERA: a connected server fills both, any other a dash.
            let proto = if proto == "-" {
                format!("{:<10} {:<9}", "-", "-")
            } else {
                proto
            };
            let name = clean_line(name);
            say!(
                "{name:<20} {:<9} {:<11} {tools:>5}  {proto:<20} {time:>8}  {detail}",
                st.transport,
                st.status.label()
            );
            let skip = tail.len().saturating_sub(10);
            for line in &tail[skip..] {
                say!("{:<20}   stderr: {}", "", clean_text(line));
            }
        }
        for d in &config.disabled {
            say!("{:<20} {:<9} {:<11}", clean_line(d), "-", "disabled");
        }
        // Where the servers come from, when it is not one file.
        if !config.sources.is_empty() || !config.shadowed.is_empty() {
            say!("\nproject config: {}", config.path.display());
            for (name, path) in &config.sources {
                say!("{:<20} from {}", clean_line(name), path.display());
            }
            for name in &config.shadowed {
                say!(
                    "{:<20} the user config's entry is shadowed by the project's",
                    clean_line(name)
                );
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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
                    "description": t.tool.description,
                    "inputSchema": t.tool.input_schema,
                })
            })
            .collect();
        say!("{}", to_json(&rows, true)?);
    } else {
        say!("server \"{}\": {} tools", clean_line(server), tools.len());
        for t in &tools {
            say!("\n{}  ({})", clean_line(&t.name), clean_line(&t.tool.name));
            if let Some(d) = &t.tool.description {
                for l in clean_text(d).lines() {
                    say!("  {l}");
                }
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
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a progress notification of a headless call to stderr.
fn print_progress(p: ToolProgress) {
    let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
    eprintln!(
        "[mcp] progress {}{total} {}",
        p.progress,
        clean_line(p.message.as_deref().unwrap_or_default())
    );
}

/// How many progress notices of a call wait to be printed; more are dropped (the server actor
/// hands them over without waiting).
const PROGRESS_QUEUE: usize = 256;

async fn call(
    rt: &Runtime,
    snap: &StatusSnapshot,
    server: &str,
    tool: &str,
    args: Option<&str>,
    timeout: Option<f64>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
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
    let Some(entry) = tools.iter().find(|t| t.tool.name == tool) else {
        let why = harness9_actors::messages::WhyFiltered {
            server: server.to_owned(),
            tool: tool.to_owned(),
        };
        if let Ok(Some(e)) = rt.registry.send(why).await {
            return Err(UsageError(e.to_string()).into());
        }
        let names: Vec<&str> = tools.iter().map(|t| t.tool.name.as_str()).collect();
        return Err(UsageError(format!(
            "server \"{server}\" has no tool \"{tool}\" (tools: {})",
            names.join(", ")
        ))
        .into());
    };
    let mut msg = CallTool::new(entry.name.clone(), arguments);
    msg.timeout = timeout;
    let (progress, mut notices) = tokio::sync::mpsc::channel(PROGRESS_QUEUE);
    msg.progress = Some(ProgressSink::new(move |p| {
        let _ = progress.try_send(p);
    }));
    let started = std::time::Instant::now();
    let mut result = std::pin::pin!(ToolRegistry::send(&rt.registry, msg));
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

/// The `.mcp.json` entry `mcp add` writes.
fn add_entry(
    env: &[String],
    headers: &[String],
    transport: Option<Transport>,
    command: &[String],
) -> anyhow::Result<Value> {
    let first = command.first().map(String::as_str).unwrap_or_default();
    let is_url = first.starts_with("http://") || first.starts_with("https://");
    let transport = transport.unwrap_or(if is_url {
        Transport::Http
    } else {
        Transport::Stdio
    });
    match transport {
        Transport::Stdio => {
            if !headers.is_empty() {
                bail!("-H/--header is for HTTP servers; a stdio server takes -e KEY=VALUE");
            }
            let mut env_map = serde_json::Map::new();
            for e in env {
                let Some((k, v)) = e.split_once('=') else {
                    bail!("-e {e:?} is not KEY=VALUE");
                };
                env_map.insert(k.to_owned(), json!(v));
            }
            let mut entry = json!({ "command": first, "args": &command[1..] });
            if !env_map.is_empty() {
                entry["env"] = Value::Object(env_map);
            }
            Ok(entry)
        }
        Transport::Http | Transport::Sse => {
            if command.len() != 1 || !is_url {
                bail!("an HTTP server takes one URL (http:// or https://), e.g. `harness9 mcp add docs https://example.com/mcp`");
            }
            if !env.is_empty() {
                bail!("-e/--env is for stdio servers; an HTTP server takes -H 'Name: value'");
            }
            let mut hmap = serde_json::Map::new();
            for h in headers {
                let Some((k, v)) = h.split_once(':') else {
                    bail!("-H {h:?} is not 'Name: value'");
                };
                hmap.insert(k.trim().to_owned(), json!(v.trim()));
            }
            let mut entry = json!({ "type": if transport == Transport::Sse { "sse" } else { "http" }, "url": first });
            if !hmap.is_empty() {
                entry["headers"] = Value::Object(hmap);
            }
            Ok(entry)
        }
    }
}

/// The file `mcp add`/`remove`/`import` edit.
fn scope_path(opts: &SessionOptions, scope: Scope) -> anyhow::Result<std::path::PathBuf> {
    Ok(match scope {
        Scope::Project => opts.config_path.clone(),
        Scope::User => crate::app::sources::user_path()
            .context("no user config: neither XDG_CONFIG_HOME nor HOME is set")?,
    })
}

/// `mcp import`: every server of the other tool's file whose name is not taken yet, added in
/// one atomic write; prints what was imported and what was skipped, and why.
fn import(
    opts: &SessionOptions,
    from: crate::app::import::Source,
    file: Option<&std::path::Path>,
    scope: Scope,
) -> anyhow::Result<ExitCode> {
    let root = std::env::current_dir().context("cannot read the working directory")?;
    let project_root = opts
        .config_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| root.clone());
    let source = match file {
        Some(f) => f.to_path_buf(),
        None => crate::app::import::default_path(from, &project_root),
    };
    let text = std::fs::read_to_string(&source).with_context(|| {
        format!(
            "cannot read {} (give another with --file)",
            source.display()
        )
    })?;
    let found = crate::app::import::servers(from, &text, &project_root)
        .map_err(|why| anyhow::anyhow!("{}: {why}", source.display()))?;
    if found.is_empty() {
        say!("no MCP servers in {}", source.display());
        return Ok(ExitCode::SUCCESS);
    }
    let path = scope_path(opts, scope)?;
    let mut target = read_target(&path, true)?;
    let shown = path.display().to_string();
    let (mut imported, mut skipped) = (Vec::new(), Vec::new());
    for (name, entry) in found {
        // An entry that would not load here (a field we cannot read) is skipped; variables
        // are left for load time.
        let added = crate::app::edit::add_server(&target, &name, &entry).and_then(|next| {
            entry_loads(&next, &path, &name, &|_| Some(String::new())).map(|()| next)
        });
        match added {
            Ok(next) => {
                target = next;
                imported.push(name);
            }
            Err(why) => skipped.push((name, why)),
        }
    }
    if !imported.is_empty() {
        save_target(opts, scope, &path, &target, &imported)?;
    }
    for name in &imported {
        say!("imported {} into {shown}", clean_line(name));
    }
    for (name, why) in &skipped {
        say!("skipped {}: {}", clean_line(name), clean_line(why));
    }
    Ok(ExitCode::SUCCESS)
}

/// Adds (`Some(entry)`) or removes (`None`) server `name` in the scope's file, keeping the rest
/// of it; checks the result parses as a config; a project server added here is approved (the
/// user wrote it).
fn edit_config(
    opts: &SessionOptions,
    scope: Scope,
    name: &str,
    entry: Option<Value>,
) -> anyhow::Result<ExitCode> {
    let path = scope_path(opts, scope)?;
    let text = read_target(&path, entry.is_some())?;
    let edited = match &entry {
        Some(e) => crate::app::edit::add_server(&text, name, e),
        None => crate::app::edit::remove_server(&text, name),
    }
    .map_err(|why| anyhow::anyhow!("{}: {why}", path.display()))?;
    let shown = path.display().to_string();
    // Only a file that still loads is written (an entry with a bad field holds its server:
    // said here, before it is saved).
    entry_loads(&edited, &path, name, &|v| std::env::var(v).ok())
        .map_err(|why| anyhow::anyhow!("{why}"))?;
    match entry {
        Some(_) => {
            save_target(opts, scope, &path, &edited, &[name.to_owned()])?;
            say!("added server \"{}\" to {shown}", clean_line(name));
        }
        None => {
            crate::app::edit::write_atomic(&path, &edited)
                .with_context(|| format!("cannot write {shown}"))?;
            say!("removed server \"{}\" from {shown}", clean_line(name));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The text of the config file `mcp add`/`remove`/`import` edit; a missing one is empty when
/// `missing_ok` (adding creates it).
fn read_target(path: &std::path::Path, missing_ok: bool) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && missing_ok => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Whether server `name` of an edited file's `text` loads: the file must parse, and the entry
/// must not be held as invalid (`lookup` resolves `${VAR}`s).
fn entry_loads(
    text: &str,
    path: &std::path::Path,
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let shown = path.display().to_string();
    let base = path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let cfg = config::parse(text, &shown, &base, lookup)
        .map_err(|e| format!("the edit would break {shown}: {e}"))?;
    match cfg
        .servers
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.hold.clone())
    {
        Some(harness9_actors::Hold::Invalid(why)) => Err(why),
        _ => Ok(()),
    }
}

/// Writes an edited file that added `added`; servers added to the project file are approved
/// (the user wrote them).
fn save_target(
    opts: &SessionOptions,
    scope: Scope,
    path: &std::path::Path,
    text: &str,
    added: &[String],
) -> anyhow::Result<()> {
    crate::app::edit::write_atomic(path, text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    if scope == Scope::Project && opts.user_config.is_some() {
        crate::app::trust::approve(path, added)?;
    }
    Ok(())
}
