//! Tests of `edit_file` and `apply_patch` against real files, through the `Builtins` actor,
//! and of the patch parser.
use super::patch::{self, Hunk, Line, Op};
use super::tests::{call, start, TempDir};
use super::*;

fn read(dir: &TempDir, rel: &str) -> Vec<u8> {
    std::fs::read(dir.0.join(rel)).unwrap()
}

fn text(dir: &TempDir, rel: &str) -> String {
    String::from_utf8(read(dir, rel)).unwrap()
}

fn edit(path: &str, old: &str, new: &str) -> Value {
    json!({"path": path, "old_string": old, "new_string": new})
}

fn patch_of(body: &str) -> Value {
    json!({"input": format!("*** Begin Patch\n{body}\n*** End Patch\n")})
}

#[actix_rt::test]
async fn edit_file_replaces_one_occurrence_or_says_how_many_there_are() {
    let dir = TempDir::new("edit-once");
    dir.write("a.txt", "one\ntwo\nthree\ntwo\n");
    let b = start(&dir, BuiltinOptions::default());
    // Never read in this conversation: the exact match is enough.
    let (out, err) = call(&b, "edit_file", edit("a.txt", "one", "uno")).await;
    assert!(!err, "{out}");
    assert_eq!(out, "edited a.txt: +1 -1");
    assert_eq!(text(&dir, "a.txt"), "uno\ntwo\nthree\ntwo\n");

    let (out, err) = call(&b, "edit_file", edit("a.txt", "two", "dos")).await;
    assert!(err);
    assert!(out.contains("old_string occurs 2 times in a.txt"), "{out}");
    assert!(out.contains("replace_all"), "{out}");
    let (out, err) = call(&b, "edit_file", edit("a.txt", "four", "cuatro")).await;
    assert!(err);
    assert!(out.contains("old_string occurs 0 times in a.txt"), "{out}");
    let (out, err) = call(&b, "edit_file", edit("a.txt", "two", "two")).await;
    assert!(err);
    assert!(out.contains("are the same"), "{out}");
    assert_eq!(text(&dir, "a.txt"), "uno\ntwo\nthree\ntwo\n");

    let mut all = edit("a.txt", "two\n", "dos\nzwei\n");
    all["replace_all"] = json!(true);
    let (out, err) = call(&b, "edit_file", all).await;
    assert!(!err, "{out}");
    assert_eq!(out, "edited a.txt: +4 -2 (2 replacements)");
    assert_eq!(text(&dir, "a.txt"), "uno\ndos\nzwei\nthree\ndos\nzwei\n");
}

#[actix_rt::test]
async fn edit_file_keeps_line_endings_bom_encoding_and_mode() {
    let dir = TempDir::new("edit-keep");
    dir.write("crlf.txt", "fn a() {\r\n    1\r\n}\r\n");
    dir.write("bom.txt", b"\xEF\xBB\xBFname = 1\n");
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            "héllo\r\nwörld\r\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    dir.write("u16.txt", &utf16);
    dir.write("latin1.txt", b"caf\xE9\n");
    dir.write("run.sh", "echo a\n");
    harness9_platform::fs::set_mode(&std::fs::File::open(dir.0.join("run.sh")).unwrap(), 0o750)
        .unwrap();
    let mode = |p: &str| {
        harness9_platform::fs::mode_of(&std::fs::metadata(dir.0.join(p)).unwrap()) & 0o7777
    };
    let before = mode("run.sh");
    let b = start(&dir, BuiltinOptions::default());

    let (out, err) = call(
        &b,
        "edit_file",
        edit("crlf.txt", "{\n    1\n}", "{\n    2\n    3\n}"),
    )
    .await;
    assert!(!err, "{out}");
    assert_eq!(
        text(&dir, "crlf.txt"),
        "fn a() {\r\n    2\r\n    3\r\n}\r\n"
    );

    dir.write("lf.txt", "a\nb\n");
    let (out, err) = call(&b, "edit_file", edit("lf.txt", "a\r\nb", "x\r\ny")).await;
    assert!(!err, "{out}");
    assert_eq!(text(&dir, "lf.txt"), "x\ny\n");
    let (out, err) = call(&b, "edit_file", edit("bom.txt", "= 1", "= 2")).await;
    assert!(!err, "{out}");
    assert_eq!(read(&dir, "bom.txt"), b"\xEF\xBB\xBFname = 2\n");

    let (out, err) = call(&b, "edit_file", edit("u16.txt", "wörld\n", "welt\n")).await;
    assert!(!err, "{out}");
    let want: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(
            "héllo\r\nwelt\r\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        )
        .collect();
    assert_eq!(read(&dir, "u16.txt"), want);

    let (out, err) = call(&b, "edit_file", edit("latin1.txt", "caf", "cafe")).await;
    assert!(err);
    assert!(
        out.contains("latin1.txt is not text harness9 can edit"),
        "{out}"
    );
    assert_eq!(read(&dir, "latin1.txt"), b"caf\xE9\n");

    let (out, err) = call(&b, "edit_file", edit("run.sh", "a", "b")).await;
    assert!(!err, "{out}");
    assert_eq!(mode("run.sh"), before);
}

#[actix_rt::test]
async fn an_edit_of_a_file_changed_since_the_model_saw_it_is_refused() {
    let dir = TempDir::new("edit-stale");
    dir.write("a.txt", "alpha\nbeta\n");
    let b = start(&dir, BuiltinOptions::default());
    let (_, err) = call(&b, "read_file", json!({"path": "a.txt"})).await;
    assert!(!err);
    // Someone else changes it (same size: the stamp's mtime or hash must tell). Its time is
    // set a minute on, not waited for: a coarse file-system clock cannot hide the change.
    dir.write("a.txt", "alpha\nBETA\n");
    std::fs::File::options()
        .write(true)
        .open(dir.0.join("a.txt"))
        .and_then(|f| f.set_modified(std::time::SystemTime::now() + Duration::from_secs(60)))
        .unwrap();
    let (out, err) = call(&b, "edit_file", edit("a.txt", "alpha", "gamma")).await;
    assert!(err);
    assert!(
        out.contains("a.txt changed on disk since you last read or wrote it"),
        "{out}"
    );
    assert!(out.contains("read it again"), "{out}");
    let (out, err) = call(&b, "apply_patch", patch_of("*** Delete File: a.txt")).await;
    assert!(err);
    assert!(out.contains("changed on disk"), "{out}");
    // Nor is it overwritten whole.
    let (out, err) = call(
        &b,
        "write_file",
        json!({"path": "a.txt", "content": "mine\n"}),
    )
    .await;
    assert!(err);
    assert!(
        out.contains("tool \"write_file\": a.txt changed on disk"),
        "{out}"
    );
    assert_eq!(text(&dir, "a.txt"), "alpha\nBETA\n");
    // Read again: the edit goes through, and the next one (the model saw its own write) too.
    call(&b, "read_file", json!({"path": "a.txt"})).await;
    let (out, err) = call(&b, "edit_file", edit("a.txt", "alpha", "gamma")).await;
    assert!(!err, "{out}");
    let (out, err) = call(&b, "edit_file", edit("a.txt", "gamma", "delta")).await;
    assert!(!err, "{out}");
    // A write by someone else after the model's write is caught by the content hash.
    dir.write("a.txt", "delta\nbeta\n");
    let (out, err) = call(&b, "edit_file", edit("a.txt", "beta", "b")).await;
    assert!(err, "{out}");
    // A new conversation forgets what was seen: the file counts as never seen.
    b.send(ForgetFiles).await.unwrap();
    let (out, err) = call(&b, "edit_file", edit("a.txt", "beta", "b")).await;
    assert!(!err, "{out}");
    assert_eq!(text(&dir, "a.txt"), "delta\nb\n");
}

#[actix_rt::test]
async fn edit_file_creates_with_an_empty_old_string_and_never_writes_in_git() {
    let dir = TempDir::new("edit-create");
    dir.write("full.txt", "x\n");
    dir.write(".git/config", "[core]\n");
    let b = start(&dir, BuiltinOptions::default());
    let (out, err) = call(&b, "edit_file", edit("new/dir/n.txt", "", "a\nb\n")).await;
    assert!(!err, "{out}");
    assert_eq!(out, "added new/dir/n.txt: +2");
    assert_eq!(text(&dir, "new/dir/n.txt"), "a\nb\n");
    let (out, err) = call(&b, "edit_file", edit("full.txt", "", "y")).await;
    assert!(err);
    assert!(
        out.contains("old_string is empty but full.txt is not"),
        "{out}"
    );
    let (out, err) = call(&b, "edit_file", edit("missing.txt", "a", "b")).await;
    assert!(err);
    assert!(out.contains("file not found: missing.txt"), "{out}");
    for path in [".git/config", "sub/../.GIT/config"] {
        let (out, err) = call(&b, "edit_file", edit(path, "[core]", "[x]")).await;
        assert!(err);
        assert!(out.contains("inside a .git directory"), "{out}");
    }
    assert_eq!(text(&dir, ".git/config"), "[core]\n");
}

#[test]
fn the_parser_reads_every_section_kind() {
    let ops = patch::parse(
        "*** Begin Patch\n*** Add File: n.txt\n+a\n+\n*** Delete File: old.txt\n*** Update File: s.rs\n*** Move to: t.rs\n@@ fn main() {\n ctx\n-gone\n+new\n@@ -3,2 +3,2 @@\n-x\n+y\n*** End of File\n*** End Patch",
    )
    .unwrap();
    assert_eq!(
        ops,
        vec![
            Op::Add {
                path: "n.txt".into(),
                lines: vec!["a".into(), String::new()]
            },
            Op::Delete {
                path: "old.txt".into()
            },
            Op::Update {
                path: "s.rs".into(),
                move_to: Some("t.rs".into()),
                hunks: vec![
                    Hunk {
                        anchor: Some("fn main() {".into()),
                        lines: vec![
                            Line::Context("ctx".into()),
                            Line::Removed("gone".into()),
                            Line::Added("new".into())
                        ],
                        eof: false
                    },
                    Hunk {
                        anchor: None,
                        lines: vec![Line::Removed("x".into()), Line::Added("y".into())],
                        eof: true
                    },
                ]
            },
        ]
    );
    // Blank lines between sections separate them; ` *** Add File:` is a context line.
    let ops = patch::parse(
        "*** Begin Patch\n*** Add File: a\n+x\n\n*** Update File: b\n@@\n *** Add File: c\n-y\n\n\n*** End Patch",
    )
    .unwrap();
    assert_eq!(ops.len(), 2);
    match &ops[1] {
        Op::Update { hunks, .. } => assert_eq!(
            hunks[0].lines,
            [
                Line::Context("*** Add File: c".into()),
                Line::Removed("y".into())
            ]
        ),
        other => panic!("{other:?}"),
    }
    // A heredoc around it is taken off.
    assert!(
        patch::parse("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n").is_ok()
    );
    let err = |p: &str| patch::parse(p).unwrap_err();
    assert!(err("*** Delete File: a\n*** End Patch").contains("must start with"));
    assert!(err("*** Begin Patch\n*** Delete File: a\n").contains("was it cut off"));
    assert!(err("*** Begin Patch\n*** End Patch").contains("changes no file"));
    assert!(
        err("*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch")
            .contains("line 3 of the patch")
    );
    assert!(err("*** Begin Patch\n*** Update File: a\n*** End Patch").contains("has no hunk"));
    assert!(err("*** Begin Patch\n*** Frobnicate: a\n*** End Patch").contains("line 2"));
    assert!(
        err("*** Begin Patch\n*** Delete File: a\n*** Update File: b\n*** Move to: a\n@@\n-x\n*** End Patch")
            .contains("names a more than once")
    );
    let many: String = (0..=patch::MAX_PATCH_FILES)
        .map(|i| format!("*** Delete File: f{i}\n"))
        .collect();
    assert!(err(&format!("*** Begin Patch\n{many}*** End Patch")).contains("more than 100 files"));
    let paths =
        patch::paths("*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n*** End Patch")
            .unwrap();
    assert_eq!(paths, ["b", "a"]);
}

#[test]
fn hunks_match_exactly_then_ignoring_whitespace_and_name_themselves_when_they_do_not() {
    let file: Vec<String> = ["fn a() {", "    x();   ", "}", "fn b() {", "    x();", "}"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let hunk = |anchor: Option<&str>, lines: Vec<Line>| Hunk {
        anchor: anchor.map(Into::into),
        lines,
        eof: false,
    };
    // The anchor picks the second function; the trailing spaces of the first don't matter.
    let h = hunk(
        Some("fn b() {"),
        vec![
            Line::Removed("    x();".into()),
            Line::Added("    y();".into()),
        ],
    );
    let out = patch::apply(&file, &[h], "f.rs").unwrap();
    assert_eq!(out[4], "    y();");
    assert_eq!(out[1], "    x();   ");
    let h = hunk(
        None,
        vec![
            Line::Context("fn a() {".into()),
            Line::Removed("x();".into()),
        ],
    );
    let out = patch::apply(&file, &[h], "f.rs").unwrap();
    assert_eq!(out.len(), 5);
    // A curly quote for the file's straight one.
    let quoted = vec!["say(\"hi\");".to_owned()];
    let q = hunk(
        None,
        vec![
            Line::Removed("say(\u{201C}hi\u{201D});".into()),
            Line::Added("say(\"bye\");".into()),
        ],
    );
    assert_eq!(
        patch::apply(&quoted, &[q], "q.rs").unwrap(),
        ["say(\"bye\");"]
    );
    let bad = hunk(
        None,
        vec![Line::Context("}".into()), Line::Removed("nothing".into())],
    );
    let ok = hunk(None, vec![Line::Removed("fn a() {".into())]);
    let e = patch::apply(&file, &[ok, bad], "f.rs").unwrap_err();
    assert!(
        e.starts_with("hunk 2 of f.rs (from \"}\") does not apply"),
        "{e}"
    );
    // Lines added at the end, then a hunk that removes lines before them.
    let added = hunk(None, vec![Line::Added("end".into())]);
    let cut = hunk(
        None,
        vec![
            Line::Removed("fn a() {".into()),
            Line::Removed("    x();   ".into()),
        ],
    );
    let out = patch::apply(&file, &[added, cut], "f.rs").unwrap();
    assert_eq!(out, ["}", "fn b() {", "    x();", "}", "end"]);
    // Many lines alike and a long hunk: bounded, with an error saying what to do.
    let same = vec!["a".to_owned(); 200_000];
    let mut lines = vec![Line::Context("a".into()); 300];
    lines.push(Line::Removed("b".into()));
    let started = std::time::Instant::now();
    let e = patch::apply(&same, &[hunk(None, lines)], "same.txt").unwrap_err();
    assert!(e.contains("costs too much"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[actix_rt::test]
async fn apply_patch_adds_updates_moves_and_deletes() {
    let dir = TempDir::new("patch-all");
    dir.write("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    1\n}\n");
    dir.write("old.txt", "bye\n");
    dir.write("win.txt", "a\r\nb\r\n");
    dir.write("mv.txt", "m\n");
    dir.write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\xff");
    let b = start(&dir, BuiltinOptions::default());
    let (out, err) = call(
        &b,
        "apply_patch",
        patch_of(
            "*** Add File: docs/new.md\n+# New\n+text\n*** Update File: src/lib.rs\n@@ fn b() {\n-    1\n+    2\n*** Delete File: old.txt\n*** Update File: win.txt\n b\n+c\n*** End of File\n*** Update File: mv.txt\n*** Move to: moved/mv.txt\n@@\n-m\n+n\n*** Delete File: logo.png",
        ),
    )
    .await;
    assert!(!err, "{out}");
    assert_eq!(
        out,
        "added docs/new.md: +2\nedited src/lib.rs: +1 -1\ndeleted old.txt: -1\nedited win.txt: +1 -0\nmoved mv.txt -> moved/mv.txt: +1 -1\ndeleted logo.png"
    );
    assert!(!dir.0.join("logo.png").exists());
    assert_eq!(text(&dir, "docs/new.md"), "# New\ntext\n");
    assert_eq!(
        text(&dir, "src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n"
    );
    assert!(!dir.0.join("old.txt").exists());
    assert_eq!(text(&dir, "win.txt"), "a\r\nb\r\nc\r\n");
    assert_eq!(text(&dir, "moved/mv.txt"), "n\n");
    assert!(!dir.0.join("mv.txt").exists());
}

#[actix_rt::test]
async fn a_patch_that_does_not_apply_whole_writes_nothing() {
    let dir = TempDir::new("patch-none");
    dir.write("a.txt", "one\n");
    dir.write("b.txt", "two\n");
    dir.write("c.txt", "three\n");
    dir.write(".git/HEAD", "ref\n");
    let b = start(&dir, BuiltinOptions::default());
    let cases = [
        (
            "*** Update File: a.txt\n@@\n-one\n+1\n*** Update File: b.txt\n@@\n-zwei\n+2",
            "hunk 1 of b.txt (from \"zwei\") does not apply",
        ),
        (
            "*** Update File: a.txt\n*** Move to: c.txt\n@@\n-one\n+1",
            "moves a file onto c.txt, which exists",
        ),
        ("*** Add File: b.txt\n+x", "adds b.txt, which exists"),
        (
            "*** Update File: a.txt\n@@\n-one\n+1\n*** Add File: .git/hooks/post-checkout\n+#!/bin/sh",
            "inside a .git directory",
        ),
        (
            "*** Update File: a.txt\n*** Move to: .git/x\n@@\n-one\n+1",
            "inside a .git directory",
        ),
        ("*** Delete File: nope.txt", "cannot delete nope.txt: it does not exist"),
        (
            "*** Update File: a.txt\n@@\n-one\n+1\n*** Update File: ./x/../a.txt\n@@\n-one\n+2",
            "more than once",
        ),
    ];
    for (body, want) in cases {
        let (out, err) = call(&b, "apply_patch", patch_of(body)).await;
        assert!(err, "{body}: {out}");
        assert!(out.contains(want), "{body}: {out}");
        assert!(out.ends_with("nothing was written"), "{out}");
        assert_eq!(text(&dir, "a.txt"), "one\n", "{body}");
        assert_eq!(text(&dir, "b.txt"), "two\n", "{body}");
        assert_eq!(text(&dir, "c.txt"), "three\n", "{body}");
        assert!(!dir.0.join(".git/hooks").exists());
        assert!(!dir.0.join(".git/x").exists());
    }
}

/// Patches made of random pieces (a hostile or confused model) never panic the parser or the
/// applier: every one is applied or refused with an error.
#[test]
fn random_patches_never_panic() {
    const PIECES: &[&str] = &[
        "*** Begin Patch",
        "*** End Patch",
        "*** Add File: a",
        "*** Update File: a",
        "*** Delete File: b",
        "*** Move to: c",
        "*** End of File",
        "@@",
        "@@ x",
        "@@ -1,2 +1,2 @@",
        " x",
        "-x",
        "+y",
        "",
        " ",
        "-",
        "+",
        "<<'EOF'",
        "EOF",
        "é",
        "\r",
    ];
    let file: Vec<String> = ["x", "y", "", "x", "z"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for _ in 0..20_000 {
        let len = next(12);
        let mut text = String::from("*** Begin Patch\n");
        for _ in 0..len {
            text.push_str(PIECES[next(PIECES.len())]);
            text.push('\n');
        }
        if next(4) > 0 {
            text.push_str("*** End Patch\n");
        }
        if let Ok(ops) = patch::parse(&text) {
            for op in ops {
                if let Op::Update { hunks, .. } = op {
                    let _ = patch::apply(&file, &hunks, "a");
                }
            }
        }
        let _ = patch::paths(&text);
        let _ = super::diff::preview("apply_patch", &json!({ "input": text }));
    }
}
