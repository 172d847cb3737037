//! The `McpServer` actor, one per server and generation, whatever the transport: its state,
//! and its lifecycle (start, the handshake's outcome, shutdown, and the exit report from
//! `stopped()`). Its other concerns live in the submodules, each an `impl McpServer` of its own:
//! [`link`] the actor's end of its transport (`server/transport/`: what it opens and every event
//! it reports), [`handshake`] connecting and paginated lists (futures over the actor's address),
//! [`ask`] the server's questions for a person, [`incoming`] what the server sends,
//! [`requests`] the pending map and the write queue, [`tool_call`] tool calls with their timeout
//! and cancellation, [`tool_list`] what it keeps of a tool listing and how the list stays fresh,
//! [`features`] resources, prompts, completion, roots and the log level.

pub mod ask;
mod features;
pub(super) mod handshake;
mod incoming;
mod link;
mod requests;
mod skills;
mod task;
mod tool_call;
mod tool_list;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::process::{signal_group, unregister_group, Signal};
use super::transport::{Process, Writer};
use crate::messages::{
    ConnectionInfo, InputRequest, ProgressSink, ServerEvent, ServerEventKind, Shutdown,
};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::version::Era;
use crate::spec::{ServerSpec, TransportSpec};
use crate::trace::{Direction, WireRecord, WireTap};
use handshake::{connect, Connected, EraChoice};
use link::STDERR_BURST;
use requests::Pending;
pub(super) use requests::{ClientSide, Notify, Payload, ReplyError, Rpc, SetEra};
pub(super) use tool_list::ToolsListed;

/// How long the `server/discover` probe may go unanswered before `initialize` is sent beside
/// it (a legacy server may ignore unknown methods before `initialize`); the probe's answer is
/// still taken if it comes first, or if `initialize` is refused. That `initialize` carries the
/// probed revision's `_meta` too, so a slow stateless server sees no request without it.
const DISCOVER_PROBE: Duration = Duration::from_secs(2);
/// [`DISCOVER_PROBE`] for Streamable HTTP, where every POST is answered (an older server says
/// so at once, with an error or a 4xx): a slow answer is only slow, as on a loaded machine,
/// and is waited for this long (at most half the startup timeout).
const HTTP_DISCOVER_PROBE: Duration = Duration::from_secs(10);

/// One MCP server (one generation of it), over stdio or HTTP.
pub struct McpServer {
    spec: Arc<ServerSpec>,
    name: Arc<str>,
    generation: u64,
    events: Recipient<ServerEvent>,
    tap: Option<WireTap>,
    /// The transport's write queue (`None` once closed: that ends the transport).
    writer: Option<Writer>,
    /// Answers and notifications dropped because the write queue was full.
    dropped: u64,
    /// Wire records the tap's sink was too slow to take.
    dropped_records: std::cell::Cell<u64>,
    stderr_budget: f64,
    stderr_refilled: Instant,
    stderr_suppressed: u64,
    /// The server's process, when the transport runs one (stdio).
    process: Option<Process>,
    pending: HashMap<i64, Pending>,
    progress: HashMap<i64, ProgressSink>,
    next_id: i64,
    stderr_tail: VecDeque<String>,
    stderr_done: bool,
    connected: bool,
    closing: bool,
    listing: bool,
    relist_pending: bool,
    era: Option<Era>,
    /// The era an earlier generation found (the supervisor's per-process cache).
    era_hint: Option<Era>,
    /// The child went away with our `server/discover` probe unanswered.
    died_probing: bool,
    /// A request failed for want of an OAuth login (reported with the exit).
    needs_login: bool,
    /// The wait before the next listen, doubled after each one that ends.
    listen_wait: Duration,
    /// The re-list a tool list's `ttlMs` asked for.
    ttl_timer: Option<SpawnHandle>,
    /// The last tool list's `ttlMs` (reported with it, for the tool-list cache).
    tools_ttl: Option<u64>,
    exit_reason: Option<String>,
    cwd: PathBuf,
    started: Instant,
    /// `stdio`, `http` or `sse` (after a fallback).
    kind: &'static str,
    /// The transport sends headers with each message (HTTP): tools' `x-mcp-header` params
    /// are mirrored.
    headers: bool,
    /// With `headers`: each listed tool's `x-mcp-header` params, by tool name.
    tool_headers: HashMap<String, Vec<crate::protocol::headers::HeaderParam>>,
    /// The tools of the latest list that run only as tasks (2025-11-25).
    task_required: std::collections::HashSet<String>,
    /// Our capabilities for this server and the log level it is asked for.
    client: Arc<ClientSide>,
    /// The roots it is offered (changed by `SetRoots`).
    roots: crate::spec::Roots,
    /// What the server said it supports.
    server_caps: crate::protocol::types::ServerCapabilities,
    /// Resources subscribed to (at most [`features::MAX_SUBSCRIPTIONS`]).
    subscriptions: std::collections::BTreeSet<String>,
    /// Stateless era: the id of the open `subscriptions/listen`.
    listen_id: Option<i64>,
    /// Stateless era: subscription changes waiting for the server to acknowledge the new
    /// listen filter (`notifications/subscriptions/acknowledged`).
    /// Each waits for a filter that has (`true`) or lacks (`false`) its URI.
    ack_waiters: Vec<(String, bool, tokio::sync::oneshot::Sender<()>)>,
    /// The last skills listing and until when its `ttlMs` lets it be used.
    skills: skills::Cached,
    /// Notices (log lines, changes) the supervisor's mailbox had no room for.
    dropped_notices: u64,
    /// Where the server's elicitation and sampling requests go (the front end's handler);
    /// `None` answers them by the headless policy.
    input: Option<Recipient<InputRequest>>,
    /// Who answers questions in the middle of a call (built once, shared by every call; dropped
    /// when the roots or the input handler change).
    answerer: Option<std::sync::Arc<tool_call::Answerer>>,
    /// The server's questions waiting for an answer, by its request id (cancelled when it
    /// cancels the request; dropped with the actor).
    asks: HashMap<RequestId, SpawnHandle>,
    /// How long questions have been open: calls' timeouts do not run meanwhile.
    ask_clock: std::rc::Rc<ask::AskClock>,
    /// What this connection's spans and metrics carry (telemetry).
    otel: crate::telemetry::Conn,
    /// The connection's lifetime, for `mcp.client.session.duration`.
    session_clock: crate::telemetry::SessionClock,
}

impl McpServer {
    /// A server actor for `spec`; it reports to `events` and traces to `tap`.
    pub fn new(
        spec: Arc<ServerSpec>,
        generation: u64,
        events: Recipient<ServerEvent>,
        tap: Option<WireTap>,
    ) -> Self {
        let cwd = match &spec.transport {
            TransportSpec::Stdio { cwd: Some(c), .. } => c.clone(),
            _ => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        };
        let kind = spec.transport.kind();
        let otel = otel_conn(&spec);
        let client = Arc::new(ClientSide::new(
            super::server_requests::client_capabilities(
                &spec,
                super::server_requests::InputCaps::default(),
            ),
            spec.log_level.clone(),
        ));
        Self {
            client,
            roots: spec.roots.clone(),
            server_caps: Default::default(),
            subscriptions: Default::default(),
            listen_id: None,
            ack_waiters: Vec::new(),
            skills: Default::default(),
            dropped_notices: 0,
            name: Arc::from(spec.name.as_str()),
            spec,
            generation,
            events,
            tap,
            writer: None,
            dropped: 0,
            dropped_records: std::cell::Cell::new(0),
            stderr_budget: STDERR_BURST,
            stderr_refilled: Instant::now(),
            stderr_suppressed: 0,
            process: None,
            pending: HashMap::new(),
            progress: HashMap::new(),
            next_id: 0,
            stderr_tail: VecDeque::new(),
            stderr_done: true,
            connected: false,
            closing: false,
            listing: false,
            relist_pending: false,
            era: None,
            era_hint: None,
            died_probing: false,
            needs_login: false,
            listen_wait: Duration::from_secs(1),
            ttl_timer: None,
            tools_ttl: None,
            exit_reason: None,
            cwd,
            started: Instant::now(),
            kind,
            headers: false,
            tool_headers: HashMap::new(),
            task_required: Default::default(),
            input: None,
            asks: HashMap::new(),
            ask_clock: Default::default(),
            answerer: None,
            otel,
            session_clock: Default::default(),
        }
    }

    /// Sends the server's elicitation and sampling requests to `input` (see [`super::ask`]),
    /// and declares to the server what that front end can answer (`caps`).
    pub fn with_input(
        mut self,
        input: Option<Recipient<InputRequest>>,
        caps: super::server_requests::InputCaps,
    ) -> Self {
        self.input = input;
        self.answerer = None;
        self.client = Arc::new(ClientSide::new(
            super::server_requests::client_capabilities(&self.spec, caps),
            self.spec.log_level.clone(),
        ));
        self
    }

    /// Starts in the era an earlier generation of this server found, without probing.
    pub fn with_era_hint(mut self, era: Option<Era>) -> Self {
        self.era_hint = era;
        self
    }

    fn trace(
        &self,
        dir: Direction,
        line: &[u8],
        id: Option<RequestId>,
        method: Option<&str>,
        latency: Option<Duration>,
    ) {
        let latency_us = latency.map(|d| d.as_micros() as u64);
        tracing::debug!(
            target: "mcp::wire",
            server = %self.name,
            dir = dir.as_str(),
            id = ?id,
            method = method.unwrap_or(""),
            bytes = line.len(),
            latency_us = ?latency_us,
        );
        if let Some(tap) = &self.tap {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            self.tapped(tap.try_send(WireRecord {
                ts: SystemTime::now(),
                server: self.name.clone(),
                dir,
                id,
                method: method.map(str::to_owned),
                latency_us,
                message: Bytes::copy_from_slice(body),
                http_status: None,
                session: None,
                http: None,
                era: self.era.map(|e| e.label()),
            }));
        }
    }

    fn tapped(&self, sent: Result<(), mpsc::error::TrySendError<WireRecord>>) {
        if let Err(mpsc::error::TrySendError::Full(_)) = sent {
            let n = self.dropped_records.get() + 1;
            self.dropped_records.set(n);
            if n.is_power_of_two() {
                tracing::warn!(target: "mcp", server = %self.name, dropped = n,
                    "the trace sink is behind; wire records dropped");
            }
        }
    }

    fn gone_reason(&self) -> String {
        self.exit_reason
            .clone()
            .unwrap_or_else(|| "is shutting down".to_owned())
    }

    fn on_handshake(&mut self, res: Result<Connected, String>, ctx: &mut Context<Self>) {
        match res {
            Ok(Connected { init, era, tools }) => {
                self.connected = true;
                self.era = Some(era);
                self.otel.version = Some(era.version_str());
                self.session_clock = crate::telemetry::SessionClock::start();
                self.server_caps = init.capabilities.clone();
                if era.is_stateless() {
                    self.listen(ctx);
                } else {
                    self.set_log_level(ctx);
                }
                let info = ConnectionInfo {
                    protocol_version: era.version_str().to_owned(),
                    era,
                    server_info: init.server_info,
                    instructions: init.instructions,
                    capabilities: Arc::new(init.capabilities),
                    connect_time: self.started.elapsed(),
                    transport: self.kind,
                    tools_ttl_ms: self.tools_ttl,
                    cache_written: None,
                    pid: self
                        .process
                        .as_ref()
                        .and_then(|p| u32::try_from(p.pgid).ok())
                        .filter(|p| *p > 0),
                    notes: Vec::new(),
                };
                tracing::info!(target: "mcp", server = %self.name, tools = tools.len(), version = %info.protocol_version, "connected");
                self.events.do_send(ServerEvent {
                    server: self.spec.name.clone(),
                    generation: self.generation,
                    kind: ServerEventKind::Connected { info, tools },
                });
            }
            Err(e) => {
                if self.exit_reason.is_none() {
                    self.exit_reason = Some(e);
                }
                self.kill_now(ctx);
            }
        }
    }

    fn kill_now(&mut self, ctx: &mut Context<Self>) {
        self.closing = true;
        self.writer = None;
        if let Some(pgid) = self.live_group() {
            signal_group(pgid, Signal::Kill);
        } else {
            ctx.stop();
        }
    }
}

impl Actor for McpServer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(crate::MAILBOX);
        if crate::runtime_gone() {
            // Started while being dropped at exit: nothing may be spawned any more.
            self.exit_reason = Some("was stopped before it started".to_owned());
            ctx.stop();
            return;
        }
        if let Err(e) = self.open_transport(ctx) {
            tracing::info!(target: "mcp", server = %self.name, "{e}");
            self.exit_reason = Some(e);
            ctx.stop();
            return;
        }
        let choice = EraChoice {
            pinned: self.spec.protocol,
            hint: self.era_hint,
            probe: match self.spec.transport {
                TransportSpec::Http { sse: false, .. } => HTTP_DISCOVER_PROBE,
                _ => DISCOVER_PROBE,
            }
            .min(self.spec.startup_timeout / 2),
        };
        let fut = connect(
            ctx.address(),
            self.spec.max_tools,
            choice,
            self.client.clone(),
        );
        ctx.spawn(
            fut.into_actor(self)
                .map(|res, act, ctx| act.on_handshake(res, ctx)),
        );
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        let reason = self.gone_reason();
        self.fail_all(&reason);
        // Ended by us (a shutdown), or by the server (an exit, a broken transport).
        let error = (!self.closing).then_some("server_exited");
        self.session_clock.end(&self.otel, error);
        // Only a child that was spawned and has not exited: a pgid of 0 (HTTP, or a failed
        // spawn) would signal our own process group.
        if let Some(pgid) = self.live_group() {
            signal_group(pgid, Signal::Kill);
            unregister_group(pgid);
        }
        self.events.do_send(ServerEvent {
            server: self.spec.name.clone(),
            generation: self.generation,
            kind: ServerEventKind::Exited {
                connected: self.connected,
                reason,
                stderr_tail: self.stderr_tail.drain(..).collect(),
                // Some servers exit on a method they do not know: a stdio server that died on
                // the probe is started again for the handshake.
                retry_in: (self.died_probing && !self.connected && self.process.is_some())
                    .then_some(Era::Handshake(crate::protocol::version::LATEST)),
                needs_login: self.needs_login,
            },
        });
    }
}

impl Handler<Shutdown> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Context<Self>) {
        // Without a process of ours, closing the write queue ends the transport, which then
        // reports `Closed`.
        if self.process.is_none() {
            self.exit_reason
                .get_or_insert_with(|| "was stopped".to_owned());
            if msg.graceful {
                self.cancel_all("is shutting down");
            } else {
                self.fail_all("is shutting down");
            }
            // Dropping the sender ends the transport (HTTP: DELETE of the session), which
            // reports its end.
            self.writer = None;
            self.closing = true;
            if msg.graceful {
                let grace = msg.grace.unwrap_or(self.spec.shutdown_grace);
                ctx.run_later(grace * 2, |_, ctx| ctx.stop());
            } else {
                ctx.stop();
            }
            return;
        }
        if self.exited() {
            ctx.stop();
            return;
        }
        if !msg.graceful {
            self.exit_reason
                .get_or_insert_with(|| "was stopped".to_owned());
            self.fail_all("was stopped");
            self.kill_now(ctx);
            return;
        }
        if self.closing {
            return;
        }
        self.closing = true;
        self.exit_reason
            .get_or_insert_with(|| "was stopped".to_owned());
        self.cancel_all("is shutting down");
        // Dropping the sender lets the writer flush and close stdin.
        self.writer = None;
        let grace = msg.grace.unwrap_or(self.spec.shutdown_grace);
        let Some(pgid) = self.live_group() else {
            return;
        };
        ctx.run_later(grace, move |act, ctx| {
            if act.exited() {
                return;
            }
            tracing::debug!(target: "mcp", server = %act.name, "still running after stdin closed; SIGTERM");
            signal_group(pgid, Signal::Term);
            ctx.run_later(grace, move |act, _| {
                if !act.exited() {
                    tracing::debug!(target: "mcp", server = %act.name, "still running after SIGTERM; SIGKILL");
                    signal_group(pgid, Signal::Kill);
                }
            });
        });
    }
}

/// The attributes every span and metric of `spec`'s connection carries.
fn otel_conn(spec: &ServerSpec) -> crate::telemetry::Conn {
    let (transport, address) = match &spec.transport {
        TransportSpec::Stdio { .. } => ("pipe", None),
        TransportSpec::Http { url, .. } => (
            "tcp",
            url::Url::parse(url)
                .ok()
                .and_then(|u| Some((u.host_str()?.to_owned(), u.port_or_known_default()?))),
        ),
    };
    crate::telemetry::Conn {
        server: spec.name.clone(),
        transport,
        address,
        version: None,
        session: None,
    }
}
