//! The optional sandbox of a child (a stdio server, the agent's own `bash`): what it may write
//! ([`Rules`]), built in the parent ([`prepare`]) and enforced by the child before it execs
//! ([`Prepared::wrap`]); its private scratch directory ([`Scratch`]). On Linux a Landlock
//! ruleset and a seccomp filter (see `linux.rs`); on macOS a Seatbelt profile the child runs
//! under through `sandbox-exec` (`seatbelt.rs`, `macos.rs`); elsewhere [`prepare`] fails with
//! "the sandbox is not available on Windows yet", so a sandboxed child never runs unconfined.
//!
//! Inside: read and execute anywhere but other processes' `/proc`; write only the child's own
//! `cwd` (when its entry sets one), its private scratch directory (its `$TMPDIR`, see
//! [`Scratch`]), the device files in [`DEVICES`] and the listed paths; no signal to a process
//! outside the sandbox (Landlock ABI 6+); no capability (harness9 run as root hands none on);
//! no unix socket and no io_uring (seccomp: `socketpair` and pipes stay). With
//! `network: false` also no socket of any other family (no UDP, no netlink) and no TCP connect
//! or bind (Landlock), no abstract unix socket of the outside (Landlock ABI 6+).

use std::io;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
// The profile generator is compiled everywhere, so its tests run on Linux.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod seatbelt;
#[cfg(target_os = "linux")]
use linux as imp;
#[cfg(target_os = "macos")]
use macos as imp;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use other as imp;

pub use imp::{kernel_abi, prepare, Prepared};

/// Whether this system has a sandbox at all. Where it has none (Windows), the shipped default of
/// the shell's sandbox (`[permissions] shell`) is off; a sandbox asked for explicitly fails.
pub const AVAILABLE: bool = cfg!(any(target_os = "linux", target_os = "macos"));

/// Lowers the Landlock ABI harness9 believes the kernel has (`0`: none), to see how a server
/// fares on an older kernel; it never raises it.
pub const ABI_OVERRIDE_VAR: &str = "HARNESS9_LANDLOCK_ABI";

/// The first sandbox version ([`kernel_abi`]) that can keep a child off the network: Landlock
/// ABI 4, which restricts TCP (Linux 6.7).
pub const NET_ABI: i32 = 4;

/// Device files a sandboxed child may write when they exist. Not `/dev/tty`: a server that
/// writes the terminal would draw over the TUI, past its escape-sequence cleaning.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What a sandboxed child may do beyond reading.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// Its working directory, writable (`None`: it runs in harness9's, which it may not write).
    pub cwd: Option<&'a Path>,
    /// Its private scratch directory ([`Scratch::path`]), writable.
    pub scratch: &'a Path,
    /// Further writable paths (each must exist).
    pub writable: &'a [PathBuf],
    /// Whether it may use the network (TCP, UDP, address lookups; never a unix socket).
    pub network: bool,
}

/// A sandboxed child's private scratch directory, its `$TMPDIR`: created by harness9 in the
/// temp directory with mode 0700, an unpredictable name and `mkdir` (which fails on anything
/// already there, a planted symlink included); removed with everything in it when dropped
/// (when the child's process has exited). The shared temp directory itself is not writable
/// inside the sandbox, so a server can plant nothing where harness9 or anyone else writes.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Makes a fresh directory in the temp directory; the error names it.
    pub fn create() -> Result<Scratch, String> {
        let base = std::env::temp_dir();
        let mut last = String::new();
        for _ in 0..8 {
            let mut bytes = [0u8; 16];
            if let Err(e) = imp::fill_random(&mut bytes) {
                return Err(format!(
                    "cannot make a private temp directory: no random name ({e})"
                ));
            }
            let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let path = base.join(format!("harness9-sbx-{name}"));
            match crate::fs::create_dir(&path, false, 0o700) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    last = crate::plain_io_error(&e);
                    break;
                }
            }
        }
        Err(format!(
            "cannot make a private temp directory in {}: {last}",
            base.display()
        ))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // `remove_dir_all` does not follow symlinks the server left inside.
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::debug!(target: "mcp", "cannot remove {}: {e}", self.path.display());
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_private_and_removed_when_dropped() {
        let s = Scratch::create().expect("scratch");
        let p = s.path().to_path_buf();
        let meta = std::fs::symlink_metadata(&p).expect("meta");
        assert!(meta.is_dir());
        assert_eq!(crate::fs::mode_of(&meta) & 0o777, 0o700);
        drop(s);
        assert!(!p.exists());
    }
}
