//! The optional sandbox of a stdio server, through the platform seam
//! (`harness9_platform::sandbox`, Landlock and seccomp on Linux): a server's `sandbox` entry
//! ([`SandboxSpec`]) as the rules the child enforces before it execs. A repository's `.git`
//! that its grants cover stays read-only (its hooks and config run when the user runs git).

use std::path::{Path, PathBuf};

pub use harness9_platform::sandbox::{
    carve_out_check, kernel_abi, Prepared, Scratch, ABI_OVERRIDE_VAR, DEVICES, NET_ABI,
};

use crate::spec::SandboxSpec;

/// Builds the sandbox for a server whose entry sets the working directory `cwd` (`None`: it
/// runs in harness9's, which it may not write) and whose scratch directory is `scratch`; the
/// error says why the sandbox cannot be applied (the server must then not start). The agent's
/// own `bash` uses it too (harness9's `[permissions] shell`), through [`prepare_keeping`].
/// The `.git` of the repository each writable path (and the config's folder) lies in stays
/// read-only when a grant covers it.
pub fn prepare(sb: &SandboxSpec, cwd: Option<&Path>, scratch: &Path) -> Result<Prepared, String> {
    let roots = cwd
        .into_iter()
        .chain(sb.writable.iter().map(PathBuf::as_path))
        .chain([sb.project_dir.as_path()]);
    let mut keep: Vec<PathBuf> = roots.filter_map(repository_git).collect();
    keep.sort();
    keep.dedup();
    prepare_keeping(sb, cwd, scratch, &keep)
}

/// The `.git` (a folder or a worktree's file) of the repository `dir` lies in, if any (`dir`
/// resolved: the sandbox compares real paths).
fn repository_git(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .map(|d| d.join(".git"))
        .find(|g| std::fs::symlink_metadata(g).is_ok())
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
