//! The "always" answers a user gave in the TUI, remembered per project: a private (0600) JSON
//! file in the state directory (`$XDG_STATE_HOME/harness9/permissions.json`), never in the
//! repository, keyed by the project's directory (its repository root, else the working
//! directory, resolved). Each answer is an allow rule (`mcp__git__*`, `bash(cargo test:*)`).
//! A file that cannot be read or is not valid is ignored with a warning: no rule from it
//! applies (nothing runs unasked).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use harness9_agent::permissions::{Decision, Rule, Source};

/// The most the file may hold (it is ours; this bounds a planted or runaway one).
const MAX_BYTES: u64 = 1 << 20;

/// The most rules remembered for one project.
const MAX_RULES: usize = 1000;

/// The file: `{"version": 1, "projects": {"/path": {"allow": ["mcp__git__*"]}}}`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    projects: BTreeMap<String, Project>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Project {
    #[serde(default)]
    allow: Vec<String>,
}

/// Where the answers are kept.
pub fn path() -> PathBuf {
    crate::stores::state_dir().join("permissions.json")
}

/// The key of the project `root` is in: its repository root (the nearest directory above with
/// a `.git`), else `root` itself, resolved.
pub fn project_key(root: &Path) -> String {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let repo = root.ancestors().find(|d| d.join(".git").exists());
    repo.unwrap_or(&root).display().to_string()
}

fn read(file: &Path) -> anyhow::Result<StoreFile> {
    match crate::config::read_regular(file, MAX_BYTES) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "the permissions file {} is not valid; fix or delete it",
                file.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile {
            version: 1,
            ..StoreFile::default()
        }),
        Err(e) => {
            Err(e).with_context(|| format!("cannot read the permissions file {}", file.display()))
        }
    }
}

/// The answers remembered for the project of `root`, as allow rules; with the warnings of
/// what could not be used (a broken file, a rule that does not parse).
pub fn load(file: &Path, root: &Path) -> (Vec<Rule>, Vec<String>) {
    let store = match read(file) {
        Ok(s) => s,
        Err(e) => {
            return (
                Vec::new(),
                vec![format!("{e:#}; no remembered answer applies")],
            )
        }
    };
    let key = project_key(root);
    let mut warnings = Vec::new();
    let rules = store
        .projects
        .get(&key)
        .map(|p| p.allow.as_slice())
        .unwrap_or_default()
        .iter()
        .take(MAX_RULES)
        .filter_map(|t| match Rule::parse(Decision::Allow, t, Source::Saved) {
            Ok(r) => Some(r),
            Err(e) => {
                warnings.push(format!(
                    "{}: the remembered rule \"{t}\" is ignored: {e}",
                    file.display()
                ));
                None
            }
        })
        .collect();
    (rules, warnings)
}

/// Remembers `rule` (an allow rule's text) for the project of `root`.
pub fn remember(file: &Path, root: &Path, rule: &str) -> anyhow::Result<()> {
    change(file, root, |allow| {
        if !allow.iter().any(|r| r == rule) && allow.len() < MAX_RULES {
            allow.push(rule.to_owned());
        }
    })
}

/// Forgets `rule` for the project of `root`.
pub fn forget(file: &Path, root: &Path, rule: &str) -> anyhow::Result<()> {
    change(file, root, |allow| allow.retain(|r| r != rule))
}

fn change(file: &Path, root: &Path, f: impl FnOnce(&mut Vec<String>)) -> anyhow::Result<()> {
    let mut store = read(file)?;
    store.version = 1;
    let key = project_key(root);
    let project = store.projects.entry(key.clone()).or_default();
    f(&mut project.allow);
    if project.allow.is_empty() {
        store.projects.remove(&key);
    }
    let body = serde_json::to_vec_pretty(&store)?;
    crate::edit::write_private(file, &body)
        .with_context(|| format!("cannot write the permissions file {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_per_project_privately_and_a_broken_file_applies_nothing() {
        let dir = std::env::temp_dir().join(format!("h9-pstore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(a.join("sub")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::create_dir(a.join(".git")).unwrap();
        let file = dir.join("state/permissions.json");
        remember(&file, &a, "mcp__git__*").unwrap();
        remember(&file, &a, "mcp__git__*").unwrap();
        remember(&file, &a.join("sub"), "bash(cargo test:*)").unwrap();
        let mode = harness9_platform::fs::mode_of(&std::fs::metadata(&file).unwrap()) & 0o777;
        assert_eq!(mode, 0o600);
        let texts = |root: &Path| {
            load(&file, root)
                .0
                .into_iter()
                .map(|r| r.text)
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&a), ["mcp__git__*", "bash(cargo test:*)"]);
        assert!(texts(&b).is_empty());
        forget(&file, &a, "mcp__git__*").unwrap();
        assert_eq!(texts(&a), ["bash(cargo test:*)"]);
        std::fs::write(&file, "{ not json").unwrap();
        let (rules, warnings) = load(&file, &a);
        assert!(rules.is_empty());
        assert!(
            warnings[0].contains("is not valid; fix or delete it"),
            "{warnings:?}"
        );
        // A symlink planted at the file is not written through.
        std::fs::remove_file(&file).unwrap();
        let outside = dir.join("outside");
        std::fs::write(&outside, "keep").unwrap();
        harness9_platform::fs::symlink(&outside, &file).unwrap();
        let _ = remember(&file, &a, "x");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
