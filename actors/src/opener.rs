//! The system opener: a browser (`$BROWSER`, or the one given), else `open` on macOS or
//! `xdg-open`, started detached: in a session of its own, which the exit sweep spares (a GUI
//! program it starts may outlive harness9). Tokio reaps it. Used by the OAuth login (the
//! authorization URL) and the TUI (a file to edit, a URL the user said yes to).

use std::ffi::OsStr;
use std::os::unix::process::CommandExt as _;

/// Opens `target` with `browser` (a command line, words split on whitespace), else `$BROWSER`
/// when `use_browser_env`, else the system opener. The program's name, or why it could not start.
pub fn open(
    target: &OsStr,
    browser: Option<&str>,
    use_browser_env: bool,
) -> Result<String, String> {
    let browser = browser
        .map(str::to_owned)
        .or_else(|| {
            use_browser_env
                .then(|| std::env::var("BROWSER").ok())
                .flatten()
        })
        .filter(|b| !b.trim().is_empty());
    let (program, args): (String, Vec<String>) = match &browser {
        Some(b) => {
            let mut words = b.split_whitespace().map(str::to_owned);
            (words.next().unwrap_or_default(), words.collect())
        }
        None if cfg!(target_os = "macos") => ("open".to_owned(), Vec::new()),
        None => ("xdg-open".to_owned(), Vec::new()),
    };
    let mut cmd = std::process::Command::new(&program);
    cmd.args(args)
        .arg(target)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = tokio::process::Command::from(cmd)
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    if let Some(pid) = child.id() {
        crate::server::spare_session(pid as i32);
    }
    Ok(program)
}
