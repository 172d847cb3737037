//! The resolver, the cmd.exe quoting and the PowerShell encoding, on every target.

use super::*;
use std::collections::HashSet;

fn exts() -> Vec<String> {
    path_extensions(None)
}

fn on(files: &[&str]) -> impl Fn(&Path) -> bool {
    let set: HashSet<String> = files.iter().map(|s| s.to_string()).collect();
    move |p: &Path| set.contains(&p.to_string_lossy().into_owned())
}

fn dirs(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

/// `dir` joined with `name` as `Path::join` does here (`/` on Linux, `\` on Windows).
fn at(dir: &str, name: &str) -> String {
    Path::new(dir).join(name).to_string_lossy().into_owned()
}

#[test]
fn pathext_defaults_and_lowercases() {
    assert_eq!(exts(), vec![".com", ".exe", ".bat", ".cmd"]);
    assert_eq!(path_extensions(Some("")), exts());
    assert_eq!(
        path_extensions(Some(".COM;.EXE;;.PS1; .Cmd ;x")),
        vec![".com", ".exe", ".ps1", ".cmd"]
    );
}

#[test]
fn a_bare_name_finds_its_exe_on_path_in_order() {
    let a = r"C:\Program Files\nodejs";
    let b = r"C:\Windows\System32";
    let exists = on(&[&at(a, "node.exe"), &at(b, "node.exe")]);
    let r = resolve("node", &dirs(&[a, b]), &exts(), &exists).expect("found");
    assert_eq!(r.path, PathBuf::from(at(a, "node.exe")));
    assert!(!r.batch);
    assert_eq!(resolve("nope", &dirs(&[a, b]), &exts(), &exists), None);
    assert_eq!(resolve("", &dirs(&[a, b]), &exts(), &exists), None);
}

#[test]
fn npx_finds_its_cmd_shim_and_exe_comes_before_cmd() {
    let d = r"C:\Users\Ann Lee\AppData\Roaming\npm";
    let exists = on(&[
        &at(d, "npx.cmd"),
        &at(d, "npx"),
        &at(d, "uvx.exe"),
        &at(d, "uvx.cmd"),
    ]);
    // `npx` (a sh script for Git Bash) has no PATHEXT extension: the shim is what runs.
    let r = resolve("npx", &dirs(&[d]), &exts(), &exists).expect("npx");
    assert_eq!(r.path, PathBuf::from(at(d, "npx.cmd")));
    assert!(r.batch);
    let r = resolve("uvx", &dirs(&[d]), &exts(), &exists).expect("uvx");
    assert_eq!(r.path, PathBuf::from(at(d, "uvx.exe")));
    assert!(!r.batch);
}

#[test]
fn a_name_with_its_extension_is_taken_as_written() {
    let d = r"C:\tools";
    let exists = on(&[&at(d, "run.BAT"), &at(d, "x.exe.cmd")]);
    let r = resolve("run.BAT", &dirs(&[d]), &exts(), &exists).expect("bat");
    assert_eq!(r.path, PathBuf::from(at(d, "run.BAT")));
    assert!(r.batch);
    // An extension PATHEXT does not list is not taken as is: `x.exe` is not there.
    let r = resolve("x.exe", &dirs(&[d]), &exts(), &exists).expect("x.exe.cmd");
    assert_eq!(r.path, PathBuf::from(at(d, "x.exe.cmd")));
}

#[test]
fn a_path_with_a_drive_or_spaces_is_not_searched() {
    let full = r"C:\Program Files\My Server\server.exe";
    let exists = on(&[
        full,
        &at(r"C:\bin", r"C:\Program Files\My Server\server.exe"),
    ]);
    let r = resolve(full, &dirs(&[r"C:\bin"]), &exts(), &exists).expect("as written");
    assert_eq!(r.path, PathBuf::from(full));
    let no_ext = r"C:\Program Files\My Server\server";
    let r = resolve(no_ext, &[], &exts(), &exists).expect("with .exe");
    assert_eq!(r.path, PathBuf::from(full));
    assert!(resolve(r"D:\x\y", &[], &exts(), &exists).is_none());
    assert!(is_path(r"C:server") && is_path("./x") && is_path(r"tools\x") && !is_path("npx"));
    assert!(is_windows_absolute(r"C:\x") && is_windows_absolute("c:/x"));
    assert!(is_windows_absolute(r"\\host\share\x"));
    assert!(
        !is_windows_absolute(r"C:x") && !is_windows_absolute("x") && !is_windows_absolute("/x")
    );
}

#[test]
fn a_windows_path_variable_splits_on_semicolons_and_drops_quotes() {
    assert_eq!(
        split_windows_path(r#"C:\Windows;;"C:\Program Files\nodejs";C:\a b\ "#),
        dirs(&[r"C:\Windows", r"C:\Program Files\nodejs", r"C:\a b\"])
    );
}

fn cmd(script: &str, args: &[&str]) -> Result<String, String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    cmd_line(script, &args)
}

#[test]
fn a_shim_runs_through_cmd_with_its_path_quoted() {
    let script = r"C:\Users\Ann Lee\AppData\Roaming\npm\npx.cmd";
    assert_eq!(
        cmd(
            script,
            &[
                "-y",
                "@modelcontextprotocol/server-filesystem",
                r"C:\Users\Ann Lee\My Docs"
            ]
        )
        .expect("line"),
        r#"/e:ON /v:OFF /d /s /c ""C:\Users\Ann Lee\AppData\Roaming\npm\npx.cmd" -y @modelcontextprotocol/server-filesystem "C:\Users\Ann Lee\My Docs"""#
    );
    assert_eq!(
        cmd(script, &[]).expect("line"),
        format!("/e:ON /v:OFF /d /s /c \"\"{script}\"\"")
    );
}

#[test]
fn cmd_arguments_are_quoted_against_its_metacharacters() {
    let line = |a: &str| {
        let l = cmd(r"C:\x.cmd", &[a]).expect("line");
        l[r#"/e:ON /v:OFF /d /s /c ""C:\x.cmd" "#.len()..l.len() - 1].to_owned()
    };
    assert_eq!(line("plain-1.0"), "plain-1.0");
    assert_eq!(line(""), r#""""#);
    assert_eq!(line("a b"), r#""a b""#);
    assert_eq!(line("a&whoami"), r#""a&whoami""#);
    assert_eq!(line("x|y>z^"), r#""x|y>z^""#);
    // An inner quote is doubled, so cmd.exe never sees the quoting end.
    assert_eq!(line(r#"say "hi" & exit"#), r#""say ""hi"" & exit""#);
    assert_eq!(line(r#"{"a":1}"#), r#""{""a"":1}""#);
    // Backslashes before a quote are doubled; a trailing one is doubled inside the quotes.
    assert_eq!(line(r#"a\"b"#), r#""a\\""b""#);
    assert_eq!(line(r"C:\dir\"), r#""C:\dir\\""#);
    // `%PATH%` is never expanded.
    assert_eq!(line("%PATH%"), r#""%%cd:~,%PATH%%cd:~,%""#);
    assert!(cmd(r"C:\x.cmd", &["a\nb"]).is_err());
    assert!(cmd(r"C:\x.cmd", &["a\rb"]).is_err());
    assert!(cmd(r#"C:\x".cmd"#, &[]).is_err());
}

#[test]
fn the_shell_command_is_encoded_as_utf16_base64() {
    // `dir` in UTF-16LE is 64 00 69 00 72 00.
    assert_eq!(powershell_encoded("dir"), "ZABpAHIA");
    assert_eq!(powershell_encoded(""), "");
    // A quote or a newline travels untouched: nothing on the command line to escape.
    let e = powershell_encoded("echo \"a b\"\n'c'");
    assert!(e
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)));
    let script = powershell_script("git status");
    assert!(script.contains("\ngit status\n"));
    assert!(script.contains("exit $LASTEXITCODE"));
}

#[cfg(unix)]
#[test]
fn on_unix_a_program_and_the_shell_are_as_written() {
    let cmd = program("npx", &["-y".to_owned(), "a b".to_owned()]).expect("cmd");
    let std = cmd.as_std();
    assert_eq!(std.get_program(), "npx");
    let args: Vec<_> = std.get_args().collect();
    assert_eq!(args, ["-y", "a b"]);
    let sh = shell("echo hi");
    let args: Vec<_> = sh.as_std().get_args().collect();
    assert_eq!(sh.as_std().get_program(), "bash");
    assert_eq!(args, ["-c", "echo hi"]);
    assert_eq!(SHELL_NAME, "bash");
}

#[test]
fn windows_passes_its_own_variables_ignoring_case() {
    let common = ["HOME", "PATH", "LANG"];
    assert!(windows_inherited("Path", &common));
    assert!(windows_inherited("SYSTEMROOT", &common));
    assert!(windows_inherited("ProgramFiles(x86)", &common));
    assert!(windows_inherited("home", &common));
    assert!(!windows_inherited("OPENAI_API_KEY", &common));
    assert!(!windows_inherited("AWS_SECRET_ACCESS_KEY", &common));
    // Unix keeps its exact, case-sensitive allowlist.
    assert_eq!(inherited_env("Path", &common), cfg!(windows));
}

#[cfg(not(windows))]
#[test]
fn locate_finds_what_a_spawn_runs() {
    let dir = std::env::temp_dir().join(format!("h9-locate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("tool");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    let plain = dir.join("plain");
    std::fs::write(&plain, "").unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = std::ffi::OsString::from(format!("/nonexistent:{}", dir.display()));
    let cwd = Path::new("/");
    assert_eq!(locate("tool", Some(&path), cwd), Some(exe.clone()));
    // Not executable, not there, no PATH: nothing.
    assert_eq!(locate("plain", Some(&path), cwd), None);
    assert_eq!(locate("nope", Some(&path), cwd), None);
    assert_eq!(locate("tool", None, cwd), None);
    assert_eq!(locate("", Some(&path), cwd), None);
    // A path is that path, relative to the working directory.
    assert_eq!(locate("./tool", None, &dir), Some(dir.join("./tool")));
    assert_eq!(locate(&plain.display().to_string(), None, cwd), None);
    let _ = std::fs::remove_dir_all(&dir);
}
