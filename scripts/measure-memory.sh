#!/usr/bin/env bash
# Peak memory of harness9 with big tool results and a big blob, measured with /usr/bin/time -v
# (Maximum resident set size). The fixture server streams its replies, so it stays small.
#   scripts/measure-memory.sh [HARNESS9_BIN] [RESULT_MB] [BLOB_MB] [SERVERS]
# Case (a): one model step calls the fixture's `big` four times in parallel (RESULT_MB each),
# on one fixture server, or spread over SERVERS (1, 2 or 4) servers sending at the same time;
# case (b): read_mcp_resource reads a BLOB_MB blob. Both through `harness9 run -p` and the
# scripted model (tests/python/scripted_model.py).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:-$repo/target/debug/harness9}")
result_mb=${2:-250}
blob_mb=${3:-150}
servers=${4:-1}
fixture=$repo/target/debug/fixture-server
work=$(mktemp -d)
trap 'kill $model_pid 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/tmp"
bytes=$((result_mb * 1024 * 1024))
blob=$((blob_mb * 1024 * 1024))
cat > "$work/.mcp.json" <<J
{"mcpServers": {
  "f": {"command": "$fixture", "args": ["--blob-resource", "$blob"]},
  "g": {"command": "$fixture"}, "h": {"command": "$fixture"}, "i": {"command": "$fixture"}}}
J
case $servers in 4) s=(f g h i) ;; 2) s=(f f g g) ;; *) s=(f f f f) ;; esac
cat > "$work/script.json" <<J
{"steps": [
 {"tool_calls": [
   {"id": "a", "name": "mcp__${s[0]}__big", "input": {"bytes": $bytes}},
   {"id": "b", "name": "mcp__${s[1]}__big", "input": {"bytes": $bytes}},
   {"id": "c", "name": "mcp__${s[2]}__big", "input": {"bytes": $bytes}},
   {"id": "d", "name": "mcp__${s[3]}__big", "input": {"bytes": $bytes}}]},
 {"text": "done"},
 {"tool_calls": [{"id": "e", "name": "read_mcp_resource", "input": {"server": "f", "uri": "blob://big"}}]},
 {"text": "done"}
]}
J
python3 "$repo/tests/python/scripted_model.py" --script "$work/script.json" --port 0 \
  > "$work/model.out" 2> "$work/model.err" &
model_pid=$!
for _ in $(seq 100); do grep -q listening "$work/model.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/model.out")
run() {
  local label=$1
  (cd "$work" && env -i PATH="$PATH" HOME="$work/home" TMPDIR="$work/tmp" \
    HARNESS9_APPROVALS="$work/approvals.json" HARNESS9_SESSIONS="$work/sessions" \
    HARNESS9_STARTUP_WAIT=60 ANTHROPIC_API_KEY=k ANTHROPIC_BASE_URL="$url" \
    /usr/bin/time -v "$bin" --approve-project run -p go --json --permission-mode bypass > "$work/$label.out" 2> "$work/$label.err") || true
  local rss secs
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/$label.err")
  secs=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$work/$label.err")
  echo "$label: max RSS $((rss / 1024)) MB, wall $secs"
  grep -o '"event":"\(done\|error\)"[^}]*' "$work/$label.out" | head -2 || true
}
run "4x${result_mb}MB-results-on-${servers}-servers"
run "${blob_mb}MB-blob"
