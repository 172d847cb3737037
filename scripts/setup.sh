#!/usr/bin/env bash
# Installs what the tests need, at pinned versions, inside the checkout:
#   tests/npm/node_modules  npm @modelcontextprotocol/server-everything, server-filesystem and server (its ext/skills: tests/npm/skills_server.mjs) (tests/npm/package-lock.json)
#   .deps/venv              PyPI mcp==2.3.0 and its pinned dependencies, with the OpenTelemetry SDK
#                           and FastMCP with fastmcp-tasks (the Tasks extension tests)
#                           (tests/python/requirements.txt)
#   .deps/phoenix           with --collector only (scripts/test.sh passes it): PyPI arize-phoenix,
#                           a real OpenTelemetry collector with a UI, for the telemetry test
#                           (tests/python/phoenix-requirements.txt; about 1 minute, 860 MB)
#   tmux                    the system package, if missing (the TUI tests run harness9 in tmux)
# Idempotent: a second run with nothing changed does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { echo "setup: $1 is required ($2)" >&2; exit 1; }; }
need node "Node.js 18 or newer, for the reference server"
need npm "npm, for the reference server"
need python3 "Python 3.10 or newer, for the PyPI mcp test server"

if ! command -v tmux >/dev/null 2>&1; then
  echo "setup: installing tmux (for the TUI tests)"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
  else
    echo "setup: tmux is required for the TUI tests; install it with your package manager" >&2
    exit 1
  fi
fi

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
phxstamp=.deps/phoenix/.harness9-installed
if [ "${1:-}" = --collector ] && { [ ! -f "$phxstamp" ] || [ tests/python/phoenix-requirements.txt -nt "$phxstamp" ]; }; then
  echo "setup: python venv (.deps/phoenix)"
  python3 -m venv .deps/phoenix
  .deps/phoenix/bin/pip install --quiet --disable-pip-version-check -r tests/python/phoenix-requirements.txt
  touch "$phxstamp"
fi
echo "setup: test servers ready"
