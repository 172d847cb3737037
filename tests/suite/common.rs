//! Shared test harness: server specs for the pinned reference servers and the fixture, an actix
//! system per test with a hard timeout, and event-driven waits on status.
//!
//! Every wait in the suite is bounded (`output_within`, `wait_within`, `tool_output` for
//! tmux and pgrep, `wait_for_progress`, socket read timeouts). Time is asserted by the order of
//! events or by causality, never by a whole run's wall clock (that is for the benchmarks).

#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness9::app::Runtime;
use harness9_actors::messages::{ServerStatus, ShutdownAll, StatusSnapshot};
use harness9_actors::{RestartPolicy, ServerSpec, TransportSpec};

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn must_exist(p: PathBuf, what: &str) -> PathBuf {
    assert!(
        p.exists(),
        "{what} not found at {}: run scripts/setup.sh (or scripts/test.sh) first",
        p.display()
    );
    p
}

/// `@modelcontextprotocol/server-everything` over stdio, as installed by scripts/setup.sh.
pub fn everything(name: &str) -> ServerSpec {
    let js = must_exist(
        repo().join("tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "server-everything",
    );
    ServerSpec::stdio(name, "node", vec![js.display().to_string(), "stdio".into()])
}

/// The PyPI `mcp` server in tests/python/server.py.
pub fn python(name: &str) -> ServerSpec {
    let py = must_exist(repo().join(".deps/venv/bin/python"), "the test venv");
    ServerSpec::stdio(
        name,
        py.display().to_string(),
        vec![repo().join("tests/python/server.py").display().to_string()],
    )
}

/// The fixture server binary (built by `cargo build --workspace --bins`).
pub fn fixture_bin() -> PathBuf {
    // target/debug/deps/tests-xxxx -> target/debug/fixture-server
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    must_exist(
        dir.join("fixture-server"),
        "the fixture server (cargo build -p fixture-server)",
    )
}

/// The fixture server with flags.
pub fn fixture(name: &str, args: &[&str]) -> ServerSpec {
    let mut s = ServerSpec::stdio(
        name,
        fixture_bin().display().to_string(),
        args.iter().map(|a| a.to_string()).collect(),
    );
    s.shutdown_grace = Duration::from_millis(300);
    s
}

/// Adds an env var to a stdio spec.
pub fn with_env(mut s: ServerSpec, k: &str, v: &str) -> ServerSpec {
    if let TransportSpec::Stdio { env, .. } = &mut s.transport {
        env.push((k.into(), v.into()));
    }
    s
}

/// A fast restart policy for tests: 50 ms doubling to 400 ms, breaker at 5 exits in 60 s.
pub fn fast_policy() -> RestartPolicy {
    RestartPolicy {
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(400),
        max_exits: 5,
        window: Duration::from_secs(60),
    }
}

/// Runs `f` on a fresh actix system, failing the test after `limit`.
pub fn run<F, Fut>(limit: Duration, f: F) -> Fut::Output
where
    F: FnOnce() -> Fut,
    Fut: Future,
{
    let sys = actix::System::new();
    let out = sys.block_on(async move { tokio::time::timeout(limit, f()).await });
    match out {
        Ok(v) => v,
        Err(_) => panic!("test did not finish within {limit:?}"),
    }
}

/// Starts a runtime for `specs`.
pub fn start(specs: Vec<ServerSpec>, policy: RestartPolicy) -> Runtime {
    Runtime::start(specs, None, policy)
}

/// Waits (on status events) until `server`'s status satisfies `pred`; panics after `bound`.
pub async fn wait_for(
    rt: &Runtime,
    server: &str,
    bound: Duration,
    pred: impl Fn(&ServerStatus) -> bool,
) -> ServerStatus {
    let mut rx = rt.status.clone();
    let fut = rx.wait_for(|s| s.get(server).is_some_and(|st| pred(&st.status)));
    let got = match tokio::time::timeout(bound, fut).await {
        Ok(Ok(snap)) => Some(snap[server].status.clone()),
        _ => None,
    };
    match got {
        Some(s) => s,
        None => panic!(
            "server {server:?} did not reach the expected status within {bound:?}; now: {:?}",
            rt.status.borrow().get(server).map(|s| &s.status)
        ),
    }
}

/// Waits until `server` is connected.
pub async fn connected(rt: &Runtime, server: &str, bound: Duration) -> ServerStatus {
    wait_for(rt, server, bound, |s| {
        matches!(s, ServerStatus::Connected { .. })
    })
    .await
}

/// The pid of a connected server.
pub fn pid_of(status: &ServerStatus) -> i32 {
    match status {
        ServerStatus::Connected { info, .. } => info.pid.expect("stdio pid") as i32,
        other => panic!("not connected: {other:?}"),
    }
}

/// Whether any process of group `pgid` is alive.
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::killpg(pgid, 0) == 0 }
}

/// Stops everything and checks no child process is left.
pub async fn shutdown(rt: Runtime, pgids: &[i32]) {
    rt.supervisor
        .send(ShutdownAll::default())
        .await
        .expect("supervisor alive");
    for &p in pgids {
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(p) {
            assert!(
                Instant::now() < deadline,
                "process group {p} still alive after shutdown"
            );
            // Reaping is asynchronous; poll a bounded number of times.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The current snapshot.
pub fn snapshot(rt: &Runtime) -> StatusSnapshot {
    Arc::clone(&rt.status.borrow())
}

/// A unique temp path for this test.
pub fn temp_path(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("harness9-test-{}-{tag}-{n}", std::process::id()));
    // An earlier run whose process had the same id (ids are reused) left this path: its files
    // (a scripted model's request record, appended to) must not leak into this test.
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
    path
}

/// Calls `name` and returns its text rendering (panics on a call error).
pub async fn call_text(rt: &Runtime, name: &str, args: serde_json::Value) -> String {
    harness9_actors::ToolRegistry::call(&rt.registry, name, Some(args), None)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .text()
}

/// The calls every transport must pass against the PyPI `mcp` server named `server`.
pub async fn python_calls(rt: &Runtime, server: &str) {
    let multiply = format!("mcp__{server}__multiply");
    assert_eq!(
        call_text(rt, &multiply, serde_json::json!({"a": 6, "b": 7})).await,
        "42"
    );
    let greet = format!("mcp__{server}__greet");
    assert_eq!(
        call_text(rt, &greet, serde_json::json!({"name": "ada"})).await,
        "hello, ada"
    );
}

/// A stdio spec as its `.mcp.json` entry (`command` and `args`).
pub fn stdio_json(spec: ServerSpec) -> serde_json::Value {
    let TransportSpec::Stdio { command, args, .. } = spec.transport else {
        unreachable!("a stdio spec")
    };
    serde_json::json!({ "command": command, "args": args })
}

/// Polls `done` every `every` until it holds (true) or `bound` passes (false): for state that
/// other processes change (files, /proc), where no event can be awaited.
pub fn poll_until(bound: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + bound;
    while !done() {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(every);
    }
    true
}

/// Environment that would carry this machine's model or log settings into a test's binary.
pub const USER_ENV: [&str; 8] = [
    "XDG_CONFIG_HOME",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "HARNESS9_PROVIDER",
    "HARNESS9_MODEL",
    "RUST_LOG",
];

/// Takes [`USER_ENV`] out of `cmd`'s environment.
pub fn without_user_env(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for k in USER_ENV {
        cmd.env_remove(k);
    }
    cmd
}

/// The `harness9` binary in `dir`, its project's `.mcp.json` trusted (`--approve-project`,
/// approvals kept in the dir).
pub fn harness9_in(dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
    c.arg("--approve-project")
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        // `run -p` waits for every server (tests check the first request's tools).
        .env("HARNESS9_STARTUP_WAIT", "60")
        // Conversations are saved in the test's dir, never the user's state dir.
        .env("HARNESS9_SESSIONS", dir.join("sessions"))
        // Tool lists are cached in the test's dir: a test starts cold.
        .env("HARNESS9_TOOL_CACHE", dir.join("tool-cache"))
        .current_dir(dir);
    c
}

/// Runs `cmd` to its end with `stdin` (or none) and its output captured; it is killed after
/// `limit`, so a hung binary fails its test instead of hanging it.
pub fn output_within(
    mut cmd: std::process::Command,
    stdin: Option<&str>,
    limit: Duration,
) -> std::process::Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn harness9");
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes()).expect("write stdin");
    }
    // Pipes are read on threads that report over channels, and the exit is polled: every
    // step is bounded, even if a descendant keeps a pipe open after harness9 is gone.
    let pipe = |r: Option<Box<dyn std::io::Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            let _ = tx.send(buf);
        });
        rx
    };
    let out_rx = pipe(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let err_rx = pipe(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let end = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
            // Hung: killed (the test then fails on its exit status and output).
            Ok(None) => {
                let _ = child.kill();
                break child.wait().expect("wait for the killed harness9");
            }
            Err(e) => panic!("cannot wait for harness9: {e}"),
        }
    };
    let drained = Duration::from_secs(10);
    std::process::Output {
        status,
        stdout: out_rx.recv_timeout(drained).unwrap_or_default(),
        stderr: err_rx.recv_timeout(drained).unwrap_or_default(),
    }
}

/// Reads `child`'s stderr until a `[mcp] progress` line (the call is in flight), then keeps
/// draining it in the background so the child never blocks on a full pipe. Bounded: after 60 s
/// without one the child is killed and the test fails.
pub fn wait_for_progress(child: &mut std::process::Child) {
    use std::io::BufRead as _;
    const LIMIT: Duration = Duration::from_secs(60);
    let stderr = std::io::BufReader::new(child.stderr.take().expect("stderr piped"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut lines = stderr.lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if line.contains("[mcp] progress") {
                let _ = tx.send(Ok(()));
                // Keep draining so the child never blocks on a full pipe.
                for _ in lines {}
                return;
            }
            seen.push(line);
        }
        let _ = tx.send(Err(seen.join("\n")));
    });
    match rx.recv_timeout(LIMIT) {
        Ok(Ok(())) => {}
        Ok(Err(seen)) => panic!("harness9 ended before any progress:\n{seen}"),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no `[mcp] progress` line within {LIMIT:?}");
        }
    }
}

/// Waits for `child` to exit, at most `limit`; past it the child is killed and the test fails.
pub fn wait_within(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("process {} did not exit within {limit:?}", child.id());
            }
            Err(e) => panic!("cannot wait for process {}: {e}", child.id()),
        }
    }
}

/// Runs a helper command (tmux, pgrep) to its end, at most 20 s; its output.
pub fn tool_output(cmd: std::process::Command) -> std::process::Output {
    output_within(cmd, None, Duration::from_secs(20))
}

/// A temp dir holding `.mcp.json` with `servers`.
pub fn project_with(tag: &str, servers: serde_json::Value) -> PathBuf {
    let dir = temp_path(tag);
    std::fs::create_dir_all(&dir).expect("create the project dir");
    let config = serde_json::json!({ "mcpServers": servers }).to_string();
    std::fs::write(dir.join(".mcp.json"), config).expect("write .mcp.json");
    dir
}

/// The names of the tools a recorded model request offered.
pub fn offered_tools(request: &serde_json::Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}
