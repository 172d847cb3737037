//! The sandbox on Linux: a Landlock ruleset and a seccomp filter. Both are built in the parent
//! (every path opened, the BPF program laid out there); between fork and exec the child only
//! makes its read-only carve-outs (below), opens its `/proc/self` and adds it to the ruleset,
//! drops its capabilities, and calls `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`
//! and `seccomp(SET_MODE_FILTER)`: async-signal-safe syscalls, no allocation.
//!
//! Read-only carve-outs ([`Rules::read_only`]): Landlock cannot take a folder back out of a
//! granted one, so the child first enters a mount namespace of its own (`unshare(CLONE_NEWNS)`
//! as root; otherwise, or when root may not, with a user namespace mapping only its own uid
//! and gid), makes every mount private (nothing propagates back out), and mounts over each
//! path a read-only recursive clone of itself (`open_tree`, `mount_setattr`, `move_mount`, on
//! a descriptor opened with `openat2(RESOLVE_NO_SYMLINKS)`: no link redirects it, and the
//! mount's locked flags are kept since only `RDONLY` is added). Writes there fail with
//! `EROFS`, and the path cannot be renamed or removed (`EBUSY`). The capability drop after it
//! clears the full set a user namespace hands out; Landlock then forbids any change of the
//! mounts. Where the namespace cannot be made (user namespaces disabled), [`prepare`] fails
//! with the reason ([`carve_out_check`]) rather than run the child with the hole.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};

use super::{Rules, ABI_OVERRIDE_VAR, DEVICES, NET_ABI};

/// The first Landlock ABI with scopes: signals, abstract unix sockets (Linux 6.12).
const SCOPE_ABI: i32 = 6;

/// A ruleset (and seccomp program) ready to be enforced in a child.
pub struct Prepared {
    fd: OwnedFd,
    filter: Option<Vec<libc::sock_filter>>,
    /// The read rights the child grants itself on its own `/proc/self`.
    read: u64,
    /// The real paths the child mounts read-only over themselves ([`Rules::read_only`]).
    carve: Vec<CString>,
}

impl Prepared {
    /// `cmd` (its program and arguments set, nothing else yet) confined: on Linux the same
    /// command, with [`Prepared::install`]. Keep `self` alive until `spawn` has returned.
    pub fn wrap(&self, mut cmd: tokio::process::Command) -> tokio::process::Command {
        self.install(&mut cmd);
        cmd
    }

    /// Makes `cmd`'s child enforce the ruleset before it execs. Keep `self` alive until
    /// `spawn` has returned (the child uses the fd number); the fd is close-on-exec, so the
    /// server never holds it.
    pub fn install(&self, cmd: &mut tokio::process::Command) {
        let fd = self.fd.as_raw_fd();
        // The program's address and length; the memory stays put (owned by `self`, which
        // outlives the spawn) and the forked child sees the same bytes at the same address.
        let filter = self.filter.as_ref().map(|f| (f.as_ptr() as usize, f.len()));
        // SAFETY: the closure runs in the child between fork and exec and does only
        // async-signal-safe work: raw syscalls and reading errno; no allocation, no lock.
        let read = self.read;
        // Laid out here: the child must not allocate.
        let carve = self.carve.clone();
        let maps = IdMaps::of_this_process();
        unsafe {
            cmd.pre_exec(move || {
                if !carve.is_empty() {
                    enter_namespace(&maps).map_err(|(_, e)| e)?;
                    for path in &carve {
                        mount_read_only(path)?;
                    }
                }
                restrict(fd, read, filter)
            });
        }
    }
}

/// The uid and gid maps (`"ID ID 1"`, NUL-free) a child in a new user namespace writes: its
/// own ids, nothing else.
#[derive(Clone)]
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    fn of_this_process() -> IdMaps {
        // SAFETY: getuid and getgid cannot fail.
        let (u, g) = unsafe { (libc::getuid(), libc::getgid()) };
        IdMaps {
            uid: format!("{u} {u} 1").into_bytes(),
            gid: format!("{g} {g} 1").into_bytes(),
        }
    }
}

/// The step of [`enter_namespace`] that failed, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Unshare,
    Setgroups,
    UidMap,
    GidMap,
    Private,
}

impl Step {
    fn what(self) -> &'static str {
        match self {
            Step::Unshare => "making a user and mount namespace (unshare)",
            Step::Setgroups => "writing /proc/self/setgroups",
            Step::UidMap => "writing /proc/self/uid_map",
            Step::GidMap => "writing /proc/self/gid_map",
            Step::Private => "making the mounts private",
        }
    }

    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn from_code(c: u8) -> Option<Step> {
        [
            Step::Unshare,
            Step::Setgroups,
            Step::UidMap,
            Step::GidMap,
            Step::Private,
        ]
        .into_iter()
        .find(|s| s.code() == c)
    }
}

/// Writes `data` to the file `path` (a static C string); async-signal-safe.
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: open on a C string; write of a live buffer; close of the fd opened here.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if n != data.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

/// Puts the calling (single-threaded) process in a mount namespace of its own whose mounts
/// are all private: as root a plain one (a user namespace if root may not), otherwise a user
/// namespace mapping only its own ids. Async-signal-safe: run between fork and exec.
fn enter_namespace(maps: &IdMaps) -> Result<(), (Step, io::Error)> {
    let err = |s: Step| (s, io::Error::last_os_error());
    // SAFETY: geteuid has no preconditions; unshare takes flags only.
    let plain = unsafe { libc::geteuid() == 0 && libc::unshare(libc::CLONE_NEWNS) == 0 };
    if !plain {
        // SAFETY: as above.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
            return Err(err(Step::Unshare));
        }
        write_proc(c"/proc/self/setgroups", b"deny").map_err(|e| (Step::Setgroups, e))?;
        write_proc(c"/proc/self/uid_map", &maps.uid).map_err(|e| (Step::UidMap, e))?;
        write_proc(c"/proc/self/gid_map", &maps.gid).map_err(|e| (Step::GidMap, e))?;
    }
    // SAFETY: mount with static C strings and null pointers where the call takes none.
    let r = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(err(Step::Private));
    }
    Ok(())
}

/// `struct mount_attr` (`mount_setattr`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `struct open_how` (`openat2`; libc's cannot be built by hand).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// Mounts a read-only clone of `path` (with everything mounted under it) over `path`, in the
/// caller's mount namespace; `path` is opened with no symbolic link anywhere on the way.
/// Async-signal-safe: run between fork and exec.
fn mount_read_only(path: &std::ffi::CStr) -> io::Result<()> {
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    let fail = |fds: &[libc::c_int]| {
        let e = io::Error::last_os_error();
        for &fd in fds {
            // SAFETY: closing fds opened here.
            unsafe { libc::close(fd) };
        }
        Err(e)
    };
    // SAFETY: openat2 reads `how` and the C string before returning.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return fail(&[]);
    }
    let fd = fd as libc::c_int;
    // SAFETY: open_tree on our fd with an empty C string path.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            fd,
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | libc::AT_EMPTY_PATH as libc::c_uint
                | AT_RECURSIVE,
        )
    };
    if tree < 0 {
        return fail(&[fd]);
    }
    let tree = tree as libc::c_int;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr reads `attr` (on this stack) before returning.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return fail(&[tree, fd]);
    }
    // SAFETY: move_mount of the detached tree onto the path our fd holds.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            fd,
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if r != 0 {
        return fail(&[tree, fd]);
    }
    // SAFETY: closing the fds opened here.
    unsafe {
        libc::close(tree);
        libc::close(fd);
    }
    Ok(())
}

/// Whether a child can make the mount namespace the read-only carve-outs need: tried once in
/// a forked child that makes it and exits, then remembered. The error says what failed and
/// why that usually is.
pub fn carve_out_check() -> Result<(), String> {
    static ONCE: OnceLock<Result<(), String>> = OnceLock::new();
    ONCE.get_or_init(probe_namespace).clone()
}

fn probe_namespace() -> Result<(), String> {
    let maps = IdMaps::of_this_process();
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot check for mount namespaces: {}",
            crate::plain_io_error(&io::Error::last_os_error())
        ));
    }
    let [rd, wr] = fds;
    // SAFETY: the child only makes the namespace (async-signal-safe syscalls, no allocation:
    // the maps were formatted above), writes 5 bytes and exits without unwinding.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut msg = [0u8; 5];
        if let Err((step, e)) = enter_namespace(&maps) {
            msg[0] = step.code();
            msg[1..].copy_from_slice(&e.raw_os_error().unwrap_or(0).to_le_bytes());
        }
        // SAFETY: writing a stack buffer to our pipe, then _exit.
        unsafe {
            libc::write(wr, msg.as_ptr().cast(), msg.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(wr) };
    if pid < 0 {
        // SAFETY: closing the read end.
        unsafe { libc::close(rd) };
        return Err(format!(
            "cannot check for mount namespaces: {}",
            crate::plain_io_error(&io::Error::last_os_error())
        ));
    }
    let mut msg = [0u8; 5];
    let mut got = 0usize;
    while got < msg.len() {
        // SAFETY: reading into the rest of a stack buffer.
        let n = unsafe { libc::read(rd, msg[got..].as_mut_ptr().cast(), msg.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        } else {
            break;
        }
    }
    let mut status = 0;
    // SAFETY: closing the read end; reaping our child.
    unsafe {
        libc::close(rd);
        while libc::waitpid(pid, &mut status, 0) < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
    }
    if got < msg.len() {
        return Err("cannot check for mount namespaces: the check's child died".to_owned());
    }
    match Step::from_code(msg[0]) {
        None => Ok(()),
        Some(step) => {
            let errno = i32::from_le_bytes([msg[1], msg[2], msg[3], msg[4]]);
            Err(namespace_error(step, errno))
        }
    }
}

/// What a failed [`enter_namespace`] step means.
fn namespace_error(step: Step, errno: i32) -> String {
    let e = crate::plain_io_error(&io::Error::from_raw_os_error(errno));
    let why = match (step, errno) {
        (Step::Unshare, libc::EPERM) | (Step::Unshare, libc::ENOSPC) | (Step::Unshare, libc::EINVAL) => {
            "; unprivileged user namespaces are disabled here (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or a container's seccomp policy)"
        }
        (Step::Private, _) | (Step::UidMap, _) | (Step::GidMap, _) | (Step::Setgroups, _) => {
            "; user namespaces are restricted here (Ubuntu's kernel.apparmor_restrict_unprivileged_userns, or a container's policy)"
        }
        _ => "",
    };
    format!(
        "paths that must stay read-only inside the writable ones need a mount namespace, and {} failed: {e}{why}",
        step.what()
    )
}

/// `struct landlock_path_beneath_attr` (packed, as the kernel declares it).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3` (two data structs: 64 capabilities).
const CAP_VERSION_3: u32 = 0x2008_0522;

/// Drops every capability: the ambient set, the bounding set (so an exec by uid 0 does not
/// take them back; without CAP_SETPCAP, as any non-root user, there is nothing to drop) and
/// the effective, permitted and inheritable sets. harness9 run as root would otherwise hand a
/// sandboxed server CAP_SYS_MODULE, CAP_SYS_ADMIN and the rest.
fn drop_capabilities() -> io::Result<()> {
    // SAFETY: prctl with integer arguments; an old kernel without ambient sets says EINVAL.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    for cap in 0..64 as libc::c_ulong {
        // SAFETY: as above. EINVAL: past the last capability; EPERM: no CAP_SETPCAP.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINVAL) | Some(libc::EPERM) => break,
                _ => return Err(io::Error::last_os_error()),
            }
        }
    }
    let header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the header and two data structs on this stack.
    if unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn restrict(fd: i32, read: u64, filter: Option<(usize, usize)>) -> io::Result<()> {
    // The child's own /proc/PID, before it is locked in: the one process directory it reads.
    // (The ruleset is this spawn's alone; the parent drops it once the exec happened.)
    // SAFETY: open on a static C string; no allocation.
    let own = unsafe {
        libc::open(
            c"/proc/self".as_ptr(),
            libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY,
        )
    };
    if own < 0 {
        return Err(io::Error::last_os_error());
    }
    let attr = PathBeneathAttr {
        allowed_access: read,
        parent_fd: own,
    };
    // SAFETY: landlock_add_rule reads `attr` (on this stack) before returning.
    let added = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            fd,
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0 as libc::c_uint,
        )
    };
    let added_err = io::Error::last_os_error();
    // SAFETY: closing the fd opened above.
    unsafe { libc::close(own) };
    if added != 0 {
        return Err(added_err);
    }
    drop_capabilities()?;
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) has no memory-safety preconditions.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: landlock_restrict_self(ruleset_fd, flags = 0) takes no pointer.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0 as libc::c_uint) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some((ptr, len)) = filter {
        let prog = libc::sock_fprog {
            len: len as libc::c_ushort,
            filter: ptr as *mut libc::sock_filter,
        };
        // SAFETY: `prog` points at `len` instructions owned by the parent's `Prepared`, which
        // the fork copied; the kernel copies them in before returning.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0 as libc::c_uint,
                &prog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `AUDIT_ARCH_*` of this build: the seccomp filter refuses system calls of any other ABI
/// (a 32-bit `int 0x80` would otherwise reach `socketcall` past it).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// The seccomp program of every sandboxed server. `socket()` fails with `EACCES` (landlock
/// answers a TCP connect the same way) for every family but, with `network`, `AF_INET`,
/// `AF_INET6` and `AF_NETLINK` (address lookups): never a unix socket, so never the tmux
/// server (its socket path is predictable), D-Bus, docker or an ssh-agent, with the network on
/// or off. io_uring (which can open sockets past the filter) fails with `EPERM`, as does any
/// other ABI's call (a 32-bit `int 0x80` would reach `socketcall`) and x32's; the rest is
/// allowed. `socketpair` is a call of its own and stays: event loops use it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn socket_filter(network: bool) -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA);
    // seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low half on these little-endian
    // machines; the domain is an int).
    let nr = |n: libc::c_long| n as u32;
    // x32 calls on x86_64 carry this bit; aarch64 has no such range (the jump never fires).
    const X32_BIT: u32 = 0x4000_0000;
    let mut p = vec![
        /* 0 */ stmt(LD_W_ABS, 4),
        /* 1 */ jump(JEQ, AUDIT_ARCH, 1, 0),
        /* 2 */ stmt(RET, errno(libc::EPERM)),
        /* 3 */ stmt(LD_W_ABS, 0),
        /* 4 */ jump(JGE, X32_BIT, 4, 0),
        /* 5 */ jump(JEQ, nr(libc::SYS_socket), 5, 0),
        /* 6 */ jump(JEQ, nr(libc::SYS_io_uring_setup), 2, 0),
        /* 7 */ jump(JEQ, nr(libc::SYS_io_uring_register), 1, 0),
        /* 8 */ jump(JEQ, nr(libc::SYS_io_uring_enter), 0, 1),
        /* 9 */ stmt(RET, errno(libc::EPERM)),
        /* 10 */ stmt(RET, libc::SECCOMP_RET_ALLOW),
    ];
    // 11: socket().
    if network {
        p.extend([
            /* 11 */ stmt(LD_W_ABS, 16),
            /* 12 */ jump(JEQ, libc::AF_INET as u32, 3, 0),
            /* 13 */ jump(JEQ, libc::AF_INET6 as u32, 2, 0),
            /* 14 */ jump(JEQ, libc::AF_NETLINK as u32, 1, 0),
            /* 15 */ stmt(RET, errno(libc::EACCES)),
            /* 16 */ stmt(RET, libc::SECCOMP_RET_ALLOW),
        ]);
    } else {
        p.push(/* 11 */ stmt(RET, errno(libc::EACCES)));
    }
    p
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn socket_filter(_network: bool) -> Vec<libc::sock_filter> {
    Vec::new()
}

/// Fills `buf` from the kernel's generator (`getrandom`).
pub(super) fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    // SAFETY: getrandom writes at most `buf.len()` bytes into the buffer.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n != buf.len() as isize {
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
                "this kernel has no Landlock (it needs Linux 5.13 or later); use such a kernel or turn the sandbox off (\"sandbox\": false for a server)"
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

/// Builds the ruleset for a child that may write what `rules` say; the
/// error says why the sandbox cannot be applied (the server must then not start). The agent's
/// own `bash` uses it too (harness9's `[permissions] shell`).
pub fn prepare(sb: &Rules<'_>) -> Result<Prepared, String> {
    let n = kernel_abi()?;
    network_abi_check(sb, n)?;
    let abi = ABI::from(n);
    let created = read_rules(ruleset(sb, n, abi)?, abi)?;
    // Not the project, not the config's folder, not the shared temp dir, not /dev/shm (shared
    // by every process of the machine: a place to plant files for others).
    let mut writable: Vec<&Path> = sb.cwd.into_iter().chain([sb.scratch]).collect();
    writable.extend(sb.writable.iter().map(|p| p.as_path()));
    let carve = carve_list(&writable, sb.read_only)?;
    let created = write_rules(created, abi, writable)?;
    let filter = network_filter(sb.network)?;
    let fd: Option<OwnedFd> = created.into();
    match fd {
        Some(fd) => Ok(Prepared {
            fd,
            filter,
            read: AccessFs::from_read(abi).bits(),
            carve,
        }),
        None => Err("landlock: the kernel did not create a ruleset".to_owned()),
    }
}

fn landlock_error(e: landlock::RulesetError) -> String {
    format!("landlock: {e}")
}

/// `"network": false` needs Landlock's network rules (ABI [`NET_ABI`]).
fn network_abi_check(sb: &Rules<'_>, n: i32) -> Result<(), String> {
    if sb.network || n >= NET_ABI {
        return Ok(());
    }
    let how = match std::env::var(ABI_OVERRIDE_VAR) {
        Ok(v) => format!(" ({ABI_OVERRIDE_VAR}={v})"),
        Err(_) => String::new(),
    };
    Err(format!(
        "\"network\": false needs Landlock ABI {NET_ABI} (Linux 6.7 or later) and this kernel has ABI {n}{how}; allow the network with \"sandbox\": {{\"network\": true}} or use a newer kernel"
    ))
}

/// The ruleset, every access of the kernel's ABI handled (so denied unless a rule grants it):
/// files, the network when it is not allowed, signals (and abstract sockets) out of the
/// sandbox's scope where the kernel has scopes.
fn ruleset(sb: &Rules<'_>, n: i32, abi: ABI) -> Result<RulesetCreated, String> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock_error)?;
    if !sb.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(landlock_error)?;
    }
    if n >= SCOPE_ABI {
        let scopes = if sb.network {
            Scope::Signal.into()
        } else {
            Scope::from_all(abi)
        };
        ruleset = ruleset.scope(scopes).map_err(landlock_error)?;
    }
    ruleset.create().map_err(landlock_error)
}

/// Read and execute: everything but /proc, then /proc's entries that are not a process
/// (the server's own is added by the child itself, see `restrict`): no sandboxed server
/// reads harness9's (or any other process's) environ, maps or fds. Landlock answers
/// reads of /proc/PID/environ by a less-confined process with a yes, so it takes a rule.
fn read_rules(mut created: RulesetCreated, abi: ABI) -> Result<RulesetCreated, String> {
    let read = AccessFs::from_read(abi);
    for (dir, skip) in [(Path::new("/"), Some("proc")), (Path::new("/proc"), None)] {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            format!(
                "cannot list {}: {}",
                dir.display(),
                crate::plain_io_error(&e)
            )
        })?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let is_proc = dir == Path::new("/proc");
            // Not a process's directory, not /proc/self and the links into it.
            if Some(name.as_ref()) == skip
                || (is_proc
                    && (name.bytes().all(|b| b.is_ascii_digit())
                        || entry.file_type().map(|t| t.is_symlink()).unwrap_or(true)))
            {
                continue;
            }
            // A link from / into /proc would grant what the rule leaves out.
            if !is_proc && std::fs::canonicalize(entry.path()).is_ok_and(|p| p.starts_with("/proc"))
            {
                continue;
            }
            // An entry that went away or cannot be opened is simply not readable.
            let Ok(fd) = PathFd::new(entry.path()) else {
                continue;
            };
            let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            let access = if is_dir {
                read
            } else {
                read & AccessFs::from_file(abi)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock_error)?;
        }
    }
    Ok(created)
}

/// Write access to `writable` (each must exist) and to the harmless devices that exist.
fn write_rules(
    mut created: RulesetCreated,
    abi: ABI,
    writable: Vec<&Path>,
) -> Result<RulesetCreated, String> {
    let open = |p: &Path| {
        PathFd::new(p).map_err(|e| format!("cannot open {}: {}", p.display(), source_of(&e)))
    };
    let devices = DEVICES.iter().map(Path::new);
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
                    crate::plain_io_error(&e)
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
            .map_err(landlock_error)?;
    }
    Ok(created)
}

/// The seccomp filter that keeps a child off the network's sockets (`None`: Landlock alone
/// where the network is allowed and this architecture has no filter).
fn network_filter(network: bool) -> Result<Option<Vec<libc::sock_filter>>, String> {
    let filter = socket_filter(network);
    match (filter.is_empty(), network) {
        (false, _) => Ok(Some(filter)),
        // Landlock alone, as on every architecture without a filter here.
        (true, true) => Ok(None),
        (true, false) => Err(
            "\"network\": false needs a seccomp filter harness9 has only for x86_64 and aarch64; allow the network with \"sandbox\": {\"network\": true}"
                .to_owned(),
        ),
    }
}

/// The carve-outs of `read_only` inside `writable` as C strings for the child; an error when
/// one cannot be kept or there are some and no mount namespace can be made.
fn carve_list(writable: &[&Path], read_only: &[PathBuf]) -> Result<Vec<CString>, String> {
    if read_only.is_empty() {
        return Ok(Vec::new());
    }
    let real: Vec<PathBuf> = writable
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let keep = super::carve_outs(&real, read_only)?;
    if keep.is_empty() {
        return Ok(Vec::new());
    }
    carve_out_check().map_err(|e| {
        let names: Vec<String> = keep.iter().map(|p| p.display().to_string()).collect();
        format!(
            "cannot keep {} read-only: {e}; allow user namespaces, or make no writable path hold them",
            names.join(", ")
        )
    })?;
    keep.iter()
        .map(|p| {
            CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                format!(
                    "cannot keep {} read-only: its name holds a NUL byte",
                    p.display()
                )
            })
        })
        .collect()
}

fn source_of(e: &landlock::PathFdError) -> String {
    match e {
        landlock::PathFdError::OpenCall { source, .. } => crate::plain_io_error(source),
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
        let writable = ["/nonexistent/harness9-sandbox".into()];
        let sb = Rules {
            cwd: None,
            scratch: Path::new("/"),
            writable: &writable,
            network: true,
            read_only: &[],
        };
        let Err(e) = prepare(&sb) else {
            panic!("prepared a sandbox with a missing path");
        };
        assert!(
            e.starts_with("writable path /nonexistent/harness9-sandbox cannot be used: No such file or directory"),
            "{e}"
        );
    }
}
