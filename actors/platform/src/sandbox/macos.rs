//! The sandbox on macOS: Seatbelt. The child runs as `/usr/bin/sandbox-exec -p PROFILE
//! -D NAME=PATH ... -- program args`, with the profile of `seatbelt.rs`; `sandbox-exec`
//! applies it and execs the program in the same process (so the process group, the pid and
//! the exit status are the program's), and every process it starts inherits it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::seatbelt::{profile, Profile};
use super::{Rules, NET_ABI};

/// Where `sandbox-exec` is: always this path, never looked up in `PATH`.
const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// A profile ready for one spawn.
pub struct Prepared {
    profile: Profile,
}

impl Prepared {
    /// `cmd` run under the profile: `sandbox-exec` with the profile and its parameters, then
    /// `cmd`'s program and arguments; its working directory and the variables it sets are
    /// carried over. Call it before the rest (stdio, the process group, `env_clear`), which
    /// a new command cannot read back.
    pub fn wrap(&self, cmd: tokio::process::Command) -> tokio::process::Command {
        let inner = cmd.as_std();
        let mut out = tokio::process::Command::new(SANDBOX_EXEC);
        out.arg("-p").arg(&self.profile.text);
        for (name, path) in &self.profile.params {
            let mut d = OsString::from(format!("{name}="));
            d.push(path.as_os_str());
            out.arg("-D").arg(d);
        }
        out.arg("--")
            .arg(inner.get_program())
            .args(inner.get_args());
        if let Some(dir) = inner.get_current_dir() {
            out.current_dir(dir);
        }
        for (k, v) in inner.get_envs() {
            match v {
                Some(v) => out.env(k, v),
                None => out.env_remove(k),
            };
        }
        out
    }
}

/// Why there is no sandbox here, when `sandbox-exec` is missing.
fn missing() -> String {
    format!("{SANDBOX_EXEC} is missing, so Seatbelt cannot confine the child; turn the sandbox off (\"sandbox\": false for a server)")
}

/// The sandbox's version here: Seatbelt keeps every promise Landlock's newest ABI does, so
/// it counts as at least [`NET_ABI`]; an error when `sandbox-exec` is missing.
pub fn kernel_abi() -> Result<i32, String> {
    if !Path::new(SANDBOX_EXEC).is_file() {
        return Err(missing());
    }
    Ok(NET_ABI.max(6))
}

/// Read-only carve-outs need nothing more than the profile's deny rules (Seatbelt's last
/// matching rule wins).
pub fn carve_out_check() -> Result<(), String> {
    kernel_abi().map(|_| ())
}

/// `path` resolved (Seatbelt matches real paths: `/var` is `/private/var`); the error names it.
fn real(what: &str, path: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(path)
        .map_err(|e| format!("{what} {}: {}", path.display(), crate::plain_io_error(&e)))
}

/// The profile of a child with `sb`'s rules; fails when `sandbox-exec` is missing or a path
/// does not exist.
pub fn prepare(sb: &Rules<'_>) -> Result<Prepared, String> {
    kernel_abi()?;
    let cwd = sb.cwd.map(|c| real("cwd", c)).transpose()?;
    let scratch = real("temp directory", sb.scratch)?;
    let writable = sb
        .writable
        .iter()
        .map(|w| real("writable path", w))
        .collect::<Result<Vec<_>, _>>()?;
    let mut all: Vec<PathBuf> = cwd.iter().cloned().collect();
    all.push(scratch.clone());
    all.extend(writable.iter().cloned());
    let read_only = super::carve_outs(&all, sb.read_only)?;
    Ok(Prepared {
        profile: profile(&Rules {
            cwd: cwd.as_deref(),
            scratch: &scratch,
            writable: &writable,
            network: sb.network,
            read_only: &read_only,
        }),
    })
}

pub(super) fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    crate::random_bytes(buf)
}
