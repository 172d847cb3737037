//! `mcp-soak`: SIGKILLs a stdio server again and again while calls are in flight, and reports
//! calls lost, open fds, RSS and leftover children (not run in CI; see README "Fuzzing and soak").
//!
//! It goes through the runtime's public path only, like `mcp-bench`: a `ToolRegistry`, a
//! `ServerSupervisor` with one server named `soak` (the fixture server by default) under a
//! `RestartPolicy` that allows every restart, a status subscription, and `sleep`/`echo` calls
//! routed by the registry. Every call has a bound; one that outlives it (plus a margin) is lost.
//!
//! ```text
//! mcp-soak [--server-cmd "<argv>"] [--kills 100] [--inflight 16] [--call-timeout-ms 5000]
//! ```

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use harness9_actors::messages::{ServerStatus, ShutdownAll, Subscribe};
use harness9_actors::supervisor::StatusForward;
use harness9_actors::{CallError, RestartPolicy, ServerSpec, ServerSupervisor, ToolRegistry};
use harness9_platform::process::{open_fd_count as fd_count, rss_kib};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// The server's name; its tools register as `mcp__soak__{tool}`.
const SERVER: &str = "soak";
/// Bound on each wait for the server to (re)connect.
const CONNECT_BOUND: Duration = Duration::from_secs(30);
/// How much longer than its own bound a call may take before it counts as lost.
const LOST_MARGIN: Duration = Duration::from_secs(5);
/// Bound on `ShutdownAll`.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(30);

struct Args {
    server_cmd: Vec<String>,
    kills: usize,
    inflight: usize,
    call_timeout: Duration,
}

/// The fixture server next to this binary (`target/{debug,release}/fixture-server`).
fn default_server() -> Vec<String> {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(|d| d.to_path_buf()).unwrap_or_default();
    vec![dir.join("fixture-server").display().to_string()]
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        server_cmd: default_server(),
        kills: 100,
        inflight: 16,
        call_timeout: Duration::from_secs(5),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("missing value for {k}"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|_| format!("bad {k} {v:?}"));
        match k.as_str() {
            "--server-cmd" => a.server_cmd = v.split_whitespace().map(str::to_owned).collect(),
            "--kills" => a.kills = num(&v)? as usize,
            "--inflight" => a.inflight = (num(&v)? as usize).max(1),
            "--call-timeout-ms" => a.call_timeout = Duration::from_millis(num(&v)?.max(1)),
            _ => {
                return Err(format!(
                    "unknown argument {k}; see the usage in the file's docs"
                ))
            }
        }
    }
    if a.server_cmd.is_empty() {
        return Err("--server-cmd is empty".to_owned());
    }
    Ok(a)
}

/// Children of this process still in the process table: `(pid, zombie)`.
fn children() -> Vec<(i32, bool)> {
    harness9_platform::descendants::children()
}

/// Waits (bounded) for `Connected` with a pid other than `old`; returns the new pid.
async fn connected(
    status: &mut mpsc::UnboundedReceiver<ServerStatus>,
    old: Option<u32>,
) -> Result<u32, String> {
    let wait = async {
        while let Some(s) = status.recv().await {
            match s {
                ServerStatus::Connected { info, .. } => match info.pid {
                    Some(pid) if Some(pid) != old => return Ok(pid),
                    Some(_) => {}
                    None => return Err("the server connected without a pid".to_owned()),
                },
                ServerStatus::Failed { error, .. } => {
                    return Err(format!("the server failed: {error}"))
                }
                ServerStatus::Stopped => return Err("the server stopped".to_owned()),
                _ => {}
            }
        }
        Err("the status subscription ended".to_owned())
    };
    tokio::time::timeout(CONNECT_BOUND, wait)
        .await
        .map_err(|_| format!("not connected within {} s", CONNECT_BOUND.as_secs()))?
}

/// Waits until `tally.ok` has grown by `n` (bounded: the server may be unable to answer).
async fn answers(tally: &Tally, n: u64, what: &str) -> Result<(), String> {
    let want = tally.ok.get() + n;
    let deadline = Instant::now() + CONNECT_BOUND;
    while tally.ok.get() < want {
        if Instant::now() > deadline {
            return Err(format!(
                "{what}: fewer than {n} calls answered within {} s",
                CONNECT_BOUND.as_secs()
            ));
        }
        // A soak's pacing, not a test's wait: the answers are counted by the slots.
        actix_rt::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// What the calls came to.
#[derive(Default)]
struct Tally {
    issued: Cell<u64>,
    ok: Cell<u64>,
    /// Answered with an error: the server went away, was restarting, or the call's bound.
    exited: Cell<u64>,
    unavailable: Cell<u64>,
    timed_out: Cell<u64>,
    other_error: Cell<u64>,
    /// Outlived its bound plus [`LOST_MARGIN`]: never answered.
    lost: Cell<u64>,
    /// Answered ok but with the wrong text.
    wrong: Cell<u64>,
    in_flight: Cell<u64>,
}

fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

/// One call slot: keeps one call in flight until `stop`, alternating `sleep` and `echo`.
async fn slot(
    registry: Addr<ToolRegistry>,
    tally: Rc<Tally>,
    stop: Rc<Cell<bool>>,
    n: usize,
    bound: Duration,
) {
    let mut i = 0u64;
    while !stop.get() {
        i += 1;
        let text = format!("s{n}-{i}");
        let (tool, args) = if i % 2 == 0 {
            (
                "mcp__soak__sleep",
                json!({"ms": (i * 37 + n as u64 * 11) % 200}),
            )
        } else {
            ("mcp__soak__echo", json!({"text": text}))
        };
        bump(&tally.issued);
        tally.in_flight.set(tally.in_flight.get() + 1);
        let call = ToolRegistry::call(&registry, tool, Some(args), Some(bound));
        let res = tokio::time::timeout(bound + LOST_MARGIN, call).await;
        tally.in_flight.set(tally.in_flight.get() - 1);
        let failed = match res {
            Err(_) => {
                bump(&tally.lost);
                true
            }
            Ok(Ok(r)) => {
                if tool.ends_with("echo") && (r.is_error || r.text() != text) {
                    bump(&tally.wrong);
                } else {
                    bump(&tally.ok);
                }
                false
            }
            Ok(Err(e)) => {
                match e {
                    CallError::ServerExited { .. } => bump(&tally.exited),
                    CallError::ServerUnavailable { .. } => bump(&tally.unavailable),
                    CallError::Timeout { .. } => bump(&tally.timed_out),
                    other => {
                        if tally.other_error.get() < 5 {
                            eprintln!("mcp-soak: call error: {other}");
                        }
                        bump(&tally.other_error);
                    }
                }
                true
            }
        };
        if failed {
            // Pace the retry while the server is away (it is not a wait for correctness).
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The runtime under soak: the registry, the supervisor of the one server, and the server's
/// status as the forwarder reports it.
struct Runtime {
    registry: Addr<ToolRegistry>,
    supervisor: Addr<ServerSupervisor>,
    status: mpsc::UnboundedReceiver<ServerStatus>,
}

/// Starts the registry and the supervisor of the soak server, restarts allowed for every kill.
fn start_runtime(a: &Args) -> Runtime {
    let registry = ToolRegistry::new().start();
    let mut spec = ServerSpec::stdio(SERVER, a.server_cmd[0].clone(), a.server_cmd[1..].to_vec());
    spec.tool_timeout = a.call_timeout;
    let policy = RestartPolicy {
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        // Every kill is an exit within the window: allow them all (and some to spare).
        max_exits: a.kills.saturating_mul(2).max(10),
        window: Duration::from_secs(60),
    };
    let supervisor = ServerSupervisor::new(vec![spec], registry.clone(), policy, None).start();
    let (tx, status) = mpsc::unbounded_channel();
    supervisor.do_send(Subscribe(
        StatusForward::new(SERVER, tx).start().recipient(),
    ));
    Runtime {
        registry,
        supervisor,
        status,
    }
}

/// What the kill phase saw: how long it took, the restarts, the calls in flight at each kill.
struct KillPhase {
    secs: f64,
    restarts: usize,
    in_flight_at_kill: Vec<u64>,
}

/// Kills the server `a.kills` times, each time with calls in flight after it took some, and
/// waits for each restart to connect.
async fn kill_phase(
    a: &Args,
    tally: &Tally,
    status: &mut mpsc::UnboundedReceiver<ServerStatus>,
    mut pid: u32,
) -> Result<KillPhase, String> {
    let t0 = Instant::now();
    let mut in_flight_at_kill = Vec::with_capacity(a.kills);
    let mut restarts = 0usize;
    for k in 0..a.kills {
        // Let the new server take some calls, then kill it with them in flight.
        answers(tally, a.inflight as u64, &format!("before kill {}", k + 1)).await?;
        in_flight_at_kill.push(tally.in_flight.get());
        let Ok(target) = i32::try_from(pid) else {
            return Err(format!("pid {pid} out of range"));
        };
        harness9_platform::process::signal(target, harness9_platform::process::Signal::Kill);
        pid = connected(status, Some(pid))
            .await
            .map_err(|e| format!("after kill {}: {e}", k + 1))?;
        restarts += 1;
    }
    Ok(KillPhase {
        secs: t0.elapsed().as_secs_f64(),
        restarts,
        in_flight_at_kill,
    })
}

/// Shuts every server down (bounded) and waits for the status channel to close once the
/// supervisor is freed.
async fn shut_down(rt: Runtime) {
    let Runtime {
        registry,
        supervisor,
        mut status,
    } = rt;
    match tokio::time::timeout(SHUTDOWN_BOUND, supervisor.send(ShutdownAll::default())).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("mcp-soak: ShutdownAll: {e}"),
        Err(_) => eprintln!("mcp-soak: ShutdownAll did not finish within 30 s"),
    }
    drop((registry, supervisor));
    // The status channel closes once the supervisor (its only sender's owner) is freed.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while status.recv().await.is_some() {}
    })
    .await;
}

/// The process's file descriptors and resident memory at one moment.
#[derive(Clone, Copy)]
struct Usage {
    fds: usize,
    rss_kib: u64,
}

impl Usage {
    fn now() -> Self {
        Self {
            fds: fd_count(),
            rss_kib: rss_kib(),
        }
    }
}

/// What the soak measured around the kill phase.
struct Measured {
    /// At the start, before the kill phase, after it (calls drained).
    usage: [Usage; 3],
    kills: KillPhase,
    children_connected: usize,
}

/// The report: the calls' fates, the kill phase, and what was left after shutdown (measured
/// now).
fn report(a: &Args, t: &Tally, m: &Measured) -> Value {
    let left = children();
    let in_flight = &m.kills.in_flight_at_kill;
    let max_in_flight = in_flight.iter().copied().max().unwrap_or(0);
    let mean_in_flight = in_flight.iter().sum::<u64>() as f64 / in_flight.len().max(1) as f64;
    let answered = t.ok.get()
        + t.wrong.get()
        + t.exited.get()
        + t.unavailable.get()
        + t.timed_out.get()
        + t.other_error.get();
    let [start, before, after] = m.usage;
    json!({
        "kills": a.kills,
        "restarts": m.kills.restarts,
        "kill_phase_secs": m.kills.secs,
        "inflight_slots": a.inflight,
        "calls_in_flight_at_kill": {"mean": mean_in_flight, "max": max_in_flight},
        "calls_issued": t.issued.get(),
        "calls_answered": answered,
        "answered_ok": t.ok.get(),
        "answered_wrong_text": t.wrong.get(),
        "answered_error": {
            "server_exited": t.exited.get(),
            "server_unavailable": t.unavailable.get(),
            "timeout": t.timed_out.get(),
            "other": t.other_error.get(),
        },
        "calls_lost": t.lost.get(),
        "fds": {"start": start.fds, "before": before.fds, "after": after.fds, "after_shutdown": fd_count()},
        "rss_kib": {"start": start.rss_kib, "before": before.rss_kib, "after": after.rss_kib, "after_shutdown": rss_kib()},
        "children_while_connected": m.children_connected,
        "children_left_after_shutdown": left.len(),
        "zombies_left": left.iter().filter(|(_, zombie)| *zombie).count(),
        "live_process_groups_after_shutdown": harness9_actors::server::live_group_count(),
    })
}

/// The soak: calls in flight from every slot while the server is killed again and again;
/// then shutdown, and the report.
async fn soak(a: &Args) -> Result<Value, String> {
    let start = Usage::now();
    let mut rt = start_runtime(a);
    let pid = connected(&mut rt.status, None).await?;
    let tally = Rc::new(Tally::default());
    let stop = Rc::new(Cell::new(false));
    let mut slots = Vec::new();
    for n in 0..a.inflight {
        slots.push(actix_rt::spawn(slot(
            rt.registry.clone(),
            tally.clone(),
            stop.clone(),
            n,
            a.call_timeout,
        )));
    }
    // Warm up: the calls reach a steady state before the baseline is taken.
    answers(&tally, a.inflight as u64 * 4, "warm-up").await?;
    let before = Usage::now();
    let kills = kill_phase(a, &tally, &mut rt.status, pid).await?;
    // Let the last server answer a round of calls, then stop and drain.
    answers(&tally, a.inflight as u64, "after the last kill").await?;
    stop.set(true);
    for s in slots {
        let _ = s.await;
    }
    let after = Usage::now();
    let children_connected = children().len();
    shut_down(rt).await;
    let measured = Measured {
        usage: [start, before, after],
        kills,
        children_connected,
    };
    Ok(report(a, &tally, &measured))
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp-soak: {e}");
            std::process::exit(2);
        }
    };
    let sys = System::new();
    let res = sys.block_on(async { soak(&args).await });
    match res {
        Ok(report) => {
            let lost = report["calls_lost"].as_u64().unwrap_or(0);
            let left = report["children_left_after_shutdown"].as_u64().unwrap_or(0);
            let wrong = report["answered_wrong_text"].as_u64().unwrap_or(0);
            eprintln!(
                "mcp-soak: {} kills, {} calls issued, {} answered ({} ok), {} lost; fds {} -> {}, RSS {} -> {} KiB; {} children left",
                report["kills"], report["calls_issued"], report["calls_answered"], report["answered_ok"],
                lost, report["fds"]["before"], report["fds"]["after"], report["rss_kib"]["before"],
                report["rss_kib"]["after"], left
            );
            println!("{report}");
            if lost > 0 || left > 0 || wrong > 0 {
                eprintln!("mcp-soak: FAILED: {lost} calls lost, {wrong} wrong answers, {left} children left");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("mcp-soak: {e}");
            std::process::exit(1);
        }
    }
}
