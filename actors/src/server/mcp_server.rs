//! The `McpServer` actor, one per server and generation, whatever the transport: its state,
//! and its lifecycle (start, the handshake's outcome, shutdown, and the exit report from
//! `stopped()`). Its other concerns live in the submodules, each an `impl McpServer` of its own:
//! [`link`] the actor's end of its transport (`server/transport/`: what it opens and every event
//! it reports), [`handshake`] connecting and paginated lists (futures over the actor's address),
//! [`ask`] the server's questions for a person, [`inbound`] what the server sends us (replies,
//! its requests, notifications), [`outbound`] what we send it (the pending map, the write
//! queue, cancellation), [`tool_call`] tool calls with their timeout
//! and cancellation, [`tool_list`] what it keeps of a tool listing and how the list stays fresh,
//! [`features`] resources, prompts, completion, roots and the log level.

pub mod ask;
mod features;
pub(super) mod handshake;
mod inbound;
mod link;
mod outbound;
mod skills;
mod task;
mod tool_call;
mod tool_list;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::mpsc;

use super::process::{signal_group, unregister_group, Signal};
use super::transport::Process;
use crate::messages::{ConnectionInfo, InputRequest, ServerEvent, ServerEventKind, Shutdown};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::version::Era;
use crate::spec::{ServerSpec, TransportSpec};
use crate::trace::{Direction, WireRecord, WireTap};
use ask::Questions;
use features::Subscriptions;
use handshake::{connect, Connected, EraChoice, Session};
use link::StderrLog;
use outbound::Outbound;
pub(super) use outbound::{ClientSide, Notify, Payload, ReplyError, Rpc, SetEra};
use tool_list::ToolListState;
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

/// One MCP server (one generation of it), over stdio or HTTP: a few owned parts, each with its
/// own invariants ([`Outbound`] the pending map and the write queue, [`StderrLog`] the server's
/// log, [`Session`] what connecting found, [`ToolListState`] the tool list's freshness,
/// [`Subscriptions`] resource subscriptions and the listen, [`Questions`] the server's open
/// questions, [`Lifecycle`] how the actor ends, [`Wire`] the trace tap).
pub struct McpServer {
    spec: Arc<ServerSpec>,
    name: Arc<str>,
    generation: u64,
    events: Recipient<ServerEvent>,
    /// Notices (log lines, changes) the supervisor's mailbox had no room for.
    dropped_notices: u64,
    wire: Wire,
    out: Outbound,
    /// The server's process, when the transport runs one (stdio).
    process: Option<Process>,
    stderr: StderrLog,
    life: Lifecycle,
    session: Session,
    tools: ToolListState,
    subs: Subscriptions,
    questions: Questions,
    /// Our capabilities for this server and the log level it is asked for.
    client: Arc<ClientSide>,
    /// The roots it is offered (changed by `SetRoots`).
    roots: crate::spec::Roots,
    cwd: PathBuf,
    /// The last skills listing and until when its `ttlMs` lets it be used.
    skills: skills::Cached,
    /// Its own address, weak, made once: each call's cancel guard holds a copy (a count, no
    /// allocation; an `Addr` costs two) and upgrades it only to tell the server.
    me: Option<actix::WeakAddr<McpServer>>,
}

/// The wire trace's tap and what it could not take. Invariant: a record is never waited for:
/// a full sink drops it, counted (warned at each power of two).
struct Wire {
    tap: Option<WireTap>,
    /// Wire records the tap's sink was too slow to take.
    dropped_records: std::cell::Cell<u64>,
}

impl Wire {
    /// Hands `record` to the tap, if there is one; a full sink drops it (counted).
    fn send(&self, server: &str, record: impl FnOnce() -> WireRecord) {
        let Some(tap) = &self.tap else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = tap.try_send(record()) {
            let n = self.dropped_records.get() + 1;
            self.dropped_records.set(n);
            if n.is_power_of_two() {
                tracing::warn!(target: "mcp", server = %server, dropped = n,
                    "the trace sink is behind; wire records dropped");
            }
        }
    }
}

/// How the actor's life ends. Invariants: once `closing` no new work starts (calls, re-lists,
/// listens are refused); `exit_reason`, once set, is what `Exited` and every failed request
/// report (later causes only fill it when it is empty).
#[derive(Default)]
struct Lifecycle {
    /// The actor is shutting down (by us, or after a fatal failure).
    closing: bool,
    exit_reason: Option<String>,
    /// A request failed for want of an OAuth login (reported with the exit).
    needs_login: bool,
    /// The child went away with our `server/discover` probe unanswered.
    died_probing: bool,
}

impl Lifecycle {
    /// What a request that finds the server gone is told.
    fn gone_reason(&self) -> String {
        self.exit_reason
            .clone()
            .unwrap_or_else(|| "is shutting down".to_owned())
    }

    /// Records `reason` unless an earlier one is kept.
    fn note_exit(&mut self, reason: impl FnOnce() -> String) {
        self.exit_reason.get_or_insert_with(reason);
    }
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
        let client = Arc::new(ClientSide::new(
            super::server_requests::declared(&spec, super::server_requests::InputCaps::default()),
            spec.log_level.clone(),
        ));
        Self {
            client,
            roots: spec.roots.clone(),
            subs: Subscriptions::default(),
            skills: Default::default(),
            me: None,
            dropped_notices: 0,
            name: Arc::from(spec.name.as_str()),
            session: Session::new(&spec),
            spec,
            generation,
            events,
            wire: Wire {
                tap,
                dropped_records: std::cell::Cell::new(0),
            },
            out: Outbound::default(),
            stderr: StderrLog::default(),
            process: None,
            life: Lifecycle::default(),
            tools: ToolListState::default(),
            cwd,
            questions: Questions::default(),
        }
    }

    /// Sends the server's elicitation and sampling requests to `input` (see [`super::ask`]),
    /// and declares to the server what that front end can answer (`caps`).
    pub fn with_input(
        mut self,
        input: Option<Recipient<InputRequest>>,
        caps: super::server_requests::InputCaps,
    ) -> Self {
        self.questions.input = input;
        self.questions.answerer = None;
        self.client = Arc::new(ClientSide::new(
            super::server_requests::declared(&self.spec, caps),
            self.spec.log_level.clone(),
        ));
        self
    }

    /// Starts in the era an earlier generation of this server found, without probing.
    pub fn with_era_hint(mut self, era: Option<Era>) -> Self {
        self.session.era_hint = era;
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
        self.wire.send(&self.name, || WireRecord {
            ts: SystemTime::now(),
            server: self.name.clone(),
            dir,
            id,
            method: method.map(str::to_owned),
            latency_us,
            message: Bytes::copy_from_slice(line.strip_suffix(b"\n").unwrap_or(line)),
            http_status: None,
            session: None,
            http: None,
            era: self.session.era.map(|e| e.label()),
        });
    }

    fn on_handshake(&mut self, res: Result<Connected, String>, ctx: &mut Context<Self>) {
        match res {
            Ok(Connected { init, era, tools }) => {
                self.session.connect(era, init.capabilities.clone());
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
                    connect_time: self.session.started.elapsed(),
                    transport: self.session.kind,
                    tools_ttl_ms: self.tools.ttl,
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
                self.life.note_exit(|| e);
                self.kill_now(ctx);
            }
        }
    }

    /// Whether the actor takes new work: it is not closing and its write queue is open.
    fn accepting(&self) -> bool {
        !self.life.closing && self.out.is_open()
    }

    fn kill_now(&mut self, ctx: &mut Context<Self>) {
        self.life.closing = true;
        self.out.close();
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
            self.life.exit_reason = Some("was stopped before it started".to_owned());
            ctx.stop();
            return;
        }
        if let Err(e) = self.open_transport(ctx) {
            tracing::info!(target: "mcp", server = %self.name, "{e}");
            self.life.exit_reason = Some(e);
            ctx.stop();
            return;
        }
        let choice = EraChoice {
            pinned: self.spec.protocol,
            hint: self.session.era_hint,
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
        let reason = self.life.gone_reason();
        self.fail_all(&reason);
        // Ended by us (a shutdown), or by the server (an exit, a broken transport).
        let error = (!self.life.closing).then_some("server_exited");
        self.session.clock.end(&self.session.otel, error);
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
                connected: self.session.connected,
                reason,
                stderr_tail: self.stderr.take_tail(),
                // Some servers exit on a method they do not know: a stdio server that died on
                // the probe is started again for the handshake.
                retry_in: (self.life.died_probing
                    && !self.session.connected
                    && self.process.is_some())
                .then_some(Era::Handshake(crate::protocol::version::LATEST)),
                needs_login: self.life.needs_login,
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
            self.life.note_exit(|| "was stopped".to_owned());
            if msg.graceful {
                self.cancel_all("is shutting down");
            } else {
                self.fail_all("is shutting down");
            }
            // Dropping the sender ends the transport (HTTP: DELETE of the session), which
            // reports its end.
            self.out.close();
            self.life.closing = true;
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
            self.life.note_exit(|| "was stopped".to_owned());
            self.fail_all("was stopped");
            self.kill_now(ctx);
            return;
        }
        if self.life.closing {
            return;
        }
        self.life.closing = true;
        self.life.note_exit(|| "was stopped".to_owned());
        self.cancel_all("is shutting down");
        // Dropping the sender lets the writer flush and close stdin.
        self.out.close();
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
