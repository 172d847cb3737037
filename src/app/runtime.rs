//! The running MCP runtime: the registry and the supervisor for a config, and a watch of their
//! status.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::prelude::*;
use harness9_actors::messages::{
    InputRequest, ServerStatus, SetBuiltins, StatusChanged, StatusSnapshot, Subscribe,
};
use harness9_actors::server::server_requests::InputCaps;
use harness9_actors::trace::WireTap;
use harness9_actors::{RestartPolicy, ServerSpec, ServerSupervisor, ToolRegistry};
use tokio::sync::watch;

use harness9_base::sanitize::clean_line;

use crate::HeadlessLines;

/// The running MCP runtime.
pub struct Runtime {
    /// The tool table and router.
    pub registry: Addr<ToolRegistry>,
    /// Owns every server.
    pub supervisor: Addr<ServerSupervisor>,
    /// The latest status snapshot.
    pub status: watch::Receiver<StatusSnapshot>,
    /// The longest startup timeout configured.
    pub max_startup: Duration,
}

/// Forwards status snapshots into a watch channel (never blocks: the latest wins).
struct StatusWatch {
    tx: watch::Sender<StatusSnapshot>,
}

impl Actor for StatusWatch {
    type Context = Context<Self>;
}

impl Handler<StatusChanged> for StatusWatch {
    type Result = ();

    fn handle(&mut self, msg: StatusChanged, _ctx: &mut Context<Self>) {
        self.tx.send_replace(msg.snapshot);
    }
}

impl Runtime {
    /// Starts every server in `specs` (on the current actix system).
    pub fn start(specs: Vec<ServerSpec>, tap: Option<WireTap>, policy: RestartPolicy) -> Self {
        Self::start_with_input(specs, tap, policy, None)
    }

    /// Starts every server in `specs`, their elicitation and sampling requests going to
    /// `input` (else answered by the headless policy); servers are told the default
    /// capabilities (form elicitation).
    pub fn start_with_input(
        specs: Vec<ServerSpec>,
        tap: Option<WireTap>,
        policy: RestartPolicy,
        input: Option<Recipient<InputRequest>>,
    ) -> Self {
        Self::start_cached(specs, tap, policy, input, InputCaps::default(), None)
    }

    /// [`Runtime::start_with_input`] with what the input handler can answer (declared to
    /// every server) and the tool-list cache: every live list is kept in it, and (when it
    /// offers them) cached lists are registered at once.
    pub fn start_cached(
        specs: Vec<ServerSpec>,
        tap: Option<WireTap>,
        policy: RestartPolicy,
        input: Option<Recipient<InputRequest>>,
        caps: InputCaps,
        cache: Option<harness9_actors::tool_cache::CacheUse>,
    ) -> Self {
        let max_startup = specs
            .iter()
            .map(|s| s.startup_timeout)
            .max()
            .unwrap_or_default();
        let registry = ToolRegistry::new().start();
        let supervisor = ServerSupervisor::new(specs, registry.clone(), policy, tap)
            .with_input(input, caps)
            .with_cache(cache)
            .start();
        let (tx, status) = watch::channel(StatusSnapshot::default());
        let watcher = StatusWatch { tx }.start();
        supervisor.do_send(Subscribe(watcher.recipient()));
        Runtime {
            registry,
            supervisor,
            status,
            max_startup,
        }
    }

    /// Installs the built-in tools, run in `root` with `bash` sandboxed by `shell` (the
    /// `protected` paths read-only) and `grep` and `list_dir` leaving out what `policy`'s deny
    /// rules refuse, in the registry (they win name clashes).
    pub fn install_builtins(
        &self,
        root: &std::path::Path,
        shell: harness9_agent::builtins::shell_sandbox::ShellSandbox,
        protected: Option<harness9_agent::builtins::ProtectedPaths>,
        policy: Option<std::sync::Arc<harness9_agent::permissions::Policy>>,
    ) -> actix::Addr<harness9_agent::builtins::Builtins> {
        use harness9_agent::builtins::{definitions, BuiltinOptions, Builtins};
        let builtins = Builtins::with_registry(
            root.to_path_buf(),
            BuiltinOptions {
                shell,
                protected,
                policy,
                ..BuiltinOptions::default()
            },
            self.registry.clone(),
        )
        .start();
        self.registry.do_send(SetBuiltins {
            tools: definitions(),
            executor: builtins.clone().recipient(),
        });
        builtins
    }

    /// Waits until every server is connected, failed or stopped, or `bound` passes; returns the
    /// snapshot then.
    pub async fn settled(&mut self, bound: Duration) -> StatusSnapshot {
        let rx = &mut self.status;
        let wait = rx.wait_for(|s| !s.is_empty() && s.values().all(|st| st.status.is_settled()));
        let done = match tokio::time::timeout(bound, wait).await {
            Ok(Ok(s)) => Some(s.clone()),
            _ => None,
        };
        done.unwrap_or_else(|| self.status.borrow().clone())
    }

    /// Waits until every server is settled or offers its tools from the cache (the first
    /// model request needs nothing more), or `bound` passes; returns the snapshot then.
    pub async fn ready(&mut self, bound: Duration) -> StatusSnapshot {
        let rx = &mut self.status;
        let wait = rx.wait_for(|s| !s.is_empty() && s.values().all(|st| st.status.is_ready()));
        let done = match tokio::time::timeout(bound, wait).await {
            Ok(Ok(s)) => Some(s.clone()),
            _ => None,
        };
        done.unwrap_or_else(|| self.status.borrow().clone())
    }
}

/// Tells `[mcp]` connection events to `lines` as statuses change (headless mode: the front
/// end prints them on stderr).
pub fn spawn_status_lines(
    mut rx: watch::Receiver<StatusSnapshot>,
    verbose: bool,
    lines: HeadlessLines,
) {
    actix_rt::spawn(async move {
        let mut last: BTreeMap<String, &'static str> = BTreeMap::new();
        while rx.changed().await.is_ok() {
            let snap = rx.borrow_and_update().clone();
            for (key, st) in snap.iter() {
                let label = st.status.label();
                if last.get(key) == Some(&label) {
                    continue;
                }
                last.insert(key.clone(), label);
                // One line per event, server text cleaned (names come from a config file).
                let name = clean_line(key);
                if let Some(line) = status_line(&name, &st.status, verbose) {
                    lines.say(&line);
                }
            }
        }
    });
}

/// The `[mcp]` line of server `name`'s new `status`, when it has one (a connect only when
/// `verbose`); server text cleaned.
fn status_line(name: &str, status: &ServerStatus, verbose: bool) -> Option<String> {
    Some(match status {
        ServerStatus::Failed { error, .. } => {
            format!(
                "[mcp] server \"{name}\" connect failed: {}",
                clean_line(error)
            )
        }
        ServerStatus::NeedsLogin { error, .. } => format!("[mcp] {}", clean_line(error)),
        ServerStatus::Restarting {
            attempt,
            last_error,
            ..
        } => format!(
            "[mcp] server \"{name}\" {}; restarting (attempt {attempt})",
            clean_line(last_error)
        ),
        ServerStatus::Connected { tools, info } if verbose => format!(
            "[mcp] server \"{name}\" connected: {tools} tools, protocol {}, {} ms",
            clean_line(&info.protocol_version),
            info.connect_time.as_millis()
        ),
        _ => return None,
    })
}
