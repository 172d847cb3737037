//! Saved conversations: one JSONL file per session in the sessions directory
//! (`$HARNESS9_SESSIONS`, else `$XDG_STATE_HOME/harness9/sessions`), private (0600), appended
//! as the conversation grows, so a crash loses at most the turn in progress.
//!
//! Lines, each a JSON object with a `kind`:
//! - `meta` (first): `id`, `cwd`, `model`, `created` (seconds since the epoch);
//! - `message`: `role` and `content` (blocks `text`, `image`, `tool_use`, `tool_result` with
//!   parts `text`/`image`), one per message of a finished turn;
//! - `reset` (`reason`): the conversation so far is replaced by the messages after it (a
//!   compaction writes its summary this way, so the file keeps what it replaced);
//! - `model` (`model`, `provider/name`): the model the conversation switched to (`/model`); a
//!   resumed session goes on with the last one.
//!
//! A resumed session is exactly the saved one: [`load`] replays the lines (a torn last line of
//! a crashed process is skipped). [`prune`] keeps the newest [`KEEP`] files.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diagnostics::trace_file::civil_from_days;

use harness9_agent::model::{Block, Message, ResultPart, Role};

/// The variable that names the sessions directory.
pub const ENV: &str = "HARNESS9_SESSIONS";
/// Session files kept; older ones are deleted when a new session starts.
pub const KEEP: usize = 200;
/// A session file larger than this is not loaded (it names the file and the limit).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The sessions directory.
pub fn dir() -> PathBuf {
    match std::env::var_os(ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::stores::state_dir().join("sessions"),
    }
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Meta {
        id: String,
        cwd: String,
        model: String,
        created: u64,
    },
    Message {
        role: SavedRole,
        content: Vec<SavedBlock>,
    },
    Reset {
        reason: String,
    },
    Model {
        model: String,
    },
}

#[derive(Serialize, Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum SavedRole {
    User,
    Assistant,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SavedBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolResult {
        id: String,
        content: Vec<SavedPart>,
        #[serde(default)]
        is_error: bool,
    },
    Image {
        mime_type: String,
        data: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SavedPart {
    Text { text: String },
    Image { mime_type: String, data: String },
}

fn to_line(m: &Message) -> Line {
    Line::Message {
        role: match m.role {
            Role::User => SavedRole::User,
            Role::Assistant => SavedRole::Assistant,
        },
        content: m
            .content
            .iter()
            .map(|b| match b {
                Block::Text(t) => SavedBlock::Text { text: t.clone() },
                Block::Image { mime_type, data } => SavedBlock::Image {
                    mime_type: mime_type.clone(),
                    data: data.clone(),
                },
                Block::ToolUse { id, name, input } => SavedBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                },
                Block::ToolResult {
                    id,
                    content,
                    is_error,
                } => SavedBlock::ToolResult {
                    id: id.clone(),
                    is_error: *is_error,
                    content: content
                        .iter()
                        .map(|p| match p {
                            ResultPart::Text(t) => SavedPart::Text { text: t.clone() },
                            ResultPart::Image { mime_type, data } => SavedPart::Image {
                                mime_type: mime_type.clone(),
                                data: data.clone(),
                            },
                        })
                        .collect(),
                },
            })
            .collect(),
    }
}

fn from_saved(role: SavedRole, content: Vec<SavedBlock>) -> Message {
    Message {
        role: match role {
            SavedRole::User => Role::User,
            SavedRole::Assistant => Role::Assistant,
        },
        content: content
            .into_iter()
            .map(|b| match b {
                SavedBlock::Text { text } => Block::Text(text),
                SavedBlock::Image { mime_type, data } => Block::Image { mime_type, data },
                SavedBlock::ToolUse { id, name, input } => Block::ToolUse { id, name, input },
                SavedBlock::ToolResult {
                    id,
                    content,
                    is_error,
                } => Block::ToolResult {
                    id,
                    is_error,
                    content: content
                        .into_iter()
                        .map(|p| match p {
                            SavedPart::Text { text } => ResultPart::Text(text),
                            SavedPart::Image { mime_type, data } => {
                                ResultPart::Image { mime_type, data }
                            }
                        })
                        .collect(),
                },
            })
            .collect(),
    }
}

/// An open session file, appended to.
#[derive(Debug)]
pub struct SessionFile {
    /// The session's id (the file's stem).
    pub id: String,
    path: PathBuf,
    file: std::fs::File,
}

/// What a listing shows of one saved session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// Its id.
    pub id: String,
    /// The working directory it ran in.
    pub cwd: String,
    /// The model at its start.
    pub model: String,
    /// Last written, seconds since the epoch.
    pub modified: u64,
    /// The first thing the user said (one line, at most 80 characters).
    pub first_prompt: String,
    /// Messages in the file.
    pub messages: usize,
    /// File size.
    pub bytes: u64,
}

fn now_secs() -> u64 {
    harness9_actors::oauth::now_secs()
}

/// A new session id: the UTC date and time, then 6 random hex digits (sortable by start).
pub fn new_id() -> String {
    let secs = now_secs();
    let (d, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(d as i64);
    let rand: String = harness9_actors::net::random(3)
        .map(|b| b.iter().map(|x| format!("{x:02x}")).collect())
        .unwrap_or_else(|_| format!("{:06x}", std::process::id() & 0xff_ffff));
    format!(
        "{y:04}{m:02}{day:02}-{:02}{:02}{:02}-{rand}",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    crate::private_fs::open_append(path)
}

/// A session id is a file stem we wrote: nothing that could leave the directory.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl harness9_agent::engine::ConversationLog for SessionFile {
    fn append(&mut self, messages: &[Message]) -> Result<(), String> {
        SessionFile::append(self, messages)
    }

    fn record_model(&mut self, model: &str) -> Result<(), String> {
        SessionFile::record_model(self, model)
    }

    fn replace(&mut self, reason: &str, messages: &[Message]) -> Result<(), String> {
        SessionFile::replace(self, reason, messages)
    }

    fn tasks(&self) -> Option<std::sync::Arc<dyn harness9_agent::engine::TaskJournal>> {
        let dir = self.path.parent()?;
        Some(std::sync::Arc::new(
            super::pending_tasks::SessionTasks::new(super::pending_tasks::path(dir, &self.id)),
        ))
    }
}

impl SessionFile {
    /// Starts a new session file in `dir` (created 0700 if missing) with its `meta` line.
    pub fn create(dir: &Path, cwd: &Path, model: &str) -> Result<SessionFile, String> {
        create_private_dir(dir)?;
        let id = new_id();
        let path = dir.join(format!("{id}.jsonl"));
        // A new file, created exclusively (0600, never through a symlink).
        let file = crate::private_fs::create_new(&path)
            .map_err(|e| format!("cannot create the session file {}: {e}", path.display()))?;
        let mut s = SessionFile { id, path, file };
        s.write(&Line::Meta {
            id: s.id.clone(),
            cwd: cwd.display().to_string(),
            model: model.to_owned(),
            created: now_secs(),
        })?;
        Ok(s)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, line: &Line) -> Result<(), String> {
        let mut text = serde_json::to_string(line).map_err(|e| e.to_string())?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the session file {}: {e}", self.path.display()))
    }

    /// Appends `messages` (a finished turn's).
    pub fn append(&mut self, messages: &[Message]) -> Result<(), String> {
        let mut text = String::new();
        for m in messages {
            text.push_str(&serde_json::to_string(&to_line(m)).map_err(|e| e.to_string())?);
            text.push('\n');
        }
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write the session file {}: {e}", self.path.display()))
    }

    /// Records that the conversation goes on with `model` (`provider/name`).
    pub fn record_model(&mut self, model: &str) -> Result<(), String> {
        self.write(&Line::Model {
            model: model.to_owned(),
        })
    }

    /// Records that the conversation is now `messages` (after a compaction).
    pub fn replace(&mut self, reason: &str, messages: &[Message]) -> Result<(), String> {
        self.write(&Line::Reset {
            reason: reason.to_owned(),
        })?;
        self.append(messages)
    }
}

/// Creates `dir` 0700 when missing; refuses one that is not ours or that others can write to.
fn create_private_dir(dir: &Path) -> Result<(), String> {
    crate::private_fs::private_dir(dir).map_err(|e| {
        format!(
            "cannot create the sessions directory {}: {e}",
            dir.display()
        )
    })
}

/// A loaded session: its file (open for appending) and the conversation.
#[derive(Debug)]
pub struct Loaded {
    /// The file, appended to from now on.
    pub file: SessionFile,
    /// The conversation, exactly as saved.
    pub messages: Vec<Message>,
    /// Its model at the start (a bare name), or the last it switched to (`provider/name`).
    pub model: String,
    /// Its working directory.
    pub cwd: String,
}

/// Opens session `id` of `dir` and replays it.
pub fn load(dir: &Path, id: &str) -> Result<Loaded, String> {
    if !valid_id(id) {
        return Err(format!(
            "\"{id}\" is not a session id; `harness9 --resume` lists them"
        ));
    }
    let path = dir.join(format!("{id}.jsonl"));
    let meta = std::fs::metadata(&path).map_err(|_| {
        format!(
            "no session \"{id}\" in {}; `harness9 --resume` lists them",
            dir.display()
        )
    })?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "the session file {} is over {} MiB; start a new session",
            path.display(),
            MAX_FILE_BYTES >> 20
        ));
    }
    let reader = std::io::BufReader::new(
        std::fs::File::open(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
    );
    let (mut messages, mut model, mut cwd) = (Vec::new(), String::new(), String::new());
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Meta {
                model: m, cwd: c, ..
            }) => (model, cwd) = (m, c),
            Ok(Line::Message { role, content }) => messages.push(from_saved(role, content)),
            Ok(Line::Reset { .. }) => messages.clear(),
            Ok(Line::Model { model: m }) => model = m,
            Err(e) => tracing::warn!("{}:{}: skipped: {e}", path.display(), n + 1),
        }
    }
    // A turn is saved whole, so a torn file ends after a complete message; but a user message
    // without its answer (a crash between lines) would break the alternation: drop it.
    while messages.last().is_some_and(|m| {
        m.role == Role::User
            && !m
                .content
                .iter()
                .any(|b| matches!(b, Block::ToolResult { .. }))
    }) {
        messages.pop();
    }
    let file = open_append(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(Loaded {
        file: SessionFile {
            id: id.to_owned(),
            path,
            file,
        },
        messages,
        model,
        cwd,
    })
}

/// The saved sessions of `dir`, newest first (by last write).
pub fn list(dir: &Path) -> Vec<SessionInfo> {
    files(dir)
        .into_iter()
        .filter_map(|(id, path)| info(&path, id))
        .collect()
}

/// The session files of `dir` as (id, path), newest first (by last write; the id breaks
/// ties), from the directory's metadata alone.
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(std::time::SystemTime, String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_owned();
            let modified = e.metadata().ok()?.modified().ok()?;
            valid_id(&id).then_some((modified, id, path))
        })
        .collect();
    out.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    out.into_iter().map(|(_, id, path)| (id, path)).collect()
}

/// The working directory a session file's `meta` line (its first) names.
fn meta_cwd(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(f.take(64 * 1024))
        .read_line(&mut first)
        .ok()?;
    match serde_json::from_str::<Line>(&first).ok()? {
        Line::Meta { cwd, .. } => Some(cwd),
        _ => None,
    }
}

/// The newest session that ran in `cwd`.
pub fn latest_for(dir: &Path, cwd: &Path) -> Option<SessionInfo> {
    let cwd = cwd.display().to_string();
    files(dir)
        .into_iter()
        .find(|(_, path)| meta_cwd(path).as_deref() == Some(cwd.as_str()))
        .and_then(|(id, path)| info(&path, id))
}

/// Reads what a listing needs: the meta line, the first user text, the message count. Only
/// the first 4 MiB are looked at.
fn info(path: &Path, id: String) -> Option<SessionInfo> {
    use std::io::Read as _;
    let meta = std::fs::metadata(path).ok()?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let f = std::fs::File::open(path).ok()?;
    let reader = std::io::BufReader::new(f.take(4 << 20));
    let mut s = SessionInfo {
        id,
        cwd: String::new(),
        model: String::new(),
        modified,
        first_prompt: String::new(),
        messages: 0,
        bytes: meta.len(),
    };
    for line in reader.lines().map_while(Result::ok) {
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Meta { cwd, model, .. }) => (s.cwd, s.model) = (cwd, model),
            Ok(Line::Message { role, content }) => {
                s.messages += 1;
                if s.first_prompt.is_empty() && matches!(role, SavedRole::User) {
                    if let Some(SavedBlock::Text { text }) = content.first() {
                        let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
                        s.first_prompt = one.chars().take(80).collect();
                    }
                }
            }
            Ok(Line::Reset { .. }) => s.messages = 0,
            Ok(Line::Model { model }) => s.model = model,
            Err(_) => {}
        }
    }
    Some(s)
}

/// Which conversation a front end starts with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Resume {
    /// A new one.
    #[default]
    New,
    /// `--continue`: the newest of this working directory (a new one if there is none).
    Latest,
    /// `--resume ID`.
    Id(String),
    /// `--resume` without an id: a new one, and the list to pick from is shown.
    Pick,
}

/// The conversation a front end starts with.
#[derive(Debug)]
pub struct Opened {
    /// Its file.
    pub file: SessionFile,
    /// The saved messages (empty for a new session).
    pub messages: Vec<Message>,
    /// What to tell the user (resumed, or nothing to continue).
    pub note: Option<String>,
    /// A resumed session's model (see [`Loaded::model`]); `None` for a new one.
    pub model: Option<String>,
}

/// Opens the conversation `resume` asks for, in `dir`, for `cwd`; a new session prunes old
/// files first. An unknown id is an error that says how to list them.
pub fn open(dir: &Path, resume: &Resume, cwd: &Path, model: &str) -> Result<Opened, String> {
    let id = match resume {
        Resume::Id(id) => Some(id.clone()),
        Resume::Latest => latest_for(dir, cwd).map(|s| s.id),
        Resume::New | Resume::Pick => None,
    };
    if let Some(id) = id {
        let l = load(dir, &id)?;
        let note = format!(
            "resumed session {id} ({} messages, model {})",
            l.messages.len(),
            if l.model.is_empty() { "?" } else { &l.model }
        );
        return Ok(Opened {
            file: l.file,
            messages: l.messages,
            note: Some(note),
            model: Some(l.model).filter(|m| !m.is_empty()),
        });
    }
    prune(dir, KEEP.saturating_sub(1));
    let note = match resume {
        Resume::Latest => Some(format!(
            "no earlier session in {}; this is a new one",
            cwd.display()
        )),
        _ => None,
    };
    Ok(Opened {
        file: SessionFile::create(dir, cwd, model)?,
        messages: Vec::new(),
        note,
        model: None,
    })
}

/// What the `--resume` and `/resume` picker shows: this project's saved conversations, and
/// every directory's (each row then names its directory); newest first, one line each
/// beginning with the session id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The sessions that ran in this working directory.
    pub here: Vec<String>,
    /// Every directory's sessions, each naming its directory.
    pub all: Vec<String>,
}

/// The picker's lists for a session in `cwd`: at most `max` lines each, sessions with no
/// message left out.
pub fn listing(dir: &Path, cwd: &Path, max: usize) -> Listing {
    let sessions: Vec<SessionInfo> = list(dir).into_iter().filter(|s| s.messages > 0).collect();
    let cwd = cwd.display().to_string();
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty());
    Listing {
        here: sessions
            .iter()
            .filter(|s| s.cwd == cwd)
            .take(max)
            .map(|s| row(s, None))
            .collect(),
        all: sessions
            .iter()
            .take(max)
            .map(|s| row(s, Some(&shown_dir(&s.cwd, home.as_deref()))))
            .collect(),
    }
}

/// A directory as a row shows it: `~/...` under the home directory, `?` when unknown.
fn shown_dir(cwd: &str, home: Option<&str>) -> String {
    if cwd.is_empty() {
        return "?".to_owned();
    }
    match home.and_then(|h| cwd.strip_prefix(h)) {
        Some("") => "~".to_owned(),
        Some(rest) if rest.starts_with('/') => format!("~{rest}"),
        _ => cwd.to_owned(),
    }
}

/// One picker row: id, date, its directory (in the list of every directory's), model,
/// size, first prompt.
fn row(s: &SessionInfo, dir: Option<&str>) -> String {
    let secs = s.modified;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let dir = dir.map(|d| format!("  {d}")).unwrap_or_default();
    format!(
        "{}  {y:04}-{m:02}-{d:02} {:02}:{:02}{dir}  {}  {} msgs {} KiB  {}",
        s.id,
        (secs % 86_400) / 3600,
        (secs / 60) % 60,
        s.model,
        s.messages,
        s.bytes.div_ceil(1024),
        s.first_prompt
    )
}

/// Deletes all but the newest `keep` session files of `dir`.
pub fn prune(dir: &Path, keep: usize) {
    for (id, path) in files(dir).into_iter().skip(keep) {
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(super::pending_tasks::path(dir, &id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message {
                role: Role::User,
                content: vec![
                    Block::Text("list   the\nfiles".into()),
                    Block::Image {
                        mime_type: "image/png".into(),
                        data: "iVBO".into(),
                    },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Text("sure".into()),
                    Block::ToolUse {
                        id: "t1".into(),
                        name: "list_dir".into(),
                        input: serde_json::json!({"path": "."}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    id: "t1".into(),
                    content: vec![
                        ResultPart::Text("a\nb".into()),
                        ResultPart::Image {
                            mime_type: "image/png".into(),
                            data: "AAAA".into(),
                        },
                    ],
                    is_error: false,
                }],
            },
            Message {
                role: Role::Assistant,
                content: vec![Block::Text("two files".into())],
            },
        ]
    }

    #[test]
    fn a_saved_session_loads_exactly_and_lists() {
        let dir = std::env::temp_dir().join(format!("h9-sessions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut f = SessionFile::create(&dir, Path::new("/work/p"), "m1").unwrap();
        let conv = conversation();
        f.append(&conv[..2]).unwrap();
        f.append(&conv[2..]).unwrap();
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(f.path()).unwrap());
        assert_eq!(mode & 0o777, 0o600);
        let got = load(&dir, &f.id).unwrap();
        assert_eq!(got.messages, conv);
        assert_eq!((got.model.as_str(), got.cwd.as_str()), ("m1", "/work/p"));

        let listed = listing(&dir, Path::new("/work/p"), 20);
        let shown = &listed.here;
        assert_eq!(shown.len(), 1);
        assert!(
            shown[0].starts_with(&f.id)
                && shown[0].contains("m1  4 msgs")
                && shown[0].ends_with("list the files"),
            "{shown:?}"
        );
        // Every directory's rows name the directory; another directory has none of its own.
        assert!(
            listed.all[0].contains("  /work/p  m1  4 msgs"),
            "{listed:?}"
        );
        assert!(listing(&dir, Path::new("/elsewhere"), 20).here.is_empty());
        assert_eq!(shown_dir("/home/u/p", Some("/home/u")), "~/p");
        assert_eq!(shown_dir("/home/uv/p", Some("/home/u")), "/home/uv/p");
        let listed = list(&dir);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].first_prompt, "list the files");
        assert_eq!(listed[0].messages, 4);
        assert_eq!(latest_for(&dir, Path::new("/work/p")).unwrap().id, f.id);
        assert!(latest_for(&dir, Path::new("/elsewhere")).is_none());

        // A compaction replaces the conversation; a torn last line is skipped.
        let summary = vec![conv[0].clone(), conv[3].clone()];
        let mut again = load(&dir, &f.id).unwrap().file;
        again.replace("compact", &summary).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(again.path())
            .unwrap()
            .write_all(b"{\"kind\":\"message\",\"role\":\"us")
            .unwrap();
        assert_eq!(load(&dir, &f.id).unwrap().messages, summary);

        for bad in ["../x", "", "a/b", "a b"] {
            assert!(load(&dir, bad).is_err(), "{bad}");
        }
        assert!(load(&dir, "20200101-000000-abcdef")
            .unwrap_err()
            .contains("no session"));
        // The session's pending tasks are beside it, and pruned with it.
        let journal = harness9_agent::engine::ConversationLog::tasks(&again).unwrap();
        journal.started(&harness9_agent::engine::PendingTask {
            server: "s".into(),
            tool: "t".into(),
            task_id: "task-1".into(),
            tool_use_id: "toolu_1".into(),
        });
        let beside = super::super::pending_tasks::path(&dir, &f.id);
        assert!(beside.exists(), "{}", beside.display());
        prune(&dir, 0);
        assert!(list(&dir).is_empty());
        assert!(!beside.exists(), "{}", beside.display());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ids_sort_by_time() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        let id = new_id();
        assert_eq!(id.len(), "20261204-170000-abcdef".len(), "{id}");
        assert!(valid_id(&id));
    }
}
