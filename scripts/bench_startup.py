#!/usr/bin/env python3
"""Start to first model request, cold vs warm tool-list cache (a measurement, not a test).

`harness9 run -p` against tests/python/scripted_model.py with 16 stdio servers (the fixture
server, each with `--tools N` synthetic tools besides its 21 own), one of which reads nothing for
5 s (`--start-delay-ms 5000`, startupTimeoutSec 30). For each round:

  cold  a fresh cache directory: the first request waits for the servers, bounded by
        `--startup-wait` (default 5 s, counted from harness9's start), and the slow server's
        tools are missing from it;
  warm  the cache `mcp list` then wrote (it waits for every server, the slow one too): every
        server's tools come from the cache and the first request waits for none of them.

Reported per case: the time from spawning harness9 to the scripted model receiving its first
request (its record's `ts`), the tools that request carried, and harness9's peak RSS
(`wait4`'s ru_maxrss, its own process). Median and max over the rounds.

Usage: scripts/bench_startup.py [--rounds N] [--tools-per-server N] [--bin PATH]
(default 5 rounds, 10 tools per server, target/debug/harness9 and target/debug/fixture-server,
built with `cargo build --workspace --bins` when missing).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_model(work, steps):
    script = os.path.join(work, "script.json")
    with open(script, "w") as f:
        json.dump({"steps": [{"text": "ok"}] * steps}, f)
    record = os.path.join(work, "record.jsonl")
    model = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tests/python/scripted_model.py"),
         "--script", script, "--record", record, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = model.stdout.readline().strip()
    if not line.startswith("listening on "):
        sys.exit(f"the scripted model said {line!r}")
    return model, line[len("listening on "):], record


def records(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]
    except FileNotFoundError:
        return []


def environment(project, cache, url):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
                        "OPENAI_BASE_URL", "HARNESS9_PROVIDER", "HARNESS9_MODEL",
                        "HARNESS9_STARTUP_WAIT", "XDG_CONFIG_HOME", "RUST_LOG")}
    env.update({
        "HOME": os.path.join(project, "home"),
        "ANTHROPIC_API_KEY": "bench",
        "ANTHROPIC_BASE_URL": url,
        "HARNESS9_TOOL_CACHE": cache,
        "HARNESS9_SESSIONS": os.path.join(project, "sessions"),
        "HARNESS9_APPROVALS": os.path.join(project, "approvals.json"),
    })
    return env


def prime(binary, project, cache, url):
    """`mcp list` waits for every server (the slow one too), so each list is cached."""
    subprocess.run([binary, "--approve-project", "mcp", "list"], cwd=project,
                   env=environment(project, cache, url), stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def one_run(binary, project, cache, url, record):
    """Spawns `run -p`; returns (ms to the first request, tools in it, peak RSS KiB)."""
    before = len(records(record))
    env = environment(project, cache, url)
    t0 = time.time()
    p = subprocess.Popen([binary, "--approve-project", "run", "-p", "hi"], cwd=project, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"harness9 exited {p.returncode} in {project}")
    new = records(record)[before:]
    first = new[0]
    tools = len(first["body"].get("tools", []))
    return (first["ts"] - t0) * 1000.0, tools, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tools-per-server", type=int, default=10)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/debug/harness9"))
    args = ap.parse_args()
    fixture = os.path.join(os.path.dirname(args.bin), "fixture-server")
    if not (os.path.exists(args.bin) and os.path.exists(fixture)):
        subprocess.run(["cargo", "build", "-q", "--workspace", "--bins"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="h9-bench-startup-")
    model = None
    try:
        project = os.path.join(work, "project")
        os.makedirs(os.path.join(project, "home"))
        servers = {}
        for i in range(16):
            a = ["--tools", str(args.tools_per_server)]
            if i == 0:
                a += ["--start-delay-ms", "5000"]
            servers[f"s{i:02}"] = {"command": fixture, "args": a + ["--pad-bytes", str(i)],
                                   "startupTimeoutSec": 30}
        with open(os.path.join(project, ".mcp.json"), "w") as f:
            json.dump({"mcpServers": servers}, f)
        model, url, record = start_model(work, 2 * args.rounds + 2)
        cold, warm = [], []
        for r in range(args.rounds):
            cache = os.path.join(work, f"cache-{r}")
            cold.append(one_run(args.bin, project, cache, url, record))
            prime(args.bin, project, cache, url)
            warm.append(one_run(args.bin, project, cache, url, record))
        for name, runs in (("cold", cold), ("warm", warm)):
            ms = [r[0] for r in runs]
            tools = sorted({r[1] for r in runs})
            rss = [r[2] for r in runs]
            print(f"{name}: first request after median {statistics.median(ms):.0f} ms "
                  f"(max {max(ms):.0f} ms) with {tools} tools; "
                  f"peak RSS median {statistics.median(rss) / 1024:.1f} MiB "
                  f"(max {max(rss) / 1024:.1f} MiB), {len(runs)} runs")
    finally:
        if model:
            model.terminate()
            model.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
