//! The sandbox on Linux: a Landlock ruleset and a seccomp filter. Both are built in the parent
//! (every path opened, the BPF program laid out there); between fork and exec the child only
//! opens its `/proc/self` and adds it to the ruleset, drops its capabilities, and calls
//! `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self` and `seccomp(SET_MODE_FILTER)`:
//! async-signal-safe syscalls, no allocation.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
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
        unsafe {
            cmd.pre_exec(move || restrict(fd, read, filter));
        }
    }
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
    // Read and execute: everything but /proc, then /proc's entries that are not a process
    // (the server's own is added by the child itself, see `restrict`): no sandboxed server
    // reads harness9's (or any other process's) environ, maps or fds. Landlock answers
    // reads of /proc/PID/environ by a less-confined process with a yes, so it takes a rule.
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
                .map_err(landlock)?;
        }
    }
    // Not the project, not the config's folder, not the shared temp dir, not /dev/shm (shared
    // by every process of the machine: a place to plant files for others).
    let mut writable: Vec<&Path> = sb.cwd.into_iter().chain([sb.scratch]).collect();
    writable.extend(sb.writable.iter().map(|p| p.as_path()));
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
            .map_err(landlock)?;
    }
    let filter = socket_filter(sb.network);
    let filter = match (filter.is_empty(), sb.network) {
        (false, _) => Some(filter),
        // Landlock alone, as on every architecture without a filter here.
        (true, true) => None,
        (true, false) => {
            return Err(
                "\"network\": false needs a seccomp filter harness9 has only for x86_64 and aarch64; allow the network with \"sandbox\": {\"network\": true}"
                    .to_owned(),
            )
        }
    };
    let fd: Option<OwnedFd> = created.into();
    match fd {
        Some(fd) => Ok(Prepared {
            fd,
            filter,
            read: read.bits(),
        }),
        None => Err("landlock: the kernel did not create a ruleset".to_owned()),
    }
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
