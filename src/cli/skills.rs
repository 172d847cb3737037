//! `harness9 mcp skills list|get SERVER [SKILL]`: a server's skills (the Skills extension,
//! SEP-2640), headless. `list` reads no file of any skill; `get` loads one skill (its
//! `SKILL.md`, verified) and, with `--file`, one more listed file (verified). Every server
//! string is printed through the sanitizer (`--json` through `to_json`).

use std::process::ExitCode;

use harness9_actors::protocol::skills::SkillEntry;
use harness9_actors::skills as loader;
use serde_json::{json, Value};

use super::{SkillsAction, UsageError};
use crate::app::Runtime;
use crate::sanitize::{clean_line, clean_text, to_json};

/// What `mcp skills` was asked.
pub struct Ask<'a> {
    /// `list` or `get`.
    pub action: SkillsAction,
    /// `get`: the skill's name or `SKILL.md` URI.
    pub skill: Option<&'a str>,
    /// `get --file`: one more file of the skill.
    pub file: Option<&'a str>,
    /// `--json`.
    pub as_json: bool,
}

/// Runs `mcp skills list|get`.
pub async fn skills(rt: &Runtime, server: &str, ask: Ask<'_>) -> anyhow::Result<ExitCode> {
    match (ask.action, ask.skill) {
        (SkillsAction::List, None) if ask.file.is_none() => list(rt, server, ask.as_json).await,
        (SkillsAction::List, _) => Err(UsageError(
            "`mcp skills list SERVER` takes no skill and no --file; use `mcp skills get SERVER SKILL`"
                .to_owned(),
        )
        .into()),
        (SkillsAction::Get, Some(skill)) => get(rt, server, skill, ask.file, ask.as_json).await,
        (SkillsAction::Get, None) => Err(UsageError(
            "`mcp skills get SERVER SKILL` needs the skill's name or the URI of its SKILL.md (see `mcp skills list SERVER`)"
                .to_owned(),
        )
        .into()),
    }
}

/// An entry as `--json` shows it.
fn entry_json(server: &str, e: &SkillEntry) -> Value {
    let resources = match &e.files {
        None => json!("dynamic"),
        Some(files) => Value::Array(
            files
                .iter()
                .map(|f| json!({"uri": f.uri, "path": f.path, "digest": f.digest, "size": f.size}))
                .collect(),
        ),
    };
    json!({
        "server": server,
        "uri": e.uri,
        "name": e.name,
        "description": e.description,
        "frontmatter": e.frontmatter,
        "resources": resources,
    })
}

/// One line about a skill's files.
fn files_line(e: &SkillEntry) -> String {
    match &e.files {
        None => "dynamic files (not verifiable: not loaded)".to_owned(),
        Some(f) => format!("{} files, {} bytes", f.len(), e.total_bytes()),
    }
}

async fn list(rt: &Runtime, server: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let listing = loader::list(&rt.registry, server).await?;
    if as_json {
        let skills: Vec<Value> = listing
            .skills
            .iter()
            .map(|e| entry_json(server, e))
            .collect();
        let invalid: Vec<Value> = listing
            .invalid
            .iter()
            .map(|(uri, why)| json!({"uri": uri, "error": why}))
            .collect();
        say!(
            "{}",
            to_json(&json!({"skills": skills, "invalid": invalid}), true)?
        );
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "server \"{}\": {} skills",
        clean_line(server),
        listing.skills.len()
    );
    for e in &listing.skills {
        say!(
            "{}  {}  ({})",
            clean_line(&e.name),
            clean_line(&e.uri),
            files_line(e)
        );
        say!("  {}", clean_line(&e.description));
        if e.allowed_tools().is_some() {
            say!("  its allowed-tools are ignored: a server's skill grants no permission");
        }
    }
    for (uri, why) in &listing.invalid {
        say!("refused: {}: {}", clean_line(uri), clean_line(why));
    }
    Ok(ExitCode::SUCCESS)
}

async fn get(
    rt: &Runtime,
    server: &str,
    skill: &str,
    file: Option<&str>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let entry = loader::find(&rt.registry, server, skill).await?;
    let loaded = loader::load(&rt.registry, server, entry).await?;
    let extra = match file {
        Some(path) => {
            let bytes = loader::read_file(&rt.registry, server, &loaded.entry, path).await?;
            Some((path, String::from_utf8_lossy(&bytes).into_owned()))
        }
        None => None,
    };
    if as_json {
        let mut out = entry_json(server, &loaded.entry);
        out["body"] = json!(loaded.body);
        if let Some((path, text)) = &extra {
            out["file"] = json!({"path": path, "text": text});
        }
        say!("{}", to_json(&out, true)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "skill {} from server \"{}\" ({}, {}; verified)",
        clean_line(&loaded.entry.name),
        clean_line(server),
        clean_line(&loaded.entry.uri),
        files_line(&loaded.entry)
    );
    say!("{}", clean_text(&loaded.body));
    if let Some((path, text)) = extra {
        say!("--- {} (verified)", clean_line(path));
        say!("{}", clean_text(&text));
    }
    Ok(ExitCode::SUCCESS)
}
