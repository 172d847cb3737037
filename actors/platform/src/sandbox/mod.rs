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

pub use imp::{carve_out_check, kernel_abi, prepare, Prepared};

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
    /// Paths inside the writable ones that stay read-only, with everything under them (a
    /// project's `.git`, the configs harness9 reads). Those that do not exist or lie outside
    /// the writable set are left out; one that is a symbolic link, or reached through one
    /// inside the writable set, is refused (the child could swap the link). On Linux they
    /// need a mount namespace ([`carve_out_check`]); on macOS they are denied in the profile.
    pub read_only: &'a [PathBuf],
}

/// The paths of `read_only` to keep read-only for a child that may write `writable` (real
/// paths): each resolved, those missing or outside `writable` left out, none under another;
/// the error names a path that cannot be kept (a symbolic link the child could re-point, a
/// relative path, one that cannot be resolved).
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
pub(crate) fn carve_outs(
    writable: &[PathBuf],
    read_only: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let inside = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut out: Vec<PathBuf> = Vec::new();
    for p in read_only {
        let plain = p.is_absolute()
            && p.components().all(|c| {
                !matches!(
                    c,
                    std::path::Component::ParentDir | std::path::Component::CurDir
                )
            });
        if !plain {
            return Err(format!(
                "cannot keep {} read-only: it is not a plain absolute path",
                p.display()
            ));
        }
        match std::fs::symlink_metadata(p) {
            Ok(_) => {}
            // Nothing there (or no folder to hold it): nothing to keep.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                continue
            }
            Err(e) => {
                return Err(format!(
                    "cannot keep {} read-only: {}",
                    p.display(),
                    crate::plain_io_error(&e)
                ))
            }
        }
        // A link the child may replace (its folder is writable) would let it point the
        // path harness9 reads somewhere else: refused, wherever it is on the way.
        for a in p.ancestors() {
            let is_link = std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink());
            let Some(parent) = a.parent() else { continue };
            if is_link && std::fs::canonicalize(parent).is_ok_and(|d| inside(&d)) {
                let to = std::fs::read_link(a)
                    .map(|t| format!(" (to {})", t.display()))
                    .unwrap_or_default();
                return Err(format!(
                    "cannot keep {} read-only: {} is a symbolic link{to} in a writable folder, which the sandboxed command could point elsewhere; replace the link with what it points at",
                    p.display(),
                    a.display()
                ));
            }
        }
        let real = std::fs::canonicalize(p).map_err(|e| {
            format!(
                "cannot keep {} read-only: {}",
                p.display(),
                crate::plain_io_error(&e)
            )
        })?;
        if inside(&real) {
            out.push(real);
        }
    }
    out.sort();
    out.dedup();
    // One under another is covered by it (the outer one is read-only with all it holds).
    let all = out.clone();
    out.retain(|p| !all.iter().any(|o| o != p && p.starts_with(o)));
    Ok(out)
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

    /// A fresh directory for a test, removed when dropped.
    struct Dir(PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("h9-carve-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        if let Err(e) = std::fs::create_dir_all(&d) {
            panic!("{}: {e}", d.display());
        }
        Dir(std::fs::canonicalize(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())))
    }

    #[test]
    fn carve_outs_keep_what_exists_inside_the_writable_set_once() {
        let d = dir("keep");
        let proj = d.0.join("proj");
        let other = d.0.join("other");
        for p in [proj.join(".git/hooks"), other.clone()] {
            std::fs::create_dir_all(p).expect("mkdir");
        }
        std::fs::write(proj.join("harness9.toml"), "").expect("write");
        std::fs::write(other.join("x.toml"), "").expect("write");
        let got = carve_outs(
            std::slice::from_ref(&proj),
            &[
                proj.join(".git"),
                proj.join(".git/config"),
                proj.join(".git/hooks"),
                proj.join("harness9.toml"),
                proj.join("harness9.toml"),
                proj.join("missing.json"),
                proj.join("missing/deeper.json"),
                proj.join("harness9.toml/under-a-file"),
                other.join("x.toml"),
            ],
        )
        .expect("carve");
        assert_eq!(got, vec![proj.join(".git"), proj.join("harness9.toml")]);
    }

    #[test]
    fn carve_outs_refuse_a_link_the_child_could_repoint_and_relative_paths() {
        let d = dir("link");
        let proj = d.0.join("proj");
        let outside = d.0.join("outside");
        std::fs::create_dir_all(proj.join("real")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(proj.join("real/cfg.json"), "").expect("write");
        std::fs::write(outside.join("cfg.json"), "").expect("write");
        std::os::unix::fs::symlink(proj.join("real/cfg.json"), proj.join("cfg.json")).expect("ln");
        std::os::unix::fs::symlink(proj.join("real"), proj.join("conf")).expect("ln");
        let w = std::slice::from_ref(&proj);
        for (p, link) in [
            (proj.join("cfg.json"), proj.join("cfg.json")),
            (proj.join("conf/cfg.json"), proj.join("conf")),
        ] {
            let e = carve_outs(w, std::slice::from_ref(&p)).expect_err("a link");
            assert_eq!(
                e,
                format!(
                    "cannot keep {} read-only: {} is a symbolic link (to {}) in a writable folder, which the sandboxed command could point elsewhere; replace the link with what it points at",
                    p.display(),
                    link.display(),
                    std::fs::read_link(&link).expect("link").display()
                )
            );
        }
        // A link outside the writable set cannot be re-pointed by the child: resolved.
        std::os::unix::fs::symlink(&proj, d.0.join("via")).expect("ln");
        let got = carve_outs(w, &[d.0.join("via/real/cfg.json")]).expect("carve");
        assert_eq!(got, vec![proj.join("real/cfg.json")]);
        let e = carve_outs(w, &[PathBuf::from("rel/.git")]).expect_err("relative");
        assert!(e.contains("not a plain absolute path"), "{e}");
        let e = carve_outs(w, &[proj.join("real/../cfg.json")]).expect_err("dotdot");
        assert!(e.contains("not a plain absolute path"), "{e}");
    }
}
