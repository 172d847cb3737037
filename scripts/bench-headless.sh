#!/usr/bin/env bash
# How quick the headless commands are, measured side by side in one run (a measurement, not a
# test: it prints numbers and judges nothing).
#
#  1. `mcp call everything echo`: its wall time against the server's own connect time (the
#     CONNECT column of `mcp list`, `--json` `connectMs`), N rounds. What the call adds on top
#     of connecting is the call itself and the servers' shutdown after the answer.
#  2. `run -p` with one server that never answers its handshake (`sleep 1000` as a stdio
#     command, startupTimeoutSec 30): the time from launching harness9 to the first model
#     request (tests/python/scripted_model.py records it), against `--startup-wait`.
#
# Usage: scripts/bench-headless.sh [ROUNDS]      (default 5)
# Env:   HARNESS9_BIN   the binary [default: $CARGO_TARGET_DIR or target, debug/harness9;
#                       built with `cargo build --bin harness9` when missing]
#        STARTUP_WAIT   the bound for part 2, seconds [default: 2]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
wait_bound=${STARTUP_WAIT:-2}
bin=${HARNESS9_BIN:-${CARGO_TARGET_DIR:-target}/debug/harness9}
if [[ ! -x $bin ]]; then
    cargo build -q --bin harness9
fi
everything=tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
[[ -f $everything ]] || { echo "server-everything is missing: run scripts/setup.sh" >&2; exit 2; }

work=$(mktemp -d)
model_pid=
cleanup() {
    [[ -n $model_pid ]] && kill "$model_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

now() { python3 -c 'import time; print(f"{time.time():.6f}")'; }
ms() { python3 -c "import sys; print(f'{(float(sys.argv[2]) - float(sys.argv[1])) * 1000:.0f}')" "$1" "$2"; }

# No model settings or user config from this machine; the config is given with --config
# (trusted: no approval needed).
h9() {
    env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u HARNESS9_PROVIDER -u HARNESS9_MODEL \
        -u ANTHROPIC_BASE_URL -u OPENAI_BASE_URL -u HARNESS9_STARTUP_WAIT \
        XDG_CONFIG_HOME="$work/xdg" HOME="$work" "$bin" "$@"
}

cat > "$work/everything.json" <<EOF
{"mcpServers": {"everything": {"command": "node", "args": ["$PWD/$everything", "stdio"]}}}
EOF

echo "harness9 headless timing ($(uname -sr), $(nproc) cores, $bin)"
echo
echo "1. mcp call everything echo: wall time vs. the server's connect time"
printf '%-6s %14s %12s %10s\n' round "connect (ms)" "call (ms)" "extra (ms)"
extras=()
for i in $(seq 1 "$rounds"); do
    connect=$(h9 --config "$work/everything.json" mcp list --json \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)[0]["connectMs"]))')
    t0=$(now)
    h9 --config "$work/everything.json" mcp call everything echo --args '{"message":"hi"}' >/dev/null
    t1=$(now)
    call=$(ms "$t0" "$t1")
    extras+=($((call - connect)))
    printf '%-6s %14s %12s %10s\n' "$i" "$connect" "$call" "$((call - connect))"
done
sorted=$(printf '%s\n' "${extras[@]}" | sort -n)
median=$(echo "$sorted" | sed -n "$(((rounds + 1) / 2))p")
echo "median extra over connecting: ${median} ms (the goal: at most 500 ms)"

echo
echo "2. run -p with a server that never answers: first model request vs. --startup-wait ${wait_bound}s"
echo '{"steps": [{"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}, {"text": "done"}]}' > "$work/script.json"
python3 tests/python/scripted_model.py --script "$work/script.json" --record "$work/record.jsonl" \
    > "$work/model.out" 2> "$work/model.err" &
model_pid=$!
for _ in $(seq 1 100); do
    grep -q '^listening on ' "$work/model.out" 2>/dev/null && break
    sleep 0.05
done
url=$(sed -n 's/^listening on //p' "$work/model.out")
[[ -n $url ]] || { echo "the scripted model did not start" >&2; cat "$work/model.err" >&2; exit 1; }
cat > "$work/hang.json" <<EOF
{"mcpServers": {"hang": {"command": "sleep", "args": ["1000"], "startupTimeoutSec": 30}}}
EOF
printf '%-6s %22s %14s %12s\n' round "first request (ms)" "bound (ms)" "total (ms)"
for i in $(seq 1 "$rounds"); do
    : > "$work/record.jsonl"
    t0=$(now)
    env -u OPENAI_API_KEY -u HARNESS9_PROVIDER -u HARNESS9_MODEL -u OPENAI_BASE_URL \
        XDG_CONFIG_HOME="$work/xdg" HOME="$work" ANTHROPIC_API_KEY=bench ANTHROPIC_BASE_URL="$url" \
        "$bin" --config "$work/hang.json" run -p "say done" --startup-wait "$wait_bound" \
        >/dev/null 2>"$work/run.err" || true
    t1=$(now)
    first=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["ts"])' "$work/record.jsonl")
    printf '%-6s %22s %14s %12s\n' "$i" "$(ms "$t0" "$first")" "$(ms 0 "$wait_bound")" "$(ms "$t0" "$t1")"
done
