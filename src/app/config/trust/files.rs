//! What a server runs from the repository: its working directory and program resolved as a
//! spawn would find them, the repository's root, and the files inside it that its program and
//! arguments name (what an approval hashes, what the shell's sandbox keeps read-only).

use std::path::{Path, PathBuf};

use harness9_actors::Pinned;
use serde_json::json;

/// Where a stdio server will run: its `cwd` (relative to harness9's working directory), else
/// harness9's working directory; canonical when it exists.
pub fn resolved_cwd(cwd: Option<&Path>) -> PathBuf {
    let here = std::env::current_dir().unwrap_or_default();
    let dir = match cwd {
        Some(c) => here.join(c),
        None => here,
    };
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// The program a stdio server's `command` will execute, canonical: a command with a `/`
/// relative to `cwd`, a bare name looked up in `PATH` (the entry's own `PATH` when its env
/// sets one, as the spawn does); `None` when nothing executable is found.
pub fn resolved_program(command: &str, env: &[(String, String)], cwd: &Path) -> Option<PathBuf> {
    found_program(command, env, cwd).and_then(|p| std::fs::canonicalize(p).ok())
}

/// [`resolved_program`] as found, before its links are resolved (a `node_modules/.bin`
/// entry as the spawn names it).
pub fn found_program(command: &str, env: &[(String, String)], cwd: &Path) -> Option<PathBuf> {
    let executable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| harness9_platform::fs::is_executable(&m));
    if command.is_empty() {
        return None;
    }
    if command.contains('/') {
        return Some(cwd.join(command));
    }
    let path = entry_path(env).unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| cwd.join(dir).join(command))
        .find(|p| executable(p))
}

/// The `PATH` a stdio server's command is looked up in: its entry's own when its env sets one
/// (as the spawn does), else ours.
pub fn entry_path(env: &[(String, String)]) -> Option<std::ffi::OsString> {
    env.iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
}

/// The directory a project config's repository controls: the repository root (the nearest
/// directory holding `.git` above the config) or else the config's own directory
/// (`.vscode/mcp.json`: the one above `.vscode`); canonical, `None` when it cannot be
/// resolved.
pub fn repository_root(config_path: &Path) -> Option<PathBuf> {
    let file = std::fs::canonicalize(config_path).ok()?;
    let mut dir = file.parent()?;
    if dir.file_name().is_some_and(|n| n == ".vscode") {
        dir = dir.parent()?;
    }
    Some(repository_of(dir))
}

/// The repository `dir` (canonical) is in: the nearest directory holding `.git` from `dir`
/// up, else `dir`.
fn repository_of(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// The files inside `root` a stdio server executes or is handed: its `program` and every
/// argument (or the value of a `--flag=value`) that names an existing file, relative to
/// `cwd`; canonical (a symlink, such as a `node_modules/.bin` entry, by the file it resolves
/// to), each once.
pub fn files_in(root: &Path, program: Option<&Path>, args: &[String], cwd: &Path) -> Vec<PathBuf> {
    named_files_in(root, program, args, cwd)
        .into_iter()
        .map(|(_, real)| real)
        .collect()
}

/// [`files_in`], each file as the spawn names it and as it resolves.
fn named_files_in(
    root: &Path,
    program: Option<&Path>,
    args: &[String],
    cwd: &Path,
) -> Vec<(PathBuf, PathBuf)> {
    let mut out: Vec<(PathBuf, PathBuf)> = Vec::new();
    let named = args.iter().flat_map(|a| {
        let value = a
            .strip_prefix('-')
            .and_then(|f| f.split_once('='))
            .map(|(_, v)| v);
        std::iter::once(a.as_str()).chain(value)
    });
    let candidates = program
        .map(Path::to_path_buf)
        .into_iter()
        .chain(named.filter(|a| !a.is_empty()).map(|a| cwd.join(a)));
    for p in candidates {
        let Ok(real) = std::fs::canonicalize(&p) else {
            continue;
        };
        if real.starts_with(root) && real.is_file() && !out.iter().any(|(_, r)| *r == real) {
            out.push((p, real));
        }
    }
    out
}

/// The directories a repository controls for a server of the config at `config_path`: the
/// config's [`repository_root`] and the working directory's (a `--config` file elsewhere may
/// still run the project's scripts).
pub fn project_roots(config_path: &Path) -> Vec<PathBuf> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut roots: Vec<PathBuf> = repository_root(config_path).into_iter().collect();
    if let Ok(here) = std::fs::canonicalize(&here) {
        let r = repository_of(&here);
        if !roots.contains(&r) {
            roots.push(r);
        }
    }
    roots
}

/// [`files_in`] (under any of `roots`), each with its content: what an approval of a project
/// server also vouches for, so a script rewritten after it is approved again before it runs
/// (and, pinned in the spec, checked again before every start). A file that cannot be read is
/// left out of the pins and named in the fingerprint as unreadable.
pub(super) fn repository_files(
    roots: &[PathBuf],
    program: Option<&Path>,
    args: &[String],
    cwd: &Path,
) -> (Vec<serde_json::Value>, Vec<Pinned>) {
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    for root in roots {
        for (named, real) in named_files_in(root, program, args, cwd) {
            if !files.iter().any(|(_, r)| *r == real) {
                files.push((named, real));
            }
        }
    }
    let mut pins = Vec::new();
    let shown = files
        .into_iter()
        .map(|(named, p)| {
            let hash = match Pinned::of(&named, &p) {
                Ok(pin) => {
                    let h = pin.content.clone();
                    pins.push(pin);
                    h
                }
                Err(e) => format!("unreadable: {e}"),
            };
            json!({"path": p.display().to_string(), "content": hash})
        })
        .collect();
    (shown, pins)
}
