//! Other tools' config formats as `.mcp.json` reads them: VS Code's `${input:id}` (from the
//! environment headless) and `${workspaceFolder}`, `envFile`, Codex's TOML (refused with a
//! clear error), and warnings for fields of other tools that harness9 does not read.

use std::path::PathBuf;

use serde_json::value::RawValue;

/// The environment variable that gives VS Code's `${input:id}` its value headless:
/// `HARNESS9_INPUT_` and the id in upper case, other characters as `_`.
pub fn input_var(id: &str) -> String {
    let tail: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("HARNESS9_INPUT_{tail}")
}

/// What `${...}` names resolve to when loading `file`: the environment, `workspaceFolder`
/// (the project root: the config's directory, or the parent of `.vscode/`), and `input:id`
/// from [`input_var`], else the value the user gave in the TUI ([`super::input_vars`]).
pub(super) fn file_lookup(root: PathBuf, file: PathBuf) -> impl Fn(&str) -> Option<String> {
    let store = super::input_vars::store_path();
    move |v: &str| match v {
        "workspaceFolder" => Some(root.display().to_string()),
        _ => match v.strip_prefix("input:") {
            Some(id) => std::env::var(input_var(id))
                .ok()
                .or_else(|| super::input_vars::get(&store, &file, id)),
            None => std::env::var(v).ok(),
        },
    }
}

/// VS Code's `inputs` declarations: id -> (description, password). Entries that are not
/// objects with a string `id` are skipped.
pub(super) fn declared_inputs(
    raw: Option<&RawValue>,
) -> std::collections::BTreeMap<String, (String, bool)> {
    let Some(Ok(serde_json::Value::Array(list))) =
        raw.map(|r| serde_json::from_str::<serde_json::Value>(r.get()))
    else {
        return Default::default();
    };
    list.iter()
        .filter_map(|i| {
            let id = i.get("id")?.as_str()?.to_owned();
            let description = i
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or_default()
                .to_owned();
            let password = i.get("password").and_then(|p| p.as_bool()) == Some(true);
            Some((id, (description, password)))
        })
        .collect()
}

/// The `KEY=VALUE` lines of an env file (`#` comments, blank lines and an `export ` prefix
/// skipped; a value in matching quotes loses them).
pub(super) fn env_file_entries(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (k, v) = l.split_once('=')?;
            let v = v.trim();
            let v = ['"', '\'']
                .iter()
                .find_map(|q| v.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
                .unwrap_or(v);
            Some((k.trim().to_owned(), v.to_owned()))
        })
        .collect()
}

/// Whether a config file's text is TOML rather than JSON: its first meaningful line is a
/// `[table]` header or a `key = value` pair.
pub(super) fn looks_like_toml(text: &str) -> bool {
    let Some(first) = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
    else {
        return false;
    };
    (first.starts_with('[') && first.ends_with(']') && !first.contains('"'))
        || first.split_once('=').is_some_and(|(k, _)| {
            !k.trim().is_empty()
                && k.trim()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        })
}

/// Fields of other tools' configs that harness9 does not read, and what it has instead.
const FOREIGN_FIELDS: [(&str, &str); 4] = [
    ("alwaysAllow", "harness9 asks before destructive tools; `a` at the question allows that tool in this project from then on (a saved rule: `/permissions` lists and forgets it), an allow rule under [permissions] in your settings file allows it everywhere, --yes allows all"),
    ("autoApprove", "harness9 asks before destructive tools; `a` at the question allows that tool in this project from then on (a saved rule: `/permissions` lists and forgets it), an allow rule under [permissions] in your settings file allows it everywhere, --yes allows all"),
    ("timeout", "use toolTimeoutSec (seconds) and startupTimeoutSec"),
    ("trust", "a project's servers are approved with `harness9 mcp approve`"),
];

/// What harness9 has instead of another tool's field `field` that it does not read.
pub fn foreign_reason(field: &str) -> Option<&'static str> {
    FOREIGN_FIELDS
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, instead)| *instead)
}

/// One warning per field of `FOREIGN_FIELDS` an entry carries: ignored, but not silently.
pub(super) fn foreign_fields(shown: &str, name: &str, value: &RawValue) -> Vec<String> {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_str::<serde_json::Value>(value.get())
    else {
        return Vec::new();
    };
    FOREIGN_FIELDS
        .iter()
        .filter(|(field, _)| m.contains_key(*field))
        .map(|(field, instead)| {
            format!("{shown}: server \"{name}\": \"{field}\" is not read by harness9; {instead}")
        })
        .collect()
}
