//! Files: a file created with a mode and never through a symlink, directories made private,
//! ownership and modes read back, files opened without blocking (a FIFO), paths as bytes. The
//! policy (what is private, what is refused) is the caller's; these are its parts.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

#[cfg(not(any(unix, windows)))]
compile_error!("harness9 keeps private files on Unix and Windows only");
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
use windows as imp;

pub use imp::{
    create_dir, is_executable, is_symlink_refusal, mode_of, nofollow, nofollow_nonblocking,
    nonblocking, owned_by_me, path_bytes, set_mode, symlink, with_mode,
};

/// Opens `path` with `opts` made to create with `mode` and never through a symlink
/// ([`with_mode`], [`nofollow`]; on Windows a reparse point opened is refused and a private
/// `mode` becomes an owner-only DACL).
pub fn open_private(opts: &mut OpenOptions, mode: u32, path: &Path) -> io::Result<File> {
    let f = nofollow(with_mode(opts, mode))
        .open(path)
        .map_err(|e| imp::open_error(path, e))?;
    imp::secure(&f, mode)?;
    Ok(f)
}

/// Whether `meta` is open to other users (any group or other permission bit).
pub fn open_to_others(meta: &Metadata) -> bool {
    mode_of(meta) & 0o077 != 0
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_private_file_has_its_mode_and_a_symlink_is_refused() {
        let mut b = [0u8; 8];
        crate::random_bytes(&mut b).expect("random");
        let hex: String = b.iter().map(|b| format!("{b:02x}")).collect();
        let dir = std::env::temp_dir().join(format!("h9-platform-fs-{hex}"));
        create_dir(&dir, false, 0o700).expect("mkdir");
        let meta = std::fs::metadata(&dir).expect("meta");
        assert_eq!(mode_of(&meta) & 0o777, 0o700);
        assert!(owned_by_me(&meta));
        let file = dir.join("f");
        let f = open_private(
            OpenOptions::new().write(true).create_new(true),
            0o600,
            &file,
        )
        .expect("create");
        assert_eq!(mode_of(&f.metadata().expect("meta")) & 0o777, 0o600);
        assert!(!open_to_others(&f.metadata().expect("meta")));
        set_mode(&f, 0o640).expect("chmod");
        assert!(open_to_others(&f.metadata().expect("meta")));
        assert!(!is_executable(&f.metadata().expect("meta")));
        let link = dir.join("link");
        symlink(&file, &link).expect("symlink");
        let e = open_private(OpenOptions::new().append(true).create(true), 0o600, &link)
            .expect_err("through a symlink");
        assert!(is_symlink_refusal(&e), "{e}");
        assert_eq!(&*path_bytes(Path::new("/a b")), b"/a b");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
