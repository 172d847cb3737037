//! `harness9 permissions import`: another agent's permission settings as harness9's (Claude
//! Code's `permissions.allow|ask|deny` and `defaultMode`; Codex's `approval_policy`,
//! `sandbox_mode` and `[sandbox_workspace_write] network_access`), each thing that has no
//! equivalent named with why, and the user's settings file with the result spliced into its
//! `[permissions]` (everything else in it, comments included, kept as written). Pure: text in,
//! text out; the command reads and writes the files.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use harness9_agent::builtins::shell_sandbox::ShellSandbox;
use harness9_agent::permissions::pattern::{claude_code_name, Pattern};
use harness9_agent::permissions::{Decision, Rule, Source};

/// Whose settings are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum From {
    /// Claude Code's `settings.json` (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    ClaudeCode,
    /// Codex's `config.toml` (`$CODEX_HOME`, else `~/.codex`).
    Codex,
}

/// The largest file read (settings, not documents).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

/// The most rules taken from one file (a hand-written list is far shorter).
pub const MAX_RULES: usize = 2000;

/// Where `from` keeps the user's settings, from the environment (`env`) and the home dir.
pub fn default_path(from: From, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let home = || env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let dir = |var: &str, dot: &str| {
        env(var)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| home().map(|h| h.join(dot)))
    };
    match from {
        From::ClaudeCode => dir("CLAUDE_CONFIG_DIR", ".claude").map(|d| d.join("settings.json")),
        From::Codex => dir("CODEX_HOME", ".codex").map(|d| d.join("config.toml")),
    }
}

/// What the other agent's settings say, in harness9's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// Rules with an equivalent, as written there (harness9 reads Claude Code's spellings),
    /// in file order, without repeats.
    pub rules: Vec<(Decision, String)>,
    /// The shell's sandbox, with what it came from.
    pub shell: Option<(ShellSandbox, String)>,
    /// The permission mode as harness9's `--permission-mode` value, with what it came from
    /// (harness9 has no setting for it: the flag is said, not written).
    pub mode: Option<(&'static str, String)>,
    /// What has no equivalent: (what, why).
    pub unmapped: Vec<(String, String)>,
}

/// Claude Code's `permissions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudePermissions {
    allow: Option<Vec<serde_json::Value>>,
    ask: Option<Vec<serde_json::Value>>,
    deny: Option<Vec<serde_json::Value>>,
    default_mode: Option<serde_json::Value>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

/// Reads Claude Code's `settings.json` text.
pub fn from_claude_code(text: &str) -> Result<Imported, String> {
    let top: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Some(obj) = top.as_object() else {
        return Err("not a JSON object (Claude Code's settings are one)".to_owned());
    };
    let mut out = Imported::default();
    let Some(perms) = obj.get("permissions") else {
        return Ok(out);
    };
    let perms: ClaudePermissions = serde_json::from_value(perms.clone())
        .map_err(|e| format!("\"permissions\" is not what Claude Code writes: {e}"))?;
    for (kind, list) in [
        (Decision::Deny, &perms.deny),
        (Decision::Ask, &perms.ask),
        (Decision::Allow, &perms.allow),
    ] {
        for item in list.iter().flatten() {
            let Some(text) = item.as_str() else {
                out.unmapped.push((
                    format!("{} {item}", kind.name()),
                    "not a rule (a string)".to_owned(),
                ));
                continue;
            };
            if out.rules.len() >= MAX_RULES {
                return Err(format!(
                    "more than {MAX_RULES} rules: not a settings file a person wrote"
                ));
            }
            match map_rule(kind, text) {
                Ok(rule) => {
                    if !out.rules.contains(&(kind, rule.clone())) {
                        out.rules.push((kind, rule));
                    }
                }
                Err(why) => out
                    .unmapped
                    .push((format!("{} {}", kind.name(), text.trim()), why)),
            }
        }
    }
    if let Some(mode) = &perms.default_mode {
        let shown = format!("defaultMode {mode}");
        match mode.as_str().unwrap_or_default() {
            "default" => {}
            "acceptEdits" => out.mode = Some(("accept-edits", shown)),
            "bypassPermissions" => out.mode = Some(("bypass", shown)),
            "plan" => out.unmapped.push((
                shown,
                "harness9 has no plan mode; the nearest is --permission-mode read-only (only read-only tools run)".to_owned(),
            )),
            "dontAsk" => out.unmapped.push((
                shown,
                "harness9 has no mode that refuses what would ask; `harness9 run -p` refuses it, the interactive session asks".to_owned(),
            )),
            _ => out
                .unmapped
                .push((shown, "not a mode harness9 knows".to_owned())),
        }
    }
    for key in perms.other.keys() {
        let why = match key.as_str() {
            "additionalDirectories" => {
                "harness9 has no list of extra directories: path rules reach them (read_file(/srv/data/**))"
            }
            "disableBypassPermissionsMode" => "harness9 has no managed policy to turn bypass off",
            _ => "no equivalent in harness9",
        };
        out.unmapped
            .push((format!("permissions.{key}"), why.to_owned()));
    }
    Ok(out)
}

/// One Claude Code rule as harness9 writes it, or why it has no equivalent.
pub fn map_rule(kind: Decision, text: &str) -> Result<String, String> {
    let t = text.trim();
    let name = t.split('(').next().unwrap_or_default().trim();
    if claude_code_name(name) == Some(None) {
        return Err(format!("harness9 has no {name} tool"));
    }
    let mut t = t.to_owned();
    if let Some((head, arg)) = t.split_once('(') {
        // Claude Code's paths: `//abs` is absolute, `/p` is relative to the settings file
        // (nothing harness9 can anchor), `~/p` and `./p`/`p` as harness9 reads them.
        let is_path = matches!(
            Pattern::parse(&format!("{head}(x)")).map(|p| p.tool),
            Ok(ref tool) if tool != "bash"
        );
        if is_path {
            if let Some(abs) = arg.strip_prefix("//") {
                t = format!("{head}(/{abs}");
            } else if arg.starts_with('/') {
                return Err(
                    "a path starting with one / is relative to Claude Code's settings file; write it as //absolute or ./relative there, or as an absolute path here".to_owned(),
                );
            }
        }
    }
    let rule = Rule::parse(kind, &t, Source::Flag("permissions import"))?;
    let tool = &rule.pattern.tool;
    let known = tool.starts_with("mcp__")
        || tool.contains('*')
        || harness9_agent::builtins::definitions()
            .iter()
            .any(|d| d.name == *tool);
    if !known {
        return Err(format!("harness9 has no {name} tool"));
    }
    Ok(t)
}

/// Reads Codex's `config.toml` text (its top level: a profile's values are not read).
pub fn from_codex(text: &str) -> Result<Imported, String> {
    let top: toml::Table = toml::from_str(text).map_err(|e| e.message().to_owned())?;
    let mut out = Imported::default();
    let network = top
        .get("sandbox_workspace_write")
        .and_then(|t| t.get("network_access"))
        .and_then(toml::Value::as_bool)
        .unwrap_or(false);
    if let Some(mode) = top.get("sandbox_mode") {
        let shown = format!("sandbox_mode = {mode}");
        match mode.as_str().unwrap_or_default() {
            "read-only" => out.shell = Some((ShellSandbox::ReadOnly, shown)),
            "workspace-write" if network => {
                out.shell = Some((
                    ShellSandbox::Network,
                    format!("{shown} with [sandbox_workspace_write] network_access = true"),
                ))
            }
            "workspace-write" => out.shell = Some((ShellSandbox::WorkspaceWrite, shown)),
            "danger-full-access" => out.shell = Some((ShellSandbox::Off, shown)),
            _ => out
                .unmapped
                .push((shown, "not a sandbox mode harness9 knows".to_owned())),
        }
    } else if network {
        out.unmapped.push((
            "[sandbox_workspace_write] network_access = true".to_owned(),
            "without sandbox_mode = \"workspace-write\" Codex does not use it".to_owned(),
        ));
    }
    if let Some(policy) = top.get("approval_policy") {
        let shown = format!("approval_policy = {policy}");
        match policy.as_str() {
            // harness9's default: read-only tools run, the others ask.
            Some("untrusted") => {}
            Some("on-request" | "on-failure") => out.unmapped.push((
                shown,
                "harness9 asks before a command even inside its sandbox (the default mode, kept); --permission-mode bypass runs every call unasked, the shell still sandboxed".to_owned(),
            )),
            Some("never") => out.mode = Some(("bypass", shown)),
            _ => out.unmapped.push((
                shown,
                "no equivalent in harness9 (granular approvals are rules here: [permissions] allow, ask, deny)".to_owned(),
            )),
        }
    }
    Ok(out)
}

/// The user's settings file's `[permissions]`, with where each part is.
#[derive(Debug, Default, Deserialize)]
struct Doc {
    permissions: Option<PermissionsSpans>,
}

#[derive(Debug, Default, Deserialize)]
struct PermissionsSpans {
    allow: Option<Spanned<Vec<Spanned<String>>>>,
    ask: Option<Spanned<Vec<Spanned<String>>>>,
    deny: Option<Spanned<Vec<Spanned<String>>>>,
    shell: Option<Spanned<String>>,
}

impl PermissionsSpans {
    fn list(&self, kind: Decision) -> Option<&Spanned<Vec<Spanned<String>>>> {
        match kind {
            Decision::Allow => self.allow.as_ref(),
            Decision::Ask => self.ask.as_ref(),
            Decision::Deny => self.deny.as_ref(),
        }
    }
}

/// What [`splice`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spliced {
    /// The file's new text.
    pub text: String,
    /// The rules added.
    pub added: Vec<(Decision, String)>,
    /// The rules already there (the same pattern, the same kind).
    pub present: Vec<(Decision, String)>,
    /// The shell's sandbox written.
    pub shell: Option<ShellSandbox>,
    /// The shell's sandbox the file already says, when it differs from the one imported
    /// (kept: the user wrote it).
    pub shell_kept: Option<String>,
}

/// The settings file `text` (`shown` names it in errors) with `imported`'s rules and shell
/// added to its `[permissions]`: rules already there are left out; a `shell` already set is
/// kept. Everything else stays as written; the result is checked to say the same as before
/// but for what was added, else nothing is changed and the error says to add them by hand.
pub fn splice(text: &str, shown: &str, imported: &Imported) -> Result<Spliced, String> {
    let doc: Doc = toml::from_str(text).map_err(|e| toml_error(text, shown, &e))?;
    let perms = doc.permissions.unwrap_or_default();
    let mut out = Spliced::default();
    let new = new_rules(&perms, imported, &mut out);
    let shell = match (&imported.shell, &perms.shell) {
        (Some((want, _)), Some(have)) if have.get_ref() != want.name() => {
            out.shell_kept = Some(have.get_ref().clone());
            None
        }
        (Some(_), Some(_)) | (None, _) => None,
        (Some((want, _)), None) => Some(*want),
    };
    out.shell = shell;
    // Edits as (offset, text), applied from the end so each offset stays true.
    let mut edits: Vec<(usize, String)> = Vec::new();
    let mut new_lines = String::new();
    if let Some(s) = shell {
        new_lines.push_str(&format!("shell = {}\n", quote(s.name())));
    }
    for (kind, rules) in &new {
        match perms.list(*kind) {
            Some(list) => edits.push(append_to_array(text, list, rules)),
            None => new_lines.push_str(&format!(
                "{} = [{}]\n",
                kind.name(),
                rules
                    .iter()
                    .map(|r| quote(r))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    if !new_lines.is_empty() {
        edits.push(lines_edit(text, shown, new_lines)?);
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut result = text.to_owned();
    for (at, insert) in edits {
        result.insert_str(at, &insert);
    }
    check_same_but_added(text, &result, shown, &out)?;
    out.text = result;
    Ok(out)
}

/// The rules of `imported` not already in `perms`, by kind (deny, ask, allow); each rule
/// noted in `out` as added or present.
fn new_rules(
    perms: &PermissionsSpans,
    imported: &Imported,
    out: &mut Spliced,
) -> Vec<(Decision, Vec<String>)> {
    let mut new: Vec<(Decision, Vec<String>)> = Vec::new();
    for kind in [Decision::Deny, Decision::Ask, Decision::Allow] {
        let existing: Vec<Pattern> = perms
            .list(kind)
            .map(|l| {
                l.get_ref()
                    .iter()
                    .filter_map(|r| Pattern::parse(r.get_ref()).ok())
                    .collect()
            })
            .unwrap_or_default();
        let mut these = Vec::new();
        for (k, rule) in imported.rules.iter().filter(|(k, _)| *k == kind) {
            let same = Pattern::parse(rule).is_ok_and(|p| existing.contains(&p));
            if same {
                out.present.push((*k, rule.clone()));
            } else {
                these.push(rule.clone());
                out.added.push((*k, rule.clone()));
            }
        }
        if !these.is_empty() {
            new.push((kind, these));
        }
    }
    new
}

/// The edit that adds `new_lines` (`key = value` lines) to `text`'s `[permissions]`: at the
/// end of its header's table, else in a new table at the end of the file; an error when the
/// file keeps its permissions in another form (`shown` names it).
fn lines_edit(text: &str, shown: &str, new_lines: String) -> Result<(usize, String), String> {
    match header_end(text) {
        Some(at) => Ok((at, new_lines)),
        None if text_has_permissions(text) => Err(format!(
            "{shown} keeps its permissions in a form this import does not edit (not under a [permissions] header); add these yourself:\n{}",
            new_lines.trim_end()
        )),
        None => {
            let mut tail = String::new();
            if !text.is_empty() && !text.ends_with('\n') {
                tail.push('\n');
            }
            if !text.trim().is_empty() {
                tail.push('\n');
            }
            tail.push_str("[permissions]\n");
            tail.push_str(&new_lines);
            Ok((text.len(), tail))
        }
    }
}

/// A TOML basic string holding `s`.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// The edit that appends `rules` to the array `list` of `text`: after its last item (one a
/// line when the array spans lines), or inside `[]` when it is empty.
fn append_to_array(
    text: &str,
    list: &Spanned<Vec<Spanned<String>>>,
    rules: &[String],
) -> (usize, String) {
    let quoted: Vec<String> = rules.iter().map(|r| quote(r)).collect();
    let Some(last) = list.get_ref().last() else {
        // `[` is where the array starts.
        return (list.span().start + 1, quoted.join(", "));
    };
    let at = last.span().end;
    let array = &text[list.span()];
    if array.contains('\n') {
        let line_start = text[..last.span().start].rfind('\n').map_or(0, |i| i + 1);
        let indent: String = text[line_start..last.span().start]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect();
        let mut s = String::new();
        for q in &quoted {
            s.push_str(&format!(",\n{indent}{q}"));
        }
        (at, s)
    } else {
        (at, format!(", {}", quoted.join(", ")))
    }
}

/// The offset just after the line of the `[permissions]` header (there is at most one in a
/// valid file), if the file has one.
fn header_end(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.split('#').next().unwrap_or_default().trim();
        if let Some(inner) = bare.strip_prefix('[').and_then(|b| b.strip_suffix(']')) {
            if !inner.starts_with('[') && inner.trim() == "permissions" {
                let end = offset + line.len();
                // A last line without its newline gets one first.
                return Some(end);
            }
        }
        offset += line.len();
    }
    None
}

/// Whether `text` has a `permissions` key (inline or dotted) besides a header.
fn text_has_permissions(text: &str) -> bool {
    toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("permissions"))
}

/// The new text says what the old one said, plus what `out` added: compared as TOML values
/// (every other table and key equal; `[permissions]` lists the old items then the added).
fn check_same_but_added(old: &str, new: &str, shown: &str, out: &Spliced) -> Result<(), String> {
    let by_hand = || {
        let mut lines: Vec<String> = out
            .added
            .iter()
            .map(|(k, r)| format!("  {} {}", k.name(), quote(r)))
            .collect();
        if let Some(s) = out.shell {
            lines.push(format!("  shell = {}", quote(s.name())));
        }
        format!(
            "cannot add to {shown} without changing what else it says; add these under [permissions] yourself:\n{}",
            lines.join("\n")
        )
    };
    let parse = |t: &str| toml::from_str::<toml::Table>(t).ok();
    let (Some(mut a), Some(mut b)) = (parse(old), parse(new)) else {
        return Err(by_hand());
    };
    let mut pa = match a.remove("permissions") {
        Some(toml::Value::Table(t)) => t,
        None => toml::Table::new(),
        Some(_) => return Err(by_hand()),
    };
    let Some(toml::Value::Table(mut pb)) = b.remove("permissions") else {
        return Err(by_hand());
    };
    if a != b {
        return Err(by_hand());
    }
    for kind in [Decision::Deny, Decision::Ask, Decision::Allow] {
        let mut want: Vec<toml::Value> = match pa.remove(kind.name()) {
            Some(toml::Value::Array(items)) => items,
            None => Vec::new(),
            Some(_) => return Err(by_hand()),
        };
        want.extend(
            out.added
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, r)| toml::Value::String(r.clone())),
        );
        let got = match pb.remove(kind.name()) {
            Some(toml::Value::Array(items)) => items,
            None => Vec::new(),
            Some(_) => return Err(by_hand()),
        };
        if got != want {
            return Err(by_hand());
        }
    }
    if let Some(s) = out.shell {
        pa.insert("shell".to_owned(), toml::Value::String(s.name().to_owned()));
    }
    if pa != pb {
        return Err(by_hand());
    }
    Ok(())
}

/// A TOML error as `FILE:LINE: message`.
fn toml_error(text: &str, shown: &str, e: &toml::de::Error) -> String {
    let line = e.span().map_or(1, |s| {
        text[..s.start.min(text.len())].matches('\n').count() + 1
    });
    format!("{shown}:{line}: {}", e.message().trim())
}

/// Whether `path` is the project's settings file (`harness9.toml` of `cwd`), which an import
/// never writes (a project's allow rules are ignored, and it is the repository's).
pub fn is_project_file(path: &Path, cwd: &Path) -> bool {
    // Relative to the working directory, its directory resolved (the file may not exist).
    let real = |p: &Path| -> PathBuf {
        let p = cwd.join(p);
        let resolved = p
            .parent()
            .and_then(|d| std::fs::canonicalize(d).ok())
            .zip(p.file_name())
            .map(|(d, n)| d.join(n));
        resolved.unwrap_or(p)
    };
    real(path) == real(Path::new("harness9.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(i: &Imported) -> Vec<String> {
        i.rules
            .iter()
            .map(|(k, r)| format!("{} {r}", k.name()))
            .collect()
    }

    #[test]
    fn the_project_file_is_known_however_it_is_named() {
        let cwd = std::env::temp_dir();
        for p in ["harness9.toml", "./harness9.toml"] {
            assert!(is_project_file(Path::new(p), &cwd), "{p}");
        }
        assert!(is_project_file(&cwd.join("harness9.toml"), &cwd));
        assert!(!is_project_file(Path::new("other.toml"), &cwd));
        assert!(!is_project_file(&cwd.join("sub/harness9.toml"), &cwd));
    }

    #[test]
    fn claude_code_rules_map_or_say_why_not() {
        let text = r#"{
          "model": "opus",
          "permissions": {
            "allow": ["Bash(git status:*)", "Read(./src/**)", "Edit(src/**)", "mcp__github",
                      "mcp__git__git_log", "WebFetch(domain:example.com)", "Bash(git status:*)",
                      "Read(//etc/hosts)", "Read(/docs/**)", "Skill(x)", 7],
            "ask": ["Bash(git push:*)"],
            "deny": ["Read(./.env)", "WebSearch"],
            "defaultMode": "acceptEdits",
            "additionalDirectories": ["../other"]
          }
        }"#;
        let i = from_claude_code(text).unwrap();
        assert_eq!(
            rules(&i),
            [
                "deny Read(./.env)",
                "ask Bash(git push:*)",
                "allow Bash(git status:*)",
                "allow Read(./src/**)",
                "allow Edit(src/**)",
                "allow mcp__github",
                "allow mcp__git__git_log",
                "allow Read(/etc/hosts)",
            ]
        );
        assert_eq!(
            i.mode,
            Some(("accept-edits", "defaultMode \"acceptEdits\"".to_owned()))
        );
        let why: Vec<String> = i
            .unmapped
            .iter()
            .map(|(w, y)| format!("{w}: {y}"))
            .collect();
        assert!(
            why.iter()
                .any(|w| w == "deny WebSearch: harness9 has no WebSearch tool"),
            "{why:?}"
        );
        assert!(
            why.iter().any(|w| w
                .starts_with("allow WebFetch(domain:example.com): harness9 has no WebFetch tool")),
            "{why:?}"
        );
        assert!(
            why.iter()
                .any(|w| w.starts_with("allow Read(/docs/**): a path starting with one /")),
            "{why:?}"
        );
        assert!(
            why.iter().any(|w| w.starts_with("allow Skill(x): ")),
            "{why:?}"
        );
        assert!(
            why.iter().any(|w| w.starts_with("allow 7: not a rule")),
            "{why:?}"
        );
        assert!(
            why.iter()
                .any(|w| w.starts_with("permissions.additionalDirectories: ")),
            "{why:?}"
        );
        let plan = from_claude_code(r#"{"permissions": {"defaultMode": "plan"}}"#).unwrap();
        assert_eq!(plan.mode, None);
        assert!(
            plan.unmapped[0].1.contains("no plan mode"),
            "{:?}",
            plan.unmapped
        );
        assert!(from_claude_code("[1]").is_err());
        assert!(from_claude_code("{\"permissions\": {\"allow\": \"Bash\"}}").is_err());
        assert_eq!(from_claude_code("{}").unwrap(), Imported::default());
    }

    #[test]
    fn codex_policy_and_sandbox_map_to_the_mode_and_the_shell() {
        let i = from_codex(
            "approval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n[sandbox_workspace_write]\nnetwork_access = true\n",
        )
        .unwrap();
        assert_eq!(i.shell.map(|s| s.0), Some(ShellSandbox::Network));
        assert_eq!(i.mode.map(|m| m.0), Some("bypass"));
        for (mode, want) in [
            ("read-only", ShellSandbox::ReadOnly),
            ("workspace-write", ShellSandbox::WorkspaceWrite),
            ("danger-full-access", ShellSandbox::Off),
        ] {
            let i = from_codex(&format!("sandbox_mode = \"{mode}\"\n")).unwrap();
            assert_eq!(i.shell.map(|s| s.0), Some(want), "{mode}");
        }
        let i = from_codex("approval_policy = \"on-request\"\nsandbox_mode = \"bogus\"\n").unwrap();
        assert_eq!((i.mode, i.shell), (None, None));
        assert_eq!(i.unmapped.len(), 2, "{:?}", i.unmapped);
        assert!(from_codex("approval_policy = ").is_err());
    }

    fn imported(rules: &[(Decision, &str)], shell: Option<ShellSandbox>) -> Imported {
        Imported {
            rules: rules.iter().map(|(k, r)| (*k, (*r).to_owned())).collect(),
            shell: shell.map(|s| (s, String::new())),
            ..Imported::default()
        }
    }

    #[test]
    fn splice_keeps_the_file_and_adds_to_its_lists() {
        let text = "# my settings\nmodel = \"x\" # keep\n\n[permissions]\n# rules\nallow = [\n  \"bash(git status:*)\", # mine\n]\ndeny = []\n\n[tool_search]\nmode = \"auto\"\n";
        let i = imported(
            &[
                (Decision::Allow, "Bash(git status:*)"),
                (Decision::Allow, "mcp__git__*"),
                (Decision::Allow, "Read(./src/**)"),
                (Decision::Deny, "Read(./.env)"),
                (Decision::Ask, "Bash(git push:*)"),
            ],
            Some(ShellSandbox::Network),
        );
        let s = splice(text, "u.toml", &i).unwrap();
        assert_eq!(
            s.text,
            "# my settings\nmodel = \"x\" # keep\n\n[permissions]\nshell = \"network\"\nask = [\"Bash(git push:*)\"]\n# rules\nallow = [\n  \"bash(git status:*)\",\n  \"mcp__git__*\",\n  \"Read(./src/**)\", # mine\n]\ndeny = [\"Read(./.env)\"]\n\n[tool_search]\nmode = \"auto\"\n"
        );
        assert_eq!(
            s.present,
            [(Decision::Allow, "Bash(git status:*)".to_owned())]
        );
        assert_eq!(s.added.len(), 4);
        // Again: nothing new.
        let again = splice(&s.text, "u.toml", &i).unwrap();
        assert_eq!(again.text, s.text);
        assert!(again.added.is_empty());
        assert_eq!(again.shell, None);
    }

    #[test]
    fn splice_makes_the_section_keeps_a_shell_and_refuses_what_it_cannot_edit() {
        let i = imported(&[(Decision::Allow, "mcp__git__*")], Some(ShellSandbox::Off));
        let s = splice("", "u.toml", &i).unwrap();
        assert_eq!(
            s.text,
            "[permissions]\nshell = \"off\"\nallow = [\"mcp__git__*\"]\n"
        );
        let s = splice("model = \"x\"", "u.toml", &i).unwrap();
        assert_eq!(
            s.text,
            "model = \"x\"\n\n[permissions]\nshell = \"off\"\nallow = [\"mcp__git__*\"]\n"
        );
        let s = splice("[permissions]\nshell = \"read-only\"", "u.toml", &i).unwrap();
        assert_eq!(s.shell_kept.as_deref(), Some("read-only"));
        assert_eq!(
            s.text,
            "[permissions]\nallow = [\"mcp__git__*\"]\nshell = \"read-only\""
        );
        let err = splice("permissions = { shell = \"off\" }\n", "u.toml", &i).unwrap_err();
        assert!(err.contains("add these yourself"), "{err}");
        let err = splice("[permissions\n", "u.toml", &i).unwrap_err();
        assert!(err.starts_with("u.toml:1: "), "{err}");
        // A header inside a multi-line string is not the table's: caught by the check.
        let tricky = "note = '''\n[permissions]\n'''\n";
        let err = splice(tricky, "u.toml", &i).unwrap_err();
        assert!(err.contains("yourself"), "{err}");
        // Hostile rule text is quoted, never TOML.
        let evil = imported(
            &[(Decision::Allow, "bash(x\"]\n[telemetry]\nk = \"v)")],
            None,
        );
        let s = splice("", "u.toml", &evil).unwrap();
        let back: toml::Table = toml::from_str(&s.text).unwrap();
        assert_eq!(back.len(), 1, "{}", s.text);
    }
}
