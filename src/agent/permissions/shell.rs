//! How a `bash` command line splits for the rules: a conservative lexer that vouches only for
//! lines it fully understands, and a best-effort search for every command a deny rule might
//! name in any line.
//!
//! **The understood subset** (an allow rule can only vouch for such a line):
//! - words of plain characters, `'...'` quotes, `"..."` quotes without `$`, backticks or a
//!   backslash-newline inside (a backslash before `"` `\` `$` or a backtick is that
//!   character), and `\x` outside quotes (the character `x`, never a newline);
//! - the list operators `;` `&` `&&` `||` `|` `|&` and newlines between commands;
//! - the redirections `N>&M`, `N<&M`, `N>&-` and `>`, `>>`, `&>`, `<` to the word `/dev/null`.
//!
//! Anything else makes the line *not understood*: `$` in any form (`$VAR`, `$(..)`, `$'..'`),
//! backticks, `#` starting a word (a comment), `(` `)` `{` `}`, heredocs and other
//! redirections, a backslash-newline, a control character, an unclosed quote, an empty command
//! between operators, a first word that is a reserved word (`if`, `time`, `!`, `[[`...), an
//! assignment (`FOO=1 cmd`) or a glob (`*` `?` `[`). Globs in arguments are in the subset:
//! what they expand to are arguments of the same command. No allow rule vouches for a line
//! outside the subset: it asks (refused headless).
//!
//! Deny and ask rules are matched against every candidate found in any line: the commands as
//! lexed, and after the wrappers that run a command of their arguments (`env`, `command`,
//! `exec`, `xargs`, `sudo`, `timeout`, `find -exec`..., every suffix after them), the text of
//! `eval` and of `sh -c`/`bash -c` split again, a first word's file name (`/bin/rm` is `rm`),
//! and, for a line not understood, the pieces between every shell metacharacter (inside
//! substitutions, groups, comments, heredocs and `$'..'` quotes too). The search is bounded
//! (candidates, words, `eval`/`sh -c` depth and bytes); a line past a bound is not
//! understood and every deny or ask rule on commands is taken to match it.

/// A shell command split for rule matching.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The simple commands between the list operators, each as its words (quotes removed).
    pub commands: Vec<Vec<String>>,
    /// The whole line is in the subset the module's doc lists.
    pub understood: bool,
    /// Every candidate a deny or ask rule is matched against (the commands among them).
    pub all: Vec<Vec<String>>,
    /// The search for candidates stopped at its bounds (a pathological line): every deny and
    /// ask rule on commands is taken to match, and nothing vouches for the line.
    pub incomplete: bool,
}

/// The most words all the candidates of one line hold together.
const MAX_WORDS: usize = 256 * 1024;

/// How deep `eval` and `sh -c` texts are split again for deny rules.
const MAX_DEPTH: usize = 4;

/// The most candidates kept for one line (a pathological line cannot blow up the search; a
/// line with more is not understood).
const MAX_CANDIDATES: usize = 4096;

/// Reserved words: a command starting with one is not understood.
const RESERVED: [&str; 22] = [
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac",
    "select", "function", "time", "coproc", "in", "!", "[[", "]]", "{", "}",
];

/// Commands that run a command given in their arguments: every suffix of their words after
/// them is a candidate for deny rules.
const WRAPPERS: [&str; 26] = [
    "env", "command", "builtin", "exec", "nohup", "time", "timeout", "sudo", "doas", "nice",
    "ionice", "xargs", "stdbuf", "setsid", "chroot", "unbuffer", "watch", "strace", "ltrace",
    "flock", "chrt", "taskset", "runuser", "su", "parallel", "busybox",
];

/// Shells whose `-c` text is a command line of its own.
const SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish"];

/// Commands an "always" answer must not turn into a prefix rule: they run any command given
/// in their arguments, so `bash(env:*)` would allow everything.
pub fn runs_other_commands(word: &str) -> bool {
    let w = base_name(word);
    WRAPPERS.contains(&w)
        || SHELLS.contains(&w)
        || matches!(
            w,
            "eval"
                | "source"
                | "."
                | "find"
                | "trap"
                | "python"
                | "python3"
                | "perl"
                | "ruby"
                | "node"
                | "awk"
                | "gawk"
                | "sed"
        )
}

/// Splits `command` the way the rules see it (see the module's doc).
pub fn split_command(command: &str) -> Split {
    let lexed = Lexer::run(command);
    let mut found = Candidates::default();
    found.line(command, &lexed, 0);
    // The texts of `eval` and `sh -c`, split again (a worklist: no recursion to overflow),
    // within a budget of bytes: past it, the line is not understood (nothing vouches for it).
    let mut budget = command
        .len()
        .saturating_mul(MAX_DEPTH)
        .saturating_add(64 * 1024);
    let mut understood = lexed.understood;
    while let Some((text, depth)) = found.texts.pop() {
        if text.len() > budget {
            found.incomplete = true;
            break;
        }
        budget -= text.len();
        let inner = Lexer::run(&text);
        found.line(&text, &inner, depth);
    }
    if found.incomplete {
        understood = false;
    }
    Split {
        commands: if understood {
            lexed.commands
        } else {
            Vec::new()
        },
        understood,
        all: found.list,
        incomplete: found.incomplete,
    }
}

/// How many words after a wrapper are tried as the start of the command it runs.
const MAX_WRAPPER_ARGS: usize = 16;

/// The deny candidates found so far, each once.
#[derive(Default)]
struct Candidates {
    list: Vec<Vec<String>>,
    seen: std::collections::HashSet<Vec<String>>,
    /// Texts still to split (`eval`'s, `sh -c`'s) and their depth.
    texts: Vec<(String, usize)>,
    /// Words kept in `list` so far.
    words: usize,
    /// A bound was reached: some candidates were not looked at.
    incomplete: bool,
}

impl Candidates {
    /// The candidates of one line: its commands and cut pieces, and, when it is not
    /// understood, the pieces between every shell metacharacter.
    fn line(&mut self, text: &str, lexed: &Lexer, depth: usize) {
        for words in lexed.commands.iter().chain(&lexed.pieces) {
            self.command(words.clone(), depth);
        }
        if !lexed.understood {
            for fragment in text.split(|c: char| {
                matches!(
                    c,
                    ';' | '&'
                        | '|'
                        | '('
                        | ')'
                        | '{'
                        | '}'
                        | '`'
                        | '<'
                        | '>'
                        | '\n'
                        | '\r'
                        | '\''
                        | '"'
                        | '$'
                        | '#'
                        | '\\'
                )
            }) {
                let words: Vec<String> = fragment.split_whitespace().map(str::to_owned).collect();
                self.command(words, depth);
            }
        }
    }

    /// Adds `words` and the commands that run inside it (after wrappers and reserved words,
    /// by file name; `eval` and `sh -c` texts are queued).
    fn command(&mut self, words: Vec<String>, depth: usize) {
        let mut work = vec![words];
        while let Some(words) = work.pop() {
            if words.is_empty() || self.seen.contains(&words) {
                continue;
            }
            if self.list.len() >= MAX_CANDIDATES || self.words + words.len() > MAX_WORDS {
                self.incomplete = true;
                return;
            }
            self.words += words.len();
            self.seen.insert(words.clone());
            self.list.push(words.clone());
            let first = base_name(&words[0]);
            if first != words[0] {
                let mut w = words.clone();
                w[0] = first.to_owned();
                work.push(w);
            }
            let rest = &words[1..];
            if RESERVED.contains(&first) {
                // `then rm x`, `! rm x`: the command after the word.
                work.push(rest.to_vec());
            }
            if WRAPPERS.contains(&first) {
                for i in 0..rest.len().min(MAX_WRAPPER_ARGS) {
                    work.push(rest[i..].to_vec());
                }
            }
            if first == "find" {
                for (i, w) in rest.iter().enumerate() {
                    if matches!(w.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                        work.push(rest[i + 1..].to_vec());
                    }
                }
            }
            if depth >= MAX_DEPTH {
                // An `eval` or `sh -c` nested deeper than is split: not looked into.
                if first == "eval" || SHELLS.contains(&first) {
                    self.incomplete = true;
                }
                continue;
            }
            if first == "eval" && !rest.is_empty() {
                self.texts.push((rest.join(" "), depth + 1));
            }
            if SHELLS.contains(&first) {
                // `sh -c TEXT`, `bash -lc TEXT`, `bash -e -c TEXT`: the word after the option
                // holding `c`.
                let mut it = rest.iter();
                while let Some(w) = it.next() {
                    if w.starts_with('-') && !w.starts_with("--") && w.contains('c') {
                        if let Some(text) = it.next() {
                            self.texts.push((text.clone(), depth + 1));
                        }
                        break;
                    }
                }
            }
        }
    }
}

/// The file name of a command word (`/usr/bin/rm` is `rm`).
fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// One word being read.
#[derive(Default)]
struct Word {
    text: String,
    /// Something was read (an empty quoted word counts).
    started: bool,
    /// An unquoted `*`, `?` or `[`.
    glob: bool,
    /// An unquoted `=`.
    assigns: bool,
    /// Unquoted digits only so far (a descriptor before `>`).
    digits: bool,
}

/// The lexer's state over one line.
struct Lexer {
    chars: Vec<char>,
    i: usize,
    word: Word,
    command: Vec<String>,
    /// The first word of `command` had a glob or an assignment.
    odd_first: bool,
    commands: Vec<Vec<String>>,
    /// What a not-understood construct cut off (substitutions, groups): deny candidates.
    pieces: Vec<Vec<String>>,
    understood: bool,
    /// The last operator needs a command after it (`&&`, `||`, `|`).
    dangling: bool,
}

impl Lexer {
    fn run(text: &str) -> Lexer {
        let mut l = Lexer {
            chars: text.chars().collect(),
            i: 0,
            word: Word::default(),
            command: Vec::new(),
            odd_first: false,
            commands: Vec::new(),
            pieces: Vec::new(),
            understood: true,
            dangling: false,
        };
        while l.i < l.chars.len() {
            l.step();
        }
        // The end of the line ends the last command (`a &&` at the end is not understood).
        l.end_command(Some(false));
        l
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn not_understood(&mut self) {
        self.understood = false;
    }

    fn end_word(&mut self) {
        let w = std::mem::take(&mut self.word);
        if !w.started {
            return;
        }
        if self.command.is_empty() && (w.glob || w.assigns) {
            self.odd_first = true;
        }
        self.command.push(w.text);
    }

    /// Ends the current command at an operator (`Some(needs_more)`) or at a cut
    /// (`None`: a construct outside the subset, whose pieces go to the deny candidates).
    fn end_command(&mut self, operator: Option<bool>) {
        self.end_word();
        let words = std::mem::take(&mut self.command);
        let odd = std::mem::take(&mut self.odd_first);
        if words.is_empty() {
            if operator.is_some() && self.dangling {
                self.not_understood();
            }
            if let Some(needs) = operator {
                self.dangling = needs;
            }
            return;
        }
        if odd || RESERVED.contains(&words[0].as_str()) {
            self.not_understood();
        }
        match operator {
            Some(needs) => {
                self.dangling = needs;
                self.commands.push(words);
            }
            None => self.pieces.push(words),
        }
    }

    fn add(&mut self, c: char, quoted: bool) {
        let w = &mut self.word;
        if !w.started {
            w.digits = !quoted;
        }
        w.started = true;
        w.digits &= !quoted && c.is_ascii_digit();
        if !quoted {
            w.glob |= matches!(c, '*' | '?' | '[');
            w.assigns |= c == '=';
        }
        w.text.push(c);
    }

    fn step(&mut self) {
        let c = self.chars[self.i];
        let next = self.peek(1);
        match c {
            ' ' | '\t' => {
                self.end_word();
                self.i += 1;
            }
            '\n' => {
                // A blank line, or a line after `&&`/`||`/`|`, continues the list.
                if !self.command.is_empty() || self.word.started {
                    self.end_command(Some(false));
                }
                self.i += 1;
            }
            ';' => {
                if next == Some(';') {
                    self.not_understood();
                }
                if self.command.is_empty() && !self.word.started {
                    self.not_understood();
                }
                self.end_command(Some(false));
                self.i += 1;
            }
            '&' if next == Some('>') => self.redirection(),
            '&' | '|' => {
                let double = next == Some(c) || (c == '|' && next == Some('&'));
                if self.command.is_empty() && !self.word.started {
                    self.not_understood();
                }
                self.end_command(Some(c == '|' || double));
                self.i += if double { 2 } else { 1 };
            }
            '<' | '>' => self.redirection(),
            '\'' => self.single_quoted(),
            '"' => self.double_quoted(),
            '\\' => {
                match next {
                    Some('\n') | None => {
                        // A line continuation (or a trailing backslash): bash joins the lines.
                        self.not_understood();
                    }
                    Some(n) => self.add(n, true),
                }
                self.i += 2;
            }
            // An expansion or substitution: its text is split for deny rules.
            '$' | '`' => self.cut(if c == '$' && matches!(next, Some('(' | '{')) {
                2
            } else {
                1
            }),
            // A comment: bash ignores the rest of the line; deny rules still see it.
            '#' if !self.word.started => self.cut(1),
            '(' | ')' | '{' | '}' => self.cut(1),
            c if c.is_control() => self.cut(1),
            c => {
                self.add(c, false);
                self.i += 1;
            }
        }
    }

    /// Something outside the understood subset at the cursor, `width` characters long: the
    /// line is not understood, and the command is cut there for deny rules.
    fn cut(&mut self, width: usize) {
        self.not_understood();
        self.end_command(None);
        self.i += width;
    }

    fn single_quoted(&mut self) {
        self.i += 1;
        self.word.started = true;
        self.word.digits = false;
        while let Some(c) = self.peek(0) {
            self.i += 1;
            if c == '\'' {
                return;
            }
            self.word.text.push(c);
        }
        self.not_understood();
    }

    fn double_quoted(&mut self) {
        self.i += 1;
        self.word.started = true;
        self.word.digits = false;
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.i += 1;
                    return;
                }
                '$' | '`' => {
                    // An expansion inside the quotes: cut here for deny rules.
                    self.cut(if self.peek(1) == Some('(') { 2 } else { 1 });
                    return;
                }
                '\\' => match self.peek(1) {
                    Some(n @ ('"' | '\\' | '$' | '`')) => {
                        self.word.text.push(n);
                        self.i += 2;
                    }
                    Some('\n') | None => {
                        self.not_understood();
                        self.i += 2;
                    }
                    Some(n) => {
                        self.word.text.push('\\');
                        self.word.text.push(n);
                        self.i += 2;
                    }
                },
                c => {
                    self.word.text.push(c);
                    self.i += 1;
                }
            }
        }
        self.not_understood();
    }

    /// A redirection at `<`, `>` or `&>`: only descriptor duplications and `/dev/null` are in
    /// the subset.
    fn redirection(&mut self) {
        // A word of digits right before is the descriptor (`2>`), not an argument.
        if self.word.started && self.word.digits {
            self.word = Word::default();
        } else {
            self.end_word();
        }
        const OPERATORS: [&str; 12] = [
            "&>>", "<<<", "<<-", "&>", ">>", ">&", ">|", "<<", "<&", "<>", ">", "<",
        ];
        let rest: String = self.chars[self.i..].iter().take(3).collect();
        let op = OPERATORS
            .iter()
            .find(|o| rest.starts_with(**o))
            .copied()
            .unwrap_or(">");
        self.i += op.len();
        if op == ">&" || op == "<&" {
            // `>&N`, `<&N`, `>&-`: a descriptor.
            let mut target = String::new();
            while let Some(c) = self.peek(0).filter(|c| c.is_ascii_digit() || *c == '-') {
                target.push(c);
                self.i += 1;
            }
            if target.is_empty() || !self.delimited() {
                self.not_understood();
            }
            return;
        }
        if !matches!(op, ">" | ">>" | "&>" | "&>>" | "<") {
            // Heredocs, here-strings, `<>` and the rest.
            self.not_understood();
            self.end_command(None);
            return;
        }
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.i += 1;
        }
        let target: String = self.chars[self.i..]
            .iter()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '&' | '|' | '<' | '>'))
            .collect();
        if target != "/dev/null" {
            // A file written or read: its target is read as an argument for deny rules.
            self.not_understood();
            return;
        }
        self.i += target.chars().count();
    }

    /// The next character ends a word.
    fn delimited(&self) -> bool {
        self.peek(0)
            .is_none_or(|c| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>'))
    }
}
