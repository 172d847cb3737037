//! Files where modes and ownership are not written yet (Windows: ACLs, issue 25). Opening
//! options are left as they are, every file reads as its owner's and private, so the callers'
//! checks pass; nothing here refuses a symlink.

use std::borrow::Cow;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

pub fn with_mode(opts: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
    opts
}

pub fn nofollow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts
}

pub fn nofollow_nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts
}

pub fn nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts
}

/// Nothing to check here.
pub(super) fn secure(_f: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

pub fn is_symlink_refusal(_e: &io::Error) -> bool {
    false
}

pub fn create_dir(path: &Path, recursive: bool, _mode: u32) -> io::Result<()> {
    std::fs::DirBuilder::new().recursive(recursive).create(path)
}

pub fn owned_by_me(_meta: &Metadata) -> bool {
    true
}

/// 0o600 for a file, 0o700 for a directory (private: the callers' checks pass).
pub fn mode_of(meta: &Metadata) -> u32 {
    if meta.is_dir() {
        0o700
    } else {
        0o600
    }
}

pub fn set_mode(_f: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

pub fn is_executable(meta: &Metadata) -> bool {
    meta.is_file()
}

pub fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    match path.to_string_lossy() {
        Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

pub fn symlink(_target: impl AsRef<Path>, _link: impl AsRef<Path>) -> io::Result<()> {
    Err(crate::not_available("a symlink"))
}
