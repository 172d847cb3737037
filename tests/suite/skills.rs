//! The Skills extension (SEP-2640) through `harness9 mcp skills list|get`, against the official
//! TypeScript SDK's skills server (tests/npm/skills_server.mjs) and a hostile one
//! (tests/python/skills_hostile.py, which logs every `resources/read`): nothing read before a
//! load, every read verified, every lie refused with its reason.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::common::{harness9_in, output_within, project_with, repo, temp_path};

const LIMIT: Duration = Duration::from_secs(90);

/// `harness9 mcp skills ARGS` in `dir`: (exit code, stdout, stderr).
fn skills(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = harness9_in(dir);
    cmd.args(["mcp", "skills"]).args(args);
    let out = output_within(cmd, None, LIMIT);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A project whose server `h` is the hostile fixture in `mode`, and the file its reads go to.
fn hostile(mode: &str, extra: Value) -> (PathBuf, PathBuf) {
    let log = temp_path(&format!("skills-reads-{mode}"));
    let mut entry = json!({
        "command": repo().join(".deps/venv/bin/python").display().to_string(),
        "args": [
            repo().join("tests/python/skills_hostile.py").display().to_string(),
            mode,
            log.display().to_string(),
        ],
    });
    if let (Some(e), Some(x)) = (entry.as_object_mut(), extra.as_object()) {
        e.extend(x.clone());
    }
    (
        project_with(&format!("skills-{mode}"), json!({ "h": entry })),
        log,
    )
}

/// The URIs the hostile server was asked to read.
fn reads(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A server of skills only (no tools capability) connects with no tools: `tools/list` is asked
/// (servers that serve tools without declaring them exist) and its refusal means none.
#[test]
fn a_server_of_skills_only_connects_with_no_tools() {
    let skills_dir = temp_path("sdk-skills-only");
    let skill = skills_dir.join("notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Take notes\n---\n\n# Notes\n",
    )
    .unwrap();
    let server = repo().join("tests/npm/skills_server.mjs");
    let dir = project_with(
        "sdk-skills-only",
        json!({"sdk": {"command": "node", "args": [server.display().to_string(), skills_dir.display().to_string(), "--skills-only"]}}),
    );
    let mut cmd = harness9_in(&dir);
    cmd.args(["mcp", "get", "sdk", "--json"]);
    let out = output_within(cmd, None, LIMIT);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&stdout).unwrap(),
        json!([]),
        "{stderr}"
    );
    let (code, out, err) = skills(&dir, &["list", "sdk"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("notes"), "{out}");
}

const SKILL_MD: &str = "skill://pdf-processing/SKILL.md";
const FORMS: &str = "skill://pdf-processing/references/FORMS.md";

#[test]
fn the_sdk_skills_server_is_listed_and_loaded_verified() {
    let skills_dir = temp_path("sdk-skills");
    let skill = skills_dir.join("pdf-processing");
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"2.1\"\n---\n\n# PDF\n\nSee references/FORMS.md.\n",
    )
    .unwrap();
    std::fs::write(skill.join("references/FORMS.md"), "the forms\n").unwrap();
    let server = repo().join("tests/npm/skills_server.mjs");
    let dir = project_with(
        "sdk-skills",
        json!({"sdk": {"command": "node", "args": [server.display().to_string(), skills_dir.display().to_string()]}}),
    );
    let (code, out, err) = skills(&dir, &["list", "sdk", "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["skills"][0]["name"], "pdf-processing");
    assert_eq!(v["skills"][0]["server"], "sdk");
    assert_eq!(v["skills"][0]["frontmatter"]["metadata"]["version"], "2.1");
    assert_eq!(v["skills"][0]["resources"].as_array().unwrap().len(), 2);

    let (code, out, err) = skills(
        &dir,
        &[
            "get",
            "sdk",
            "pdf-processing",
            "--file",
            "references/FORMS.md",
        ],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("from server \"sdk\""), "{out}");
    assert!(out.contains("See references/FORMS.md."), "{out}");
    assert!(out.contains("the forms"), "{out}");

    for path in ["references/OTHER.md", "../other/SKILL.md"] {
        let (code, out, err) = skills(&dir, &["get", "sdk", "pdf-processing", "--file", path]);
        assert_eq!(code, 1, "{path}: {out}\n{err}");
        assert!(
            err.contains("not among the skill's 2 listed files")
                || err.contains("not a path inside the skill"),
            "{path}: {err}"
        );
    }
    let (code, _, err) = skills(&dir, &["get", "sdk", "no-such-skill"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("lists no such skill; it lists: pdf-processing"),
        "{err}"
    );
}

#[test]
fn listing_reads_no_file_and_a_load_reads_only_skill_md() {
    let (dir, log) = hostile("good", json!({}));
    let (code, out, err) = skills(&dir, &["list", "h"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("pdf-processing  skill://pdf-processing/SKILL.md  (2 files"),
        "{out}"
    );
    assert!(reads(&log).is_empty(), "{:?}", reads(&log));
    let (code, out, err) = skills(&dir, &["get", "h", "pdf-processing"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Skill body."), "{out}");
    assert_eq!(reads(&log), [SKILL_MD]);
}

#[test]
fn a_skill_md_that_does_not_match_its_entry_is_refused() {
    for (mode, why, leaked) in [
        ("digest", "digest mismatch", "Evil body"),
        ("size", "size mismatch", "extra bytes"),
        (
            "frontmatter",
            "frontmatter mismatch: the field \"description\"",
            "Exfiltrate",
        ),
    ] {
        let (dir, log) = hostile(mode, json!({}));
        let (code, out, err) = skills(
            &dir,
            &[
                "get",
                "h",
                "pdf-processing",
                "--file",
                "references/FORMS.md",
            ],
        );
        assert_eq!(code, 1, "{mode}: {out}\n{err}");
        assert!(err.contains(why), "{mode}: {err}");
        assert!(err.contains("server \"h\""), "{mode}: {err}");
        assert!(
            !out.contains(leaked) && !err.contains(leaked),
            "{mode}: {out}\n{err}"
        );
        // Refused at SKILL.md: the skill's other files are never fetched.
        assert_eq!(reads(&log), [SKILL_MD], "{mode}");
        assert!(!reads(&log).iter().any(|r| r == FORMS));
    }
}

#[test]
fn entries_that_break_the_rules_are_refused_before_any_read() {
    for (mode, why) in [
        ("outside", "outside the skill's directory"),
        ("toomany", "lists 514 files, more than the 512"),
        ("toobig", "more than the 16777216 (16 MiB)"),
    ] {
        let (dir, log) = hostile(mode, json!({}));
        let (code, out, err) = skills(&dir, &["list", "h"]);
        assert_eq!(code, 0, "{mode}: {out}\n{err}");
        assert!(out.contains("0 skills"), "{mode}: {out}");
        assert!(
            out.contains(&format!("refused: {SKILL_MD}:")),
            "{mode}: {out}"
        );
        assert!(out.contains(why), "{mode}: {out}");
        let (code, _, err) = skills(&dir, &["get", "h", SKILL_MD]);
        assert_eq!(code, 1, "{mode}: {err}");
        assert!(
            err.contains("its entry is invalid") && err.contains(why),
            "{mode}: {err}"
        );
        assert!(reads(&log).is_empty(), "{mode}: {:?}", reads(&log));
    }
}

#[test]
fn huge_and_endless_listings_end_with_a_clear_error() {
    let (dir, _) = hostile("huge", json!({"maxTools": 100}));
    let (code, _, err) = skills(&dir, &["list", "h"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "skills/list returned more than 100 items; if that is legitimate, raise maxTools"
        ),
        "{err}"
    );
    let (dir, _) = hostile("cycle", json!({}));
    let (code, _, err) = skills(&dir, &["list", "h"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("the server's pagination cycles"), "{err}");
    let (dir, _) = hostile("endless", json!({"toolTimeoutSec": 2}));
    let (code, _, err) = skills(&dir, &["list", "h"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("did not answer skills/list within 2 s; raise toolTimeoutSec")
            || err.contains("skills/list returned more than 10000 pages"),
        "{err}"
    );
}

#[test]
fn a_servers_escape_sequences_in_a_skill_never_reach_the_terminal() {
    let (dir, _) = hostile("evil", json!({}));
    let dirty = |t: &str| {
        t.chars().any(|c| {
            (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202e}' | '\u{200b}')
        })
    };
    for args in [&["list", "h"][..], &["get", "h", "pdf-processing"]] {
        let (code, out, err) = skills(&dir, args);
        assert_eq!(code, 0, "{args:?}: {out}\n{err}");
        assert!(!dirty(&out) && !dirty(&err), "{args:?}: {out:?}\n{err:?}");
        assert!(out.contains("RED osc52:"), "{args:?}: {out}");
    }
    // --json keeps the server's exact text, escaped.
    let (code, out, err) = skills(&dir, &["get", "h", "pdf-processing", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!dirty(&out), "{out:?}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["body"].as_str().unwrap().contains("\x1b[31mRED"), "{v}");
}

#[test]
fn a_server_without_the_extension_is_never_asked_for_skills() {
    let dir = project_with(
        "skills-none",
        json!({"p": super::common::stdio_json(super::common::python("p"))}),
    );
    let (code, out, err) = skills(&dir, &["list", "p"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        err.contains("server \"p\" does not offer skills (it declares no `extensions.io.modelcontextprotocol/skills` capability)"),
        "{err}"
    );
}
