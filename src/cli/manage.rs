//! `harness9 mcp add|add-json|remove|import`: editing a config file's servers (spliced into
//! the text, written atomically) and reading other tools' configs.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use std::path::{Path, PathBuf};

use super::{Scope, Transport, UsageError};
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

/// The file `mcp add`/`add-json`/`remove`/`import` edit: harness9's own. The project scope is
/// the `--config` file when one is named, else the project's `.mcp.json` (beside a found
/// `.vscode/mcp.json`, never that file: it is VS Code's, usually committed, and what is
/// written there loads in VS Code too); the user scope is the user's harness9 file.
pub(super) fn scope_path(
    opts: &SessionOptions,
    scope: Scope,
) -> anyhow::Result<std::path::PathBuf> {
    Ok(match scope {
        Scope::Project if opts.config_must_exist => opts.config_path.clone(),
        Scope::Project => own_project_file(&opts.config_path),
        Scope::User => crate::app::config::sources::user_path()
            .context("no user config: neither XDG_CONFIG_HOME nor HOME is set")?,
    })
}

/// The project's `.mcp.json` for a found project config `found` (ours, or VS Code's
/// `.vscode/mcp.json`: then the `.mcp.json` of the directory above `.vscode`).
fn own_project_file(found: &Path) -> PathBuf {
    let dir = found.parent().unwrap_or(Path::new(""));
    let root = match dir.file_name() {
        Some(n) if n == ".vscode" => dir.parent().unwrap_or(Path::new("")),
        _ => dir,
    };
    root.join(config::DEFAULT_PATH)
}

/// When `path` (harness9's project file) is about to be made beside a VS Code file that the
/// project config was read from: the note that harness9 reads `.mcp.json` from now on.
fn shadow_note(opts: &SessionOptions, scope: Scope, path: &Path) -> Option<String> {
    // The user's file is read beside any project file: it shadows nothing.
    let shadows = scope == Scope::Project
        && !opts.config_must_exist
        && opts.config_path != path
        && !path.exists();
    shadows.then(|| {
        format!(
            "note: {} is harness9's project file from now on, read instead of {} (left as it is); bring its servers over with `harness9 mcp import --from vscode`",
            clean_line(&path.display().to_string()),
            clean_line(&opts.config_path.display().to_string())
        )
    })
}

/// A usage or config mistake (exit code 2).
fn usage(message: String) -> anyhow::Error {
    UsageError(message).into()
}

/// `mcp import`: every server of the other tool's file whose name is not taken yet, added in
/// one atomic write after every entry was checked; prints what was imported, each field left
/// out (once, with the servers that had it) and what was skipped, and why.
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
    let text = std::fs::read_to_string(&source).map_err(|e| {
        let message = format!(
            "cannot read {} ({e}); give another with --file",
            source.display()
        );
        if e.kind() == std::io::ErrorKind::NotFound {
            usage(message)
        } else {
            anyhow::anyhow!(message)
        }
    })?;
    let found = crate::app::import::servers(from, &text, &project_root)
        .map_err(|why| usage(format!("{}: {why}", source.display())))?;
    if found.is_empty() {
        say!("no MCP servers in {}", source.display());
        return Ok(ExitCode::SUCCESS);
    }
    let path = scope_path(opts, scope)?;
    if path == source {
        return Err(usage(format!(
            "{} is both the file read and the file written; name the file to write with --config, or use --scope user",
            path.display()
        )));
    }
    let merged = Merged::of(found, read_target(&path, true)?, &path, opts);
    if !merged.imported.is_empty() {
        // The whole file once more: it must still load as a config.
        check_file(&merged.target, &path, opts)?;
        let note = shadow_note(opts, scope, &path);
        save_target(opts, scope, &path, &merged.target, &merged.imported)?;
        if let Some(note) = note {
            say!("{note}");
        }
    }
    merged.report(&path.display().to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// The servers `mcp import` found, merged into the target file's text one by one.
struct Merged {
    /// The target file's text with every imported server.
    target: String,
    /// Each server imported, and whether it is disabled.
    imported: Vec<(String, bool)>,
    /// Each server skipped, and why.
    skipped: Vec<(String, String)>,
    /// Each field left out: (field, why) -> the servers that had it.
    dropped: Vec<((String, String), Vec<String>)>,
}

impl Merged {
    /// `found` merged into `target`, the text of the file at `path`. An entry that would not
    /// load here (a field we cannot read) is skipped; variables are left for load time. Each
    /// is checked alone, so a warning is said once.
    fn of(
        found: Vec<crate::app::import::Found>,
        target: String,
        path: &std::path::Path,
        opts: &SessionOptions,
    ) -> Merged {
        let mut m = Merged {
            target,
            imported: Vec::new(),
            skipped: Vec::new(),
            dropped: Vec::new(),
        };
        for f in found {
            let added = crate::app::edit::add_server("", &f.name, &f.entry)
                .and_then(|alone| {
                    entry_loads(&alone, path, &f.name, &|_| Some(String::new()), opts)
                })
                .and_then(|off| {
                    crate::app::edit::add_server(&m.target, &f.name, &f.entry).map(|t| (t, off))
                });
            match added {
                Ok((next, off)) => {
                    m.target = next;
                    m.imported.push((f.name.clone(), off));
                    for field in f.dropped {
                        match m.dropped.iter_mut().find(|(k, _)| *k == field) {
                            Some((_, names)) => names.push(f.name.clone()),
                            None => m.dropped.push((field, vec![f.name.clone()])),
                        }
                    }
                }
                Err(why) => m.skipped.push((f.name, why)),
            }
        }
        m
    }

    /// Says what was imported into `shown`, the fields left out, the servers skipped.
    fn report(&self, shown: &str) -> anyhow::Result<()> {
        for (name, off) in &self.imported {
            let off = if *off { " (disabled)" } else { "" };
            say!("imported {}{off} into {shown}", clean_line(name));
        }
        for ((field, why), names) in &self.dropped {
            let names: Vec<String> = names.iter().map(|n| clean_line(n).into_owned()).collect();
            say!(
                "left out \"{}\" of {} server{} ({}): {}",
                clean_line(field),
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                clean_line(why)
            );
        }
        for (name, why) in &self.skipped {
            say!("skipped {}: {}", clean_line(name), clean_line(why));
        }
        Ok(())
    }
}

/// Adds (`Some(entry)`) or removes (`None`) server `name` in the scope's file, keeping the rest
/// of it; checks the result loads as a config before writing; a project server added here is
/// approved (the user wrote it).
pub(super) fn edit_config(
    opts: &SessionOptions,
    scope: Scope,
    name: &str,
    entry: Option<Value>,
) -> anyhow::Result<ExitCode> {
    let path = scope_path(opts, scope)?;
    if entry.is_none() && !path.exists() {
        let mut message = format!("there is no {} to remove \"{name}\" from", path.display());
        if path != opts.config_path {
            message.push_str(&format!(
                "; to edit {} name it with --config",
                opts.config_path.display()
            ));
        }
        return Err(usage(message));
    }
    if let Some(Value::Object(m)) = &entry {
        warn_unknown_fields(name, m);
    }
    let text = read_target(&path, entry.is_some())?;
    let edited = match &entry {
        Some(e) => crate::app::edit::add_server(&text, name, e),
        None => crate::app::edit::remove_server(&text, name),
    }
    .map_err(|why| {
        let mut message = format!("{}: {why}", path.display());
        if entry.is_none() && path != opts.config_path {
            message.push_str(&format!(
                "; to edit {} name it with --config",
                opts.config_path.display()
            ));
        }
        usage(message)
    })?;
    let shown = path.display().to_string();
    match entry {
        Some(e) => {
            let target = Target {
                opts,
                scope,
                path: &path,
                name,
            };
            save_added(&target, &e, &edited)?;
        }
        None => {
            check_file(&edited, &path, opts)?;
            crate::app::edit::write_atomic(&path, &edited)
                .with_context(|| format!("cannot write {shown}"))?;
            say!("removed server \"{}\" from {shown}", clean_line(name));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Kept as written, but not silently: a field of a new entry this version does not read.
fn warn_unknown_fields(name: &str, entry: &serde_json::Map<String, Value>) {
    for field in entry.keys() {
        let known = crate::app::import::ENTRY_FIELDS.contains(&field.as_str())
            || crate::app::config::foreign_reason(field).is_some();
        if !known {
            tracing::warn!(
                "server \"{}\": \"{}\" is not a field harness9 reads; it is written as given and ignored",
                clean_line(name),
                clean_line(field)
            );
        }
    }
}

/// The file `mcp add` writes a server into.
struct Target<'a> {
    opts: &'a SessionOptions,
    scope: Scope,
    path: &'a std::path::Path,
    /// The server's name.
    name: &'a str,
}

/// `mcp add`'s write: the `edited` file with the new `entry`, checked first, saved, and said
/// (disabled or not, with the variables it names that are not set here).
fn save_added(t: &Target<'_>, entry: &Value, edited: &str) -> anyhow::Result<()> {
    let (off, unset) = check_added(t, entry, edited)?;
    let note = shadow_note(t.opts, t.scope, t.path);
    save_target(t.opts, t.scope, t.path, edited, &[(t.name.to_owned(), off)])?;
    if let Some(note) = note {
        say!("{note}");
    }
    let off = if off {
        format!(
            " (disabled: once you remove \"disabled\", approve it with `harness9 mcp approve {}`)",
            clean_line(t.name)
        )
    } else {
        String::new()
    };
    let shown = t.path.display().to_string();
    say!("added server \"{}\" to {shown}{off}", clean_line(t.name));
    // `${input:ID}`s are asked for by the interactive session: no warning.
    for var in unset.iter().filter(|v| !v.starts_with("input:")) {
        eprintln!(
            "warning: server \"{}\" refers to ${{{v}}}, which is not set in this shell; set {v} before the server starts (saved as written)",
            clean_line(t.name),
            v = clean_line(var),
        );
    }
    Ok(())
}

/// Only a file that still loads is written (an entry with a bad field holds its server: said
/// here, before it is saved). A `${VAR}` is checked for its syntax, not its value: saving a
/// config never needs the secret. One not set here loads as empty for the check, and is
/// named. Whether the entry is disabled, and the entry's variables not set here.
fn check_added(t: &Target<'_>, entry: &Value, edited: &str) -> anyhow::Result<(bool, Vec<String>)> {
    let unset = std::cell::RefCell::new(Vec::<String>::new());
    let lookup = |v: &str| {
        std::env::var(v).ok().or_else(|| {
            let mut unset = unset.borrow_mut();
            if !unset.iter().any(|u| u == v) {
                unset.push(v.to_owned());
            }
            Some(String::new())
        })
    };
    let off = entry_loads(edited, t.path, t.name, &lookup, t.opts);
    // The file's other servers are looked up too: only this entry's are said.
    let entry_text = entry.to_string();
    let mut unset = unset.into_inner();
    unset.retain(|v| {
        entry_text.contains(&format!("${{{v}}}")) || entry_text.contains(&format!("${{{v}:-"))
    });
    let off = off.map_err(|why| {
        if unset.is_empty() {
            return usage(why);
        }
        let names: Vec<String> = unset.iter().map(|v| format!("${{{v}}}")).collect();
        usage(format!(
            "{why} (checked with {} empty: not set here)",
            names.join(", ")
        ))
    })?;
    Ok((off, unset))
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

/// Whether an edited file's `text` still parses as a config (variables are left for load time).
fn check_file(text: &str, path: &Path, opts: &SessionOptions) -> anyhow::Result<()> {
    let shown = path.display().to_string();
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let defaults = &opts.runtime.entries;
    config::parse(text, &shown, &base, &|_| Some(String::new()), defaults)
        .map(drop)
        .map_err(|e| usage(format!("the edit would break {shown}: {e}")))
}

/// Whether server `name` of an edited file's `text` loads: the file must parse, and the entry
/// must not be held as invalid (`lookup` resolves `${VAR}`s). `Ok(true)` for an entry that is
/// disabled (`"disabled": true`). It loads as a session of `opts` loads it.
pub(super) fn entry_loads(
    text: &str,
    path: &std::path::Path,
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    opts: &SessionOptions,
) -> Result<bool, String> {
    let shown = path.display().to_string();
    let base = path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let cfg = config::parse(text, &shown, &base, lookup, &opts.runtime.entries)
        .map_err(|e| format!("the edit would break {shown}: {e}"))?;
    if cfg.disabled.iter().any(|d| d == name) {
        return Ok(true);
    }
    match cfg
        .servers
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.hold.clone())
    {
        Some(harness9_actors::Hold::Invalid(why)) => Err(why),
        _ => Ok(false),
    }
}

/// Writes an edited file that added `added` (each with whether it is disabled); the servers
/// added to the project file are approved (the user wrote them), a disabled one when it is
/// turned on. The approvals file is read before the config is written, so a failure leaves
/// both as they were.
pub(super) fn save_target(
    opts: &SessionOptions,
    scope: Scope,
    path: &std::path::Path,
    text: &str,
    added: &[(String, bool)],
) -> anyhow::Result<()> {
    let approve = scope == Scope::Project && opts.user_config.is_some();
    if approve {
        crate::app::config::trust::Approvals::load(&crate::app::config::trust::store_path())?;
    }
    crate::app::edit::write_atomic(path, text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let on: Vec<String> = added
        .iter()
        .filter(|(_, off)| !off)
        .map(|(n, _)| n.clone())
        .collect();
    if approve && !on.is_empty() {
        crate::app::config::trust::approve(path, &on, &opts.runtime.entries)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_add_keeps_a_windows_command_and_its_arguments_whole() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let entry = add_entry(
            &words(&[r"ROOT=C:\Users\Ann Lee\x=y"]),
            &[],
            None,
            &words(&[
                r"C:\Program Files\My Server\server.exe",
                "--root",
                r"D:\a b\",
            ]),
        )
        .expect("entry");
        assert_eq!(
            entry,
            json!({
                "command": r"C:\Program Files\My Server\server.exe",
                "args": ["--root", r"D:\a b\"],
                "env": {"ROOT": r"C:\Users\Ann Lee\x=y"},
            })
        );
        // A drive letter is not a URL scheme: still a stdio server.
        let entry = add_entry(&[], &[], None, &words(&[r"c:\tools\srv.cmd"])).expect("entry");
        assert_eq!(entry["command"], r"c:\tools\srv.cmd");
    }
}
