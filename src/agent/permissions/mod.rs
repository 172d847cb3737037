//! Whether a tool call runs, asks the user first, or is refused: the user's `allow`, `ask` and
//! `deny` rules (settings files, command-line flags, remembered answers), the permission mode,
//! and what a tool says of itself, decided by one pure function, [`decide`], that the TUI,
//! `run -p` and `mcp call` all go through.
//!
//! The table, first row that applies wins:
//!
//! | # | when                                                   | verdict |
//! |---|--------------------------------------------------------|---------|
//! | 1 | a `deny` rule matches                                  | refuse  |
//! | 2 | mode `bypass` (and `mcp call`, the user's own call)    | run     |
//! | 3 | mode `read-only` and the tool is not read-only         | refuse  |
//! | 4 | an `ask` rule matches                                  | ask     |
//! | 5 | an `allow` rule matches                                | run     |
//! | 6 | mode `accept-edits`, a file writer (`write_file`, `edit_file`, `apply_patch`) whose every path is inside the project (not `.git`) | run |
//! | 7 | the tool is read-only (`readOnlyHint: true`)           | run     |
//! | 8 | otherwise                                              | ask     |
//!
//! A headless front end turns "ask" into a refusal naming what would allow the call
//! ([`Verdict::headless`]). A server's annotations only ever reach row 7: they never loosen a
//! rule of the user's.

pub mod pattern;
pub mod shell;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

pub use pattern::Pattern;
use pattern::{
    arg_kind, command_matches, path_forms, path_matches, path_rule_tools, ArgKind, ArgPattern,
};
use shell::{split_command, Split};

/// What a rule decides about the calls it matches: allow, ask or deny (the settings key it is
/// written under). Not a [`Verdict`], which is what [`decide`] makes of all the rules for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decision {
    /// Runs without asking.
    Allow,
    /// Asks every time (refused headless).
    Ask,
    /// Never runs.
    Deny,
}

impl Decision {
    /// The settings key: `allow`, `ask`, `deny`.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// Where a rule comes from (shown with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A settings file, at a line.
    File {
        /// The file.
        path: PathBuf,
        /// Its 1-based line.
        line: usize,
    },
    /// A command-line flag for this run (`--allowed-tools`, `--disallowed-tools`).
    Flag(&'static str),
    /// An "always" answer remembered for this project.
    Saved,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File { path, line } => write!(f, "{}:{line}", path.display()),
            Source::Flag(flag) => write!(f, "{flag}"),
            Source::Saved => write!(f, "an \"always\" answer saved for this project"),
        }
    }
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Allow, ask or deny.
    pub kind: Decision,
    /// The pattern as written (trimmed).
    pub text: String,
    /// The pattern parsed.
    pub pattern: Pattern,
    /// Where it was written.
    pub source: Source,
}

impl Rule {
    /// A rule from its text, or what is wrong with the text.
    pub fn parse(kind: Decision, text: &str, source: Source) -> Result<Rule, String> {
        let name = text.trim().split('(').next().unwrap_or_default();
        if kind != Decision::Deny && pattern::claude_code_name(name) == Some(None) {
            // A deny rule of a tool harness9 lacks refuses nothing, harmlessly ([`unmatched`]
            // warns); an allow or ask rule of one cannot do what it says.
            return Err(format!(
                "harness9 has no {name} tool (a Claude Code tool): remove the rule"
            ));
        }
        Ok(Rule {
            kind,
            text: text.trim().to_owned(),
            pattern: Pattern::parse(text)?,
            source,
        })
    }

    /// `deny rule "bash(rm:*)" (~/.config/harness9/config.toml:4)`.
    pub fn describe(&self) -> String {
        format!(
            "{} rule \"{}\" ({})",
            self.kind.name(),
            self.text,
            self.source
        )
    }
}

/// The permission mode of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The rules, then: read-only tools run, others ask.
    #[default]
    Default,
    /// Only read-only tools run; others are refused.
    ReadOnly,
    /// As default, and the file writers (`write_file`, `edit_file`, `apply_patch`) inside the
    /// project run without asking.
    AcceptEdits,
    /// Everything runs but what a `deny` rule names.
    Bypass,
}

impl Mode {
    /// The flag's value: `default`, `read-only`, `accept-edits`, `bypass`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::ReadOnly => "read-only",
            Mode::AcceptEdits => "accept-edits",
            Mode::Bypass => "bypass",
        }
    }
}

/// What [`decide`] knows of the tool called.
#[derive(Debug, Clone, Copy)]
pub struct ToolFacts<'a> {
    /// The registered name (`bash`, `mcp__github__get_issue`).
    pub name: &'a str,
    /// The owning server; `None` for a built-in.
    pub server: Option<&'a str>,
    /// `readOnlyHint: true` (the built-in read tools say so of themselves).
    pub read_only: bool,
}

impl<'a> ToolFacts<'a> {
    /// The facts of a registered tool, from its annotations.
    pub fn of(name: &'a str, server: Option<&'a str>, annotations: Option<&str>) -> Self {
        let read_only = annotations
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
            .and_then(|v| v.get("readOnlyHint").and_then(Value::as_bool))
            .unwrap_or(false);
        Self {
            name,
            server,
            read_only,
        }
    }
}

/// Where calls run: relative paths are under `root` (the project), `~` is `home`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The project's directory (the working directory).
    pub root: PathBuf,
    /// The user's home directory, for `~/` in path rules.
    pub home: Option<PathBuf>,
}

/// What happens to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// It runs.
    Run,
    /// The user is asked (refused headless).
    Ask,
    /// It does not run.
    Refuse,
}

/// Why [`decide`] said what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The rule that decided (the most specific of those that matched).
    Rule(Rule),
    /// The permission mode (bypass, read-only, accept-edits).
    Mode(Mode),
    /// The tool is read-only by its annotations.
    ReadOnly,
    /// No rule names the call.
    Unruled,
}

/// [`decide`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Run, ask or refuse.
    pub action: Action,
    /// Why.
    pub reason: Reason,
}

/// The user's rules in force: from the settings files, the flags of this run, and the
/// remembered answers (which the TUI adds to as the user answers "always"). Each remembered
/// rule carries the moment it was learned ([`Rules::moment`]): a call judged "as of" an
/// earlier moment does not see it, so an "always" answer never runs a call that was already
/// waiting when the answer came.
#[derive(Debug, Default)]
pub struct Rules {
    fixed: Vec<Rule>,
    learned: Mutex<Learned>,
}

/// The remembered rules, each with the moment it was learned.
#[derive(Debug, Default)]
struct Learned {
    rules: Vec<(u64, Rule)>,
    /// The next moment (rules saved before the session are at 0).
    next: u64,
}

impl Rules {
    /// `fixed` (settings files, flags) and the remembered `saved` answers.
    pub fn new(fixed: Vec<Rule>, saved: Vec<Rule>) -> Self {
        Self {
            fixed,
            learned: Mutex::new(Learned {
                rules: saved.into_iter().map(|r| (0, r)).collect(),
                next: 1,
            }),
        }
    }

    /// Every rule in force, the settings' and flags' first.
    pub fn all(&self) -> Vec<Rule> {
        let mut out = self.fixed.clone();
        out.extend(self.learned().rules.iter().map(|(_, r)| r.clone()));
        out
    }

    /// Now, for [`Policy::decide_as_of`]: rules learned from here on are not seen.
    pub fn moment(&self) -> u64 {
        self.learned().next.max(1)
    }

    /// Adds a remembered allow rule (an "always" answer); `false` when it is already there.
    pub fn learn(&self, rule: Rule) -> bool {
        let mut l = self.learned();
        if l.rules
            .iter()
            .any(|(_, r)| r.kind == rule.kind && r.text == rule.text)
        {
            return false;
        }
        let at = l.next.max(1);
        l.rules.push((at, rule));
        l.next = at + 1;
        true
    }

    /// Forgets a remembered rule; `false` when there was none such.
    pub fn forget(&self, kind: Decision, text: &str) -> bool {
        let mut l = self.learned();
        let before = l.rules.len();
        l.rules.retain(|(_, r)| !(r.kind == kind && r.text == text));
        l.rules.len() != before
    }

    /// The remembered rules learned before `moment`.
    fn learned_before(&self, moment: u64) -> Vec<Rule> {
        self.learned()
            .rules
            .iter()
            .filter(|(at, _)| *at < moment)
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn learned(&self) -> std::sync::MutexGuard<'_, Learned> {
        // A panic while holding it cannot leave the list half-changed (push/retain).
        self.learned.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A session's permissions: the rules, the mode and where calls run. One `Arc` the engine and
/// the TUI share; its only mutable part is the rules learned from "always" answers (a
/// `Mutex<Vec<Rule>>` in [`Rules`], held for a push, a retain or a clone): the TUI writes the
/// saved file, the engine learns the rule.
#[derive(Debug, Default)]
pub struct Policy {
    /// The rules in force.
    pub rules: Rules,
    /// The mode.
    pub mode: Mode,
    /// The project and home directories.
    pub place: Place,
    /// The user's own settings file, where an `allow` rule or a looser shell sandbox works
    /// (a project's `harness9.toml` may not set them): what the hints name.
    pub settings_file: Option<PathBuf>,
}

impl Policy {
    /// The policy for one session.
    pub fn new(rules: Rules, mode: Mode, place: Place) -> Arc<Self> {
        Self::with_settings_file(rules, mode, place, None)
    }

    /// [`Policy::new`] with the user's own settings file, which the refusals and notes name.
    pub fn with_settings_file(
        rules: Rules,
        mode: Mode,
        place: Place,
        settings_file: Option<PathBuf>,
    ) -> Arc<Self> {
        Arc::new(Self {
            rules,
            mode,
            place,
            settings_file,
        })
    }

    /// Where the user's own settings are, as a hint names them: `your own settings file
    /// (PATH)`, never a project's `harness9.toml`, which may not allow.
    pub fn own_settings(&self) -> String {
        crate::model::settings::own_settings(self.settings_file.as_deref())
    }

    /// [`decide`] over this policy's rules.
    pub fn decide(&self, tool: ToolFacts<'_>, args: &Value) -> Verdict {
        self.decide_in(tool, args, self.mode, u64::MAX)
    }

    /// [`decide`] over the rules in force at `moment` ([`Rules::moment`], taken when the call
    /// came): an "always" answer given since does not run it.
    pub fn decide_as_of(&self, tool: ToolFacts<'_>, args: &Value, moment: u64) -> Verdict {
        self.decide_in(tool, args, self.mode, moment)
    }

    /// [`decide`] for the user's own explicit call (`mcp call`): it runs unless denied.
    pub fn decide_explicit(&self, tool: ToolFacts<'_>, args: &Value) -> Verdict {
        self.decide_in(tool, args, Mode::Bypass, u64::MAX)
    }

    /// Whether a deny rule refuses the read tool `tool` (`grep`, `list_dir`) the file or entry
    /// at `path` it came to inside the path it was called on (as walked, and resolved): the
    /// call's own path passed the rules, each file under it is checked here.
    pub fn refuses_file(&self, tool: &str, path: &Path) -> bool {
        let learned = self.rules.learned_before(u64::MAX);
        let sets: [&[Rule]; 2] = [&self.rules.fixed, &learned];
        // Most sessions have no deny rule on paths: nothing to resolve then.
        let any = each(&sets).any(|r| {
            r.kind == Decision::Deny
                && matches!(r.pattern.arg, Some(ArgPattern::Path(_)))
                && path_rule_tools(tool).contains(&r.pattern.tool.as_str())
        });
        if !any {
            return false;
        }
        let facts = ToolFacts {
            name: tool,
            server: None,
            read_only: true,
        };
        let call = Call {
            tool: facts,
            split: None,
            forms: Some(path_forms(&path.to_string_lossy(), &self.place.root)),
        };
        best(&sets, Decision::Deny, &call, &self.place).is_some()
    }

    fn decide_in(&self, tool: ToolFacts<'_>, args: &Value, mode: Mode, moment: u64) -> Verdict {
        let learned = self.rules.learned_before(moment);
        let sets: [&[Rule]; 2] = [&self.rules.fixed, &learned];
        decide_over(tool, args, &sets, mode, &self.place)
    }
}

/// Run, ask or refuse a call of `tool` with `args` (see the module's table).
pub fn decide(
    tool: ToolFacts<'_>,
    args: &Value,
    rules: &[Rule],
    mode: Mode,
    place: &Place,
) -> Verdict {
    decide_over(tool, args, &[rules], mode, place)
}

/// A call as the rules see it, worked out once: the command line of a `bash` call split, the
/// path of a file tool in each of its forms.
struct Call<'a> {
    tool: ToolFacts<'a>,
    split: Option<Split>,
    forms: Option<Vec<PathBuf>>,
}

impl<'a> Call<'a> {
    fn new(tool: ToolFacts<'a>, args: &Value, place: &Place) -> Self {
        let builtin = tool.server.is_none();
        let split = (builtin && tool.name == "bash")
            .then(|| split_command(args.get("command").and_then(Value::as_str).unwrap_or("")));
        let forms = match tool.name {
            // Every path the patch writes, removes or moves to; none when it does not parse
            // (the tool parses it the same way and then writes nothing).
            "apply_patch" if builtin => args
                .get("input")
                .and_then(Value::as_str)
                .and_then(crate::builtins::patch::paths)
                .map(|paths| {
                    paths
                        .iter()
                        .flat_map(|p| path_forms(p, &place.root))
                        .collect()
                }),
            _ => (builtin && arg_kind(tool.name) == Some(ArgKind::Path))
                .then(|| path_forms(&path_arg(tool.name, args), &place.root)),
        };
        Self { tool, split, forms }
    }
}

/// Every rule of `sets`, in order.
fn each<'r>(sets: &'r [&'r [Rule]]) -> impl Iterator<Item = &'r Rule> + Clone {
    sets.iter().flat_map(|s| s.iter())
}

fn decide_over(
    tool: ToolFacts<'_>,
    args: &Value,
    sets: &[&[Rule]],
    mode: Mode,
    place: &Place,
) -> Verdict {
    let verdict = |action, reason| Verdict { action, reason };
    let call = Call::new(tool, args, place);
    if let Some(r) = best(sets, Decision::Deny, &call, place) {
        return verdict(Action::Refuse, Reason::Rule(r.clone()));
    }
    if mode == Mode::Bypass {
        return verdict(Action::Run, Reason::Mode(mode));
    }
    if mode == Mode::ReadOnly && !tool.read_only {
        return verdict(Action::Refuse, Reason::Mode(mode));
    }
    if let Some(r) = best(sets, Decision::Ask, &call, place) {
        return verdict(Action::Ask, Reason::Rule(r.clone()));
    }
    if let Some(r) = allowed(sets, &call, place) {
        return verdict(Action::Run, Reason::Rule(r.clone()));
    }
    let writes_files = tool.server.is_none()
        && match tool.name {
            "write_file" | "edit_file" => args.get("path").is_some(),
            "apply_patch" => call.forms.is_some(),
            _ => false,
        };
    if mode == Mode::AcceptEdits && writes_files {
        let inside = call.forms.as_ref().is_some_and(|forms| {
            !forms.is_empty()
                && forms.iter().all(|f| f.starts_with(&place.root))
                && !forms.iter().any(|f| pattern::in_git_dir(f))
        });
        if inside {
            return verdict(Action::Run, Reason::Mode(mode));
        }
    }
    if tool.read_only {
        return verdict(Action::Run, Reason::ReadOnly);
    }
    verdict(Action::Ask, Reason::Unruled)
}

/// The most specific rule of `kind` that matches the call (for deny and ask: any part of it).
fn best<'r>(
    sets: &'r [&'r [Rule]],
    kind: Decision,
    call: &Call<'_>,
    place: &Place,
) -> Option<&'r Rule> {
    each(sets)
        .filter(|r| r.kind == kind && catches(r, call, place))
        .max_by_key(|r| r.pattern.specificity())
}

/// Whether a deny or ask rule catches the call: its name matches and, with an argument
/// pattern, some command of a `bash` call (inside substitutions too) or some form of a
/// file tool's path (as written, or with symlinks resolved) matches.
fn catches(rule: &Rule, call: &Call<'_>, place: &Place) -> bool {
    let tool = call.tool;
    let Some(arg) = &rule.pattern.arg else {
        return rule.pattern.names(tool.name, tool.server);
    };
    match arg {
        ArgPattern::Prefix(_) | ArgPattern::Command(_) => {
            rule.pattern.tool == "bash"
                && call
                    .split
                    .as_ref()
                    .is_some_and(|s| s.incomplete || s.all.iter().any(|c| command_matches(arg, c)))
        }
        ArgPattern::Path(p) => {
            path_rule_tools(tool.name).contains(&rule.pattern.tool.as_str())
                && call.forms.as_ref().is_some_and(|forms| {
                    forms
                        .iter()
                        .any(|f| path_matches(p, f, &place.root, place.home.as_deref()))
                })
        }
    }
}

/// The allow rule that vouches for the call, the most specific: one naming the tool without
/// an argument pattern; or, for `bash`, every simple command of a command line the lexer fully
/// understands ([`shell`]) matched by some allow rule; or, for a file tool, every form of its
/// path matched by one rule.
fn allowed<'r>(sets: &'r [&'r [Rule]], call: &Call<'_>, place: &Place) -> Option<&'r Rule> {
    let tool = call.tool;
    let allows = || each(sets).filter(|r| r.kind == Decision::Allow);
    if let Some(r) = allows()
        .filter(|r| r.pattern.arg.is_none() && r.pattern.names(tool.name, tool.server))
        .max_by_key(|r| r.pattern.specificity())
    {
        return Some(r);
    }
    if let Some(split) = &call.split {
        if !split.understood || split.commands.is_empty() {
            return None;
        }
        let mut vouching: Option<&Rule> = None;
        for c in &split.commands {
            let r = allows()
                .filter(|r| r.pattern.tool == "bash")
                .filter(|r| {
                    r.pattern
                        .arg
                        .as_ref()
                        .is_some_and(|a| command_matches(a, c))
                })
                .max_by_key(|r| r.pattern.specificity())?;
            if vouching.is_none_or(|v| r.pattern.specificity() > v.pattern.specificity()) {
                vouching = Some(r);
            }
        }
        return vouching;
    }
    let forms = call.forms.as_ref()?;
    allows()
        .filter(|r| path_rule_tools(tool.name).contains(&r.pattern.tool.as_str()))
        .filter(|r| match &r.pattern.arg {
            Some(ArgPattern::Path(p)) => forms
                .iter()
                .all(|f| path_matches(p, f, &place.root, place.home.as_deref())),
            _ => false,
        })
        .max_by_key(|r| r.pattern.specificity())
}

/// A file tool's `path` argument (`grep` and `list_dir` default to the project).
fn path_arg(tool: &str, args: &Value) -> String {
    match args.get("path").and_then(Value::as_str) {
        Some(p) => p.to_owned(),
        None if matches!(tool, "grep" | "list_dir") => ".".to_owned(),
        None => String::new(),
    }
}

impl Verdict {
    /// The verdict as a front end that cannot ask applies it: "ask" is refused.
    pub fn headless(mut self) -> Self {
        if self.action == Action::Ask {
            self.action = Action::Refuse;
        }
        self
    }

    /// The error result the model gets for a refused call of `tool` (of `server`; `headless`:
    /// the refusal is for want of someone to ask), naming the rule or flag that decided and
    /// what would allow the call.
    pub fn refusal(&self, tool: &str, server: Option<&str>, headless: bool) -> String {
        self.refusal_in(
            tool,
            server,
            headless,
            &crate::model::settings::own_settings(None),
        )
    }

    /// [`Verdict::refusal`] naming `own`, the user's own settings file
    /// ([`Policy::own_settings`]), as where an allow rule works.
    pub fn refusal_in(
        &self,
        tool: &str,
        server: Option<&str>,
        headless: bool,
        own: &str,
    ) -> String {
        let suggest = suggestion(tool, server);
        match &self.reason {
            Reason::Rule(r) if r.kind == Decision::Deny => format!(
                "the call of \"{tool}\" is refused by the user's {}; do not try it again: tell the user what you wanted to do, or find another way",
                r.describe()
            ),
            Reason::Rule(r) => format!(
                "the call of \"{tool}\" must be approved by the user ({}), and this run cannot ask (run -p); it did not run. The user can remove that rule, or run it in the TUI; tell the user what you wanted to do",
                r.describe()
            ),
            Reason::Mode(m) => format!(
                "the call of \"{tool}\" is refused: --permission-mode {} runs only read-only tools. The user can allow it with --allowed-tools '{suggest}' and another --permission-mode; tell the user what you wanted to do",
                m.name()
            ),
            Reason::ReadOnly | Reason::Unruled if headless => format!(
                "the call of \"{tool}\" needs the user's permission and this run cannot ask (run -p): no rule allows it, so it did not run. The user can allow it with --allowed-tools '{suggest}', with allow = [\"{suggest}\"] under [permissions] in {own} (a project's harness9.toml may not allow), or with --permission-mode bypass; tell the user what you wanted to do, or find another way"
            ),
            Reason::ReadOnly | Reason::Unruled => format!(
                "the call of \"{tool}\" did not run: the user did not approve it; do not run it again unasked: say what you wanted to do, or find another way"
            ),
        }
    }
}

/// The rule that would allow `tool` (of `server`) as a whole: `bash`, `mcp__server__tool`
/// with the server's name as its config writes it.
fn suggestion(tool: &str, server: Option<&str>) -> String {
    match server {
        Some(s) => harness9_actors::naming::rule_name(s, tool),
        None => tool.to_owned(),
    }
}

/// The rule an "always for this server" answer saves: `mcp__{server}__*`, the server's name
/// as its config writes it (its identity, never the sanitized one, which another server's
/// name may share); `None` for a name a rule cannot spell exactly (the config holds such
/// servers; a `*` would make it a glob over other servers).
pub fn server_rule(server: &str) -> Option<String> {
    let rule = format!("mcp__{server}__*");
    Pattern::parse(&rule)
        .ok()
        .filter(|p| p.server() == Some(server))
        .map(|_| rule)
}

/// The rule an "always for this tool" answer saves: the tool's name (an MCP tool's with its
/// server's name as written: [`harness9_actors::naming::rule_name`]); for `bash`, the
/// command's first word with its subcommand (`bash(git status:*)`, `bash(cargo test:*)`) when
/// the command line is plain, else `bash` itself is not offered (`None`).
pub fn tool_rule(tool: &str, server: Option<&str>, args: &Value) -> Option<String> {
    if let Some(s) = server {
        let rule = harness9_actors::naming::rule_name(s, tool);
        return (Pattern::parse(&rule).is_ok() && !s.contains('*')).then_some(rule);
    }
    if tool != "bash" {
        return Some(tool.to_owned());
    }
    let command = args.get("command").and_then(Value::as_str).unwrap_or("");
    let split = split_command(command);
    if !split.understood || split.commands.len() != 1 {
        return None;
    }
    let words: Vec<&str> = split.commands[0].iter().map(String::as_str).collect();
    let first = *words.first()?;
    if first.contains('=')
        || shell::runs_other_commands(first)
        || !first
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
    {
        return None;
    }
    let sub = words.get(1).filter(|w| {
        !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-:".contains(c))
    });
    Some(match sub {
        Some(s) => format!("bash({first} {s}:*)"),
        None => format!("bash({first}:*)"),
    })
}

/// A warning for each rule (of the settings files and flags; remembered answers aside) that
/// names no tool here: no built-in of `builtins` and no tool of any configured server of
/// `servers`. A deny rule that denies nothing is the dangerous case (the user believes
/// something is refused): its warning says so first.
pub fn unmatched(rules: &[Rule], builtins: &[&str], servers: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for r in rules.iter().filter(|r| r.source != Source::Saved) {
        let p = &r.pattern;
        if builtins.iter().any(|b| p.names(b, None)) || servers.iter().any(|s| names_server(p, s)) {
            continue;
        }
        let effect = match r.kind {
            Decision::Deny => "denies nothing",
            Decision::Ask => "asks about nothing",
            Decision::Allow => "allows nothing",
        };
        // Written with the sanitized name a server's tools are registered under: say the one
        // spelling that names it.
        let sanitized = servers.iter().find(|s| {
            let registered = harness9_actors::naming::server_prefix(s);
            **s != registered
                .trim_start_matches("mcp__")
                .trim_end_matches("__")
                && p.tool.starts_with(&registered)
        });
        let why = if let Some(s) = sanitized {
            let registered = harness9_actors::naming::server_prefix(s);
            format!(
                "a rule names a server as its config writes it: write \"mcp__{s}__{}\" for server \"{s}\" (its tools are registered as {registered}...)",
                &p.tool[registered.len()..]
            )
        } else if pattern::claude_code_name(&p.tool) == Some(None) {
            format!(
                "harness9 has no {} tool (a Claude Code tool); what reaches it here goes through bash or an MCP server: rule on those",
                p.tool
            )
        } else {
            let mut list: Vec<&str> = servers.to_vec();
            list.sort_unstable();
            format!(
                "it matches no built-in tool ({}) and no configured server ({}); check the spelling (a server's tools are mcp__SERVER__TOOL, all of them mcp__SERVER__*)",
                builtins.join(", "),
                if list.is_empty() {
                    "none".to_owned()
                } else {
                    list.join(", ")
                }
            )
        };
        out.push(format!(
            "{}: {} rule \"{}\" {effect}: {why}",
            r.source,
            r.kind.name(),
            r.text
        ));
    }
    out
}

/// Whether `p` could name a tool of `server` (its tools are not known before it connects: a
/// name under the server's prefix counts).
fn names_server(p: &Pattern, server: &str) -> bool {
    if p.server().is_some() {
        return p.names("", Some(server));
    }
    // The server as rules spell it: its configured name, never the sanitized one.
    let prefix = format!("mcp__{server}__");
    match p.tool.find('*') {
        Some(star) => {
            let lit = &p.tool[..star];
            lit.starts_with(&prefix) || prefix.starts_with(lit)
        }
        None => p.tool.starts_with(&prefix) && p.tool.len() > prefix.len(),
    }
}

/// Rules from a comma-separated flag value (`--allowed-tools 'bash(git status:*),read_file'`):
/// commas inside parentheses belong to the pattern.
pub fn parse_flag(value: &str, kind: Decision, flag: &'static str) -> Result<Vec<Rule>, String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let bytes: Vec<(usize, char)> = value.char_indices().collect();
    let mut push = |s: &str| -> Result<(), String> {
        if s.trim().is_empty() {
            return Ok(());
        }
        out.push(
            Rule::parse(kind, s, Source::Flag(flag))
                .map_err(|e| format!("{flag}: malformed rule \"{}\": {e}", s.trim()))?,
        );
        Ok(())
    };
    for (i, c) in bytes {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                push(&value[start..i])?;
                start = i + 1;
            }
            _ => {}
        }
    }
    push(&value[start..])?;
    Ok(out)
}

/// Whether `path` lies under `root` (lexically).
pub fn inside(path: &Path, root: &Path) -> bool {
    pattern::normalize(path).starts_with(root)
}

#[cfg(test)]
mod tests;
