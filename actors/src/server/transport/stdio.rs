//! The stdio transport: a child process spawned in its own process group (in its sandbox if it
//! has one; [`spawn`], for any transport over a child), its stdin written by a separate task fed
//! by the write queue, its stdout read as a stream of NDJSON frames and its stderr as the
//! server's log, both polled by the actor as [`TransportEvent`]s, and its exit as one more.

use std::process::Stdio as Piped;

use futures_util::stream;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::mpsc;

use super::{
    read_lines, read_log, write_lines, Attach, Opened, Process, Transport, TransportEvent,
    WRITE_QUEUE,
};
use crate::server::process::{describe_exit, plain_io_error, register_group};
use crate::server::sandbox::Scratch;
use crate::spec::{ServerSpec, TransportSpec};

/// The longest stderr line kept whole.
const STDERR_LINE_MAX: usize = 64 * 1024;

/// The variables of harness9's environment every server gets (as codex does): who and where
/// the user is, how text is shown. Nothing else: no API keys, no tokens, no `$TMUX`, no
/// `$SSH_AUTH_SOCK`, no `$DBUS_SESSION_BUS_ADDRESS`. An entry's `env` (and `envFile`) adds more,
/// `${VAR}` taking a value from harness9's environment.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "LANG", "TERM", "TMPDIR", "TZ",
];

/// Whether `key` passes from harness9's environment to a server: [`INHERITED_ENV`] and `LC_*`
/// (on Windows also what its programs need to start, names compared ignoring case).
fn inherited(key: &std::ffi::OsStr) -> bool {
    let Some(k) = key.to_str() else {
        return false;
    };
    INHERITED_ENV.contains(&k)
        || k.starts_with("LC_")
        || harness9_platform::command::inherited_env(k, INHERITED_ENV)
}

/// The part of harness9's environment that passes to servers ([`inherited`]), read once:
/// harness9 never changes its own environment, and each spawn would otherwise copy all of it
/// to keep a few variables.
fn inherited_env() -> &'static [(std::ffi::OsString, std::ffi::OsString)] {
    static ENV: std::sync::OnceLock<Vec<(std::ffi::OsString, std::ffi::OsString)>> =
        std::sync::OnceLock::new();
    ENV.get_or_init(|| std::env::vars_os().filter(|(k, _)| inherited(k)).collect())
}

/// A child process speaking NDJSON on its stdin and stdout.
pub(in crate::server) struct Stdio;

impl Transport for Stdio {
    fn open(spec: &ServerSpec, to: &mut impl Attach) -> Result<Opened, String> {
        let Spawned {
            mut child,
            process,
            stdin,
            stdout,
            stderr,
        } = spawn(spec)?;
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        actix_rt::spawn(write_lines(stdin, rx));
        to.attach(read_lines(stdout, spec.max_message_bytes));
        to.attach(read_log(stderr, STDERR_LINE_MAX));
        let exit = stream::once(async move {
            TransportEvent::Exited(match child.wait().await {
                Ok(s) => describe_exit(&s),
                Err(e) => format!("could not be waited for: {e}"),
            })
        });
        to.attach(exit);
        Ok(Opened {
            writer: tx,
            process: Some(process),
            headers: false,
        })
    }
}

/// A server process just spawned: its pipes, the handle to wait for it, and the [`Process`]
/// the actor keeps (its group, its scratch directory).
pub(in crate::server) struct Spawned {
    pub(in crate::server) child: Child,
    pub(in crate::server) process: Process,
    pub(in crate::server) stdin: ChildStdin,
    pub(in crate::server) stdout: ChildStdout,
    pub(in crate::server) stderr: ChildStderr,
}

/// Spawns `spec`'s command in its own process group, in its sandbox if it has one, with the
/// allowlisted environment and the entry's own (what any transport over a child process, such
/// as HTTP over stdio, starts with).
pub(in crate::server) fn spawn(spec: &ServerSpec) -> Result<Spawned, String> {
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = &spec.transport
    else {
        return Err("not a stdio server".to_owned());
    };
    if let Some(dir) = cwd {
        if !dir.is_dir() {
            return Err(format!("cwd {} is not a directory", dir.display()));
        }
    }
    // What its approval vouched for, as it is now: a script rewritten since does not run.
    for pin in &spec.pinned {
        pin.check(&spec.name)?;
    }
    // Built here, enforced by the child between fork and exec (or by `sandbox-exec` on
    // macOS, which the command then runs); dropped after the spawn.
    let not_applied =
        |e: String| format!("sandbox cannot be applied, so the server is not started: {e}");
    let mut scratch = None;
    let sandbox = match &spec.sandbox {
        Some(sb) => {
            let dir = Scratch::create().map_err(not_applied)?;
            let prepared = crate::server::sandbox::prepare(sb, cwd.as_deref(), dir.path())
                .map_err(not_applied)?;
            scratch = Some(dir);
            Some(prepared)
        }
        None => None,
    };
    // On Windows resolved on PATH with PATHEXT, a `.cmd` shim (npx) run through cmd.exe.
    let cmd = harness9_platform::command::program(command, args)?;
    let mut cmd = match &sandbox {
        Some(prepared) => prepared.wrap(cmd),
        None => cmd,
    };
    // Only the allowlisted part of harness9's environment (no API keys), then the entry's.
    cmd.env_clear()
        .envs(inherited_env().iter().map(|(k, v)| (k, v)))
        .stdin(Piped::piped())
        .stdout(Piped::piped())
        .stderr(Piped::piped())
        .kill_on_drop(true);
    harness9_platform::process::new_group(&mut cmd);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    if let Some(dir) = &scratch {
        cmd.env("TMPDIR", dir.path());
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let spawned = cmd.spawn();
    drop(sandbox);
    // What an error shows of the command: its written form (a `${VAR}` value in a path is
    // named, not printed).
    let command = crate::telemetry::written_form(command);
    let mut child = spawned.map_err(|e| match &spec.sandbox {
        Some(_) => format!("spawn {command} in its sandbox: {}", plain_io_error(&e)),
        None => format!("spawn {command}: {}", plain_io_error(&e)),
    })?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    register_group(pgid);
    tracing::debug!(target: "mcp", server = %spec.name, pid = pgid, %command, "spawned");
    let process = Process {
        pgid,
        exited: false,
        scratch,
    };

    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(format!("spawn {command}: stdio pipes missing"));
    };
    // Large messages (a 10k-tool listing) arrive in fewer, larger reads; best effort.
    let _ = harness9_platform::process::widen_pipe(&stdout);
    Ok(Spawned {
        child,
        process,
        stdin,
        stdout,
        stderr,
    })
}
