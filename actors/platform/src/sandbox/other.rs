//! The sandbox where there is none (Windows, issue 25): every
//! [`prepare`] fails with a clear "not available", so a child that asks for a sandbox never
//! runs unconfined.

use super::Rules;

/// Nothing to enforce (never made: [`prepare`] always fails).
pub struct Prepared {
    _none: (),
}

// Dropped after the spawn like the real ones (what the callers do everywhere).
impl Drop for Prepared {
    fn drop(&mut self) {}
}

impl Prepared {
    /// Never reached: no `Prepared` exists here.
    pub fn wrap(&self, cmd: tokio::process::Command) -> tokio::process::Command {
        cmd
    }
}

/// Why there is no sandbox here (Windows has none by design, not "yet").
fn unavailable() -> String {
    let yet = if cfg!(windows) { "" } else { " yet" };
    format!(
        "the sandbox is not available on {}{yet}; turn it off: \"sandbox\": false for a server (and no [mcp] sandbox in your settings), shell = \"off\" under [permissions] in your own settings file for the shell",
        crate::os_name()
    )
}

/// The sandbox's version on this system: none.
pub fn kernel_abi() -> Result<i32, String> {
    Err(unavailable())
}

/// No carve-out without a sandbox.
pub fn carve_out_check() -> Result<(), String> {
    Err(unavailable())
}

/// Always fails: the sandbox is not available here yet.
pub fn prepare(_sb: &Rules<'_>) -> Result<Prepared, String> {
    Err(unavailable())
}

pub(super) fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    crate::random_bytes(buf)
}
