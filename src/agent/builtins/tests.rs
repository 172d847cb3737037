//! Tests of the built-in tools against real files and processes.
use super::bash::CappedOutput;
use super::grep::Glob;
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use harness9_actors::messages::SetBuiltins;
use harness9_actors::ToolRegistry;

const LIMIT: Duration = Duration::from_secs(20);

/// A fresh directory under the system temp dir, removed on drop.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new(label: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "harness9-builtins-{}-{}-{label}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub(super) fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn start(dir: &TempDir, opts: BuiltinOptions) -> Addr<Builtins> {
    Builtins::new(dir.0.clone(), opts).start()
}

async fn call_with(
    addr: &Addr<Builtins>,
    name: &str,
    args: Value,
    cancel: CancellationToken,
) -> Result<CallToolResult, CallError> {
    addr.send(CallBuiltin {
        name: name.to_owned(),
        arguments: Some(args),
        cancel,
    })
    .await
    .unwrap()
}

pub(super) async fn call(addr: &Addr<Builtins>, name: &str, args: Value) -> (String, bool) {
    let r = call_with(addr, name, args, CancellationToken::new())
        .await
        .unwrap();
    (r.text(), r.is_error)
}

/// Whether any process of group `pgid` is alive (zombies waiting for a reaper don't count).
fn group_alive(pgid: i32) -> bool {
    harness9_platform::process::group_alive(pgid)
}

/// Waits (bounded) for group `pgid` to be gone.
async fn group_gone(pgid: i32) -> bool {
    for _ in 0..100 {
        if !group_alive(pgid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Waits (bounded) for the pid a command wrote to `file`.
async fn pid_in(file: &Path) -> i32 {
    for _ in 0..250 {
        if let Ok(s) = std::fs::read_to_string(file) {
            if let Ok(pid) = s.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the command never wrote its pid to {}", file.display());
}

#[actix_rt::test]
async fn bash_echo_and_exit_codes() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("echo");
        let b = start(&dir, BuiltinOptions::default());
        let (text, err) = call(&b, "bash", json!({"command": "echo hello; pwd"})).await;
        assert!(!err, "{text}");
        assert_eq!(text, format!("hello\n{}\nexit code 0", dir.0.display()));

        let (text, err) = call(
            &b,
            "bash",
            json!({"command": "echo out; echo err >&2; echo out2; exit 2"}),
        )
        .await;
        assert!(err);
        assert_eq!(text, "out\nerr\nout2\nexit code 2");

        let (text, err) = call(&b, "bash", json!({"command": "true"})).await;
        assert!(!err);
        assert_eq!(text, "(no output)\nexit code 0");

        let (text, err) = call(&b, "bash", json!({"command": "cat"})).await;
        assert!(!err, "stdin is closed, so cat ends at once: {text}");

        let (text, err) = call(&b, "bash", json!({})).await;
        assert!(err);
        assert_eq!(text, "tool \"bash\": missing required argument \"command\"");
        let (text, err) = call(&b, "bash", json!({"command": "x", "timeout_sec": 601})).await;
        assert!(err);
        assert!(text.contains("at most 600, got 601"), "{text}");
        let (text, err) = call(&b, "bash", json!({"comand": "ls"})).await;
        assert!(err);
        assert!(text.contains("unknown argument \"comand\""), "{text}");

        let gone = Builtins::new(dir.0.join("missing"), BuiltinOptions::default()).start();
        let (text, err) = call(&gone, "bash", json!({"command": "true"})).await;
        assert!(err);
        assert!(
            text.starts_with("tool \"bash\": unable to start bash in "),
            "{text}"
        );
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn bash_background_process_does_not_hold_the_call() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("bg");
        let b = start(&dir, BuiltinOptions::default());
        let started = std::time::Instant::now();
        let (text, err) = call(
            &b,
            "bash",
            json!({"command": "echo $$ > pid; sleep 30 & echo started"}),
        )
        .await;
        assert!(!err, "{text}");
        assert_eq!(text, "started\nexit code 0");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pgid = pid_in(&dir.0.join("pid")).await;
        assert!(group_gone(pgid).await, "the background sleep survived");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn bash_timeout_kills_the_whole_group() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("timeout");
        let b = start(&dir, BuiltinOptions::default());
        let started = std::time::Instant::now();
        let (text, err) = call(
            &b,
            "bash",
            json!({"command": "echo $$ > pid; echo before; sleep 30 & sleep 30", "timeout_sec": 1}),
        )
        .await;
        assert!(err);
        assert_eq!(
            text,
            "before\ncommand timed out after 1 s; pass a larger timeout_sec (max 600)"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let pgid = pid_in(&dir.0.join("pid")).await;
        assert!(group_gone(pgid).await, "a process of the group survived");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn bash_timeout_escalates_to_sigkill() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("term");
        let b = start(&dir, BuiltinOptions::default());
        let started = std::time::Instant::now();
        let (text, err) = call(
            &b,
            "bash",
            json!({"command": "echo $$ > pid; trap '' TERM; sleep 30 & while true; do sleep 0.1; done", "timeout_sec": 0.5}),
        )
        .await;
        assert!(err);
        assert!(text.contains("command timed out after 500 ms"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pgid = pid_in(&dir.0.join("pid")).await;
        assert!(group_gone(pgid).await, "a process of the group survived");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn bash_cancel_ends_the_call_and_kills_the_group() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("cancel");
        let b = start(&dir, BuiltinOptions::default());
        let cancel = CancellationToken::new();
        let call = call_with(
            &b,
            "bash",
            json!({"command": "echo $$ > pid; sleep 30 & sleep 30"}),
            cancel.clone(),
        );
        let pid_file = dir.0.join("pid");
        let cancel_when_running = async {
            let pgid = pid_in(&pid_file).await;
            // Registered for the panic hook's kill_all_groups.
            assert!(harness9_actors::server::live_group_count() >= 1);
            cancel.cancel();
            (pgid, std::time::Instant::now())
        };
        let (r, (pgid, cancelled_at)) = tokio::join!(call, cancel_when_running);
        assert!(cancelled_at.elapsed() < Duration::from_secs(2));
        assert_eq!(
            r,
            Err(CallError::Cancelled {
                server: "builtin".to_owned(),
                tool: "bash".to_owned()
            })
        );
        assert!(group_gone(pgid).await, "a process of the group survived");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn bash_output_cap_keeps_head_and_tail() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("cap");
        let b = start(
            &dir,
            BuiltinOptions {
                output_limit: 100,
                ..BuiltinOptions::default()
            },
        );
        // 10,000 numbered lines of 6 bytes each: 60,000 bytes.
        let (text, err) = call(&b, "bash", json!({"command": "seq -f '%05g' 1 10000"})).await;
        assert!(!err, "{text}");
        assert!(text.starts_with("00001\n00002\n"), "{text}");
        assert!(text.ends_with("09999\n10000\nexit code 0"), "{text}");
        assert!(
            text.contains("[... 59900 bytes of output cut here; 60000 bytes in all ...]"),
            "{text}"
        );
        assert!(text.len() < 250, "{text}");
    })
    .await
    .expect("test timed out");
}

#[test]
fn capped_output_counts_and_keeps_utf8_whole() {
    let mut c = CappedOutput::new(11);
    c.push(b"abc");
    assert_eq!(c.render(), "abc");
    c.push("déf".as_bytes());
    c.push(b"ghij");
    assert_eq!(c.render(), "abcdéfghij");
    let mut c = CappedOutput::new(6);
    for _ in 0..100 {
        c.push("é".as_bytes());
    }
    // Head 3 bytes = one é and a half; tail 3 bytes = a half and one é.
    assert_eq!(
        c.render(),
        "é\n[... 196 bytes of output cut here; 200 bytes in all ...]\né"
    );
}

#[actix_rt::test]
async fn read_file_numbers_lines_and_pages() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("read");
        let lines: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
        dir.write("a.txt", lines.join("\n"));
        let b = start(&dir, BuiltinOptions::default());

        let (text, err) = call(&b, "read_file", json!({"path": "a.txt", "limit": 3})).await;
        assert!(!err);
        assert_eq!(
            text,
            "     1\tline 1\n     2\tline 2\n     3\tline 3\n(a.txt goes on after line 3; pass offset 4 to read more)"
        );
        let (text, _) = call(&b, "read_file", json!({"path": "a.txt", "offset": 29})).await;
        assert_eq!(text, "    29\tline 29\n    30\tline 30\n");
        let abs = dir.0.join("a.txt").display().to_string();
        let (text, _) =
            call(&b, "read_file", json!({"path": abs, "offset": "10", "limit": 1})).await;
        assert!(text.starts_with("    10\tline 10\n"), "{text}");
        let (text, err) = call(&b, "read_file", json!({"path": "a.txt", "offset": 31})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"read_file\": a.txt has only 30 lines; offset 31 is past its end"
        );
        let (text, err) = call(&b, "read_file", json!({"path": "a.txt", "offset": 0})).await;
        assert!(err);
        assert!(text.contains("\"offset\" must be a whole number of at least 1"), "{text}");

        dir.write("long.txt", format!("{}\r\nshort\r\n", "x".repeat(5000)));
        let (text, _) = call(&b, "read_file", json!({"path": "long.txt"})).await;
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            format!("     1\t{} [... line cut; it is 5000 bytes long]", "x".repeat(2000))
        );
        assert!(text.ends_with("     2\tshort\n"), "{text}");

        dir.write("empty.txt", "");
        let (text, err) = call(&b, "read_file", json!({"path": "empty.txt"})).await;
        assert!(!err);
        assert_eq!(text, "(empty.txt is empty)");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn read_file_refuses_binary_missing_and_directories() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("readerr");
        dir.write("bin.dat", b"abc\0def");
        std::fs::create_dir_all(dir.0.join("sub")).unwrap();
        let b = start(&dir, BuiltinOptions::default());
        let (text, err) = call(&b, "read_file", json!({"path": "bin.dat"})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"read_file\": bin.dat is a binary file (it has NUL bytes); read_file shows text only"
        );
        let (text, err) = call(&b, "read_file", json!({"path": "nope/x.rs"})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"read_file\": file not found: nope/x.rs; list_dir shows what exists"
        );
        let (text, err) = call(&b, "read_file", json!({"path": "sub"})).await;
        assert!(err);
        assert!(text.contains("sub is a directory"), "{text}");
        let (text, err) = call(&b, "read_file", json!({})).await;
        assert!(err);
        assert_eq!(text, "tool \"read_file\": missing required argument \"path\"");
        let (text, err) = call(&b, "read_file", json!({"path": 3})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"read_file\": argument \"path\" must be a string, got the number 3"
        );
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn write_file_then_read_back() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("write");
        let b = start(&dir, BuiltinOptions::default());
        let (text, err) = call(
            &b,
            "write_file",
            json!({"path": "new/deep/f.txt", "content": "one\ntwo\n"}),
        )
        .await;
        assert!(!err);
        assert_eq!(text, "wrote 8 bytes to new/deep/f.txt");
        let (text, _) = call(&b, "read_file", json!({"path": "new/deep/f.txt"})).await;
        assert_eq!(text, "     1\tone\n     2\ttwo\n");
        let (text, err) = call(&b, "write_file", json!({"path": "new"})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"write_file\": missing required argument \"content\""
        );
        let (text, err) = call(&b, "write_file", json!({"path": "new/deep", "content": ""})).await;
        assert!(err);
        assert!(
            text.starts_with("tool \"write_file\": unable to write new/deep: "),
            "{text}"
        );
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn list_dir_sorts_and_marks_directories() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("list");
        dir.write("b.txt", "");
        dir.write("a/x.txt", "");
        dir.write(".hidden", "");
        dir.write("many/keep", "");
        for i in 0..1005 {
            dir.write(&format!("many/f{i:04}"), "");
        }
        let b = start(&dir, BuiltinOptions::default());
        let (text, err) = call(&b, "list_dir", json!({})).await;
        assert!(!err);
        assert_eq!(text, ".hidden\na/\nb.txt\nmany/\n");
        let (text, _) = call(&b, "list_dir", json!({"path": "many"})).await;
        assert_eq!(text.lines().count(), 1001);
        assert!(text.starts_with("f0000\n"), "{text}");
        assert!(
            text.ends_with("(and 6 more entries; 1006 in all: list a subdirectory or use grep or bash to narrow down)"),
            "{text}"
        );
        let (text, err) = call(&b, "list_dir", json!({"path": "missing"})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"list_dir\": directory not found: missing; list_dir shows what exists"
        );
        let (text, err) = call(&b, "list_dir", json!({"path": "b.txt"})).await;
        assert!(err);
        assert!(text.contains("b.txt is a file"), "{text}");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn grep_searches_with_glob_and_skips() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("grep");
        dir.write("src/main.rs", "fn main() {\n    todo!()\n}\n");
        dir.write("src/lib.rs", "// TODO later\npub fn x() {}\n");
        dir.write("notes.md", "todo: write docs\n");
        dir.write("target/debug/gen.rs", "todo!()\n");
        dir.write("node_modules/m/index.js", "todo\n");
        dir.write(".git/HEAD", "todo\n");
        dir.write(".cache/x.rs", "todo!()\n");
        dir.write("src/blob.rs", b"todo\0binary");
        let b = start(&dir, BuiltinOptions::default());

        let (text, err) = call(&b, "grep", json!({"pattern": "(?i)todo"})).await;
        assert!(!err, "{text}");
        assert_eq!(
            text,
            "notes.md:1: todo: write docs\nsrc/lib.rs:1: // TODO later\nsrc/main.rs:2:     todo!()\n"
        );
        let (text, _) = call(&b, "grep", json!({"pattern": "todo", "glob": "*.rs"})).await;
        assert_eq!(text, "src/main.rs:2:     todo!()\n");
        let (text, _) =
            call(&b, "grep", json!({"pattern": "fn", "path": "src", "glob": "{lib,x}.rs"}))
                .await;
        assert_eq!(text, "src/lib.rs:2: pub fn x() {}\n");
        let (text, _) = call(&b, "grep", json!({"pattern": "fn", "path": "src/main.rs"})).await;
        assert_eq!(text, "src/main.rs:1: fn main() {\n");
        let (text, _) = call(
            &b,
            "grep",
            json!({"pattern": ".", "glob": "**/*.rs", "max_results": 2}),
        )
        .await;
        assert_eq!(
            text,
            "src/lib.rs:1: // TODO later\nsrc/lib.rs:2: pub fn x() {}\n(stopped at 2 matches; narrow the pattern, path or glob, or raise max_results)"
        );
        let (text, err) = call(&b, "grep", json!({"pattern": "zzz"})).await;
        assert!(!err);
        assert_eq!(text, "no matches for \"zzz\" in . (3 text files searched)");
    })
    .await
    .expect("test timed out");
}

#[actix_rt::test]
async fn grep_reports_invalid_regex_and_missing_path() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("grepbad");
        let b = start(&dir, BuiltinOptions::default());
        let (text, err) = call(&b, "grep", json!({"pattern": "fn ("})).await;
        assert!(err);
        assert!(
            text.starts_with("tool \"grep\": invalid regex \"fn (\": regex parse error"),
            "{text}"
        );
        assert!(text.contains("unclosed group"), "{text}");
        let (text, err) = call(&b, "grep", json!({"pattern": "x", "path": "nope"})).await;
        assert!(err);
        assert_eq!(
            text,
            "tool \"grep\": path not found: nope; list_dir shows what exists"
        );
    })
    .await
    .expect("test timed out");
}

#[test]
fn globs_translate() {
    let m = |g: &str, p: &str| Glob::new(g).unwrap().matches(Path::new(p));
    assert!(m("*.rs", "src/deep/a.rs"));
    assert!(!m("*.rs", "src/a.rsx"));
    assert!(m("*.{ts,tsx}", "web/app.tsx"));
    assert!(m("a?c.[!x]s", "abc.rs"));
    assert!(!m("a?c.[!x]s", "abc.xs"));
    assert!(m("src/**/*.rs", "src/a/b/c.rs"));
    assert!(m("src/**/*.rs", "src/c.rs"));
    assert!(!m("src/*.rs", "src/a/c.rs"));
    assert!(m("a+b(1).txt", "a+b(1).txt"));
}

#[actix_rt::test]
async fn unknown_tool_and_precancelled_calls_are_errors() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("misc");
        let b = start(&dir, BuiltinOptions::default());
        let r = call_with(&b, "nope", json!({}), CancellationToken::new()).await;
        assert_eq!(
            r,
            Err(CallError::UnknownTool {
                name: "nope".to_owned()
            })
        );
        let cancel = CancellationToken::new();
        cancel.cancel();
        let r = call_with(&b, "list_dir", json!({}), cancel).await;
        assert!(matches!(r, Err(CallError::Cancelled { .. })), "{r:?}");
        let r = b
            .send(CallBuiltin {
                name: "list_dir".to_owned(),
                arguments: Some(json!([1])),
                cancel: CancellationToken::new(),
            })
            .await
            .unwrap()
            .unwrap();
        assert!(r.is_error);
        assert_eq!(
            r.text(),
            "tool \"list_dir\": arguments must be a JSON object, got an array"
        );
    })
    .await
    .expect("test timed out");
}

#[test]
fn definitions_have_object_schemas() {
    let defs = definitions();
    let names: Vec<&str> = defs.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "apply_patch",
            "list_dir",
            "grep",
            "list_mcp_resources",
            "read_mcp_resource",
            "load_skill"
        ]
    );
    for t in &defs {
        let schema: Value = serde_json::from_str(t.input_schema.get()).unwrap();
        assert_eq!(schema["type"], "object", "{}", t.name);
        assert!(t.description.as_deref().is_some_and(|d| d.len() > 40));
    }
}

#[actix_rt::test]
async fn calls_route_through_the_tool_registry() {
    tokio::time::timeout(LIMIT, async {
        let dir = TempDir::new("registry");
        dir.write("hello.txt", "hi there\n");
        let exec = start(&dir, BuiltinOptions::default());
        let registry = ToolRegistry::new().start();
        registry
            .send(SetBuiltins {
                tools: definitions(),
                executor: exec.recipient(),
            })
            .await
            .unwrap();
        let r = ToolRegistry::call(
            &registry,
            "read_file",
            Some(json!({"path": "hello.txt"})),
            None,
        )
        .await
        .unwrap();
        assert!(!r.is_error);
        assert_eq!(r.text(), "     1\thi there\n");
        let r = ToolRegistry::call(&registry, "bash", Some(json!({"command": "exit 3"})), None)
            .await
            .unwrap();
        assert!(r.is_error);
        assert_eq!(r.text(), "(no output)\nexit code 3");
    })
    .await
    .expect("test timed out");
}

#[test]
fn a_cut_result_is_read_back_with_read_file_from_its_private_file() {
    use crate::engine::output::apply_budget;
    use crate::model::ResultPart;
    let base = std::env::temp_dir().join(format!(
        "h9-spill-read-{}",
        harness9_base::private_fs::random_hex(4).unwrap()
    ));
    let big: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let (_, path) = apply_budget(vec![ResultPart::Text(big)], 100, &base, "mcp__x__big");
    let path = path.expect("spilled");
    let read = files::read_file(
        Path::new("/"),
        &edit::Seen::default(),
        &path.display().to_string(),
        4000,
        2,
    )
    .unwrap();
    assert!(
        read.contains("line 3999") && read.contains("line 4000"),
        "{read}"
    );
    let _ = std::fs::remove_dir_all(&base);
}
