//! `harness9 mcp list`: every configured server's status, where its tools come from (live or
//! the cache, and its age), its tool-definition size, protocol, era and connect time; text or
//! JSON.

use std::process::ExitCode;

use harness9_actors::messages::{ListTools, ServerState, ServerStatus, StatusSnapshot, ToolEntry};
use serde_json::{json, Value};

use crate::app::config::Config;
use crate::app::Runtime;
use crate::sanitize::{clean_line, clean_text, to_json};

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
        ServerStatus::Cached { tools, .. } => v["tools"] = json!(tools),
        ServerStatus::Unapproved { command_line, .. } => {
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

/// The OAuth grant of HTTP server `name` of `config`, if it is one.
fn oauth_grant(config: &Config, name: &str) -> Option<harness9_actors::oauth::GrantKind> {
    let spec = config.servers.iter().find(|s| s.name == name)?;
    Some(spec.oauth.as_ref()?.config.grant)
}

/// Each server's registered tool definitions as the model gets them (name, description,
/// input schema), in bytes: by server name.
pub(super) async fn tool_sizes(rt: &Runtime) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(all) = rt.registry.send(ListTools).await else {
        return out;
    };
    for e in all.iter() {
        let Some(server) = &e.server else { continue };
        *out.entry(server.to_string()).or_default() += definition_bytes(e);
    }
    out
}

/// The bytes of one tool's definition as a model request carries it (the same measure as
/// `/tools` and the engine's deferral).
pub(crate) fn definition_bytes(e: &ToolEntry) -> usize {
    crate::agent::toolsearch::entry_def(e).map_or(0, |d| crate::agent::toolsearch::def_bytes(&d))
}

/// `3 s`, `5 min`, `2 h`, `3 d`: an age, coarsely.
fn age_of(written: std::time::SystemTime) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(written)
        .unwrap_or_default()
        .as_secs();
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        7200..=172_799 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// Where a server's tools come from (`live` or `cache`) and how old the cache entry offered
/// for it is, if one was.
fn tools_source(st: &ServerStatus) -> (&'static str, Option<std::time::SystemTime>) {
    match st {
        ServerStatus::Connected { info, .. } => ("live", info.cache_written),
        ServerStatus::Cached { written, .. } => ("cache", Some(*written)),
        _ => ("none", None),
    }
}

/// `mcp list`: every server's status (a table, or JSON with `--json`); exit code 1 when one
/// is neither connected nor offered from the cache.
pub(super) fn list(
    config: &Config,
    snap: &StatusSnapshot,
    sizes: &std::collections::BTreeMap<String, usize>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let failed = snap.values().any(|s| {
        !matches!(
            s.status,
            ServerStatus::Connected { .. } | ServerStatus::Cached { .. }
        )
    });
    if as_json {
        let mut rows: Vec<Value> = snap
            .iter()
            .map(|(n, s)| server_json(config, n, s, sizes))
            .collect();
        for d in &config.disabled {
            rows.push(json!({"name": d, "status": "disabled", "source": source_of(config, d)}));
        }
        say!("{}", to_json(&rows, true)?);
    } else if snap.is_empty() && config.disabled.is_empty() {
        say!("no MCP servers configured in {}", config.path.display());
    } else {
        print_table(config, snap, sizes)?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The file server `name` comes from.
fn source_of(config: &Config, name: &str) -> String {
    config
        .sources
        .iter()
        .find(|(n, _)| n == name)
        .map_or(&config.path, |(_, p)| p)
        .display()
        .to_string()
}

/// One server's row of `mcp list --json`.
fn server_json(
    config: &Config,
    n: &str,
    s: &ServerState,
    sizes: &std::collections::BTreeMap<String, usize>,
) -> Value {
    let mut v = status_json(n, s);
    let (from, written) = tools_source(&s.status);
    v["toolsFrom"] = json!(from);
    v["cacheAgeMs"] = json!(written.map(|w| std::time::SystemTime::now()
        .duration_since(w)
        .unwrap_or_default()
        .as_millis() as u64));
    let bytes = sizes.get(n).copied().unwrap_or(0);
    v["toolBytes"] = json!(bytes);
    v["toolTokens"] = json!(crate::agent::toolsearch::tokens(bytes));
    // What it runs or reaches, as its file writes it (`${VAR}` names, never their values), for
    // every server.
    if v.get("commandLine").is_none() {
        if let Some(spec) = config.servers.iter().find(|s| s.name == *n) {
            v["commandLine"] = json!(crate::app::config::trust::shown(config, spec));
        }
    }
    v["source"] = json!(source_of(config, n));
    if let Some(grant) = oauth_grant(config, n) {
        v["oauthGrant"] = json!(grant.name());
    }
    v
}

/// `mcp list`'s table: a row per server (a failed one's stderr tail under it), the disabled
/// entries, and where the servers come from when it is not one file.
fn print_table(
    config: &Config,
    snap: &StatusSnapshot,
    sizes: &std::collections::BTreeMap<String, usize>,
) -> anyhow::Result<()> {
    say!(
        "{:<20} {:<9} {:<11} {:>5} {:>7}  {:<10} {:<9} {:>8}  DETAIL",
        "SERVER",
        "TRANSPORT",
        "STATUS",
        "TOOLS",
        "~TOKENS",
        "PROTOCOL",
        "ERA",
        "CONNECT"
    );
    for (name, st) in snap.iter() {
        let Columns {
            tools,
            proto,
            time,
            detail,
            tail,
        } = columns(name, &st.status);
        // A grant without a user is said: its tokens come from credentials, not a login.
        let detail = match oauth_grant(config, name).filter(|g| g.unattended()) {
            Some(g) => format!("{detail} (oauth: {} grant)", g.name()),
            None => detail,
        };
        // PROTOCOL and ERA: a connected server fills both, any other a dash.
        let proto = if proto == "-" {
            format!("{:<10} {:<9}", "-", "-")
        } else {
            proto
        };
        let tokens = match sizes.get(name.as_str()) {
            Some(b) => crate::agent::toolsearch::tokens(*b).to_string(),
            None => "-".into(),
        };
        let name = clean_line(name);
        say!(
            "{name:<20} {:<9} {:<11} {tools:>5} {tokens:>7}  {proto:<20} {time:>8}  {detail}",
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
    if !config.sources.is_empty() {
        say!("\nproject config: {}", config.path.display());
        for (name, path) in &config.sources {
            say!("{:<20} from {}", clean_line(name), path.display());
        }
    }
    Ok(())
}

/// A table row's columns that depend on the status.
struct Columns<'a> {
    tools: String,
    /// PROTOCOL and ERA together (a dash when not connected).
    proto: String,
    /// CONNECT.
    time: String,
    detail: String,
    /// The stderr tail of a failed server.
    tail: &'a [String],
}

/// The columns of server `name` in `status`.
fn columns<'a>(name: &str, status: &'a ServerStatus) -> Columns<'a> {
    let dashes = |detail: String, tail: &'a [String]| Columns {
        tools: "-".into(),
        proto: "-".into(),
        time: "-".into(),
        detail,
        tail,
    };
    match status {
        ServerStatus::Connected { tools, info } => Columns {
            tools: tools.to_string(),
            proto: format!(
                "{:<10} {:<9}",
                clean_line(&info.protocol_version),
                info.era.label()
            ),
            time: format!("{} ms", info.connect_time.as_millis()),
            detail: format!(
                "{}; tools live{}",
                clean_line(&info.server_info.label()),
                info.cache_written
                    .map(|w| format!(" (the cache offered was {} old)", age_of(w)))
                    .unwrap_or_default()
            ),
            tail: &[],
        },
        ServerStatus::Cached {
            tools,
            written,
            starting,
        } => Columns {
            tools: tools.to_string(),
            proto: "-".into(),
            time: "-".into(),
            detail: format!(
                "tools from the cache, {} old; {}",
                age_of(*written),
                if starting.is_some() {
                    "still starting"
                } else {
                    "not started: starts on its first call (lazy)"
                }
            ),
            tail: &[],
        },
        ServerStatus::Failed { error, stderr_tail } => {
            dashes(clean_line(error).into_owned(), stderr_tail.as_slice())
        }
        ServerStatus::Restarting { last_error, .. } => {
            dashes(clean_line(last_error).into_owned(), &[])
        }
        ServerStatus::NeedsLogin { error, .. } => dashes(clean_line(error).into_owned(), &[]),
        ServerStatus::Unapproved { command_line, .. } => dashes(
            format!(
                "would run: {command_line}; approve: harness9 mcp approve {}",
                harness9_actors::spec::shell_quote(name)
            ),
            &[],
        ),
        _ => dashes(String::new(), &[]),
    }
}
