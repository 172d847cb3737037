//! Loading a server's skill (SEP-2640) through the registry, for every front end (`mcp skills
//! get`, the model's `load_skill`): find its entry (the listing, else `skills/get` by URI),
//! read its `SKILL.md` and use it only once it passes every check (size, digest, frontmatter
//! against the entry), and read a file of a held entry only when the entry lists it, verified
//! the same way. Lazy: nothing of a skill is read before a load asks for it. A skill is keyed by
//! (server, `SKILL.md` URI); its text reaches the model tagged with its server.

use actix::Addr;

use crate::error::RequestError;
use crate::messages::{GetSkill, ListSkills, ReadResource};
use crate::protocol::skills::{self, SkillEntry, SkillListing, SKILL_MD};
use crate::registry::ToolRegistry;

/// Why a skill could not be found, loaded or read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A request to the server failed.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// The skill, or the file asked for, is refused (not found, ambiguous, over the limits,
    /// or failing verification).
    #[error("server \"{server}\": skill {skill}: {why}")]
    Refused {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The skill as asked for (a name or URI).
        skill: String,
        /// What is wrong and what to do.
        why: String,
    },
    /// The registry stopped.
    #[error("the tool registry stopped")]
    Gone,
}

/// A loaded skill: its server, the entry it was verified against, and its `SKILL.md` text.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The server's name in `.mcp.json`.
    pub server: String,
    /// The entry the skill was loaded from (held while it is used).
    pub entry: SkillEntry,
    /// The verified `SKILL.md`.
    pub body: String,
}

fn refused(server: &str, skill: &str, why: impl Into<String>) -> SkillError {
    SkillError::Refused {
        server: server.to_owned(),
        skill: skill.to_owned(),
        why: why.into(),
    }
}

/// The server's listing, checked.
pub async fn list(
    registry: &Addr<ToolRegistry>,
    server: &str,
) -> Result<std::sync::Arc<SkillListing>, SkillError> {
    Ok(registry
        .send(ListSkills {
            server: server.to_owned(),
        })
        .await
        .map_err(|_| SkillError::Gone)??)
}

/// The entry of `skill` (a name, or a `SKILL.md` URI) on `server`: from the listing, else,
/// for a URI the listing lacks, from `skills/get` (a listing may be partial). A name two
/// entries share is refused, naming their URIs.
pub async fn find(
    registry: &Addr<ToolRegistry>,
    server: &str,
    skill: &str,
) -> Result<SkillEntry, SkillError> {
    let listing = list(registry, server).await?;
    let found = listing.find(skill);
    match found.as_slice() {
        [one] => return Ok((*one).clone()),
        [] => {}
        many => {
            let uris: Vec<&str> = many.iter().map(|e| e.uri.as_str()).collect();
            return Err(refused(
                server,
                skill,
                format!(
                    "{} skills have this name; name one by its uri: {}",
                    many.len(),
                    uris.join(", ")
                ),
            ));
        }
    }
    if let Some((_, why)) = listing.invalid.iter().find(|(u, _)| u == skill) {
        return Err(refused(
            server,
            skill,
            format!("its entry is invalid: {why}"),
        ));
    }
    if skill.contains("://") && skill.ends_with(&format!("/{SKILL_MD}")) {
        return Ok(registry
            .send(GetSkill {
                server: server.to_owned(),
                uri: skill.to_owned(),
            })
            .await
            .map_err(|_| SkillError::Gone)??);
    }
    let known: Vec<&str> = listing
        .skills
        .iter()
        .map(|e| e.name.as_str())
        .take(20)
        .collect();
    Err(refused(
        server,
        skill,
        if known.is_empty() {
            "the server lists no such skill (it lists none); name it by its SKILL.md uri".to_owned()
        } else {
            format!(
                "the server lists no such skill; it lists: {}",
                known.join(", ")
            )
        },
    ))
}

/// Reads one listed file of `entry` (`path` under its root, or its URI) from `server` and
/// verifies it; a file the entry does not list is refused without a read.
pub async fn read_file(
    registry: &Addr<ToolRegistry>,
    server: &str,
    entry: &SkillEntry,
    path: &str,
) -> Result<Vec<u8>, SkillError> {
    let file = entry
        .file(path)
        .map_err(|why| refused(server, &entry.uri, why))?;
    let got = registry
        .send(ReadResource {
            server: server.to_owned(),
            uri: file.uri.clone(),
        })
        .await
        .map_err(|_| SkillError::Gone)??;
    let bytes =
        skills::bytes_of(file, &got.contents).map_err(|why| refused(server, &entry.uri, why))?;
    skills::verify(file, &bytes).map_err(|why| {
        refused(
            server,
            &entry.uri,
            format!("{why}; the content was not used (refresh the skill if it changed)"),
        )
    })?;
    Ok(bytes)
}

/// Loads `entry`: reads its `SKILL.md`, verifies its size and digest, then compares its
/// frontmatter with the entry's field by field. A dynamic skill is refused (nothing to
/// verify it against).
pub async fn load(
    registry: &Addr<ToolRegistry>,
    server: &str,
    entry: SkillEntry,
) -> Result<Loaded, SkillError> {
    let bytes = read_file(registry, server, &entry, SKILL_MD).await?;
    let body = String::from_utf8(bytes)
        .map_err(|_| refused(server, &entry.uri, "its SKILL.md is not UTF-8 text"))?;
    let fm = skills::frontmatter_of(&body)
        .map_err(|why| refused(server, &entry.uri, format!("its SKILL.md: {why}")))?;
    skills::check_frontmatter(&entry.frontmatter, &fm).map_err(|why| {
        refused(
            server,
            &entry.uri,
            format!("{why}; the skill was not loaded"),
        )
    })?;
    Ok(Loaded {
        server: server.to_owned(),
        entry,
        body,
    })
}

/// The most skills of one server the system prompt names (the rest: "and N more").
pub const MAX_PROMPT_SKILLS: usize = 30;
/// The most of one skill's description the system prompt shows.
pub const MAX_PROMPT_DESCRIPTION: usize = 200;

/// The system prompt's section about `server`'s skills: each one's name (its URI when two share
/// it) and description, bounded; none for a server without valid skills. Server text: the
/// engine cleans it with the rest of the server's instructions.
pub fn prompt_section(server: &str, listing: &SkillListing) -> Option<String> {
    if listing.skills.is_empty() {
        return None;
    }
    let mut s = format!(
        "Skills server \"{server}\" offers (load one with the load_skill tool, {{\"server\": \"{server}\", \"skill\": NAME}}, when a task needs it; a skill is that server's text, not the user's):"
    );
    for e in listing.skills.iter().take(MAX_PROMPT_SKILLS) {
        let shared = listing.skills.iter().filter(|o| o.name == e.name).count() > 1;
        let label = if shared {
            e.uri.as_str()
        } else {
            e.name.as_str()
        };
        let mut d: String = e
            .description
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(MAX_PROMPT_DESCRIPTION)
            .collect();
        if e.description.chars().count() > MAX_PROMPT_DESCRIPTION {
            d.push('…');
        }
        s.push_str(&format!("\n- {label}: {d}"));
    }
    if listing.skills.len() > MAX_PROMPT_SKILLS {
        s.push_str(&format!(
            "\n- and {} more (`harness9 mcp skills list {server}` lists them)",
            listing.skills.len() - MAX_PROMPT_SKILLS
        ));
    }
    Some(s)
}
