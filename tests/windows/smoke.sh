#!/usr/bin/env bash
# The smoke suite of the real harness9.exe under Wine, run by scripts/windows-run.sh (which sets
# WINE, WINEPREFIX, HARNESS9_EXE and NODE_EXE and owns the prefix). Each check drives harness9.exe
# through the commands, flags and config a Windows user has, against real servers run by the
# Windows node.exe: server-everything (tests/npm, installed by scripts/setup.sh) and
# tests/windows/tree-server.js (a grandchild, a crash mid-call). Each check prints what it proves
# under Wine and what Wine cannot prove. Every wait is bounded.
set -euo pipefail
cd "$(dirname "$0")/../.."
checkout="$(pwd)"

: "${WINE:?set by scripts/windows-run.sh}" "${WINEPREFIX:?}" "${HARNESS9_EXE:?}" "${NODE_EXE:?}"
everything_js="$checkout/tests/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ ! -f "$everything_js" ]]; then
    scripts/setup.sh
fi

# The Windows path of a Linux one: C: is the prefix's drive_c, Z: the Linux root.
winpath() {
    local p="$1"
    case "$p" in
    "$WINEPREFIX/drive_c/"*) p="C:/${p#"$WINEPREFIX/drive_c/"}" ;;
    *) p="Z:$p" ;;
    esac
    printf '%s' "${p//\//\\}"
}
# A JSON string of a Windows path.
jstr() {
    python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"
}

# A folder with a space on drive C:, holding node.exe, the tree server and its .cmd shim.
work="$WINEPREFIX/drive_c/h9 smoke"
rm -rf "$work"
mkdir -p "$work/node dir" "$work/bin" "$work/state"
cp "$NODE_EXE" "$work/node dir/node.exe"
cp tests/windows/tree-server.js "$work/"
node_w="$(winpath "$work/node dir/node.exe")"
tree_w="$(winpath "$work/tree-server.js")"
printf '@"%s" "%s" %%*\r\n' "$node_w" "$tree_w" >"$work/bin/tree-shim.cmd"
# harness9.exe's PATH: Wine's own folders, then this one (Wine adds WINEPATH to the PATH it
# gives Windows programs); the shim is found there as `tree-shim` through PATHEXT's .CMD.
export WINEPATH="$(winpath "$work/bin")"
pidfile="$work/grandchild.pid"
export TREE_PIDFILE="$(winpath "$pidfile")"

config="$work/mcp.json"
cat >"$config" <<EOF
{ "mcpServers": {
    "everything": { "command": $(jstr "$node_w"), "args": [$(jstr "$(winpath "$everything_js")"), "stdio"],
                    "startupTimeoutSec": 120 },
    "tree": { "command": "tree-shim", "env": { "TREE_PIDFILE": $(jstr "$TREE_PIDFILE") },
              "protocolVersion": "2025-11-25", "startupTimeoutSec": 120 } } }
EOF
config_w="$(winpath "$config")"

passed=0
fail() {
    echo "smoke: FAILED: $*" >&2
    for f in "$work"/*.out "$work"/*.err; do
        [[ -f "$f" ]] || continue
        echo "--- $f" >&2
        tail -n 30 "$f" >&2
    done
    exit 1
}
# check NAME PROVES CANNOT: prints what the check proves and what Wine cannot.
check() {
    passed=$((passed + 1))
    printf 'smoke: ok %s\n    proves under Wine: %s\n    Wine cannot prove: %s\n' "$1" "$2" "$3"
}
# Runs harness9.exe with ARGS; stdout and stderr to $work/NAME.out/.err (files: a Linux pipe is
# not a handle every Windows program can use). Returns its exit code.
h9() {
    local name="$1"
    shift
    local status=0
    timeout 300 "$WINE" "$HARNESS9_EXE" "$@" </dev/null >"$work/$name.out" 2>"$work/$name.err" || status=$?
    return "$status"
}
# Whether the Windows process PID is alive, asked of Windows itself (OpenProcess, by node.exe).
alive() {
    timeout 120 "$WINE" "$work/node dir/node.exe" -e \
        "try { process.kill($1, 0); require('fs').writeSync(1, 'alive') } catch (e) { require('fs').writeSync(1, e.code) }" \
        </dev/null >"$work/alive.txt" 2>&1 || true
    [[ "$(tr -d '\r' <"$work/alive.txt")" == alive ]]
}

# 1. mcp list: both servers connect, one by a full path with spaces and a drive letter, one by
# a .cmd shim on PATH.
h9 list --config "$config_w" mcp list || fail "mcp list exited $?"
grep -q 'everything' "$work/list.out" && grep -q 'tree' "$work/list.out" || fail "mcp list did not show both servers"
if grep -qiE 'failed|error' "$work/list.out"; then fail "mcp list shows a failed server"; fi
check "mcp list" \
    "harness9.exe connects stdio servers through real Windows pipes (CreateProcess, the Job Object, the output thread), the config and its Windows paths parsed" \
    "nothing more here; Windows' own console host and its code pages are Wine's"
check "full path with spaces and a drive letter" \
    "\"command\": $(jstr "$node_w") is taken as written and started (server-everything answers)" \
    "NTFS's short-name (8.3) aliases, which Wine does not make"
check ".cmd shim on PATH with PATHEXT" \
    "\"command\": \"tree-shim\" is found as tree-shim.cmd on PATH through PATHEXT and run through %SystemRoot%\\System32\\cmd.exe with its quoting (the tree server answers)" \
    "Wine's cmd.exe is not Microsoft's: the quoting rules are unit-tested against Microsoft's documented parsing (actors/platform/src/command/tests.rs)"

# 2. mcp get.
h9 get --config "$config_w" mcp get everything || fail "mcp get exited $?"
grep -q 'echo' "$work/get.out" || fail "mcp get everything did not list the echo tool"
check "mcp get" "harness9.exe lists a Windows server's tools with their schemas" "nothing Windows-specific beyond mcp list's"

# 3. mcp call, with a private trace file.
trace="$work/state/trace.jsonl"
h9 call --config "$config_w" --trace "$(winpath "$trace")" mcp call everything echo --args '{"message": "hi from wine"}' ||
    fail "mcp call exited $?"
grep -q 'hi from wine' "$work/call.out" || fail "mcp call did not print the echo"
check "mcp call" "a tool call to server-everything under node.exe, answered over the job's pipes" "nothing Windows-specific beyond mcp list's"

# 4. The private file: the trace's DACL, as Wine keeps it (the user.wine.sd attribute of the
# Linux file, and the Linux mode Wine derives from the DACL).
[[ -s "$trace" ]] || fail "no trace file at $trace"
plain="$work/state/plain.txt"
timeout 120 "$WINE" "$work/node dir/node.exe" -e "require('fs').writeFileSync(process.argv[1], 'plain')" \
    "$(winpath "$plain")" </dev/null >/dev/null 2>&1 || true
[[ -f "$plain" ]] || fail "node.exe made no plain file to compare the trace's mode with"
python3 tests/windows/dacl.py "$trace" "$plain" >"$work/dacl.out" || fail "the trace file's DACL is not the user's alone"
cat "$work/dacl.out"
check "private file with the user-only DACL" \
    "--trace FILE gets its DACL through the open handle (ReOpenFile, SetSecurityInfo succeed under Wine, which maps the DACL onto the file's mode: it differs from a plain file's); with a Wine that stores descriptors (Wine-Staging's user.wine.sd) the entries are read back: protected, one, full access for the owner" \
    "Wine's ACLs are not NTFS's: upstream Wine keeps no ACL, only a coarse mode, and has one user; the DACL itself (D:P(A;;FA;;;SID), parsed by the system: protected, one full-access entry for the process's user) is a unit test of harness9-platform run under Wine, its effect on another user is Windows' to enforce"

# 5. A planted reparse point: a symlink where the trace goes is refused, never written through.
# Wine 8 reports a Linux symlink to a folder as a reparse point (FILE_ATTRIBUTE_REPARSE_POINT),
# but a symlink to a file as the file itself, and its `mklink` makes nothing: the planted link
# is a Linux symlink to a folder.
elsewhere="$work/elsewhere"
mkdir -p "$elsewhere"
link="$work/state/planted.jsonl"
ln -s "$elsewhere" "$link"
status=0
h9 planted --config "$config_w" --trace "$(winpath "$link")" mcp call everything echo --args '{"message": "x"}' || status=$?
[[ $status != 0 ]] || fail "mcp call --trace through a symlink succeeded"
grep -q 'is a symlink; refusing to write through it' "$work/planted.err" || fail "no refusal naming the symlink"
[[ -z "$(ls -A "$elsewhere")" ]] || fail "something was written through the planted symlink into $elsewhere"
check "planted reparse point refused" \
    "a reparse point planted where a private file goes is never written through and is refused with a clear error naming it (opened with FILE_FLAG_OPEN_REPARSE_POINT; a link to a folder cannot be opened for writing, and the failed open is recognised by the path's own attributes instead of saying \"Access denied\")" \
    "a symlink to a file, a junction or an NTFS symlink made by mklink: Wine 8 shows a Linux symlink to a file as the file and its mklink makes nothing (those refusals are Windows' own FILE_FLAG_OPEN_REPARSE_POINT semantics, the same code path)"

# 6. A server's tree ends when the server is stopped: the tree server starts a grandchild
# (node.exe in node.exe, under cmd.exe), and mcp call stops the server when it is done.
rm -f "$pidfile"
h9 spawn --config "$config_w" mcp call tree spawn --args '{}' || fail "mcp call tree spawn exited $?"
grep -q 'alive' "$work/spawn.out" || fail "the tree server's grandchild was not alive when it answered"
gpid="$(tr -dc 0-9 <"$pidfile")"
[[ -n "$gpid" ]] || fail "the tree server wrote no grandchild pid"
if alive "$gpid"; then fail "grandchild $gpid outlived its stopped server"; fi
check "the tree ends when its server is stopped" \
    "the grandchild (cmd.exe > node.exe > node.exe, each started inside the server's Job Object) is gone once harness9 stopped the server (the job terminated and closed)" \
    "nothing more; Wine implements Job Objects in its wineserver"

# 7. The tree ends when harness9 itself is killed: the tree server starts a grandchild and holds
# the call; harness9.exe is killed (SIGKILL to its Wine process: no exit path of its own runs).
rm -f "$pidfile"
"$WINE" "$HARNESS9_EXE" --config "$config_w" mcp call tree spawn --args '{"hold": true}' </dev/null \
    >"$work/held.out" 2>"$work/held.err" &
h9pid=$!
for _ in $(seq 1 600); do
    [[ -s "$pidfile" ]] && break
    kill -0 "$h9pid" 2>/dev/null || fail "harness9.exe exited before the grandchild started"
    sleep 0.2
done
gpid="$(tr -dc 0-9 <"$pidfile" 2>/dev/null)" || true
[[ -n "$gpid" ]] || { kill -KILL "$h9pid" 2>/dev/null; fail "no grandchild within 120 s"; }
alive "$gpid" || { kill -KILL "$h9pid" 2>/dev/null; fail "grandchild $gpid was not alive while harness9 held the call"; }
kill -KILL "$h9pid"
wait "$h9pid" 2>/dev/null || true
gone=0
for _ in $(seq 1 30); do
    if ! alive "$gpid"; then
        gone=1
        break
    fi
done
[[ $gone == 1 ]] || fail "grandchild $gpid outlived the killed harness9.exe"
# The next check starts the same programs again: wait until Wine has ended every process of the
# killed tree (the shim's cmd.exe and the server's node.exe too, not only the grandchild), as
# the Linux processes Wine runs them in. Once, a server started right after this check exited
# at its start with cmd.exe's 9009 while Wine was still tearing the old tree down.
tree_left() {
    grep -lsaE 'tree-s(hi|er)|harness9\.exe' /proc/[0-9]*/cmdline >/dev/null 2>&1
}
for _ in $(seq 1 300); do
    tree_left || break
    sleep 0.1
done
tree_left && fail "processes of the killed tree were still running 30 s after harness9.exe's kill"
check "the tree ends when harness9 is killed" \
    "harness9.exe killed outright, the system closes its handles, the last one of the job with them, and kill-on-close ends the grandchild (alive before the kill, gone after)" \
    "a logoff or a closed console window (CTRL_CLOSE_EVENT): Wine has no interactive session here; the console events' handler (signal/windows.rs) is type-checked only"

# 8. A server killed mid-call is restarted by the supervisor: a headless run whose model (the
# scripted model) calls tree's crash (the server exits before answering), then echo, which the
# restarted server answers. The echo comes 3 s after the crash, past the supervisor's first
# backoff (0.5 s): the server is then starting again, and a call waits for a starting server.
script="$work/script.json"
cat >"$script" <<'EOF'
{"steps": [
  {"tool_calls": [{"id": "t1", "name": "mcp__tree__crash", "input": {}}]},
  {"tool_calls": [{"id": "t2", "name": "mcp__tree__echo", "input": {"text": "after the restart"}}],
   "expect": {"last_tool_result_contains": "exited with status 1 while tool \"crash\" was running"},
   "delay_ms": 3000},
  {"text": "restarted", "expect": {"last_tool_result_contains": "echo: after the restart"}}
]}
EOF
model_log="$work/model.err"
coproc MODEL { exec python3 tests/python/scripted_model.py --script "$script" --port 0 2>"$model_log"; }
model_pid=$MODEL_PID
line=""
read -r -t 20 line <&"${MODEL[0]}" || true
url="${line#listening on }"
[[ "$url" == http://* ]] || { kill "$model_pid" 2>/dev/null; fail "the scripted model did not start: '$line'"; }
status=0
export ANTHROPIC_API_KEY=test-key ANTHROPIC_BASE_URL="$url"
h9 restart --config "$config_w" run -p go --json --allowed-tools mcp__tree__crash,mcp__tree__echo || status=$?
unset ANTHROPIC_API_KEY ANTHROPIC_BASE_URL
kill "$model_pid" 2>/dev/null || true
wait "$model_pid" 2>/dev/null || true
[[ $status == 0 ]] || fail "run -p exited $status"
grep -q '"restarted"' "$work/restart.out" || fail "the run did not end with the model's last step"
check "a server killed mid-call is restarted" \
    "the server's exit during a call fails that call with the exit, the supervisor restarts it (a new cmd.exe > node.exe in a new job) and the next call is answered" \
    "nothing more"

# 9. The environment a server gets: harness9's allowlist and what Windows programs need to start,
# never the rest of harness9's environment (a variable named like a key is set for harness9).
status=0
H9_SMOKE_API_KEY=not-for-servers h9 env --config "$config_w" mcp call tree env --args '{}' || status=$?
[[ $status == 0 ]] || fail "mcp call tree env exited $status"
tr -d '\r' <"$work/env.out" >"$work/env.txt"
for name in SystemRoot PATHEXT APPDATA PATH TREE_PIDFILE; do
    grep -qix "$name" "$work/env.txt" || fail "the server's environment lacks $name"
done
if grep -qi 'H9_SMOKE_API_KEY' "$work/env.txt"; then fail "harness9's own H9_SMOKE_API_KEY reached the server"; fi
check "a server's environment is the allowlist" \
    "the server started with SystemRoot, PATHEXT, APPDATA and PATH (what Windows programs need), its entry's env (TREE_PIDFILE), and without a variable of harness9's own (H9_SMOKE_API_KEY)" \
    "nothing more (Wine adds its own WINE* variables to every process it starts, which the check ignores; Windows compares names ignoring case, and so does the check)"

# 10. No sandbox on Windows: a server whose entry asks for one is not started, and says why.
boxed="$work/boxed.json"
cat >"$boxed" <<EOF
{ "mcpServers": {
    "boxed": { "command": $(jstr "$node_w"), "args": [$(jstr "$tree_w")], "sandbox": true } } }
EOF
status=0
h9 boxed --config "$(winpath "$boxed")" mcp list || status=$?
[[ $status != 0 ]] || fail "mcp list of a sandboxed server exited 0"
cat "$work/boxed.out" "$work/boxed.err" >"$work/boxed.txt"
grep -q 'the sandbox is not available on Windows' "$work/boxed.txt" || fail "the sandboxed server's refusal does not say why"
if grep -qi 'connected' "$work/boxed.out"; then fail "the sandboxed server was started"; fi
check "a server that asks for a sandbox is not started" \
    "\"sandbox\": true on Windows fails the server with \"the sandbox is not available on Windows ...\" and mcp list exits non-zero; it never runs unconfined" \
    "nothing more: Windows has no sandbox of ours to prove"

echo "smoke: $passed checks passed under Wine"
echo "smoke: not run under Wine: the agent's shell (PowerShell is not part of Wine: its command line and encoding are unit-tested, and it is off by default on Windows), the Credential Manager (Wine's is not Windows'; the file fallback is what the trace check exercises), the console's control events from a real console"
