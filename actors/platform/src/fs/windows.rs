//! Files on Windows. Never through a symlink: [`nofollow`] opens with
//! `FILE_FLAG_OPEN_REPARSE_POINT` (a symlink or junction is opened itself, never followed) and
//! [`secure`] refuses what was opened when it is a reparse point (`ERROR_STOPPED_ON_SYMLINK`);
//! a new file is created exclusively by its caller (`create_new`, which fails on a planted
//! link too). Private: a file opened for harness9's private use gets a protected DACL that
//! grants the user harness9 runs as alone (`D:P(A;;FA;;;<the user's SID>)`, the SID from the
//! process token, not Owner Rights: an elevated process's files are owned by Administrators),
//! set through the open handle ([`secure`]), so nothing in its folder's inherited ACL reaches
//! it. Modes do not exist here: [`mode_of`] reads 0o600/0o700 and [`owned_by_me`] is true, so
//! the callers' Unix checks pass; a folder harness9 makes inherits its parent's ACL (under the
//! user's profile, the user's alone).

use std::borrow::Cow;
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::windows::ffi::OsStrExt as _;
use std::os::windows::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::os::windows::io::{AsRawHandle as _, FromRawHandle as _, OwnedHandle};
use std::path::Path;

use windows_sys::core::PWSTR;
use windows_sys::Win32::Foundation::{
    LocalFree, ERROR_STOPPED_ON_SYMLINK, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SetSecurityInfo,
    SDDL_REVISION_1, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    GetSecurityDescriptorDacl, GetTokenInformation, TokenUser, ACL, DACL_SECURITY_INFORMATION,
    PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
    GetFileAttributesW, ReOpenFile, FILE_ATTRIBUTE_REPARSE_POINT, FILE_FLAG_OPEN_REPARSE_POINT,
    FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, INVALID_FILE_ATTRIBUTES, READ_CONTROL,
    WRITE_DAC,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

pub fn with_mode(opts: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
    opts
}

/// `opts`, opening a symlink or junction itself rather than what it points to (refused then by
/// [`secure`]). Replaces any other custom flag.
pub fn nofollow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// [`nofollow`] (an open never blocks here).
pub fn nofollow_nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    nofollow(opts)
}

pub fn nonblocking(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts
}

/// Whether an open failed because the path is a symlink or junction ([`secure`]'s refusal).
pub fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_STOPPED_ON_SYMLINK as i32)
}

/// Why an open by [`super::open_private`] failed: a reparse point that could not be opened
/// itself (a symlink or junction to a folder, opened for writing: "access denied") is said to be
/// one (`ERROR_STOPPED_ON_SYMLINK`, [`is_symlink_refusal`]), as the one that could is by
/// [`secure`]; any other error as it is. Only the message changes: the open failed either way.
pub(super) fn open_error(path: &Path, e: io::Error) -> io::Error {
    let wide: Vec<u16> = path.as_os_str().encode_wide().chain([0]).collect();
    // The path's own attributes, never its target's (GetFileAttributesW does not follow a
    // final reparse point).
    // SAFETY: `wide` is NUL-terminated and outlives the call.
    let attributes = unsafe { GetFileAttributesW(wide.as_ptr()) };
    if attributes != INVALID_FILE_ATTRIBUTES && attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return io::Error::from_raw_os_error(ERROR_STOPPED_ON_SYMLINK as i32);
    }
    e
}

/// Checks what [`super::open_private`] opened: a reparse point (a symlink, a junction) is
/// refused; with a private `mode` (nothing for group or others) the file's DACL becomes the
/// owner's alone.
pub(super) fn secure(f: &File, mode: u32) -> io::Result<()> {
    let meta = f.metadata()?;
    if meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::from_raw_os_error(
            ERROR_STOPPED_ON_SYMLINK as i32,
        ));
    }
    if mode & 0o077 == 0 && meta.is_file() {
        owner_only(f)?;
    }
    Ok(())
}

/// A protected DACL (nothing inherited) with one entry: full access for the user `sid`.
fn owner_only_sddl(sid: &str) -> String {
    format!("D:P(A;;FA;;;{sid})")
}

/// The SID of the user this process runs as, as a string (`S-1-5-21-...`).
fn user_sid() -> io::Result<String> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of this process needs no closing; `token` receives a handle.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh handle nothing else owns.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut len = 0u32;
    // SAFETY: a size query (null buffer, zero length); it fails with the needed length.
    unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            std::ptr::null_mut(),
            0,
            &mut len,
        );
    }
    // u64s: aligned for TOKEN_USER.
    let mut buf = vec![0u64; (len as usize).div_ceil(8).max(1)];
    // SAFETY: `buf` holds `len` bytes, aligned for TOKEN_USER.
    if unsafe {
        GetTokenInformation(
            token.as_raw_handle(),
            TokenUser,
            buf.as_mut_ptr().cast(),
            len,
            &mut len,
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: filled by GetTokenInformation with a TOKEN_USER, whose SID points into `buf`.
    let sid = unsafe { (*buf.as_ptr().cast::<TOKEN_USER>()).User.Sid };
    let mut text: PWSTR = std::ptr::null_mut();
    // SAFETY: `sid` is valid while `buf` lives; `text` receives a LocalAlloc'd string.
    if unsafe { ConvertSidToStringSidW(sid, &mut text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated UTF-16 string from ConvertSidToStringSidW, freed right after.
    let out = unsafe {
        let n = (0..).take_while(|&i| *text.add(i) != 0).count();
        let s = String::from_utf16_lossy(std::slice::from_raw_parts(text, n));
        LocalFree(text.cast());
        s
    };
    Ok(out)
}

/// Gives `f` a protected DACL with one entry: full access for the user harness9 runs as.
fn owner_only(f: &File) -> io::Result<()> {
    struct Local(PSECURITY_DESCRIPTOR);
    impl Drop for Local {
        fn drop(&mut self) {
            // SAFETY: allocated by ConvertStringSecurityDescriptorToSecurityDescriptorW.
            unsafe {
                LocalFree(self.0);
            }
        }
    }
    let sddl: Vec<u16> = owner_only_sddl(&user_sid()?)
        .encode_utf16()
        .chain([0])
        .collect();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor.
    if unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            std::ptr::null_mut(),
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    let sd = Local(sd);
    let mut present = 0;
    let mut defaulted = 0;
    let mut dacl: *mut ACL = std::ptr::null_mut();
    // SAFETY: `sd` is a valid descriptor; the DACL pointer points into it.
    if unsafe { GetSecurityDescriptorDacl(sd.0, &mut present, &mut dacl, &mut defaulted) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // The same file, reopened by handle (never by path again) with the right to change its DACL.
    // SAFETY: the handle is `f`'s, open; the new one is owned below.
    let h = unsafe {
        ReOpenFile(
            f.as_raw_handle(),
            WRITE_DAC | READ_CONTROL,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            FILE_FLAG_OPEN_REPARSE_POINT,
        )
    };
    if h.is_null() || h == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh handle nothing else owns.
    let h = unsafe { OwnedHandle::from_raw_handle(h) };
    // SAFETY: the handle is open with WRITE_DAC; `dacl` lives in `sd`, alive here.
    let e = unsafe {
        SetSecurityInfo(
            h.as_raw_handle(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            dacl,
            std::ptr::null(),
        )
    };
    if e != 0 {
        return Err(io::Error::from_raw_os_error(e as i32));
    }
    Ok(())
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

/// Makes `link` a file symlink to `target` (needs the right to, or Developer Mode).
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, link)
}

/// Run under Wine in CI (scripts/windows-run.sh): the system's own SDDL parser reads the DACL
/// a private file gets.
#[cfg(test)]
mod tests {
    use super::*;
    use windows_sys::Win32::Security::Authorization::ConvertStringSidToSidW;
    use windows_sys::Win32::Security::{
        EqualSid, GetAce, GetSecurityDescriptorControl, ACCESS_ALLOWED_ACE, PSID, SE_DACL_PROTECTED,
    };
    use windows_sys::Win32::Storage::FileSystem::FILE_ALL_ACCESS;

    #[test]
    fn the_private_dacl_is_protected_with_one_full_access_entry_for_this_user() {
        let sid = user_sid().expect("the user's SID");
        assert!(sid.starts_with("S-1-5-"), "{sid}");
        let sddl: Vec<u16> = owner_only_sddl(&sid).encode_utf16().chain([0]).collect();
        let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: `sddl` is NUL-terminated; `sd` receives a LocalAlloc'd descriptor.
        let ok = unsafe {
            ConvertStringSecurityDescriptorToSecurityDescriptorW(
                sddl.as_ptr(),
                SDDL_REVISION_1,
                &mut sd,
                std::ptr::null_mut(),
            )
        };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        let (mut control, mut revision) = (0u16, 0u32);
        // SAFETY: `sd` is a valid descriptor.
        assert_ne!(
            unsafe { GetSecurityDescriptorControl(sd, &mut control, &mut revision) },
            0
        );
        assert_ne!(
            control & SE_DACL_PROTECTED,
            0,
            "not protected: {control:#x}"
        );
        let (mut present, mut defaulted) = (0, 0);
        let mut dacl: *mut ACL = std::ptr::null_mut();
        // SAFETY: as above; the DACL points into `sd`.
        assert_ne!(
            unsafe { GetSecurityDescriptorDacl(sd, &mut present, &mut dacl, &mut defaulted) },
            0
        );
        assert!(present != 0 && !dacl.is_null());
        // SAFETY: a DACL from the descriptor.
        assert_eq!(unsafe { (*dacl).AceCount }, 1);
        let mut ace: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: entry 0 exists (AceCount 1).
        assert_ne!(unsafe { GetAce(dacl, 0, &mut ace) }, 0);
        let ace = ace.cast::<ACCESS_ALLOWED_ACE>();
        // SAFETY: an ACE of the DACL; its type is checked before its body is read as allowed.
        let (kind, mask) = unsafe { ((*ace).Header.AceType, (*ace).Mask) };
        assert_eq!(kind, 0, "an access-allowed entry");
        assert_eq!(mask, FILE_ALL_ACCESS);
        let wide: Vec<u16> = sid.encode_utf16().chain([0]).collect();
        let mut want: PSID = std::ptr::null_mut();
        // SAFETY: `wide` is NUL-terminated; `want` receives a LocalAlloc'd SID.
        assert_ne!(
            unsafe { ConvertStringSidToSidW(wide.as_ptr(), &mut want) },
            0
        );
        // SAFETY: both SIDs are valid; the entry's SID starts at SidStart.
        let same = unsafe { EqualSid((&raw mut (*ace).SidStart).cast(), want) };
        assert_ne!(same, 0, "the entry is not for {sid}");
        // SAFETY: both were LocalAlloc'd by the conversions above.
        unsafe {
            LocalFree(want);
            LocalFree(sd);
        }
    }
}
