//! Connecting (the era: pinned, cached, or probed with `server/discover`; then either the
//! stateless era's discovery or the handshake: initialize, initialized), the first tools/list,
//! and paginated lists, as
//! futures over a server actor's address: they run spawned on the actor, never awaited inside a
//! handler, and the caller bounds each one (the startup timeout, the re-list's bound).
//!
//! The era: a `protocolVersion` in the server's entry pins it; else the era the supervisor
//! remembered from an earlier generation, or the tool-list cache from an earlier session, is
//! tried (a remembered handshake era whose `initialize` is refused is probed after all); else
//! `server/discover` probes it. A probe
//! unanswered for `DISCOVER_PROBE` gets `initialize` sent beside it and the first success
//! decides (never a timer alone); a refused `initialize` waits for the probe's answer; a
//! `-32022` naming another stateless revision we speak is probed once more with it, one naming
//! only handshake-era revisions leads to the handshake; the startup timeout bounds it all. The era found is the actor's (`SetEra`): every request it builds asks it.

use std::sync::Arc;

use actix::prelude::*;

use std::time::{Duration, Instant};

use super::{ClientSide, McpServer, Notify, Payload, ReplyError, Rpc, SetEra, ToolsListed};
use crate::protocol::jsonrpc::UNSUPPORTED_PROTOCOL_VERSION;
use crate::protocol::methods::{Discover, Initialize, Initialized, ListTools, Request};
use crate::protocol::types::{InitializeParams, InitializeResult, Page, PaginatedParams, Tool};
use crate::protocol::version::{negotiate, Era, ProtocolVersion, LATEST, MODERN};
use crate::server::server_requests;
use crate::spec::{ServerSpec, TransportSpec};

/// What connecting found and this connection's telemetry. Invariants: `era` is set (by
/// `SetEra`) before any request that depends on it, and once `connected` the era and the
/// server's capabilities no longer change for this generation.
pub(in crate::server) struct Session {
    pub(super) connected: bool,
    pub(super) era: Option<Era>,
    /// The era an earlier generation found (the supervisor's per-process cache).
    pub(super) era_hint: Option<Era>,
    /// What the server said it supports.
    pub(super) server_caps: crate::protocol::types::ServerCapabilities,
    pub(super) started: Instant,
    /// `stdio`, `http` or `sse` (after a fallback).
    pub(super) kind: &'static str,
    /// What this connection's spans and metrics carry (telemetry).
    pub(super) otel: crate::telemetry::Conn,
    /// The connection's lifetime, for `mcp.client.session.duration`.
    pub(super) clock: crate::telemetry::SessionClock,
}

impl Session {
    /// Not connected yet, to `spec`'s server.
    pub(super) fn new(spec: &ServerSpec) -> Self {
        Self {
            connected: false,
            era: None,
            era_hint: None,
            server_caps: Default::default(),
            started: Instant::now(),
            kind: spec.transport.kind(),
            otel: otel_conn(spec),
            clock: Default::default(),
        }
    }

    /// The handshake (or discovery) succeeded in `era` with the server's `caps`.
    pub(super) fn connect(&mut self, era: Era, caps: crate::protocol::types::ServerCapabilities) {
        self.connected = true;
        self.era = Some(era);
        self.otel.version = Some(era.version_str());
        self.clock = crate::telemetry::SessionClock::start();
        self.server_caps = caps;
    }

    /// The stateless revision requests carry in `_meta`, when the connection speaks one.
    pub(super) fn stateless(&self) -> Option<ProtocolVersion> {
        self.era.filter(Era::is_stateless).map(|e| e.version())
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

/// What connecting yields: the server's initialize result (or the stateless era's discovery
/// result in its shape), the era the connection speaks, and its first tool list.
pub(super) struct Connected {
    pub(super) init: InitializeResult,
    pub(super) era: Era,
    pub(super) tools: Arc<[Arc<Tool>]>,
}

async fn rpc_raw(addr: &Addr<McpServer>, rpc: Rpc) -> Result<Payload, ReplyError> {
    let method = rpc.method();
    let (rx, backlog) = addr
        .send(rpc)
        .await
        .map_err(|_| ReplyError::Gone("stopped".to_owned()))?;
    // A full queue: wait for room (the handshake and the re-list bound this whole call).
    if let Some(b) = backlog {
        if !b.send().await {
            return Err(ReplyError::Gone(format!(
                "stopped before {method} could be written"
            )));
        }
    }
    rx.await
        .unwrap_or_else(|_| Err(ReplyError::Gone("stopped".to_owned())))
}

fn describe(method: &str, e: ReplyError) -> String {
    match e {
        ReplyError::Rpc(e) => format!("{method} failed: {e}"),
        ReplyError::Gone(why) => format!("server {why} during {method}"),
        ReplyError::Transport(e) | ReplyError::StreamBroken(e) => format!("{method} failed: {e}"),
        ReplyError::TooLarge(max) => format!(
            "{method} reply exceeds the maximum message size of {}",
            crate::protocol::render::human_bytes(max)
        ),
    }
}

async fn rpc(addr: &Addr<McpServer>, rpc: Rpc) -> Result<Payload, String> {
    let method = rpc.method();
    rpc_raw(addr, rpc).await.map_err(|e| describe(method, e))
}

/// How the era of a connection is chosen.
pub(super) struct EraChoice {
    /// `protocolVersion` from the config: that revision only.
    pub pinned: Option<ProtocolVersion>,
    /// The era an earlier generation of this server found (the supervisor's cache).
    pub hint: Option<Era>,
    /// How long the `server/discover` probe goes unanswered before `initialize` is tried
    /// beside it (the probe is not given up: the first of the two to succeed wins).
    pub probe: Duration,
}

/// Connects in the era the server speaks: pinned, cached, or found by probing with
/// `server/discover`. A result (or a recognised stateless error) is the stateless era; a
/// refusal that names a handshake revision, or any other failure, is the handshake. A probe
/// still unanswered after `choice.probe` is not abandoned: `initialize` is sent beside it, and
/// the first to succeed decides; if `initialize` is refused, the probe's answer is awaited (a
/// slow stateless server), for as long as the caller's startup timeout allows. No sleeps: each
/// step waits on a reply.
pub(super) async fn connect(
    addr: Addr<McpServer>,
    max_tools: usize,
    choice: EraChoice,
    client: Arc<ClientSide>,
) -> Result<Connected, String> {
    let want = choice.pinned.map(Era::of).or(choice.hint);
    match want {
        Some(Era::Handshake(v)) if choice.pinned.is_some() => {
            return handshake(addr, max_tools, v, &client).await
        }
        Some(Era::Handshake(v)) => {
            match initialize(addr.clone(), max_tools, v, None, &client).await {
                // Remembered, not pinned: a server that refuses `initialize` now (updated to the
                // stateless era since) is probed like one never seen.
                Err(InitFailed::Refused(e)) => {
                    tracing::debug!(target: "mcp", "initialize refused ({e}) in the era remembered; probing");
                }
                done => return done.map_err(|e| e.to_string()),
            }
        }
        _ => {}
    }
    let version = match want {
        Some(e @ Era::Stateless(_)) => e.version(),
        _ => MODERN,
    };
    if choice.pinned.is_some() {
        // A pinned revision waits for its answer like any request.
        return match discover(&addr, version).await {
            Ok(found) => stateless(addr, max_tools, found).await,
            Err(why) => Err(format!(
                "protocolVersion {version} is pinned in the config, but server/discover failed: {why}"
            )),
        };
    }
    let probing = addr.clone();
    let probe = async move { discover(&probing, version).await };
    tokio::pin!(probe);
    let early = tokio::select! {
        found = &mut probe => Some(found),
        () = tokio::time::sleep(choice.probe) => None,
    };
    let why = match early {
        Some(Ok(found)) => return stateless(addr, max_tools, found).await,
        Some(Err(why)) => why,
        None => {
            tracing::debug!(target: "mcp",
                "server/discover unanswered after {} ms; trying initialize beside it",
                choice.probe.as_millis());
            return race(addr, max_tools, probe, version, &client).await;
        }
    };
    tracing::debug!(target: "mcp", "server/discover: {why}; using the handshake");
    let v = match why {
        NotModern::Supports(v) => v,
        NotModern::Other(_) => LATEST,
    };
    handshake(addr, max_tools, v, &client).await
}

/// A probe (at `probed`) still pending, and `initialize` beside it: the first success decides
/// the era. That `initialize` also carries the `_meta` of `probed` (its revision, our
/// capabilities and who we are; `_meta` is allowed in every revision's params), so a slow
/// stateless server sees no request without them. A refused `initialize` (a stateless-only
/// server) waits for the probe; a failed probe (a handshake server that refuses
/// `server/discover` late) waits for `initialize`.
async fn race(
    addr: Addr<McpServer>,
    max_tools: usize,
    probe: std::pin::Pin<&mut impl std::future::Future<Output = Result<Discovered, NotModern>>>,
    probed: ProtocolVersion,
    client: &ClientSide,
) -> Result<Connected, String> {
    let mut probe = probe;
    let init = initialize(addr.clone(), max_tools, LATEST, Some(probed), client);
    tokio::pin!(init);
    tokio::select! {
        found = &mut probe => match found {
            Ok(found) => stateless(addr, max_tools, found).await,
            Err(why) => {
                tracing::debug!(target: "mcp", "server/discover: {why}; waiting for initialize");
                init.await.map_err(|e| e.to_string())
            }
        },
        done = &mut init => match done {
            Ok(h) => Ok(h),
            Err(refused) => {
                tracing::debug!(target: "mcp",
                    "{refused}; waiting for the server/discover answer (a stateless server)");
                match probe.await {
                    Ok(found) => stateless(addr, max_tools, found).await,
                    Err(why) => Err(format!("{refused}; server/discover failed too: {why}")),
                }
            }
        },
    }
}

/// What `server/discover` found.
struct Discovered {
    version: ProtocolVersion,
    result: InitializeResult,
}

/// Why a server is taken for a handshake-era one.
enum NotModern {
    /// It named the handshake-era revision to use (`-32022` listing only those).
    Supports(ProtocolVersion),
    /// Any other failure: not a recognised stateless answer.
    Other(String),
}

impl std::fmt::Display for NotModern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotModern::Supports(v) => write!(f, "the server supports {v}"),
            NotModern::Other(s) => f.write_str(s),
        }
    }
}

/// The revisions a `-32022` error says the server supports (`data.supported`).
fn supported_of(e: &crate::protocol::jsonrpc::ErrorObject) -> Vec<String> {
    e.data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(|s| serde_json::from_value(s.clone()).ok())
        .unwrap_or_default()
}

/// The best revision of `supported` (wire strings) that we speak too.
fn mutual(supported: &[String]) -> Option<ProtocolVersion> {
    supported
        .iter()
        .filter_map(|s| ProtocolVersion::parse(s))
        .max()
}

/// Probes with `server/discover` at `version` (a `-32022` naming another stateless revision
/// we speak is retried once with it). Unbounded: the caller bounds it (the startup timeout).
async fn discover(
    addr: &Addr<McpServer>,
    version: ProtocolVersion,
) -> Result<Discovered, NotModern> {
    let mut version = version;
    for attempt in 0..2 {
        let rpc = Rpc::new::<Discover>(None, Some(version))
            .map_err(|e| NotModern::Other(e.to_string()))?;
        let reply = rpc_raw(addr, rpc).await;
        match reply {
            Ok(raw) => {
                let d: <Discover as Request>::Result = raw.parse().map_err(|e| {
                    NotModern::Other(format!("invalid {} result: {e}", Discover::METHOD))
                })?;
                check_result_type(d.result_type.as_deref(), Discover::METHOD)
                    .map_err(NotModern::Other)?;
                let version = match mutual(&d.supported_versions) {
                    Some(v) if v.is_stateless() => v,
                    Some(v) => return Err(NotModern::Supports(v)),
                    // `supportedVersions` is required: a bare `{}` (a server that answers
                    // every unknown method with an empty result) is not a discovery.
                    None if d.supported_versions.is_empty() => {
                        return Err(NotModern::Other(
                            "server/discover result without supportedVersions".to_owned(),
                        ))
                    }
                    None => {
                        return Err(NotModern::Other(format!(
                            "the server supports only {}",
                            d.supported_versions.join(", ")
                        )))
                    }
                };
                let server_info = d
                    .server_info
                    .or_else(|| {
                        d.meta
                            .as_ref()
                            .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
                            .and_then(|i| serde_json::from_value(i.clone()).ok())
                    })
                    .unwrap_or_default();
                return Ok(Discovered {
                    version,
                    result: InitializeResult {
                        protocol_version: version.as_str().to_owned(),
                        capabilities: d.capabilities,
                        server_info,
                        instructions: d.instructions,
                    },
                });
            }
            Err(ReplyError::Rpc(e)) if e.code == UNSUPPORTED_PROTOCOL_VERSION => {
                let supported = supported_of(&e);
                match mutual(&supported) {
                    // Retried once, even with the revision just refused (a server may refuse
                    // one request and take its retry).
                    Some(v) if v.is_stateless() && attempt == 0 => version = v,
                    Some(v) if !v.is_stateless() => return Err(NotModern::Supports(v)),
                    _ => {
                        return Err(NotModern::Other(format!(
                            "the server supports {}; harness9 speaks {}",
                            if supported.is_empty() {
                                "no revision it named".to_owned()
                            } else {
                                supported.join(", ")
                            },
                            ProtocolVersion::KNOWN.map(|v| v.as_str()).join(", ")
                        )))
                    }
                }
            }
            Err(e) => return Err(NotModern::Other(describe(Discover::METHOD, e))),
        }
    }
    Err(NotModern::Other("no mutual revision".to_owned()))
}

/// `resultType`: absent or `complete` is a result; anything else here is an error.
pub(super) fn check_result_type(kind: Option<&str>, method: &str) -> Result<(), String> {
    match kind {
        None | Some("complete") => Ok(()),
        Some(other) => Err(format!(
            "{method} returned a result of type {other:?}, which harness9 does not understand"
        )),
    }
}

async fn stateless(
    addr: Addr<McpServer>,
    max_tools: usize,
    found: Discovered,
) -> Result<Connected, String> {
    let era = Era::Stateless(found.version);
    addr.send(SetEra(era))
        .await
        .map_err(|_| "server actor stopped".to_owned())?;
    let tools = first_tools(addr, max_tools, &found.result).await?;
    Ok(Connected {
        init: found.result,
        era,
        tools,
    })
}

/// `initialize` failed: refused with a JSON-RPC error, or otherwise.
enum InitFailed {
    /// The server answered `initialize` with this error.
    Refused(crate::protocol::jsonrpc::ErrorObject),
    /// Anything else (transport, an invalid result, a revision we do not speak).
    Other(String),
}

impl std::fmt::Display for InitFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitFailed::Refused(e) => write!(f, "initialize failed: {e}"),
            InitFailed::Other(s) => f.write_str(s),
        }
    }
}

/// The handshake at `offer`; a `-32022` refusal (the server speaks the stateless era after
/// all: a dual-era server that took our unanswered-in-time probe, or one that refuses the
/// handshake) discovers the stateless era, waiting for the answer this time.
pub(super) async fn handshake(
    addr: Addr<McpServer>,
    max_tools: usize,
    offer: ProtocolVersion,
    client: &ClientSide,
) -> Result<Connected, String> {
    match initialize(addr.clone(), max_tools, offer, None, client).await {
        Ok(h) => Ok(h),
        Err(InitFailed::Refused(e)) if e.code == UNSUPPORTED_PROTOCOL_VERSION => {
            let version = mutual(&supported_of(&e))
                .filter(|v| v.is_stateless())
                .unwrap_or(MODERN);
            tracing::debug!(target: "mcp", "initialize refused ({e}); discovering the stateless era");
            let found = discover(&addr, version).await.map_err(|why| {
                format!("initialize failed: {e}; server/discover failed too: {why}")
            })?;
            stateless(addr, max_tools, found).await
        }
        Err(e) => Err(e.to_string()),
    }
}

/// `initialize` (with the stateless `_meta` of `meta_of`, when sent beside a probe at that
/// revision), `notifications/initialized`, the first `tools/list`.
async fn initialize(
    addr: Addr<McpServer>,
    max_tools: usize,
    offer: ProtocolVersion,
    meta_of: Option<ProtocolVersion>,
    client: &ClientSide,
) -> Result<Connected, InitFailed> {
    let params = InitializeParams {
        protocol_version: offer.as_str(),
        capabilities: client.capabilities(),
        client_info: server_requests::client_info(),
    };
    let rpc = Rpc::new::<Initialize>(Some(&params), meta_of)
        .map_err(|e| InitFailed::Other(e.to_string()))?;
    let raw = match rpc_raw(&addr, rpc).await {
        Ok(raw) => raw,
        Err(ReplyError::Rpc(e)) => return Err(InitFailed::Refused(e)),
        Err(e) => return Err(InitFailed::Other(describe(Initialize::METHOD, e))),
    };
    let init: <Initialize as Request>::Result = raw
        .parse()
        .map_err(|e| InitFailed::Other(format!("invalid initialize result: {e}")))?;
    let era = negotiate(&init.protocol_version).map_err(InitFailed::Other)?;
    addr.send(SetEra(era))
        .await
        .map_err(|_| InitFailed::Other("server actor stopped".to_owned()))?;
    if !era.is_stateless() {
        let backlog = addr
            .send(Notify::new::<Initialized>())
            .await
            .map_err(|_| InitFailed::Other("server actor stopped".to_owned()))?;
        if let Some(b) = backlog {
            b.send().await;
        }
    }
    let tools = first_tools(addr, max_tools, &init)
        .await
        .map_err(InitFailed::Other)?;
    Ok(Connected { init, era, tools })
}

/// The tools of a server that just connected. One that declares no `tools` capability (a
/// server of skills, resources or prompts only) is still asked, for servers that serve tools
/// without declaring them, but its refusal (`-32601`) or any failure means no tools, not a
/// failed connection.
async fn first_tools(
    addr: Addr<McpServer>,
    max: usize,
    init: &<Initialize as Request>::Result,
) -> Result<Arc<[Arc<Tool>]>, String> {
    if init.capabilities.tools.is_some() {
        return list_tools(addr, max).await;
    }
    match list_tools(addr.clone(), max).await {
        Ok(tools) => Ok(tools),
        Err(e) => {
            tracing::info!(target: "mcp", "the server declares no tools capability and tools/list failed ({e}): no tools");
            addr.send(ToolsListed(Vec::new(), None))
                .await
                .map_err(|_| "server actor stopped".to_owned())
        }
    }
}

pub(super) async fn list_tools(
    addr: Addr<McpServer>,
    max: usize,
) -> Result<Arc<[Arc<Tool>]>, String> {
    // The shortest `ttlMs` of the pages: the whole list is as fresh as its stalest page.
    let mut ttl: Option<u64> = None;
    let tools = list_all::<ListTools>(&addr, max, "maxTools", |p| {
        if let Some(t) = p.ttl_ms() {
            ttl = Some(ttl.map_or(t, |o| o.min(t)));
        }
    })
    .await?;
    // The actor keeps what it needs of the list (x-mcp-header params, its freshness) and
    // drops what it must.
    addr.send(ToolsListed(tools, ttl))
        .await
        .map_err(|_| "server actor stopped".to_owned())
}

/// Pages a server may send for one list.
const MAX_PAGES: usize = 10_000;

/// Walks a paginated list (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`) to its end, showing `look` each page. A cursor seen before on this walk (A,
/// B, A) is a cycle; a `resultType` other than `complete`, more than `max` items (`setting`
/// raises it) or [`MAX_PAGES`] pages is an error; the caller bounds the time.
pub(super) async fn list_all<R>(
    addr: &Addr<McpServer>,
    max: usize,
    setting: &str,
    mut look: impl FnMut(&R::Result),
) -> Result<Vec<<R::Result as Page>::Item>, String>
where
    R: for<'a> Request<Params<'a> = PaginatedParams<'a>>,
    R::Result: Page + serde::de::DeserializeOwned,
{
    use std::hash::{Hash, Hasher};
    let method = R::METHOD;
    let mut all = Vec::new();
    // Hashes, not cursors: a server's cursors may be large; a clash only ends a walk early.
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    for pages in 1..=MAX_PAGES {
        let params = cursor.as_deref().map(|cursor| PaginatedParams { cursor });
        let request = Rpc::new::<R>(params.as_ref(), None).map_err(|e| e.to_string())?;
        let raw = rpc(addr, request).await?;
        let page: R::Result = raw
            .parse_page()
            .map_err(|e| format!("invalid {method} result: {e}"))?;
        drop(raw);
        check_result_type(page.result_type(), method)?;
        look(&page);
        let (items, next) = page.into_parts();
        if all.len() + items.len() > max {
            return Err(format!(
                "{method} returned more than {max} items; if that is legitimate, raise {setting} for this server"
            ));
        }
        all.extend(items);
        let Some(next) = next.filter(|c| !c.is_empty()) else {
            return Ok(all);
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        next.hash(&mut h);
        if !seen.insert(h.finish()) {
            let shown: String = next.chars().take(40).collect();
            return Err(format!(
                "{method} returned the cursor {shown:?} again after {pages} pages: the server's pagination cycles"
            ));
        }
        cursor = Some(next);
    }
    Err(format!("{method} returned more than {MAX_PAGES} pages"))
}
