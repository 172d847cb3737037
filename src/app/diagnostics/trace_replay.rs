//! `harness9 trace replay FILE`: the server side of a `--trace` file, to answer a client with.
//! [`Loader`] pairs each request we sent with the server's reply (and the progress and log
//! notifications that arrived while it was open); [`Replayer`] answers an incoming JSON-RPC
//! message from those recordings. Pure: lines in, messages out; the command does the I/O.
//!
//! Matching is on the method and the params without `_meta` (progress tokens and trace context
//! differ per run), compared as canonical JSON; `initialize` also ignores `clientInfo` (the
//! client's version). Requests the server sent (sampling, elicitation, roots) are not replayed.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};

/// The most recorded requests held (answered or not); later ones are counted in
/// [`LoadStats::dropped`].
pub const MAX_RECORDINGS: usize = 10_000;
/// The most bytes of trace lines held (requests, their replies and notifications); past it,
/// later recordings are dropped like those over [`MAX_RECORDINGS`].
pub const MAX_HELD_BYTES: usize = 128 * 1024 * 1024;
/// The most notifications kept for one request; later ones are not replayed.
pub const MAX_NOTIFICATIONS: usize = 10_000;
/// The most requests waiting for their reply while loading (a trace may hold requests that
/// were never answered: cancelled, or the run ended); the oldest is forgotten past it.
const MAX_OPEN: usize = 1024;
/// The longest params shown in an error message, in characters.
pub const MAX_SHOWN_CHARS: usize = 200;
/// The characters of each side compared to find the nearest recording.
const MAX_DISTANCE_CHARS: usize = 256;
/// The most distinct recordings looked at to find the nearest one.
const MAX_NEAREST_CANDIDATES: usize = 1000;

/// The most server names remembered for an error about `--server`.
const MAX_NAMES_KEPT: usize = 1000;
/// The most server names listed in an error.
const MAX_NAMES_SHOWN: usize = 20;
/// The longest server name shown in an error, in characters.
const MAX_NAME_CHARS: usize = 64;

/// JSON-RPC: the method was never recorded.
pub const METHOD_NOT_RECORDED: i64 = -32601;
/// JSON-RPC "invalid params": the method was recorded, never with these params.
pub const PARAMS_NOT_RECORDED: i64 = -32602;

/// What loading saw, for the command's summary.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LoadStats {
    /// Request/reply pairs held for the chosen server.
    pub recordings: u64,
    /// Requests the trace never answered (a `subscriptions/listen` stream, a cancelled call):
    /// held open when replayed, unless the same request was answered elsewhere in the trace.
    pub unanswered: u64,
    /// Requests not held: over [`MAX_RECORDINGS`] or [`MAX_HELD_BYTES`].
    pub dropped: u64,
    /// Requests the chosen server sent us (sampling, elicitation, roots): not replayed.
    pub server_requests: u64,
    /// Lines that were not trace records.
    pub skipped: u64,
    /// The first of them (1-based).
    pub first_skipped_line: Option<u64>,
}

/// One request we sent, with what the server sent back.
#[derive(Debug, Clone, PartialEq)]
struct Recording {
    method: String,
    key: String,
    /// None: never answered in the trace (a `subscriptions/listen` stream, a cancelled call).
    reply: Option<Value>,
    notifications: Vec<Value>,
    /// Its reply came over the bounds: not replayed.
    dropped: bool,
}

/// A request sent, its reply not seen yet.
#[derive(Debug)]
struct Pending {
    server: String,
    id: String,
    /// Where its recording is in `done[server]`.
    index: usize,
    progress: bool,
}

/// The `_meta` key of the stateless era's subscription notifications: the id of the
/// `subscriptions/listen` request they belong to.
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Reads a trace a line at a time into recordings.
#[derive(Debug)]
pub struct Loader {
    server: Option<String>,
    open: Vec<Pending>,
    done: BTreeMap<String, Vec<Recording>>,
    held: usize,
    count: usize,
    line: u64,
    stats: BTreeMap<String, LoadStats>,
    /// The servers we sent a request to, `--server` or not (names cut, at most
    /// [`MAX_NAMES_KEPT`]).
    servers: BTreeSet<String>,
    skipped: u64,
    first_skipped_line: Option<u64>,
}

impl Loader {
    /// Nothing read yet; `server` keeps one server's records only.
    pub fn new(server: Option<&str>) -> Self {
        Self {
            server: server.map(str::to_owned),
            open: Vec::new(),
            done: BTreeMap::new(),
            held: 0,
            count: 0,
            line: 0,
            stats: BTreeMap::new(),
            servers: BTreeSet::new(),
            skipped: 0,
            first_skipped_line: None,
        }
    }

    /// The next line; `None` for one that cannot be a record (over the line bound, not UTF-8).
    pub fn push(&mut self, line: Option<&str>) {
        self.line += 1;
        if line.is_some_and(|l| l.trim().is_empty()) {
            return;
        }
        let record = line
            .filter(|l| l.len() <= crate::diagnostics::trace_stats::MAX_LINE_BYTES)
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .filter(crate::diagnostics::trace_stats::is_record);
        let Some(mut record) = record else {
            self.skipped += 1;
            self.first_skipped_line.get_or_insert(self.line);
            return;
        };
        let bytes = line.map_or(0, str::len);
        let server = record["server"].as_str().unwrap_or("?").to_owned();
        if self.server.as_deref().is_some_and(|s| s != server) {
            let request = record["dir"].as_str() == Some("send")
                && record["message"].get("method").is_some()
                && record["message"].get("id").is_some_and(|i| !i.is_null());
            if request && self.servers.len() < MAX_NAMES_KEPT {
                self.servers.insert(shown_name(&server));
            }
            return;
        }
        let message = record["message"].take();
        if !message.is_object() {
            // An HTTP exchange without a message (a 202).
            return;
        }
        let sent = record["dir"].as_str() == Some("send");
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut id = message.get("id").filter(|i| !i.is_null()).map(canonical);
        if !record["http_status"].is_null() {
            // An HTTP exchange: only an error status's JSON-RPC body is a message, the reply
            // to the exchange's request (a 400 answers with `"id": null`; the record names
            // the request).
            let reply = method.is_none()
                && (message.get("result").is_some() || message.get("error").is_some());
            // No method: the POST of our answer to a server's request, not one of ours.
            let ours = record["method"].as_str().is_some_and(|m| !m.is_empty());
            if sent || !reply || !ours {
                return;
            }
            id = id.or_else(|| Some(&record["id"]).filter(|i| !i.is_null()).map(canonical));
        }
        match (sent, method, id) {
            (true, Some(method), Some(id)) => {
                self.open_request(server, id, &method, &message, bytes)
            }
            (false, None, Some(id)) => self.reply(&server, &id, message, bytes),
            (false, Some(method), None) => self.notification(&server, &method, message, bytes),
            (false, Some(_), Some(_)) => self.stats.entry(server).or_default().server_requests += 1,
            // Our notifications and our answers to the server's requests: nothing to replay.
            _ => {}
        }
    }

    fn open_request(&mut self, server: String, id: String, method: &str, m: &Value, bytes: usize) {
        // A concatenated trace reuses ids: a new request with an open one's id replaces it
        // (the old one stays, unanswered).
        self.open.retain(|p| !(p.server == server && p.id == id));
        if self.count >= MAX_RECORDINGS || self.held + bytes > MAX_HELD_BYTES {
            self.stats.entry(server).or_default().dropped += 1;
            return;
        }
        if self.open.len() >= MAX_OPEN {
            self.open.remove(0);
        }
        let params = m.get("params");
        let progress = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .is_some_and(|t| !t.is_null());
        self.held += bytes;
        self.count += 1;
        let list = self.done.entry(server.clone()).or_default();
        list.push(Recording {
            method: method.to_owned(),
            key: params_key(method, params),
            reply: None,
            notifications: Vec::new(),
            dropped: false,
        });
        self.open.push(Pending {
            server,
            id,
            index: list.len() - 1,
            progress,
        });
    }

    fn reply(&mut self, server: &str, id: &str, reply: Value, bytes: usize) {
        if reply.get("result").is_none() && reply.get("error").is_none() {
            return;
        }
        let Some(i) = self
            .open
            .iter()
            .position(|p| p.server == server && p.id == id)
        else {
            return;
        };
        let p = self.open.remove(i);
        let over = self.held + bytes > MAX_HELD_BYTES;
        let Some(rec) = self
            .done
            .get_mut(server)
            .and_then(|list| list.get_mut(p.index))
        else {
            return;
        };
        if over {
            rec.dropped = true;
            rec.notifications.clear();
            self.stats.entry(server.to_owned()).or_default().dropped += 1;
            return;
        }
        self.held += bytes;
        rec.reply = Some(reply);
    }

    /// A notification tagged with a subscription goes with that `subscriptions/listen`
    /// request; progress with the newest open request that asked for it; a log message with
    /// the newest open request. Other notifications (list changes, resource updates outside a
    /// subscription) are not replayed: answered by a request, they could loop.
    fn notification(&mut self, server: &str, method: &str, n: Value, bytes: usize) {
        let subscription = n
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(SUBSCRIPTION_ID))
            .map(canonical);
        let pending = if let Some(sub) = subscription {
            self.open
                .iter()
                .rev()
                .find(|p| p.server == server && p.id == sub)
        } else {
            let progress = match method {
                "notifications/progress" => true,
                "notifications/message" => false,
                _ => return,
            };
            self.open
                .iter()
                .rev()
                .find(|p| p.server == server && (p.progress || !progress))
        };
        let Some(index) = pending.map(|p| p.index) else {
            return;
        };
        if self.held + bytes > MAX_HELD_BYTES {
            return;
        }
        let Some(rec) = self.done.get_mut(server).and_then(|l| l.get_mut(index)) else {
            return;
        };
        if rec.notifications.len() >= MAX_NOTIFICATIONS {
            return;
        }
        self.held += bytes;
        rec.notifications.push(n);
    }

    /// The replayer of the chosen server: the one named, else the only one with recordings.
    /// The error says why none can be chosen.
    pub fn finish(mut self) -> Result<Replayer, String> {
        self.done.retain(|_, list| list.iter().any(|r| !r.dropped));
        // At most MAX_NAMES_SHOWN names: a hostile trace may hold thousands.
        // The servers with recordings, and (with --server) the others that had requests.
        let mut all: BTreeSet<String> = self.done.keys().map(|s| shown_name(s)).collect();
        all.extend(self.servers.iter().cloned());
        let names = || {
            let mut list: Vec<String> = all
                .iter()
                .take(MAX_NAMES_SHOWN)
                .map(|s| format!("{s:?}"))
                .collect();
            if all.len() > MAX_NAMES_SHOWN {
                list.push(format!("and {} more", all.len() - MAX_NAMES_SHOWN));
            }
            if list.is_empty() {
                "none".to_owned()
            } else {
                list.join(", ")
            }
        };
        let server = match &self.server {
            Some(s) if self.done.contains_key(s) => s.clone(),
            Some(s) => {
                return Err(format!(
                    "no recorded request for server {:?} (servers in the trace: {})",
                    shown_name(s),
                    names()
                ))
            }
            None if self.done.is_empty() => {
                return Err("no recorded request: is it a --trace file?".to_owned())
            }
            None if self.done.len() > 1 => {
                return Err(format!(
                    "recordings of several servers ({}): pick one with --server NAME",
                    names()
                ))
            }
            None => self.done.keys().next().cloned().unwrap_or_default(),
        };
        let mut stats = self.stats.remove(&server).unwrap_or_default();
        stats.skipped = self.skipped;
        stats.first_skipped_line = self.first_skipped_line;
        let mut r = Replayer {
            server: server.clone(),
            entries: HashMap::new(),
            keys: Vec::new(),
            stats,
        };
        for rec in self.done.remove(&server).unwrap_or_default() {
            if rec.dropped {
                continue;
            }
            let k = (rec.method, rec.key);
            let entry = r.entries.entry(k.clone()).or_insert_with(|| {
                r.keys.push(k);
                Entry::default()
            });
            match rec.reply {
                Some(reply) => {
                    r.stats.recordings += 1;
                    entry.replies.push((reply, rec.notifications));
                }
                None => {
                    r.stats.unanswered += 1;
                    entry.unanswered.get_or_insert(rec.notifications);
                }
            }
        }
        Ok(r)
    }
}

/// The recordings of one method and params, in recorded order.
#[derive(Debug, Default)]
struct Entry {
    replies: Vec<(Value, Vec<Value>)>,
    next: usize,
    /// The notifications of the first such request the trace never answered: replayed, the
    /// request held open, when none was answered.
    unanswered: Option<Vec<Value>>,
}

/// What to send back for one incoming message.
#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    /// Notifications, then the reply (none for a notification or a reply we got).
    pub messages: Vec<Value>,
    /// For a request with no recording: the error's text, for stderr too.
    pub miss: Option<String>,
}

/// Answers requests from one server's recordings.
#[derive(Debug)]
pub struct Replayer {
    server: String,
    entries: HashMap<(String, String), Entry>,
    keys: Vec<(String, String)>,
    stats: LoadStats,
}

impl Replayer {
    /// The server whose recordings these are.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What loading saw.
    pub fn stats(&self) -> &LoadStats {
        &self.stats
    }

    /// The answer to one line a client sent.
    pub fn answer_line(&mut self, line: &str) -> Answer {
        match serde_json::from_str::<Value>(line) {
            Ok(v) => self.answer(&v),
            Err(e) => error_answer(Value::Null, -32700, format!("parse error: {e}")),
        }
    }

    /// The answer to one message a client sent: a request's recorded reply (its id the
    /// request's), after the notifications recorded with it; nothing for a notification.
    pub fn answer(&mut self, msg: &Value) -> Answer {
        if !msg.is_object() {
            return error_answer(
                Value::Null,
                -32600,
                "invalid request: not a JSON object (batches are not replayed)".to_owned(),
            );
        }
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").filter(|i| !i.is_null());
        let (Some(method), Some(id)) = (method, id) else {
            // A notification (initialized, cancelled, ...) or a reply: nothing to answer.
            return Answer::default();
        };
        if !(id.is_string() || id.is_number()) {
            return error_answer(
                Value::Null,
                -32600,
                "invalid request: the id is not a string or number".to_owned(),
            );
        }
        let params = msg.get("params");
        let key = params_key(method, params);
        let Some(entry) = self.entries.get_mut(&(method.to_owned(), key.clone())) else {
            return self.unrecorded(method, &key, id);
        };
        // The same request recorded several times: in recorded order, then the last again.
        let i = entry.next.min(entry.replies.len().saturating_sub(1));
        entry.next = entry.next.saturating_add(1);
        let (reply, notifications) = match (entry.replies.get(i), &entry.unanswered) {
            (Some((reply, n)), _) => (Some(reply), n),
            // Never answered when recorded: its notifications, and no reply (held open).
            (None, Some(n)) => (None, n),
            (None, None) => return Answer::default(),
        };
        let token = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .filter(|t| !t.is_null());
        let mut messages = Vec::with_capacity(notifications.len() + 1);
        messages.extend(
            notifications
                .iter()
                .filter_map(|n| remapped_notification(n, token, id)),
        );
        if let Some(reply) = reply {
            let mut reply = reply.clone();
            if let Some(r) = reply.as_object_mut() {
                r.insert("id".to_owned(), id.clone());
            }
            messages.push(reply);
        }
        Answer {
            messages,
            miss: None,
        }
    }

    /// The answer to request `id` of `method` with params `key` that was not recorded: a
    /// `ping`'s empty result, else an error naming the nearest recorded request.
    fn unrecorded(&self, method: &str, key: &str, id: &Value) -> Answer {
        if method == "ping" {
            return Answer {
                messages: vec![json!({"jsonrpc": "2.0", "id": id, "result": {}})],
                miss: None,
            };
        }
        let known = self.keys.iter().any(|(m, _)| m == method);
        let text = format!(
            "no recorded reply for {}; nearest recorded: {}",
            shown(method, key),
            self.nearest(method, key)
        );
        let code = if known {
            PARAMS_NOT_RECORDED
        } else {
            METHOD_NOT_RECORDED
        };
        let mut a = error_answer(id.clone(), code, text.clone());
        a.miss = Some(text);
        a
    }

    /// The recorded request nearest to `method` and `key`: the same method first, then the
    /// smallest edit distance between the canonical params; "nothing" without recordings.
    fn nearest(&self, method: &str, key: &str) -> String {
        let same: Vec<&(String, String)> = self.keys.iter().filter(|(m, _)| m == method).collect();
        let (pool, target): (Vec<&(String, String)>, String) = if same.is_empty() {
            (self.keys.iter().collect(), format!("{method} {key}"))
        } else {
            (same, key.to_owned())
        };
        let target: Vec<char> = target.chars().take(MAX_DISTANCE_CHARS).collect();
        let best = pool
            .into_iter()
            .take(MAX_NEAREST_CANDIDATES)
            .map(|k| {
                let other = if k.0 == method {
                    k.1.clone()
                } else {
                    format!("{} {}", k.0, k.1)
                };
                let other: Vec<char> = other.chars().take(MAX_DISTANCE_CHARS).collect();
                (harness9_base::text::edit_distance(&target, &other), k)
            })
            .min_by_key(|(d, _)| *d);
        match best {
            Some((_, (m, k))) => shown(m, k),
            None => "nothing".to_owned(),
        }
    }
}

/// Recorded notification `n` as this request's: a progress notification with the request's
/// progress `token` (none without one), a subscription's id the request's `id`.
fn remapped_notification(n: &Value, token: Option<&Value>, id: &Value) -> Option<Value> {
    let mut n = n.clone();
    if n.get("method").and_then(Value::as_str) == Some("notifications/progress") {
        let token = token?;
        if let Some(p) = n.get_mut("params").and_then(Value::as_object_mut) {
            p.insert("progressToken".to_owned(), token.clone());
        }
    }
    if let Some(m) = n
        .get_mut("params")
        .and_then(|p| p.get_mut("_meta"))
        .and_then(Value::as_object_mut)
    {
        if m.contains_key(SUBSCRIPTION_ID) {
            m.insert(SUBSCRIPTION_ID.to_owned(), id.clone());
        }
    }
    Some(n)
}

fn error_answer(id: Value, code: i64, message: String) -> Answer {
    Answer {
        messages: vec![json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
        })],
        miss: None,
    }
}

/// What a request is matched on: its params as canonical JSON without `_meta` (and, for
/// `initialize`, without `clientInfo`); empty for no params or an empty object.
pub fn params_key(method: &str, params: Option<&Value>) -> String {
    let mut p = params.cloned().unwrap_or(Value::Null);
    if let Some(o) = p.as_object_mut() {
        o.remove("_meta");
        if method == "initialize" {
            o.remove("clientInfo");
        }
        if o.is_empty() {
            return String::new();
        }
    }
    if p.is_null() {
        return String::new();
    }
    canonical(&p)
}

/// JSON with no whitespace and object keys sorted (serde_json's map is ordered by key: it is
/// built without `preserve_order`), so equal values give equal text.
pub fn canonical(v: &Value) -> String {
    v.to_string()
}

/// `method params` for a message, the params cut at [`MAX_SHOWN_CHARS`].
fn shown(method: &str, key: &str) -> String {
    if key.is_empty() {
        return method.to_owned();
    }
    let mut cut: String = key.chars().take(MAX_SHOWN_CHARS).collect();
    if cut.len() < key.len() {
        cut.push_str("...");
    }
    format!("{method} {cut}")
}

/// A server name cut at [`MAX_NAME_CHARS`].
fn shown_name(s: &str) -> String {
    let mut cut: String = s.chars().take(MAX_NAME_CHARS).collect();
    if cut.len() < s.len() {
        cut.push_str("...");
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(server: &str, dir: &str, message: Value) -> String {
        json!({
            "ts": "2026-12-05T00:00:00Z", "server": server, "dir": dir,
            "id": message.get("id"), "method": message.get("method"),
            "latency_us": null, "bytes": 0, "message": message,
        })
        .to_string()
    }

    fn send(id: u64, method: &str, params: Value) -> String {
        rec(
            "s",
            "send",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
    }

    fn reply(id: u64, result: Value) -> String {
        rec(
            "s",
            "recv",
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )
    }

    fn load(lines: &[String], server: Option<&str>) -> Result<Replayer, String> {
        let mut l = Loader::new(server);
        for line in lines {
            l.push(Some(line));
        }
        l.finish()
    }

    fn call(name: &str, args: Value, token: Option<Value>) -> Value {
        let mut params = json!({"name": name, "arguments": args});
        if let Some(t) = token {
            params["_meta"] = json!({"progressToken": t, "traceparent": "00-abc-def-01"});
        }
        json!({"jsonrpc": "2.0", "id": "req-9", "method": "tools/call", "params": params})
    }

    #[test]
    fn answers_with_the_recorded_reply_under_the_incoming_id_ignoring_meta() {
        let lines = [
            send(
                1,
                "tools/call",
                json!({"_meta": {"progressToken": "[redacted]"}, "name": "echo", "arguments": {"message": "hi"}}),
            ),
            reply(
                1,
                json!({"content": [{"type": "text", "text": "Echo: hi"}]}),
            ),
        ];
        let mut r = load(&lines, None).unwrap();
        assert_eq!(r.server(), "s");
        assert_eq!(r.stats().recordings, 1);
        // Keys in another order, another _meta: the same request.
        let a = r.answer(&call("echo", json!({"message": "hi"}), Some(json!(7))));
        assert_eq!(a.miss, None);
        assert_eq!(
            a.messages,
            vec![json!({"jsonrpc": "2.0", "id": "req-9",
                "result": {"content": [{"type": "text", "text": "Echo: hi"}]}})]
        );
    }

    #[test]
    fn progress_is_replayed_before_the_reply_with_the_incoming_token() {
        let progress = |n: u64| {
            rec(
                "s",
                "recv",
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "[redacted]", "progress": n, "total": 2}}),
            )
        };
        let log = rec(
            "s",
            "recv",
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}}),
        );
        let changed = rec(
            "s",
            "recv",
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        );
        let lines = [
            send(
                3,
                "tools/call",
                json!({"_meta": {"progressToken": "[redacted]"}, "name": "slow", "arguments": {}}),
            ),
            progress(1),
            log,
            changed,
            progress(2),
            reply(3, json!({"content": []})),
        ];
        let mut r = load(&lines, None).unwrap();
        let a = r.answer(&call("slow", json!({}), Some(json!("tok"))));
        let methods: Vec<&str> = a
            .messages
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("reply"))
            .collect();
        assert_eq!(
            methods,
            [
                "notifications/progress",
                "notifications/message",
                "notifications/progress",
                "reply"
            ]
        );
        assert_eq!(a.messages[0]["params"]["progressToken"], "tok");
        assert_eq!(a.messages[2]["params"]["progress"], 2);
        // Without a token: no progress, the log message and the reply still.
        let a = r.answer(&call("slow", json!({}), None));
        assert_eq!(a.messages.len(), 2, "{:?}", a.messages);
    }

    #[test]
    fn repeated_requests_are_answered_in_order_then_the_last_again() {
        let lines = [
            send(1, "tools/list", json!({})),
            reply(1, json!({"tools": [{"name": "a"}]})),
            // Another run's trace, ids from 1 again.
            send(1, "tools/list", Value::Null),
            reply(1, json!({"tools": [{"name": "b"}]})),
        ];
        let mut r = load(&lines, None).unwrap();
        let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
        let names: Vec<Value> = (0..3)
            .map(|_| r.answer(&list).messages[0]["result"]["tools"][0]["name"].clone())
            .collect();
        assert_eq!(names, [json!("a"), json!("b"), json!("b")]);
    }

    #[test]
    fn a_request_never_recorded_names_the_nearest_recorded_one() {
        let lines = [
            send(
                1,
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "hi"}}),
            ),
            reply(1, json!({})),
            send(
                2,
                "tools/call",
                json!({"name": "get-sum", "arguments": {"a": 1, "b": 2}}),
            ),
            reply(2, json!({})),
        ];
        let mut r = load(&lines, None).unwrap();
        let a = r.answer(&call("echo", json!({"message": "hello"}), None));
        let want = r#"no recorded reply for tools/call {"arguments":{"message":"hello"},"name":"echo"}; nearest recorded: tools/call {"arguments":{"message":"hi"},"name":"echo"}"#;
        assert_eq!(a.miss.as_deref(), Some(want));
        assert_eq!(a.messages[0]["error"]["code"], PARAMS_NOT_RECORDED);
        assert_eq!(a.messages[0]["error"]["message"], want);
        assert_eq!(a.messages[0]["id"], "req-9");
        // A method never recorded: -32601, the nearest of any method.
        let a = r.answer(&json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"}));
        assert_eq!(a.messages[0]["error"]["code"], METHOD_NOT_RECORDED);
        assert!(a
            .miss
            .unwrap()
            .starts_with("no recorded reply for prompts/list; nearest recorded: tools/call"),);
        // Long params are cut.
        let long = "x".repeat(5000);
        let a = r.answer(&call("echo", json!({ "message": long }), None));
        let text = a.miss.unwrap();
        assert!(text.len() < 600 && text.contains("..."), "{text}");
    }

    #[test]
    fn notifications_replies_ping_and_bad_input() {
        let lines = [send(1, "tools/list", Value::Null), reply(1, json!({}))];
        let mut r = load(&lines, None).unwrap();
        for quiet in [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}),
        ] {
            assert_eq!(r.answer(&quiet), Answer::default());
        }
        let pong = r.answer(&json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
        assert_eq!(pong.messages[0]["result"], json!({}));
        assert_eq!(r.answer_line("{nope").messages[0]["error"]["code"], -32700);
        assert_eq!(r.answer_line("[1]").messages[0]["error"]["code"], -32600);
        assert_eq!(
            r.answer_line(r#"{"id":{},"method":"x"}"#).messages[0]["error"]["code"],
            -32600
        );
    }

    #[test]
    fn initialize_ignores_the_client_info_and_error_replies_replay() {
        let lines = [
            send(
                0,
                "server/discover",
                json!({"_meta": {"io.modelcontextprotocol/clientInfo": {"version": "1"}}}),
            ),
            rec(
                "s",
                "recv",
                json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32601, "message": "Method not found"}}),
            ),
            send(
                1,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "harness9", "version": "0.1.0"}}),
            ),
            reply(1, json!({"protocolVersion": "2025-11-25"})),
        ];
        let mut r = load(&lines, None).unwrap();
        let d = r.answer(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
            "params": {"_meta": {"io.modelcontextprotocol/clientInfo": {"version": "2"}}}}),
        );
        assert_eq!(d.messages[0]["error"]["code"], -32601);
        assert_eq!(d.miss, None);
        let i = r.answer(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "harness9", "version": "0.2.0"}}}));
        assert_eq!(i.messages[0]["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn an_http_error_body_answers_its_request_and_other_exchanges_are_not_messages() {
        let exchange = |id: Value, status: u16, message: Value| {
            json!({"ts": "2026-12-05T00:00:00Z", "server": "s", "dir": "recv", "id": id,
                "method": "server/discover", "http_status": status, "message": message})
            .to_string()
        };
        let lines = [
            send(0, "server/discover", json!({})),
            // A 400 whose JSON-RPC error has no id: the record names the request.
            exchange(
                json!(0),
                400,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request"}}),
            ),
            send(1, "tools/list", json!({})),
            exchange(json!(1), 200, Value::Null),
            // The exchange of our answer to a server's request (no method) answers nothing
            // of ours, whatever its id.
            json!({"ts": "2026-12-05T00:00:00Z", "server": "s", "dir": "recv", "id": 1,
                "method": "", "http_status": 400,
                "message": {"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "x"}}})
            .to_string(),
            // An exchange whose body is a request is not taken for one.
            exchange(
                json!(1),
                200,
                json!({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}),
            ),
            reply(1, json!({"tools": []})),
        ];
        let mut r = load(&lines, None).unwrap();
        assert_eq!(r.stats().unanswered, 0);
        assert_eq!(r.stats().server_requests, 0);
        let d = r
            .answer(&json!({"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {}}));
        assert_eq!(d.messages.len(), 1, "{:?}", d.messages);
        assert_eq!(d.messages[0]["error"]["code"], -32000);
        assert_eq!(d.messages[0]["id"], 5);
        let t = r.answer(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {}}));
        assert_eq!(t.messages[0]["result"], json!({"tools": []}));
    }

    #[test]
    fn choosing_the_server() {
        let other = rec(
            "t",
            "send",
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        );
        let other_reply = rec(
            "t",
            "recv",
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        let lines = [
            send(1, "tools/list", Value::Null),
            other,
            reply(1, json!({})),
            other_reply,
            "not json".to_owned(),
            rec(
                "s",
                "recv",
                json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"}),
            ),
        ];
        let e = load(&lines, None).unwrap_err();
        assert_eq!(
            e,
            r#"recordings of several servers ("s", "t"): pick one with --server NAME"#
        );
        let r = load(&lines, Some("s")).unwrap();
        assert_eq!(
            r.stats(),
            &LoadStats {
                recordings: 1,
                server_requests: 1,
                skipped: 1,
                first_skipped_line: Some(5),
                ..LoadStats::default()
            }
        );
        let e = load(&lines, Some("u")).unwrap_err();
        assert_eq!(
            e,
            r#"no recorded request for server "u" (servers in the trace: "s", "t")"#
        );
        assert!(load(&[], None).unwrap_err().contains("no recorded request"));
    }

    #[test]
    fn a_request_never_answered_is_held_open_with_its_subscription_notifications() {
        let sub = |method: &str, id: u64| {
            rec(
                "s",
                "recv",
                json!({"jsonrpc": "2.0", "method": method,
                    "params": {"_meta": {SUBSCRIPTION_ID: id}}}),
            )
        };
        let lines = [
            // A call cut short (the run killed), answered in a later run.
            send(1, "tools/list", Value::Null),
            send(
                2,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            ),
            sub("notifications/subscriptions/acknowledged", 2),
            sub("notifications/tools/list_changed", 2),
            send(1, "tools/list", Value::Null),
            reply(1, json!({"tools": []})),
            rec(
                "s",
                "send",
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
            ),
        ];
        let mut r = load(&lines, None).unwrap();
        assert_eq!((r.stats().recordings, r.stats().unanswered), (1, 2));
        let listen = json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": true}}});
        let a = r.answer(&listen);
        assert_eq!(a.miss, None);
        let got: Vec<(&str, &Value)> = a
            .messages
            .iter()
            .map(|m| {
                (
                    m["method"].as_str().unwrap_or("reply"),
                    &m["params"]["_meta"][SUBSCRIPTION_ID],
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("notifications/subscriptions/acknowledged", &json!("L")),
                ("notifications/tools/list_changed", &json!("L"))
            ]
        );
        // The answered tools/list wins over the one cut short.
        let a = r.answer(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
        assert_eq!(
            a.messages,
            [json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})]
        );
    }

    #[test]
    fn recordings_are_capped() {
        let mut l = Loader::new(None);
        for i in 0..(MAX_RECORDINGS as u64 + 5) {
            l.push(Some(&send(i, "ping", Value::Null)));
            l.push(Some(&reply(i, json!({}))));
        }
        let r = l.finish().unwrap();
        assert_eq!(r.stats().recordings, MAX_RECORDINGS as u64);
        assert_eq!(r.stats().dropped, 5);
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        // Keys inserted out of order, not parsed: the map orders them itself.
        let mut inner = serde_json::Map::new();
        inner.insert("z".into(), Value::from(1));
        inner.insert("a".into(), Value::from("\n"));
        let mut outer = serde_json::Map::new();
        outer.insert("b".into(), Value::Array(vec![Value::Object(inner)]));
        outer.insert("a".into(), Value::Null);
        assert_eq!(
            canonical(&Value::Object(outer)),
            r#"{"a":null,"b":[{"a":"\n","z":1}]}"#
        );
    }
}
