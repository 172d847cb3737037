//! How a program and the agent's shell are started: on Unix as they are written (`execvp`
//! searches `PATH`); on Windows the way its users expect, through [`resolve`] (a bare name
//! searched on `PATH` with `PATHEXT`, so `npx` finds `npx.cmd`) and, for a `.cmd`/`.bat`
//! shim, through `cmd.exe /d /s /c` with the arguments quoted for it ([`cmd_line`]). The
//! resolver and the quoting are pure functions compiled on every target, so their tests run on
//! Linux; only the spawn differs per target.
//!
//! The shell of the `bash` tool is `bash -c` on Unix and Windows PowerShell (`powershell.exe
//! -NoProfile -NonInteractive -EncodedCommand`, present on every Windows 10 and 11) on
//! Windows: the command travels base64-encoded as UTF-16LE ([`powershell_encoded`]), so no
//! quoting of the command line can change it.

use std::path::{Path, PathBuf};

#[cfg(not(windows))]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(not(windows))]
use unix as imp;
#[cfg(windows)]
use windows as imp;

/// The agent's shell on this system: `bash` on Unix, `PowerShell` on Windows.
pub const SHELL_NAME: &str = imp::SHELL_NAME;

/// How the agent's shell takes a command, for the tool's description: `bash -c`,
/// `powershell -Command`.
pub const SHELL_INVOCATION: &str = imp::SHELL_INVOCATION;

/// A command that runs `program` with `args`: on Unix exactly `Command::new(program).args(args)`;
/// on Windows `program` resolved on `PATH` with `PATHEXT`, a `.cmd`/`.bat` run through
/// `cmd.exe`. The error names the program and what to do.
pub fn program(program: &str, args: &[String]) -> Result<tokio::process::Command, String> {
    imp::program(program, args)
}

/// The file a spawn of `program` would run, found the way [`program`] finds it: a name with a
/// separator is that path (relative to `cwd`); a bare name is searched in `path` (a `PATH`
/// value), with `PATHEXT`'s extensions on Windows. `None`: nothing executable is there.
pub fn locate(program: &str, path: Option<&std::ffi::OsStr>, cwd: &Path) -> Option<PathBuf> {
    imp::locate(program, path, cwd)
}

/// A command that runs `command` in the agent's shell ([`SHELL_NAME`]).
pub fn shell(command: &str) -> tokio::process::Command {
    imp::shell(command)
}

/// The variables a Windows program needs to start at all (Winsock fails without `SystemRoot`,
/// npm without `APPDATA`), passed to a server besides the common allowlist.
pub const WINDOWS_INHERITED_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SystemRoot",
    "SystemDrive",
    "windir",
    "ComSpec",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "CommonProgramFiles",
    "CommonProgramFiles(x86)",
    "CommonProgramW6432",
    "USERNAME",
    "USERDOMAIN",
    "COMPUTERNAME",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
];

/// Whether the variable `key` also passes from harness9's environment to a server on this
/// system, besides the common allowlist: never on Unix; on Windows the names of `common` and
/// [`WINDOWS_INHERITED_ENV`], compared ignoring case as Windows does (`Path` is `PATH`).
pub fn inherited_env(key: &str, common: &[&str]) -> bool {
    cfg!(windows) && windows_inherited(key, common)
}

/// [`inherited_env`] on Windows (pure, tested everywhere).
pub fn windows_inherited(key: &str, common: &[&str]) -> bool {
    common
        .iter()
        .chain(WINDOWS_INHERITED_ENV)
        .any(|k| k.eq_ignore_ascii_case(key))
}

/// What [`resolve`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The file to run.
    pub path: PathBuf,
    /// Whether it is a batch file (`.cmd`, `.bat`) that `cmd.exe` must run.
    pub batch: bool,
}

/// Whether `name` names a path (holds a separator or a drive), not a bare name to search.
pub fn is_path(name: &str) -> bool {
    name.contains(['/', '\\']) || has_drive(name)
}

/// Whether `name` starts with a drive letter and a colon: `C:`, `c:\x`.
pub fn has_drive(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Whether `path` is absolute the Windows way: `C:\x`, `C:/x` or a UNC `\\server\share`
/// (pure: the same answer on every target, for configs written on Windows).
pub fn is_windows_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    (has_drive(path) && b.len() >= 3 && (b[2] == b'\\' || b[2] == b'/'))
        || path.starts_with("\\\\")
        || path.starts_with("//")
}

/// The extensions of `PATHEXT` (`.COM;.EXE;.BAT;.CMD` when unset or empty), lowercase.
pub fn path_extensions(pathext: Option<&str>) -> Vec<String> {
    let list = pathext
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(".COM;.EXE;.BAT;.CMD");
    list.split(';')
        .map(str::trim)
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .map(str::to_ascii_lowercase)
        .collect()
}

fn extension_of(name: &str) -> Option<String> {
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    file.rfind('.')
        .filter(|&i| i > 0)
        .map(|i| file[i..].to_ascii_lowercase())
}

fn is_batch(path: &Path) -> bool {
    matches!(
        extension_of(&path.to_string_lossy()).as_deref(),
        Some(".cmd" | ".bat")
    )
}

/// Finds the file Windows runs for `name`, the way `cmd.exe` does (without its current-
/// directory search, which would run a file a repository planted): a name with a separator or a
/// drive is that path; a bare name is searched in each of `path_dirs` in order. In each place
/// the name as written is tried first when it already has one of `exts`, then the name with
/// each of `exts` appended (`npx` finds `npx.cmd`, `node` finds `node.exe`). `exists` says
/// whether a regular file is at a path (a closure, so the search is pure). `None`: nothing.
pub fn resolve(
    name: &str,
    path_dirs: &[PathBuf],
    exts: &[String],
    exists: impl Fn(&Path) -> bool,
) -> Option<Resolved> {
    if name.is_empty() {
        return None;
    }
    let has_ext = extension_of(name).is_some_and(|e| exts.contains(&e));
    let candidates = |base: PathBuf| {
        let mut out = Vec::new();
        if has_ext {
            out.push(base.clone());
        }
        for e in exts {
            let mut s = base.clone().into_os_string();
            s.push(e);
            out.push(PathBuf::from(s));
        }
        out
    };
    let found = |p: PathBuf| {
        let batch = is_batch(&p);
        Resolved { path: p, batch }
    };
    if is_path(name) {
        return candidates(PathBuf::from(name))
            .into_iter()
            .find(|p| exists(p))
            .map(found);
    }
    path_dirs
        .iter()
        .filter(|d| !d.as_os_str().is_empty())
        .flat_map(|d| candidates(d.join(name)))
        .find(|p| exists(p))
        .map(found)
}

/// The entries of a Windows `PATH` (`;`-separated, each maybe in double quotes), in order.
pub fn split_windows_path(path: &str) -> Vec<PathBuf> {
    path.split(';')
        .map(|e| e.trim().trim_matches('"'))
        .filter(|e| !e.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// The text after `cmd.exe` that runs the batch file `script` with `args`: `/e:ON /v:OFF /d /s
/// /c ""C:\x\npx.cmd" "a b" c"`. `/d` skips AutoRun, `/s` takes the outer quotes off, `/v:OFF`
/// keeps `!` literal. Each argument is quoted when it holds anything but letters, digits and
/// `#$*+-./:?@\_`, an inner `"` is doubled, and `%` becomes `%%cd:~,%` (an empty substring)
/// so `%VAR%` is never expanded; an argument with a line break or a NUL, or a script name with
/// `"`, is refused (cmd.exe would cut the line there).
pub fn cmd_line(script: &str, args: &[String]) -> Result<String, String> {
    if script.contains('"') || script.ends_with('\\') || script.contains(['\r', '\n', '\0']) {
        return Err(format!("{script}: not a file name cmd.exe can run"));
    }
    let mut line = format!("/e:ON /v:OFF /d /s /c \"\"{script}\"");
    for arg in args {
        if arg.contains(['\r', '\n', '\0']) {
            return Err(format!(
                "{script}: an argument holds a line break, which cmd.exe cannot pass to a batch file"
            ));
        }
        line.push(' ');
        push_batch_arg(&mut line, arg);
    }
    line.push('"');
    Ok(line)
}

fn push_batch_arg(line: &mut String, arg: &str) {
    const UNQUOTED: &str = r"#$*+-./:?@\_";
    let quote = arg.is_empty()
        || arg.ends_with('\\')
        || arg.chars().any(|c| {
            (c.is_ascii() && !(c.is_ascii_alphanumeric() || UNQUOTED.contains(c))) || c.is_control()
        });
    if quote {
        line.push('"');
    }
    let mut backslashes = 0usize;
    for c in arg.chars() {
        if c == '\\' {
            backslashes += 1;
        } else {
            if c == '"' {
                // 2n backslashes before a `"` so a program's parser keeps n, then `""`.
                line.extend(std::iter::repeat_n('\\', backslashes));
                line.push('"');
            } else if c == '%' {
                line.push_str("%%cd:~,");
            }
            backslashes = 0;
        }
        line.push(c);
    }
    if quote {
        line.extend(std::iter::repeat_n('\\', backslashes));
        line.push('"');
    }
}

/// `command` as the shell's script on Windows: its output in UTF-8, the command, then the exit code of the last
/// native program it ran as PowerShell's own (else 0, or 1 when the last command failed).
pub fn powershell_script(command: &str) -> String {
    format!(
        "[Console]::OutputEncoding = [Text.UTF8Encoding]::new($false)\n{command}\nif (-not $?) {{ if ($LASTEXITCODE) {{ exit $LASTEXITCODE }} else {{ exit 1 }} }} elseif ($LASTEXITCODE) {{ exit $LASTEXITCODE }}"
    )
}

/// `command` as `powershell -EncodedCommand` takes it: UTF-16LE, base64.
pub fn powershell_encoded(command: &str) -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = command.encode_utf16().flat_map(u16::to_le_bytes).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests;
