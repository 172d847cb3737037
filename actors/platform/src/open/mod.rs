//! The system opener (`xdg-open`; `open` on macOS) and a detached start: the opened program
//! runs in a session of its own, which the exit sweep spares (a GUI program it starts may
//! outlive harness9). What may be opened is the caller's policy.

use std::ffi::OsStr;

#[cfg(not(unix))]
mod other;
#[cfg(unix)]
mod unix;
#[cfg(not(unix))]
use other as imp;
#[cfg(unix)]
use unix as imp;

/// The program that opens a file or URL with the user's default application here.
pub fn system_opener() -> &'static str {
    imp::SYSTEM_OPENER
}

/// Whether handing a file to the system opener can show it: always on macOS and Windows (a
/// desktop is the only session there); elsewhere a graphical session with `xdg-open` on `PATH`.
pub fn has_desktop_opener() -> bool {
    if imp::ALWAYS_A_DESKTOP {
        return true;
    }
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    display && on_path(imp::SYSTEM_OPENER)
}

/// Whether an executable `program` is in a folder of `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p)
            .any(|d| std::fs::metadata(d.join(program)).is_ok_and(|m| crate::fs::is_executable(&m)))
    })
}

/// Starts `program` with `args` detached (stdio closed, a session of its own that the exit
/// sweep spares; tokio reaps it). Needs a tokio runtime. The error names the program.
pub fn spawn_detached(program: &str, args: &[&OsStr]) -> Result<(), String> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    imp::detach(&mut cmd);
    let child = tokio::process::Command::from(cmd)
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    if let Some(pid) = child.id() {
        crate::descendants::spare_session(pid as i32);
    }
    Ok(())
}
