//! The command line: its flags and commands (clap), and the headless front ends:
//! `harness9 mcp list|get|call|approve` in [`mcp`], `harness9 run -p` in [`run`], and the hidden
//! `harness9 conformance <URL>` (the MCP conformance suite's client) in [`conformance`].

/// `println!` that returns an error (e.g. a closed pipe) instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($t)*)?;
    }};
}

pub mod conformance;
mod login;
mod manage;
pub mod mcp;
pub mod resources;
pub mod run;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use mcp::run_mcp;

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
    /// In the interactive session, run without asking first: the model's bash and write_file,
    /// and the MCP tools a server marks destructive (`destructiveHint`).
    #[arg(long)]
    pub yes: bool,
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

/// Which conversation `--continue`/`--resume [ID]` ask for.
pub fn resume_of(continue_: bool, resume: Option<&str>) -> crate::app::sessions::Resume {
    use crate::app::sessions::Resume;
    match (continue_, resume) {
        (true, _) => Resume::Latest,
        (false, Some("")) => Resume::Pick,
        (false, Some(id)) => Resume::Id(id.to_owned()),
        (false, None) => Resume::New,
    }
}

/// `--config`: the one flag of the commands that only read or edit the config file.
#[derive(Debug, Clone, Default, Args)]
pub struct ConfigFlag {
    /// The MCP config file [default: the project's .mcp.json, found up to the repository
    /// root, merged with ~/.config/harness9/mcp.json].
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
}

/// The flags of every command that starts servers: the config, approval, trace, settings and
/// verbosity (`mcp list|get|resources|read|prompts|prompt|complete`).
#[derive(Debug, Clone, Default, Args)]
pub struct ServerFlags {
    /// The config file.
    #[command(flatten)]
    pub config: ConfigFlag,
    /// Approve every server of the project's ./.mcp.json as it is now, and run them.
    #[arg(long)]
    pub approve_project: bool,
    /// Write every JSON-RPC message as JSONL to FILE (secrets redacted).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Settings file: models, prices, `[mcp]` defaults such as `sandbox` [default:
    /// ~/.config/harness9/config.toml with ./harness9.toml merged over it; the project's file
    /// may only tighten the sandbox].
    #[arg(long, value_name = "PATH")]
    pub settings: Option<PathBuf>,
    /// More logging (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// How a server's questions are answered when nobody is asked: the flags of the commands that
/// run tools (`mcp call`, `run`, the interactive session).
#[derive(Debug, Clone, Default, Args)]
pub struct AskFlags {
    /// How a server's request for input (elicitation) is answered when nobody is asked:
    /// `decline` (the default) or `accept-defaults` (accept with the schema's defaults). A
    /// request to open a page (URL mode) is always declined: nothing is opened headless.
    #[arg(long, value_name = "POLICY", value_enum)]
    pub elicitation: Option<Elicitation>,
    /// Answer headless elicitations from FILE, a JSON object of field name to value (fields
    /// it lacks take the schema's default; an answer that does not fit the schema is declined).
    #[arg(long, value_name = "FILE")]
    pub elicitation_answers: Option<PathBuf>,
    /// Whether a server's sampling request (sampling/createMessage) may go to the configured
    /// model when nobody is asked: `refuse` (the default) or `allow`. The TUI asks each time.
    #[arg(long, value_name = "POLICY", value_enum)]
    pub sampling: Option<Sampling>,
}

/// The flags of a session that runs tools: [`ServerFlags`] and [`AskFlags`].
#[derive(Debug, Clone, Default, Args)]
pub struct SessionFlags {
    /// Config, trace, approval, settings, verbosity.
    #[command(flatten)]
    pub servers: ServerFlags,
    /// Headless answers to servers' questions.
    #[command(flatten)]
    pub asks: AskFlags,
}

impl ServerFlags {
    /// These flags as a session's, with no headless answers given.
    fn session(&self) -> SessionFlags {
        SessionFlags {
            servers: self.clone(),
            asks: AskFlags::default(),
        }
    }
}

/// The model flags: the interactive session's and `run`'s.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelArgs {
    /// The model provider: anthropic or openai (OpenAI-compatible: Ollama, vLLM, llama.cpp).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model name.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The provider's base URL (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
}

impl ModelArgs {
    /// The first flag given, as spelled on the command line.
    fn first_given(&self) -> Option<&'static str> {
        [
            (self.provider.is_some(), "--provider"),
            (self.model.is_some(), "--model"),
            (self.base_url.is_some(), "--base-url"),
        ]
        .into_iter()
        .find_map(|(set, flag)| set.then_some(flag))
    }

    /// `self`, each flag overridden by `later`'s when given.
    fn or(&self, later: &ModelArgs) -> ModelArgs {
        ModelArgs {
            provider: later.provider.clone().or_else(|| self.provider.clone()),
            model: later.model.clone().or_else(|| self.model.clone()),
            base_url: later.base_url.clone().or_else(|| self.base_url.clone()),
        }
    }
}

impl SessionFlags {
    /// `self` (flags before the command's name), each flag overridden by `later`'s (after it).
    fn or(&self, later: &SessionFlags) -> SessionFlags {
        let (a, b) = (&self.servers, &later.servers);
        SessionFlags {
            servers: ServerFlags {
                config: ConfigFlag {
                    config: b.config.config.clone().or_else(|| a.config.config.clone()),
                },
                approve_project: a.approve_project || b.approve_project,
                trace: b.trace.clone().or_else(|| a.trace.clone()),
                settings: b.settings.clone().or_else(|| a.settings.clone()),
                verbose: a.verbose.saturating_add(b.verbose),
            },
            asks: AskFlags {
                elicitation: later.asks.elicitation.or(self.asks.elicitation),
                elicitation_answers: later
                    .asks
                    .elicitation_answers
                    .clone()
                    .or_else(|| self.asks.elicitation_answers.clone()),
                sampling: later.asks.sampling.or(self.asks.sampling),
            },
        }
    }
}

/// Every flag of a command line, wherever it was given: what [`crate::app::SessionOptions`]
/// is made of.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// Config, trace, approval, settings, verbosity.
    pub session: SessionFlags,
    /// The model.
    pub model: ModelArgs,
    /// `--yes` (the interactive session only).
    pub yes: bool,
    /// `--continue`/`--resume [ID]`: the conversation to start with.
    pub resume: crate::app::sessions::Resume,
}

impl Cli {
    /// The flags of this command line: those before the command's name merged with the
    /// command's own (which win). A model flag or `--yes` before a command that has no use
    /// for it is a usage error, not silently ignored.
    pub fn flags(&self) -> Result<Flags, UsageError> {
        let top = Flags {
            session: self.session.clone(),
            model: self.model.clone(),
            yes: self.yes,
            resume: resume_of(self.continue_, self.resume.as_deref()),
        };
        let Some(command) = &self.command else {
            return Ok(top);
        };
        let name = command.name();
        if self.yes {
            return Err(UsageError(format!(
                "--yes is for the interactive session; `harness9 {name}` never asks"
            )));
        }
        if self.continue_ || self.resume.is_some() {
            return Err(UsageError(format!(
                "--continue and --resume are for the interactive session; `harness9 {name}` takes no conversation (`harness9 run` takes them after its name)"
            )));
        }
        let own = match command {
            Command::Run(a) => {
                return Ok(Flags {
                    session: top.session.or(&a.session),
                    model: top.model.or(&a.model),
                    yes: false,
                    resume: resume_of(a.continue_, a.resume.as_deref()),
                })
            }
            Command::Mcp(m) => m.session_flags(),
            Command::Conformance(c) => c.session.clone(),
            Command::Completions { .. } | Command::ConformanceBrowser { .. } => {
                SessionFlags::default()
            }
        };
        if let Some(flag) = top.model.first_given() {
            return Err(UsageError(format!(
                "{flag} is a model flag: `harness9 {name}` uses no model (it is for the interactive session and `harness9 run`)"
            )));
        }
        Ok(Flags {
            session: top.session.or(&own),
            ..Flags::default()
        })
    }

    /// Where this command line's errors go besides stderr (`--json`: JSON on stdout too).
    pub fn json_errors(&self) -> JsonErrors {
        match &self.command {
            Some(Command::Run(a)) if a.json_events() => JsonErrors::RunEvent,
            Some(Command::Mcp(m)) if m.json() => JsonErrors::Object,
            _ => JsonErrors::No,
        }
    }
}

impl Command {
    /// The command's name as typed (`mcp list`).
    fn name(&self) -> String {
        match self {
            Command::Mcp(m) => format!("mcp {}", m.name()),
            Command::Run(_) => "run".into(),
            Command::Completions { .. } => "completions".into(),
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
            McpCommand::Resources { .. } => "resources",
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
            | McpCommand::Resources { json, .. }
            | McpCommand::Read { json, .. }
            | McpCommand::Prompts { json, .. }
            | McpCommand::Prompt { json, .. }
            | McpCommand::Complete { json, .. } => json.json,
            _ => false,
        }
    }

    /// The session flags given after this command's name.
    fn session_flags(&self) -> SessionFlags {
        let config_only = |c: &ConfigFlag| {
            ServerFlags {
                config: c.clone(),
                ..ServerFlags::default()
            }
            .session()
        };
        match self {
            McpCommand::Call { session, .. } => session.clone(),
            McpCommand::List(ListArgs { session, .. })
            | McpCommand::Get { session, .. }
            | McpCommand::Resources { session, .. }
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

/// A mistake in how harness9 was called or configured (exit code 2, like clap's own usage
/// errors).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Where a failed command's error goes besides stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonErrors {
    /// Nowhere: text output.
    No,
    /// `--json` of an `mcp` command: `{"error": "...", "code": N}` on stdout.
    Object,
    /// `run --json`: an `error` event on stdout (`event`, `t_ms`, `message`, `code`).
    RunEvent,
}

impl JsonErrors {
    /// The JSON line for an error `message` ending the command with exit code `code`,
    /// `elapsed` after the start; `None` for text output.
    pub fn line(self, message: &str, code: u8, elapsed: std::time::Duration) -> Option<String> {
        let v = match self {
            JsonErrors::No => return None,
            JsonErrors::Object => serde_json::json!({"error": message, "code": code}),
            JsonErrors::RunEvent => serde_json::json!({
                "event": "error",
                "t_ms": (elapsed.as_secs_f64() * 1e6).round() / 1e3,
                "message": message,
                "code": code,
            }),
        };
        crate::sanitize::to_json(&v, false).ok()
    }

    /// The kind for a command line clap could not parse: `--json` anywhere (or `--stream` for
    /// `run`), `run` when the first word that is no flag is `run`.
    pub fn of_raw_args(args: &[std::ffi::OsString]) -> JsonErrors {
        let words: Vec<&str> = args.iter().skip(1).filter_map(|a| a.to_str()).collect();
        if !words.contains(&"--json") && !words.contains(&"--stream") {
            return JsonErrors::No;
        }
        let at = |name: &str| words.iter().position(|w| *w == name);
        let run_first = match (at("run"), at("mcp")) {
            (Some(r), Some(m)) => r < m,
            (run, _) => run.is_some(),
        };
        // `--stream` implies `--json` for `run` only.
        match (run_first, words.contains(&"--json")) {
            (true, _) => JsonErrors::RunEvent,
            (false, true) => JsonErrors::Object,
            (false, false) => JsonErrors::No,
        }
    }
}

/// The exit code of a failed command: 2 for a usage or config mistake (a [`UsageError`], an
/// invalid `.mcp.json` or settings file), 1 for any other failure.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    let usage = e.downcast_ref::<UsageError>().is_some()
        || e.downcast_ref::<crate::app::config::ConfigError>()
            .is_some()
        || e.downcast_ref::<crate::agent::model::settings::SettingsError>()
            .is_some();
    if usage {
        2
    } else {
        1
    }
}

/// `--sampling`: whether headless sampling reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sampling {
    /// Refuse every sampling request.
    Refuse,
    /// Send sampling requests to the configured model (rate-limited per server).
    Allow,
}

/// `--elicitation`: the headless answer to a server's request for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Elicitation {
    /// Decline: the server goes on without the input.
    Decline,
    /// Accept with every field that has a default in the requested schema.
    AcceptDefaults,
}

impl Elicitation {
    /// The runtime's policy for this choice.
    pub fn policy(self) -> harness9_actors::server::input::ElicitPolicy {
        match self {
            Elicitation::Decline => harness9_actors::server::input::ElicitPolicy::Decline,
            Elicitation::AcceptDefaults => {
                harness9_actors::server::input::ElicitPolicy::AcceptDefaults
            }
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
    /// Print one JSON event per line (start, model, tool_call, tool_progress, tool_result,
    /// model_retry, done or error; README "run --json events").
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
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
        /// Config, trace, approval, settings, verbosity, headless answers.
        #[command(flatten)]
        session: SessionFlags,
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
        #[arg(long, value_enum, default_value_t = Scope::Project)]
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
        #[arg(long, value_enum, default_value_t = Scope::Project)]
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
        #[arg(long, value_enum, default_value_t = Scope::Project)]
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
        #[arg(long, value_enum, default_value_t = Scope::Project)]
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

/// Resolves on SIGINT, SIGTERM or SIGHUP (a closed terminal), so every exit path stops the
/// children.
pub async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
}
