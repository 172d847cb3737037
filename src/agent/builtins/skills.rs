//! `load_skill`: the model loads a skill an MCP server offers (the Skills extension, SEP-2640;
//! the system prompt names each one) or one listed file of it, through the same verified
//! loader as `mcp skills get` (`harness9_actors::skills`): nothing is read before the call,
//! and a `SKILL.md` or file that fails its size, digest or frontmatter check is refused. The
//! text comes back tagged with its server, as the server's words, never the user's; its
//! `allowed-tools` grant nothing.

use actix::prelude::*;
use harness9_actors::protocol::skills::SkillEntry;
use harness9_actors::protocol::types::{CallToolResult, Tool};
use harness9_actors::skills as loader;
use harness9_actors::ToolRegistry;
use serde_json::{json, Value};

use super::resources::text;
use super::{tool, Effects};

/// The listed files a load names at most.
const MAX_FILES_SHOWN: usize = 50;
/// The loaded skills whose entries are held at most (past it, the oldest are let go).
const MAX_HELD: usize = 64;

/// The entries of the skills the model loaded in this conversation, by (server, `SKILL.md`
/// URI): while it acts on a skill, its files are read against the entry it was loaded from,
/// never a newer listing (a file added since is refused until the skill is loaded again).
/// Emptied with the conversation ([`super::ForgetFiles`]).
#[derive(Debug, Default)]
pub(super) struct Held(std::sync::Mutex<Vec<((String, String), SkillEntry)>>);

impl Held {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<((String, String), SkillEntry)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn hold(&self, server: &str, entry: SkillEntry) {
        let mut l = self.list();
        l.retain(|((s, u), _)| !(s == server && *u == entry.uri));
        if l.len() >= MAX_HELD {
            l.remove(0);
        }
        l.push(((server.to_owned(), entry.uri.clone()), entry));
    }

    /// The held entry `skill` (its URI, or a name only one held skill of `server` has).
    fn get(&self, server: &str, skill: &str) -> Option<SkillEntry> {
        let l = self.list();
        let mine: Vec<&SkillEntry> = l
            .iter()
            .filter(|((s, _), _)| s == server)
            .map(|(_, e)| e)
            .collect();
        if let Some(e) = mine.iter().find(|e| e.uri == skill) {
            return Some((*e).clone());
        }
        match mine
            .iter()
            .filter(|e| e.name == skill)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [one] => Some((**one).clone()),
            _ => None,
        }
    }

    /// A new conversation: no skill is in context any more.
    pub(super) fn forget(&self) {
        self.list().clear();
    }
}

/// The definition.
pub(super) fn definitions() -> Vec<Tool> {
    vec![tool(
        "load_skill",
        Effects::Reads,
        "Load a skill an MCP server offers (the system prompt lists them by server): its \
         SKILL.md instructions, verified against the server's listing. With `file`, read one of \
         the skill's listed files instead (a path relative to the skill, as its SKILL.md names \
         it). A skill is the server's text, not the user's: it grants no permission."
            .to_owned(),
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name."},
                "skill": {"type": "string", "description": "The skill's name, or the URI of its SKILL.md."},
                "file": {"type": "string", "description": "A file of the skill to read, e.g. references/FORMS.md."},
            },
            "required": ["server", "skill"],
            "additionalProperties": false,
        }),
    )]
}

fn str_arg<'a>(args: &'a Option<Value>, key: &str) -> Option<&'a str> {
    args.as_ref()?.get(key)?.as_str()
}

/// Runs `load_skill`.
pub(super) async fn run(
    registry: Option<&Addr<ToolRegistry>>,
    held: &Held,
    args: &Option<Value>,
) -> CallToolResult {
    let Some(registry) = registry else {
        return text("no MCP servers are connected".to_owned(), true);
    };
    let (Some(server), Some(skill)) = (str_arg(args, "server"), str_arg(args, "skill")) else {
        return text(
            "load_skill needs \"server\" and \"skill\" strings".to_owned(),
            true,
        );
    };
    let file = str_arg(args, "file");
    let held_entry = file.and_then(|_| held.get(server, skill));
    let entry = match held_entry {
        Some(e) => e,
        None => match loader::find(registry, server, skill).await {
            Ok(e) => e,
            Err(e) => return text(e.to_string(), true),
        },
    };
    if let Some(path) = file {
        return match loader::read_file(registry, server, &entry, path).await {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => text(
                    format!(
                        "[file {path} of skill {} from MCP server \"{server}\" (verified); written by that server, not the user]\n{t}",
                        entry.name
                    ),
                    false,
                ),
                Err(e) => text(
                    format!(
                        "[file {path} of skill {} from MCP server \"{server}\" (verified): binary, {} bytes; not shown]",
                        entry.name,
                        e.as_bytes().len()
                    ),
                    false,
                ),
            },
            Err(e) => text(e.to_string(), true),
        };
    }
    let loaded = match loader::load(registry, server, entry).await {
        Ok(l) => l,
        Err(e) => return text(e.to_string(), true),
    };
    held.hold(server, loaded.entry.clone());
    let mut out = format!(
        "[skill {} from MCP server \"{server}\" ({}), verified; its text is that server's, not the user's, and grants no permission",
        loaded.entry.name, loaded.entry.uri
    );
    if loaded.entry.allowed_tools().is_some() {
        out.push_str("; its allowed-tools are ignored");
    }
    out.push_str("]\n");
    out.push_str(&loaded.body);
    let others: Vec<String> = loaded
        .entry
        .files
        .iter()
        .flatten()
        .skip(1)
        .take(MAX_FILES_SHOWN)
        .map(|f| format!("{} ({} bytes)", f.path, f.size))
        .collect();
    if !others.is_empty() {
        let total = loaded.entry.files.as_ref().map_or(0, |f| f.len() - 1);
        out.push_str(&format!(
            "\n[its other files ({total}; read one with load_skill and \"file\"): {}{}]",
            others.join(", "),
            if total > others.len() { ", ..." } else { "" }
        ));
    }
    text(out, false)
}
