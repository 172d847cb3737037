//! `mcp-bench`: harness9's client for the MCP stdio client benchmark (`shared/bench/README.md`).
//!
//! It goes through the runtime's public path only: a `ToolRegistry`, a `ServerSupervisor` with one
//! stdio server named `bench`, a status subscription (no polling), and tool calls routed by the
//! registry to `mcp__bench__echo`. Prints exactly one JSON line on stdout; diagnostics go to
//! stderr; exits non-zero (still printing the line, with an `"error"` field) on failure.
//!
//! ```text
//! mcp-bench --server-cmd "<argv>" --mode {handshake|seq|conc|bigList} --n N [--inflight K]
//!           [--url URL] [--protocol REVISION]
//! ```

use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::stream::{FuturesUnordered, StreamExt};
use harness9_actors::messages::{
    CallBuiltin, ListTools, ServerStatus, SetBuiltins, ShutdownAll, Subscribe,
};
use harness9_actors::protocol::types::CallToolResult;
use harness9_actors::supervisor::StatusForward;
use harness9_actors::{
    CallError, RestartPolicy, ServerSpec, ServerSupervisor, ToolRegistry, TransportSpec,
};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

/// The server's name in the spec; its tools register as `mcp__bench__{tool}`.
const SERVER: &str = "bench";
/// The echo tool's registered name.
const ECHO: &str = "mcp__bench__echo";
/// Bound on the wait for the server to reach `Connected`.
const CONNECT_BOUND: Duration = Duration::from_secs(60);
/// Bound on one round trip to a local actor (ListTools) and on one tool call.
const CALL_BOUND: Duration = Duration::from_secs(60);
/// Bound on `ShutdownAll` (the supervisor bounds itself at 10 s; this is a backstop).
const SHUTDOWN_BOUND: Duration = Duration::from_secs(30);
/// Bound on the wait for the dropped registry and supervisor to be freed.
const TEARDOWN_BOUND: Duration = Duration::from_secs(5);

struct Args {
    server_cmd: Vec<String>,
    /// Extra to the contract: an MCP Streamable HTTP URL instead of a command (seq/conc).
    url: Option<String>,
    mode: String,
    n: usize,
    inflight: usize,
    /// Extra to the contract: pin the server's protocol revision (and so its era).
    protocol: Option<harness9_actors::protocol::version::ProtocolVersion>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        server_cmd: Vec::new(),
        url: None,
        mode: "seq".to_owned(),
        n: 1000,
        inflight: 1,
        protocol: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("missing value for {k}"))?;
        match k.as_str() {
            "--server-cmd" => a.server_cmd = v.split_whitespace().map(str::to_owned).collect(),
            "--mode" => a.mode = v,
            "--url" => a.url = Some(v),
            "--n" => a.n = v.parse().map_err(|_| format!("bad --n {v:?}"))?,
            "--inflight" => a.inflight = v.parse().map_err(|_| format!("bad --inflight {v:?}"))?,
            "--protocol" => {
                a.protocol = Some(
                    harness9_actors::protocol::version::ProtocolVersion::parse(&v)
                        .ok_or_else(|| format!("unknown protocol revision {v:?}"))?,
                )
            }
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.server_cmd.is_empty() && a.url.is_none() {
        return Err("--server-cmd is required".to_owned());
    }
    if !matches!(a.mode.as_str(), "seq" | "conc" | "handshake" | "bigList") {
        return Err(format!("unknown mode {:?}", a.mode));
    }
    Ok(a)
}

fn bench_tools(mode: &str) -> String {
    let (var, default) = if mode == "bigList" {
        ("BENCH_BIGLIST_TOOLS", "10000")
    } else {
        ("BENCH_TOOLS", "3")
    };
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

fn server_spec(a: &Args) -> ServerSpec {
    let mut spec = if let Some(url) = &a.url {
        let mut spec = ServerSpec::stdio(SERVER, "", Vec::new());
        spec.transport = TransportSpec::Http {
            url: url.clone(),
            headers: Vec::new(),
            sse: false,
        };
        spec
    } else {
        let mut spec =
            ServerSpec::stdio(SERVER, a.server_cmd[0].clone(), a.server_cmd[1..].to_vec());
        if let TransportSpec::Stdio { env, .. } = &mut spec.transport {
            env.push(("BENCH_TOOLS".to_owned(), bench_tools(&a.mode)));
        }
        spec
    };
    spec.protocol = a.protocol;
    spec
}

/// An executor with no built-ins, installed only so the bench learns when the registry (which
/// holds its only address) has been dropped: its channel closes then.
struct DropSignal {
    _closes_on_drop: mpsc::UnboundedSender<()>,
}

impl Actor for DropSignal {
    type Context = Context<Self>;
}

impl Handler<CallBuiltin> for DropSignal {
    type Result = Result<CallToolResult, CallError>;

    fn handle(&mut self, msg: CallBuiltin, _ctx: &mut Context<Self>) -> Self::Result {
        Err(CallError::UnknownTool { name: msg.name })
    }
}

/// A running runtime with the bench server connected.
struct Session {
    registry: Addr<ToolRegistry>,
    supervisor: Addr<ServerSupervisor>,
    /// Closes when the supervisor is dropped (it holds the status forwarder's only address).
    status: mpsc::UnboundedReceiver<ServerStatus>,
    /// Closes when the registry is dropped.
    registry_gone: mpsc::UnboundedReceiver<()>,
}

impl Session {
    /// Starts registry + supervisor and waits (bounded) for the server's `Connected` status.
    async fn connect(spec: &ServerSpec) -> Result<Session, String> {
        let registry = ToolRegistry::new().start();
        let (gone_tx, registry_gone) = mpsc::unbounded_channel();
        registry.do_send(SetBuiltins {
            tools: Vec::new(),
            executor: DropSignal {
                _closes_on_drop: gone_tx,
            }
            .start()
            .recipient(),
        });
        let supervisor = ServerSupervisor::new(
            vec![spec.clone()],
            registry.clone(),
            RestartPolicy::default(),
            None,
        )
        .start();
        let (tx, status) = mpsc::unbounded_channel();
        let forward = StatusForward::new(SERVER, tx).start();
        supervisor.do_send(Subscribe(forward.recipient()));
        let mut session = Session {
            registry,
            supervisor,
            status,
            registry_gone,
        };
        let rx = &mut session.status;
        let waited = tokio::time::timeout(CONNECT_BOUND, async {
            while let Some(status) = rx.recv().await {
                match status {
                    ServerStatus::Connected { .. } => return Ok(()),
                    ServerStatus::Failed { error, stderr_tail } => {
                        let tail = stderr_tail.join(" | ");
                        return Err(format!("server failed to start: {error}; stderr: {tail}"));
                    }
                    ServerStatus::Stopped => return Err("server stopped while starting".to_owned()),
                    _ => {}
                }
            }
            Err("status subscription ended before the server connected".to_owned())
        })
        .await;
        let res = match waited {
            Ok(r) => r,
            Err(_) => Err(format!(
                "server not connected within {} s",
                CONNECT_BOUND.as_secs()
            )),
        };
        match res {
            Ok(()) => Ok(session),
            Err(e) => {
                session.close().await;
                Err(e)
            }
        }
    }

    /// The registry's count of tools of the bench server.
    async fn tool_count(&self) -> Result<usize, String> {
        let entries = tokio::time::timeout(CALL_BOUND, self.registry.send(ListTools))
            .await
            .map_err(|_| "ListTools timed out".to_owned())?
            .map_err(|e| format!("ListTools: {e}"))?;
        Ok(entries
            .iter()
            .filter(|e| e.server.as_deref() == Some(SERVER))
            .count())
    }

    /// `ShutdownAll` (resolves once the child is gone), then drops the runtime and waits until
    /// the supervisor and the registry (with its tool table) are freed, so that teardown is
    /// counted here and not in whatever runs next. Every wait is bounded.
    async fn close(self) {
        let Session {
            registry,
            supervisor,
            mut status,
            mut registry_gone,
        } = self;
        match tokio::time::timeout(SHUTDOWN_BOUND, supervisor.send(ShutdownAll::default())).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("mcp-bench: ShutdownAll: {e}"),
            Err(_) => eprintln!(
                "mcp-bench: ShutdownAll did not finish within {} s",
                SHUTDOWN_BOUND.as_secs()
            ),
        }
        drop((registry, supervisor));
        let freed = tokio::time::timeout(TEARDOWN_BOUND, async {
            while status.recv().await.is_some() {}
            while registry_gone.recv().await.is_some() {}
        })
        .await;
        if freed.is_err() {
            eprintln!(
                "mcp-bench: registry/supervisor still alive {} s after ShutdownAll",
                TEARDOWN_BOUND.as_secs()
            );
        }
    }
}

/// One echo call through the registry; checks the reply and returns its latency.
async fn echo(registry: &Addr<ToolRegistry>, i: usize) -> Result<Duration, String> {
    // BENCH_ECHO_KEY / BENCH_ECHO_PREFIX adapt the check to another server's echo tool
    // (server-everything: `message`, `Echo: `), for transport comparisons; read once, so a
    // call's instruction count is the runtime's, not the environment's lookup.
    static ECHO_CHECK: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    let (key, prefix) = ECHO_CHECK.get_or_init(|| {
        (
            std::env::var("BENCH_ECHO_KEY").unwrap_or_else(|_| "text".to_owned()),
            std::env::var("BENCH_ECHO_PREFIX").unwrap_or_default(),
        )
    });
    let arg = format!("m{i}");
    let t = Instant::now();
    let r = ToolRegistry::call(registry, ECHO, Some(json!({ key: &arg })), Some(CALL_BOUND))
        .await
        .map_err(|e| e.to_string())?;
    let el = t.elapsed();
    let got = r.text();
    if r.is_error || got.strip_prefix(prefix.as_str()) != Some(arg.as_str()) {
        return Err(format!(
            "bad echo reply for {prefix}{arg}: {got:?} (isError {})",
            r.is_error
        ));
    }
    Ok(el)
}

/// Nearest-rank percentile of sorted values: index `ceil(q*len)-1`.
fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx]
}

/// p50 and p99 in microseconds.
fn lat_stats(lat: &[Duration]) -> (f64, f64) {
    let mut us: Vec<f64> = lat.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    (pct(&us, 0.50), pct(&us, 0.99))
}

async fn run_calls(a: &Args, spec: &ServerSpec) -> Result<Map<String, Value>, String> {
    let session = Session::connect(spec).await?;
    let res = calls(a, &session.registry).await;
    session.close().await;
    let (secs, k, lat) = res?;
    let (p50, p99) = lat_stats(&lat);
    let mut m = Map::new();
    m.insert("secs".into(), json!(secs));
    m.insert("calls_per_sec".into(), json!(a.n as f64 / secs));
    m.insert("p50_us".into(), json!(p50));
    m.insert("p99_us".into(), json!(p99));
    m.insert("inflight".into(), json!(k));
    Ok(m)
}

async fn calls(
    a: &Args,
    registry: &Addr<ToolRegistry>,
) -> Result<(f64, usize, Vec<Duration>), String> {
    for i in 0..a.n.min(100) {
        echo(registry, i).await?;
    }
    let k = if a.mode == "seq" {
        1
    } else {
        a.inflight.max(1)
    };
    let mut lat = Vec::with_capacity(a.n);
    let t0 = Instant::now();
    if k == 1 {
        for i in 0..a.n {
            lat.push(echo(registry, i).await?);
        }
    } else {
        let mut in_flight = FuturesUnordered::new();
        let mut next = 0;
        while next < a.n.min(k) {
            in_flight.push(echo(registry, next));
            next += 1;
        }
        while let Some(r) = in_flight.next().await {
            lat.push(r?);
            if next < a.n {
                in_flight.push(echo(registry, next));
                next += 1;
            }
        }
    }
    Ok((t0.elapsed().as_secs_f64(), k, lat))
}

async fn run_handshakes(a: &Args, spec: &ServerSpec) -> Result<Map<String, Value>, String> {
    let mut lat = Vec::with_capacity(a.n);
    let mut cycle = Duration::ZERO;
    let mut tools = 0usize;
    let t_all = Instant::now();
    for _ in 0..a.n {
        let t0 = Instant::now();
        let session = Session::connect(spec).await?;
        let counted = session.tool_count().await;
        let listed = t0.elapsed();
        session.close().await;
        cycle += t0.elapsed();
        tools = counted?;
        lat.push(listed);
    }
    let secs = t_all.elapsed().as_secs_f64();
    let n = a.n.max(1) as f64;
    let mean_ms = lat.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / n;
    let (p50, p99) = lat_stats(&lat);
    let mut m = Map::new();
    m.insert("secs".into(), json!(secs));
    m.insert("mean_ms".into(), json!(mean_ms));
    m.insert("cycle_mean_ms".into(), json!(cycle.as_secs_f64() * 1e3 / n));
    m.insert("p50_us".into(), json!(p50));
    m.insert("p99_us".into(), json!(p99));
    m.insert("tools".into(), json!(tools));
    Ok(m)
}

async fn run(a: &Args) -> Result<Map<String, Value>, String> {
    let spec = server_spec(a);
    match a.mode.as_str() {
        "seq" | "conc" => run_calls(a, &spec).await,
        _ => run_handshakes(a, &spec).await,
    }
}

/// Telemetry from the environment alone (`OTEL_TRACES_EXPORTER=otlp`,
/// `OTEL_METRICS_EXPORTER=otlp`, `OTEL_EXPORTER_OTLP_ENDPOINT`), as the binary exports: to
/// measure its cost on the hot path. Off unless set.
fn telemetry() -> Option<harness9_actors::telemetry::export::Telemetry> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let on = |k: &str| std::env::var(k).is_ok_and(|v| v == "otlp");
    let plan = harness9_actors::telemetry::export::Plan {
        traces: on("OTEL_TRACES_EXPORTER"),
        metrics: on("OTEL_METRICS_EXPORTER"),
        ..Default::default()
    };
    let t = match harness9_actors::telemetry::export::start(&plan) {
        Ok(t) => t?,
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            return None;
        }
    };
    let layer = t
        .tracer
        .clone()
        .map(harness9_actors::telemetry::export::layer);
    let _ = tracing_subscriber::registry().with(layer).try_init();
    harness9_actors::telemetry::set_root(tracing::info_span!(
        target: harness9_actors::telemetry::TARGET, "session", otel.name = "mcp-bench"));
    Some(t)
}

fn main() {
    let args = parse_args();
    let telemetry = telemetry();
    let mut out = Map::new();
    out.insert("client".into(), json!("harness9"));
    out.insert(
        "telemetry".into(),
        json!(if telemetry.is_some() { "on" } else { "off" }),
    );
    let ok = match args {
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            out.insert("error".into(), json!(e));
            false
        }
        Ok(a) => {
            out.insert("mode".into(), json!(a.mode));
            out.insert("n".into(), json!(a.n));
            out.insert(
                "runtime".into(),
                json!("actix 0.13 System (current-thread)"),
            );
            let sys = System::new();
            // The calls run as a task of the System's arbiter, as every caller in harness9 does
            // (an actor's future), not as the `block_on` root: a reply that wakes the root
            // future unparks the runtime through its driver's eventfd (one more write and one
            // more epoll_wait a call), which no caller inside the System pays.
            let task = async move { run(&a).await };
            let res = sys
                .block_on(async { actix_rt::spawn(task).await })
                .unwrap_or_else(|e| Err(format!("the bench task failed: {e}")));
            match res {
                Ok(m) => {
                    out.extend(m);
                    true
                }
                Err(e) => {
                    eprintln!("mcp-bench: {e}");
                    out.insert("error".into(), json!(e));
                    false
                }
            }
        }
    };
    println!("{}", Value::Object(out));
    if let Some(t) = telemetry {
        harness9_actors::telemetry::end_root();
        t.shutdown();
    }
    std::process::exit(if ok { 0 } else { 1 });
}
