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

pub(super) fn shell(command: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(command);
    cmd
}
