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
/// `read_file` covers every built-in that reads files (`read_file`, `list_dir`, `grep`).
pub fn arg_kind(tool: &str) -> Option<ArgKind> {
    match tool {
        "bash" => Some(ArgKind::Command),
        "read_file" | "write_file" | "list_dir" | "grep" => Some(ArgKind::Path),
        _ => None,
    }
}

/// The built-ins whose path rules a call of `tool` is matched against: a read tool answers to
/// `read_file(...)` rules too.
pub fn path_rule_tools(tool: &str) -> &'static [&'static str] {
    match tool {
        "read_file" => &["read_file"],
        "list_dir" => &["list_dir", "read_file"],
        "grep" => &["grep", "read_file"],
        "write_file" => &["write_file"],
        _ => &[],
    }
}

/// A parsed rule pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The tool name, with `*` matching any run of characters.
    pub tool: String,
    /// The argument pattern, when given.
    pub arg: Option<ArgPattern>,
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
        let (name, arg) = match t.find('(') {
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
                        "only bash (a command) and read_file, write_file, list_dir, grep (a path) take an argument pattern, not {name:?}"
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
            None => glob(&self.tool, tool, false),
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

/// Whether one simple command (no operators) matches a command pattern.
pub fn command_matches(pattern: &ArgPattern, command: &str) -> bool {
    let c = command.trim();
    match pattern {
        ArgPattern::Prefix(p) => {
            c == p
                || c.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with([' ', '\t']))
        }
        ArgPattern::Command(p) => glob(p, c, false),
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

/// The forms of a file tool's `path` argument a rule is matched against: the path as the tool
/// resolves it (relative to `root`), normalized, and, when it differs, the path with symlinks
/// resolved (of its longest existing ancestor, for a file not yet there).
pub fn path_forms(arg: &str, root: &Path) -> Vec<PathBuf> {
    let p = Path::new(arg);
    let lexical = normalize(&if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    });
    let real = normalize(&harness9_base::path::resolved(&lexical));
    if real == lexical {
        vec![lexical]
    } else {
        vec![lexical, real]
    }
}

/// A shell command split for rule matching.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The simple commands between the operators `;` `&&` `||` `|` `&` and newlines.
    pub commands: Vec<String>,
    /// The command has something an allow rule cannot vouch for: a command substitution
    /// (`$(..)`, backticks, `<(..)`), a subshell or group, or an output redirection to a file.
    pub opaque: bool,
    /// Every piece a deny or ask rule is matched against: the simple commands, and the
    /// commands inside substitutions and groups too.
    pub all: Vec<String>,
}

/// Splits `command` the way a rule sees it (quotes respected; a backslash escapes).
pub fn split_command(command: &str) -> Split {
    let mut out = Split::default();
    let mut top = String::new();
    let mut piece = String::new();
    let chars: Vec<char> = command.chars().collect();
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    let flush = |s: &mut String, list: &mut Vec<String>| {
        let t = without_keywords(s.trim());
        if !t.is_empty() {
            list.push(t.to_owned());
        }
        s.clear();
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if single {
            if c == '\'' {
                single = false;
            }
            top.push(c);
            piece.push(c);
            i += 1;
            continue;
        }
        if c == '\\' {
            top.push(c);
            piece.push(c);
            if let Some(n) = next {
                top.push(n);
                piece.push(n);
            }
            i += 2;
            continue;
        }
        // Substitutions run inside double quotes too.
        if c == '`' || (c == '$' && next == Some('(')) {
            out.opaque = true;
            flush(&mut piece, &mut out.all);
            i += if c == '`' { 1 } else { 2 };
            continue;
        }
        if double {
            if c == '"' {
                double = false;
            }
            top.push(c);
            piece.push(c);
            i += 1;
            continue;
        }
        match c {
            '\'' => single = true,
            '"' => double = true,
            _ => {}
        }
        let operator = match c {
            ';' | '\n' | '\r' => 1,
            '&' if next == Some('&') => 2,
            '|' if next == Some('|') => 2,
            '|' => 1,
            '&' if next == Some('>') => 0,
            '&' if i > 0 && matches!(chars[i - 1], '>' | '<') => 0,
            '&' => 1,
            _ => 0,
        };
        if operator > 0 {
            flush(&mut top, &mut out.commands);
            flush(&mut piece, &mut out.all);
            i += operator;
            continue;
        }
        if c == '(' || c == ')' {
            // `<(..)`/`>(..)`, a subshell: what runs inside is matched for deny and ask, and
            // no allow rule vouches for it.
            out.opaque = true;
            flush(&mut piece, &mut out.all);
            if c == '(' && top.ends_with(['<', '>']) {
                top.pop();
            }
            i += 1;
            continue;
        }
        if c == '{' || c == '}' {
            // A group `{ ..; }` (a brace word) is opaque; `{a,b}` expansion is not.
            if c == '{' && next.is_none_or(char::is_whitespace) {
                out.opaque = true;
            }
            flush(&mut piece, &mut out.all);
            top.push(c);
            i += 1;
            continue;
        }
        if c == '>' && writes_a_file(&chars, i) {
            out.opaque = true;
        }
        top.push(c);
        piece.push(c);
        i += 1;
    }
    flush(&mut top, &mut out.commands);
    flush(&mut piece, &mut out.all);
    if single || double {
        // An unclosed quote: the shell will refuse it, and no allow rule vouches for it.
        out.opaque = true;
    }
    for c in &out.commands {
        if !out.all.contains(c) {
            out.all.push(c.clone());
        }
    }
    out
}

/// Whether the unquoted `>` at `at` redirects output to a file (not `2>&1`, `>&2` or
/// `/dev/null`).
fn writes_a_file(chars: &[char], at: usize) -> bool {
    let mut j = at + 1;
    if chars.get(j) == Some(&'>') {
        j += 1;
    }
    if chars.get(j) == Some(&'&') {
        // `>&2`, `2>&1`: a descriptor.
        return !chars
            .get(j + 1)
            .is_some_and(|c| c.is_ascii_digit() || *c == '-');
    }
    while chars.get(j).is_some_and(|c| *c == ' ' || *c == '\t') {
        j += 1;
    }
    let target: String = chars[j.min(chars.len())..]
        .iter()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '&' | '|' | ')'))
        .collect();
    target != "/dev/null"
}

/// `piece` without the shell's reserved words in front (`then rm x` is `rm x` to a rule).
fn without_keywords(mut piece: &str) -> &str {
    const WORDS: [&str; 14] = [
        "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac",
        "!", "time",
    ];
    loop {
        let word_end = piece.find(char::is_whitespace).unwrap_or(piece.len());
        if !WORDS.contains(&&piece[..word_end]) {
            return piece;
        }
        piece = piece[word_end..].trim_start();
    }
}
