#!/usr/bin/env bash
# Self-test for scripted_model.py: starts it on a free port, drives both provider endpoints
# (streaming and not) with curl, checks the answers, the SSE framing and the record file.
# Usage: bash tests/python/scripted_model_selftest.sh   (prints PASS/FAIL lines, exit 0 = all pass)
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
SERVER="$HERE/scripted_model.py"
TMP="$(mktemp -d)"
PID=""
FAILS=0
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; FAILS=$((FAILS + 1)); }
check() { # check NAME FILE PATTERN... : every extended-regex pattern must occur in FILE
  local name="$1" file="$2"; shift 2
  for pat in "$@"; do grep -Eq -- "$pat" "$file" || { fail "$name (missing /$pat/)"; sed 's/^/    | /' "$file" | head -20; return; }; done
  pass "$name"
}
sse_json() { # every `data:` line parses as JSON (except [DONE]); prints the data count
  python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    if line.startswith("data: ") and line.strip() != "data: [DONE]":
        json.loads(line[6:]); n += 1
assert n > 0, "no data lines"
print(n)' "$1"
}

cat >"$TMP/script.json" <<'EOF'
{"api_key": "sk-test",
 "steps": [
  {"text": "Hello from the scripted model.", "usage": {"input_tokens": 42, "output_tokens": 7}},
  {"text": "Hello from the scripted model."},
  {"text": "Let me echo that for you.", "tool_calls": [{"id": "toolu_1", "name": "mcp__everything__echo", "input": {"message": "ping pong \"quoted\""}}]},
  {"text": "Let me echo that for you.", "tool_calls": [{"id": "call_1", "name": "mcp__everything__echo", "input": {"message": "ping pong \"quoted\""}}]},
  {"tool_calls": [{"id": "toolu_2", "name": "mcp__everything__add", "input": {"a": 1, "b": 2}}]},
  {"tool_calls": [{"id": "call_2", "name": "mcp__everything__add", "input": {"a": 1, "b": 2}}]},
  {"text": "The echo said pong.", "expect": {"last_tool_result_contains": "pong"}},
  {"text": "unreachable", "expect": {"last_tool_result_contains": "no such text"}},
  {"status": 429, "retry_after": 3},
  {"status": 429, "error_message": "slow down"},
  {"text": "stalling here, the client will hang up before this ends", "stall_ms": 3000},
  {"status": 529, "delay_ms": 300}
 ]}
EOF

python3 "$SERVER" --script "$TMP/script.json" --record "$TMP/record.jsonl" --port 0 >"$TMP/stdout" 2>"$TMP/stderr" &
PID=$!
for _ in $(seq 50); do grep -q listening "$TMP/stdout" 2>/dev/null && break; sleep 0.1; done
BASE="$(sed -n 's/^listening on //p' "$TMP/stdout")"
[ -n "$BASE" ] && [ "$(wc -l <"$TMP/stdout")" -eq 1 ] && pass "prints one listening line: $BASE" || { fail "no listening line"; cat "$TMP/stderr"; exit 1; }

A=(-H "x-api-key: sk-test" -H "anthropic-version: 2023-06-01" -H "content-type: application/json")
O=(-H "Authorization: Bearer sk-test" -H "content-type: application/json")
ant() { curl -sN "${A[@]}" "$BASE/v1/messages" -d "$1"; }
oai() { curl -sN "${O[@]}" "$BASE/v1/chat/completions" -d "$1"; }
AMSG='"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hi"}]'
OMSG='"model":"gpt-test","messages":[{"role":"user","content":"hi"}]'

curl -s "$BASE/health" >"$TMP/h"; check "GET /health" "$TMP/h" '^ok$'
curl -s -o "$TMP/nf" -w '\n%{http_code}\n' "$BASE/v1/nope" >>"$TMP/nf"; check "unknown path 404" "$TMP/nf" '"not_found_error"' '^404$'

# step 0/1: plain text, non-streaming
ant "{$AMSG}" >"$TMP/a0"
check "anthropic text json" "$TMP/a0" '"type": "message"' '"model": "claude-test"' '"content": \[\{"type": "text", "text": "Hello from the scripted model."\}\]' \
  '"stop_reason": "end_turn"' '"stop_sequence": null' '"input_tokens": 42' '"output_tokens": 7'
oai "{$OMSG}" >"$TMP/o1"
check "openai text json" "$TMP/o1" '"object": "chat.completion"' '"content": "Hello from the scripted model."' '"finish_reason": "stop"' \
  '"total_tokens": 15' '"created": [0-9]+'
grep -q tool_calls "$TMP/o1" && fail "openai text json omits tool_calls" || pass "openai text json omits tool_calls"

# step 2: anthropic streaming with text + tool call; verbose to see the framing
curl -sNv "${A[@]}" "$BASE/v1/messages" -d "{$AMSG,\"stream\":true}" >"$TMP/a2" 2>"$TMP/a2.v"
check "anthropic stream is chunked SSE" "$TMP/a2.v" '[Tt]ransfer-[Ee]ncoding: chunked' '[Cc]ontent-[Tt]ype: text/event-stream'
check "anthropic stream events" "$TMP/a2" '^event: message_start$' '^event: ping$' '"content_block": \{"type": "text", "text": ""\}' \
  '"type": "text_delta"' '"content_block": \{"type": "tool_use", "id": "toolu_1", "name": "mcp__everything__echo", "input": \{\}\}' \
  '"type": "input_json_delta"' '^event: content_block_stop$' '"stop_reason": "tool_use"' '^event: message_stop$'
N=$(sse_json "$TMP/a2") && pass "anthropic stream: all $N data lines are JSON" || fail "anthropic stream data lines are JSON"
python3 - "$TMP/a2" <<'EOF' && pass "anthropic stream reassembles text and tool input" || fail "anthropic stream reassembly"
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
text = "".join(e["delta"]["text"] for e in ev if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")
js = "".join(e["delta"]["partial_json"] for e in ev if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta")
assert text == "Let me echo that for you.", text
assert json.loads(js) == {"message": 'ping pong "quoted"'}, js
assert [e["type"] for e in ev][:2] == ["message_start", "ping"] and ev[-1]["type"] == "message_stop"
EOF

# step 3: openai streaming with text + tool call + include_usage
curl -sNv "${O[@]}" "$BASE/v1/chat/completions" -d "{$OMSG,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" >"$TMP/o3" 2>"$TMP/o3.v"
check "openai stream is chunked SSE" "$TMP/o3.v" '[Tt]ransfer-[Ee]ncoding: chunked' '[Cc]ontent-[Tt]ype: text/event-stream'
check "openai stream chunks" "$TMP/o3" '"object": "chat.completion.chunk"' '"role": "assistant"' '"id": "call_1", "type": "function", "function": \{"name": "mcp__everything__echo", "arguments": ""\}' \
  '"finish_reason": "tool_calls"' '"choices": \[\], .*"prompt_tokens": 10' '^data: \[DONE\]$'
N=$(sse_json "$TMP/o3") && pass "openai stream: all $N data lines are JSON" || fail "openai stream data lines are JSON"
python3 - "$TMP/o3" <<'EOF' && pass "openai stream reassembles text and arguments" || fail "openai stream reassembly"
import json, sys
ch = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
deltas = [c["choices"][0]["delta"] for c in ch if c["choices"]]
text = "".join(d.get("content") or "" for d in deltas)
args = "".join(t["function"]["arguments"] for d in deltas for t in d.get("tool_calls", []))
assert text == "Let me echo that for you.", text
assert json.loads(args) == {"message": 'ping pong "quoted"'}, args
assert deltas[0]["role"] == "assistant" and deltas[-1] == {} and ch[-2]["choices"][0]["finish_reason"] == "tool_calls"
assert ch[-1]["choices"] == [] and ch[-1]["usage"]["total_tokens"] == 15
EOF

# step 4/5: tool call only, non-streaming
ant "{$AMSG}" >"$TMP/a4"
check "anthropic tool json" "$TMP/a4" '"content": \[\{"type": "tool_use", "id": "toolu_2", "name": "mcp__everything__add", "input": \{"a": 1, "b": 2\}\}\]' '"stop_reason": "tool_use"'
oai "{$OMSG}" >"$TMP/o5"
check "openai tool json" "$TMP/o5" '"content": null' '"tool_calls": \[\{"id": "call_2", "type": "function", "function": \{"name": "mcp__everything__add", "arguments": "\{\\"a\\": 1, \\"b\\": 2\}"\}\}\]' '"finish_reason": "tool_calls"'

# step 6/7: expectations on the last tool result
TR='"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"e","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ping pong"}]}]}]'
ant "{\"model\":\"m\",\"max_tokens\":9,\"stream\":true,$TR}" >"$TMP/a6"
check "expectation met" "$TMP/a6" 'The echo' '^event: message_stop$'
curl -s -o "$TMP/a7" -w '\n%{http_code}\n' "${A[@]}" "$BASE/v1/messages" -d "{\"model\":\"m\",\"max_tokens\":9,$TR}" >>"$TMP/a7"
check "expectation failed -> 400" "$TMP/a7" '"invalid_request_error"' 'expectation failed: step 7' "ping pong" '^400$'

# step 8/9: 429 with retry-after, in both formats
curl -s -D "$TMP/a8.h" -o "$TMP/a8" "${A[@]}" "$BASE/v1/messages" -d "{$AMSG}"
check "anthropic 429 headers" "$TMP/a8.h" '^HTTP/1.1 429' '^retry-after: 3'
check "anthropic 429 body" "$TMP/a8" '^\{"type": "error", "error": \{"type": "rate_limit_error", "message": "rate limit exceeded"\}\}$'
curl -s -D "$TMP/o9.h" -o "$TMP/o9" "${O[@]}" "$BASE/v1/chat/completions" -d "{$OMSG,\"stream\":true}"
check "openai 429" "$TMP/o9.h" '^HTTP/1.1 429'
check "openai 429 body" "$TMP/o9" '"message": "slow down", "type": "rate_limit_exceeded", "param": null, "code": "rate_limit_exceeded"'

# 401 via api_key mismatch / missing header: no step consumed
curl -s -o "$TMP/k1" -w '\n%{http_code}\n' -H "x-api-key: wrong" -H "anthropic-version: 2023-06-01" "$BASE/v1/messages" -d "{$AMSG}" >>"$TMP/k1"
check "anthropic wrong key 401" "$TMP/k1" '"authentication_error"' '^401$'
curl -s -o "$TMP/k2" -w '\n%{http_code}\n' -H "Authorization: Bearer sk-wrong" "$BASE/v1/chat/completions" -d "{$OMSG}" >>"$TMP/k2"
check "openai wrong key 401" "$TMP/k2" '"code": "invalid_api_key"' '^401$'
curl -s -o "$TMP/k3" -w '\n%{http_code}\n' "$BASE/v1/chat/completions" -d "{$OMSG}" >>"$TMP/k3"
check "openai missing key 401" "$TMP/k3" '"invalid_api_key"' '^401$'

# step 10: stall mid-stream, the client hangs up; the server must survive
curl -sN --max-time 1 "${A[@]}" "$BASE/v1/messages" -d "{$AMSG,\"stream\":true}" >"$TMP/a10"
check "stall: first delta arrives, then nothing" "$TMP/a10" '"text": "stalling"'
grep -q message_stop "$TMP/a10" && fail "stall: stream should not have finished" || pass "stall: stream cut by client"

# step 11: 529 after delay_ms
T0=$(date +%s%N); curl -s -o "$TMP/a11" -w '\n%{http_code}\n' "${A[@]}" "$BASE/v1/messages" -d "{$AMSG}" >>"$TMP/a11"; T1=$(date +%s%N)
check "529 overloaded" "$TMP/a11" '"overloaded_error"' '^529$'
[ $(( (T1 - T0) / 1000000 )) -ge 290 ] && pass "delay_ms honoured ($(( (T1 - T0) / 1000000 )) ms)" || fail "delay_ms not honoured"

# exhausted, both formats
curl -s -o "$TMP/x1" -w '\n%{http_code}\n' "${A[@]}" "$BASE/v1/messages" -d "{$AMSG}" >>"$TMP/x1"
check "anthropic exhausted 500" "$TMP/x1" '"api_error", "message": "script exhausted after 12 steps"' '^500$'
curl -s -o "$TMP/x2" -w '\n%{http_code}\n' "${O[@]}" "$BASE/v1/chat/completions" -d "{$OMSG,\"stream\":true}" >>"$TMP/x2"
check "openai exhausted 500" "$TMP/x2" '"type": "server_error"' 'script exhausted after 12 steps' '^500$'
sleep 2.5  # let the stalled handler wake, write to the closed socket and give up
curl -s "$BASE/health" >"$TMP/h2"; check "server alive after hang-up" "$TMP/h2" '^ok$'

# record file
python3 - "$TMP/record.jsonl" <<'EOF' && pass "record file: one line per request, steps and headers" || fail "record file"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ns = [r["n"] for r in recs]
assert ns == [None, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, None, None, None, 10, 11, None, None], ns
assert recs[1]["path"] == "/v1/messages" and recs[1]["headers"]["x-api-key"] == "sk-test"
assert recs[1]["body"]["model"] == "claude-test" and recs[4]["body"]["stream_options"] == {"include_usage": True}
assert recs[7]["body"]["messages"][2]["content"][0]["type"] == "tool_result"
assert all(isinstance(r["ts"], float) for r in recs) and recs[-1]["ts"] >= recs[0]["ts"]
EOF
grep -q Traceback "$TMP/stderr" && { fail "no tracebacks on stderr"; cat "$TMP/stderr"; } || pass "no tracebacks on stderr ($(wc -l <"$TMP/stderr") log lines)"

# clean exit on SIGTERM
kill -TERM "$PID"; wait "$PID"; RC=$?; PID=""
[ "$RC" -eq 0 ] && pass "SIGTERM exits 0" || fail "SIGTERM exit code $RC"

# script errors exit 2 naming the file and the problem
echo '{"steps": [{"txt": "typo"}]}' >"$TMP/bad.json"
python3 "$SERVER" --script "$TMP/bad.json" 2>"$TMP/bad.err"; RC=$?
[ "$RC" -eq 2 ] && grep -q "bad.json: steps\[0\]: unknown key 'txt'" "$TMP/bad.err" && pass "unknown key exits 2: $(cat "$TMP/bad.err")" || fail "unknown key: rc=$RC $(cat "$TMP/bad.err")"
echo '{"steps": [' >"$TMP/bad2.json"
python3 "$SERVER" --script "$TMP/bad2.json" 2>"$TMP/bad2.err"; RC=$?
[ "$RC" -eq 2 ] && grep -q "bad2.json: " "$TMP/bad2.err" && pass "bad JSON exits 2: $(cat "$TMP/bad2.err")" || fail "bad JSON: rc=$RC $(cat "$TMP/bad2.err")"

[ "$FAILS" -eq 0 ] && echo "ALL PASS" || echo "$FAILS FAILED"
[ "$FAILS" -eq 0 ]
