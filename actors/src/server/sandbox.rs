//! The optional sandbox of a stdio server, through the platform seam
//! (`harness9_platform::sandbox`, Landlock and seccomp on Linux): a server's `sandbox` entry
//! ([`SandboxSpec`]) as the rules the child enforces before it execs.

use std::path::{Path, PathBuf};

pub use harness9_platform::sandbox::{
    carve_out_check, kernel_abi, Prepared, Scratch, ABI_OVERRIDE_VAR, DEVICES, NET_ABI,
};

use crate::spec::SandboxSpec;

/// Builds the sandbox for a server whose entry sets the working directory `cwd` (`None`: it
/// runs in harness9's, which it may not write) and whose scratch directory is `scratch`; the
/// error says why the sandbox cannot be applied (the server must then not start). The agent's
/// own `bash` uses it too (harness9's `[permissions] shell`), through [`prepare_keeping`].
pub fn prepare(sb: &SandboxSpec, cwd: Option<&Path>, scratch: &Path) -> Result<Prepared, String> {
    prepare_keeping(sb, cwd, scratch, &[])
}

/// [`prepare`] with `read_only`: paths inside the writable set that stay read-only (the
/// agent's `bash` keeps the project's `.git` and harness9's configs; a server passes none).
pub fn prepare_keeping(
    sb: &SandboxSpec,
    cwd: Option<&Path>,
    scratch: &Path,
    read_only: &[PathBuf],
) -> Result<Prepared, String> {
    harness9_platform::sandbox::prepare(&harness9_platform::sandbox::Rules {
        cwd,
        scratch,
        writable: &sb.writable,
        network: sb.network,
        read_only,
    })
}
