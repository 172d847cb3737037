//! The optional Landlock sandbox of a stdio server. The ruleset is built in the parent (every
//! path opened there); between fork and exec the child only calls `prctl(PR_SET_NO_NEW_PRIVS)`
//! and `landlock_restrict_self` on the prepared ruleset fd, two async-signal-safe syscalls.
//!
//! Inside: read and execute anywhere; write only the server's working directory, the project
//! directory, the temp directory, `/dev/shm`, the device files in [`DEVICES`] and the listed
//! paths; with `network: false`, no TCP connect or bind and no abstract unix socket of the
//! outside; no signal to a process outside the sandbox (Landlock ABI 6+).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

use crate::spec::SandboxSpec;

/// Lowers the Landlock ABI harness9 believes the kernel has (`0`: none), to see how a server
/// fares on an older kernel; it never raises it.
pub const ABI_OVERRIDE_VAR: &str = "HARNESS9_LANDLOCK_ABI";

/// Device files a sandboxed server may write when they exist. Not `/dev/tty`: a server that
/// writes the terminal would draw over the TUI, past its escape-sequence cleaning.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The first Landlock ABI that restricts TCP (Linux 6.7).
const NET_ABI: i32 = 4;
/// The first Landlock ABI with scopes: signals, abstract unix sockets (Linux 6.12).
const SCOPE_ABI: i32 = 6;

/// A ruleset ready to be enforced in a child.
pub(crate) struct Prepared {
    fd: OwnedFd,
}

impl Prepared {
    /// Makes `cmd`'s child enforce the ruleset before it execs. Keep `self` alive until
    /// `spawn` has returned (the child uses the fd number); the fd is close-on-exec, so the
    /// server never holds it.
    pub(crate) fn install(&self, cmd: &mut tokio::process::Command) {
        let fd = self.fd.as_raw_fd();
        // SAFETY: the closure runs in the child between fork and exec and does only
        // async-signal-safe work: two raw syscalls and reading errno; no allocation, no lock.
        unsafe {
            cmd.pre_exec(move || restrict(fd));
        }
    }
}

fn restrict(fd: i32) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) has no memory-safety preconditions.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: landlock_restrict_self(ruleset_fd, flags = 0) takes no pointer.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's Landlock ABI version (lowered by [`ABI_OVERRIDE_VAR`]), or why there is none.
pub fn kernel_abi() -> Result<i32, String> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attr, size 0 and the VERSION flag the call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    let real = if v < 0 {
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => Err(
                "this kernel has Landlock but it is disabled (add landlock to the lsm= boot parameter)"
                    .to_owned(),
            ),
            _ => Err(
                "this kernel has no Landlock (it needs Linux 5.13 or later); use such a kernel or set \"sandbox\": false for this server"
                    .to_owned(),
            ),
        }
    } else {
        Ok(i32::try_from(v).unwrap_or(i32::MAX))
    };
    let pretend = std::env::var(ABI_OVERRIDE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok());
    match (real, pretend) {
        (Ok(_), Some(n)) if n < 1 => Err(format!(
            "this kernel has no Landlock ({ABI_OVERRIDE_VAR}={n} says so; unset it to use the kernel's)"
        )),
        (Ok(r), Some(n)) => Ok(r.min(n)),
        (real, _) => real,
    }
}

/// Builds the ruleset for a server whose working directory is `cwd`; the error says why the
/// sandbox cannot be applied (the server must then not start).
pub(crate) fn prepare(sb: &SandboxSpec, cwd: &Path) -> Result<Prepared, String> {
    let n = kernel_abi()?;
    if !sb.network && n < NET_ABI {
        let how = match std::env::var(ABI_OVERRIDE_VAR) {
            Ok(v) => format!(" ({ABI_OVERRIDE_VAR}={v})"),
            Err(_) => String::new(),
        };
        return Err(format!(
            "\"network\": false needs Landlock ABI {NET_ABI} (Linux 6.7 or later) and this kernel has ABI {n}{how}; allow the network with \"sandbox\": {{\"network\": true}} or use a newer kernel"
        ));
    }
    let abi = ABI::from(n);
    let landlock = |e: landlock::RulesetError| format!("landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock)?;
    if !sb.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(landlock)?;
    }
    if n >= SCOPE_ABI {
        let scopes = if sb.network {
            Scope::Signal.into()
        } else {
            Scope::from_all(abi)
        };
        ruleset = ruleset.scope(scopes).map_err(landlock)?;
    }
    let mut created = ruleset.create().map_err(landlock)?;
    let open = |p: &Path| {
        PathFd::new(p).map_err(|e| format!("cannot open {}: {}", p.display(), source_of(&e)))
    };
    created = created
        .add_rule(PathBeneath::new(
            open(Path::new("/"))?,
            AccessFs::from_read(abi),
        ))
        .map_err(landlock)?;
    let temp = std::env::temp_dir();
    let mut writable: Vec<&Path> = vec![cwd, &sb.project_dir, &temp];
    writable.extend(sb.writable.iter().map(|p| p.as_path()));
    let shm = Path::new("/dev/shm");
    let devices = DEVICES.iter().map(Path::new).chain([shm]);
    for (path, required) in writable
        .into_iter()
        .map(|p| (p, true))
        .chain(devices.map(|p| (p, false)))
    {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(_) if !required => continue,
            Err(e) => {
                return Err(format!(
                    "writable path {} cannot be used: {}; create it or take it out of \"writable\"",
                    path.display(),
                    crate::server::process::plain_io_error(&e)
                ))
            }
        };
        let access = if meta.is_dir() {
            AccessFs::from_all(abi)
        } else {
            AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(open(path)?, access))
            .map_err(landlock)?;
    }
    let fd: Option<OwnedFd> = created.into();
    match fd {
        Some(fd) => Ok(Prepared { fd }),
        None => Err("landlock: the kernel did not create a ruleset".to_owned()),
    }
}

fn source_of(e: &landlock::PathFdError) -> String {
    match e {
        landlock::PathFdError::OpenCall { source, .. } => {
            crate::server::process::plain_io_error(source)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_kernel_has_landlock_with_tcp_rules() {
        // The machine this is developed on has ABI 7; a kernel without Landlock fails here
        // with the message a server's status would show.
        let n = kernel_abi().unwrap_or_else(|e| panic!("{e}"));
        assert!(n >= NET_ABI, "ABI {n}");
    }

    #[test]
    fn a_missing_writable_path_is_named() {
        let sb = SandboxSpec {
            project_dir: std::env::temp_dir(),
            writable: vec!["/nonexistent/harness9-sandbox".into()],
            network: true,
        };
        let Err(e) = prepare(&sb, Path::new("/")) else {
            panic!("prepared a sandbox with a missing path");
        };
        assert!(
            e.starts_with("writable path /nonexistent/harness9-sandbox cannot be used: No such file or directory"),
            "{e}"
        );
    }
}
