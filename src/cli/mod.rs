//! The command line: its flags and commands (clap), and the headless front ends:
//! `harness9 mcp list|get|call|approve` in [`mcp`], `harness9 run -p` in [`run`], and the hidden
//! `harness9 conformance <URL>` (the MCP conformance suite's client) in [`conformance`].

pub mod conformance;
pub mod mcp;
pub mod resources;
pub mod run;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use mcp::run_mcp;

/// harness9: a terminal agent harness with an actor-based MCP client runtime.
#[derive(Debug, Parser)]
#[command(name = "harness9", version, about)]
pub struct Cli {
    /// The MCP config file [default: ./.mcp.json].
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Write every JSON-RPC message as JSONL to FILE (secrets redacted).
    #[arg(long, global = true, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The model provider: anthropic or openai (OpenAI-compatible: Ollama, vLLM, llama.cpp).
    #[arg(long, global = true, value_name = "NAME")]
    pub provider: Option<String>,
    /// The model name.
    #[arg(long, global = true, value_name = "MODEL")]
    pub model: Option<String>,
    /// The provider's base URL (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model settings file [default: ./harness9.toml, then ~/.config/harness9/config.toml].
    #[arg(long, global = true, value_name = "PATH")]
    pub settings: Option<PathBuf>,
    /// In the interactive session, run bash and write_file without asking first.
    #[arg(long, global = true)]
    pub yes: bool,
    /// Approve every server of the project's ./.mcp.json as it is now, and run them.
    #[arg(long, global = true)]
    pub approve_project: bool,
    /// How a server's request for input (elicitation) is answered when nobody is asked:
    /// `decline` (the default) or `accept-defaults` (accept with the schema's defaults).
    #[arg(long, global = true, value_name = "POLICY", value_enum, default_value_t = Elicitation::Decline)]
    pub elicitation: Elicitation,
    /// More logging (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What to do; without a command the interactive session opens.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A mistake in how a command was called (exit code 2, like clap's own usage errors).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

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
    /// With --json: also a `text` event for each piece of the model's text as it streams.
    #[arg(long, requires = "json")]
    pub stream: bool,
    /// Model calls before giving up [default: max_steps of harness9.toml, 50].
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u32>,
    /// Where cut tool results are saved whole [default: the temp dir's harness9-results].
    #[arg(long, value_name = "DIR")]
    pub spill_dir: Option<PathBuf>,
    /// How long the first model request waits for servers still starting; those that connect
    /// later join the next step [default: $HARNESS9_STARTUP_WAIT, else 5].
    #[arg(long, value_name = "SECS")]
    pub startup_wait: Option<f64>,
}

/// `harness9 mcp ...`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect every server and show its status; exits 1 if any failed.
    List(JsonFlag),
    /// Show one server's tools with descriptions and input schemas.
    Get {
        /// The server's name in .mcp.json.
        server: String,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
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
    },
    /// List one server's resources and resource templates.
    Resources {
        /// The server's name in .mcp.json.
        server: String,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Read one resource of a server; binary contents are summarised unless --out is given.
    Read {
        /// The server's name in .mcp.json.
        server: String,
        /// The resource's URI.
        uri: String,
        /// Write the contents (text or decoded binary) to this file instead.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
    },
    /// List one server's prompts with their arguments.
    Prompts {
        /// The server's name in .mcp.json.
        server: String,
        /// Output format.
        #[command(flatten)]
        json: JsonFlag,
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
    },
    /// Approve servers of the project's .mcp.json (as they are now) so they may start.
    Approve {
        /// The servers to approve; every server when none is named.
        servers: Vec<String>,
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
    },
    /// Remove a server from a config file.
    Remove {
        /// The server's name.
        name: String,
        /// Which file.
        #[arg(long, value_enum, default_value_t = Scope::Project)]
        scope: Scope,
    },
    /// Log in to an OAuth-protected HTTP server: opens the browser ($BROWSER, else xdg-open)
    /// on its authorization page, waits for the redirect on 127.0.0.1 and keeps the tokens in
    /// the OAuth store ($HARNESS9_OAUTH_STORE, else ~/.local/state/harness9/oauth.json).
    Login {
        /// The server's name in .mcp.json.
        server: String,
    },
    /// Forget the tokens and client registration kept for a server.
    Logout {
        /// The server's name in .mcp.json.
        server: String,
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

/// `--json`
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print JSON instead of text.
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
