"""A 2026-07-28-only MCP server over stdio (stdlib only) whose `server/discover` answer comes late.

Stands for a stateless-era server on a loaded machine: `server/discover` is answered after
--discover-delay MS; `initialize` is refused (-32601: this server has no handshake); every
other request is answered (`tools/list`: one `echo` tool; `tools/call`: the echoed text).
Every JSON-RPC message received is appended, one JSON line each, to --record FILE, so a test
can check what a slow 2026 server was sent.
"""

import argparse
import json
import sys
import threading
import time

LOCK = threading.Lock()


def send(msg):
    with LOCK:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def answer(msg, delay):
    method, mid = msg.get("method"), msg.get("id")
    if mid is None or method is None:
        return
    if method == "server/discover":
        time.sleep(delay)
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow-discover", "version": "1"}, "resultType": "complete"}})
    elif method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "error": {
            "code": -32601, "message": "Method not found: initialize (2026-07-28 only)"}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{
            "name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}],
            "resultType": "complete"}})
    elif method == "tools/call":
        text = ((msg.get("params") or {}).get("arguments") or {}).get("text", "")
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}],
                                                      "resultType": "complete"}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--discover-delay", type=int, default=0, help="milliseconds")
    ap.add_argument("--record", required=True)
    args = ap.parse_args()
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        with LOCK, open(args.record, "a") as f:
            f.write(json.dumps(msg) + "\n")
        # Each request on its own thread: a slow discover does not hold the others.
        threading.Thread(target=answer, args=(msg, args.discover_delay / 1000), daemon=True).start()


if __name__ == "__main__":
    main()
