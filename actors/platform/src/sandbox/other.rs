//! The sandbox where there is none (Windows, issue 25): every
//! [`prepare`] fails with a clear "not available", so a child that asks for a sandbox never
//! runs unconfined.

use super::Rules;

/// Nothing to enforce (never made: [`prepare`] always fails).
pub struct Prepared {
    _none: (),
}

impl Prepared {
    /// Never reached: no `Prepared` exists here.
    pub fn wrap(&self, cmd: tokio::process::Command) -> tokio::process::Command {
        cmd
    }
}

/// Why there is no sandbox here.
fn unavailable() -> String {
    format!(
        "the sandbox is not available on {} yet; turn the sandbox off (\"sandbox\": false for a server)",
        crate::os_name()
    )
}

/// The sandbox's version on this system: none.
pub fn kernel_abi() -> Result<i32, String> {
    Err(unavailable())
}

/// Always fails: the sandbox is not available here yet.
pub fn prepare(_sb: &Rules<'_>) -> Result<Prepared, String> {
    Err(unavailable())
}

pub(super) fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    crate::random_bytes(buf)
}
