//! Programs and the shell on Windows: a program resolved on `PATH` with `PATHEXT`
//! ([`super::resolve`]), a batch file run through `cmd.exe` with its own quoting
//! ([`super::cmd_line`], passed raw), the shell as Windows PowerShell with the command encoded.

use std::path::{Path, PathBuf};

use tokio::process::Command;

pub(super) const SHELL_NAME: &str = "PowerShell";

pub(super) const SHELL_INVOCATION: &str = "Windows PowerShell (powershell.exe -Command)";

/// `%SystemRoot%\System32\<exe>`: never a copy a repository planted on `PATH` or in the
/// working directory.
fn system32(exe: &str) -> PathBuf {
    let root = std::env::var_os("SystemRoot")
        .filter(|r| !r.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(r"C:\Windows"));
    root.join("System32").join(exe)
}

fn is_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

pub(super) fn program(program: &str, args: &[String]) -> Result<Command, String> {
    let dirs = std::env::var("PATH")
        .map(|p| super::split_windows_path(&p))
        .unwrap_or_default();
    let pathext = std::env::var("PATHEXT").ok();
    let exts = super::path_extensions(pathext.as_deref());
    let Some(found) = super::resolve(program, &dirs, &exts, is_file) else {
        return Err(format!(
            "{program} is not found on PATH (with the extensions {}); install it, or give its full path (\"C:\\\\Program Files\\\\...\\\\{program}.exe\") as the command",
            exts.join(" ")
        ));
    };
    if found.batch {
        let line = super::cmd_line(&found.path.to_string_lossy(), args)?;
        let mut cmd = Command::new(system32("cmd.exe"));
        cmd.raw_arg(line);
        return Ok(cmd);
    }
    let mut cmd = Command::new(found.path);
    cmd.args(args);
    Ok(cmd)
}

pub(super) fn locate(
    program: &str,
    path: Option<&std::ffi::OsStr>,
    cwd: &Path,
) -> Option<std::path::PathBuf> {
    let dirs = path
        .map(|p| super::split_windows_path(&p.to_string_lossy()))
        .unwrap_or_default();
    let pathext = std::env::var("PATHEXT").ok();
    let exts = super::path_extensions(pathext.as_deref());
    let program = if super::is_path(program)
        && !super::has_drive(program)
        && !program.starts_with(['/', '\\'])
    {
        cwd.join(program).to_string_lossy().into_owned()
    } else {
        program.to_owned()
    };
    super::resolve(&program, &dirs, &exts, is_file).map(|r| r.path)
}

pub(super) fn shell(command: &str) -> Command {
    let mut cmd = Command::new(system32(r"WindowsPowerShell\v1.0\powershell.exe"));
    cmd.args([
        "-NoLogo",
        "-NoProfile",
        "-NonInteractive",
        "-ExecutionPolicy",
        "Bypass",
        "-EncodedCommand",
    ])
    .arg(super::powershell_encoded(&super::powershell_script(
        command,
    )));
    cmd
}
