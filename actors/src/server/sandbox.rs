//! The optional sandbox of a stdio server, through the platform seam
//! (`harness9_platform::sandbox`, Landlock and seccomp on Linux): a server's `sandbox` entry
//! ([`SandboxSpec`]) as the rules the child enforces before it execs.

use std::path::Path;

pub use harness9_platform::sandbox::{
    kernel_abi, Prepared, Scratch, ABI_OVERRIDE_VAR, DEVICES, NET_ABI,
};

use crate::spec::SandboxSpec;

/// Builds the sandbox for a server whose entry sets the working directory `cwd` (`None`: it
/// runs in harness9's, which it may not write) and whose scratch directory is `scratch`; the
/// error says why the sandbox cannot be applied (the server must then not start). The agent's
/// own `bash` uses it too (harness9's `[permissions] shell`).
pub fn prepare(sb: &SandboxSpec, cwd: Option<&Path>, scratch: &Path) -> Result<Prepared, String> {
    harness9_platform::sandbox::prepare(&harness9_platform::sandbox::Rules {
        cwd,
        scratch,
        writable: &sb.writable,
        network: sb.network,
    })
}
