//! The built-in tools (`bash`, `read_file`, `write_file`, `edit_file`, `apply_patch`,
//! `list_dir`, `grep`, and
//! `list_mcp_resources`/`read_mcp_resource` over the registry) and the `Builtins` actor that
//! runs them off the actix thread.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use harness9_actors::error::CallError;
use harness9_actors::messages::CallBuiltin;
use harness9_actors::protocol::types::{CallToolResult, ContentBlock, Tool};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

mod bash;
pub mod diff;
pub mod edit;
mod files;
mod grep;
pub mod patch;
pub mod resources;
pub mod shell_sandbox;
mod skills;

pub use edit::ForgetFiles;
pub use shell_sandbox::ProtectedPaths;

use bash::bash;
use files::{list_dir, read_file, write_file};
use grep::{grep, GrepArgs};

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
    /// How `bash` is sandboxed (`[permissions] shell`).
    pub shell: shell_sandbox::ShellSandbox,
    /// Paths inside the project the sandboxed shell must not write (configs harness9 reads,
    /// approved servers' programs): asked before every `bash` run, so a hot reload's new list
    /// applies at once. The project's `.git` is kept read-only without being listed.
    pub protected: Option<ProtectedPaths>,
    /// The session's permissions: `grep` and `list_dir` leave out each file under their path
    /// that a deny rule refuses (the call's own path is checked before it runs).
    pub policy: Option<Arc<crate::permissions::Policy>>,
}

impl Default for BuiltinOptions {
    fn default() -> Self {
        Self {
            output_limit: 30_000,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            // The session sets `[permissions] shell` (`Runtime::install_builtins`).
            shell: shell_sandbox::ShellSandbox::default(),
            protected: None,
            policy: None,
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
    /// Where the MCP resource tools send their requests.
    registry: Option<Addr<harness9_actors::ToolRegistry>>,
    /// What the model saw of each file in this conversation (the edit tools' staleness check).
    seen: edit::Seen,
    /// The entries of the skills the model loaded in this conversation.
    held: skills::Held,
}

impl Builtins {
    /// An executor whose relative paths and shell commands start in `root`.
    pub fn new(root: PathBuf, opts: BuiltinOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                root,
                opts,
                registry: None,
                seen: edit::Seen::default(),
                held: skills::Held::default(),
            }),
        }
    }

    /// The MCP resource tools ask `registry` (without it they say no server is connected).
    pub fn with_registry(
        root: PathBuf,
        opts: BuiltinOptions,
        registry: Addr<harness9_actors::ToolRegistry>,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                root,
                opts,
                registry: Some(registry),
                seen: edit::Seen::default(),
                held: skills::Held::default(),
            }),
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

/// The definitions of every built-in tool, described with the default [`BuiltinOptions`].
pub fn definitions() -> Vec<Tool> {
    definitions_with(&BuiltinOptions::default())
}

/// The definitions of every built-in tool, their descriptions quoting `opts`.
pub fn definitions_with(opts: &BuiltinOptions) -> Vec<Tool> {
    let mut defs = vec![
        bash_def(opts),
        read_file_def(),
        write_file_def(),
        edit_file_def(),
        apply_patch_def(),
        list_dir_def(),
        grep_def(),
    ];
    defs.extend(resources::definitions());
    defs.extend(skills::definitions());
    defs
}

/// `bash`: its shell, output limit and timeouts as `opts` sets them.
fn bash_def(opts: &BuiltinOptions) -> Tool {
    let default_secs = opts.default_timeout.as_secs();
    let max_secs = opts.max_timeout.as_secs();
    tool(
        "bash",
        Effects::Changes,
        format!(
            "Run a shell command with `{}` in the working directory and return its \
             combined stdout and stderr followed by its exit code. Stdin is closed, so \
             interactive programs will not work. Output over {} bytes is cut in the middle \
             (the head and the tail are kept). The command is killed after timeout_sec \
             seconds (default {default_secs}, max {max_secs}); background processes it \
             started are stopped when it ends. Prefer read_file, list_dir and grep to look \
             at files.",
            harness9_platform::command::SHELL_INVOCATION,
            opts.output_limit
        ),
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": format!("The command line, run by {}.", harness9_platform::command::SHELL_INVOCATION)},
                "timeout_sec": {
                    "type": "number",
                    "description": format!("Seconds before the command is killed (default {default_secs}, max {max_secs})."),
                },
            },
            "required": ["command"],
            "additionalProperties": false,
        }),
    )
}

/// `read_file`: a file's lines, numbered.
fn read_file_def() -> Tool {
    tool(
        "read_file",
        Effects::Reads,
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
    )
}

/// `write_file`: a whole file written.
fn write_file_def() -> Tool {
    tool(
        "write_file",
        Effects::Changes,
        "Write `content` to a file, replacing it if it exists and creating missing parent \
         directories. Paths are relative to the working directory; absolute paths work too. \
         A file that changed on disk since you last read or wrote it is refused: read it \
         again. To change part of a file, prefer edit_file."
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
    )
}

/// `edit_file`: one exact replacement (or every one).
fn edit_file_def() -> Tool {
    tool(
        "edit_file",
        Effects::Changes,
        "Replace text in a file: `old_string` must occur exactly once in it (unless \
         `replace_all`), copied exactly from the file, whitespace and indentation included, \
         without read_file's line-number prefix; include enough surrounding lines to make it \
         unique. The file keeps its line endings and encoding. An edit of a file that \
         changed on disk since you last read or wrote it is refused: read it again. An \
         empty `old_string` creates a file that does not exist yet. Prefer this to \
         write_file for changing part of a file."
            .to_owned(),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to edit."},
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place (different from old_string)."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string (default false)."},
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false,
        }),
    )
}

/// `apply_patch`: Codex's patch format, all or nothing.
fn apply_patch_def() -> Tool {
    tool(
        "apply_patch",
        Effects::Changes,
        format!(
            "Apply a patch that adds, updates, moves and deletes files, all or nothing. The \
             format:\n*** Begin Patch\n*** Add File: path/new.txt\n+each line of the new \
             file\n*** Update File: path/old.rs\n*** Move to: path/renamed.rs   (optional)\n\
             @@ fn the_function()   (optional: a line to find first)\n context line\n-removed \
             line\n+added line\n context line\n*** End of File   (optional: the hunk ends \
             the file)\n*** Delete File: path/gone.txt\n*** End Patch\nGive about three \
             lines of context around each change; paths are relative to the working \
             directory. If a hunk does not apply, nothing is written. At most \
             {} files and {} bytes per patch.",
            patch::MAX_PATCH_FILES,
            patch::MAX_PATCH_BYTES
        ),
        json!({
            "type": "object",
            "properties": {
                "input": {"type": "string", "description": "The whole patch, from *** Begin Patch to *** End Patch."},
            },
            "required": ["input"],
            "additionalProperties": false,
        }),
    )
}

/// `list_dir`: a directory's entries.
fn list_dir_def() -> Tool {
    tool(
        "list_dir",
        Effects::Reads,
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
    )
}

/// `grep`: a regular expression over the files below a path.
fn grep_def() -> Tool {
    tool(
        "grep",
        Effects::Reads,
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
    )
}

/// What a built-in does to the world, as MCP tool annotations: the engine decides from these
/// (as for any MCP tool) which calls wait for the user's yes.
#[derive(Clone, Copy)]
enum Effects {
    /// Reads only (`readOnlyHint`).
    Reads,
    /// Changes files or runs programs (`destructiveHint`): asks first in the TUI.
    Changes,
}

fn tool(name: &str, effects: Effects, description: String, schema: Value) -> Tool {
    let hints = match effects {
        Effects::Reads => json!({"readOnlyHint": true}),
        Effects::Changes => json!({"readOnlyHint": false, "destructiveHint": true}),
    };
    Tool {
        name: name.to_owned(),
        title: None,
        description: Some(description.into()),
        input_schema: raw(&schema),
        output_schema: None,
        annotations: Some(raw(&hints)),
        execution: None,
    }
}

/// A JSON value as raw JSON text (a `serde_json::Value` always serializes: its keys are strings).
#[allow(clippy::expect_used)]
fn raw(v: &Value) -> harness9_actors::protocol::rawjson::RawJson {
    harness9_actors::protocol::rawjson::RawJson::from_value(v)
        .expect("a serde_json::Value always serializes")
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
            result_type: None,
            schema_error: None,
            task: None,
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

/// Runs one call: the registry's tools (resources, skills) at once, a file or shell tool after
/// its arguments are checked.
async fn dispatch(sh: Arc<Shared>, msg: CallBuiltin) -> Result<CallToolResult, CallError> {
    let CallBuiltin {
        name,
        arguments,
        cancel,
    } = msg;
    if matches!(
        name.as_str(),
        "list_mcp_resources" | "read_mcp_resource" | "load_skill"
    ) {
        return through_registry(&sh, &name, &arguments, &cancel).await;
    }
    let Some(known) = known_arguments(&name) else {
        return Err(CallError::UnknownTool { name });
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
        _ => match local_call(sh, &args) {
            Ok(call) => blocking(&name, &cancel, call).await?,
            Err(e) => return Ok(fail(e)),
        },
    };
    Ok(reply.into_result())
}

/// The tools that ask the registry (the MCP resource tools, `load_skill`), cancelled with the
/// call.
async fn through_registry(
    sh: &Shared,
    name: &str,
    arguments: &Option<Value>,
    cancel: &CancellationToken,
) -> Result<CallToolResult, CallError> {
    if cancel.is_cancelled() {
        return Err(cancelled(name));
    }
    let run = async {
        if name == "load_skill" {
            skills::run(sh.registry.as_ref(), &sh.held, arguments).await
        } else {
            resources::run(sh.registry.as_ref(), name, arguments).await
        }
    };
    tokio::select! {
        r = run => Ok(r),
        _ = cancel.cancelled() => Err(cancelled(name)),
    }
}

/// The arguments each of the file and shell tools takes; `None` for a name that is none of
/// them.
fn known_arguments(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "bash" => &["command", "timeout_sec"],
        "read_file" => &["path", "offset", "limit"],
        "write_file" => &["path", "content"],
        "edit_file" => &["path", "old_string", "new_string", "replace_all"],
        "apply_patch" => &["input"],
        "list_dir" => &["path"],
        "grep" => &["pattern", "path", "glob", "max_results"],
        _ => return None,
    })
}

/// A file tool's work for the blocking pool, its arguments checked (the first bad one, in
/// the order the tool takes them, is the call's error).
type LocalCall = Box<dyn FnOnce(&CancellationToken) -> Result<String, String> + Send>;

/// The work of a file tool (`args.tool` is one of [`known_arguments`]' but `bash`).
fn local_call(sh: Arc<Shared>, args: &Args) -> Result<LocalCall, String> {
    Ok(match args.tool.as_str() {
        "read_file" => {
            let (path, offset, limit) = (
                args.path_req("path"),
                args.count_opt("offset"),
                args.count_opt("limit"),
            );
            let (path, offset, limit) = (path?, offset?, limit?);
            let (offset, limit) = (offset.unwrap_or(1), limit.unwrap_or(READ_DEFAULT_LINES));
            Box::new(move |_| read_file(&sh.root, &sh.seen, &path, offset, limit))
        }
        "write_file" => {
            let (path, content) = (args.path_req("path"), args.str_req("content"));
            let (path, content) = (path?, content?);
            Box::new(move |_| write_file(&sh.root, &sh.seen, &path, &content))
        }
        "edit_file" => {
            let a = edit_args(args)?;
            Box::new(move |_| edit::edit_file(&sh.root, &sh.seen, &a))
        }
        "apply_patch" => {
            let input = args.str_req("input")?;
            Box::new(move |_| edit::apply_patch(&sh.root, &sh.seen, &input))
        }
        "list_dir" => {
            let path = args.path_opt("path")?.unwrap_or_else(|| ".".to_owned());
            Box::new(move |_| list_dir(&sh.root, &path, sh.opts.policy.as_deref()))
        }
        _ => {
            let a = grep_args(args)?;
            Box::new(move |cancel| {
                let policy = sh.opts.policy.as_deref();
                grep(&sh.root, &a, policy, cancel)
            })
        }
    })
}

/// `edit_file`'s arguments.
fn edit_args(args: &Args) -> Result<edit::EditArgs, String> {
    let parsed = (
        args.path_req("path"),
        args.str_req("old_string"),
        args.str_req("new_string"),
        args.bool_opt("replace_all"),
    );
    let (path, old, new, all) = (parsed.0?, parsed.1?, parsed.2?, parsed.3?);
    Ok(edit::EditArgs {
        path,
        old,
        new,
        all: all.unwrap_or(false),
    })
}

/// `grep`'s arguments.
fn grep_args(args: &Args) -> Result<GrepArgs, String> {
    let parsed = (
        args.str_req("pattern"),
        args.path_opt("path"),
        args.str_opt("glob"),
        args.count_opt("max_results"),
    );
    let (pattern, path, glob, max) = (parsed.0?, parsed.1?, parsed.2?, parsed.3?);
    Ok(GrepArgs {
        pattern,
        path: path.unwrap_or_else(|| ".".to_owned()),
        glob,
        max: max.unwrap_or(GREP_DEFAULT_RESULTS),
    })
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

    /// A boolean; `"true"`/`"false"` are accepted too (models send them).
    fn bool_opt(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.trim() == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s.trim() == "false" => Ok(Some(false)),
            Some(other) => Err(format!(
                "tool \"{}\": argument \"{key}\" must be true or false, got {}",
                self.tool,
                kind_of(other)
            )),
        }
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

/// The path a file tool opens for its `path` argument: the one the permissions checked
/// ([`crate::permissions::pattern::os_path`]: symlinks resolved component by component), so
/// `dir/link/../x` is checked and opened as the same file.
fn resolve(tool: &str, root: &Path, path: &str) -> Result<PathBuf, String> {
    crate::permissions::pattern::os_path(path, root).map_err(|e| format!("tool \"{tool}\": {e}"))
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

#[cfg(test)]
mod edit_tests;
#[cfg(test)]
mod tests;
