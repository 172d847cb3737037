//! The one session wiring every front end (the TUI, `run -p`, the `mcp` commands) uses: the
//! command line resolved once into [`SessionOptions`], then [`Session::start`] opens the trace
//! file, starts the runtime and the built-ins (and, for the TUI, the [`ConfigWatcher`]), and
//! [`Session::close`] tears it all down with bounded waits.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use anyhow::Context as _;
use harness9_actors::messages::ShutdownAll;
use harness9_actors::trace::{WireRecord, WireTap};
use harness9_actors::{RestartPolicy, ServerSpec};
use tokio::sync::{mpsc, watch};

use super::asks::{DeskOptions, InputDesk};
use super::runtime::Runtime;
use super::watcher::{ConfigWatcher, StopWatching};
use crate::config::{self, Config};

use harness9_agent::engine::{Engine, EngineConfig};
use harness9_agent::model::settings::{self, ModelFlags, Settings};
use harness9_agent::model::{Provider, ProviderConfig};
use harness9_agent::permissions::{self, Mode, Place, Policy, Rules};

/// How long the trace file's writer has to finish at the end of a session.
const TRACE_JOIN: Duration = Duration::from_secs(2);

/// The grace periods of a headless command's servers at its end (after closing stdin, after
/// SIGTERM): the result is printed; a server that ends on SIGTERM is gone within about this.
pub const HEADLESS_GRACE: Duration = Duration::from_millis(200);

/// What the runtime takes from the settings files and the state directory beside the flags,
/// resolved once at startup (`main`) and handed down to the config loads, the watcher and the
/// built-ins: no process globals. (What servers are told the front end can answer, the
/// `InputCaps`, is the session's desk's: [`Session::start`] hands it to the supervisor.)
#[derive(Debug, Clone, Default)]
pub struct RuntimeOptions {
    /// `[mcp] sandbox` and the OAuth store: what a config entry gets that it does not say.
    pub entries: config::EntryDefaults,
    /// `[permissions] shell`: how the agent's `bash` is sandboxed.
    pub shell: harness9_agent::builtins::shell_sandbox::ShellSandbox,
    /// What reading the settings files ignored (a project value that would loosen the
    /// user's), already logged; the TUI shows them in its transcript.
    pub warnings: Vec<String>,
}

/// What a session runs with: the command line's global flags as plain values.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// `.mcp.json`: `--config`, else the project's (found up to the repository root), else
    /// `./.mcp.json`.
    pub config_path: PathBuf,
    /// The user's config file merged under the project's (`None` with `--config`).
    pub user_config: Option<PathBuf>,
    /// Whether a missing config file is an error (it was named with `--config`).
    pub config_must_exist: bool,
    /// `--approve-project`: the project config's servers are approved as they are.
    pub approve_project: bool,
    /// `--trace FILE`.
    pub trace: Option<PathBuf>,
    /// `--provider`, `--model`, `--base-url`, `--settings`.
    pub model: ModelFlags,
    /// `-v` count.
    pub verbose: u8,
    /// `--yes`: every tool call runs without asking (`--permission-mode bypass`).
    pub yes: bool,
    /// `--disallowed-tools`, then `--allowed-tools`: the rules of this command line.
    pub flag_rules: Vec<permissions::Rule>,
    /// `--permission-mode` (`--yes`: bypass).
    pub permission_mode: Mode,
    /// `--continue`/`--resume [ID]`: the conversation to start with.
    pub resume: crate::stores::conversations::Resume,
    /// `--elicitation-answers FILE`: headless elicitations are answered from it.
    pub elicitation_answers: Option<PathBuf>,
    /// `--elicitation`: how a headless form is answered without an answers file.
    pub elicitation: harness9_actors::server::server_requests::ElicitPolicy,
    /// `--sampling allow`: a headless server's sampling request goes to the model.
    pub sampling_allowed: bool,
    /// The settings files' runtime choices and the stores (defaults until `main` reads the
    /// settings).
    pub runtime: RuntimeOptions,
    /// Where the headless `[mcp]` lines go: the front end prints them (on stderr).
    pub lines: HeadlessLines,
}

/// Where a headless front end's `[mcp]` lines go, each as soon as it is known: what the
/// desk answered a server by the flags, the servers' connection events. The front end
/// prints them (on stderr); the default drops them.
#[derive(Clone)]
pub struct HeadlessLines(Arc<dyn Fn(&str) + Send + Sync>);

impl HeadlessLines {
    /// Lines given to `out`, one call each (without its newline).
    pub fn new(out: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(out))
    }

    /// Tells `line`.
    pub fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl Default for HeadlessLines {
    fn default() -> Self {
        Self::new(|_| {})
    }
}

impl std::fmt::Debug for HeadlessLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeadlessLines")
    }
}

impl SessionOptions {
    /// Loads `.mcp.json` (a missing default file is an empty config); a found project config's
    /// unapproved servers are held (see [`crate::config::trust`]).
    /// Its secrets join the process's registry at once, before anything can log them.
    pub fn load_config(&self) -> anyhow::Result<Config> {
        let config = crate::config::load_merged(
            &self.config_path,
            self.config_must_exist,
            self.approve_project,
            self.user_config.as_deref(),
            &self.runtime.entries,
        )?;
        crate::telemetry::register(&config);
        Ok(config)
    }

    /// The permissions of a session run in `root`: the settings files' rules, this command
    /// line's (`--allowed-tools`, `--disallowed-tools`), the answers remembered for the
    /// project, and the mode. A malformed rule is an error naming the file and line (or the
    /// flag) and the rule; a remembered-answers file that cannot be used is warned about and
    /// applies nothing. Also what the settings files' rules ignored (already logged).
    pub fn policy(&self, root: &Path) -> anyhow::Result<(Arc<Policy>, Vec<String>)> {
        let mut ignored = Vec::new();
        let mut fixed = settings::permission_rules(&self.model, &mut ignored)?;
        fixed.extend(self.flag_rules.iter().cloned());
        let (saved, warnings) =
            crate::stores::permission_store::load(&crate::stores::permission_store::path(), root);
        for w in warnings {
            tracing::warn!("{w}");
        }
        let policy = Policy::with_settings_file(
            Rules::new(fixed, saved),
            self.permission_mode,
            Place {
                root: root.to_path_buf(),
                home: std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(PathBuf::from),
            },
            settings::user_settings_file(&self.model),
        );
        Ok((policy, ignored))
    }

    /// Where this session's configuration comes from, for the shell's read-only paths
    /// ([`crate::config::trust::protected`]), the project being `root`.
    pub fn protected_sources(&self, root: &Path) -> crate::config::trust::Sources {
        let env = |k: &str| std::env::var(k).ok();
        crate::config::trust::Sources {
            config: self.config_path.clone(),
            user: self.user_config.clone(),
            settings: settings::candidate_paths(&self.model, &env, root),
            defaults: self.runtime.entries.clone(),
            root: root.to_path_buf(),
        }
    }

    /// A warning for each rule of the settings files and flags that names no built-in tool
    /// and no server of `config` ([`permissions::unmatched`]), each also logged.
    pub fn unmatched_rules(policy: &Policy, config: &Config) -> Vec<String> {
        let defs = harness9_agent::builtins::definitions();
        let mut builtins: Vec<&str> = defs.iter().map(|t| t.name.as_str()).collect();
        builtins.push(harness9_agent::toolsearch::TOOL_SEARCH);
        let servers: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        let warnings = permissions::unmatched(&policy.rules.all(), &builtins, &servers);
        for w in &warnings {
            tracing::warn!("{w}");
        }
        warnings
    }

    /// The model settings: flags > env > user TOML > `config/harness9.toml`.
    pub fn model_settings(&self) -> Result<Settings, settings::SettingsError> {
        settings::resolve(&self.model)
    }

    /// The desk answering servers' questions by these flags (`interactive`: a person answers
    /// too), sampling with `model`'s provider when there is one.
    fn input_desk(&self, interactive: bool, model: Option<&Settings>) -> anyhow::Result<InputDesk> {
        Ok(InputDesk::new(
            DeskOptions {
                answers: match &self.elicitation_answers {
                    Some(p) => Some(crate::asks::read_answers(p)?),
                    None => None,
                },
                elicitation: self.elicitation,
                sampling_allowed: self.sampling_allowed,
                interactive,
                sampling_models: model.map(|s| s.sampling_models.clone()).unwrap_or_default(),
                lines: self.lines.clone(),
            },
            model.and_then(|s| s.provider.clone()).map(Provider::new),
        ))
    }
}

/// How a session starts.
#[derive(Default)]
pub struct Start {
    /// Also send every wire record here (the TUI's `/trace`); bounded, a full sink loses
    /// records.
    pub wire: Option<mpsc::Sender<WireRecord>>,
    /// Start a [`ConfigWatcher`] (hot reload).
    pub watch: bool,
    /// Install the built-in tools (bash, files, grep): the front ends with a model do.
    pub builtins: bool,
    /// The servers' grace periods at [`Session::close`] ([`HEADLESS_GRACE`] for the headless
    /// front ends); `None` keeps each spec's own.
    pub shutdown_grace: Option<Duration>,
    /// A person answers servers' questions (the TUI registers with the desk's `SetUser`):
    /// URL elicitation is declared, and sampling whenever a model is configured.
    pub interactive: bool,
    /// Offer servers' cached tool lists at once (and start lazy ones on their first call);
    /// without it the cache is only written. The front ends with a model, and `mcp list`.
    pub offer_cached: bool,
    /// The session's permissions, for the built-ins that check each file they read.
    pub policy: Option<Arc<Policy>>,
}

/// A running session: the runtime with its built-ins, the trace file, the config watcher.
pub struct Session {
    /// The registry, the supervisor and the status watch.
    pub runtime: Runtime,
    /// The working directory the built-ins and the engine run in.
    pub root: PathBuf,
    /// The hot-reload watcher, when started with [`Start::watch`].
    pub watcher: Option<Addr<ConfigWatcher>>,
    /// Answers every server's elicitation and sampling requests.
    pub desk: Addr<InputDesk>,
    trace_writer: Option<std::thread::JoinHandle<()>>,
    shutdown_grace: Option<Duration>,
    /// The tool-list cache (`None` with `HARNESS9_TOOL_CACHE=""`).
    pub tool_cache: Option<std::sync::Arc<crate::stores::tool_cache::DiskCache>>,
    /// Where the engine says a new conversation started (the built-ins forget what the model
    /// saw of each file); `None` without built-ins.
    forget_files: Option<actix::Recipient<harness9_agent::builtins::ForgetFiles>>,
}

impl Session {
    /// Starts `servers` (the config's, or the one a command names) with `config`'s secrets
    /// redacted from the trace file.
    pub fn start(
        opts: &SessionOptions,
        config: &Config,
        servers: Vec<ServerSpec>,
        start: Start,
    ) -> anyhow::Result<Self> {
        let root = std::env::current_dir().context("cannot read the working directory")?;
        harness9_actors::server::set_read_budget(read_budget_from_env()?);
        // The trace file's redaction list follows the config through hot reloads.
        let (secrets, secrets_rx) = watch::channel(config.secrets.clone());
        // Exported spans are cleaned of them too.
        crate::telemetry::register(config);
        let (tap, trace_writer) = wire_tap(opts.trace.as_deref(), start.wire, secrets_rx)?;
        let model = opts.model_settings().ok();
        let desk = opts.input_desk(start.interactive, model.as_ref())?;
        // What this front end can answer: declared to every server, and part of every cached
        // list's key.
        let caps = desk.caps();
        let tool_cache = crate::stores::tool_cache::dir()
            .map(|d| crate::stores::tool_cache::DiskCache::open(d, caps));
        let cache_use = tool_cache
            .clone()
            .map(|store| harness9_actors::tool_cache::CacheUse {
                store,
                default_start: model.as_ref().map(|m| m.mcp_start).unwrap_or_default(),
                offer: start.offer_cached,
            });
        let desk = desk.start();
        let runtime = Runtime::start_cached(
            servers,
            tap,
            RestartPolicy::default(),
            Some(desk.clone().recipient()),
            caps,
            cache_use,
        );
        let forget_files = start.builtins.then(|| {
            // What harness9 later runs unsandboxed is not the shell's to write.
            let protected = crate::config::trust::protected(opts.protected_sources(&root));
            runtime
                .install_builtins(
                    &root,
                    opts.runtime.shell,
                    Some(protected),
                    start.policy.clone(),
                )
                .recipient()
        });
        let watcher = start.watch.then(|| {
            ConfigWatcher::new(
                opts.config_path.clone(),
                opts.user_config.clone(),
                opts.config_must_exist,
                opts.approve_project,
                runtime.supervisor.clone(),
                secrets,
                opts.runtime.entries.clone(),
            )
            .start()
        });
        Ok(Self {
            runtime,
            root,
            watcher,
            desk,
            trace_writer,
            shutdown_grace: start.shutdown_grace,
            tool_cache,
            forget_files,
        })
    }

    /// The engine settings for `max_steps` and a tool-output budget, the system prompt
    /// describing this session's working directory.
    pub fn engine_config(&self, max_steps: u32, budget: usize) -> EngineConfig {
        EngineConfig::new(max_steps, budget).with_environment(&self.root)
    }

    /// The warning, to say loudly on stderr, that `--permission-mode bypass` (or `--yes`)
    /// runs every tool call unasked; `None` in another mode.
    pub fn bypass_warning(policy: &Policy) -> Option<&'static str> {
        (policy.mode == Mode::Bypass).then_some(
            "harness9: WARNING: --permission-mode bypass: every tool call runs without asking (bash, write_file, every MCP tool); only deny rules still refuse",
        )
    }

    /// An engine for `provider` over this session's tools, continuing and saving `saved`.
    pub fn engine(
        &self,
        provider: ProviderConfig,
        cfg: EngineConfig,
        saved: Option<crate::stores::conversations::Opened>,
    ) -> Engine {
        let mut engine = Engine::new(Provider::new(provider), self.runtime.registry.clone(), cfg);
        if let Some(forget) = &self.forget_files {
            engine = engine.forgetting_files(forget.clone());
        }
        match saved {
            Some(o) => engine.saving(o.file, o.messages),
            None => engine,
        }
    }

    /// The conversation `resume` asks for, saved in the sessions directory, for `model`.
    pub fn conversation(
        &self,
        resume: &crate::stores::conversations::Resume,
        model: &str,
    ) -> Result<crate::stores::conversations::Opened, String> {
        crate::stores::conversations::open(
            &crate::stores::conversations::dir(),
            resume,
            &self.root,
            model,
        )
    }

    /// Stops every server (bounded by their shutdown), then lets the trace file finish
    /// (bounded by `TRACE_JOIN`).
    pub async fn close(self) {
        let Session {
            runtime,
            watcher,
            trace_writer,
            shutdown_grace,
            tool_cache,
            ..
        } = self;
        if let Some(w) = watcher {
            // Its interval would keep it alive; a local mailbox answers at once.
            let _ = tokio::time::timeout(TRACE_JOIN, w.send(StopWatching)).await;
        }
        let _ = runtime
            .supervisor
            .send(ShutdownAll {
                grace: shutdown_grace,
            })
            .await;
        // The last live lists reach the disk (the writer is a thread; bounded like the trace).
        if let Some(c) = tool_cache {
            let _ = tokio::task::spawn_blocking(move || c.flush(TRACE_JOIN)).await;
        }
        // The tap clones live in the (now stopped) actors; the writer ends when they are dropped.
        drop(runtime);
        if let Some(h) = trace_writer {
            let _ = tokio::time::timeout(TRACE_JOIN, tokio::task::spawn_blocking(move || h.join()))
                .await;
        }
    }
}

/// Where a session's wire records go: the `--trace` file (written by its thread, which
/// redacts `secrets`) and the front end's `wire` sink; either, both or none.
fn wire_tap(
    trace: Option<&Path>,
    wire: Option<mpsc::Sender<WireRecord>>,
    secrets: watch::Receiver<Vec<String>>,
) -> anyhow::Result<(Option<WireTap>, Option<std::thread::JoinHandle<()>>)> {
    let (file_tap, trace_writer) = match trace {
        Some(p) => {
            let (tap, handle) = crate::diagnostics::trace_file::open_watched(p, secrets)?;
            (Some(tap), Some(handle))
        }
        None => (None, None),
    };
    let tap = match wire {
        Some(extra) => Some(fan_out(file_tap, extra)),
        None => file_tap,
    };
    Ok((tap, trace_writer))
}

/// Forwards every wire record to `extra` and, with `--trace`, to the trace file. Both ends are
/// bounded: a sink that falls behind a flood loses records, never memory.
fn fan_out(file: Option<WireTap>, extra: mpsc::Sender<WireRecord>) -> WireTap {
    let (tap, mut rx) = harness9_actors::trace::tap_channel();
    actix_rt::spawn(async move {
        while let Some(r) = rx.recv().await {
            if let Some(f) = &file {
                let _ = f.try_send(r.clone());
            }
            let closed = matches!(extra.try_send(r), Err(mpsc::error::TrySendError::Closed(_)));
            if closed && file.is_none() {
                break;
            }
        }
    });
    tap
}

/// `HARNESS9_READ_BUDGET_MB`: what every reply being read at once, from every server, may hold
/// together, in MiB (default 512; at least 1). A value that is not a whole number is an error
/// naming the variable.
fn read_budget_from_env() -> anyhow::Result<usize> {
    let default = harness9_actors::server::DEFAULT_READ_BUDGET;
    match std::env::var("HARNESS9_READ_BUDGET_MB") {
        Err(_) => Ok(default),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(mb) if mb >= 1 => Ok(mb.saturating_mul(1024 * 1024)),
            _ => anyhow::bail!(
                "HARNESS9_READ_BUDGET_MB is {v:?}; set it to a whole number of MiB (at least 1), or unset it for 512"
            ),
        },
    }
}
