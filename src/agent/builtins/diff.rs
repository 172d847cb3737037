//! What a call of an edit tool changes, as unified-diff lines for the front ends (the TUI's
//! question box and transcript): `edit_file`'s old and new text, `apply_patch`'s sections.
//! Pure: from the call's arguments, no file is read. The text is the model's, unsanitized:
//! a front end cleans it before it reaches a terminal.

use serde_json::Value;

use super::patch::{self, Op};

/// Lines a preview holds at most (a note says how many more there were). A file's line is
/// always kept: a long section cannot hide the next file a patch touches.
pub const MAX_PREVIEW_LINES: usize = 2000;
/// Lines of context around a change of `edit_file`.
const CONTEXT: usize = 3;

/// What a line of a preview is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    /// The file and what happens to it (`src/main.rs`, `add docs/a.md`).
    File,
    /// A hunk's header (`@@`, with the patch's anchor line).
    Hunk,
    /// Kept.
    Context,
    /// Removed.
    Removed,
    /// Added.
    Added,
    /// A note (`… 12 more lines`).
    Note,
}

/// One line of a preview, without its line break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    /// What it is.
    pub kind: DiffKind,
    /// Its text (for Context/Removed/Added without the ` `/`-`/`+`).
    pub text: String,
}

/// The preview of a call of `tool` with `args`, if it is an edit tool whose arguments make
/// sense (else the front end shows the arguments as they are).
pub fn preview(tool: &str, args: &Value) -> Option<Vec<DiffLine>> {
    let mut out = Out::default();
    match tool {
        "edit_file" => {
            let s = |k: &str| args.get(k).and_then(Value::as_str);
            let (path, old, new) = (s("path")?, s("old_string")?, s("new_string")?);
            let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
            out.push(
                DiffKind::File,
                match (old.is_empty(), all) {
                    (true, _) => format!("{path} (new file, or filling an empty one)"),
                    (false, true) => format!("{path} (every occurrence)"),
                    (false, false) => path.to_owned(),
                },
            );
            text_diff(old, new, &mut out);
        }
        "apply_patch" => {
            let ops = patch::parse(args.get("input").and_then(Value::as_str)?).ok()?;
            for op in &ops {
                match op {
                    Op::Add { path, lines } => {
                        out.push(DiffKind::File, format!("add {path}"));
                        for l in lines {
                            out.push(DiffKind::Added, l.clone());
                        }
                    }
                    Op::Delete { path } => out.push(DiffKind::File, format!("delete {path}")),
                    Op::Update {
                        path,
                        move_to,
                        hunks,
                    } => {
                        out.push(
                            DiffKind::File,
                            match move_to {
                                Some(to) => format!("move {path} -> {to}"),
                                None => format!("update {path}"),
                            },
                        );
                        for h in hunks {
                            out.push(
                                DiffKind::Hunk,
                                match &h.anchor {
                                    Some(a) => format!("@@ {a}"),
                                    None => "@@".to_owned(),
                                },
                            );
                            for l in &h.lines {
                                let (kind, text) = match l {
                                    patch::Line::Context(t) => (DiffKind::Context, t),
                                    patch::Line::Removed(t) => (DiffKind::Removed, t),
                                    patch::Line::Added(t) => (DiffKind::Added, t),
                                };
                                out.push(kind, text.clone());
                            }
                            if h.eof {
                                out.push(DiffKind::Note, "(end of file)".to_owned());
                            }
                        }
                    }
                }
            }
        }
        _ => return None,
    }
    Some(out.finish())
}

/// A bounded list of lines: past [`MAX_PREVIEW_LINES`] only counted, but for the files' lines.
#[derive(Default)]
struct Out {
    lines: Vec<DiffLine>,
    /// Lines left out since the last one kept.
    more: usize,
}

impl Out {
    fn push(&mut self, kind: DiffKind, text: String) {
        if self.lines.len() < MAX_PREVIEW_LINES || kind == DiffKind::File {
            self.note_left_out();
            self.lines.push(DiffLine { kind, text });
        } else {
            self.more += 1;
        }
    }

    fn note_left_out(&mut self) {
        if self.more > 0 {
            self.lines.push(DiffLine {
                kind: DiffKind::Note,
                text: format!("… {} more lines", self.more),
            });
            self.more = 0;
        }
    }

    fn finish(mut self) -> Vec<DiffLine> {
        self.note_left_out();
        self.lines
    }
}

/// The hunks from `old` to `new`, a few lines of context around each change.
fn text_diff(old: &str, new: &str, out: &mut Out) {
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_lines(old, new);
    for group in diff.grouped_ops(CONTEXT) {
        out.push(DiffKind::Hunk, "@@".to_owned());
        for op in group {
            for change in diff.iter_changes(&op) {
                let kind = match change.tag() {
                    similar::ChangeTag::Equal => DiffKind::Context,
                    similar::ChangeTag::Delete => DiffKind::Removed,
                    similar::ChangeTag::Insert => DiffKind::Added,
                };
                let text = change.value();
                let text = text.strip_suffix('\n').unwrap_or(text);
                out.push(kind, text.strip_suffix('\r').unwrap_or(text).to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(lines: &[DiffLine]) -> Vec<(DiffKind, &str)> {
        lines.iter().map(|l| (l.kind, l.text.as_str())).collect()
    }

    #[test]
    fn an_edit_shows_its_change_with_context_and_a_patch_its_sections() {
        let p = preview(
            "edit_file",
            &json!({"path": "a.rs", "old_string": "a\nb\nc\n", "new_string": "a\nB\nc\n"}),
        )
        .unwrap();
        use DiffKind::*;
        assert_eq!(
            kinds(&p),
            [
                (File, "a.rs"),
                (Hunk, "@@"),
                (Context, "a"),
                (Removed, "b"),
                (Added, "B"),
                (Context, "c")
            ]
        );
        let p = preview(
            "apply_patch",
            &json!({"input": "*** Begin Patch\n*** Add File: n\n+x\n*** Update File: u\n*** Move to: v\n@@ fn f\n-a\n+b\n*** Delete File: d\n*** End Patch"}),
        )
        .unwrap();
        assert_eq!(
            kinds(&p),
            [
                (File, "add n"),
                (Added, "x"),
                (File, "move u -> v"),
                (Hunk, "@@ fn f"),
                (Removed, "a"),
                (Added, "b"),
                (File, "delete d")
            ]
        );
        assert!(preview("apply_patch", &json!({"input": "nonsense"})).is_none());
        assert!(preview("write_file", &json!({"path": "a", "content": "b"})).is_none());
        let long: String = (0..3000).map(|i| format!("+{i}\n")).collect();
        let p = preview(
            "apply_patch",
            &json!({"input": format!("*** Begin Patch\n*** Add File: n\n{long}*** End Patch")}),
        )
        .unwrap();
        assert_eq!(p.len(), MAX_PREVIEW_LINES + 1);
        assert_eq!(p.last().unwrap().text, "… 1001 more lines");
        // A long section cannot hide the files after it.
        let p = preview(
            "apply_patch",
            &json!({"input": format!("*** Begin Patch\n*** Add File: n\n{long}*** Delete File: precious\n*** End Patch")}),
        )
        .unwrap();
        assert_eq!(
            kinds(&p[MAX_PREVIEW_LINES..]),
            [(Note, "… 1001 more lines"), (File, "delete precious")]
        );
    }
}
