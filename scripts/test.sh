#!/usr/bin/env bash
# The test command: installs the pinned test servers, builds the fixture server, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --workspace --bins
cargo test --workspace "$@"
