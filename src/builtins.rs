//! The built-in tools (`bash`, `read_file`, `write_file`, `list_dir`, `grep`) and the `Builtins` actor that runs them off the actix thread.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use harness9_actors::error::{fmt_duration, CallError};
use harness9_actors::messages::CallBuiltin;
use harness9_actors::protocol::types::{CallToolResult, ContentBlock, Tool};
use harness9_actors::server::{register_group, unregister_group};
use serde_json::{json, Map, Value};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Lines `read_file` returns when no `limit` is given.
pub const READ_DEFAULT_LINES: u64 = 2000;
/// Characters of one line `read_file` shows before cutting it.
pub const READ_MAX_LINE_CHARS: usize = 2000;
/// Entries `list_dir` shows at most.
pub const LIST_MAX_ENTRIES: usize = 1000;
/// Matches `grep` returns when no `max_results` is given.
pub const GREP_DEFAULT_RESULTS: u64 = 200;
/// Characters of a matching line `grep` shows before cutting it.
const GREP_MAX_LINE_CHARS: usize = 500;
/// Bytes of one line `grep` searches; the rest of a longer line is skipped.
const GREP_MAX_LINE_BYTES: usize = 1 << 20;
/// Bytes at the start of a file in which a NUL byte marks it binary.
const BINARY_SNIFF: usize = 8 * 1024;
/// Directories `grep` never descends into (hidden ones are skipped too).
const SKIP_DIRS: &[&str] = &[".git", "target", "node_modules"];
/// How long output is still read after the shell exits while a background process holds the pipe.
const BASH_DRAIN: Duration = Duration::from_millis(250);
/// Grace between SIGTERM and SIGKILL when a command times out.
const BASH_KILL_GRACE: Duration = Duration::from_secs(1);
/// The executor name in `CallError`s.
const SERVER: &str = "builtin";

/// Limits of the built-in tools.
#[derive(Debug, Clone)]
pub struct BuiltinOptions {
    /// Bytes of `bash` output kept (head and tail); the middle beyond it is cut.
    pub output_limit: usize,
    /// `bash` timeout when the call gives no `timeout_sec`.
    pub default_timeout: Duration,
    /// The largest `timeout_sec` a call may ask for.
    pub max_timeout: Duration,
}

impl Default for BuiltinOptions {
    fn default() -> Self {
        Self {
            output_limit: 30_000,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
        }
    }
}

/// The built-in tool executor: give `Builtins::new(..).start().recipient()` and [`definitions`]
/// to the registry with `SetBuiltins`.
pub struct Builtins {
    shared: Arc<Shared>,
}

struct Shared {
    root: PathBuf,
    opts: BuiltinOptions,
}

impl Builtins {
    /// An executor whose relative paths and shell commands start in `root`.
    pub fn new(root: PathBuf, opts: BuiltinOptions) -> Self {
        Self {
            shared: Arc::new(Shared { root, opts }),
        }
    }
}

impl Actor for Builtins {
    type Context = Context<Self>;
}

impl Handler<CallBuiltin> for Builtins {
    type Result = ResponseFuture<Result<CallToolResult, CallError>>;

    fn handle(&mut self, msg: CallBuiltin, _ctx: &mut Context<Self>) -> Self::Result {
        let shared = self.shared.clone();
        Box::pin(async move { dispatch(shared, msg).await })
    }
}

// ---- definitions --------------------------------------------------------------------------------

/// The built-ins that change things: the TUI asks before each call (unless told not to).
pub const ASK_FIRST: &[&str] = &["bash", "write_file"];

/// The definitions of every built-in tool, described with the default [`BuiltinOptions`].
pub fn definitions() -> Vec<Tool> {
    definitions_with(&BuiltinOptions::default())
}

/// The definitions of every built-in tool, their descriptions quoting `opts`.
pub fn definitions_with(opts: &BuiltinOptions) -> Vec<Tool> {
    let default_secs = opts.default_timeout.as_secs();
    let max_secs = opts.max_timeout.as_secs();
    vec![
        tool(
            "bash",
            format!(
                "Run a shell command with `bash -c` in the working directory and return its \
                 combined stdout and stderr followed by its exit code. Stdin is closed, so \
                 interactive programs will not work. Output over {} bytes is cut in the middle \
                 (the head and the tail are kept). The command is killed after timeout_sec \
                 seconds (default {default_secs}, max {max_secs}); background processes it \
                 started are stopped when it ends. Prefer read_file, list_dir and grep to look \
                 at files.",
                opts.output_limit
            ),
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line, run by bash -c."},
                    "timeout_sec": {
                        "type": "number",
                        "description": format!("Seconds before the command is killed (default {default_secs}, max {max_secs})."),
                    },
                },
                "required": ["command"],
                "additionalProperties": false,
            }),
        ),
        tool(
            "read_file",
            format!(
                "Read a text file. Lines come prefixed with their 1-based line number and a tab. \
                 Returns at most `limit` lines (default {READ_DEFAULT_LINES}) starting at line \
                 `offset` (default 1); lines longer than {READ_MAX_LINE_CHARS} characters are \
                 cut. Paths are relative to the working directory; absolute paths work too. \
                 Binary files are refused."
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to read."},
                    "offset": {"type": "integer", "minimum": 1, "description": "The first line to return, 1-based."},
                    "limit": {"type": "integer", "minimum": 1, "description": format!("How many lines to return (default {READ_DEFAULT_LINES}).")},
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        ),
        tool(
            "write_file",
            "Write `content` to a file, replacing it if it exists and creating missing parent \
             directories. Paths are relative to the working directory; absolute paths work too."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to write."},
                    "content": {"type": "string", "description": "The whole new content of the file."},
                },
                "required": ["path", "content"],
                "additionalProperties": false,
            }),
        ),
        tool(
            "list_dir",
            format!(
                "List a directory's entries, sorted by name, directories marked with a trailing \
                 `/`; at most {LIST_MAX_ENTRIES} entries are shown."
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The directory (default \".\", the working directory)."},
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            "grep",
            format!(
                "Search files recursively for lines matching a regular expression (Rust regex \
                 syntax) and return them as `path:line: text`. Skips .git, target, node_modules, \
                 hidden directories and binary files. Narrow the search with `path` and a `glob` \
                 on file names such as \"*.rs\" or \"*.{{ts,tsx}}\" (a glob with a `/` matches \
                 the path below `path`, `**` spanning directories). Returns at most \
                 max_results matches (default {GREP_DEFAULT_RESULTS})."
            ),
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {"type": "string", "description": "The directory or file to search (default \".\")."},
                    "glob": {"type": "string", "description": "Only files whose name matches, e.g. \"*.rs\"."},
                    "max_results": {"type": "integer", "minimum": 1, "description": format!("The most matches to return (default {GREP_DEFAULT_RESULTS}).")},
                },
                "required": ["pattern"],
                "additionalProperties": false,
            }),
        ),
    ]
}

fn tool(name: &str, description: String, schema: Value) -> Tool {
    Tool {
        name: name.to_owned(),
        title: None,
        description: Some(description),
        input_schema: serde_json::value::to_raw_value(&schema)
            .expect("a serde_json::Value always serializes"),
        output_schema: None,
        annotations: None,
    }
}

// ---- dispatch -----------------------------------------------------------------------------------

/// A tool's answer: text, and whether the model should read it as a failure.
struct Reply {
    text: String,
    is_error: bool,
}

impl Reply {
    fn into_result(self) -> CallToolResult {
        CallToolResult {
            content: vec![ContentBlock::Text { text: self.text }],
            structured_content: None,
            is_error: self.is_error,
        }
    }
}

impl From<Result<String, String>> for Reply {
    fn from(r: Result<String, String>) -> Self {
        match r {
            Ok(text) => Reply {
                text,
                is_error: false,
            },
            Err(text) => Reply {
                text,
                is_error: true,
            },
        }
    }
}

fn cancelled(tool: &str) -> CallError {
    CallError::Cancelled {
        server: SERVER.to_owned(),
        tool: tool.to_owned(),
    }
}

async fn dispatch(sh: Arc<Shared>, msg: CallBuiltin) -> Result<CallToolResult, CallError> {
    let CallBuiltin {
        name,
        arguments,
        cancel,
    } = msg;
    let known: &[&str] = match name.as_str() {
        "bash" => &["command", "timeout_sec"],
        "read_file" => &["path", "offset", "limit"],
        "write_file" => &["path", "content"],
        "list_dir" => &["path"],
        "grep" => &["pattern", "path", "glob", "max_results"],
        _ => return Err(CallError::UnknownTool { name }),
    };
    if cancel.is_cancelled() {
        return Err(cancelled(&name));
    }
    let args = match Args::parse(&name, arguments, known) {
        Ok(a) => a,
        Err(e) => return Ok(Reply::from(Err(e)).into_result()),
    };
    let reply = match name.as_str() {
        "bash" => bash(&sh, &args, &cancel).await?,
        "read_file" => {
            let (path, offset, limit) = match (
                args.path_req("path"),
                args.count_opt("offset"),
                args.count_opt("limit"),
            ) {
                (Ok(p), Ok(o), Ok(l)) => (p, o.unwrap_or(1), l.unwrap_or(READ_DEFAULT_LINES)),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Ok(fail(e)),
            };
            blocking(&name, &cancel, move |_| {
                read_file(&sh.root, &path, offset, limit)
            })
            .await?
        }
        "write_file" => {
            let (path, content) = match (args.path_req("path"), args.str_req("content")) {
                (Ok(p), Ok(c)) => (p, c),
                (Err(e), _) | (_, Err(e)) => return Ok(fail(e)),
            };
            blocking(&name, &cancel, move |_| {
                write_file(&sh.root, &path, &content)
            })
            .await?
        }
        "list_dir" => {
            let path = match args.path_opt("path") {
                Ok(p) => p.unwrap_or_else(|| ".".to_owned()),
                Err(e) => return Ok(fail(e)),
            };
            blocking(&name, &cancel, move |_| list_dir(&sh.root, &path)).await?
        }
        _ => {
            let parsed = (
                args.str_req("pattern"),
                args.path_opt("path"),
                args.str_opt("glob"),
                args.count_opt("max_results"),
            );
            let (pattern, path, glob, max) = match parsed {
                (Ok(pt), Ok(p), Ok(g), Ok(m)) => (
                    pt,
                    p.unwrap_or_else(|| ".".to_owned()),
                    g,
                    m.unwrap_or(GREP_DEFAULT_RESULTS),
                ),
                (Err(e), _, _, _) | (_, Err(e), _, _) | (_, _, Err(e), _) | (_, _, _, Err(e)) => {
                    return Ok(fail(e))
                }
            };
            blocking(&name, &cancel, move |cancel| {
                grep(&sh.root, &pattern, &path, glob.as_deref(), max, cancel)
            })
            .await?
        }
    };
    Ok(reply.into_result())
}

fn fail(text: String) -> CallToolResult {
    Reply::from(Err(text)).into_result()
}

/// Runs `f` on the blocking pool; cancellation ends the call at once (`f` sees the token too).
async fn blocking<F>(tool: &str, cancel: &CancellationToken, f: F) -> Result<Reply, CallError>
where
    F: FnOnce(&CancellationToken) -> Result<String, String> + Send + 'static,
{
    let token = cancel.clone();
    let task = tokio::task::spawn_blocking(move || f(&token));
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(cancelled(tool)),
        r = task => Ok(Reply::from(r.unwrap_or_else(|e| {
            Err(format!("tool \"{tool}\" failed unexpectedly: {e}"))
        }))),
    }
}

// ---- arguments ----------------------------------------------------------------------------------

/// A call's arguments object, with typed getters whose errors name the tool and the argument.
struct Args {
    tool: String,
    map: Map<String, Value>,
}

impl Args {
    fn parse(tool: &str, arguments: Option<Value>, known: &[&str]) -> Result<Self, String> {
        let map = match arguments {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "tool \"{tool}\": arguments must be a JSON object, got {}",
                    kind_of(&other)
                ))
            }
        };
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "tool \"{tool}\": unknown argument \"{unknown}\"; it takes {}",
                known.join(", ")
            ));
        }
        Ok(Self {
            tool: tool.to_owned(),
            map,
        })
    }

    /// The value of `key`; `null` counts as absent.
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn missing(&self, key: &str) -> String {
        format!(
            "tool \"{}\": missing required argument \"{key}\"",
            self.tool
        )
    }

    fn str_opt(&self, key: &str) -> Result<Option<String>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "tool \"{}\": argument \"{key}\" must be a string, got {}",
                self.tool,
                kind_of(other)
            )),
        }
    }

    fn str_req(&self, key: &str) -> Result<String, String> {
        self.str_opt(key)?.ok_or_else(|| self.missing(key))
    }

    fn path_opt(&self, key: &str) -> Result<Option<String>, String> {
        match self.str_opt(key)? {
            Some(p) if p.trim().is_empty() => Err(format!(
                "tool \"{}\": argument \"{key}\" is empty; give a path relative to the working directory or an absolute one",
                self.tool
            )),
            p => Ok(p),
        }
    }

    fn path_req(&self, key: &str) -> Result<String, String> {
        self.path_opt(key)?.ok_or_else(|| self.missing(key))
    }

    /// A number; a numeric string is accepted too (models send them).
    fn num_opt(&self, key: &str) -> Result<Option<f64>, String> {
        let bad = |v: &Value| {
            format!(
                "tool \"{}\": argument \"{key}\" must be a number, got {}",
                self.tool,
                kind_of(v)
            )
        };
        match self.get(key) {
            None => Ok(None),
            Some(v @ Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| bad(v)),
            Some(v @ Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad(v)),
            Some(v) => Err(bad(v)),
        }
    }

    /// A whole number of at least 1.
    fn count_opt(&self, key: &str) -> Result<Option<u64>, String> {
        match self.num_opt(key)? {
            None => Ok(None),
            Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => Ok(Some(n as u64)),
            Some(n) => Err(format!(
                "tool \"{}\": argument \"{key}\" must be a whole number of at least 1, got {n}",
                self.tool
            )),
        }
    }
}

fn kind_of(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.chars().count() > 40 => "a string".to_owned(),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// `path` relative to `root` unless absolute.
fn resolve(root: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

/// An io error without Rust's ` (os error N)` suffix: `Permission denied`.
fn plain_io(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// `file not found: src/x.rs` or `unable to read src/x.rs: Permission denied`.
fn io_failure(tool: &str, verb: &str, what: &str, path: &str, e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::NotFound {
        format!("tool \"{tool}\": {what} not found: {path}; list_dir shows what exists")
    } else {
        format!("tool \"{tool}\": unable to {verb} {path}: {}", plain_io(e))
    }
}

// ---- bash ---------------------------------------------------------------------------------------

/// A registered process group: killed (SIGKILL) and forgotten when dropped, which sweeps any
/// background process the command left and covers a dropped call future.
struct Group(i32);

impl Group {
    fn new(pgid: i32) -> Self {
        register_group(pgid);
        Self(pgid)
    }

    fn signal(&self, sig: i32) {
        if self.0 > 1 {
            // SAFETY: killpg has no memory-safety preconditions; pgid > 1 never targets init or
            // our own group (the child was started with process_group(0)).
            unsafe {
                libc::killpg(self.0, sig);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        unregister_group(self.0);
    }
}

/// How a command's wait ended.
enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    WaitFailed(io::Error),
}

async fn bash(sh: &Shared, args: &Args, cancel: &CancellationToken) -> Result<Reply, CallError> {
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
async fn run_bash(
    sh: &Shared,
    command: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> io::Result<Result<Reply, CallError>> {
    // One pipe for stdout and stderr keeps their output in the order it was written.
    let (writer, mut reader) = tokio::net::unix::pipe::pipe()?;
    let out = writer.into_blocking_fd()?;
    let err = out.try_clone()?;
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&sh.root)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .kill_on_drop(true)
        .process_group(0);
    let spawned = cmd.spawn();
    // The command holds our copies of the write end: drop it so EOF comes when the child's
    // processes are done with the pipe.
    drop(cmd);
    let mut child = spawned?;
    let pgid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .ok_or_else(|| io::Error::other("bash exited before its pid was read"))?;
    let group = Group::new(pgid);
    tracing::debug!(target: "builtin", pid = pgid, %command, "bash started");

    let mut output = CappedOutput::new(sh.opts.output_limit);
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = Instant::now() + timeout;
    let mut drain_until = deadline;
    let mut status = None;
    let mut eof = false;
    let end = loop {
        if let (Some(s), true) = (status, eof) {
            break End::Exited(s);
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break End::Cancelled,
            r = reader.read(&mut buf), if !eof => match r {
                Ok(n) if n > 0 => output.push(&buf[..n]),
                // EOF, or a read error, which ends the output the same way.
                _ => eof = true,
            },
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => {
                    status = Some(s);
                    drain_until = Instant::now() + BASH_DRAIN;
                }
                Err(e) => break End::WaitFailed(e),
            },
            // The shell exited but a background process still holds the pipe.
            _ = tokio::time::sleep_until(drain_until), if status.is_some() => match status {
                Some(s) => break End::Exited(s),
                None => continue,
            },
            _ = tokio::time::sleep_until(deadline) => break End::TimedOut,
        }
    };

    let reply = match end {
        End::Cancelled => {
            group.signal(libc::SIGKILL);
            let _ = tokio::time::timeout(BASH_KILL_GRACE, child.wait()).await;
            drop(group);
            tracing::debug!(target: "builtin", pid = pgid, "bash cancelled");
            return Ok(Err(cancelled("bash")));
        }
        End::TimedOut => {
            group.signal(libc::SIGTERM);
            if tokio::time::timeout(BASH_KILL_GRACE, child.wait())
                .await
                .is_err()
            {
                tracing::debug!(target: "builtin", pid = pgid, "bash ignored SIGTERM");
            }
            group.signal(libc::SIGKILL);
            let _ = tokio::time::timeout(BASH_KILL_GRACE, child.wait()).await;
            drain(&mut reader, &mut buf, &mut output, !eof).await;
            let mut text = output.render();
            end_line(&mut text);
            let _ = write!(
                text,
                "command timed out after {}; pass a larger timeout_sec (max {})",
                fmt_duration(timeout),
                sh.opts.max_timeout.as_secs()
            );
            Reply {
                text,
                is_error: true,
            }
        }
        End::WaitFailed(e) => {
            group.signal(libc::SIGKILL);
            let mut text = output.render();
            end_line(&mut text);
            let _ = write!(
                text,
                "unable to wait for the command: {}; it was killed",
                plain_io(&e)
            );
            Reply {
                text,
                is_error: true,
            }
        }
        End::Exited(status) => {
            let mut text = output.render();
            if text.is_empty() {
                text.push_str("(no output)");
            }
            end_line(&mut text);
            text.push_str(&describe_exit(&status));
            Reply {
                text,
                is_error: !status.success(),
            }
        }
    };
    // Dropping the group kills whatever the command left running in it.
    drop(group);
    Ok(Ok(reply))
}

/// Reads what is left in the pipe for a moment after the group was killed.
async fn drain(
    reader: &mut tokio::net::unix::pipe::Receiver,
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

fn end_line(text: &mut String) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
}

/// `exit code 2`, `killed by signal 9 (SIGKILL)`.
fn describe_exit(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match status.signal() {
        Some(sig) => {
            let name = match sig {
                libc::SIGHUP => " (SIGHUP)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGPIPE => " (SIGPIPE)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGABRT => " (SIGABRT)",
                _ => "",
            };
            format!("killed by signal {sig}{name}")
        }
        None => "exited".to_owned(),
    }
}

/// Output kept within a byte limit: the first half and the last half, counting what fell between.
struct CappedOutput {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: usize,
}

impl CappedOutput {
    fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: limit - head_cap,
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
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
    fn render(&self) -> String {
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

// ---- files --------------------------------------------------------------------------------------

/// A text file being read: its sniffed first bytes, then the rest.
type TextReader = BufReader<io::Chain<io::Cursor<Vec<u8>>, File>>;

/// Opens `path` for reading text: `None` for a file with a NUL byte in its first 8 KiB, an
/// `IsADirectory` error for a directory.
fn open_text(path: &Path) -> io::Result<Option<TextReader>> {
    let mut file = File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::from(io::ErrorKind::IsADirectory));
    }
    let mut first = Vec::with_capacity(BINARY_SNIFF);
    (&mut file)
        .take(BINARY_SNIFF as u64)
        .read_to_end(&mut first)?;
    if first.contains(&0) {
        return Ok(None);
    }
    Ok(Some(BufReader::with_capacity(
        64 * 1024,
        Read::chain(io::Cursor::new(first), file),
    )))
}

/// Reads one line (without its `\n` or `\r\n`) keeping at most `keep` bytes of it in `line`;
/// returns the line's full length, or `None` at the end of the input.
fn read_line_capped(
    r: &mut impl BufRead,
    keep: usize,
    line: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    line.clear();
    let mut len = 0;
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&part[..room.min(part.len())]);
        len += part.len();
        let used = done.unwrap_or(part.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if line.last() == Some(&b'\r') && line.len() == len {
        line.pop();
        len -= 1;
    }
    Ok(Some(len))
}

fn read_file(root: &Path, path: &str, offset: u64, limit: u64) -> Result<String, String> {
    let full = resolve(root, path);
    let mut reader = match open_text(&full) {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(format!(
                "tool \"read_file\": {path} is a binary file (it has NUL bytes); read_file shows text only"
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
            return Err(format!(
                "tool \"read_file\": {path} is a directory; use list_dir to see its entries"
            ))
        }
        Err(e) => return Err(io_failure("read_file", "read", "file", path, &e)),
    };
    let read_err = |e: io::Error| io_failure("read_file", "read", "file", path, &e);
    // A character is at most 4 bytes: keeping this many bytes always covers the shown part.
    let keep = READ_MAX_LINE_CHARS * 4;
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut out = String::new();
    let last = offset.saturating_add(limit - 1);
    while number < last {
        let keep_now = if number + 1 >= offset { keep } else { 0 };
        let Some(len) = read_line_capped(&mut reader, keep_now, &mut line).map_err(read_err)?
        else {
            break;
        };
        number += 1;
        if number < offset {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let _ = write!(out, "{number:>6}\t");
        match text.char_indices().nth(READ_MAX_LINE_CHARS) {
            Some((cut, _)) => {
                out.push_str(&text[..cut]);
                let _ = write!(out, " [... line cut; it is {len} bytes long]");
            }
            None => out.push_str(&text),
        }
        out.push('\n');
    }
    if number == 0 {
        return Ok(format!("({path} is empty)"));
    }
    if number < offset {
        return Err(format!(
            "tool \"read_file\": {path} has only {number} lines; offset {offset} is past its end"
        ));
    }
    let more = read_line_capped(&mut reader, 0, &mut line).map_err(read_err)?;
    if more.is_some() {
        let _ = write!(
            out,
            "({path} goes on after line {number}; pass offset {} to read more)",
            number + 1
        );
    }
    Ok(out)
}

fn write_file(root: &Path, path: &str, content: &str) -> Result<String, String> {
    let full = resolve(root, path);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            format!(
                "tool \"write_file\": unable to create the directory {}: {}",
                parent.display(),
                plain_io(&e)
            )
        })?;
    }
    std::fs::write(&full, content).map_err(|e| {
        format!(
            "tool \"write_file\": unable to write {path}: {}",
            plain_io(&e)
        )
    })?;
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

fn list_dir(root: &Path, path: &str) -> Result<String, String> {
    let full = resolve(root, path);
    let entries = match std::fs::read_dir(&full) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            return Err(format!(
                "tool \"list_dir\": {path} is a file, not a directory; use read_file to read it"
            ))
        }
        Err(e) => return Err(io_failure("list_dir", "list", "directory", path, &e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_failure("list_dir", "list", "directory", path, &e))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = match entry.file_type() {
            Ok(t) if t.is_symlink() => entry.path().is_dir(),
            Ok(t) => t.is_dir(),
            Err(_) => false,
        };
        if is_dir {
            name.push('/');
        }
        names.push(name);
    }
    if names.is_empty() {
        return Ok(format!("({path} is empty)"));
    }
    names.sort_unstable();
    let total = names.len();
    let mut out = names
        .iter()
        .take(LIST_MAX_ENTRIES)
        .fold(String::new(), |mut out, n| {
            out.push_str(n);
            out.push('\n');
            out
        });
    if total > LIST_MAX_ENTRIES {
        let _ = write!(
            out,
            "(and {} more entries; {total} in all: list a subdirectory or use grep or bash to narrow down)",
            total - LIST_MAX_ENTRIES
        );
    }
    Ok(out)
}

// ---- grep ---------------------------------------------------------------------------------------

/// A file-name glob compiled to a regex: `*`, `?`, `[...]`, `{a,b}` and `**` (across `/`).
struct Glob {
    re: regex::Regex,
    /// Matched against the path below the search root instead of the file name.
    whole_path: bool,
}

impl Glob {
    fn new(glob: &str) -> Result<Self, String> {
        let mut re = String::from("^");
        let mut chars = glob.chars().peekable();
        let mut braces = 0usize;
        while let Some(c) = chars.next() {
            match c {
                '*' if chars.peek() == Some(&'*') => {
                    chars.next();
                    if chars.peek() == Some(&'/') {
                        chars.next();
                        re.push_str("(?:.*/)?");
                    } else {
                        re.push_str(".*");
                    }
                }
                '*' => re.push_str("[^/]*"),
                '?' => re.push_str("[^/]"),
                '[' => {
                    re.push('[');
                    if chars.peek() == Some(&'!') {
                        chars.next();
                        re.push('^');
                    }
                    for c in chars.by_ref() {
                        if c == ']' {
                            break;
                        }
                        if c == '\\' || c == '[' {
                            re.push('\\');
                        }
                        re.push(c);
                    }
                    re.push(']');
                }
                '{' => {
                    braces += 1;
                    re.push_str("(?:");
                }
                '}' if braces > 0 => {
                    braces -= 1;
                    re.push(')');
                }
                ',' if braces > 0 => re.push('|'),
                c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
            }
        }
        re.push('$');
        let re = regex::Regex::new(&re)
            .map_err(|e| format!("tool \"grep\": invalid glob {glob:?}: {e}"))?;
        Ok(Self {
            re,
            whole_path: glob.contains('/'),
        })
    }

    fn matches(&self, rel: &Path) -> bool {
        if self.whole_path {
            self.re.is_match(&rel.to_string_lossy())
        } else {
            rel.file_name()
                .is_some_and(|n| self.re.is_match(&n.to_string_lossy()))
        }
    }
}

fn grep(
    root: &Path,
    pattern: &str,
    path: &str,
    glob: Option<&str>,
    max: u64,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let re = regex::bytes::Regex::new(pattern)
        .map_err(|e| format!("tool \"grep\": invalid regex {pattern:?}: {e}"))?;
    let glob = glob.map(Glob::new).transpose()?;
    let base = resolve(root, path);
    let meta =
        std::fs::metadata(&base).map_err(|e| io_failure("grep", "search", "path", path, &e))?;
    let mut out = String::new();
    let mut found: u64 = 0;
    let mut files: u64 = 0;
    let mut line = Vec::new();
    let show = |p: &Path| -> String {
        p.strip_prefix(root)
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .unwrap_or(p)
            .display()
            .to_string()
    };
    // A depth-first walk in name order; directories are expanded when popped.
    let mut stack = vec![(base.clone(), meta.is_dir())];
    'walk: while let Some((p, is_dir)) = stack.pop() {
        if cancel.is_cancelled() {
            return Err("tool \"grep\": cancelled".to_owned());
        }
        if is_dir {
            let Ok(rd) = std::fs::read_dir(&p) else {
                continue;
            };
            let mut children: Vec<(PathBuf, bool)> = rd
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let t = e.file_type().ok()?;
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    if t.is_dir() {
                        let skip = name.starts_with('.') || SKIP_DIRS.contains(&name.as_ref());
                        (!skip).then(|| (e.path(), true))
                    } else if t.is_file() || (t.is_symlink() && e.path().is_file()) {
                        Some((e.path(), false))
                    } else {
                        // Symlinked directories are not followed (no loops); sockets and such
                        // are not text.
                        None
                    }
                })
                .collect();
            children.sort_unstable_by(|a, b| b.0.cmp(&a.0));
            stack.extend(children);
            continue;
        }
        if p != base {
            if let Some(g) = &glob {
                if !g.matches(p.strip_prefix(&base).unwrap_or(&p)) {
                    continue;
                }
            }
        }
        let Ok(Some(mut reader)) = open_text(&p) else {
            continue;
        };
        files += 1;
        let shown = show(&p);
        let mut number: u64 = 0;
        while let Ok(Some(_)) = read_line_capped(&mut reader, GREP_MAX_LINE_BYTES, &mut line) {
            number += 1;
            if number % 65_536 == 0 && cancel.is_cancelled() {
                return Err("tool \"grep\": cancelled".to_owned());
            }
            if !re.is_match(&line) {
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = match text.char_indices().nth(GREP_MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{} [...]", &text[..cut]),
                None => text.into_owned(),
            };
            let _ = writeln!(out, "{shown}:{number}: {text}");
            found += 1;
            if found >= max {
                let _ = write!(
                    out,
                    "(stopped at {max} matches; narrow the pattern, path or glob, or raise max_results)"
                );
                break 'walk;
            }
        }
    }
    if found == 0 {
        let what = match glob {
            Some(_) => " matching the glob",
            None => "",
        };
        return Ok(format!(
            "no matches for {pattern:?} in {path} ({files} text files{what} searched)"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use harness9_actors::messages::SetBuiltins;
    use harness9_actors::ToolRegistry;

    const LIMIT: Duration = Duration::from_secs(20);

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(label: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "harness9-builtins-{}-{}-{label}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn start(dir: &TempDir, opts: BuiltinOptions) -> Addr<Builtins> {
        Builtins::new(dir.0.clone(), opts).start()
    }

    async fn call_with(
        addr: &Addr<Builtins>,
        name: &str,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        addr.send(CallBuiltin {
            name: name.to_owned(),
            arguments: Some(args),
            cancel,
        })
        .await
        .unwrap()
    }

    async fn call(addr: &Addr<Builtins>, name: &str, args: Value) -> (String, bool) {
        let r = call_with(addr, name, args, CancellationToken::new())
            .await
            .unwrap();
        (r.text(), r.is_error)
    }

    /// Whether any process of group `pgid` is alive (zombies waiting for a reaper don't count).
    fn group_alive(pgid: i32) -> bool {
        // SAFETY: kill with signal 0 only checks for existence.
        if unsafe { libc::kill(-pgid, 0) } != 0 {
            return false;
        }
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return true;
        };
        procs.filter_map(Result::ok).any(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                return false;
            };
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
                return false;
            };
            let fields: Vec<&str> = after.split(' ').collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
    }

    /// Waits (bounded) for group `pgid` to be gone.
    async fn group_gone(pgid: i32) -> bool {
        for _ in 0..100 {
            if !group_alive(pgid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Waits (bounded) for the pid a command wrote to `file`.
    async fn pid_in(file: &Path) -> i32 {
        for _ in 0..250 {
            if let Ok(s) = std::fs::read_to_string(file) {
                if let Ok(pid) = s.trim().parse() {
                    return pid;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the command never wrote its pid to {}", file.display());
    }

    #[actix_rt::test]
    async fn bash_echo_and_exit_codes() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("echo");
            let b = start(&dir, BuiltinOptions::default());
            let (text, err) = call(&b, "bash", json!({"command": "echo hello; pwd"})).await;
            assert!(!err, "{text}");
            assert_eq!(text, format!("hello\n{}\nexit code 0", dir.0.display()));

            let (text, err) = call(
                &b,
                "bash",
                json!({"command": "echo out; echo err >&2; echo out2; exit 2"}),
            )
            .await;
            assert!(err);
            assert_eq!(text, "out\nerr\nout2\nexit code 2");

            let (text, err) = call(&b, "bash", json!({"command": "true"})).await;
            assert!(!err);
            assert_eq!(text, "(no output)\nexit code 0");

            let (text, err) = call(&b, "bash", json!({"command": "cat"})).await;
            assert!(!err, "stdin is closed, so cat ends at once: {text}");

            let (text, err) = call(&b, "bash", json!({})).await;
            assert!(err);
            assert_eq!(text, "tool \"bash\": missing required argument \"command\"");
            let (text, err) = call(&b, "bash", json!({"command": "x", "timeout_sec": 601})).await;
            assert!(err);
            assert!(text.contains("at most 600, got 601"), "{text}");
            let (text, err) = call(&b, "bash", json!({"comand": "ls"})).await;
            assert!(err);
            assert!(text.contains("unknown argument \"comand\""), "{text}");

            let gone = Builtins::new(dir.0.join("missing"), BuiltinOptions::default()).start();
            let (text, err) = call(&gone, "bash", json!({"command": "true"})).await;
            assert!(err);
            assert!(
                text.starts_with("tool \"bash\": unable to start bash in "),
                "{text}"
            );
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn bash_background_process_does_not_hold_the_call() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("bg");
            let b = start(&dir, BuiltinOptions::default());
            let started = std::time::Instant::now();
            let (text, err) = call(
                &b,
                "bash",
                json!({"command": "echo $$ > pid; sleep 30 & echo started"}),
            )
            .await;
            assert!(!err, "{text}");
            assert_eq!(text, "started\nexit code 0");
            assert!(started.elapsed() < Duration::from_secs(5));
            let pgid = pid_in(&dir.0.join("pid")).await;
            assert!(group_gone(pgid).await, "the background sleep survived");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn bash_timeout_kills_the_whole_group() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("timeout");
            let b = start(&dir, BuiltinOptions::default());
            let started = std::time::Instant::now();
            let (text, err) = call(
                &b,
                "bash",
                json!({"command": "echo $$ > pid; echo before; sleep 30 & sleep 30", "timeout_sec": 1}),
            )
            .await;
            assert!(err);
            assert_eq!(
                text,
                "before\ncommand timed out after 1 s; pass a larger timeout_sec (max 600)"
            );
            assert!(started.elapsed() < Duration::from_secs(5));
            let pgid = pid_in(&dir.0.join("pid")).await;
            assert!(group_gone(pgid).await, "a process of the group survived");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn bash_timeout_escalates_to_sigkill() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("term");
            let b = start(&dir, BuiltinOptions::default());
            let started = std::time::Instant::now();
            let (text, err) = call(
                &b,
                "bash",
                json!({"command": "echo $$ > pid; trap '' TERM; sleep 30 & while true; do sleep 0.1; done", "timeout_sec": 0.5}),
            )
            .await;
            assert!(err);
            assert!(text.contains("command timed out after 500 ms"), "{text}");
            assert!(started.elapsed() < Duration::from_secs(5));
            let pgid = pid_in(&dir.0.join("pid")).await;
            assert!(group_gone(pgid).await, "a process of the group survived");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn bash_cancel_ends_the_call_and_kills_the_group() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("cancel");
            let b = start(&dir, BuiltinOptions::default());
            let cancel = CancellationToken::new();
            let call = call_with(
                &b,
                "bash",
                json!({"command": "echo $$ > pid; sleep 30 & sleep 30"}),
                cancel.clone(),
            );
            let pid_file = dir.0.join("pid");
            let cancel_when_running = async {
                let pgid = pid_in(&pid_file).await;
                // Registered for the panic hook's kill_all_groups.
                assert!(harness9_actors::server::live_group_count() >= 1);
                cancel.cancel();
                (pgid, std::time::Instant::now())
            };
            let (r, (pgid, cancelled_at)) = tokio::join!(call, cancel_when_running);
            assert!(cancelled_at.elapsed() < Duration::from_secs(2));
            assert_eq!(
                r,
                Err(CallError::Cancelled {
                    server: "builtin".to_owned(),
                    tool: "bash".to_owned()
                })
            );
            assert!(group_gone(pgid).await, "a process of the group survived");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn bash_output_cap_keeps_head_and_tail() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("cap");
            let b = start(
                &dir,
                BuiltinOptions {
                    output_limit: 100,
                    ..BuiltinOptions::default()
                },
            );
            // 10,000 numbered lines of 6 bytes each: 60,000 bytes.
            let (text, err) = call(&b, "bash", json!({"command": "seq -f '%05g' 1 10000"})).await;
            assert!(!err, "{text}");
            assert!(text.starts_with("00001\n00002\n"), "{text}");
            assert!(text.ends_with("09999\n10000\nexit code 0"), "{text}");
            assert!(
                text.contains("[... 59900 bytes of output cut here; 60000 bytes in all ...]"),
                "{text}"
            );
            assert!(text.len() < 250, "{text}");
        })
        .await
        .expect("test timed out");
    }

    #[test]
    fn capped_output_counts_and_keeps_utf8_whole() {
        let mut c = CappedOutput::new(11);
        c.push(b"abc");
        assert_eq!(c.render(), "abc");
        c.push("déf".as_bytes());
        c.push(b"ghij");
        assert_eq!(c.render(), "abcdéfghij");
        let mut c = CappedOutput::new(6);
        for _ in 0..100 {
            c.push("é".as_bytes());
        }
        // Head 3 bytes = one é and a half; tail 3 bytes = a half and one é.
        assert_eq!(
            c.render(),
            "é\n[... 196 bytes of output cut here; 200 bytes in all ...]\né"
        );
    }

    #[actix_rt::test]
    async fn read_file_numbers_lines_and_pages() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("read");
            let lines: Vec<String> = (1..=30).map(|i| format!("line {i}")).collect();
            dir.write("a.txt", lines.join("\n"));
            let b = start(&dir, BuiltinOptions::default());

            let (text, err) = call(&b, "read_file", json!({"path": "a.txt", "limit": 3})).await;
            assert!(!err);
            assert_eq!(
                text,
                "     1\tline 1\n     2\tline 2\n     3\tline 3\n(a.txt goes on after line 3; pass offset 4 to read more)"
            );
            let (text, _) = call(&b, "read_file", json!({"path": "a.txt", "offset": 29})).await;
            assert_eq!(text, "    29\tline 29\n    30\tline 30\n");
            let abs = dir.0.join("a.txt").display().to_string();
            let (text, _) =
                call(&b, "read_file", json!({"path": abs, "offset": "10", "limit": 1})).await;
            assert!(text.starts_with("    10\tline 10\n"), "{text}");
            let (text, err) = call(&b, "read_file", json!({"path": "a.txt", "offset": 31})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"read_file\": a.txt has only 30 lines; offset 31 is past its end"
            );
            let (text, err) = call(&b, "read_file", json!({"path": "a.txt", "offset": 0})).await;
            assert!(err);
            assert!(text.contains("\"offset\" must be a whole number of at least 1"), "{text}");

            dir.write("long.txt", format!("{}\r\nshort\r\n", "x".repeat(5000)));
            let (text, _) = call(&b, "read_file", json!({"path": "long.txt"})).await;
            let first = text.lines().next().unwrap();
            assert_eq!(
                first,
                format!("     1\t{} [... line cut; it is 5000 bytes long]", "x".repeat(2000))
            );
            assert!(text.ends_with("     2\tshort\n"), "{text}");

            dir.write("empty.txt", "");
            let (text, err) = call(&b, "read_file", json!({"path": "empty.txt"})).await;
            assert!(!err);
            assert_eq!(text, "(empty.txt is empty)");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn read_file_refuses_binary_missing_and_directories() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("readerr");
            dir.write("bin.dat", b"abc\0def");
            std::fs::create_dir_all(dir.0.join("sub")).unwrap();
            let b = start(&dir, BuiltinOptions::default());
            let (text, err) = call(&b, "read_file", json!({"path": "bin.dat"})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"read_file\": bin.dat is a binary file (it has NUL bytes); read_file shows text only"
            );
            let (text, err) = call(&b, "read_file", json!({"path": "nope/x.rs"})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"read_file\": file not found: nope/x.rs; list_dir shows what exists"
            );
            let (text, err) = call(&b, "read_file", json!({"path": "sub"})).await;
            assert!(err);
            assert!(text.contains("sub is a directory"), "{text}");
            let (text, err) = call(&b, "read_file", json!({})).await;
            assert!(err);
            assert_eq!(text, "tool \"read_file\": missing required argument \"path\"");
            let (text, err) = call(&b, "read_file", json!({"path": 3})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"read_file\": argument \"path\" must be a string, got the number 3"
            );
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn write_file_then_read_back() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("write");
            let b = start(&dir, BuiltinOptions::default());
            let (text, err) = call(
                &b,
                "write_file",
                json!({"path": "new/deep/f.txt", "content": "one\ntwo\n"}),
            )
            .await;
            assert!(!err);
            assert_eq!(text, "wrote 8 bytes to new/deep/f.txt");
            let (text, _) = call(&b, "read_file", json!({"path": "new/deep/f.txt"})).await;
            assert_eq!(text, "     1\tone\n     2\ttwo\n");
            let (text, err) = call(&b, "write_file", json!({"path": "new"})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"write_file\": missing required argument \"content\""
            );
            let (text, err) =
                call(&b, "write_file", json!({"path": "new/deep", "content": ""})).await;
            assert!(err);
            assert!(
                text.starts_with("tool \"write_file\": unable to write new/deep: "),
                "{text}"
            );
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn list_dir_sorts_and_marks_directories() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("list");
            dir.write("b.txt", "");
            dir.write("a/x.txt", "");
            dir.write(".hidden", "");
            dir.write("many/keep", "");
            for i in 0..1005 {
                dir.write(&format!("many/f{i:04}"), "");
            }
            let b = start(&dir, BuiltinOptions::default());
            let (text, err) = call(&b, "list_dir", json!({})).await;
            assert!(!err);
            assert_eq!(text, ".hidden\na/\nb.txt\nmany/\n");
            let (text, _) = call(&b, "list_dir", json!({"path": "many"})).await;
            assert_eq!(text.lines().count(), 1001);
            assert!(text.starts_with("f0000\n"), "{text}");
            assert!(
                text.ends_with("(and 6 more entries; 1006 in all: list a subdirectory or use grep or bash to narrow down)"),
                "{text}"
            );
            let (text, err) = call(&b, "list_dir", json!({"path": "missing"})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"list_dir\": directory not found: missing; list_dir shows what exists"
            );
            let (text, err) = call(&b, "list_dir", json!({"path": "b.txt"})).await;
            assert!(err);
            assert!(text.contains("b.txt is a file"), "{text}");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn grep_searches_with_glob_and_skips() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("grep");
            dir.write("src/main.rs", "fn main() {\n    todo!()\n}\n");
            dir.write("src/lib.rs", "// TODO later\npub fn x() {}\n");
            dir.write("notes.md", "todo: write docs\n");
            dir.write("target/debug/gen.rs", "todo!()\n");
            dir.write("node_modules/m/index.js", "todo\n");
            dir.write(".git/HEAD", "todo\n");
            dir.write(".cache/x.rs", "todo!()\n");
            dir.write("src/blob.rs", b"todo\0binary");
            let b = start(&dir, BuiltinOptions::default());

            let (text, err) = call(&b, "grep", json!({"pattern": "(?i)todo"})).await;
            assert!(!err, "{text}");
            assert_eq!(
                text,
                "notes.md:1: todo: write docs\nsrc/lib.rs:1: // TODO later\nsrc/main.rs:2:     todo!()\n"
            );
            let (text, _) = call(&b, "grep", json!({"pattern": "todo", "glob": "*.rs"})).await;
            assert_eq!(text, "src/main.rs:2:     todo!()\n");
            let (text, _) =
                call(&b, "grep", json!({"pattern": "fn", "path": "src", "glob": "{lib,x}.rs"}))
                    .await;
            assert_eq!(text, "src/lib.rs:2: pub fn x() {}\n");
            let (text, _) = call(&b, "grep", json!({"pattern": "fn", "path": "src/main.rs"})).await;
            assert_eq!(text, "src/main.rs:1: fn main() {\n");
            let (text, _) = call(
                &b,
                "grep",
                json!({"pattern": ".", "glob": "**/*.rs", "max_results": 2}),
            )
            .await;
            assert_eq!(
                text,
                "src/lib.rs:1: // TODO later\nsrc/lib.rs:2: pub fn x() {}\n(stopped at 2 matches; narrow the pattern, path or glob, or raise max_results)"
            );
            let (text, err) = call(&b, "grep", json!({"pattern": "zzz"})).await;
            assert!(!err);
            assert_eq!(text, "no matches for \"zzz\" in . (3 text files searched)");
        })
        .await
        .expect("test timed out");
    }

    #[actix_rt::test]
    async fn grep_reports_invalid_regex_and_missing_path() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("grepbad");
            let b = start(&dir, BuiltinOptions::default());
            let (text, err) = call(&b, "grep", json!({"pattern": "fn ("})).await;
            assert!(err);
            assert!(
                text.starts_with("tool \"grep\": invalid regex \"fn (\": regex parse error"),
                "{text}"
            );
            assert!(text.contains("unclosed group"), "{text}");
            let (text, err) = call(&b, "grep", json!({"pattern": "x", "path": "nope"})).await;
            assert!(err);
            assert_eq!(
                text,
                "tool \"grep\": path not found: nope; list_dir shows what exists"
            );
        })
        .await
        .expect("test timed out");
    }

    #[test]
    fn globs_translate() {
        let m = |g: &str, p: &str| Glob::new(g).unwrap().matches(Path::new(p));
        assert!(m("*.rs", "src/deep/a.rs"));
        assert!(!m("*.rs", "src/a.rsx"));
        assert!(m("*.{ts,tsx}", "web/app.tsx"));
        assert!(m("a?c.[!x]s", "abc.rs"));
        assert!(!m("a?c.[!x]s", "abc.xs"));
        assert!(m("src/**/*.rs", "src/a/b/c.rs"));
        assert!(m("src/**/*.rs", "src/c.rs"));
        assert!(!m("src/*.rs", "src/a/c.rs"));
        assert!(m("a+b(1).txt", "a+b(1).txt"));
    }

    #[actix_rt::test]
    async fn unknown_tool_and_precancelled_calls_are_errors() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("misc");
            let b = start(&dir, BuiltinOptions::default());
            let r = call_with(&b, "nope", json!({}), CancellationToken::new()).await;
            assert_eq!(
                r,
                Err(CallError::UnknownTool {
                    name: "nope".to_owned()
                })
            );
            let cancel = CancellationToken::new();
            cancel.cancel();
            let r = call_with(&b, "list_dir", json!({}), cancel).await;
            assert!(matches!(r, Err(CallError::Cancelled { .. })), "{r:?}");
            let r = b
                .send(CallBuiltin {
                    name: "list_dir".to_owned(),
                    arguments: Some(json!([1])),
                    cancel: CancellationToken::new(),
                })
                .await
                .unwrap()
                .unwrap();
            assert!(r.is_error);
            assert_eq!(
                r.text(),
                "tool \"list_dir\": arguments must be a JSON object, got an array"
            );
        })
        .await
        .expect("test timed out");
    }

    #[test]
    fn definitions_have_object_schemas() {
        let defs = definitions();
        let names: Vec<&str> = defs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["bash", "read_file", "write_file", "list_dir", "grep"]
        );
        for t in &defs {
            let schema: Value = serde_json::from_str(t.input_schema.get()).unwrap();
            assert_eq!(schema["type"], "object", "{}", t.name);
            assert!(t.description.as_deref().is_some_and(|d| d.len() > 40));
        }
    }

    #[actix_rt::test]
    async fn calls_route_through_the_tool_registry() {
        tokio::time::timeout(LIMIT, async {
            let dir = TempDir::new("registry");
            dir.write("hello.txt", "hi there\n");
            let exec = start(&dir, BuiltinOptions::default());
            let registry = ToolRegistry::new().start();
            registry
                .send(SetBuiltins {
                    tools: definitions(),
                    executor: exec.recipient(),
                })
                .await
                .unwrap();
            let r = ToolRegistry::call(
                &registry,
                "read_file",
                Some(json!({"path": "hello.txt"})),
                None,
            )
            .await
            .unwrap();
            assert!(!r.is_error);
            assert_eq!(r.text(), "     1\thi there\n");
            let r = ToolRegistry::call(&registry, "bash", Some(json!({"command": "exit 3"})), None)
                .await
                .unwrap();
            assert!(r.is_error);
            assert_eq!(r.text(), "(no output)\nexit code 3");
        })
        .await
        .expect("test timed out");
    }
}
