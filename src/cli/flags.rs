//! The flag groups commands share (`ConfigFlag`, `ServerFlags`, `AskFlags`, `SessionFlags`,
//! `ModelArgs`, `--sampling`/`--elicitation`) and `Cli::flags`, which merges those given
//! before a command's name with the command's own.

use std::path::PathBuf;

use crate::agent::model::settings::ModelFlags;
use crate::agent::permissions::{Decision, Mode, Rule};
use crate::app::SessionOptions;
use clap::Args;

use super::{Cli, Command, UsageError};

/// Which conversation `--continue`/`--resume [ID]` ask for.
pub fn resume_of(
    continue_: bool,
    resume: Option<&str>,
) -> crate::app::stores::conversations::Resume {
    use crate::app::stores::conversations::Resume;
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
    pub(super) fn session(&self) -> SessionFlags {
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

/// The permission flags: the interactive session's and `run`'s (see README "Permissions").
#[derive(Debug, Clone, Default, Args)]
pub struct PermissionArgs {
    /// Allow these tools for this run without asking: comma-separated rules as in
    /// [permissions] allow (`mcp__github__*`, `bash(git status:*)`, `write_file(src/**)`).
    #[arg(long, value_name = "RULES")]
    pub allowed_tools: Vec<String>,
    /// Refuse these tools for this run: comma-separated rules as in [permissions] deny.
    #[arg(long, value_name = "RULES")]
    pub disallowed_tools: Vec<String>,
    /// default (the rules; read-only tools run, others ask), read-only (only read-only tools
    /// run), accept-edits (also the file edits inside the project run), bypass (everything but
    /// what a deny rule names runs).
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<PermissionMode>,
}

/// `--permission-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PermissionMode {
    /// The rules; read-only tools run, others ask (refused in `run -p`).
    Default,
    /// Only read-only tools run.
    ReadOnly,
    /// As default, and write_file inside the project runs without asking.
    AcceptEdits,
    /// Everything runs but what a deny rule names.
    Bypass,
}

impl PermissionMode {
    /// The engine's mode.
    pub fn mode(self) -> crate::agent::permissions::Mode {
        use crate::agent::permissions::Mode;
        match self {
            PermissionMode::Default => Mode::Default,
            PermissionMode::ReadOnly => Mode::ReadOnly,
            PermissionMode::AcceptEdits => Mode::AcceptEdits,
            PermissionMode::Bypass => Mode::Bypass,
        }
    }
}

impl PermissionArgs {
    /// The rules these flags give: `--disallowed-tools`' deny rules, then `--allowed-tools`'
    /// allow rules.
    pub fn rules(&self) -> Result<Vec<Rule>, UsageError> {
        let mut out = Vec::new();
        for (values, kind, flag) in [
            (&self.disallowed_tools, Decision::Deny, "--disallowed-tools"),
            (&self.allowed_tools, Decision::Allow, "--allowed-tools"),
        ] {
            for v in values {
                out.extend(
                    crate::agent::permissions::parse_flag(v, kind, flag).map_err(UsageError)?,
                );
            }
        }
        Ok(out)
    }

    /// The first flag given, as spelled on the command line.
    pub(super) fn first_given(&self) -> Option<&'static str> {
        [
            (!self.allowed_tools.is_empty(), "--allowed-tools"),
            (!self.disallowed_tools.is_empty(), "--disallowed-tools"),
            (self.permission_mode.is_some(), "--permission-mode"),
        ]
        .into_iter()
        .find_map(|(set, flag)| set.then_some(flag))
    }

    /// `self`, with `later`'s rules added and its mode when given.
    pub(super) fn or(&self, later: &PermissionArgs) -> PermissionArgs {
        PermissionArgs {
            allowed_tools: [self.allowed_tools.clone(), later.allowed_tools.clone()].concat(),
            disallowed_tools: [
                self.disallowed_tools.clone(),
                later.disallowed_tools.clone(),
            ]
            .concat(),
            permission_mode: later.permission_mode.or(self.permission_mode),
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
    /// `--yes` (the interactive session only): `--permission-mode bypass`.
    pub yes: bool,
    /// `--allowed-tools`, `--disallowed-tools`, `--permission-mode`.
    pub permissions: PermissionArgs,
    /// `--continue`/`--resume [ID]`: the conversation to start with.
    pub resume: crate::app::stores::conversations::Resume,
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
            permissions: self.permissions.clone(),
            resume: resume_of(self.continue_, self.resume.as_deref()),
        };
        let Some(command) = &self.command else {
            return Ok(top);
        };
        let name = command.name();
        if self.yes {
            return Err(UsageError(format!(
                "--yes is for the interactive session; `harness9 {name}` never asks (`harness9 run` takes --permission-mode bypass after its name)"
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
                    permissions: top.permissions.or(&a.permissions),
                    resume: resume_of(a.continue_, a.resume.as_deref()),
                })
            }
            Command::Mcp(m) => m.session_flags(),
            Command::Doctor(d) => {
                if let Some(flag) = top.permissions.first_given() {
                    return Err(UsageError(format!(
                        "{flag} is a permission flag: `harness9 doctor` runs no tool"
                    )));
                }
                return Ok(Flags {
                    session: top.session.or(&d.session.session()),
                    model: top.model.or(&d.model),
                    ..Flags::default()
                });
            }
            Command::Conformance(c) => c.session.clone(),
            Command::Completions { .. }
            | Command::ConformanceBrowser { .. }
            | Command::Trace(_)
            | Command::Permissions(_) => SessionFlags::default(),
        };
        if let Some(flag) = top.permissions.first_given() {
            return Err(UsageError(format!(
                "{flag} is a permission flag: `harness9 {name}` runs no model (it is for the interactive session and `harness9 run`; `mcp call` is your own call, refused only by a deny rule of your settings)"
            )));
        }
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
    pub fn policy(self) -> harness9_actors::server::server_requests::ElicitPolicy {
        match self {
            Elicitation::Decline => harness9_actors::server::server_requests::ElicitPolicy::Decline,
            Elicitation::AcceptDefaults => {
                harness9_actors::server::server_requests::ElicitPolicy::AcceptDefaults
            }
        }
    }
}

impl Flags {
    /// The model's flags and the settings file they name.
    pub fn model_flags(&self) -> ModelFlags {
        ModelFlags {
            provider: self.model.provider.clone(),
            model: self.model.model.clone(),
            base_url: self.model.base_url.clone(),
            config_path: self.session.servers.settings.clone(),
        }
    }

    /// The session options of these flags ([`super::Cli::flags`]); a malformed
    /// `--allowed-tools`/`--disallowed-tools` rule is a usage error naming the flag and rule.
    pub fn session_options(&self) -> Result<SessionOptions, UsageError> {
        let flags = self;
        let s = &flags.session.servers;
        let (config_path, config_must_exist) = match &s.config.config {
            Some(p) => (p.clone(), true),
            None => {
                // In the working directory itself it keeps its short name in messages.
                let found = std::env::current_dir().ok().and_then(|cwd| {
                    crate::app::config::sources::find_project(&cwd)
                        .filter(|p| p.parent() != Some(cwd.as_path()))
                });
                (
                    found.unwrap_or_else(|| PathBuf::from(crate::app::config::DEFAULT_PATH)),
                    false,
                )
            }
        };
        Ok(SessionOptions {
            user_config: s
                .config
                .config
                .is_none()
                .then(crate::app::config::sources::user_path)
                .flatten(),
            config_path,
            config_must_exist,
            approve_project: s.approve_project,
            trace: s.trace.clone(),
            model: flags.model_flags(),
            verbose: s.verbose,
            yes: flags.yes,
            flag_rules: flags.permissions.rules()?,
            permission_mode: match flags.permissions.permission_mode {
                Some(m) => m.mode(),
                None if flags.yes => Mode::Bypass,
                None => Mode::Default,
            },
            resume: flags.resume.clone(),
            lines: crate::app::HeadlessLines::new(|line| eprintln!("{line}")),
            elicitation_answers: flags.session.asks.elicitation_answers.clone(),
            elicitation: flags
                .session
                .asks
                .elicitation
                .unwrap_or(Elicitation::Decline)
                .policy(),
            sampling_allowed: flags.session.asks.sampling == Some(Sampling::Allow),
            runtime: crate::app::RuntimeOptions::default(),
        })
    }
}
