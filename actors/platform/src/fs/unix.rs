//! Files on Unix: `O_NOFOLLOW`, `O_CLOEXEC`, `O_NONBLOCK`, modes, the effective uid.

use std::borrow::Cow;
use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

/// `opts`, creating the file with `mode` (less the umask).
pub fn with_mode(opts: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    opts.mode(mode)
}

/// `opts`, never opening through a symlink at the last component (`O_NOFOLLOW`) and closed
/// on exec. Replaces any other custom flag.
pub fn nofollow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
}

/// [`nofollow`], and an open that does not block (a FIFO). Replaces any other custom flag.
pub fn nofollow_nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
}

/// `opts`, with an open that does not block (a FIFO would). Replaces any other custom flag.
pub fn nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(libc::O_NONBLOCK)
}

/// Whether an open with [`nofollow`] failed because the path is a symlink (`ELOOP`).
pub fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Nothing to check: `O_NOFOLLOW` refused a symlink, the mode made the file private.
/// `e` as it is: `O_NOFOLLOW` already says a symlink (`ELOOP`).
pub(super) fn open_error(_path: &Path, e: io::Error) -> io::Error {
    e
}

pub(super) fn secure(_f: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Makes the directory `path` with `mode` (and, when `recursive`, its missing parents with it);
/// not recursive, it fails when anything is already there.
pub fn create_dir(path: &Path, recursive: bool, mode: u32) -> io::Result<()> {
    DirBuilder::new()
        .recursive(recursive)
        .mode(mode)
        .create(path)
}

/// Whether `meta`'s owner is our effective user.
pub fn owned_by_me(meta: &Metadata) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    meta.uid() == unsafe { libc::geteuid() }
}

/// `meta`'s mode (`st_mode`: type and permission bits).
pub fn mode_of(meta: &Metadata) -> u32 {
    meta.mode()
}

/// Sets `f`'s permission bits to `mode`.
pub fn set_mode(f: &File, mode: u32) -> io::Result<()> {
    f.set_permissions(std::fs::Permissions::from_mode(mode))
}

/// Whether `meta` is a regular file someone may execute.
pub fn is_executable(meta: &Metadata) -> bool {
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// `path`'s bytes as the system holds them.
pub fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt as _;
    Cow::Borrowed(path.as_os_str().as_bytes())
}

/// Makes `link` a symlink to `target`.
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}
