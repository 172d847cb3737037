//! The `ServerSupervisor` actor: starts every enabled server concurrently, enforces startup
//! timeouts, restarts servers that exit after connecting (exponential backoff, crash-loop
//! breaker), keeps the registry in step, and fans status out to subscribers without ever blocking.
//! A spec with a `hold` (unapproved, or an invalid config entry) gets an entry that never
//! launches: it shows as `Unapproved` or `Failed` until a `Reconcile` brings a spec without one.
//! A held spec still takes a new generation, so an actor stopped for a spec now held is stale;
//! `Restart` keeps the hold. The restart delays and the breaker are the spec's
//! [`RestartPolicy`]; status snapshots go out with `try_send`, and a subscriber whose mailbox
//! was full gets the newest one after `COALESCE_RETRY`.
//! Server notices (log lines, resource and prompt changes) go on to notice subscribers with
//! `try_send`, never waiting.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;

use crate::error::fmt_duration;
use crate::messages::{
    ConnectionInfo, GetStatus, Restart, ServerEvent, ServerEventKind, ServerGone, ServerNotice,
    ServerState, ServerStatus, ServerTools, Shutdown, ShutdownAll, StatusChanged, StatusSnapshot,
    Stop, Subscribe, SubscribeNotices,
};
use crate::protocol::types::Tool;
use crate::protocol::version::Era;
use crate::registry::ToolRegistry;
use crate::server::McpServer;
use crate::spec::{Hold, RestartPolicy, ServerSpec};
use crate::tool_cache::CacheUse;
use crate::trace::WireTap;

mod cached;
mod forward;
mod login;
mod reconcile;

pub use forward::StatusForward;

/// How the error of a start that ran out of its `startupTimeoutSec` begins (`doctor` tells a
/// hung server from a failed one by it).
pub const STARTUP_TIMED_OUT: &str = "did not finish starting within";

/// A call's wait for a server whose tools were offered from the cache.
type Waiter = oneshot::Sender<Result<Addr<McpServer>, String>>;

/// How long `ShutdownAll` waits for children before it gives up on them (they are SIGKILLed).
const SHUTDOWN_BOUND: Duration = Duration::from_secs(10);
/// Retry period for subscribers whose mailbox was full.
const COALESCE_RETRY: Duration = Duration::from_millis(25);

/// One configured server under supervision: its spec, its status, the generation and address
/// of its current actor, its restart history and timer, and the calls waiting for it.
struct Managed {
    spec: Arc<ServerSpec>,
    status: ServerStatus,
    generation: u64,
    addr: Option<Addr<McpServer>>,
    exits: VecDeque<Instant>,
    ever_connected: bool,
    timer: Option<SpawnHandle>,
    /// The era the server spoke when it last connected (or, before that, when its cached list
    /// was listed): the next generation starts in it without probing (forgotten when the spec
    /// changes).
    era: Option<Era>,
    /// Calls waiting for this server to connect (its tools were offered from the cache).
    waiters: Vec<Waiter>,
    /// When the cache entry offered for this spec was written (shown until it connects).
    cache_written: Option<std::time::SystemTime>,
}

impl Managed {
    fn new(spec: ServerSpec, now: Instant) -> Self {
        Managed {
            spec: Arc::new(spec),
            status: ServerStatus::Starting { since: now },
            generation: 0,
            addr: None,
            exits: VecDeque::new(),
            ever_connected: false,
            timer: None,
            era: None,
            waiters: Vec::new(),
            cache_written: None,
        }
    }
}

impl Managed {
    /// Stops the entry's actor, if it has one, gracefully (within `grace`, else its spec's
    /// `shutdown_grace`), and cancels its timer (a startup timeout, a planned restart). The one
    /// way the supervisor stops a server it keeps or forgets (`Stop`, `Restart`, a reload,
    /// `ShutdownAll`).
    fn stop(&mut self, grace: Option<Duration>, ctx: &mut Context<ServerSupervisor>) {
        if let Some(t) = self.timer.take() {
            ctx.cancel_future(t);
        }
        if let Some(addr) = self.addr.take() {
            addr.do_send(Shutdown {
                graceful: true,
                grace,
            });
        }
    }
}

struct Subscriber {
    rcpt: Recipient<StatusChanged>,
    dirty: bool,
}

/// Supervises every configured server.
pub struct ServerSupervisor {
    entries: BTreeMap<String, Managed>,
    registry: Addr<ToolRegistry>,
    policy: RestartPolicy,
    tap: Option<WireTap>,
    subscribers: Vec<Subscriber>,
    /// Who gets every server notice.
    notice_subscribers: Vec<Recipient<ServerNotice>>,
    retry_armed: bool,
    next_generation: u64,
    /// Actors that have not reported their exit yet: generation -> server.
    live: HashMap<u64, String>,
    shutdown_waiters: Vec<oneshot::Sender<()>>,
    shutting_down: bool,
    /// Given to every server actor: where its elicitation and sampling requests go.
    input: Option<Recipient<crate::messages::InputRequest>>,
    /// What that front end can answer: declared to every server.
    input_caps: crate::server::server_requests::InputCaps,
    /// The tool-list cache and how servers with an entry start.
    cache: Option<CacheUse>,
}

impl ServerSupervisor {
    /// Sends `notice` to every notice subscriber (one whose mailbox is full misses it; a
    /// closed one is dropped).
    pub(crate) fn send_notice(&mut self, notice: ServerNotice) {
        self.notice_subscribers
            .retain(|s| !matches!(s.try_send(notice.clone()), Err(SendError::Closed(_))));
    }

    /// A supervisor for `specs`; disabled servers are passed as `Stopped` by leaving them out.
    pub fn new(
        specs: Vec<ServerSpec>,
        registry: Addr<ToolRegistry>,
        policy: RestartPolicy,
        tap: Option<WireTap>,
    ) -> Self {
        let now = Instant::now();
        let entries = specs
            .into_iter()
            .map(|s| (s.name.clone(), Managed::new(s, now)))
            .collect();
        Self {
            entries,
            registry,
            policy,
            tap,
            subscribers: Vec::new(),
            notice_subscribers: Vec::new(),
            retry_armed: false,
            next_generation: 1,
            live: HashMap::new(),
            shutdown_waiters: Vec::new(),
            shutting_down: false,
            input: None,
            input_caps: Default::default(),
            cache: None,
        }
    }

    /// The server's tools leave the table with `reason`; calls waiting for it get the reason.
    fn gone(&mut self, name: &str, reason: String) {
        if let Some(entry) = self.entries.get_mut(name) {
            for w in entry.waiters.drain(..) {
                let _ = w.send(Err(reason.clone()));
            }
        }
        self.registry.do_send(ServerGone {
            server: name.to_owned(),
            reason,
        });
    }

    /// Sends every server's elicitation and sampling requests to `input` (the front end),
    /// and declares to every server what it can answer (`caps`).
    pub fn with_input(
        mut self,
        input: Option<Recipient<crate::messages::InputRequest>>,
        caps: crate::server::server_requests::InputCaps,
    ) -> Self {
        self.input = input;
        self.input_caps = caps;
        self
    }

    fn snapshot(&self) -> StatusSnapshot {
        Arc::new(
            self.entries
                .iter()
                .map(|(name, e)| {
                    (
                        name.clone(),
                        ServerState {
                            transport: match &e.status {
                                ServerStatus::Connected { info, .. } => info.transport,
                                _ => e.spec.transport.kind(),
                            },
                            status: shown_status(&e.status),
                        },
                    )
                })
                .collect(),
        )
    }

    /// Sends the current snapshot to every subscriber; a full mailbox marks it for a retry.
    fn publish(&mut self, ctx: &mut Context<Self>) {
        let snapshot = self.snapshot();
        self.subscribers.retain_mut(|s| {
            match s.rcpt.try_send(StatusChanged {
                snapshot: snapshot.clone(),
            }) {
                Ok(()) => {
                    s.dirty = false;
                    true
                }
                Err(SendError::Full(_)) => {
                    s.dirty = true;
                    true
                }
                Err(SendError::Closed(_)) => false,
            }
        });
        if self.subscribers.iter().any(|s| s.dirty) && !self.retry_armed {
            self.retry_armed = true;
            ctx.run_later(COALESCE_RETRY, |act, ctx| {
                act.retry_armed = false;
                if act.subscribers.iter().any(|s| s.dirty) {
                    act.publish(ctx);
                }
            });
        }
    }

    fn launch(&mut self, name: &str, ctx: &mut Context<Self>) {
        let generation = self.next_generation;
        self.next_generation += 1;
        let me = ctx.address().recipient();
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        if let Some(t) = entry.timer.take() {
            ctx.cancel_future(t);
        }
        // A new generation first, so the last words of an actor stopped for a now-held spec
        // are stale. A held spec keeps its entry (it shows in every snapshot); nothing spawns.
        entry.generation = generation;
        match &entry.spec.hold {
            Some(Hold::Unapproved) => {
                entry.status = ServerStatus::Unapproved {
                    command_line: entry
                        .spec
                        .shown
                        .clone()
                        .unwrap_or_else(|| entry.spec.transport.command_line()),
                    approval: entry.spec.approval.clone().unwrap_or_default(),
                };
                return;
            }
            Some(Hold::Invalid(error)) => {
                entry.status = ServerStatus::Failed {
                    error: error.clone(),
                    stderr_tail: Vec::new(),
                };
                return;
            }
            _ => {}
        }
        let addr = McpServer::new(entry.spec.clone(), generation, me, self.tap.clone())
            .with_era_hint(entry.era)
            .with_input(self.input.clone(), self.input_caps)
            .start();
        entry.addr = Some(addr);
        self.live.insert(generation, name.to_owned());
        let timeout = entry.spec.startup_timeout;
        let server = name.to_owned();
        entry.timer = Some(ctx.run_later(timeout, move |act, ctx| {
            act.startup_timed_out(&server, generation, timeout, ctx)
        }));
    }

    fn startup_timed_out(
        &mut self,
        name: &str,
        generation: u64,
        timeout: Duration,
        ctx: &mut Context<Self>,
    ) {
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        if entry.generation != generation || matches!(entry.status, ServerStatus::Connected { .. })
        {
            return;
        }
        entry.timer = None;
        let error = format!(
            "{STARTUP_TIMED_OUT} {} (startupTimeoutSec)",
            fmt_duration(timeout)
        );
        tracing::warn!(target: "mcp", server = %name, "{error}");
        if let Some(addr) = entry.addr.take() {
            addr.do_send(Shutdown {
                graceful: false,
                grace: None,
            });
        }
        if entry.ever_connected {
            self.exited(name, error, Vec::new(), ctx);
        } else {
            entry.status = ServerStatus::Failed {
                error: error.clone(),
                stderr_tail: Vec::new(),
            };
            self.gone(name, format!("failed: {error}"));
            self.publish(ctx);
        }
    }

    /// A connected server (or a restart attempt) went away: back off and retry, or trip the
    /// breaker.
    fn exited(
        &mut self,
        name: &str,
        reason: String,
        stderr_tail: Vec<String>,
        ctx: &mut Context<Self>,
    ) {
        let policy = self.policy;
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        entry.addr = None;
        let now = Instant::now();
        entry.exits.push_back(now);
        while entry
            .exits
            .front()
            .is_some_and(|t| now.duration_since(*t) > policy.window)
        {
            entry.exits.pop_front();
        }
        let n = entry.exits.len();
        let registry_reason;
        if n >= policy.max_exits {
            let error = format!(
                "exited {n} times within {}; last: {reason}; restart it from the /mcp panel (r) or fix the server",
                fmt_duration(policy.window)
            );
            registry_reason = format!("failed: {error}");
            entry.status = ServerStatus::Failed { error, stderr_tail };
        } else {
            let delay = policy.backoff(n);
            registry_reason = format!("restarting (attempt {n}) after it {reason}");
            entry.status = ServerStatus::Restarting {
                attempt: n,
                next_retry: now + delay,
                last_error: reason,
            };
            let server = name.to_owned();
            let generation = entry.generation;
            entry.timer = Some(ctx.run_later(delay, move |act, ctx| {
                if act.entries.get(&server).is_some_and(|e| {
                    e.generation == generation
                        && matches!(e.status, ServerStatus::Restarting { .. })
                }) {
                    act.launch(&server, ctx);
                }
            }));
        }
        self.gone(name, registry_reason);
        self.publish(ctx);
    }

    /// Stops the entry's actor (gracefully), clears the breaker and starts it again.
    fn restart_entry(&mut self, name: &str, reason: &str, ctx: &mut Context<Self>) {
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        entry.stop(None, ctx);
        entry.exits.clear();
        entry.cache_written = None;
        entry.status = ServerStatus::Starting {
            since: Instant::now(),
        };
        self.gone(name, reason.to_owned());
        self.launch(name, ctx);
    }

    fn check_shutdown(&mut self) {
        if self.shutting_down && self.live.is_empty() {
            for w in self.shutdown_waiters.drain(..) {
                let _ = w.send(());
            }
        }
    }
}

impl Actor for ServerSupervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(crate::MAILBOX);
        if crate::runtime_gone() {
            // Started while being dropped at exit: no server may be launched any more.
            ctx.stop();
            return;
        }
        let names: Vec<String> = self.entries.keys().cloned().collect();
        for name in names {
            self.begin(&name, ctx);
        }
        self.publish(ctx);
    }
}

impl Handler<ServerEvent> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, ev: ServerEvent, ctx: &mut Context<Self>) {
        if let ServerEventKind::Exited { .. } = ev.kind {
            self.live.remove(&ev.generation);
        }
        let Some(entry) = self.entries.get(&ev.server) else {
            return;
        };
        if entry.generation != ev.generation {
            self.check_shutdown();
            return;
        }
        let handled = match ev.kind {
            ServerEventKind::Notice(kind) => {
                self.send_notice(ServerNotice {
                    server: ev.server,
                    kind,
                });
                Some(())
            }
            ServerEventKind::Connected { info, tools } => {
                self.on_connected(&ev.server, info, tools, ctx)
            }
            ServerEventKind::ToolsChanged { tools, ttl_ms } => {
                self.on_tools_changed(&ev.server, tools, ttl_ms, ctx)
            }
            ServerEventKind::Exited {
                connected: _,
                reason,
                stderr_tail,
                retry_in,
                needs_login,
            } => {
                let last = LastWords {
                    reason,
                    stderr_tail,
                    retry_in,
                    needs_login,
                };
                self.on_exited(&ev.server, last, ctx);
                Some(())
            }
        };
        // An event of an actor this entry no longer has is dropped whole.
        if handled.is_some() {
            self.check_shutdown();
        }
    }
}

/// What a server actor said as it exited (`ServerEventKind::Exited`).
struct LastWords {
    reason: String,
    stderr_tail: Vec<String>,
    /// Start it again at once in this era (it died on the `server/discover` probe).
    retry_in: Option<Era>,
    needs_login: bool,
}

impl ServerSupervisor {
    /// The current actor connected: its tools go to the registry, calls waiting for it are
    /// routed to it, its listing is cached; `None` when the entry has no actor any more.
    fn on_connected(
        &mut self,
        name: &str,
        mut info: ConnectionInfo,
        tools: Arc<[Arc<Tool>]>,
        ctx: &mut Context<Self>,
    ) -> Option<()> {
        let entry = self.entries.get_mut(name)?;
        if let Some(t) = entry.timer.take() {
            ctx.cancel_future(t);
        }
        let addr = entry.addr.clone()?;
        entry.ever_connected = true;
        entry.era = Some(info.era);
        info.cache_written = entry.cache_written.take();
        info.notes = filter_notes(&entry.spec, &tools);
        for n in &info.notes {
            tracing::warn!(target: "mcp", server = %name, "{n}");
        }
        let count = tools
            .iter()
            .filter(|t| entry.spec.tool_enabled(&t.name))
            .count();
        let instructions = info.instructions.as_deref().map(Arc::from);
        let ttl = info.tools_ttl_ms;
        let spec = entry.spec.clone();
        self.registry.do_send(ServerTools {
            spec: spec.clone(),
            addr: Some(addr.clone()),
            starter: None,
            tools: tools.clone(),
            instructions,
        });
        // After the live table is on its way: a waiting call is routed on it.
        for w in entry.waiters.drain(..) {
            let _ = w.send(Ok(addr.clone()));
        }
        self.remember(&spec, &info, tools, ttl);
        if let Some(e) = self.entries.get_mut(name) {
            e.status = ServerStatus::Connected { tools: count, info };
        }
        self.publish(ctx);
        Some(())
    }

    /// A connected server listed its tools again: the registry and the cache get the new
    /// list; `None` when it is not connected (or has no actor any more).
    fn on_tools_changed(
        &mut self,
        name: &str,
        tools: Arc<[Arc<Tool>]>,
        ttl_ms: Option<u64>,
        ctx: &mut Context<Self>,
    ) -> Option<()> {
        let entry = self.entries.get_mut(name)?;
        let (ServerStatus::Connected { tools: count, info }, Some(addr)) =
            (&mut entry.status, entry.addr.clone())
        else {
            return None;
        };
        *count = tools
            .iter()
            .filter(|t| entry.spec.tool_enabled(&t.name))
            .count();
        self.registry.do_send(ServerTools {
            spec: entry.spec.clone(),
            addr: Some(addr),
            starter: None,
            tools: tools.clone(),
            instructions: info.instructions.as_deref().map(Arc::from),
        });
        let (spec, info) = (entry.spec.clone(), info.clone());
        self.remember(&spec, &info, tools, ttl_ms);
        self.publish(ctx);
        Some(())
    }

    /// The current actor exited: restarted (it had connected), started again for the
    /// handshake (it died on the probe), or failed (or waiting for a login).
    fn on_exited(&mut self, name: &str, last: LastWords, ctx: &mut Context<Self>) {
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        // The startup timeout stopped this actor and counted its exit already (a server that
        // connected once): this is its last word, not a second exit, and the restart planned
        // then stands.
        let counted =
            entry.addr.is_none() && matches!(entry.status, ServerStatus::Restarting { .. });
        if !counted {
            if let Some(t) = entry.timer.take() {
                ctx.cancel_future(t);
            }
        }
        let LastWords {
            reason,
            stderr_tail,
            retry_in,
            needs_login,
        } = last;
        match &mut entry.status {
            _ if counted => {}
            ServerStatus::Stopped => {}
            ServerStatus::Failed {
                stderr_tail: tail, ..
            } => {
                if tail.is_empty() {
                    *tail = stderr_tail;
                }
                self.publish(ctx);
            }
            _ if self.shutting_down => {
                entry.status = ServerStatus::Stopped;
                entry.addr = None;
                self.publish(ctx);
            }
            // A server that wants a login is not restarted: nothing would change.
            _ if entry.ever_connected && !needs_login => {
                tracing::info!(target: "mcp", server = %name, "{reason}");
                self.exited(name, reason, stderr_tail, ctx);
            }
            _ if retry_in.is_some() && entry.era.is_none() => {
                // Once per spec: the era is remembered, so the next start does not probe.
                tracing::info!(target: "mcp", server = %name,
                    "exited on the server/discover probe ({reason}); starting it again for the handshake");
                entry.era = retry_in;
                entry.addr = None;
                self.launch(name, ctx);
                self.publish(ctx);
            }
            _ => {
                entry.addr = None;
                self.never_connected(name, reason, stderr_tail, needs_login, ctx);
            }
        }
    }

    /// A start that did not connect: `Failed` (or `NeedsLogin`), its tools out of the table.
    fn never_connected(
        &mut self,
        name: &str,
        reason: String,
        stderr_tail: Vec<String>,
        needs_login: bool,
        ctx: &mut Context<Self>,
    ) {
        let (gone, status) = if needs_login {
            tracing::info!(target: "mcp", server = %name, "{reason}");
            let gone = reason.clone();
            (
                gone,
                ServerStatus::NeedsLogin {
                    error: reason,
                    login_page: None,
                },
            )
        } else {
            tracing::info!(target: "mcp", server = %name, "connect failed: {reason}");
            let gone = format!("failed: {reason}");
            (
                gone,
                ServerStatus::Failed {
                    error: reason,
                    stderr_tail,
                },
            )
        };
        if let Some(entry) = self.entries.get_mut(name) {
            entry.status = status;
        }
        self.gone(name, gone);
        self.publish(ctx);
    }
}

impl Handler<Subscribe> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) {
        self.subscribers.push(Subscriber {
            rcpt: msg.0,
            dirty: true,
        });
        self.publish(ctx);
    }
}

impl Handler<SubscribeNotices> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, msg: SubscribeNotices, _ctx: &mut Context<Self>) {
        self.notice_subscribers.push(msg.0);
    }
}

impl Handler<GetStatus> for ServerSupervisor {
    type Result = MessageResult<GetStatus>;

    fn handle(&mut self, _msg: GetStatus, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.snapshot())
    }
}

impl Handler<Restart> for ServerSupervisor {
    type Result = Result<(), String>;

    fn handle(&mut self, msg: Restart, ctx: &mut Context<Self>) -> Self::Result {
        if !self.entries.contains_key(&msg.0) {
            return Err(format!("no server named \"{}\"", msg.0));
        }
        self.restart_entry(&msg.0, "restarting", ctx);
        self.publish(ctx);
        Ok(())
    }
}

impl Handler<Stop> for ServerSupervisor {
    type Result = Result<(), String>;

    fn handle(&mut self, msg: Stop, ctx: &mut Context<Self>) -> Self::Result {
        let entry = self
            .entries
            .get_mut(&msg.0)
            .ok_or_else(|| format!("no server named \"{}\"", msg.0))?;
        entry.stop(None, ctx);
        entry.status = ServerStatus::Stopped;
        self.gone(&msg.0, "stopped".to_owned());
        self.publish(ctx);
        Ok(())
    }
}

impl Handler<ShutdownAll> for ServerSupervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: ShutdownAll, ctx: &mut Context<Self>) -> Self::Result {
        self.shutting_down = true;
        for entry in self.entries.values_mut() {
            entry.stop(msg.grace, ctx);
            if !matches!(entry.status, ServerStatus::Failed { .. }) {
                entry.status = ServerStatus::Stopped;
            }
            for w in entry.waiters.drain(..) {
                let _ = w.send(Err("shutting down".to_owned()));
            }
        }
        let (tx, rx) = oneshot::channel();
        self.shutdown_waiters.push(tx);
        self.check_shutdown();
        Box::pin(async move {
            if tokio::time::timeout(SHUTDOWN_BOUND, rx).await.is_err() {
                tracing::warn!(target: "mcp", "servers still running after {}; killing them", fmt_duration(SHUTDOWN_BOUND));
                crate::server::kill_all_groups();
            }
        })
    }
}

/// A line for each `enabledTools`/`disabledTools` entry of `spec` that names no tool the server
/// lists: a typo there silently hides a tool, or silently filters nothing.
fn filter_notes(
    spec: &ServerSpec,
    tools: &[std::sync::Arc<crate::protocol::types::Tool>],
) -> Vec<String> {
    let has = |n: &str| tools.iter().any(|t| t.name == n);
    let mut notes = Vec::new();
    for (list, key) in [
        (
            spec.enabled_tools.as_deref().unwrap_or_default(),
            "enabledTools",
        ),
        (spec.disabled_tools.as_slice(), "disabledTools"),
    ] {
        let unknown: Vec<&str> = list
            .iter()
            .map(String::as_str)
            .filter(|n| !has(n))
            .collect();
        if !unknown.is_empty() {
            notes.push(format!(
                "{key} names no tool of this server: {}; check the spelling in .mcp.json",
                unknown.join(", ")
            ));
        }
    }
    notes
}

/// A status as subscribers see it: its error and stderr lines in their written form
/// (`telemetry::written_form`), so no front end prints a `${VAR}` value or a known secret that
/// a transport, a server's stderr or a config error quoted.
fn shown_status(status: &ServerStatus) -> ServerStatus {
    let shown = |t: &str| crate::telemetry::written_form(t).into_owned();
    match status {
        ServerStatus::Failed { error, stderr_tail } => ServerStatus::Failed {
            error: shown(error),
            stderr_tail: stderr_tail.iter().map(|l| shown(l)).collect(),
        },
        ServerStatus::Restarting {
            attempt,
            next_retry,
            last_error,
        } => ServerStatus::Restarting {
            attempt: *attempt,
            next_retry: *next_retry,
            last_error: shown(last_error),
        },
        other => other.clone(),
    }
}
