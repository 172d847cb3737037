//! `harness9 mcp add|add-json|remove|import`: editing a config file's servers (spliced into
//! the text, written atomically) and reading other tools' configs.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use super::{Scope, Transport};
use crate::app::config::{self};
use crate::app::SessionOptions;
use crate::sanitize::clean_line;

/// The `.mcp.json` entry `mcp add` writes.
pub(super) fn add_entry(
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
pub(super) fn scope_path(
    opts: &SessionOptions,
    scope: Scope,
) -> anyhow::Result<std::path::PathBuf> {
    Ok(match scope {
        Scope::Project => opts.config_path.clone(),
        Scope::User => crate::app::sources::user_path()
            .context("no user config: neither XDG_CONFIG_HOME nor HOME is set")?,
    })
}

/// `mcp import`: every server of the other tool's file whose name is not taken yet, added in
/// one atomic write; prints what was imported and what was skipped, and why.
pub(super) fn import(
    opts: &SessionOptions,
    from: crate::app::import::Source,
    file: Option<&std::path::Path>,
    scope: Scope,
) -> anyhow::Result<ExitCode> {
    let root = std::env::current_dir().context("cannot read the working directory")?;
    // The directory holding the project config; above `.vscode` for VS Code's file.
    let project_root = opts
        .config_path
        .parent()
        .and_then(crate::app::config::workspace_root)
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
pub(super) fn edit_config(
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
pub(super) fn read_target(path: &std::path::Path, missing_ok: bool) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && missing_ok => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Whether server `name` of an edited file's `text` loads: the file must parse, and the entry
/// must not be held as invalid (`lookup` resolves `${VAR}`s).
pub(super) fn entry_loads(
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
pub(super) fn save_target(
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
