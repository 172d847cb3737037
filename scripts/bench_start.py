#!/usr/bin/env python3
"""What a dead collector and a slow server cost a headless run (a measurement, not a test).

Two tables, each row the median (and max) of N runs of the real binary:

 1. `harness9 mcp call fx echo` (the fixture server) with telemetry off, and with traces and
    metrics exported over OTLP (`OTEL_TRACES_EXPORTER=otlp`, `OTEL_METRICS_EXPORTER=otlp`) to
    `OTEL_EXPORTER_OTLP_ENDPOINT` = a refused port (a port bound, then closed), and a silent
    port (a socket that accepts and never answers). Wall time from spawn to exit.
 2. Two `run -p` in a row against tests/python/scripted_model.py, each pair with a fresh
    tool-list cache, a fast server `fx` and a server `slow` that reads nothing for 5 s
    (`--start-delay-ms 5000`), with `--startup-wait` W (default 1 s: a run that ends before the
    slow server is up). For each run: the time from spawn to the model's first request (its
    record's `ts`), whether that request carried both servers' tools, and the wall time to exit.

Usage: scripts/bench_start.py [--runs N] [--startup-wait W] [--bin PATH]
(default 5 runs; target/debug/harness9 and target/debug/fixture-server, built with
`cargo build --workspace --bins` when missing).
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from bench_startup import records, start_model  # the scripted model, as bench_startup.py runs it

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DROP = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
        "HARNESS9_PROVIDER", "HARNESS9_MODEL", "HARNESS9_STARTUP_WAIT", "XDG_CONFIG_HOME",
        "RUST_LOG", "OTEL_SDK_DISABLED")


def environment(project, extra):
    env = {k: v for k, v in os.environ.items() if k not in DROP and not k.startswith("OTEL_")}
    env.update({
        "HOME": os.path.join(project, "home"),
        "HARNESS9_SESSIONS": os.path.join(project, "sessions"),
        "HARNESS9_APPROVALS": os.path.join(project, "approvals.json"),
        "HARNESS9_TOOL_CACHE": os.path.join(project, "tool-cache"),
    })
    env.update(extra)
    return env


def refused_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def silent_port():
    """A listener that accepts every connection and never answers (kept open until exit)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    held = []

    def accept():
        while True:
            try:
                c, _ = s.accept()
            except OSError:
                return
            held.append(c)

    threading.Thread(target=accept, daemon=True).start()
    return s.getsockname()[1], s


def timed(cmd, cwd, env):
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return (time.monotonic() - t0) * 1000.0, p


def fmt(ms):
    return f"{statistics.median(ms):7.0f} ms (max {max(ms):6.0f})"


def bench_call(binary, fixture, work, runs):
    project = os.path.join(work, "call")
    os.makedirs(os.path.join(project, "home"))
    with open(os.path.join(project, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {"fx": {"command": fixture, "args": []}}}, f)
    port, keep = silent_port()
    otlp = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_METRICS_EXPORTER": "otlp"}
    cases = [
        ("telemetry off", {}),
        ("OTLP to a refused port", dict(otlp, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{refused_port()}")),
        ("OTLP to a silent port", dict(otlp, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")),
    ]
    cmd = [binary, "--approve-project", "mcp", "call", "fx", "echo", "--args", '{"text":"hi"}']
    print(f"mcp call fx echo, {runs} runs each: wall time, median (max)")
    for name, extra in cases:
        ms = []
        for _ in range(runs):
            t, p = timed(cmd, project, environment(project, extra))
            if p.returncode != 0:
                sys.exit(f"mcp call exited {p.returncode} ({name}): {p.stderr}")
            ms.append(t)
        print(f"  {name:<26} {fmt(ms)}")
    keep.close()


def one_run(binary, project, url, record, wait):
    """`run -p hi`: (ms to the first request, both servers' tools in it, ms to exit)."""
    before = len(records(record))
    env = environment(project, {"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": url})
    t0 = time.time()
    ms, p = timed([binary, "--approve-project", "run", "-p", "hi", "--startup-wait", str(wait)],
                  project, env)
    if p.returncode != 0:
        sys.exit(f"run -p exited {p.returncode} in {project}: {p.stderr}")
    first = records(record)[before]
    names = [t.get("name", "") for t in first["body"].get("tools", [])]
    both = any(n.startswith("mcp__fx__") for n in names) and any(
        n.startswith("mcp__slow__") for n in names)
    return (first["ts"] - t0) * 1000.0, both, ms


def bench_warm(binary, fixture, work, runs, wait):
    model, url, record = start_model(work, 2 * runs + 2)
    try:
        rows = {"first": [], "second": []}
        for r in range(runs):
            project = os.path.join(work, f"warm-{r}")
            os.makedirs(os.path.join(project, "home"))
            with open(os.path.join(project, ".mcp.json"), "w") as f:
                json.dump({"mcpServers": {
                    "fx": {"command": fixture, "args": []},
                    "slow": {"command": fixture, "args": ["--start-delay-ms", "5000"],
                             "startupTimeoutSec": 30},
                }}, f)
            rows["first"].append(one_run(binary, project, url, record, wait))
            rows["second"].append(one_run(binary, project, url, record, wait))
        print(f"run -p twice (fresh cache each pair; `slow` starts in 5 s; --startup-wait {wait}), "
              f"{runs} pairs: median (max)")
        for name, rs in rows.items():
            present = sum(1 for r in rs if r[1])
            print(f"  {name:<7} run: first model request at {fmt([r[0] for r in rs])}, "
                  f"every server's tools in it {present}/{len(rs)}, exit at {fmt([r[2] for r in rs])}")
    finally:
        model.terminate()
        model.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--startup-wait", type=float, default=1.0)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/debug/harness9"))
    ap.add_argument("--fixture", default=os.path.join(ROOT, "target/debug/fixture-server"))
    args = ap.parse_args()
    if not (os.path.exists(args.bin) and os.path.exists(args.fixture)):
        subprocess.run(["cargo", "build", "-q", "--workspace", "--bins"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="h9-bench-start-")
    try:
        bench_call(args.bin, args.fixture, work, args.runs)
        bench_warm(args.bin, args.fixture, work, args.runs, args.startup_wait)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
