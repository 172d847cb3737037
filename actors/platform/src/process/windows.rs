//! Process trees on Windows: Job Objects. A child starts suspended ([`new_group`]), then
//! [`adopt`] puts it in a job of its own with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` and resumes
//! it, so everything it starts is in the job too (no race with a grandchild) and the whole tree
//! dies when the job's last handle closes: at [`release`], or when harness9 ends in any way (the
//! system closes its handles). A signal to the group terminates the job: Windows has no SIGTERM
//! for a console program without a console of its own, so Term and Kill both end it at once (a
//! server's polite stop is its closed stdin, before any signal). A pipe's reading end is read by
//! a thread of its own and handed over through a channel.

use std::collections::HashMap;
use std::io::{self, Read as _};
use std::os::windows::io::{FromRawHandle as _, OwnedHandle};
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll};

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Pipes::CreatePipe;
use windows_sys::Win32::System::Threading::{
    OpenProcess, OpenThread, ResumeThread, TerminateProcess, CREATE_NO_WINDOW, CREATE_SUSPENDED,
    PROCESS_SET_QUOTA, PROCESS_TERMINATE, THREAD_SUSPEND_RESUME,
};

use super::Signal;

/// A handle we own, closed when dropped.
struct Handle(HANDLE);

// SAFETY: a kernel handle may be used and closed from any thread.
unsafe impl Send for Handle {}

impl Handle {
    fn open(h: HANDLE) -> Option<Handle> {
        (!h.is_null() && h != INVALID_HANDLE_VALUE).then_some(Handle(h))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle is ours and closed once.
        unsafe {
            CloseHandle(self.0);
        }
    }
}

/// The live jobs, by their first process's pid.
fn jobs() -> &'static Mutex<HashMap<i32, Handle>> {
    static JOBS: OnceLock<Mutex<HashMap<i32, Handle>>> = OnceLock::new();
    JOBS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn with_job<T>(pgid: i32, f: impl FnOnce(HANDLE) -> T) -> Option<T> {
    let map = match jobs().lock() {
        Ok(m) => m,
        Err(e) => e.into_inner(),
    };
    map.get(&pgid).map(|j| f(j.0))
}

/// Starts `cmd`'s child suspended and without a console window of its own; [`adopt`] (through
/// `register_group`, right after the spawn) puts it in its job and resumes it.
pub fn new_group(cmd: &mut tokio::process::Command) {
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
}

/// A new job that kills its processes when its last handle closes.
fn new_job() -> io::Result<Handle> {
    // SAFETY: null attributes and name make an unnamed job with default security.
    let job = Handle::open(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })
        .ok_or_else(io::Error::last_os_error)?;
    // SAFETY: an all-zero JOBOBJECT_EXTENDED_LIMIT_INFORMATION is a valid "no limits" value.
    let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: `info` is the structure this class names, with its size.
    let ok = unsafe {
        SetInformationJobObject(
            job.0,
            JobObjectExtendedLimitInformation,
            (&raw const info).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// Puts the process `pid` in a job of its own, then resumes its threads.
pub(super) fn adopt(pgid: i32) {
    let Ok(pid) = u32::try_from(pgid) else {
        return;
    };
    if pid == 0 {
        return;
    }
    if with_job(pgid, |_| ()).is_some() {
        return;
    }
    let assigned = new_job().and_then(|job| {
        // SAFETY: OpenProcess has no memory preconditions; the handle is closed by `Handle`.
        let process =
            Handle::open(unsafe { OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, 0, pid) })
                .ok_or_else(io::Error::last_os_error)?;
        // SAFETY: both handles are open.
        if unsafe { AssignProcessToJobObject(job.0, process.0) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    });
    match assigned {
        Ok(job) => {
            if let Ok(mut m) = jobs().lock() {
                m.insert(pgid, job);
            }
        }
        Err(e) => {
            tracing::warn!(target: "mcp", pid, "cannot put the child in a job of its own ({e}); it runs without one, and what it starts may outlive harness9");
        }
    }
    resume(pid);
}

/// Resumes every thread of `pid` (a child started suspended has one).
fn resume(pid: u32) {
    // SAFETY: a snapshot of every thread; closed by `Handle`.
    let Some(snap) = Handle::open(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) }) else {
        tracing::warn!(target: "mcp", pid, "cannot list the child's threads to resume it: {}", io::Error::last_os_error());
        return;
    };
    // SAFETY: an all-zero THREADENTRY32 with its size set is what Thread32First takes.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    // SAFETY: `entry` is valid for writes and sized.
    let mut more = unsafe { Thread32First(snap.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: OpenThread has no memory preconditions; closed by `Handle`.
            if let Some(t) =
                Handle::open(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })
            {
                // SAFETY: the handle is open with the right to resume.
                unsafe {
                    ResumeThread(t.0);
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snap.0, &mut entry) } != 0;
    }
}

/// Closes the job of `pgid`: what is still in it is killed.
pub(super) fn release(pgid: i32) {
    let job = match jobs().lock() {
        Ok(mut m) => m.remove(&pgid),
        Err(e) => e.into_inner().remove(&pgid),
    };
    drop(job);
}

pub(super) fn signal_group(pgid: i32, _sig: Signal) {
    with_job(pgid, |job| {
        // SAFETY: the job handle is open while the map holds it.
        unsafe {
            TerminateJobObject(job, 1);
        }
    });
}

pub(super) fn signal(pid: i32, _sig: Signal) {
    let Ok(pid) = u32::try_from(pid) else {
        return;
    };
    // SAFETY: OpenProcess has no memory preconditions; closed by `Handle`.
    if let Some(p) = Handle::open(unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid) }) {
        // SAFETY: the handle is open with the right to terminate.
        unsafe {
            TerminateProcess(p.0, 1);
        }
    }
}

/// Windows sizes a pipe when it creates it (the runtime's, for a child's stdio): nothing to do.
pub fn widen_pipe(_stdout: &tokio::process::ChildStdout) -> Option<usize> {
    None
}

/// The signal that ended a process: Windows has none (an exit code always).
pub fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// No signal names on Windows.
pub fn signal_name(_sig: i32) -> Option<&'static str> {
    None
}

/// Whether the job of `pgid` still has a process.
pub fn group_alive(pgid: i32) -> bool {
    with_job(pgid, |job| {
        // SAFETY: an all-zero accounting structure is valid; the call fills it.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is the structure this class names, with its size.
        let ok = unsafe {
            QueryInformationJobObject(
                job,
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        ok != 0 && info.ActiveProcesses > 0
    })
    .unwrap_or(false)
}

/// The reading end of a child's output pipe: a thread reads the anonymous pipe (which has no
/// asynchronous reads) and hands the bytes over.
pub struct PipeReader {
    rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
    pending: Vec<u8>,
    pos: usize,
}

impl tokio::io::AsyncRead for PipeReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if self.pos < self.pending.len() {
                let n = buf.remaining().min(self.pending.len() - self.pos);
                let start = self.pos;
                buf.put_slice(&self.pending[start..start + n]);
                self.pos += n;
                return Poll::Ready(Ok(()));
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => {
                    self.pending = chunk;
                    self.pos = 0;
                }
                // The end of the output: every writer is closed.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A pipe for a child's stdout and stderr both: its reading end and the two writing ends.
pub fn output_pipe() -> io::Result<(PipeReader, std::process::Stdio, std::process::Stdio)> {
    let mut read: HANDLE = std::ptr::null_mut();
    let mut write: HANDLE = std::ptr::null_mut();
    // SAFETY: both out-pointers are valid; null attributes make handles the child does not
    // inherit (std duplicates the writing end for the child at the spawn).
    if unsafe { CreatePipe(&mut read, &mut write, std::ptr::null(), 0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CreatePipe returned two open handles that nothing else owns.
    let (read, write) = unsafe {
        (
            OwnedHandle::from_raw_handle(read),
            OwnedHandle::from_raw_handle(write),
        )
    };
    let err = write.try_clone()?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    let mut file = std::fs::File::from(read);
    std::thread::Builder::new()
        .name("output-pipe".to_owned())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match file.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.blocking_send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        })?;
    let reader = PipeReader {
        rx,
        pending: Vec::new(),
        pos: 0,
    };
    Ok((reader, write.into(), err.into()))
}

/// Not counted on Windows (handles, not file descriptors): 0.
pub fn open_fd_count() -> usize {
    0
}

/// Not read on Windows: 0.
pub fn rss_kib() -> u64 {
    0
}
