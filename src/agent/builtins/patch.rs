//! `apply_patch`'s format (Codex's: `*** Begin Patch`, `*** Add File:`, `*** Update File:` with
//! `*** Move to:` and `@@` hunks, `*** Delete File:`, `*** End Patch`): the parser and the pure
//! application of an update's hunks to a file's lines (exact, then ignoring trailing
//! whitespace, then ignoring surrounding whitespace, then typographic punctuation as ASCII). No IO: `edit.rs` reads and writes.

/// Bytes of a patch accepted (a model's reply is far smaller).
pub const MAX_PATCH_BYTES: usize = 4 << 20;
/// Files one patch may touch.
pub const MAX_PATCH_FILES: usize = 100;
/// Line comparisons one update's hunks may cost while they are looked for (a file of many
/// identical lines and a long hunk would otherwise take minutes).
const MAX_COMPARISONS: u64 = 50_000_000;

/// One section of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `*** Add File: path` and its `+` lines: a new file.
    Add {
        /// The file.
        path: String,
        /// Its lines, without line endings.
        lines: Vec<String>,
    },
    /// `*** Delete File: path`.
    Delete {
        /// The file.
        path: String,
    },
    /// `*** Update File: path`, optionally `*** Move to: target`, and hunks.
    Update {
        /// The file.
        path: String,
        /// Where it moves to.
        move_to: Option<String>,
        /// Its hunks, in file order.
        hunks: Vec<Hunk>,
    },
}

impl Op {
    /// The file the section names first.
    pub fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Delete { path } | Op::Update { path, .. } => path,
        }
    }
}

/// One `@@` hunk of an update.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// The text after `@@ `: a line to find first (a function's signature); the hunk's lines
    /// are looked for after it.
    pub anchor: Option<String>,
    /// The hunk's lines in order.
    pub lines: Vec<Line>,
    /// `*** End of File`: the hunk's lines end the file.
    pub eof: bool,
}

/// A line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// ` text`: kept.
    Context(String),
    /// `-text`: removed.
    Removed(String),
    /// `+text`: added.
    Added(String),
}

impl Hunk {
    /// The lines the hunk expects in the file: its context and removed lines.
    fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Removed(t) => Some(t.as_str()),
                Line::Added(_) => None,
            })
            .collect()
    }

    /// The lines that replace them: its context and added lines.
    fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(t) | Line::Added(t) => Some(t.as_str()),
                Line::Removed(_) => None,
            })
            .collect()
    }

    /// How the hunk is named in an error: its first context or removed line (else its anchor).
    fn label(&self) -> String {
        let first = self.old_lines().into_iter().find(|l| !l.trim().is_empty());
        match (first, &self.anchor) {
            (Some(l), _) => format!("from {:?}", cut(l.trim())),
            (None, Some(a)) => format!("after {:?}", cut(a.trim())),
            (None, None) => "adding lines only".to_owned(),
        }
    }
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const EOF_MARK: &str = "*** End of File";

/// Parses a patch, or says which line of it is wrong and what was expected. A patch wrapped in
/// a shell heredoc (`<<'EOF'` ... `EOF`) is taken without it.
pub fn parse(input: &str) -> Result<Vec<Op>, String> {
    let lines = envelope(input)?;
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let (n, line) = body[i];
        let at = n + 1;
        let t = line.trim();
        i += 1;
        if t.is_empty() {
            continue;
        }
        if let Some(p) = t.strip_prefix(ADD) {
            let path = file_path(p, at)?;
            ops.push(added_file(body, &mut i, path)?);
        } else if let Some(p) = t.strip_prefix(DELETE) {
            ops.push(Op::Delete {
                path: file_path(p, at)?,
            });
        } else if let Some(p) = t.strip_prefix(UPDATE) {
            let path = file_path(p, at)?;
            ops.push(updated_file(body, &mut i, path, at)?);
        } else {
            return Err(format!(
                "line {at} of the patch: expected \"{ADD} path\", \"{UPDATE} path\" or \"{DELETE} path\", got {:?}",
                cut(line)
            ));
        }
        if ops.len() > MAX_PATCH_FILES {
            return Err(format!(
                "the patch touches more than {MAX_PATCH_FILES} files; split it into several apply_patch calls"
            ));
        }
    }
    if ops.is_empty() {
        return Err("the patch changes no file".to_owned());
    }
    each_file_once(&ops)?;
    Ok(ops)
}

/// The patch's lines from `*** Begin Patch` to `*** End Patch` (each with its 0-based line
/// in `input`: errors name 1-based lines of `input`), blank lines around and a heredoc's
/// lines taken off; or why it is no patch.
fn envelope(input: &str) -> Result<Vec<(usize, &str)>, String> {
    if input.len() > MAX_PATCH_BYTES {
        return Err(format!(
            "the patch is {} bytes, over the {MAX_PATCH_BYTES} accepted; split it into several apply_patch calls",
            input.len()
        ));
    }
    let mut lines: Vec<(usize, &str)> = input.lines().enumerate().collect();
    while lines.last().is_some_and(|(_, l)| l.trim().is_empty()) {
        lines.pop();
    }
    let start = lines.iter().position(|(_, l)| !l.trim().is_empty());
    let mut lines = lines.split_off(start.unwrap_or(lines.len()));
    if lines
        .first()
        .is_some_and(|(_, l)| l.trim_start().starts_with("<<"))
        && lines.len() >= 2
    {
        lines.remove(0);
        lines.pop();
    }
    match lines.first() {
        Some((_, l)) if l.trim() == BEGIN => {}
        _ => return Err(format!("the patch must start with the line \"{BEGIN}\"")),
    }
    match lines.last() {
        Some((_, l)) if l.trim() == END && lines.len() >= 2 => {}
        _ => {
            return Err(format!(
                "the patch must end with the line \"{END}\" (was it cut off?)"
            ))
        }
    }
    Ok(lines)
}

/// The `+` lines of an added file `path`, from `body[*i]` to the next section.
fn added_file(body: &[(usize, &str)], i: &mut usize, path: String) -> Result<Op, String> {
    let mut added = Vec::new();
    while *i < body.len() && !is_marker(body[*i].1) {
        let (n, l) = body[*i];
        match l.strip_prefix('+') {
            Some(text) => added.push(text.to_owned()),
            // Blank lines before the next section separate, they add nothing.
            None if l.trim().is_empty() && blank_to_section(body, *i) => {}
            None => {
                return Err(format!(
                    "line {} of the patch: every line of an added file ({path}) starts with \"+\", got {:?}",
                    n + 1,
                    cut(l)
                ))
            }
        }
        *i += 1;
    }
    Ok(Op::Add { path, lines: added })
}

/// An update of `path` (named on line `at`): its `*** Move to:` and its hunks, from
/// `body[*i]` on.
fn updated_file(
    body: &[(usize, &str)],
    i: &mut usize,
    path: String,
    at: usize,
) -> Result<Op, String> {
    let mut move_to = None;
    if let Some((n, l)) = body.get(*i) {
        if let Some(q) = l.trim().strip_prefix(MOVE) {
            move_to = Some(file_path(q, n + 1)?);
            *i += 1;
        }
    }
    let hunks = hunks(body, i, &path)?;
    if hunks.is_empty() && move_to.is_none() {
        return Err(format!(
            "line {at} of the patch: the update of {path} has no hunk; give @@ hunks with \" \", \"-\" and \"+\" lines, or leave the file out"
        ));
    }
    Ok(Op::Update {
        path,
        move_to,
        hunks,
    })
}

/// Whether each file (and move target) is named in one section only.
fn each_file_once(ops: &[Op]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for p in ops.iter().flat_map(|op| {
        let target = match op {
            Op::Update {
                move_to: Some(m), ..
            } => Some(m.as_str()),
            _ => None,
        };
        std::iter::once(op.path()).chain(target)
    }) {
        if !seen.insert(p) {
            return Err(format!(
                "the patch names {p} more than once; put all changes of a file in one section"
            ));
        }
    }
    Ok(())
}

/// Every path a patch writes, removes or moves to (for the permission decision), or `None`
/// when it does not parse (then nothing is written either).
pub fn paths(input: &str) -> Option<Vec<String>> {
    let ops = parse(input).ok()?;
    let mut out = Vec::new();
    for op in ops {
        if let Op::Update {
            move_to: Some(m), ..
        } = &op
        {
            out.push(m.clone());
        }
        out.push(op.path().to_owned());
    }
    Some(out)
}

/// Whether `line` starts a section or ends the patch (at the line's start: ` *** Add File:`
/// is a context line holding that text).
fn is_marker(line: &str) -> bool {
    let t = line.trim_end();
    t.starts_with(ADD) || t.starts_with(DELETE) || t.starts_with(UPDATE) || t == END
}

fn file_path(p: &str, at: usize) -> Result<String, String> {
    let p = p.trim();
    if p.is_empty() {
        return Err(format!("line {at} of the patch: the file path is missing"));
    }
    if p.contains('\0') {
        return Err(format!(
            "line {at} of the patch: the file path has a NUL byte"
        ));
    }
    Ok(p.to_owned())
}

/// Reads the hunks of an update from `body[*i..]` up to the next section.
/// Whether every line of `body` from `i` to the next section (or the end) is blank.
fn blank_to_section(body: &[(usize, &str)], i: usize) -> bool {
    body[i..]
        .iter()
        .find(|(_, l)| !l.trim().is_empty())
        .is_none_or(|(_, l)| is_marker(l))
}

fn hunks(body: &[(usize, &str)], i: &mut usize, path: &str) -> Result<Vec<Hunk>, String> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut cur: Option<Hunk> = None;
    while *i < body.len() && !is_marker(body[*i].1) {
        let (n, line) = body[*i];
        *i += 1;
        // Blank lines ending a hunk (before the next @@ or section) separate; they are no
        // context to find.
        if line.is_empty() && cur.as_ref().is_some_and(|h| !h.lines.is_empty()) {
            let next = body[*i..].iter().find(|(_, l)| !l.is_empty());
            if next.is_none_or(|(_, l)| is_marker(l) || l.trim_end().starts_with("@@")) {
                continue;
            }
        }
        if let Some(rest) = line.trim_end().strip_prefix("@@") {
            if let Some(h) = cur.take() {
                out.push(h);
            }
            let rest = rest.trim();
            // `@@ -12,7 +12,8 @@` (a unified diff's header) names no line to find.
            let anchor = (!rest.is_empty() && !is_range_header(rest)).then(|| rest.to_owned());
            cur = Some(Hunk {
                anchor,
                ..Hunk::default()
            });
            continue;
        }
        if line.trim_end() == EOF_MARK {
            match cur.as_mut() {
                Some(h) => h.eof = true,
                None => {
                    return Err(format!(
                        "line {} of the patch: \"{EOF_MARK}\" outside a hunk of {path}",
                        n + 1
                    ))
                }
            }
            continue;
        }
        let h = cur.get_or_insert_with(Hunk::default);
        if h.eof {
            return Err(format!(
                "line {} of the patch: a line after \"{EOF_MARK}\" in {path}; start a new hunk with @@",
                n + 1
            ));
        }
        let l = match line.chars().next() {
            None => Line::Context(String::new()),
            Some(' ') => Line::Context(line[1..].to_owned()),
            Some('-') => Line::Removed(line[1..].to_owned()),
            Some('+') => Line::Added(line[1..].to_owned()),
            Some(_) => {
                return Err(format!(
                    "line {} of the patch: a hunk line of {path} starts with \" \" (kept), \"-\" (removed) or \"+\" (added), got {:?}",
                    n + 1,
                    cut(line)
                ))
            }
        };
        h.lines.push(l);
    }
    if let Some(h) = cur {
        out.push(h);
    }
    // A hunk header with nothing under it changes nothing.
    out.retain(|h| !h.lines.is_empty());
    Ok(out)
}

fn is_range_header(s: &str) -> bool {
    let mut parts = s.split_whitespace();
    let range = |p: Option<&str>, sign: char| {
        p.and_then(|p| p.strip_prefix(sign))
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == ','))
    };
    range(parts.next(), '-') && range(parts.next(), '+')
}

/// The lines of `file` after `hunks` (hunk numbers in errors count from 1), or which hunk does
/// not apply and why.
pub fn apply(file: &[String], hunks: &[Hunk], path: &str) -> Result<Vec<String>, String> {
    let mut at = 0usize;
    let mut budget = MAX_COMPARISONS;
    // (start, removed count, replacement), in file order.
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for (k, h) in hunks.iter().enumerate() {
        let number = k + 1;
        let fail = |why: String| {
            format!(
                "hunk {number} of {path} ({}) does not apply: {why}; read the file again and send a patch against its current text",
                h.label()
            )
        };
        let costly = || {
            fail("finding its lines costs too much in this file (many lines alike); give a distinctive @@ line or more distinctive context".to_owned())
        };
        if let Some(anchor) = &h.anchor {
            match seek(file, &[anchor.as_str()], at, false, &mut budget).ok_or_else(costly)? {
                Some(i) => at = i + 1,
                None => {
                    return Err(fail(format!(
                        "its @@ line {:?} is not in the file{}",
                        cut(anchor.trim()),
                        after(at)
                    )))
                }
            }
        }
        let mut old = h.old_lines();
        let mut new = h.new_lines();
        if old.is_empty() {
            // Lines added with no context go at the end of the file.
            edits.push((file.len(), 0, new.iter().map(|s| (*s).to_owned()).collect()));
            continue;
        }
        let mut found = seek(file, &old, at, h.eof, &mut budget).ok_or_else(costly)?;
        if found.is_none() && old.last() == Some(&"") {
            // A trailing empty context line stands for the file's last newline.
            old.pop();
            if new.last() == Some(&"") {
                new.pop();
            }
            found = seek(file, &old, at, h.eof, &mut budget).ok_or_else(costly)?;
        }
        let Some(i) = found else {
            return Err(fail(format!(
                "its {} context and removed lines are not in the file{}",
                old.len(),
                after(at)
            )));
        };
        edits.push((i, old.len(), new.iter().map(|s| (*s).to_owned()).collect()));
        at = i + old.len();
    }
    // Lines added with no context (at the end) may come before a later hunk: applied from
    // the file's end backwards, every index still holds.
    edits.sort_by_key(|e| e.0);
    let mut out = file.to_vec();
    for (start, len, with) in edits.into_iter().rev() {
        out.splice(start..start + len, with);
    }
    Ok(out)
}

fn after(at: usize) -> String {
    match at {
        0 => String::new(),
        n => format!(" after line {n}"),
    }
}

/// `s` with typographic punctuation as ASCII (curly quotes, dashes, odd spaces), as a model
/// sometimes writes the file's plain characters.
fn plain(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().map(|c| match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        c => c,
    })
}

/// Where `pat` occurs in `lines` at or after `from`: exactly, else ignoring trailing
/// whitespace, else ignoring whitespace at both ends, else also typographic punctuation. With `eof` a match ending the file is
/// tried first. `None` (outer) when `budget` line comparisons did not suffice.
fn seek(
    lines: &[String],
    pat: &[&str],
    from: usize,
    eof: bool,
    budget: &mut u64,
) -> Option<Option<usize>> {
    if pat.len() > lines.len() {
        return Some(None);
    }
    let last = lines.len() - pat.len();
    let same: [fn(&str, &str) -> bool; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| plain(a.trim()).eq(plain(b.trim())),
    ];
    for eq in same {
        let mut at = |i: usize| -> Option<bool> {
            for (p, l) in pat.iter().zip(&lines[i..]) {
                *budget = budget.checked_sub(1)?;
                if !eq(l, p) {
                    return Some(false);
                }
            }
            Some(true)
        };
        if eof && last >= from && at(last)? {
            return Some(Some(last));
        }
        for i in from..=last {
            if at(i)? {
                return Some(Some(i));
            }
        }
    }
    Some(None)
}
