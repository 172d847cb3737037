#!/usr/bin/env bash
# The test command: installs the pinned test servers and collector, builds the fixture server, runs every test,
# and closes with one summary line over all test binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --collector
cargo build --workspace --bins
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace "$@" 2>&1 | tee "$log" || status=$?
passed=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | awk '{s+=$1} END {print s+0}')
echo "tests: $passed passed, $failed failed"
exit "$status"
