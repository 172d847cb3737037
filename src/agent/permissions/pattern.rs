//! The rule patterns: a tool name (with `*` globs: `mcp__github__*`), optionally with an
//! argument pattern for the built-ins that have one: a command for `bash` (`bash(git
//! status:*)`, `bash(npm run *)`), a path for the file tools (`write_file(src/**)`,
//! `read_file(~/.ssh/**)`). Parsing, matching, and how a shell command splits into the
//! commands a rule is matched against.

use std::path::{Component, Path, PathBuf};

/// What a rule's argument pattern is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// `bash`'s `command`.
    Command,
    /// A file tool's `path` (relative to the project unless absolute).
    Path,
}

/// The built-ins an argument pattern may follow, and what it matches. A path rule on
/// `read_file` covers every built-in that reads files (`read_file`, `list_dir`, `grep`), one
/// on `write_file` every built-in that writes them (`edit_file`, `apply_patch`: each path a
/// patch adds, updates, deletes or moves to).
pub fn arg_kind(tool: &str) -> Option<ArgKind> {
    match tool {
        "bash" => Some(ArgKind::Command),
        "read_file" | "write_file" | "edit_file" | "apply_patch" | "list_dir" | "grep" => {
            Some(ArgKind::Path)
        }
        _ => None,
    }
}

/// The built-ins that write files; a `write_file` rule (and Claude Code's `Edit`, `Write`,
/// `MultiEdit`) names them all.
pub const FILE_WRITERS: &[&str] = &["write_file", "edit_file", "apply_patch"];

/// The built-ins whose path rules a call of `tool` is matched against: a read tool answers to
/// `read_file(...)` rules too.
pub fn path_rule_tools(tool: &str) -> &'static [&'static str] {
    match tool {
        "read_file" => &["read_file"],
        "list_dir" => &["list_dir", "read_file"],
        "grep" => &["grep", "read_file"],
        "write_file" => &["write_file"],
        "edit_file" => &["edit_file", "write_file"],
        "apply_patch" => &["apply_patch", "write_file"],
        _ => &[],
    }
}

/// A parsed rule pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The tool name, with `*` matching any run of characters (a Claude Code spelling already
    /// turned into harness9's: `Bash` is `bash`, `mcp__S` is `mcp__S__*`).
    pub tool: String,
    /// The argument pattern, when given.
    pub arg: Option<ArgPattern>,
    /// More built-ins the name covers (Claude Code's `Read` covers every tool that reads).
    pub also: &'static [&'static str],
}

/// Claude Code's tool names and what each is in harness9: the built-in it maps to and the
/// others its name covers too. `None`: harness9 has no such tool.
pub fn claude_code_name(name: &str) -> Option<Option<(&'static str, &'static [&'static str])>> {
    Some(match name {
        "Bash" => Some(("bash", &[])),
        // Claude Code's Read rules apply to every built-in that reads files.
        "Read" => Some(("read_file", &["list_dir", "grep"])),
        "Edit" | "Write" | "MultiEdit" => Some(("write_file", &FILE_WRITERS[1..])),
        "Grep" => Some(("grep", &[])),
        "LS" | "Glob" => Some(("list_dir", &[])),
        "WebFetch" | "WebSearch" | "Task" | "Agent" | "TodoWrite" | "TodoRead" | "NotebookEdit"
        | "NotebookRead" | "ExitPlanMode" | "BashOutput" | "KillShell" | "KillBash"
        | "SlashCommand" => None,
        _ => return None,
    })
}

/// An argument pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgPattern {
    /// `prefix:*`: the command is `prefix` or starts with `prefix` and a space.
    Prefix(String),
    /// A command glob: `*` matches anything (spaces and slashes too).
    Command(String),
    /// A path glob, as written (`~/` and relative forms are anchored when matched).
    Path(String),
}

/// The longest rule accepted (a pattern, not a document).
const MAX_RULE: usize = 1024;

impl Pattern {
    /// Parses `text`, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("a rule cannot be empty".to_owned());
        }
        if t.len() > MAX_RULE {
            return Err(format!("a rule is at most {MAX_RULE} bytes"));
        }
        let (name, mut arg) = match t.find('(') {
            None => (t, None),
            Some(open) => {
                let Some(inner) = t[open + 1..].strip_suffix(')') else {
                    return Err(
                        "an argument pattern must end with \")\", as in bash(git status:*)"
                            .to_owned(),
                    );
                };
                (&t[..open], Some(inner.trim()))
            }
        };
        if name.is_empty() {
            return Err("the tool name is missing before \"(\"".to_owned());
        }
        let (name, also) = match claude_code_name(name) {
            Some(Some((ours, also))) => (ours.to_owned(), also),
            // `write_file` names every tool that writes files: no side door through an edit.
            None if name == "write_file" => (name.to_owned(), &FILE_WRITERS[1..]),
            // Kept as written, its argument aside: it names no tool (`Rule::parse` and
            // `unmatched` say what that means).
            Some(None) => {
                arg = None;
                (name.to_owned(), &[][..])
            }
            // `mcp__S` is every tool of server `S`, as in Claude Code.
            None => match name.strip_prefix("mcp__") {
                Some(server)
                    if !server.is_empty() && !server.contains("__") && !server.contains('*') =>
                {
                    (format!("{name}__*"), &[][..])
                }
                _ => (name.to_owned(), &[][..]),
            },
        };
        let name = name.as_str();
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '*')))
        {
            return Err(format!(
                "{c:?} cannot be in a tool name (letters, digits, _ - . and the glob *)"
            ));
        }
        let arg = match arg {
            None => None,
            Some("") => return Err("the argument pattern inside \"()\" is empty".to_owned()),
            Some(a) => {
                let Some(kind) = arg_kind(name) else {
                    return Err(format!(
                        "only bash (a command) and read_file, write_file, edit_file, apply_patch, list_dir, grep (a path) take an argument pattern, not {name:?}"
                    ));
                };
                Some(match kind {
                    ArgKind::Command => match a.strip_suffix(":*") {
                        Some(p) if !p.trim().is_empty() => ArgPattern::Prefix(p.trim().to_owned()),
                        Some(_) => {
                            return Err("the prefix before \":*\" is empty (write bash to rule on every command)".to_owned())
                        }
                        None => ArgPattern::Command(a.to_owned()),
                    },
                    ArgKind::Path => ArgPattern::Path(a.to_owned()),
                })
            }
        };
        Ok(Pattern {
            tool: name.to_owned(),
            arg,
            also,
        })
    }

    /// Whether the tool name matches (the argument aside). An MCP tool is matched by its
    /// server's identity, the name its config writes, never the sanitized registered name
    /// (`mcp__brave_search__*` does not name server `brave.search`): a server pattern
    /// `mcp__S__*` names the tools of server `S` exactly (a server called `S__x` is not `S`),
    /// any other pattern is matched against `mcp__{server}__{tool}`
    /// ([`harness9_actors::naming::rule_name`]).
    pub fn names(&self, tool: &str, server: Option<&str>) -> bool {
        if let Some(s) = self.server() {
            return server == Some(s);
        }
        match server {
            Some(own) => glob(
                &self.tool,
                &harness9_actors::naming::rule_name(own, tool),
                false,
            ),
            None => glob(&self.tool, tool, false) || self.also.contains(&tool),
        }
    }

    /// `S` of a server pattern `mcp__S__*`.
    pub fn server(&self) -> Option<&str> {
        if self.arg.is_some() {
            return None;
        }
        self.tool
            .strip_prefix("mcp__")
            .and_then(|r| r.strip_suffix("__*"))
            .filter(|s| !s.is_empty() && !s.contains('*'))
    }

    /// How specific the pattern is, for showing the one rule that decided: an argument
    /// pattern beats an exact name, which beats a name glob; then the longer text.
    pub fn specificity(&self) -> (u8, usize) {
        let level = match (&self.arg, self.tool.contains('*')) {
            (Some(_), _) => 2,
            (None, false) => 1,
            (None, true) => 0,
        };
        let len = self.tool.len()
            + match &self.arg {
                Some(ArgPattern::Prefix(p) | ArgPattern::Command(p) | ArgPattern::Path(p)) => {
                    p.len()
                }
                None => 0,
            };
        (level, len)
    }
}

/// Whether one simple command, as its words, matches a command pattern: a prefix `p:*` when
/// its words are the command's first words, a glob against the words joined by spaces.
pub fn command_matches(pattern: &ArgPattern, words: &[String]) -> bool {
    match pattern {
        ArgPattern::Prefix(p) => {
            let lexed = super::shell::split_command(p);
            let prefix: Vec<String> = match lexed.commands.as_slice() {
                [one] if lexed.understood => one.clone(),
                _ => p.split_whitespace().map(str::to_owned).collect(),
            };
            !prefix.is_empty() && words.starts_with(&prefix)
        }
        ArgPattern::Command(p) => glob(p, &words.join(" "), false),
        ArgPattern::Path(_) => false,
    }
}

/// Matches `text` against `pattern`, where `*` matches any run of characters (with
/// `slash_stops`, any run without `/`, and `**` any run at all) and `?` one character.
pub fn glob(pattern: &str, text: &str, slash_stops: bool) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t, slash_stops)
}

fn glob_at(p: &[char], t: &[char], slash_stops: bool) -> bool {
    // Iterative with backtracking over the last star: linear-ish, no recursion depth.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize, bool)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            let double = !slash_stops || (pi + 1 < p.len() && p[pi + 1] == '*');
            let mut next = pi + 1;
            while next < p.len() && p[next] == '*' {
                next += 1;
            }
            star = Some((next, ti, double));
            pi = next;
            continue;
        }
        if pi < p.len() && (p[pi] == t[ti] || (p[pi] == '?' && !(slash_stops && t[ti] == '/'))) {
            pi += 1;
            ti += 1;
            continue;
        }
        match star {
            Some((sp, st, double)) if double || t[st] != '/' => {
                star = Some((sp, st + 1, double));
                pi = sp;
                ti = st + 1;
            }
            _ => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether an absolute, normalized `path` matches the path pattern `pattern`: `~/` is the home
/// directory, a relative pattern is under `root`; `**` spans directories, `*` does not, and
/// `dir/**` matches `dir` itself too.
pub fn path_matches(pattern: &str, path: &Path, root: &Path, home: Option<&Path>) -> bool {
    let anchored = if let Some(rest) = pattern.strip_prefix("~/") {
        match home {
            Some(h) => h.join(rest),
            None => return false,
        }
    } else if pattern == "~" {
        match home {
            Some(h) => h.to_path_buf(),
            None => return false,
        }
    } else {
        let p = Path::new(pattern);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        }
    };
    let pat = normalize(&anchored).to_string_lossy().into_owned();
    let text = path.to_string_lossy();
    if glob(&pat, &text, true) {
        return true;
    }
    // `dir/**` covers `dir`.
    pat.strip_suffix("/**")
        .is_some_and(|dir| glob(dir, &text, true))
}

/// `path` without `.` and with `..` taken lexically (never above the root).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The forms of a file tool's `path` argument a rule is matched against: the path as written
/// (relative to `root`, `.` and `..` taken lexically) and, when it differs, the path the OS
/// opens ([`os_path`]: symlinks followed component by component, `..` after them).
pub fn path_forms(arg: &str, root: &Path) -> Vec<PathBuf> {
    let p = Path::new(arg);
    let lexical = normalize(&if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    });
    match os_path(arg, root) {
        Ok(real) if real != lexical => vec![lexical, real],
        _ => vec![lexical],
    }
}

/// The most symbolic links followed while resolving one path (as Linux's `ELOOP` limit).
const MAX_LINKS: usize = 40;

/// The path the OS opens for a file tool's `path` argument (relative to `root`), resolved
/// the way the kernel does: component by component, a symbolic link replaced by its target
/// (relative to the directory holding it), `..` taken after the links before it are
/// followed. From the first component that does not exist on, the rest is taken lexically
/// (a file not yet written: its existing parent is resolved). The file tools open exactly
/// this path, so what a rule checked is what is opened. An error for a loop of links.
pub fn os_path(arg: &str, root: &Path) -> Result<PathBuf, String> {
    let p = Path::new(arg);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let mut pending: std::collections::VecDeque<std::ffi::OsString> = full
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    let mut out = PathBuf::new();
    let mut links = 0usize;
    let mut missing = false;
    while let Some(part) = pending.pop_front() {
        let comp = Path::new(&part).components().next();
        match comp {
            None | Some(Component::CurDir) => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::RootDir | Component::Prefix(_)) => out.push(&part),
            Some(Component::Normal(name)) => {
                out.push(name);
                if missing {
                    continue;
                }
                match std::fs::symlink_metadata(&out) {
                    Ok(m) if m.file_type().is_symlink() => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(format!(
                                "{arg} goes through more than {MAX_LINKS} symbolic links (a loop?)"
                            ));
                        }
                        let target = std::fs::read_link(&out).map_err(|e| {
                            format!("cannot read the symbolic link {}: {e}", out.display())
                        })?;
                        out.pop();
                        for c in target.components().rev() {
                            pending.push_front(c.as_os_str().to_owned());
                        }
                    }
                    Ok(_) => {
                        // On a case-insensitive file system `Secrets` opens `secrets`: the
                        // rules see the name on disk.
                        if let Some(real) = name_on_disk(&out) {
                            out.set_file_name(real);
                        }
                    }
                    Err(_) => missing = true,
                }
            }
        }
    }
    Ok(out)
}

/// The name the existing `path` has on disk when it differs from the one written only in case
/// (a case-insensitive file system: macOS, Windows); `None` when it is the same. A case-
/// sensitive file system costs one failed lookup (the name with its case swapped).
fn name_on_disk(path: &Path) -> Option<std::ffi::OsString> {
    let name = path.file_name()?.to_str()?;
    let swapped: String = name
        .chars()
        .map(|c| {
            if c.is_lowercase() {
                c.to_uppercase().next().unwrap_or(c)
            } else {
                c.to_lowercase().next().unwrap_or(c)
            }
        })
        .collect();
    if swapped == name {
        return None;
    }
    let parent = path.parent()?;
    std::fs::symlink_metadata(parent.join(&swapped)).ok()?;
    let entries = std::fs::read_dir(parent).ok()?;
    same_but_case(name, entries.flatten().map(|e| e.file_name()))
}

/// Of a directory's `entries`, the one that is `name` but for case, unless `name` itself is
/// there.
pub(super) fn same_but_case(
    name: &str,
    entries: impl Iterator<Item = std::ffi::OsString>,
) -> Option<std::ffi::OsString> {
    let folded = name.to_lowercase();
    let mut found = None;
    for e in entries {
        match e.to_str() {
            Some(s) if s == name => return None,
            Some(s) if found.is_none() && s.to_lowercase() == folded => found = Some(e),
            _ => {}
        }
    }
    found
}

/// Whether `path` has a `.git` component (any case: a case-insensitive file system opens
/// `.GIT` as `.git`): git runs what is there (hooks, `core.fsmonitor`) outside any sandbox.
pub fn in_git_dir(path: &Path) -> bool {
    path.components().any(
        |c| matches!(c, Component::Normal(n) if n.to_string_lossy().eq_ignore_ascii_case(".git")),
    )
}
