//! The edit built-ins: `edit_file` (Claude Code's Edit: one exact replacement) and
//! `apply_patch` (Codex's patch format, all or nothing), the text files they read and write
//! back in their own encoding, line endings and permission bits, and what the model last saw
//! of each file in this conversation (an edit of a file changed since is refused).

use super::patch::{self, Op};

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::io::Write as _;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use std::time::SystemTime;

use actix::prelude::*;

use super::{plain_io, resolve, Builtins};

/// Bytes of a file the edit tools read (a larger one is no text a model edits by quoting).
pub const MAX_EDIT_BYTES: u64 = 16 << 20;
/// Files remembered per conversation; past it the memory starts again (a file no longer
/// remembered counts as never seen).
const MAX_REMEMBERED: usize = 10_000;

/// The file changes a successful call of `tool` reports, one line each (`edited src/main.rs:
/// +1 -1`, `added a: +3`, `deleted b: -2`, `moved a -> b: +0 -0`): for the front ends'
/// summaries. Nothing for another tool or an error result.
pub fn changes<'a>(tool: &str, output: &'a str, is_error: bool) -> Vec<&'a str> {
    if is_error || !matches!(tool, "edit_file" | "apply_patch") {
        return Vec::new();
    }
    output
        .lines()
        .filter(|l| {
            ["edited ", "added ", "deleted ", "moved "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect()
}

// ---- what the model saw -------------------------------------------------------------------------

/// What the model last saw of a file: its size and modification time, and the hash of its
/// bytes when it saw them whole (after a write or an edit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    hash: Option<u64>,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata, bytes: Option<&[u8]>) -> Self {
        Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            hash: bytes.map(hash_of),
        }
    }

    /// Whether a file now `meta` holding `bytes` is still what was seen.
    fn holds(&self, meta: &std::fs::Metadata, bytes: &[u8]) -> bool {
        match self.hash {
            Some(h) => h == hash_of(bytes),
            None => self.len == meta.len() && self.modified == meta.modified().ok(),
        }
    }
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// What the model saw of each file in this conversation, by the path the tools open. Shared
/// by the calls of one `Builtins` (they run on the blocking pool); [`ForgetFiles`] empties it
/// when a new conversation starts.
#[derive(Debug, Default)]
pub(super) struct Seen(Mutex<HashMap<PathBuf, Stamp>>);

impl Seen {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Stamp>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, path: &Path) -> Option<Stamp> {
        self.map().get(path).copied()
    }

    fn put(&self, path: &Path, stamp: Stamp) {
        let mut m = self.map();
        if m.len() >= MAX_REMEMBERED && !m.contains_key(path) {
            m.clear();
        }
        m.insert(path.to_path_buf(), stamp);
    }

    /// Notes that the model read `path` (`meta` taken when it was opened).
    pub(super) fn read(&self, path: &Path, meta: &std::fs::Metadata) {
        self.put(path, Stamp::of(meta, None));
    }

    /// Notes that the model wrote `bytes` to `path` (its metadata read back now).
    pub(super) fn wrote(&self, path: &Path, bytes: &[u8]) {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            self.put(path, Stamp::of(&meta, Some(bytes)));
        }
    }

    /// An error when the file at `full` changed on disk since the model saw it (a file it
    /// never saw, or one gone since, passes): `write_file` would overwrite someone's change.
    pub(super) fn unchanged(&self, tool: &str, path: &str, full: &Path) -> Result<(), String> {
        let Some(stamp) = self.get(full) else {
            return Ok(());
        };
        let Ok(file) =
            harness9_platform::fs::nofollow_nonblocking(std::fs::OpenOptions::new().read(true))
                .open(full)
        else {
            return Ok(());
        };
        let Ok(meta) = file.metadata() else {
            return Ok(());
        };
        if !meta.is_file() {
            return Ok(());
        }
        let fresh = if meta.len() > MAX_EDIT_BYTES {
            stamp.len == meta.len() && stamp.modified == meta.modified().ok()
        } else {
            let mut bytes = Vec::new();
            file.take(MAX_EDIT_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("tool \"{tool}\": unable to read {path}: {}", plain_io(&e)))?;
            stamp.holds(&meta, &bytes)
        };
        if fresh {
            Ok(())
        } else {
            Err(stale(tool, path))
        }
    }

    fn removed(&self, path: &Path) {
        self.map().remove(path);
    }

    pub(super) fn forget(&self) {
        self.map().clear();
    }
}

/// Forget what the model saw of every file: a new conversation starts (`/clear`, `/resume`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ForgetFiles;

impl Handler<ForgetFiles> for Builtins {
    type Result = ();

    fn handle(&mut self, _msg: ForgetFiles, _ctx: &mut Context<Self>) {
        self.shared.seen.forget();
        self.shared.held.forget();
    }
}

// ---- text files ---------------------------------------------------------------------------------

/// How a file's text is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
}

/// A text file as read for an edit: its text (line endings as in the file), how to write it
/// back, and what it was on disk.
struct TextFile {
    text: String,
    encoding: Encoding,
    /// Most of its line breaks are `\r\n`.
    crlf: bool,
    mode: u32,
    meta: std::fs::Metadata,
    bytes: Vec<u8>,
}

/// Why a file cannot be read for an edit.
enum ReadFailure {
    Missing,
    Other(String),
}

/// Reads `full` (the resolved path; a symlink put there since is refused, not followed).
fn read_text(tool: &str, path: &str, full: &Path) -> Result<TextFile, ReadFailure> {
    let other = |why: String| ReadFailure::Other(format!("tool \"{tool}\": {why}"));
    let file = harness9_platform::fs::nofollow_nonblocking(std::fs::OpenOptions::new().read(true))
        .open(full);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadFailure::Missing),
        Err(e) => return Err(other(format!("unable to read {path}: {}", plain_io(&e)))),
    };
    let meta = file
        .metadata()
        .map_err(|e| other(format!("unable to read {path}: {}", plain_io(&e))))?;
    if meta.is_dir() {
        return Err(other(format!("{path} is a directory, not a file")));
    }
    if !meta.is_file() {
        return Err(other(format!("{path} is not a regular file")));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(other(format!(
            "{path} is {} bytes, over the {MAX_EDIT_BYTES} the edit tools read; change it with bash (sed, a script) instead",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| other(format!("unable to read {path}: {}", plain_io(&e))))?;
    let (encoding, text) = decode(&bytes).map_err(|why| {
        other(format!(
            "{path} is not text harness9 can edit ({why}); only UTF-8 and UTF-16 with a byte order mark are"
        ))
    })?;
    let crlf = text.matches("\r\n").count() * 2 > text.matches('\n').count();
    Ok(TextFile {
        text,
        encoding,
        crlf,
        mode: harness9_platform::fs::mode_of(&meta) & 0o7777,
        meta,
        bytes,
    })
}

fn decode(bytes: &[u8]) -> Result<(Encoding, String), String> {
    let utf16 = |rest: &[u8], le: bool| -> Result<String, String> {
        if rest.len() % 2 != 0 {
            return Err("UTF-16 with an odd number of bytes".to_owned());
        }
        let units = rest.chunks_exact(2).map(|c| {
            if le {
                u16::from_le_bytes([c[0], c[1]])
            } else {
                u16::from_be_bytes([c[0], c[1]])
            }
        });
        char::decode_utf16(units)
            .collect::<Result<String, _>>()
            .map_err(|_| "UTF-16 with an unpaired surrogate".to_owned())
    };
    let (encoding, text) = if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        (Encoding::Utf8Bom, utf8(rest)?)
    } else if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        (Encoding::Utf16Le, utf16(rest, true)?)
    } else if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        (Encoding::Utf16Be, utf16(rest, false)?)
    } else {
        (Encoding::Utf8, utf8(bytes)?)
    };
    if text.contains('\0') {
        return Err("it has NUL bytes: a binary file".to_owned());
    }
    Ok((encoding, text))
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        format!(
            "it is not UTF-8: byte {} is not valid",
            e.utf8_error().valid_up_to()
        )
    })
}

fn encode(encoding: Encoding, text: &str) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf8Bom => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
        Encoding::Utf16Le => [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect(),
        Encoding::Utf16Be => [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect(),
    }
}

/// `s` with every line break as `\r\n`.
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// The error for a path inside a `.git` directory (as written or as resolved), if it is one.
pub(super) fn git_refusal(tool: &str, root: &Path, path: &str, full: &Path) -> Option<String> {
    let written = crate::permissions::pattern::normalize(&root.join(path));
    (crate::permissions::pattern::in_git_dir(full)
        || crate::permissions::pattern::in_git_dir(&written))
    .then(|| {
        // In every permission mode, bypass too: git runs hooks and config from there outside
        // any sandbox (on the user's next commit, or a prompt's `git status`).
        format!(
            "tool \"{tool}\": {path} is inside a .git directory ({}); harness9 never writes there, since git runs what it holds outside the sandbox. Write the change elsewhere and tell the user what to install",
            full.display()
        )
    })
}

/// The refusal of an edit of a file that changed on disk since the model last saw it.
fn stale(tool: &str, path: &str) -> String {
    format!(
        "tool \"{tool}\": {path} changed on disk since you last read or wrote it; read it again with read_file, then make the edit against its current text"
    )
}

/// Writes `bytes` to `full` atomically with permission bits `mode` (a symlink put at `full`
/// is replaced, never written through), making missing parent directories.
fn write_bytes(full: &Path, mode: u32, bytes: &[u8]) -> io::Result<()> {
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent)?;
    }
    harness9_base::private_fs::replace_with(full, mode, |f| f.write_all(bytes))
}

/// `+A -R`: the lines added and removed from `old` to `new`.
pub(super) fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            match change.tag() {
                similar::ChangeTag::Insert => added += 1,
                similar::ChangeTag::Delete => removed += 1,
                similar::ChangeTag::Equal => {}
            }
        }
    }
    (added, removed)
}

// ---- edit_file ----------------------------------------------------------------------------------

/// What an `edit_file` call asks.
pub(super) struct EditArgs {
    pub path: String,
    pub old: String,
    pub new: String,
    pub all: bool,
}

pub(super) fn edit_file(root: &Path, seen: &Seen, a: &EditArgs) -> Result<String, String> {
    const TOOL: &str = "edit_file";
    let path = a.path.as_str();
    if a.old == a.new {
        return Err(format!(
            "tool \"{TOOL}\": old_string and new_string are the same, so there is nothing to change"
        ));
    }
    let full = resolve(TOOL, root, path)?;
    if let Some(e) = git_refusal(TOOL, root, path, &full) {
        return Err(e);
    }
    let file = match read_text(TOOL, path, &full) {
        Ok(f) => f,
        Err(ReadFailure::Missing) if a.old.is_empty() => {
            // As Claude Code's Edit: an empty old_string on a missing file creates it.
            let bytes = a.new.as_bytes();
            write_bytes(&full, 0o644, bytes)
                .map_err(|e| format!("tool \"{TOOL}\": unable to write {path}: {}", plain_io(&e)))?;
            seen.wrote(&full, bytes);
            return Ok(format!("added {path}: +{}", line_counts("", &a.new).0));
        }
        Err(ReadFailure::Missing) => {
            return Err(format!(
                "tool \"{TOOL}\": file not found: {path}; list_dir shows what exists (an empty old_string creates a new file)"
            ))
        }
        Err(ReadFailure::Other(e)) => return Err(e),
    };
    if let Some(stamp) = seen.get(&full) {
        if !stamp.holds(&file.meta, &file.bytes) {
            return Err(stale(TOOL, path));
        }
    }
    let (new_text, count) = if a.old.is_empty() {
        if !file.text.is_empty() {
            return Err(format!(
                "tool \"{TOOL}\": old_string is empty but {path} is not; give the exact text to replace, or use write_file to replace the whole file"
            ));
        }
        let new = if file.crlf {
            to_crlf(&a.new)
        } else {
            a.new.clone()
        };
        (new, 1)
    } else {
        replace(&file, a).map_err(|e| format!("tool \"{TOOL}\": {e}"))?
    };
    let bytes = encode(file.encoding, &new_text);
    write_bytes(&full, file.mode, &bytes)
        .map_err(|e| format!("tool \"{TOOL}\": unable to write {path}: {}", plain_io(&e)))?;
    seen.wrote(&full, &bytes);
    let (added, removed) = line_counts(&file.text, &new_text);
    let times = match count {
        1 => String::new(),
        n => format!(" ({n} replacements)"),
    };
    Ok(format!("edited {path}: +{added} -{removed}{times}"))
}

/// The file's text with the replacement made, and how many were made; or why not. In a CRLF
/// file the model's `\n` is matched and written as `\r\n`, in an LF file its `\r\n` as `\n`
/// (its text as given is tried too, for a file that mixes both).
fn replace(file: &TextFile, a: &EditArgs) -> Result<(String, usize), String> {
    let mut tries = Vec::with_capacity(2);
    if file.crlf {
        tries.push((to_crlf(&a.old), to_crlf(&a.new)));
    } else if a.old.contains("\r\n") {
        // `\r\n` from the model in an LF file: matched and written as `\n`.
        tries.push((a.old.replace("\r\n", "\n"), a.new.replace("\r\n", "\n")));
    }
    tries.push((a.old.clone(), a.new.clone()));
    let path = &a.path;
    for (old, new) in &tries {
        let n = file.text.matches(old.as_str()).count();
        if n == 0 {
            continue;
        }
        if n > 1 && !a.all {
            return Err(format!(
                "old_string occurs {n} times in {path}; add the lines around it so it occurs once, or set replace_all to change every one"
            ));
        }
        let text = if a.all {
            file.text.replace(old.as_str(), new)
        } else {
            file.text.replacen(old.as_str(), new, 1)
        };
        return Ok((text, n));
    }
    Err(format!(
        "old_string occurs 0 times in {path}; read_file it again and copy the text exactly, whitespace and indentation included (without the line-number prefix)"
    ))
}

// ---- apply_patch --------------------------------------------------------------------------------

/// One file change of a patch, worked out in memory before anything is written.
enum Change {
    Write {
        full: PathBuf,
        mode: u32,
        bytes: Vec<u8>,
    },
    Remove {
        full: PathBuf,
    },
}

pub(super) fn apply_patch(root: &Path, seen: &Seen, input: &str) -> Result<String, String> {
    const TOOL: &str = "apply_patch";
    let ops = patch::parse(input).map_err(|e| format!("tool \"{TOOL}\": {e}"))?;
    let mut changes = Vec::new();
    let mut summary = Vec::new();
    for op in &ops {
        plan(root, seen, op, &mut changes, &mut summary)
            .map_err(|e| format!("tool \"{TOOL}\": {e}; nothing was written"))?;
    }
    // Two spellings of one file (`a/x`, `./a/../a/x`, a link to it) are one file.
    let mut touched = std::collections::HashSet::new();
    for c in &changes {
        let (Change::Write { full, .. } | Change::Remove { full }) = c;
        if !touched.insert(full) {
            return Err(format!(
                "tool \"{TOOL}\": the patch changes {} more than once (under two names); put all changes of a file in one section; nothing was written",
                full.display()
            ));
        }
    }
    let total = changes.len();
    for (done, change) in changes.into_iter().enumerate() {
        let result = match &change {
            Change::Write { full, mode, bytes } => write_bytes(full, *mode, bytes).map(|()| {
                seen.wrote(full, bytes);
            }),
            Change::Remove { full } => std::fs::remove_file(full).map(|()| seen.removed(full)),
        };
        if let Err(e) = result {
            let path = match &change {
                Change::Write { full, .. } | Change::Remove { full } => full.display().to_string(),
            };
            return Err(format!(
                "tool \"{TOOL}\": unable to write {path}: {}; {done} of the patch's {total} file changes were made before it (read the files to see where they stand)",
                plain_io(&e)
            ));
        }
    }
    Ok(summary.join("\n"))
}

/// Resolves one of a patch's paths, refusing `.git`.
fn patch_path(root: &Path, path: &str) -> Result<PathBuf, String> {
    let full = resolve("apply_patch", root, path)?;
    match git_refusal("apply_patch", root, path, &full) {
        Some(e) => Err(e.trim_start_matches("tool \"apply_patch\": ").to_owned()),
        None => Ok(full),
    }
}

/// Reads an existing file a patch updates or deletes, checked against what the model saw.
fn existing(seen: &Seen, path: &str, full: &Path, verb: &str) -> Result<TextFile, String> {
    let file = match read_text("apply_patch", path, full) {
        Ok(f) => f,
        Err(ReadFailure::Missing) => {
            return Err(format!(
                "cannot {verb} {path}: it does not exist (list_dir shows what does)"
            ))
        }
        Err(ReadFailure::Other(e)) => {
            return Err(e.trim_start_matches("tool \"apply_patch\": ").to_owned())
        }
    };
    if seen
        .get(full)
        .is_some_and(|s| !s.holds(&file.meta, &file.bytes))
    {
        return Err(stale_in_patch(path));
    }
    Ok(file)
}

/// Checks a file a patch deletes: a regular file (any content: an image goes too), not
/// changed since the model saw it; its lines when it is text.
fn deletable(seen: &Seen, path: &str, full: &Path) -> Result<Option<usize>, String> {
    let unable = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => {
            format!("cannot delete {path}: it does not exist (list_dir shows what does)")
        }
        _ => format!("unable to delete {path}: {}", plain_io(&e)),
    };
    let file = harness9_platform::fs::nofollow_nonblocking(std::fs::OpenOptions::new().read(true))
        .open(full)
        .map_err(unable)?;
    let meta = file.metadata().map_err(unable)?;
    if !meta.is_file() {
        return Err(format!(
            "cannot delete {path}: it is not a regular file (apply_patch deletes files, not directories)"
        ));
    }
    let stamp = seen.get(full);
    if meta.len() > MAX_EDIT_BYTES {
        // Too big to hash: its size and time tell.
        if stamp.is_some_and(|s| s.len != meta.len() || s.modified != meta.modified().ok()) {
            return Err(stale_in_patch(path));
        }
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES)
        .read_to_end(&mut bytes)
        .map_err(unable)?;
    if stamp.is_some_and(|s| !s.holds(&meta, &bytes)) {
        return Err(stale_in_patch(path));
    }
    Ok(decode(&bytes)
        .ok()
        .map(|(_, text)| line_counts(&text, "").1))
}

fn stale_in_patch(path: &str) -> String {
    stale("apply_patch", path)
        .trim_start_matches("tool \"apply_patch\": ")
        .to_owned()
}

fn absent(full: &Path, path: &str, what: &str) -> Result<(), String> {
    match std::fs::symlink_metadata(full) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("unable to check {path}: {}", plain_io(&e))),
        Ok(_) => Err(format!(
            "{what} {path}, which exists; update it with \"*** Update File: {path}\" instead, or delete it first"
        )),
    }
}

/// An update section of a patch.
struct Update<'a> {
    path: &'a str,
    move_to: Option<&'a str>,
    hunks: &'a [patch::Hunk],
}

/// The changes of an update: the file's hunks applied in its encoding and line endings,
/// written where it is or where it moves to.
fn plan_update(
    root: &Path,
    seen: &Seen,
    u: &Update<'_>,
    changes: &mut Vec<Change>,
    summary: &mut Vec<String>,
) -> Result<(), String> {
    let path = u.path;
    let full = patch_path(root, path)?;
    let file = existing(seen, path, &full, "update")?;
    let eol = if file.crlf { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = file
        .text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect();
    let ends_with_newline = file.text.is_empty() || file.text.ends_with('\n');
    if ends_with_newline {
        lines.pop();
    }
    let new_lines = patch::apply(&lines, u.hunks, path)?;
    let mut text = new_lines.join(eol);
    if ends_with_newline && !new_lines.is_empty() {
        text.push_str(eol);
    }
    let (added, removed) = line_counts(&file.text, &text);
    let bytes = encode(file.encoding, &text);
    match u.move_to {
        Some(to) => {
            let target = patch_path(root, to)?;
            if target != full {
                absent(&target, to, "the patch moves a file onto")?;
            }
            summary.push(format!("moved {path} -> {to}: +{added} -{removed}"));
            changes.push(Change::Write {
                full: target.clone(),
                mode: file.mode,
                bytes,
            });
            if target != full {
                changes.push(Change::Remove { full });
            }
        }
        None => {
            summary.push(format!("edited {path}: +{added} -{removed}"));
            changes.push(Change::Write {
                full,
                mode: file.mode,
                bytes,
            });
        }
    }
    Ok(())
}

/// The changes of one section of a patch, and its summary line.
fn plan(
    root: &Path,
    seen: &Seen,
    op: &Op,
    changes: &mut Vec<Change>,
    summary: &mut Vec<String>,
) -> Result<(), String> {
    match op {
        Op::Add { path, lines } => {
            let full = patch_path(root, path)?;
            absent(&full, path, "the patch adds")?;
            let mut text = lines.join("\n");
            text.push('\n');
            summary.push(format!("added {path}: +{}", lines.len()));
            changes.push(Change::Write {
                full,
                mode: 0o644,
                bytes: text.into_bytes(),
            });
        }
        Op::Delete { path } => {
            let full = patch_path(root, path)?;
            summary.push(match deletable(seen, path, &full)? {
                Some(lines) => format!("deleted {path}: -{lines}"),
                None => format!("deleted {path}"),
            });
            changes.push(Change::Remove { full });
        }
        Op::Update {
            path,
            move_to,
            hunks,
        } => {
            let update = Update {
                path,
                move_to: move_to.as_deref(),
                hunks,
            };
            plan_update(root, seen, &update, changes, summary)?;
        }
    }
    Ok(())
}
