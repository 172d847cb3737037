//! The `grep` built-in: a regex over the files under a path, with its own file-name glob.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::files::open_text;
use super::{io_failure, resolve, GREP_MAX_LINE_BYTES, GREP_MAX_LINE_CHARS, SKIP_DIRS};

use harness9_base::read::read_line_capped;

/// A file-name glob compiled to a regex: `*`, `?`, `[...]`, `{a,b}` and `**` (across `/`).
pub(super) struct Glob {
    re: regex::Regex,
    /// Matched against the path below the search root instead of the file name.
    whole_path: bool,
}

impl Glob {
    pub(super) fn new(glob: &str) -> Result<Self, String> {
        let mut re = String::from("^");
        let mut chars = glob.chars().peekable();
        let mut braces = 0usize;
        while let Some(c) = chars.next() {
            match c {
                '*' if chars.peek() == Some(&'*') => {
                    chars.next();
                    if chars.peek() == Some(&'/') {
                        chars.next();
                        re.push_str("(?:.*/)?");
                    } else {
                        re.push_str(".*");
                    }
                }
                '*' => re.push_str("[^/]*"),
                '?' => re.push_str("[^/]"),
                '[' => {
                    re.push('[');
                    if chars.peek() == Some(&'!') {
                        chars.next();
                        re.push('^');
                    }
                    for c in chars.by_ref() {
                        if c == ']' {
                            break;
                        }
                        if c == '\\' || c == '[' {
                            re.push('\\');
                        }
                        re.push(c);
                    }
                    re.push(']');
                }
                '{' => {
                    braces += 1;
                    re.push_str("(?:");
                }
                '}' if braces > 0 => {
                    braces -= 1;
                    re.push(')');
                }
                ',' if braces > 0 => re.push('|'),
                c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
            }
        }
        re.push('$');
        let re = regex::Regex::new(&re)
            .map_err(|e| format!("tool \"grep\": invalid glob {glob:?}: {e}"))?;
        Ok(Self {
            re,
            whole_path: glob.contains('/'),
        })
    }

    pub(super) fn matches(&self, rel: &Path) -> bool {
        if self.whole_path {
            self.re.is_match(&rel.to_string_lossy())
        } else {
            rel.file_name()
                .is_some_and(|n| self.re.is_match(&n.to_string_lossy()))
        }
    }
}

/// `grep`'s arguments, checked.
pub(super) struct GrepArgs {
    pub(super) pattern: String,
    /// The directory or file searched, as the model gave it.
    pub(super) path: String,
    pub(super) glob: Option<String>,
    /// The most matches returned.
    pub(super) max: u64,
}

/// Searches the files under `a.path` (a depth-first walk in name order) for `a.pattern`.
pub(super) fn grep(
    root: &Path,
    a: &GrepArgs,
    policy: Option<&crate::permissions::Policy>,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let pattern = &a.pattern;
    let re = regex::bytes::Regex::new(pattern)
        .map_err(|e| format!("tool \"grep\": invalid regex {pattern:?}: {e}"))?;
    let glob = a.glob.as_deref().map(Glob::new).transpose()?;
    let base = resolve("grep", root, &a.path)?;
    let meta =
        std::fs::metadata(&base).map_err(|e| io_failure("grep", "search", "path", &a.path, &e))?;
    let mut search = Search {
        root,
        re,
        glob,
        max: a.max,
        policy,
        cancel,
        out: String::new(),
        found: 0,
        files: 0,
        line: Vec::new(),
        denied: 0,
        links_out: 0,
    };
    let mut stack = vec![(base.clone(), meta.is_dir())];
    while let Some((p, is_dir)) = stack.pop() {
        if cancel.is_cancelled() {
            return Err(GREP_CANCELLED.to_owned());
        }
        if is_dir {
            // Directories are expanded when popped.
            let mut children = search.children(&p, &base);
            children.sort_unstable_by(|a, b| b.0.cmp(&a.0));
            stack.extend(children);
            continue;
        }
        if search.file(&p, &base)? == Walk::Stop {
            break;
        }
    }
    Ok(search.finish(a))
}

/// What `grep` says when it is cancelled.
const GREP_CANCELLED: &str = "tool \"grep\": cancelled";

/// Whether the walk goes on after a file.
#[derive(PartialEq)]
enum Walk {
    On,
    Stop,
}

/// One `grep` call's search: what it looks for and what it has found.
struct Search<'a> {
    root: &'a Path,
    re: regex::bytes::Regex,
    glob: Option<Glob>,
    max: u64,
    policy: Option<&'a crate::permissions::Policy>,
    cancel: &'a CancellationToken,
    out: String,
    found: u64,
    files: u64,
    /// The line being read.
    line: Vec<u8>,
    /// Files a deny rule refuses, and links that lead out of the searched path: left out.
    denied: u64,
    links_out: u64,
}

impl Search<'_> {
    /// The entries of `dir` the walk goes into: directories but hidden and skipped ones,
    /// files, and links that lead to a file inside `base` (as resolved).
    fn children(&mut self, dir: &Path, base: &Path) -> Vec<(PathBuf, bool)> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        rd.filter_map(Result::ok)
            .filter_map(|e| {
                let t = e.file_type().ok()?;
                let name = e.file_name();
                let name = name.to_string_lossy();
                if t.is_dir() {
                    let skip = name.starts_with('.') || SKIP_DIRS.contains(&name.as_ref());
                    (!skip).then(|| (e.path(), true))
                } else if t.is_file() {
                    Some((e.path(), false))
                } else if t.is_symlink() {
                    // A link is read only when it leads to a file inside the searched
                    // path (opened as resolved); one leading out is left out.
                    let real =
                        crate::permissions::pattern::os_path(&e.path().to_string_lossy(), base)
                            .ok()
                            .filter(|r| r.starts_with(base) && r.is_file());
                    if real.is_none() {
                        self.links_out += 1;
                    }
                    real.map(|r| (r, false))
                } else {
                    // Symlinked directories are not followed (no loops); sockets and such
                    // are not text.
                    None
                }
            })
            .collect()
    }

    /// Searches the file `p` (unless the glob or a deny rule leaves it out, or it is not
    /// text); [`Walk::Stop`] once `max` matches are found.
    fn file(&mut self, p: &Path, base: &Path) -> Result<Walk, String> {
        if p != base {
            if let Some(g) = &self.glob {
                if !g.matches(p.strip_prefix(base).unwrap_or(p)) {
                    return Ok(Walk::On);
                }
            }
        }
        if self.policy.is_some_and(|pol| pol.refuses_file("grep", p)) {
            self.denied += 1;
            return Ok(Walk::On);
        }
        let Ok(Some(mut reader)) = open_text(p) else {
            return Ok(Walk::On);
        };
        self.files += 1;
        let shown = self.show(p);
        let mut number: u64 = 0;
        while let Ok(Some(_)) = read_line_capped(&mut reader, GREP_MAX_LINE_BYTES, &mut self.line) {
            number += 1;
            if number % 65_536 == 0 && self.cancel.is_cancelled() {
                return Err(GREP_CANCELLED.to_owned());
            }
            if self.re.is_match(&self.line) && self.matched(&shown, number) == Walk::Stop {
                return Ok(Walk::Stop);
            }
        }
        Ok(Walk::On)
    }

    /// Writes the matching line `number` of the file shown as `shown`.
    fn matched(&mut self, shown: &str, number: u64) -> Walk {
        let text = String::from_utf8_lossy(&self.line);
        let text = match text.char_indices().nth(GREP_MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{} [...]", &text[..cut]),
            None => text.into_owned(),
        };
        let _ = writeln!(self.out, "{shown}:{number}: {text}");
        self.found += 1;
        if self.found < self.max {
            return Walk::On;
        }
        let _ = write!(
            self.out,
            "(stopped at {} matches; narrow the pattern, path or glob, or raise max_results)",
            self.max
        );
        Walk::Stop
    }

    /// A path as the result shows it: below the root, else whole.
    fn show(&self, p: &Path) -> String {
        p.strip_prefix(self.root)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// The result: the matches and what was left out, or that nothing matched.
    fn finish(mut self, a: &GrepArgs) -> String {
        let (pattern, path) = (&a.pattern, &a.path);
        let mut notes = String::new();
        if self.denied > 0 {
            let _ = write!(
                notes,
                "\n({} files left out: a deny rule of the user's refuses them)",
                self.denied
            );
        }
        if self.links_out > 0 {
            let _ = write!(
                notes,
                "\n({} symbolic links left out: they lead out of {path} or to no file)",
                self.links_out
            );
        }
        if self.found == 0 {
            let what = match self.glob {
                Some(_) => " matching the glob",
                None => "",
            };
            let files = self.files;
            return format!(
                "no matches for {pattern:?} in {path} ({files} text files{what} searched){notes}"
            );
        }
        self.out.push_str(notes.trim_start());
        self.out
    }
}
