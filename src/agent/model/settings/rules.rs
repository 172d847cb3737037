//! `[permissions] allow`, `ask` and `deny` of the settings files: the user's file's rules all
//! apply; a project's `./harness9.toml` may add `ask` and `deny` rules, never `allow` ones (a
//! repository cannot let the agent run what the user did not allow: those are ignored with a
//! warning naming the file and line). A malformed rule is an error naming the file, line and
//! rule.

use std::path::Path;

use toml::Spanned;

use super::file::{line_col, parse_file, FileSettings};
use super::layers::{own_settings, read_layers, user_settings_file};
use super::sandbox::push_warning;
use super::{ModelFlags, SettingsError};
use crate::permissions::{Decision, Rule, Source};

/// The rules of the settings files (the user's, then the project's); what was ignored is
/// added to `warnings`.
pub fn permission_rules(
    flags: &ModelFlags,
    warnings: &mut Vec<String>,
) -> Result<Vec<Rule>, SettingsError> {
    let layers = read_layers(flags)?;
    let own = own_settings(user_settings_file(flags).as_deref());
    let mut out = Vec::new();
    if let Some((path, text)) = &layers.user {
        let file = parse_file(&path.display().to_string(), text)?;
        out.extend(rules_of(&file, path, text, None, warnings)?);
    }
    if let Some((path, text)) = &layers.project {
        let file = parse_file(&path.display().to_string(), text)?;
        out.extend(rules_of(&file, path, text, Some(&own), warnings)?);
    }
    Ok(out)
}

/// The rules of the user's settings file `text` at `path` (`permissions import` checks a file
/// it would write with it).
pub fn rules_of_text(path: &Path, text: &str) -> Result<Vec<Rule>, SettingsError> {
    let file = parse_file(&path.display().to_string(), text)?;
    rules_of(&file, path, text, None, &mut Vec::new())
}

/// The rules of one file: the user's (`project` is `None`), or a project's, whose `allow`
/// ones are warned about, naming where they work (`project`: the user's own file, as
/// [`own_settings`] says it).
pub(super) fn rules_of(
    file: &FileSettings,
    path: &Path,
    text: &str,
    project: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Rule>, SettingsError> {
    let p = &file.permissions;
    let mut out = Vec::new();
    for (kind, list) in [
        (Decision::Deny, &p.deny),
        (Decision::Ask, &p.ask),
        (Decision::Allow, &p.allow),
    ] {
        for item in list.iter().flatten() {
            let (line, column) = line_col(text, item.span().start);
            if let (Decision::Allow, Some(own)) = (kind, project) {
                push_warning(
                    warnings,
                    Some(format!(
                    "{}:{line}: [permissions] allow rule \"{}\" is ignored: a project's settings file may add ask and deny rules, never allow ones; add it to {own}, pass --allowed-tools, or answer \"always\" when harness9 asks",
                    path.display(),
                    item.get_ref().trim()
                )),
                );
                continue;
            }
            out.push(
                rule(kind, item, path, text).map_err(|message| SettingsError::Toml {
                    path: path.display().to_string(),
                    line,
                    column,
                    message,
                })?,
            );
        }
    }
    Ok(out)
}

fn rule(kind: Decision, item: &Spanned<String>, path: &Path, text: &str) -> Result<Rule, String> {
    let (line, _) = line_col(text, item.span().start);
    Rule::parse(
        kind,
        item.get_ref(),
        Source::File {
            path: path.to_path_buf(),
            line,
        },
    )
    .map_err(|e| {
        format!(
            "malformed [permissions] {} rule \"{}\": {e}",
            kind.name(),
            item.get_ref().trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_carry_their_line_and_a_project_cannot_allow() {
        let text = "[permissions]\nshell = \"off\"\nallow = [\n  \"bash(git status:*)\",\n  \"mcp__git__*\",\n]\ndeny = [\"read_file(~/.ssh/**)\"]\n";
        let f = parse_file("u.toml", text).unwrap();
        let mut warnings = Vec::new();
        let user = rules_of(&f, Path::new("/u.toml"), text, None, &mut warnings).unwrap();
        assert!(warnings.is_empty());
        let shown: Vec<String> = user
            .iter()
            .map(|r| format!("{} {} {}", r.kind.name(), r.text, r.source))
            .collect();
        assert_eq!(
            shown,
            [
                "deny read_file(~/.ssh/**) /u.toml:7",
                "allow bash(git status:*) /u.toml:4",
                "allow mcp__git__* /u.toml:5"
            ]
        );
        let project = rules_of(
            &f,
            Path::new("/p/harness9.toml"),
            text,
            Some("your own settings file (/u/config.toml)"),
            &mut warnings,
        )
        .unwrap();
        assert_eq!(project.len(), 1);
        assert_eq!(project[0].kind, Decision::Deny);
        assert!(warnings.iter().any(|w| w.starts_with(
            "/p/harness9.toml:4: [permissions] allow rule \"bash(git status:*)\" is ignored"
        ) && w
            .contains("add it to your own settings file (/u/config.toml), pass --allowed-tools")));
    }

    #[test]
    fn a_malformed_rule_names_the_file_line_and_rule() {
        let text = "[permissions]\nask = [\"mcp__x__*\",\n  \"bash(git push\"]\n";
        let f = parse_file("h.toml", text).unwrap();
        let e = rules_of(&f, Path::new("h.toml"), text, None, &mut Vec::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            SettingsError::Toml {
                path: "h.toml".into(),
                line: 3,
                column: 3,
                message: "malformed [permissions] ask rule \"bash(git push\": an argument pattern must end with \")\", as in bash(git status:*)".into(),
            }
            .to_string()
        );
        assert!(e.to_string().starts_with("h.toml:3:3: "), "{e}");
    }

    /// Claude Code's spellings load as what they mean; one of a tool harness9 lacks is an
    /// error in `allow` and `ask`, kept (it denies nothing) in `deny`.
    #[test]
    fn claude_code_spellings_load_and_a_missing_tool_cannot_be_allowed() {
        let text = "[permissions]\ndeny = [\"Bash\", \"WebFetch\", \"mcp__web\"]\n";
        let f = parse_file("u.toml", text).unwrap();
        let rules = rules_of(&f, Path::new("/u.toml"), text, None, &mut Vec::new()).unwrap();
        let tools: Vec<&str> = rules.iter().map(|r| r.pattern.tool.as_str()).collect();
        assert_eq!(tools, ["bash", "WebFetch", "mcp__web__*"]);
        let warnings = crate::permissions::unmatched(&rules, &["bash"], &[]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("/u.toml:2: deny rule \"WebFetch\" denies nothing"));
        assert!(warnings[1].starts_with("/u.toml:2: deny rule \"mcp__web\" denies nothing"));
        let text = "[permissions]\nask = [\n  \"WebSearch\"]\n";
        let f = parse_file("u.toml", text).unwrap();
        let e = rules_of(&f, Path::new("u.toml"), text, None, &mut Vec::new()).unwrap_err();
        assert!(
            e.to_string().starts_with("u.toml:3:3: malformed [permissions] ask rule \"WebSearch\": harness9 has no WebSearch tool"),
            "{e}"
        );
    }
}
