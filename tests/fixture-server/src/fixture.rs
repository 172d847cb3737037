//! The fixture server itself (Unix only: it forks daemons and sends signals).

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

#[derive(Default)]
struct Opts {
    tools: usize,
    page_size: Option<usize>,
    pad_bytes: usize,
    crash_after: Option<usize>,
    no_init: bool,
    garbage: bool,
    slow_ms: u64,
    ignore_eof: bool,
    list_changed_after: Option<usize>,
    server_requests: bool,
    log_messages: bool,
    record: Option<String>,
    protocol: Option<String>,
    flood: bool,
    cycle_cursors: bool,
    cycle_later: bool,
    bad_schemas: bool,
    /// Exit (status 3) on a request for a method it does not know, as some servers do.
    exit_on_unknown: bool,
    /// Never answer `server/discover` (a handshake-era server that ignores what it does not
    /// know before `initialize`).
    discover_never: bool,
    /// Before each tools/call reply: an over-long request and notification carrying its id.
    big_on_call: usize,
    /// Offer `tick://counter`, which changes after a subscribe.
    ticking: bool,
    /// Offer `ask_url` and `url_required`: URL-mode elicitation whatever the client declared.
    url_elicitation: bool,
    /// Offer `blob://big`, a blob of this many zero bytes.
    blob_bytes: Option<usize>,
    /// Sleep this long before reading anything (a server slow to start).
    start_delay_ms: u64,
    /// The `serverInfo.version` it gives (default `1.0.0`; may be empty).
    server_version: Option<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: fixture-server [--tools N] [--page-size P] [--pad-bytes B] [--crash-after N] [--no-init] \
         [--garbage] [--slow-ms MS] [--exit-at-once] [--ignore-eof] [--ignore-sigterm] \
         [--list-changed-after N] [--stderr-lines N] [--stderr-text TEXT] [--server-requests] [--log-messages] \
         [--record FILE] [--protocol V] [--flood] [--cycle-cursors] [--cycle-cursors-later] \
         [--bad-schemas] [--exit-on-unknown] [--daemonize PIDFILE] [--big-messages-on-call BYTES] \
         [--ticking-resource] [--url-elicitation] [--blob-resource BYTES] [--discover-never] \
         [--start-delay-ms MS] [--tools-file FILE] [--server-version V]"
    );
    std::process::exit(64)
}

fn parse() -> Opts {
    let mut o = Opts::default();
    let mut args = std::env::args().skip(1);
    let num =
        |v: Option<String>| -> usize { v.and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()) };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tools" => o.tools = num(args.next()),
            "--page-size" => o.page_size = Some(num(args.next()).max(1)),
            "--pad-bytes" => o.pad_bytes = num(args.next()),
            "--crash-after" => o.crash_after = Some(num(args.next())),
            "--no-init" => o.no_init = true,
            "--garbage" => o.garbage = true,
            "--slow-ms" => o.slow_ms = num(args.next()) as u64,
            "--exit-at-once" => {
                eprintln!("fatal: fixture told to exit at once");
                std::process::exit(2);
            }
            "--ignore-eof" => o.ignore_eof = true,
            "--ignore-sigterm" => {
                // SAFETY: setting a signal disposition to SIG_IGN has no preconditions.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            }
            "--list-changed-after" => o.list_changed_after = Some(num(args.next())),
            "--stderr-lines" => {
                for i in 0..num(args.next()) {
                    eprintln!("stderr line {i}");
                }
            }
            "--stderr-text" => eprintln!("{}", args.next().unwrap_or_else(|| usage())),
            "--server-requests" => o.server_requests = true,
            "--log-messages" => o.log_messages = true,
            "--ticking-resource" => o.ticking = true,
            "--url-elicitation" => o.url_elicitation = true,
            "--blob-resource" => o.blob_bytes = Some(num(args.next())),
            "--record" => o.record = Some(args.next().unwrap_or_else(|| usage())),
            "--protocol" => o.protocol = Some(args.next().unwrap_or_else(|| usage())),
            // After the first tools/list: never read stdin again, flood requests at the client.
            "--flood" => o.flood = true,
            // tools/list cursors go A, B, A, B, ... forever (500 tools a page).
            "--cycle-cursors" => o.cycle_cursors = true,
            // The same, but only for the re-list after --list-changed-after.
            "--cycle-cursors-later" => o.cycle_later = true,
            // Adds a tool whose inputSchema is a number and one nested 200 levels deep.
            "--bad-schemas" => o.bad_schemas = true,
            "--exit-on-unknown" => o.exit_on_unknown = true,
            "--start-delay-ms" => o.start_delay_ms = num(args.next()) as u64,
            "--server-version" => o.server_version = Some(args.next().unwrap_or_else(|| usage())),
            // The number of synthetic tools, read from FILE at start (missing: 0): the same
            // command line lists other tools from one run to the next.
            "--tools-file" => {
                let path = args.next().unwrap_or_else(|| usage());
                o.tools = std::fs::read_to_string(path)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .unwrap_or(0);
            }
            "--discover-never" => o.discover_never = true,
            "--daemonize" => daemonize(&args.next().unwrap_or_else(|| usage())),
            "--big-messages-on-call" => o.big_on_call = num(args.next()),
            _ => usage(),
        }
    }
    o
}

/// Double-forks a daemon the classic way: a child that calls `setsid` (a new session and
/// process group, out of ours), forks the daemon and exits; the daemon writes its pid to
/// `pidfile` (by rename, so a reader never sees it half written) and sleeps forever. Returns
/// once the pid file exists.
fn daemonize(pidfile: &str) {
    // SAFETY: fork in a single-threaded process (this runs before anything starts a thread);
    // the children only make async-signal-safe calls until they write the file or exit.
    let child = unsafe { libc::fork() };
    if child < 0 {
        eprintln!("fixture: fork failed");
        std::process::exit(70);
    }
    if child == 0 {
        // SAFETY: setsid/fork/_exit have no memory-safety preconditions.
        unsafe {
            libc::setsid();
            if libc::fork() != 0 {
                libc::_exit(0);
            }
        }
        let tmp = format!("{pidfile}.tmp");
        let written = std::fs::write(&tmp, std::process::id().to_string())
            .and_then(|_| std::fs::rename(&tmp, pidfile));
        if written.is_err() {
            // SAFETY: as above.
            unsafe { libc::_exit(71) };
        }
        // Away from the server's pipes, like a real daemon.
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            use std::os::fd::AsRawFd;
            // SAFETY: dup2 onto the standard fds has no memory-safety preconditions.
            unsafe {
                libc::dup2(null.as_raw_fd(), 0);
                libc::dup2(null.as_raw_fd(), 1);
                libc::dup2(null.as_raw_fd(), 2);
            }
        }
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let mut status = 0;
    // SAFETY: waits for the intermediate child, which exits at once.
    unsafe { libc::waitpid(child, &mut status, 0) };
    while !std::path::Path::new(pidfile).exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
}

struct Out {
    garbage: bool,
}

static OUT: Mutex<Out> = Mutex::new(Out { garbage: false });

fn send_raw(line: &str) {
    let out = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut so = std::io::stdout().lock();
    let mut write = |b: &[u8]| {
        if so.write_all(b).is_err() {
            std::process::exit(0);
        }
    };
    if out.garbage {
        write(b"fixture banner: starting up\n");
        write(b"\xff\xfe garbage \xc3\x28\n");
        write(b"{\"hello\":\"not json-rpc\"}\n");
        write(b"\n");
        write(b"[1,2\n");
    }
    write(line.as_bytes());
    write(b"\n");
    if so.flush().is_err() {
        std::process::exit(0);
    }
}

/// Writes one reply line made of `head`, `fill` repeated to `n` bytes, then `tail`, in chunks
/// (never the whole line in memory).
fn send_streamed(head: &str, fill: u8, n: usize, tail: &str) {
    let _out = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut so = std::io::stdout().lock();
    let chunk = vec![fill; 1 << 20];
    let mut left = n;
    let mut ok = so.write_all(head.as_bytes()).is_ok();
    while ok && left > 0 {
        let k = left.min(chunk.len());
        ok = so.write_all(&chunk[..k]).is_ok();
        left -= k;
    }
    ok = ok && so.write_all(tail.as_bytes()).is_ok() && so.write_all(b"\n").is_ok();
    if !ok || so.flush().is_err() {
        std::process::exit(0);
    }
}

/// Responses start exactly with `{"jsonrpc":"2.0","id":<id>,`: the client sniffs the id from
/// the first bytes of an over-long line.
fn reply(id: &Value, result: Value) {
    send_raw(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}"
    ));
}

fn error(id: &Value, code: i64, message: &str) {
    let e = json!({"code": code, "message": message});
    send_raw(&format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{e}}}"
    ));
}

fn notify(method: &str, params: Value) {
    send_raw(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string());
}

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}], "isError": false})
}

fn tool_error(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": true})
}

fn schema(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

struct State {
    opts: Opts,
    calls: usize,
    added_later: bool,
    /// `tick://counter`'s value.
    ticks: usize,
}

fn tool_list(st: &State) -> Vec<Value> {
    let mut t = vec![
        json!({"name": "echo", "description": "echo text back", "inputSchema": schema(json!({"text": {"type": "string"}}))}),
        json!({"name": "add", "description": "add two numbers", "inputSchema": schema(json!({"a": {"type": "number"}, "b": {"type": "number"}}))}),
        json!({"name": "sleep", "description": "sleep ms then answer", "inputSchema": schema(json!({"ms": {"type": "integer"}}))}),
        json!({"name": "big", "description": "a text block of `bytes` bytes", "inputSchema": schema(json!({"bytes": {"type": "integer"}}))}),
        json!({"name": "fail", "description": "always isError", "inputSchema": schema(json!({}))}),
        json!({"name": "rich", "description": "text, image, resource link, structured content", "inputSchema": schema(json!({}))}),
        json!({"name": "progress", "description": "progress notifications", "inputSchema": schema(json!({"steps": {"type": "integer"}, "gap_ms": {"type": "integer"}}))}),
        json!({"name": "exit", "description": "exit at once", "inputSchema": schema(json!({"code": {"type": "integer"}}))}),
        json!({"name": "pid", "description": "the server's pid", "inputSchema": schema(json!({}))}),
        json!({"name": "symlink", "description": "plants a symlink `link` -> `target` ({ppid} in link: the client's pid)",
               "inputSchema": schema(json!({"link": {"type": "string"}, "target": {"type": "string"}}))}),
        json!({"name": "both", "description": "a reply with both result and error (order: result-first | error-first)",
               "inputSchema": schema(json!({"order": {"type": "string"}}))}),
        json!({"name": "write", "description": "writes `text` to the file `path`",
               "inputSchema": schema(json!({"path": {"type": "string"}, "text": {"type": "string"}}))}),
        json!({"name": "connect", "description": "opens a TCP connection to `addr` (host:port)",
               "inputSchema": schema(json!({"addr": {"type": "string"}}))}),
        json!({"name": "unix_connect", "description": "connects to the unix socket at `path`",
               "inputSchema": schema(json!({"path": {"type": "string"}}))}),
        json!({"name": "udp_send", "description": "sends one UDP datagram to `addr` (host:port)",
               "inputSchema": schema(json!({"addr": {"type": "string"}}))}),
        json!({"name": "read", "description": "reads the file `path` (with `parent`: /proc/<parent pid>/<path>)",
               "inputSchema": schema(json!({"path": {"type": "string"}, "parent": {"type": "boolean"}}))}),
        json!({"name": "kill", "description": "sends signal `signal` (default SIGTERM) to `pid`",
               "inputSchema": schema(json!({"pid": {"type": "integer"}, "signal": {"type": "integer"}}))}),
        json!({"name": "env", "description": "the server's environment, one KEY=VALUE a line",
               "inputSchema": schema(json!({}))}),
        json!({"name": "remove", "description": "pretends to delete `path`",
               "inputSchema": schema(json!({"path": {"type": "string"}})),
               "annotations": {"destructiveHint": true, "readOnlyHint": false}}),
        json!({"name": "shaped", "description": "structuredContent {\"n\": n} (none when omit), declared as {n: integer}",
               "inputSchema": schema(json!({"n": {}, "omit": {"type": "boolean"}})),
               "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}),
        json!({"name": "remote_ref", "description": "an outputSchema whose $ref points at a URL",
               "inputSchema": schema(json!({})),
               "outputSchema": {"$ref": "http://127.0.0.1:9/schema.json"}}),
    ];
    for i in 0..st.opts.tools {
        t.push(
            json!({"name": format!("tool_{i:05}"), "description": format!("synthetic tool {i}"),
            "inputSchema": schema(json!({"x": {"type": "string"}}))}),
        );
    }
    if st.opts.pad_bytes > 0 {
        t.push(json!({"name": "padded", "description": "d".repeat(st.opts.pad_bytes), "inputSchema": schema(json!({}))}));
    }
    if st.opts.bad_schemas {
        t.push(
            json!({"name": "number_schema", "description": "inputSchema is 5", "inputSchema": 5}),
        );
        let mut deep = json!({});
        for _ in 0..200 {
            deep = json!({ "a": deep });
        }
        t.push(json!({"name": "deep_schema", "description": "inputSchema nested 200 levels", "inputSchema": deep}));
    }
    if st.opts.url_elicitation {
        let url = schema(json!({"url": {"type": "string"}}));
        t.push(json!({"name": "ask_url", "description": "asks the client to open `url` (URL-mode elicitation/create) and answers with the client's reply", "inputSchema": url}));
        t.push(json!({"name": "url_required", "description": "fails with -32042 naming `url` to open first", "inputSchema": url}));
    }
    if st.added_later {
        t.push(json!({"name": "added_later", "description": "appeared after list_changed", "inputSchema": schema(json!({}))}));
    }
    t
}

/// Requests as fast as the pipe takes them, ids in the server's own space; stdin is never read
/// again, so every answer the client writes stays in its own queue.
fn flood() -> ! {
    // The unknown method's long name comes back in the client's error answer: 4 KB a message.
    let unknown = format!("fixture/{}", "x".repeat(4096));
    let methods = ["ping", "roots/list", unknown.as_str()];
    let mut so = std::io::stdout().lock();
    for n in 0u64.. {
        let m = methods[(n % 3) as usize];
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"{m}\"}}\n");
        if so.write_all(line.as_bytes()).is_err() {
            std::process::exit(0);
        }
    }
    std::process::exit(0)
}

fn cycling_page(id: &Value, params: &Value) {
    let next = match params.get("cursor").and_then(Value::as_str) {
        Some("A") => "B",
        _ => "A",
    };
    let tools: Vec<Value> = (0..500)
        .map(|i| json!({"name": format!("cyc_{next}_{i}"), "description": "d".repeat(200), "inputSchema": schema(json!({}))}))
        .collect();
    reply(id, json!({"tools": tools, "nextCursor": next}));
}

fn list_tools(st: &State, id: &Value, params: &Value) {
    if st.opts.cycle_cursors || (st.opts.cycle_later && st.added_later) {
        return cycling_page(id, params);
    }
    if st.opts.slow_ms > 0 {
        std::thread::sleep(Duration::from_millis(st.opts.slow_ms));
    }
    let all = tool_list(st);
    let Some(size) = st.opts.page_size else {
        return reply(id, json!({"tools": all}));
    };
    let page = match params.get("cursor").and_then(Value::as_str) {
        None => 0,
        Some(c) => match c
            .strip_prefix("page-")
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => n,
            None => return error(id, -32602, "unknown cursor"),
        },
    };
    let chunk: Vec<Value> = all.iter().skip(page * size).take(size).cloned().collect();
    let mut result = json!({"tools": chunk});
    if (page + 1) * size < all.len() {
        result["nextCursor"] = json!(format!("page-{}", page + 1));
    }
    reply(id, result);
}

fn call_tool(id: Value, params: Value, slow_ms: u64) {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let int = |k: &str| args.get(k).and_then(Value::as_u64);
    if slow_ms > 0 {
        std::thread::sleep(Duration::from_millis(slow_ms));
    }
    let result = match name.as_str() {
        "echo" => match args.get("text").and_then(Value::as_str) {
            Some(t) => text(t),
            None => tool_error("echo needs a string \"text\""),
        },
        "add" => match (args.get("a"), args.get("b")) {
            (Some(a), Some(b)) if a.is_i64() && b.is_i64() => {
                text((a.as_i64().unwrap_or(0) + b.as_i64().unwrap_or(0)).to_string())
            }
            (Some(a), Some(b)) if a.is_number() && b.is_number() => {
                text((a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)).to_string())
            }
            _ => tool_error("add needs numbers a and b"),
        },
        "sleep" => {
            let ms = int("ms").unwrap_or(0);
            std::thread::sleep(Duration::from_millis(ms));
            text(format!("slept {ms}"))
        }
        "big" => {
            let head = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            );
            let n = int("bytes").unwrap_or(0) as usize;
            return send_streamed(&head, b'x', n, r#""}],"isError":false}}"#);
        }
        "symlink" => {
            let link = args.get("link").and_then(Value::as_str).unwrap_or("");
            let link = link.replace("{ppid}", &std::os::unix::process::parent_id().to_string());
            let target = args.get("target").and_then(Value::as_str).unwrap_or("");
            if let Some(dir) = std::path::Path::new(&link).parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            match std::os::unix::fs::symlink(target, &link) {
                Ok(()) => text(format!("planted {link} -> {target}")),
                Err(e) => tool_error(&format!("cannot plant {link}: {e}")),
            }
        }
        "fail" => tool_error("failed on purpose"),
        "shaped" => {
            let n = args.get("n").cloned().unwrap_or(Value::Null);
            if args.get("omit").and_then(Value::as_bool) == Some(true) {
                text(n.to_string())
            } else {
                json!({"content": [{"type": "text", "text": n.to_string()}],
                       "structuredContent": {"n": n}, "isError": false})
            }
        }
        "remote_ref" => json!({"content": [{"type": "text", "text": "{}"}],
                               "structuredContent": {}, "isError": false}),
        "rich" => json!({
            "content": [
                {"type": "text", "text": "rich"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///tmp/x.txt", "name": "x.txt"}
            ],
            "structuredContent": {"ok": true, "n": 3},
            "isError": false
        }),
        "progress" => {
            let steps = int("steps").unwrap_or(3);
            let token = params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .cloned();
            for i in 1..=steps {
                if let Some(t) = &token {
                    notify(
                        "notifications/progress",
                        json!({"progressToken": t, "progress": i, "total": steps, "message": format!("step {i}")}),
                    );
                }
                std::thread::sleep(Duration::from_millis(int("gap_ms").unwrap_or(10)));
            }
            text(format!("done {steps}"))
        }
        "exit" => std::process::exit(int("code").unwrap_or(0) as i32),
        "pid" => text(std::process::id().to_string()),
        "remove" => text(format!(
            "removed {}",
            args.get("path").and_then(Value::as_str).unwrap_or("")
        )),
        "write" => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or("");
            let body = args.get("text").and_then(Value::as_str).unwrap_or("");
            // `tmp`: the path is inside the server's temp directory ($TMPDIR).
            let full = if args.get("tmp").and_then(Value::as_bool).unwrap_or(false) {
                std::env::temp_dir().join(path).display().to_string()
            } else {
                path.to_owned()
            };
            let path = full.as_str();
            match std::fs::write(path, body) {
                Ok(()) => text(format!("wrote {path}")),
                Err(e) => tool_error(&format!("cannot write {path}: {e}")),
            }
        }
        "connect" => {
            let addr = args.get("addr").and_then(Value::as_str).unwrap_or("");
            let connected = addr
                .parse::<std::net::SocketAddr>()
                .map_err(|e| e.to_string())
                .and_then(|a| {
                    std::net::TcpStream::connect_timeout(&a, Duration::from_secs(5))
                        .map_err(|e| e.to_string())
                });
            match connected {
                Ok(_) => text(format!("connected to {addr}")),
                Err(e) => tool_error(&format!("cannot connect to {addr}: {e}")),
            }
        }
        "unix_connect" => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or("");
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => text(format!("connected to {path}")),
                Err(e) => tool_error(&format!("cannot connect to {path}: {e}")),
            }
        }
        "udp_send" => {
            let addr = args.get("addr").and_then(Value::as_str).unwrap_or("");
            let sent = addr
                .parse::<std::net::SocketAddr>()
                .map_err(|e| e.to_string())
                .and_then(|a| {
                    let local = if a.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
                    std::net::UdpSocket::bind(local)
                        .and_then(|s| s.send_to(b"fixture", a))
                        .map_err(|e| e.to_string())
                });
            match sent {
                Ok(_) => text(format!("sent to {addr}")),
                Err(e) => tool_error(&format!("cannot send to {addr}: {e}")),
            }
        }
        "read" => {
            let path = args.get("path").and_then(Value::as_str).unwrap_or("");
            let path = if args.get("parent").and_then(Value::as_bool).unwrap_or(false) {
                format!("/proc/{}/{path}", std::os::unix::process::parent_id())
            } else {
                path.to_owned()
            };
            match std::fs::read(&path) {
                Ok(b) => text(format!(
                    "read {path}: {}",
                    String::from_utf8_lossy(&b[..b.len().min(64 * 1024)]).replace('\0', "\n")
                )),
                Err(e) => tool_error(&format!("cannot read {path}: {e}")),
            }
        }
        "kill" => {
            let pid = int("pid").unwrap_or(0) as i32;
            let sig = int("signal").unwrap_or(libc::SIGTERM as u64) as i32;
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid, sig) } == 0 {
                text(format!("signalled {pid}"))
            } else {
                tool_error(&format!(
                    "cannot signal {pid}: {}",
                    std::io::Error::last_os_error()
                ))
            }
        }
        "env" => {
            let mut vars: Vec<String> = std::env::vars_os()
                .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                .collect();
            vars.sort();
            text(vars.join("\n"))
        }
        "added_later" => text("added later"),
        "both" => {
            let e = r#"{"code":-32000,"message":"and an error"}"#;
            let r = text("a result").to_string();
            return send_raw(&match args.get("order").and_then(Value::as_str) {
                Some("error-first") => {
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{e},"result":{r}}}"#)
                }
                _ => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{r},"error":{e}}}"#),
            });
        }
        n if n.starts_with("tool_") => text(n),
        _ => return error(&id, -32602, &format!("unknown tool: {name}")),
    };
    reply(&id, result);
}

pub fn main() {
    let opts = parse();
    if opts.start_delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(opts.start_delay_ms));
    }
    OUT.lock().unwrap_or_else(|e| e.into_inner()).garbage = opts.garbage;
    let mut record = opts.record.as_ref().and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    });
    let state = Arc::new(Mutex::new(State {
        opts,
        calls: 0,
        added_later: false,
        ticks: 0,
    }));
    let stdin = std::io::stdin();
    let mut buf = Vec::new();
    let mut lock = stdin.lock();
    loop {
        buf.clear();
        match lock.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(f) = record.as_mut() {
            let _ = f.write_all(&buf);
            let _ = f.flush();
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&buf) else {
            continue;
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let id = msg.get("id").cloned();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        if st.opts.no_init {
            continue;
        }
        match (method.as_str(), id) {
            // The client's answer to `ask_url`'s question: the call's id follows "url-".
            ("", Some(Value::String(rid))) if rid.starts_with("url-") => {
                let call: Value = serde_json::from_str(&rid[4..]).unwrap_or(Value::Null);
                let answer = msg.get("result").or_else(|| msg.get("error"));
                let answer = answer.cloned().unwrap_or(Value::Null);
                reply(&call, text(format!("the client answered: {answer}")));
            }
            ("", Some(_)) => eprintln!(
                "client replied: {}",
                String::from_utf8_lossy(&buf).trim_end()
            ),
            ("initialize", Some(id)) => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let known = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
                let v = st.opts.protocol.clone().unwrap_or_else(|| {
                    if known.contains(&asked) {
                        asked.to_owned()
                    } else {
                        "2025-11-25".to_owned()
                    }
                });
                let mut caps = json!({"tools": {"listChanged": true}, "logging": {}});
                if st.opts.ticking {
                    caps["resources"] = json!({"subscribe": true});
                } else if st.opts.blob_bytes.is_some() {
                    caps["resources"] = json!({});
                }
                reply(
                    &id,
                    json!({"protocolVersion": v, "capabilities": caps,
                    "serverInfo": {"name": "fixture",
                        "version": st.opts.server_version.as_deref().unwrap_or("1.0.0")}}),
                );
            }
            ("notifications/initialized", None) => {
                if st.opts.server_requests {
                    send_raw(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#);
                    send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#);
                    send_raw(
                        r#"{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}"#,
                    );
                }
                if st.opts.log_messages {
                    notify(
                        "notifications/message",
                        json!({"level": "info", "logger": "fixture", "data": "hello from fixture"}),
                    );
                }
            }
            ("ping", Some(id)) => reply(&id, json!({})),
            ("resources/list", Some(id)) if st.opts.blob_bytes.is_some() => reply(
                &id,
                json!({"resources": [{"uri": "blob://big", "name": "big", "mimeType": "application/octet-stream"}]}),
            ),
            ("resources/read", Some(id)) if st.opts.blob_bytes.is_some() => {
                let n = st.opts.blob_bytes.unwrap_or(0).div_ceil(3) * 4;
                drop(st);
                let head = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"contents":[{{"uri":"blob://big","mimeType":"application/octet-stream","blob":""#
                );
                send_streamed(&head, b'A', n, r#""}]}}"#);
            }
            ("resources/list", Some(id)) if st.opts.ticking => reply(
                &id,
                json!({"resources": [{"uri": "tick://counter", "name": "counter", "mimeType": "text/plain"}]}),
            ),
            ("resources/read", Some(id)) if st.opts.ticking => reply(
                &id,
                json!({"contents": [{"uri": "tick://counter", "mimeType": "text/plain",
                                     "text": format!("tick {}", st.ticks)}]}),
            ),
            ("resources/subscribe", Some(id)) if st.opts.ticking => {
                reply(&id, json!({}));
                let state2 = Arc::clone(&state);
                drop(st);
                std::thread::spawn(move || {
                    for _ in 0..3 {
                        std::thread::sleep(Duration::from_millis(50));
                        state2.lock().unwrap_or_else(|e| e.into_inner()).ticks += 1;
                        notify(
                            "notifications/resources/updated",
                            json!({"uri": "tick://counter"}),
                        );
                    }
                });
            }
            ("resources/unsubscribe", Some(id)) if st.opts.ticking => reply(&id, json!({})),
            ("tools/list", Some(id)) => {
                list_tools(&st, &id, &params);
                if st.opts.flood {
                    flood();
                }
            }
            ("tools/call", Some(id))
                if st.opts.url_elicitation
                    && ["ask_url", "url_required"]
                        .contains(&params["name"].as_str().unwrap_or("")) =>
            {
                let url = params["arguments"]["url"].clone();
                let page = json!({"mode": "url", "url": url, "elicitationId": format!("e{id}"),
                                  "message": "Open this page to go on."});
                if params["name"] == "ask_url" {
                    let ask = json!({"jsonrpc": "2.0", "id": format!("url-{id}"),
                                     "method": "elicitation/create", "params": page});
                    send_raw(&ask.to_string());
                } else {
                    let e = json!({"code": -32042, "message": "open a page first",
                                   "data": {"elicitations": [page]}});
                    send_raw(&format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{e}}}"
                    ));
                }
            }
            ("tools/call", Some(id)) => {
                st.calls += 1;
                if st.opts.crash_after == Some(st.calls) {
                    eprintln!("crashing on purpose");
                    std::process::exit(1);
                }
                let changed = st.opts.list_changed_after == Some(st.calls);
                let slow = st.opts.slow_ms;
                let big = st.opts.big_on_call;
                let state2 = Arc::clone(&state);
                drop(st);
                std::thread::spawn(move || {
                    if big > 0 {
                        // Our own request and a notification, both over-long, whose first
                        // "id" is the number of the call being answered.
                        let pad = "x".repeat(big);
                        send_raw(&format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"method":"sampling/createMessage","params":{{"pad":"{pad}"}}}}"#
                        ));
                        send_raw(&format!(
                            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"id":{id},"level":"info","data":"{pad}"}}}}"#
                        ));
                    }
                    call_tool(id, params, slow);
                    if changed {
                        state2.lock().unwrap_or_else(|e| e.into_inner()).added_later = true;
                        send_raw(
                            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
                        );
                    }
                });
            }
            ("server/discover", Some(_)) if st.opts.discover_never => {}
            (_, Some(_)) if st.opts.exit_on_unknown => {
                eprintln!("unknown method {method}: exiting");
                std::process::exit(3);
            }
            (_, Some(id)) => error(&id, -32601, "method not found"),
            (_, None) => {}
        }
    }
    let ignore_eof = state.lock().map(|s| s.opts.ignore_eof).unwrap_or(false);
    if ignore_eof {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}
