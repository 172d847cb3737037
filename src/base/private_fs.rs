//! Private files: every file harness9 creates goes through here. Files are created exclusively
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), so a name planted beforehand (a symlink, a file)
//! is never written through; a file is replaced atomically through an exclusive temp name with
//! a random part, then a rename; harness9's own directories are created 0700 and checked (a
//! directory, not a symlink, owned by us) before use. The session directory (tool results cut
//! for the model, saved resource blobs) is created exclusively under an unpredictable name and
//! removed when the session ends ([`remove_session_dirs`]); what is written there is bounded
//! per session ([`spill_cap`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use harness9_platform::fs as pfs;

/// The default of [`spill_cap`]: 1 GiB per session.
pub const DEFAULT_SPILL_CAP: u64 = 1 << 30;

/// `n` random bytes as hex, from the kernel's generator.
pub fn random_hex(n: usize) -> io::Result<String> {
    let mut buf = vec![0u8; n];
    harness9_platform::random_bytes(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Checks that `path` is a directory (not a symlink to one) owned by us and closed to others.
fn check_private_dir(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    let refuse = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}; refusing to write there", path.display()),
        ))
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symlink");
    }
    if !meta.is_dir() {
        return refuse("is not a directory");
    }
    if !pfs::owned_by_me(&meta) {
        return refuse("is owned by another user");
    }
    if pfs::open_to_others(&meta) {
        return refuse("is open to other users (expected mode 0700)");
    }
    Ok(())
}

/// Makes `path` (and missing parents) a directory to keep files in: what is missing is created
/// 0700; then it must be a directory owned by us that not every user can write to. An existing
/// directory of the user's (a symlink to one included: dotfile setups) is used as it is, never
/// chmodded; the files in it are 0600.
pub fn private_dir(path: &Path) -> io::Result<()> {
    pfs::create_dir(path, true, 0o700)?;
    let meta = std::fs::metadata(path)?;
    let refuse = |why: &str| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}; refusing to write there", path.display()),
        ))
    };
    if !meta.is_dir() {
        return refuse("is not a directory");
    }
    if !pfs::owned_by_me(&meta) {
        return refuse("is owned by another user");
    }
    // Group-writable is fine: with user private groups (umask 002) the group is the user's.
    if pfs::mode_of(&meta) & 0o002 != 0 {
        return refuse("can be written by every user");
    }
    Ok(())
}

/// Creates `path` as a new private file (0600): fails when anything (a file, a symlink) is
/// already there; a symlink is never followed.
pub fn create_new(path: &Path) -> io::Result<File> {
    pfs::open_private(OpenOptions::new().write(true).create_new(true), 0o600, path)
}

/// Opens `path` to append, creating it private (0600); a symlink there is refused, and an
/// existing file that is not ours or open to others is refused too (logs, histories).
pub fn open_append(path: &Path) -> io::Result<File> {
    let f = pfs::open_private(OpenOptions::new().append(true).create(true), 0o600, path)
        .map_err(|e| symlink_refused(e, path, ""))?;
    ours_and_private(f, path)
}

/// `e`, or a clear refusal when it says `path` is a symlink (`O_NOFOLLOW`'s `ELOOP`).
fn symlink_refused(e: io::Error, path: &Path, hint: &str) -> io::Error {
    if pfs::is_symlink_refusal(&e) {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symlink; refusing to write through it{hint}",
                path.display()
            ),
        )
    } else {
        e
    }
}

/// `f`, opened at `path`, if it is a regular file of ours; made 0600 if others could read it.
fn ours_and_private(f: File, path: &Path) -> io::Result<File> {
    let meta = f.metadata()?;
    if !pfs::owned_by_me(&meta) || !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a file of ours; refusing to write there",
                path.display()
            ),
        ));
    }
    if pfs::open_to_others(&meta) {
        pfs::set_mode(&f, 0o600)?;
    }
    Ok(f)
}

/// Creates or truncates `path` as a private file (0600) the user named (`--trace FILE`): a
/// symlink there is refused (it could send the file elsewhere), and so is a file that is not
/// ours; an existing file of ours is made 0600.
pub fn create_truncate(path: &Path) -> io::Result<File> {
    let f = pfs::open_private(
        OpenOptions::new().write(true).create(true).truncate(true),
        0o600,
        path,
    )
    .map_err(|e| symlink_refused(e, path, " (name the file itself)"))?;
    ours_and_private(f, path)
}

/// The directory of `path` (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Replaces `path` atomically with what `fill` writes: a new temp file beside it (exclusive,
/// random name, `mode`), synced, then renamed over `path`. A symlink at `path` is replaced,
/// never followed. The temp file is removed on failure.
pub fn replace_with(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = parent_of(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let tmp = dir.join(format!(".{name}.{}.tmp", random_hex(8)?));
    // Created with the target's mode (exclusively, never through a symlink): on Windows only a
    // private mode gets the owner-only DACL, so a shared file keeps its folder's access.
    let mut f = pfs::open_private(OpenOptions::new().write(true).create_new(true), mode, &tmp)?;
    let written = (|| {
        if mode != 0o600 {
            // Exactly `mode`, whatever the umask took away at the create.
            pfs::set_mode(&f, mode)?;
        }
        fill(&mut f)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `body` to `path` as a private file (0600), replacing it atomically; its directory
/// is made private first ([`private_dir`]).
pub fn write_private(path: &Path, body: &[u8]) -> io::Result<()> {
    private_dir(&parent_of(path))?;
    replace_with(path, 0o600, |f| f.write_all(body))
}

/// Writes `text` to `path` atomically: a new temp file beside it (exclusive, random name, see
/// [`replace_with`]), then a rename; its permissions kept when it existed
/// (else 0644, as an editor makes a config file).
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.exists() {
        private_dir(&dir)?;
    }
    let mode = std::fs::metadata(path)
        .map(|m| pfs::mode_of(&m) & 0o7777)
        .unwrap_or(0o644);
    replace_with(path, mode, |f| f.write_all(text.as_bytes()))
}

/// The session directories made by [`session_dir`], by their base.
static SESSION_DIRS: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());

/// Bytes written under the session directories so far.
static SPILLED: AtomicU64 = AtomicU64::new(0);

/// This session's private directory under `base` (made with [`private_dir`] when missing):
/// `harness9-<pid>-<random>`, created exclusively with mode 0700 on first use, removed by
/// [`remove_session_dirs`].
pub fn session_dir(base: &Path) -> io::Result<PathBuf> {
    let mut dirs = SESSION_DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, dir)) = dirs.iter().find(|(b, _)| b == base) {
        return Ok(dir.clone());
    }
    if std::fs::symlink_metadata(base).is_err() {
        private_dir(base)?;
    } else {
        // The base is the user's (the temp dir, `--spill-dir`): a shared one such as /tmp is
        // fine, the directory made in it below is what is private.
        let meta = std::fs::metadata(base)?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{} is not a directory", base.display()),
            ));
        }
    }
    let dir = base.join(format!(
        "harness9-{}-{}",
        std::process::id(),
        random_hex(8)?
    ));
    // Not recursive: fails if anything is already there.
    pfs::create_dir(&dir, false, 0o700)?;
    check_private_dir(&dir)?;
    dirs.push((base.to_path_buf(), dir.clone()));
    Ok(dir)
}

/// Removes every session directory made by [`session_dir`] (the end of a session, every exit
/// path of the binary).
pub fn remove_session_dirs() {
    let dirs = std::mem::take(&mut *SESSION_DIRS.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, dir) in dirs {
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot remove the session directory");
            }
        }
    }
}

/// The most bytes one session writes to its session directory: `$HARNESS9_SPILL_MAX` (bytes;
/// suffixes K, M, G), else [`DEFAULT_SPILL_CAP`]. Past it, a result is cut without a file.
pub fn spill_cap() -> u64 {
    std::env::var("HARNESS9_SPILL_MAX")
        .ok()
        .and_then(|v| parse_size(&v))
        .unwrap_or(DEFAULT_SPILL_CAP)
}

/// `123`, `64K`, `100M`, `1G` (binary units) as bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// Reserves `bytes` of the session's spill allowance; false (nothing reserved) when that
/// would go past [`spill_cap`].
pub fn reserve_spill(bytes: u64) -> bool {
    let cap = spill_cap();
    SPILLED
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
            used.checked_add(bytes).filter(|t| *t <= cap)
        })
        .is_ok()
}

/// Gives back `bytes` reserved by [`reserve_spill`] that were not written.
pub fn release_spill(bytes: u64) {
    let _ = SPILLED.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
        Some(used.saturating_sub(bytes))
    });
}

/// A new private file in this session's directory under `base`, named
/// `<prefix>-<n>-<random>-<tail>` (exclusive, never through a symlink; the random part so that
/// even someone who can list the directory cannot take a future name first). Its path and the
/// open file.
pub fn new_session_file(base: &Path, prefix: &str, tail: &str) -> io::Result<(PathBuf, File)> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = session_dir(base)?;
    let n = N.fetch_add(1, Ordering::Relaxed);
    let safe: String = tail
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let path = dir.join(format!("{prefix}-{n}-{}-{safe}", random_hex(4)?));
    let f = create_new(&path)?;
    Ok((path, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p)
            .map(|m| pfs::mode_of(&m) & 0o777)
            .unwrap_or(0)
    }

    #[test]
    fn files_are_exclusive_private_and_never_through_a_symlink() {
        let dir = std::env::temp_dir().join(format!("h9-private-{}", random_hex(4).unwrap()));
        private_dir(&dir.join("a/b")).unwrap();
        assert_eq!(mode(&dir.join("a/b")), 0o700);
        let outside = dir.join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let link = dir.join("a/b/link");
        pfs::symlink(&outside, &link).unwrap();
        assert!(create_new(&link).is_err());
        assert!(open_append(&link).is_err());
        // Replacing the link swaps the link itself; the target stays.
        write_private(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
        assert_eq!(mode(&link), 0o600);
        // A session directory is new, private and unpredictable.
        let a = session_dir(&dir).unwrap();
        assert_eq!(mode(&a), 0o700);
        assert!(a.file_name().unwrap().len() > "harness9--".len() + 16);
        assert_eq!(session_dir(&dir).unwrap(), a);
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("10"), Some(10));
        assert_eq!(parse_size("x"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
