//! A small MCP stdio server for the Wine smoke suite (scripts/windows-run.sh), run by the Windows
//! node.exe: it starts a grandchild and can crash mid-call, which server-everything cannot.
//!
//! Tools: echo {text}; pid (its own pid); spawn {hold} (starts a grandchild node.exe that runs
//! until it is killed, writes its pid to the file TREE_PIDFILE names and answers "PID alive", or
//! with `hold` never answers); crash (exits 1 before answering, so the call in flight fails with
//! the server's exit); env (the names of the variables it was started with, one a line).
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const readline = require("readline");

const tools = [
  { name: "echo", description: "echoes text", inputSchema: { type: "object", properties: { text: { type: "string" } } } },
  { name: "pid", description: "this server's pid", inputSchema: { type: "object" } },
  {
    name: "spawn",
    description: "starts a grandchild that runs until killed",
    inputSchema: { type: "object", properties: { hold: { type: "boolean" } } },
  },
  { name: "crash", description: "exits 1 before answering", inputSchema: { type: "object" } },
  { name: "env", description: "the names of its environment variables", inputSchema: { type: "object" } },
];

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function text(id, t) {
  send({ jsonrpc: "2.0", id, result: { content: [{ type: "text", text: String(t) }] } });
}

function call(id, name, args) {
  switch (name) {
    case "echo":
      return text(id, "echo: " + (args.text || ""));
    case "pid":
      return text(id, process.pid);
    case "spawn": {
      const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
        stdio: "ignore",
      });
      if (process.env.TREE_PIDFILE) {
        fs.writeFileSync(process.env.TREE_PIDFILE, String(child.pid));
      }
      if (args.hold) {
        return undefined;
      }
      try {
        process.kill(child.pid, 0);
        return text(id, child.pid + " alive");
      } catch (e) {
        return text(id, child.pid + " " + e.code);
      }
    }
    case "env":
      return text(id, Object.keys(process.env).sort().join("\n"));
    case "crash":
      process.stderr.write("tree-server: crashing on purpose\n");
      return process.exit(1);
    default:
      return send({ jsonrpc: "2.0", id, error: { code: -32602, message: "unknown tool " + name } });
  }
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined) {
    return;
  }
  switch (msg.method) {
    case "initialize":
      return send({
        jsonrpc: "2.0",
        id: msg.id,
        result: {
          protocolVersion: (msg.params && msg.params.protocolVersion) || "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "tree-server", version: "1.0.0" },
        },
      });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: msg.id, result: { tools } });
    case "tools/call":
      return call(msg.id, msg.params.name, msg.params.arguments || {});
    case "ping":
      return send({ jsonrpc: "2.0", id: msg.id, result: {} });
    default:
      return send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "no method " + msg.method } });
  }
});
