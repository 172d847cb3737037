//! Programs and the shell on Unix (and every target but Windows): as written; `execvp`
//! searches `PATH`.

use tokio::process::Command;

pub(super) const SHELL_NAME: &str = "bash";

pub(super) const SHELL_INVOCATION: &str = "bash -c";

pub(super) fn program(program: &str, args: &[String]) -> Result<Command, String> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    Ok(cmd)
}

pub(super) fn locate(
    program: &str,
    path: Option<&std::ffi::OsStr>,
    cwd: &std::path::Path,
) -> Option<std::path::PathBuf> {
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && crate::fs::is_executable(&m))
    };
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let p = cwd.join(program);
        return runnable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| cwd.join(d).join(program))
        .find(|p| runnable(p))
}

pub(super) fn shell(command: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(command);
    cmd
}
