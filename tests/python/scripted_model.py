"""A scripted model server for harness9's engine tests (Python 3.10+, standard library only).

Speaks the Anthropic Messages API and the OpenAI Chat Completions API (streaming included)
and plays back a script of replies, standing in for the real model services.

    python3 scripted_model.py --script SCRIPT.json [--record RECORD.jsonl] [--port 0]
                              [--idle-close SECS] [--close-delimited]

Binds 127.0.0.1:PORT (0 = any free port), prints exactly one line
`listening on http://127.0.0.1:PORT` to stdout, serves until SIGTERM/SIGINT (exit 0).
A bad script (bad JSON, wrong type, unknown key) exits 2 with `FILE: problem` on stderr.
One log line per request goes to stderr.

Endpoints
  POST /v1/messages          Anthropic   (client base URL http://127.0.0.1:PORT)
  POST /v1/chat/completions  OpenAI      (client base URL http://127.0.0.1:PORT/v1)
  GET  /health               200 "ok"
  anything else              404 JSON error

Script: {"api_key": "...optional...", "steps": [STEP, ...]}
Every model request on either endpoint takes the next step (one shared, thread-safe
counter). When they run out: 500 "script exhausted after N steps" in the provider's format.
A STEP is an object; all keys optional, unknown keys are a script error:
  text            assistant text
  tool_calls      [{"id": "toolu_1", "name": "...", "input": {...}}]  (id defaults to
                  toolu_<step>_<i>, input to {}); OpenAI: function.arguments = JSON of input.
                  A call may have "raw_input": "TEXT" instead of input: exactly that text goes
                  out as the arguments (for broken or cut-off JSON, e.g. {"a": tru):
                  streamed as input_json_delta / function.arguments pieces; non-streaming as
                  OpenAI function.arguments, and as Anthropic "input": TEXT (a JSON string)
  stop_reason     default "tool_use" with tool calls, else "end_turn"; OpenAI finish_reason
                  maps end_turn/stop_sequence->stop, tool_use->tool_calls, max_tokens->length
                  (other values pass through unchanged)
  status          answer with this HTTP error status instead (400..599), in the provider's
                  error format; with optional error_message and retry_after (seconds,
                  sent as a `retry-after` header)
  delay_ms        wait before sending response headers
  stall_ms        streaming only: wait this long after the first content delta (text, or the
                  first tool-input piece when there is no text); for mid-stream cancellation
  chunk_delay_ms  pause between SSE events (default 0)
  usage           {"input_tokens": N, "output_tokens": M, "cached_tokens": C} (defaults 10 /
                  5 / 0); cached ones are part of input_tokens: Anthropic reports them as
                  cache_read_input_tokens (input_tokens = N - C), OpenAI as
                  prompt_tokens_details.cached_tokens
  expect          {"last_tool_result_contains": "s"}: the last tool result in the request
                  (Anthropic: last tool_result block of the last user message; OpenAI: last
                  role "tool" message) must contain s, else 400 "expectation failed: ..."
                  (the step is still consumed);
                  {"last_user_text_contains": "s"}: the text of the request's last user message
                  (every text block; OpenAI: its content) must contain s, the same way

Auth: Anthropic requests need an `anthropic-version` header (else 400). If the script sets
api_key, the key (Anthropic `x-api-key`, OpenAI `Authorization: Bearer KEY`) must equal it,
else 401 in the provider's format. Neither failure, nor a non-JSON body (400), nor a 404,
consumes a step.

Responses: non-streaming replies are JSON with Content-Length. `"stream": true` replies are
text/event-stream with Transfer-Encoding: chunked; with --close-delimited they are HTTP/1.1
with neither Transfer-Encoding nor Content-Length, the body running to the connection's close
(valid HTTP/1.1, as some proxies and local servers answer). Anthropic events: message_start, ping, per block
content_block_start / deltas (text in ~8-char pieces, tool input JSON in ~10-char
input_json_delta pieces) / content_block_stop, message_delta, message_stop. OpenAI: chunks
with a first {"role":"assistant"} delta, content pieces, tool_calls header then argument
pieces, a final empty delta carrying finish_reason, a usage chunk (choices: []) if
stream_options.include_usage, then `data: [DONE]`. Client hang-ups are tolerated quietly.

Record (--record): one JSON line per request received except GET /health, appended and
flushed before answering: {"n": step index or null (no step consumed / exhausted),
"path", "ts": unix float, "peer": the client's TCP port (the same port = a reused keep-alive
connection), "headers": {lowercased: value}, "body": parsed JSON (the raw text if it is not
JSON)}.
"""

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STEP_KEYS = {"text", "tool_calls", "stop_reason", "status", "error_message", "retry_after",
             "delay_ms", "stall_ms", "chunk_delay_ms", "usage", "expect"}
OPENAI_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
ANTHROPIC_ERR = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                 500: "api_error", 529: "overloaded_error"}
DEFAULT_MSG = {400: "invalid request", 401: "invalid x-api-key", 403: "permission denied",
               404: "model not found", 429: "rate limit exceeded", 500: "internal server error",
               503: "service unavailable", 529: "Overloaded"}

SCRIPT = {}
LOCK = threading.Lock()
STATE = {"next": 0}
RECORD_PATH = None
CLOSE_DELIMITED = False


class ScriptError(Exception):
    pass


def load_script(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ScriptError(str(e))
    if not isinstance(data, dict):
        raise ScriptError("top level must be an object")
    for k in data:
        if k not in ("steps", "api_key"):
            raise ScriptError(f"unknown top-level key {k!r}")
    if not isinstance(data.get("steps"), list):
        raise ScriptError("'steps' must be a list")
    if data.get("api_key") is not None and not isinstance(data["api_key"], str):
        raise ScriptError("'api_key' must be a string")
    for i, step in enumerate(data["steps"]):
        check_step(f"steps[{i}]", i, step)
    return data


def check_step(where, i, step):
    def need(cond, what):
        if not cond:
            raise ScriptError(f"{where}: {what}")

    def number(k):
        need(isinstance(step[k], (int, float)) and not isinstance(step[k], bool) and step[k] >= 0,
             f"{k!r} must be a non-negative number")

    need(isinstance(step, dict), "a step must be an object")
    for k in step:
        need(k in STEP_KEYS, f"unknown key {k!r}")
    if "text" in step:
        need(isinstance(step["text"], str), "'text' must be a string")
    if "stop_reason" in step:
        need(isinstance(step["stop_reason"], str), "'stop_reason' must be a string")
    if "error_message" in step:
        need(isinstance(step["error_message"], str), "'error_message' must be a string")
    for k in ("retry_after", "delay_ms", "stall_ms", "chunk_delay_ms"):
        if k in step:
            number(k)
    if "status" in step:
        need(isinstance(step["status"], int) and 400 <= step["status"] <= 599, "'status' must be an integer 400..599")
    else:
        need("error_message" not in step and "retry_after" not in step, "'error_message'/'retry_after' need 'status'")
    calls = step.setdefault("tool_calls", [])
    need(isinstance(calls, list), "'tool_calls' must be a list")
    for j, c in enumerate(calls):
        need(isinstance(c, dict), f"tool_calls[{j}] must be an object")
        for k in c:
            need(k in ("id", "name", "input", "raw_input"), f"tool_calls[{j}]: unknown key {k!r}")
        need(isinstance(c.get("name"), str), f"tool_calls[{j}]: 'name' must be a string")
        c.setdefault("id", f"toolu_{i}_{j}")
        need(isinstance(c["id"], str), f"tool_calls[{j}]: 'id' must be a string")
        if "raw_input" in c:
            need(isinstance(c["raw_input"], str), f"tool_calls[{j}]: 'raw_input' must be a string")
            need("input" not in c, f"tool_calls[{j}]: 'input' and 'raw_input' exclude each other")
        else:
            c.setdefault("input", {})
            need(isinstance(c["input"], dict), f"tool_calls[{j}]: 'input' must be an object")
    usage = step.setdefault("usage", {})
    need(isinstance(usage, dict), "'usage' must be an object")
    for k, v in usage.items():
        need(k in ("input_tokens", "output_tokens", "cached_tokens"), f"usage: unknown key {k!r}")
        need(isinstance(v, int) and not isinstance(v, bool), f"usage.{k} must be an integer")
    usage.setdefault("input_tokens", 10)
    usage.setdefault("output_tokens", 5)
    usage.setdefault("cached_tokens", 0)
    need(usage["cached_tokens"] <= usage["input_tokens"], "usage.cached_tokens must not exceed input_tokens")
    if "expect" in step:
        need(isinstance(step["expect"], dict), "'expect' must be an object")
        for k, v in step["expect"].items():
            need(k in ("last_tool_result_contains", "last_user_text_contains"),
                 f"expect: unknown key {k!r}")
            need(isinstance(v, str), f"expect.{k} must be a string")


def arguments(call):
    """A tool call's argument text: its raw_input as given, else the JSON of its input."""
    return call["raw_input"] if "raw_input" in call else json.dumps(call["input"])


def pieces(s, size):
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def content_text(content):
    """Text of a tool result's content: a string, or a list of {"type":"text","text":...} parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


def last_tool_result(provider, body):
    msgs = body.get("messages") if isinstance(body, dict) else None
    msgs = [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []
    if provider == "anthropic":
        users = [m for m in msgs if m.get("role") == "user"]
        blocks = users[-1].get("content") if users else None
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(blocks, list) else []
        return content_text(results[-1].get("content")) if results else None
    tools = [m for m in msgs if m.get("role") == "tool"]
    return content_text(tools[-1].get("content")) if tools else None


def last_user_text(body):
    """The text of the last user message (its text blocks joined; None without one)."""
    msgs = body.get("messages") if isinstance(body, dict) else None
    msgs = [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []
    users = [m for m in msgs if m.get("role") == "user"]
    if not users:
        return None
    content = users[-1].get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b.get("text", "") for b in content
                     if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Small writes go out at once, as real model APIs do. With Nagle on, each SSE event after
    # the first waits for the client's delayed ACK (~40 ms) once a keep-alive connection has
    # left TCP quick-ACK mode, which made every step after the first 40 ms slower.
    disable_nagle_algorithm = True
    server_version = "scripted-model/1"

    def log_request(self, code="-", size="-"):
        pass  # one line per request is written by note()

    def log_message(self, fmt, *args):
        sys.stderr.write("scripted_model: " + (fmt % args) + "\n")

    def note(self, n, outcome):
        self.log_message("%s %s step=%s -> %s", self.command, self.path, n, outcome)

    # ---------- plumbing ----------
    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def record(self, n, body):
        if not RECORD_PATH:
            return
        line = json.dumps({"n": n, "path": self.path, "ts": time.time(), "peer": self.client_address[1],
                           "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
        with LOCK, open(RECORD_PATH, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_error_body(self, provider, status, message, extra=()):
        if provider == "openai":
            kind = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
                status, "server_error" if status >= 500 else "invalid_request_error")
            code = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)
            obj = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        else:
            kind = ANTHROPIC_ERR.get(status, "api_error" if status >= 500 else "invalid_request_error")
            obj = {"type": "error", "error": {"type": kind, "message": message}}
        self.send_json(status, obj, extra)

    def chunk(self, data):
        if CLOSE_DELIMITED:
            # Unframed: the data as it is; the end is the close (nothing for the last chunk).
            if data:
                self.wfile.write(data)
                self.wfile.flush()
            return
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    # ---------- dispatch ----------
    def do_GET(self):
        self.read_body()
        if self.path == "/health":
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.not_found()

    def do_POST(self):
        try:
            self.handle_post()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
            self.log_message("%s %s: client hung up", self.command, self.path)

    do_PUT = do_DELETE = do_PATCH = do_POST

    def not_found(self):
        self.record(None, None)
        self.note(None, 404)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                       "message": f"no route for {self.command} {self.path}"}})

    def handle_post(self):
        raw = self.read_body()
        provider = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}.get(self.path.split("?")[0])
        if self.command != "POST" or provider is None:
            return self.not_found()
        try:
            body = json.loads(raw)
        except ValueError:
            self.record(None, raw.decode("utf-8", "replace"))
            self.note(None, "400 bad json")
            return self.send_error_body(provider, 400, "request body is not valid JSON")
        problem = self.auth_problem(provider)
        if problem:
            self.record(None, body)
            self.note(None, f"{problem[0]} {problem[1]}")
            return self.send_error_body(provider, *problem)
        steps = SCRIPT["steps"]
        with LOCK:
            n = STATE["next"]
            STATE["next"] += 1
        if n >= len(steps):
            self.record(None, body)
            self.note(None, "500 exhausted")
            return self.send_error_body(provider, 500, f"script exhausted after {len(steps)} steps")
        self.record(n, body)
        step = steps[n]
        time.sleep(step.get("delay_ms", 0) / 1000)
        if "status" in step:
            status = step["status"]
            extra = []
            if "retry_after" in step:
                ra = step["retry_after"]
                extra.append(("retry-after", str(int(ra)) if float(ra).is_integer() else str(ra)))
            self.note(n, status)
            return self.send_error_body(provider, status, step.get("error_message", DEFAULT_MSG.get(status, f"error {status}")), extra)
        want = step.get("expect", {}).get("last_tool_result_contains")
        if want is not None:
            got = last_tool_result(provider, body)
            if got is None or want not in got:
                msg = (f"expectation failed: step {n}: last tool result should contain {want!r}, got "
                       + ("no tool result" if got is None else repr(got[:500])))
                self.note(n, "400 expectation failed")
                return self.send_error_body(provider, 400, msg)
        want = step.get("expect", {}).get("last_user_text_contains")
        if want is not None:
            got = last_user_text(body)
            if got is None or want not in got:
                msg = (f"expectation failed: step {n}: last user text should contain {want!r}, got "
                       + ("no user message" if got is None else repr(got[:500])))
                self.note(n, "400 expectation failed")
                return self.send_error_body(provider, 400, msg)
        stream = bool(body.get("stream")) if isinstance(body, dict) else False
        model = body.get("model", "scripted-model") if isinstance(body, dict) else "scripted-model"
        self.note(n, "200 stream" if stream else 200)
        if provider == "anthropic":
            (self.anthropic_stream if stream else self.anthropic_json)(step, model)
        else:
            include_usage = stream and bool((body.get("stream_options") or {}).get("include_usage"))
            (self.openai_stream if stream else self.openai_json)(step, model, include_usage)

    def auth_problem(self, provider):
        if provider == "anthropic" and not self.headers.get("anthropic-version"):
            return 400, "anthropic-version: header is required"
        want = SCRIPT.get("api_key")
        if want is None:
            return None
        if provider == "anthropic":
            got = self.headers.get("x-api-key")
        else:
            auth = self.headers.get("Authorization", "")
            got = auth[7:] if auth.startswith("Bearer ") else None
        if got is None:
            return 401, "x-api-key header is required" if provider == "anthropic" else "missing bearer token"
        if got != want:
            return 401, "invalid x-api-key" if provider == "anthropic" else f"Incorrect API key provided: {got[:6]}..."
        return None

    # ---------- Anthropic ----------
    def stop_reason(self, step):
        return step.get("stop_reason", "tool_use" if step["tool_calls"] else "end_turn")

    def anthropic_json(self, step, model):
        content = [{"type": "text", "text": step["text"]}] if step.get("text") else []
        content += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c.get("input", c.get("raw_input"))}
                    for c in step["tool_calls"]]
        self.send_json(200, {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
                             "model": model, "content": content, "stop_reason": self.stop_reason(step),
                             "stop_sequence": None, "usage": self.anthropic_usage(step)})

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if CLOSE_DELIMITED:
            # The body runs to the close: no framing header, and the connection ends after it.
            self.close_connection = True
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    @staticmethod
    def pacer(step):
        """The pause after each streamed event: stall_ms once, after the first piece of content,
        else chunk_delay_ms."""
        delay = step.get("chunk_delay_ms", 0) / 1000
        stall = [step.get("stall_ms", 0) / 1000]

        def pause(content_delta):
            if content_delta and stall[0]:
                time.sleep(stall[0])
                stall[0] = 0
            elif delay:
                time.sleep(delay)
        return pause

    def anthropic_stream(self, step, model):
        pause = self.pacer(step)
        self.start_stream()

        def ev(name, obj, content_delta=False):
            self.chunk(f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode())
            pause(content_delta)

        usage = step["usage"]
        ev("message_start", {"type": "message_start", "message": {
            "id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": dict(self.anthropic_usage(step), output_tokens=1)}})
        ev("ping", {"type": "ping"})
        index = 0
        if step.get("text"):
            ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            for p in pieces(step["text"], 8):
                ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": p}}, True)
            ev("content_block_stop", {"type": "content_block_stop", "index": 0})
            index = 1
        for i, c in enumerate(step["tool_calls"], index):
            ev("content_block_start", {"type": "content_block_start", "index": i, "content_block":
                                       {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}})
            for p in pieces(arguments(c), 10):
                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                           "delta": {"type": "input_json_delta", "partial_json": p}}, True)
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": self.stop_reason(step), "stop_sequence": None},
                             "usage": {"output_tokens": usage["output_tokens"]}})
        ev("message_stop", {"type": "message_stop"})
        self.chunk(b"")  # the zero-size chunk: 0 CRLF CRLF

    def anthropic_usage(self, step):
        u = step["usage"]
        out = {"input_tokens": u["input_tokens"] - u["cached_tokens"], "output_tokens": u["output_tokens"]}
        if u["cached_tokens"]:
            out["cache_read_input_tokens"] = u["cached_tokens"]
        return out

    # ---------- OpenAI ----------
    def openai_usage(self, step):
        u = step["usage"]
        out = {"prompt_tokens": u["input_tokens"], "completion_tokens": u["output_tokens"],
               "total_tokens": u["input_tokens"] + u["output_tokens"]}
        if u["cached_tokens"]:
            out["prompt_tokens_details"] = {"cached_tokens": u["cached_tokens"]}
        return out

    def openai_json(self, step, model, _include_usage):
        message = {"role": "assistant", "content": step.get("text") or None}
        if step["tool_calls"]:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": arguments(c)}}
                                     for c in step["tool_calls"]]
        finish = OPENAI_FINISH.get(self.stop_reason(step), self.stop_reason(step))
        self.send_json(200, {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion",
                             "created": int(time.time()), "model": model,
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                             "usage": self.openai_usage(step)})

    def openai_stream(self, step, model, include_usage):
        pause = self.pacer(step)
        base = {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        self.start_stream()

        def send(delta, finish=None, content_delta=False, **extra):
            obj = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}], **extra)
            if include_usage and "usage" not in extra:
                obj["usage"] = None
            self.chunk(f"data: {json.dumps(obj)}\n\n".encode())
            pause(content_delta)

        text = step.get("text")
        send({"role": "assistant", "content": "" if text else None})
        if text:
            for p in pieces(text, 8):
                send({"content": p}, content_delta=True)
        for i, c in enumerate(step["tool_calls"]):
            send({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": ""}}]})
            for p in pieces(arguments(c), 10):
                send({"tool_calls": [{"index": i, "function": {"arguments": p}}]}, content_delta=True)
        send({}, OPENAI_FINISH.get(self.stop_reason(step), self.stop_reason(step)))
        if include_usage:
            self.chunk(f"data: {json.dumps(dict(base, choices=[], usage=self.openai_usage(step)))}\n\n".encode())
        self.chunk(b"data: [DONE]\n\n")
        self.chunk(b"")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            return
        super().handle_error(request, client_address)


def main():
    global SCRIPT, RECORD_PATH, CLOSE_DELIMITED
    ap = argparse.ArgumentParser(description="Scripted Anthropic/OpenAI model server for tests.")
    ap.add_argument("--script", required=True)
    ap.add_argument("--record")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--idle-close", type=float, metavar="SECS",
                    help="close a keep-alive connection idle for SECS (as real APIs do)")
    ap.add_argument("--close-delimited", action="store_true",
                    help="stream replies with neither chunked encoding nor Content-Length (to the close)")
    args = ap.parse_args()
    CLOSE_DELIMITED = args.close_delimited
    if args.idle_close:
        Handler.timeout = args.idle_close
    try:
        SCRIPT = load_script(args.script)
    except ScriptError as e:
        sys.stderr.write(f"scripted_model: {args.script}: {e}\n")
        sys.exit(2)
    RECORD_PATH = args.record

    def stop(_sig, _frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srv = Server(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()
