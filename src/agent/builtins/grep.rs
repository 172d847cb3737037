//! The `grep` built-in: a regex over the files under a path, with its own file-name glob.

use super::*;
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

pub(super) fn grep(
    root: &Path,
    pattern: &str,
    path: &str,
    glob: Option<&str>,
    max: u64,
    policy: Option<&crate::permissions::Policy>,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let re = regex::bytes::Regex::new(pattern)
        .map_err(|e| format!("tool \"grep\": invalid regex {pattern:?}: {e}"))?;
    let glob = glob.map(Glob::new).transpose()?;
    let base = resolve("grep", root, path)?;
    let meta =
        std::fs::metadata(&base).map_err(|e| io_failure("grep", "search", "path", path, &e))?;
    let mut out = String::new();
    let mut found: u64 = 0;
    let mut files: u64 = 0;
    let mut line = Vec::new();
    // Files a deny rule refuses, and links that lead out of the searched path: left out.
    let (mut denied, mut links_out) = (0u64, 0u64);
    let show = |p: &Path| -> String {
        p.strip_prefix(root)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .unwrap_or(p)
            .display()
            .to_string()
    };
    // A depth-first walk in name order; directories are expanded when popped.
    let mut stack = vec![(base.clone(), meta.is_dir())];
    'walk: while let Some((p, is_dir)) = stack.pop() {
        if cancel.is_cancelled() {
            return Err("tool \"grep\": cancelled".to_owned());
        }
        if is_dir {
            let Ok(rd) = std::fs::read_dir(&p) else {
                continue;
            };
            let mut children: Vec<(PathBuf, bool)> = rd
                .filter_map(Result::ok)
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
                        let real = crate::permissions::pattern::os_path(
                            &e.path().to_string_lossy(),
                            &base,
                        )
                        .ok()
                        .filter(|r| r.starts_with(&base) && r.is_file());
                        if real.is_none() {
                            links_out += 1;
                        }
                        real.map(|r| (r, false))
                    } else {
                        // Symlinked directories are not followed (no loops); sockets and such
                        // are not text.
                        None
                    }
                })
                .collect();
            children.sort_unstable_by(|a, b| b.0.cmp(&a.0));
            stack.extend(children);
            continue;
        }
        if p != base {
            if let Some(g) = &glob {
                if !g.matches(p.strip_prefix(&base).unwrap_or(&p)) {
                    continue;
                }
            }
        }
        if policy.is_some_and(|pol| pol.refuses_file("grep", &p)) {
            denied += 1;
            continue;
        }
        let Ok(Some(mut reader)) = open_text(&p) else {
            continue;
        };
        files += 1;
        let shown = show(&p);
        let mut number: u64 = 0;
        while let Ok(Some(_)) = read_line_capped(&mut reader, GREP_MAX_LINE_BYTES, &mut line) {
            number += 1;
            if number % 65_536 == 0 && cancel.is_cancelled() {
                return Err("tool \"grep\": cancelled".to_owned());
            }
            if !re.is_match(&line) {
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = match text.char_indices().nth(GREP_MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{} [...]", &text[..cut]),
                None => text.into_owned(),
            };
            let _ = writeln!(out, "{shown}:{number}: {text}");
            found += 1;
            if found >= max {
                let _ = write!(
                    out,
                    "(stopped at {max} matches; narrow the pattern, path or glob, or raise max_results)"
                );
                break 'walk;
            }
        }
    }
    let mut notes = String::new();
    if denied > 0 {
        let _ = write!(
            notes,
            "\n({denied} files left out: a deny rule of the user's refuses them)"
        );
    }
    if links_out > 0 {
        let _ = write!(
            notes,
            "\n({links_out} symbolic links left out: they lead out of {path} or to no file)"
        );
    }
    if found == 0 {
        let what = match glob {
            Some(_) => " matching the glob",
            None => "",
        };
        return Ok(format!(
            "no matches for {pattern:?} in {path} ({files} text files{what} searched){notes}"
        ));
    }
    out.push_str(notes.trim_start());
    Ok(out)
}
