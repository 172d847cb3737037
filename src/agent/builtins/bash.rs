//! The `bash` built-in: the command in its own registered process group, a timeout with SIGTERM
//! then SIGKILL, output capped to its first and last halves.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use harness9_actors::error::{fmt_duration, CallError};
use harness9_actors::server::{register_group, unregister_group};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{cancelled, plain_io, Args, Reply, Shared, BASH_DRAIN, BASH_KILL_GRACE};

use harness9_platform::process::Signal;

use super::shell_sandbox::Confined;

/// A registered process group: killed (SIGKILL) and forgotten when dropped, which sweeps any
/// background process the command left and covers a dropped call future.
pub(super) struct Group(i32);

impl Group {
    pub(super) fn new(pgid: i32) -> Self {
        register_group(pgid);
        Self(pgid)
    }

    /// A `pgid` of 1 or less (init, our own group) is never signalled (the child was started
    /// in a group of its own).
    pub(super) fn signal(&self, sig: Signal) {
        harness9_platform::process::signal_group(self.0, sig);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(Signal::Kill);
        unregister_group(self.0);
    }
}

/// How a command's wait ended.
pub(super) enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    WaitFailed(io::Error),
}

pub(super) async fn bash(
    sh: &Shared,
    args: &Args,
    cancel: &CancellationToken,
) -> Result<Reply, CallError> {
    let parsed = (args.str_req("command"), args.num_opt("timeout_sec"));
    let (command, timeout) = match parsed {
        (Ok(c), Ok(t)) => (c, t),
        (Err(e), _) | (_, Err(e)) => return Ok(Reply::from(Err(e))),
    };
    let max = sh.opts.max_timeout;
    let timeout = match timeout {
        None => sh.opts.default_timeout,
        Some(s) if s > 0.0 && s <= max.as_secs_f64() => Duration::from_secs_f64(s),
        Some(s) => {
            return Ok(Reply::from(Err(format!(
                "tool \"bash\": timeout_sec must be more than 0 and at most {}, got {s}",
                max.as_secs()
            ))))
        }
    };
    match run_bash(sh, &command, timeout, cancel).await {
        Ok(r) => r,
        Err(e) => Ok(Reply::from(Err(format!(
            "tool \"bash\": unable to start bash in {}: {}",
            sh.root.display(),
            plain_io(&e)
        )))),
    }
}

/// Spawns the command and waits for it; the outer `Err` is a failure to start it.
pub(super) async fn run_bash(
    sh: &Shared,
    command: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> io::Result<Result<Reply, CallError>> {
    // A missing working directory is a failure to start, said as such (not a sandbox error).
    std::fs::metadata(&sh.root)?;
    // The sandbox first: a command that cannot be confined does not run.
    // Where a looser shell works: the user's own settings file (a project's may only tighten).
    let own = match &sh.opts.policy {
        Some(p) => p.own_settings(),
        None => crate::model::settings::own_settings(None),
    };
    let protected = sh.opts.protected.as_ref();
    let confined = match super::shell_sandbox::confine(sh.opts.shell, &sh.root, protected, &own) {
        Ok(c) => c,
        Err(e) => {
            return Ok(Ok(Reply {
                text: format!("tool \"bash\": {e}"),
                is_error: true,
            }))
        }
    };
    // `confined` (the ruleset's fd, the filter's memory) outlives the spawn and the run.
    let mut run = Running::start(sh, command, confined.as_ref())?;
    let reply = match run.wait(timeout, cancel).await {
        End::Cancelled => {
            run.kill().await;
            let pgid = run.pgid;
            drop(run);
            tracing::debug!(target: "builtin", pid = pgid, "bash cancelled");
            return Ok(Err(cancelled("bash")));
        }
        End::TimedOut => run.timed_out(timeout, sh.opts.max_timeout).await,
        End::WaitFailed(e) => run.wait_failed(&e),
        End::Exited(status) => run.exited(&status, confined.as_ref(), &own),
    };
    // Dropping the group kills whatever the command left running in it.
    drop(run);
    Ok(Ok(reply))
}

/// A started command: its group (dropped first: killed), the shell, the pipe of its output
/// and what was read of it.
struct Running {
    group: Group,
    child: tokio::process::Child,
    reader: harness9_platform::process::PipeReader,
    pgid: i32,
    output: CappedOutput,
    buf: Vec<u8>,
    /// The pipe is at its end (or failed).
    eof: bool,
}

impl Running {
    /// Starts `command` in `sh.root` in a group of its own, stdin closed, stdout and stderr
    /// one pipe (their output stays in the order it was written), confined when `confined`.
    fn start(sh: &Shared, command: &str, confined: Option<&Confined>) -> io::Result<Self> {
        let (reader, out, err) = harness9_platform::process::output_pipe()?;
        // `bash -c`; PowerShell on Windows (harness9_platform::command).
        let cmd = harness9_platform::command::shell(command);
        let mut cmd = match confined {
            Some(c) => c.prepared.wrap(cmd),
            None => cmd,
        };
        cmd.current_dir(&sh.root)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true);
        harness9_platform::process::new_group(&mut cmd);
        if let Some(c) = confined {
            cmd.env("TMPDIR", c.scratch.path());
        }
        let spawned = cmd.spawn();
        // The command holds our copies of the write end: drop it so EOF comes when the child's
        // processes are done with the pipe.
        drop(cmd);
        let child = spawned?;
        let pgid = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| io::Error::other("bash exited before its pid was read"))?;
        let group = Group::new(pgid);
        tracing::debug!(target: "builtin", pid = pgid, %command, "bash started");
        Ok(Self {
            group,
            child,
            reader,
            pgid,
            output: CappedOutput::new(sh.opts.output_limit),
            buf: vec![0u8; 16 * 1024],
            eof: false,
        })
    }

    /// Reads the output until the shell has exited and the pipe is at its end (or, while a
    /// background process holds the pipe, [`BASH_DRAIN`] after the exit), the timeout, or
    /// the cancellation.
    async fn wait(&mut self, timeout: Duration, cancel: &CancellationToken) -> End {
        let deadline = Instant::now() + timeout;
        let mut drain_until = deadline;
        let mut status = None;
        loop {
            if let (Some(s), true) = (status, self.eof) {
                return End::Exited(s);
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return End::Cancelled,
                r = self.reader.read(&mut self.buf), if !self.eof => match r {
                    Ok(n) if n > 0 => self.output.push(&self.buf[..n]),
                    // EOF, or a read error, which ends the output the same way.
                    _ => self.eof = true,
                },
                s = self.child.wait(), if status.is_none() => match s {
                    Ok(s) => {
                        status = Some(s);
                        drain_until = Instant::now() + BASH_DRAIN;
                    }
                    Err(e) => return End::WaitFailed(e),
                },
                // The shell exited but a background process still holds the pipe.
                _ = tokio::time::sleep_until(drain_until), if status.is_some() => match status {
                    Some(s) => return End::Exited(s),
                    None => continue,
                },
                _ = tokio::time::sleep_until(deadline) => return End::TimedOut,
            }
        }
    }

    /// Kills the group (cancelled) and waits a moment for the shell.
    async fn kill(&mut self) {
        self.group.signal(Signal::Kill);
        let _ = tokio::time::timeout(BASH_KILL_GRACE, self.child.wait()).await;
    }

    /// Past its timeout: SIGTERM, a grace, SIGKILL, the rest of the output, and what to do.
    async fn timed_out(&mut self, timeout: Duration, max: Duration) -> Reply {
        self.group.signal(Signal::Term);
        if tokio::time::timeout(BASH_KILL_GRACE, self.child.wait())
            .await
            .is_err()
        {
            tracing::debug!(target: "builtin", pid = self.pgid, "bash ignored SIGTERM");
        }
        self.kill().await;
        drain(&mut self.reader, &mut self.buf, &mut self.output, !self.eof).await;
        let mut text = self.output.render();
        end_line(&mut text);
        let _ = write!(
            text,
            "command timed out after {}; pass a larger timeout_sec (max {})",
            fmt_duration(timeout),
            max.as_secs()
        );
        Reply {
            text,
            is_error: true,
        }
    }

    /// Waiting for the shell failed: it is killed.
    fn wait_failed(&mut self, e: &io::Error) -> Reply {
        self.group.signal(Signal::Kill);
        let mut text = self.output.render();
        end_line(&mut text);
        let _ = write!(
            text,
            "unable to wait for the command: {}; it was killed",
            plain_io(e)
        );
        Reply {
            text,
            is_error: true,
        }
    }

    /// The shell exited: its output and exit, and, when a confined command failed, a note on
    /// what the sandbox may have refused.
    fn exited(&self, status: &ExitStatus, confined: Option<&Confined>, own: &str) -> Reply {
        let mut text = self.output.render();
        if text.is_empty() {
            text.push_str("(no output)");
        }
        end_line(&mut text);
        text.push_str(&describe_exit(status));
        let note = match (confined, status.success()) {
            (Some(c), false) => {
                let (w, ro) = (&c.writable, &c.read_only);
                super::shell_sandbox::refusal_note(&text, w, ro, c.network, own)
            }
            _ => None,
        };
        if let Some(note) = note {
            text.push('\n');
            text.push_str(&note);
        }
        Reply {
            text,
            is_error: !status.success(),
        }
    }
}

/// Reads what is left in the pipe for a moment after the group was killed.
pub(super) async fn drain(
    reader: &mut harness9_platform::process::PipeReader,
    buf: &mut [u8],
    output: &mut CappedOutput,
    open: bool,
) {
    if !open {
        return;
    }
    let _ = tokio::time::timeout(BASH_DRAIN, async {
        while let Ok(n) = reader.read(buf).await {
            if n == 0 {
                break;
            }
            output.push(&buf[..n]);
        }
    })
    .await;
}

pub(super) fn end_line(text: &mut String) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

/// `exit code 2`, `killed by signal 9 (SIGKILL)`.
pub(super) fn describe_exit(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match harness9_platform::process::exit_signal(status) {
        Some(sig) => match harness9_platform::process::signal_name(sig) {
            Some(name) => format!("killed by signal {sig} ({name})"),
            None => format!("killed by signal {sig}"),
        },
        None => "exited".to_owned(),
    }
}

/// Output kept within a byte limit: the first half and the last half, counting what fell between.
pub(super) struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: usize,
}

impl CappedOutput {
    pub(super) fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: limit - head_cap,
            total: 0,
        }
    }

    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let over = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..over);
            self.tail.extend(bytes);
        }
    }

    /// The text, with a note where the middle was cut; split UTF-8 characters at the cut are
    /// dropped rather than garbled.
    pub(super) fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let kept = self.head.len() + tail.len();
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = match std::str::from_utf8(&self.head) {
            Ok(_) => &self.head[..],
            // Cut a character split at the end (an invalid sequence earlier stays for lossy).
            Err(e) if e.error_len().is_none() => &self.head[..e.valid_up_to()],
            Err(_) => &self.head[..],
        };
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
            .count();
        let tail = &tail[skip..];
        let cut = self.total - head.len() - tail.len();
        let mut text = String::from_utf8_lossy(head).into_owned();
        end_line(&mut text);
        let _ = writeln!(
            text,
            "[... {cut} bytes of output cut here; {} bytes in all ...]",
            self.total
        );
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}
