//! The clap command line's shape: `Cli`, its commands (`Command`, `McpCommand`, `RunArgs`,
//! `ConformanceArgs`) and their own small flags (`--json`, `--scope`, `--transport`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::{ConfigFlag, ModelArgs, ServerFlags, SessionFlags};

/// harness9: a terminal agent harness with an actor-based MCP client runtime.
///
/// Without a command the interactive session opens; the flags below are its own. Each command
/// takes the flags that apply to it (`harness9 COMMAND --help`); flags that a command shares
/// with the session (`--config`, `--trace`, `--approve-project`, `-v`, ...) may also come
/// before the command's name.
#[derive(Debug, Parser)]
#[command(name = "harness9", version, about)]
pub struct Cli {
    /// Where the servers come from and how they run.
    #[command(flatten)]
    pub session: SessionFlags,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// In the interactive session, run every tool call without asking (`--permission-mode
    /// bypass`; a deny rule still refuses).
    #[arg(long)]
    pub yes: bool,
    /// Which tool calls run, ask or are refused.
    #[command(flatten)]
    pub permissions: super::PermissionArgs,
    /// Resume the newest conversation of this directory (the interactive session).
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_: bool,
    /// Resume conversation ID (the interactive session); without an ID, list them.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// What to do; without a command the interactive session opens.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Command {
    /// The command's name as typed (`mcp list`).
    pub fn name(&self) -> String {
        match self {
            Command::Mcp(m) => format!("mcp {}", m.name()),
            Command::Run(_) => "run".into(),
            Command::Completions { .. } => "completions".into(),
            Command::Trace(TraceCommand::Stats { .. }) => "trace stats".into(),
            Command::Trace(TraceCommand::Replay { .. }) => "trace replay".into(),
            Command::Doctor(_) => "doctor".into(),
            Command::Permissions(PermissionsCommand::Import { .. }) => "permissions import".into(),
            Command::Conformance(_) => "conformance".into(),
            Command::ConformanceBrowser { .. } => "conformance-browser".into(),
        }
    }
}

impl McpCommand {
    fn name(&self) -> &'static str {
        match self {
            McpCommand::List(_) => "list",
            McpCommand::Get { .. } => "get",
            McpCommand::Call { .. } => "call",
            McpCommand::Tasks { .. } => "tasks",
            McpCommand::Resources { .. } => "resources",
            McpCommand::Skills { .. } => "skills",
            McpCommand::Read { .. } => "read",
            McpCommand::Prompts { .. } => "prompts",
            McpCommand::Prompt { .. } => "prompt",
            McpCommand::Complete { .. } => "complete",
            McpCommand::Approve { .. } => "approve",
            McpCommand::Add { .. } => "add",
            McpCommand::AddJson { .. } => "add-json",
            McpCommand::Import { .. } => "import",
            McpCommand::Remove { .. } => "remove",
            McpCommand::Login { .. } => "login",
            McpCommand::Logout { .. } => "logout",
        }
    }

    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match self {
            McpCommand::List(ListArgs { json, .. })
            | McpCommand::Get { json, .. }
            | McpCommand::Call { json, .. }
            | McpCommand::Tasks { json, .. }
            | McpCommand::Resources { json, .. }
            | McpCommand::Skills { json, .. }
            | McpCommand::Read { json, .. }
            | McpCommand::Prompts { json, .. }
            | McpCommand::Prompt { json, .. }
            | McpCommand::Complete { json, .. } => json.json,
            _ => false,
        }
    }

    /// The session flags given after this command's name.
    pub(super) fn session_flags(&self) -> SessionFlags {
        let config_only = |c: &ConfigFlag| {
            ServerFlags {
                config: c.clone(),
                ..ServerFlags::default()
            }
            .session()
        };
        match self {
            McpCommand::Call { session, .. } | McpCommand::Tasks { session, .. } => session.clone(),
            McpCommand::List(ListArgs { session, .. })
            | McpCommand::Get { session, .. }
            | McpCommand::Resources { session, .. }
            | McpCommand::Skills { session, .. }
            | McpCommand::Read { session, .. }
            | McpCommand::Prompts { session, .. }
            | McpCommand::Prompt { session, .. }
            | McpCommand::Complete { session, .. } => session.session(),
            McpCommand::Login {
                config, verbose, ..
            }
            | McpCommand::Logout {
                config, verbose, ..
            } => ServerFlags {
                config: config.clone(),
                verbose: *verbose,
                ..ServerFlags::default()
            }
            .session(),
            McpCommand::Approve { config, .. }
            | McpCommand::Add { config, .. }
            | McpCommand::AddJson { config, .. }
            | McpCommand::Import { config, .. }
            | McpCommand::Remove { config, .. } => config_only(config),
        }
    }
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect and call MCP servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Run one task headless: the model uses every tool until it answers.
    Run(RunArgs),
    /// Read a `--trace` file.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Bring permission settings from another agent.
    #[command(subcommand)]
    Permissions(PermissionsCommand),
    /// Check every configured server (or one) and the model settings, one line per check
    /// (ok, warn or fail, and what to do); exits 1 if any check failed.
    Doctor(DoctorArgs),
    /// Print a shell completion script: `harness9 completions bash > ~/.local/share/bash-completion/completions/harness9`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The MCP conformance suite's client: connect to URL, list its tools, call each once.
    #[command(hide = true)]
    Conformance(ConformanceArgs),
    /// The conformance driver's `$BROWSER`: fetch an authorization URL and follow its redirect
    /// to the loopback listener, as a user's browser would.
    #[command(hide = true)]
    ConformanceBrowser {
        /// The authorization URL.
        url: String,
    },
}

/// `harness9 doctor [SERVER]`
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Check only this server (its name in .mcp.json); without it, every server and the model.
    pub server: Option<String>,
    /// Output format.
    #[command(flatten)]
    pub json: JsonFlag,
    /// Config, trace, approval, settings, verbosity.
    #[command(flatten)]
    pub session: ServerFlags,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `harness9 conformance <URL>` (run by `scripts/conformance.sh`).
#[derive(Debug, Args)]
pub struct ConformanceArgs {
    /// The scenario server's MCP endpoint (the suite appends it as the last argument).
    pub url: String,
    /// Config, trace, approval, settings, verbosity, headless answers.
    #[command(flatten)]
    pub session: SessionFlags,
}

/// `harness9 run ...`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task, or - to read it from stdin.
    #[arg(short, long)]
    pub prompt: String,
    /// Print one JSON event per line (start, model, tool_call, tool_refused, tool_progress,
    /// tool_result, model_retry, done or error; README "run --json events").
    #[arg(long)]
    pub json: bool,
    /// Also a `text` event for each piece of the model's text as it streams (implies --json:
    /// events are JSON lines).
    #[arg(long)]
    pub stream: bool,
    /// Model calls before giving up [default: max_steps of harness9.toml, 50].
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub max_steps: Option<u32>,
    /// Under which directory the session's private directory for cut tool results goes
    /// (created 0700, removed at the end) [default: the temp dir].
    #[arg(long, value_name = "DIR")]
    pub spill_dir: Option<PathBuf>,
    /// How long the first model request waits for servers still starting; those that connect
    /// later join the next step [default: $HARNESS9_STARTUP_WAIT, else 5].
    #[arg(long, value_name = "SECS")]
    pub startup_wait: Option<f64>,
    /// Continue saved conversation ID (`harness9 --resume` lists them); the done event names
    /// the session either way.
    #[arg(long, value_name = "ID", conflicts_with = "continue_")]
    pub resume: Option<String>,
    /// Continue the newest conversation of this directory.
    #[arg(long = "continue", short = 'c')]
    pub continue_: bool,
    /// Config, trace, approval, settings, verbosity, headless answers.
    #[command(flatten)]
    pub session: SessionFlags,
    /// The model.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Which tool calls run, ask or are refused.
    #[command(flatten)]
    pub permissions: super::PermissionArgs,
}

/// `--max-steps`: a whole number of at least 1 (a run needs one model call to answer).
fn at_least_one(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("must be at least 1: a run needs a model call to answer".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number of model calls")),
    }
}

impl RunArgs {
    /// Whether events are JSON lines: `--json`, or `--stream` (which implies it).
    pub fn json_events(&self) -> bool {
        self.json || self.stream
    }
}

/// `harness9 trace ...`
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Per server and method: requests, replies, errors, notifications, and the replies'
    /// latency percentiles.
    Stats {
        /// The file `--trace FILE` wrote.
        file: PathBuf,
        /// Only this server's messages.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        /// One JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Serve the server side of a trace over stdio: each request gets the reply recorded for
    /// the same method and params (configure it as a server's command to replay a session).
    Replay {
        /// The file `--trace FILE` wrote.
        file: PathBuf,
        /// Replay this server's recordings (needed when the trace holds several servers).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
}

/// `harness9 permissions ...`
#[derive(Debug, Subcommand)]
pub enum PermissionsCommand {
    /// Add the rules of Claude Code's settings (permissions.allow, ask, deny) or Codex's
    /// sandbox mode to your own settings file (`[permissions]`); names each setting that has no
    /// equivalent, and why. Rules already there are left out; the file's other content stays.
    Import {
        /// Whose settings: claude-code ($CLAUDE_CONFIG_DIR/settings.json, else
        /// ~/.claude/settings.json) or codex ($CODEX_HOME/config.toml, else
        /// ~/.codex/config.toml).
        #[arg(long, value_enum)]
        from: crate::app::permissions_import::From,
        /// Read this file instead of the standard place.
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
        /// Show what would be added; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Write this settings file instead of yours ($XDG_CONFIG_HOME/harness9/config.toml);
        /// never a project's harness9.toml.
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
}

/// What `mcp skills` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SkillsAction {
    /// Every skill the server lists.
    List,
    /// Load one skill.
    Get,
}

/// What `mcp tasks` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TaskAction {
    /// The tasks harness9 started on the server and still tracks.
    List,
    /// One task's status, and its result once it has one.
    Get,
    /// Ask the server to cancel one task.
    Cancel,
}

/// `harness9 mcp ...`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect every server and show its status; exits 1 if any failed.
    List(ListArgs),
    /// Show one server's tools with descriptions and input schemas.
    Get {
        /// The server's name in .mcp.json.
        server: String,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// Call one tool and print its result; exits 1 on isError, timeout or failure.
    Call {
        /// The server's name in .mcp.json.
        server: String,
        /// The tool's name on that server.
        tool: String,
        /// The arguments as a JSON object, or - to read them from stdin.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Timeout in seconds (default: the server's toolTimeoutSec).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// When the call becomes a task, print its id and return instead of waiting for it
        /// (`harness9 mcp tasks get|cancel SERVER ID` later).
        #[arg(long)]
        no_wait: bool,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity, headless answers.
        #[command(flatten)]
        session: SessionFlags,
    },
    /// Tasks (io.modelcontextprotocol/tasks) on a server: `list` the ones harness9 started and
    /// still tracks, `get` one's status (its result once completed), `cancel` one.
    Tasks {
        /// list, get or cancel.
        #[arg(value_enum)]
        action: TaskAction,
        /// The server's name in .mcp.json.
        server: String,
        /// The task's id (get, cancel).
        id: Option<String>,
        /// get: wait for the task's end, printing its status as it changes.
        #[arg(long)]
        wait: bool,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity, headless answers.
        #[command(flatten)]
        session: SessionFlags,
    },
    /// A server's skills (the Skills extension): `list` them (name, description, files), or
    /// `get` one: its SKILL.md, read and verified against its entry (size, digest,
    /// frontmatter); `--file` reads one more of its listed files, verified the same way.
    Skills {
        /// `list` or `get`.
        #[arg(value_enum)]
        action: SkillsAction,
        /// The server's name in .mcp.json.
        server: String,
        /// `get`: the skill's name, or the URI of its SKILL.md.
        skill: Option<String>,
        /// `get`: also read this file of the skill (its path under the skill, as its
        /// SKILL.md refers to it), verified against the skill's entry.
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// List one server's resources and resource templates.
    Resources {
        /// The server's name in .mcp.json.
        server: String,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// Read one resource of a server; binary contents are summarised unless --out is given.
    Read {
        /// The server's name in .mcp.json.
        server: String,
        /// The resource's URI.
        uri: String,
        /// Write the contents (text or decoded binary) to this file instead.
        #[arg(long, value_name = "FILE", conflicts_with = "watch")]
        out: Option<PathBuf>,
        /// Subscribe, and read and print it again on each of its next N changes (with --json,
        /// one JSON line per read); Ctrl+C stops.
        #[arg(long, value_name = "N", default_value_t = 0)]
        watch: usize,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// List one server's prompts with their arguments.
    Prompts {
        /// The server's name in .mcp.json.
        server: String,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// Get one prompt of a server (its messages) with arguments.
    Prompt {
        /// The server's name in .mcp.json.
        server: String,
        /// The prompt's name on that server.
        name: String,
        /// The arguments as a JSON object of strings, or - to read them from stdin.
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// Ask a server for the values of a prompt's argument or a resource template's variable
    /// (`completion/complete`); prints one value per line.
    #[command(group(clap::ArgGroup::new("target").required(true).args(["prompt", "resource"])))]
    Complete {
        /// The server's name in .mcp.json.
        server: String,
        /// Complete an argument of this prompt.
        #[arg(long, value_name = "NAME")]
        prompt: Option<String>,
        /// Complete a variable of this resource template.
        #[arg(long, value_name = "URI_TEMPLATE")]
        resource: Option<String>,
        /// The argument's (or the template variable's) name.
        #[arg(long, value_name = "NAME")]
        arg: String,
        /// What is typed so far.
        #[arg(long, value_name = "PREFIX", default_value = "")]
        value: String,
        /// The arguments already chosen, a JSON object of strings, e.g. '{"department": "Sales"}'.
        #[arg(long, value_name = "JSON")]
        context: Option<String>,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity.
        #[command(flatten)]
        session: ServerFlags,
    },
    /// Approve servers of the project's .mcp.json (as they are now) so they may start.
    Approve {
        /// The servers to approve; every server when none is named.
        servers: Vec<String>,
        /// The config file.
        #[command(flatten)]
        config: ConfigFlag,
    },
    /// Add a server: `mcp add NAME -- COMMAND [ARGS...]`, or `mcp add NAME URL` for HTTP.
    Add {
        /// The server's name.
        name: String,
        /// Which file: the project's .mcp.json or the user's mcp.json.
        #[arg(short = 's', long, value_enum, default_value_t = Scope::Project)]
        scope: Scope,
        /// An environment variable for a stdio server (repeatable).
        #[arg(short = 'e', long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A header for an HTTP server (repeatable).
        #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// stdio, http or sse [default: http for a URL, else stdio].
        #[arg(long, value_enum)]
        transport: Option<Transport>,
        /// The command and its arguments (after `--`), or the URL.
        #[arg(required = true, num_args = 1..)]
        command: Vec<String>,
        /// The project file to edit (instead of the project's .mcp.json).
        #[command(flatten)]
        config: ConfigFlag,
    },
    /// Add a server from its JSON entry, as it would stand in .mcp.json.
    AddJson {
        /// The server's name.
        name: String,
        /// The entry, e.g. '{"command": "npx", "args": ["-y", "pkg"]}'.
        json: String,
        /// Which file.
        #[arg(short = 's', long, value_enum, default_value_t = Scope::Project)]
        scope: Scope,
        /// The project file to edit (instead of the project's .mcp.json).
        #[command(flatten)]
        config: ConfigFlag,
    },
    /// Import the servers of another tool's config (a name already here is skipped).
    Import {
        /// The tool whose config is read from its standard place.
        #[arg(long, value_enum)]
        from: crate::app::import::Source,
        /// Read this file instead of the tool's standard place.
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
        /// Which file to write.
        #[arg(short = 's', long, value_enum, default_value_t = Scope::Project)]
        scope: Scope,
        /// The project file to write (instead of the project's .mcp.json).
        #[command(flatten)]
        config: ConfigFlag,
    },
    /// Remove a server from a config file.
    Remove {
        /// The server's name.
        name: String,
        /// Which file.
        #[arg(short = 's', long, value_enum, default_value_t = Scope::Project)]
        scope: Scope,
        /// The project file to edit (instead of the project's .mcp.json).
        #[command(flatten)]
        config: ConfigFlag,
    },
    /// Log in to an OAuth-protected HTTP server: opens the browser ($BROWSER, else xdg-open)
    /// on its authorization page, waits for the redirect on 127.0.0.1 and keeps the tokens in
    /// the OAuth store ($HARNESS9_OAUTH_STORE, else ~/.local/state/harness9/oauth.json).
    Login {
        /// The server's name in .mcp.json.
        server: String,
        /// The config file.
        #[command(flatten)]
        config: ConfigFlag,
        /// More logging (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
        #[arg(short, long, action = clap::ArgAction::Count)]
        verbose: u8,
    },
    /// Forget the tokens and client registration kept for a server.
    Logout {
        /// The server's name in .mcp.json.
        server: String,
        /// The config file.
        #[command(flatten)]
        config: ConfigFlag,
        /// More logging (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
        #[arg(short, long, action = clap::ArgAction::Count)]
        verbose: u8,
    },
}

/// Which config file `mcp add`/`remove` edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// The project's .mcp.json (or the --config file).
    Project,
    /// The user's $XDG_CONFIG_HOME/harness9/mcp.json.
    User,
}

/// `mcp add --transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// A child process on stdin/stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
}

/// `harness9 mcp list`
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Output format.
    #[command(flatten)]
    pub json: JsonFlag,
    /// Config, trace, approval, settings, verbosity.
    #[command(flatten)]
    pub session: ServerFlags,
}

/// `--json`
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print JSON instead of text (errors too: `{"error": "...", "code": N}`).
    #[arg(long)]
    pub json: bool,
}
