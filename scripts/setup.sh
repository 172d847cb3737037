#!/usr/bin/env bash
# Installs what the tests need, at pinned versions, inside the checkout:
#   tests/npm/node_modules  npm @modelcontextprotocol/server-everything (tests/npm/package-lock.json)
#   .deps/venv              PyPI mcp==2.3.0 and its pinned dependencies (tests/python/requirements.txt)
# Idempotent: a second run with nothing changed does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { echo "setup: $1 is required ($2)" >&2; exit 1; }; }
need node "Node.js 18 or newer, for the reference server"
need npm "npm, for the reference server"
need python3 "Python 3.10 or newer, for the PyPI mcp test server"

stamp=tests/npm/node_modules/.harness9-installed
if [ ! -f "$stamp" ] || [ tests/npm/package-lock.json -nt "$stamp" ]; then
  echo "setup: npm ci (tests/npm)"
  (cd tests/npm && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi

pystamp=.deps/venv/.harness9-installed
if [ ! -f "$pystamp" ] || [ tests/python/requirements.txt -nt "$pystamp" ]; then
  echo "setup: python venv (.deps/venv)"
  python3 -m venv .deps/venv
  .deps/venv/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
  touch "$pystamp"
fi
echo "setup: test servers ready"
