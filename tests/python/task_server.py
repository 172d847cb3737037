"""A 2026-07-28 MCP server with the Tasks extension (SEP-2663), stdlib only, over stdio or HTTP.

Modes (--mode):
  ok         tool `slow` ({"ms": N, "text": T}) answers with a task that is `working` for N ms
             (its status message counts the polls), then `completed` with "done: T"
  input      tool `ask` answers with a task that turns `input_required` (an elicitation for a
             `name`) and completes with "hello NAME" 0.5 s after `tasks/update` answers it
  hostile    tool `slow` answers with a task that stays `working` forever, pollIntervalMs 0,
             a new 200 KB status message on every poll
  handshake  a 2025-11-25 server (initialize, no discover) whose `tools/call` still answers
             with a task (it must not: the client did not declare the extension); with
             --old-form the task is in the 2025-11-25 form (`{"task": {...}}`), never asked for
Every mode refuses a `tasks/*` request or a task-creating call whose `_meta` does not declare
`io.modelcontextprotocol/tasks` with -32021, as FastMCP's extension does.

--state DIR keeps every task in DIR/<id>.json, so another process of this server (a later
`harness9 mcp tasks get`) sees it; --record FILE appends every message received (over HTTP
with its Mcp-Name header) as a JSON line; --http PORT serves Streamable HTTP (JSON replies)
on 127.0.0.1 and prints `READY <port>`.
"""

import argparse
import json
import os
import sys
import threading
import time
import uuid

TASKS = "io.modelcontextprotocol/tasks"
LOCK = threading.Lock()
ARGS = None
MEM = {}


def record(msg, name_header=None):
    if not ARGS.record:
        return
    with LOCK, open(ARGS.record, "a") as f:
        f.write(json.dumps({"msg": msg, "mcpName": name_header}) + "\n")


def load(tid):
    if ARGS.state:
        path = os.path.join(ARGS.state, tid + ".json")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)
    return MEM.get(tid)


def save(t):
    if ARGS.state:
        path = os.path.join(ARGS.state, t["id"] + ".json")
        with open(path + ".tmp", "w") as f:
            json.dump(t, f)
        os.replace(path + ".tmp", path)
    else:
        MEM[t["id"]] = t


def declared(params):
    caps = ((params or {}).get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
    return TASKS in (caps.get("extensions") or {})


def missing():
    return {"code": -32021, "message": "Missing required client capability",
            "data": {"requiredCapabilities": {"extensions": {TASKS: {}}}}}


def view(t):
    """The task as tasks/get shows it now."""
    now = time.time()
    base = {"taskId": t["id"], "createdAt": "2026-12-07T10:00:00Z",
            "lastUpdatedAt": "2026-12-07T10:00:00Z", "ttlMs": t.get("ttl"),
            "pollIntervalMs": t.get("poll", 100)}
    t["polls"] = t.get("polls", 0) + 1
    if t.get("cancelled"):
        return dict(base, status="cancelled", statusMessage="cancelled by the client")
    if ARGS.mode == "hostile":
        return dict(base, status="working", pollIntervalMs=0,
                    statusMessage=("poll %d " % t["polls"]) + "x" * 200_000)
    if ARGS.mode == "input":
        # The answer takes effect 0.5 s after `tasks/update` (eventually consistent): polls
        # meanwhile repeat the same request, which must not be answered twice.
        if t.get("name") is not None and now - t["answered"] >= 0.5:
            return dict(base, status="completed",
                        result={"content": [{"type": "text", "text": "hello " + t["name"]}]})
        if now - t["created"] < 0.3:
            return dict(base, status="working", statusMessage="thinking")
        return dict(base, status="input_required", statusMessage="waiting for a name",
                    inputRequests={"name": {"method": "elicitation/create", "params": {
                        "mode": "form", "message": "Your name?",
                        "requestedSchema": {"type": "object", "properties": {
                            "name": {"type": "string"}}, "required": ["name"]}}}})
    if now - t["created"] < t["ms"] / 1000:
        return dict(base, status="working", statusMessage="step %d" % t["polls"])
    return dict(base, status="completed", statusMessage="finished",
                result={"content": [{"type": "text", "text": "done: " + t["text"]}]})


def create(params):
    args = params.get("arguments") or {}
    t = {"id": "task-" + uuid.uuid4().hex, "created": time.time(),
         "ms": int(args.get("ms", 500)), "text": str(args.get("text", "")),
         "ttl": 600_000, "poll": 100}
    save(t)
    out = view(t)
    save(t)
    out["resultType"] = "task"
    out["status"] = "working"
    out.pop("result", None)
    return out


TOOLS = [
    {"name": "slow", "inputSchema": {"type": "object", "properties": {
        "ms": {"type": "integer"}, "text": {"type": "string"}}},
     "execution": {"taskSupport": "required"}},
    {"name": "ask", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
]


def answer(msg, name_header=None):
    """The reply to one message (None for a notification)."""
    record(msg, name_header)
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mid is None or method is None:
        return None
    ok = lambda result: {"jsonrpc": "2.0", "id": mid, "result": result}
    err = lambda e: {"jsonrpc": "2.0", "id": mid, "error": e}
    if ARGS.mode == "handshake":
        if method == "initialize":
            return ok({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "task-handshake", "version": "1"}})
        if method == "server/discover":
            return err({"code": -32601, "message": "Method not found"})
        if method == "tools/list":
            return ok({"tools": TOOLS})
        if method == "tools/call":
            if ARGS.old_form:
                t = create(params)
                return ok({"task": {"taskId": t["taskId"], "status": "working",
                                    "createdAt": "2026-12-07T10:00:00Z", "ttl": 60000}})
            return ok(create(params))
        return ok({})
    if method == "server/discover":
        return ok({"supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                   "serverInfo": {"name": "task-fixture", "version": "1"}, "resultType": "complete"})
    if method == "initialize":
        return err({"code": -32601, "message": "Method not found: initialize (2026-07-28 only)"})
    if method == "tools/list":
        return ok({"tools": TOOLS, "resultType": "complete"})
    if method.startswith("tasks/") and not declared(params):
        return err(missing())
    if method == "tools/call":
        if not declared(params):
            return err(missing())
        return ok(create(params))
    if method in ("tasks/get", "tasks/update", "tasks/cancel"):
        t = load(str(params.get("taskId")))
        if t is None:
            return err({"code": -32602, "message": "Failed to retrieve task: Task not found"})
        if method == "tasks/get":
            out = view(t)
            save(t)
            out["resultType"] = "complete"
            return ok(out)
        if method == "tasks/update":
            resp = (params.get("inputResponses") or {}).get("name") or {}
            if resp.get("action") == "accept":
                t["name"] = str((resp.get("content") or {}).get("name", ""))
            else:
                t["name"] = "(declined)"
            t["answered"] = time.time()
            save(t)
            return ok({"resultType": "complete"})
        t["cancelled"] = True
        save(t)
        return ok({"resultType": "complete"})
    return err({"code": -32601, "message": "Method not found: " + method})


def stdio():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        reply = answer(msg)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


def http(port):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                msg = json.loads(body)
            except ValueError:
                self.send_response(400)
                self.end_headers()
                return
            reply = answer(msg, self.headers.get("Mcp-Name"))
            if reply is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_DELETE = do_GET

    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    print("READY %d" % port, flush=True)
    srv.serve_forever()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="ok")
    p.add_argument("--state")
    p.add_argument("--record")
    p.add_argument("--http", type=int)
    p.add_argument("--old-form", action="store_true")
    ARGS = p.parse_args()
    if ARGS.http:
        http(ARGS.http)
    else:
        stdio()


if __name__ == "__main__":
    main()
