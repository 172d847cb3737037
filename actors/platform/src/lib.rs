//! The one platform seam of harness9: everything that differs between operating systems sits
//! behind this crate's platform-neutral API, so no other crate of the workspace names a
//! `cfg(target_os)`, `libc` or `std::os::unix`. Each module's `mod.rs` is neutral and selects
//! one implementation per target: Linux, macOS (libproc, Seatbelt, the Keychain) and Windows
//! (Job Objects, `PATHEXT` and `.cmd` shims, reparse-point refusal, user-only DACLs, the
//! Credential Manager). Linux runs in CI; the Windows build runs under Wine
//! (`scripts/windows-run.sh`); macOS is type-checked (`scripts/cross-check.sh`). What a target
//! lacks (a sandbox on Windows, a subreaper outside Linux) is a stub that fails with a clear
//! "<what> is not available on <OS> yet" rather than doing something silently different.
//!
//! - [`process`]: a child in a process group of its own, signals to a group or a process, the
//!   process-wide list of live groups the panic hook and exit paths kill, exit statuses, the
//!   pipe buffer behind a child's stdout.
//! - [`command`]: how a program and the agent's shell are started (on Windows: `PATH` with
//!   `PATHEXT`, `.cmd` shims through `cmd.exe`, PowerShell).
//! - [`dirs`]: where the configuration and the state are kept (XDG, `~/Library`, `%APPDATA%`).
//! - [`descendants`]: the child subreaper, discovery of every descendant, the exit sweep and the
//!   orphan reaper.
//! - [`fs`]: private files and directories (modes, never through a symlink), ownership.
//! - [`sandbox`]: the confinement of a child (Landlock and seccomp on Linux).
//! - [`open`]: the system opener, started detached.
//! - [`signal`]: the signals that ask harness9 to stop.
//! - [`secrets`]: the system's credential store (Keychain, Credential Manager; none on Linux).
//!
//! Process ids and group ids are `i32` (`pid_t`) here; a group is named by its leader's pid.

pub mod command;
pub mod descendants;
pub mod dirs;
pub mod fs;
pub mod open;
pub mod process;
pub mod sandbox;
pub mod secrets;
pub mod signal;

/// An io error without Rust's ` (os error N)` suffix: `No such file or directory`.
pub fn plain_io_error(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Fills `buf` from the operating system's random source (`/dev/urandom` on Unix, the system
/// preferred generator of `BCryptGenRandom` on Windows).
pub fn random_bytes(buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::io::Read as _;
        std::fs::File::open("/dev/urandom")?.read_exact(buf)
    }
    #[cfg(windows)]
    {
        use windows_sys::Win32::Security::Cryptography::{
            BCryptGenRandom, BCRYPT_USE_SYSTEM_PREFERRED_RNG,
        };
        for chunk in buf.chunks_mut(u32::MAX as usize) {
            // SAFETY: the pointer and length name `chunk`, which outlives the call; a null
            // algorithm handle is allowed with BCRYPT_USE_SYSTEM_PREFERRED_RNG.
            let status = unsafe {
                BCryptGenRandom(
                    std::ptr::null_mut(),
                    chunk.as_mut_ptr(),
                    chunk.len() as u32,
                    BCRYPT_USE_SYSTEM_PREFERRED_RNG,
                )
            };
            if status < 0 {
                return Err(std::io::Error::other(format!(
                    "the system's random source failed (status {status:#x})"
                )));
            }
        }
        Ok(())
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = buf;
        Err(not_available("a random source"))
    }
}

/// This system's name as users write it: `Linux`, `macOS`, `Windows`.
pub fn os_name() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "macOS",
        "windows" => "Windows",
        "freebsd" => "FreeBSD",
        other => other,
    }
}

/// The error of a stub: `<what> is not available on <OS> yet`.
#[cfg_attr(any(target_os = "linux", target_os = "macos"), allow(dead_code))]
pub(crate) fn not_available(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not available on {} yet", os_name()),
    )
}

#[cfg(all(test, unix))]
mod tests {
    #[test]
    fn an_io_error_reads_without_its_number() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(super::plain_io_error(&e), "No such file or directory");
        let mut b = [0u8; 16];
        super::random_bytes(&mut b).expect("random");
        assert_ne!(b, [0u8; 16]);
    }
}
