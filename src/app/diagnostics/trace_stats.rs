//! `harness9 trace stats FILE`: what a `--trace` file holds, per server and method: requests
//! sent, replies and errors received, notifications each way, and the latency percentiles of
//! the replies (the `latency_us` each reply record carries). Pure: lines in, a table out; the
//! command reads the file.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

/// The longest trace line looked at; a longer one is counted as skipped (a trace keeps whole
/// messages, so one may be large, but a stats run must stay bounded).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The longest server or method name kept (a longer one is cut, with `...`): a hostile trace's
/// names never widen the table without end.
pub const MAX_NAME_CHARS: usize = 64;

/// The most (server, method) rows; the records of any further one count under
/// [`MORE_METHODS`].
pub const MAX_ROWS: usize = 10_000;

/// The row that counts what came past [`MAX_ROWS`].
pub const MORE_METHODS: &str = "(more methods)";

/// `name` cleaned for a terminal and cut at [`MAX_NAME_CHARS`].
fn shown(name: &str) -> String {
    let clean = harness9_base::sanitize::clean_line(name);
    let mut cut: String = clean.chars().take(MAX_NAME_CHARS).collect();
    if cut.len() < clean.len() {
        cut.push_str("...");
    }
    cut
}

/// One server's method, both directions.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct MethodStats {
    /// The server's name in the config.
    pub server: String,
    /// The method (a reply counts under the method of the request it answers).
    pub method: String,
    /// Requests we sent.
    pub requests_sent: u64,
    /// Replies we received to them, errors included.
    pub replies: u64,
    /// Replies that were JSON-RPC errors or tool results with `isError: true`.
    pub errors: u64,
    /// Requests the server sent us (sampling, elicitation, roots, ping).
    pub requests_received: u64,
    /// Notifications we sent.
    pub notifications_sent: u64,
    /// Notifications the server sent.
    pub notifications_received: u64,
    /// Reply latency percentiles in milliseconds: p50, p90, p99, max (none without replies).
    pub latency_ms: Option<[f64; 4]>,
    #[serde(skip)]
    latencies_us: Vec<u64>,
}

/// What a trace file holds.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    /// Per server and method, sorted by server then method.
    pub methods: Vec<MethodStats>,
    /// Records read.
    pub records: u64,
    /// Of those, HTTP exchange records (a response's status and headers, not a message of
    /// their own; an error status's JSON-RPC body counts as the request's reply).
    pub http_exchanges: u64,
    /// Lines that were not trace records (not JSON objects, or over [`MAX_LINE_BYTES`]).
    pub skipped: u64,
    /// The first skipped line's number (1-based), to look at.
    pub first_skipped_line: Option<u64>,
}

/// Builds the stats of a trace's lines; `server` keeps one server's records only.
pub fn stats<'a>(lines: impl IntoIterator<Item = &'a str>, server: Option<&str>) -> TraceStats {
    let mut b = StatsBuilder::new(server);
    for line in lines {
        b.push(Some(line));
    }
    b.finish()
}

/// The most requests waiting for a reply whose send time is kept (for the latency of a reply
/// that came as an HTTP error body, which carries none of its own); past it, such a reply has
/// no latency.
pub const MAX_PENDING: usize = 64 * 1024;

/// The stats of a trace read a line at a time.
#[derive(Debug)]
pub struct StatsBuilder {
    server: Option<String>,
    by_key: BTreeMap<(String, String), MethodStats>,
    /// (server, id) of a request sent -> when, in microseconds since the epoch.
    sent_at: HashMap<(String, String), u64>,
    out: TraceStats,
    line: u64,
}

impl StatsBuilder {
    /// Nothing read yet; `server` keeps one server's records only.
    pub fn new(server: Option<&str>) -> Self {
        Self {
            server: server.map(str::to_owned),
            by_key: BTreeMap::new(),
            sent_at: HashMap::new(),
            out: TraceStats::default(),
            line: 0,
        }
    }

    /// The next line; `None` for one that cannot be a record (over [`MAX_LINE_BYTES`], not
    /// UTF-8).
    pub fn push(&mut self, line: Option<&str>) {
        self.line += 1;
        if line.is_some_and(|l| l.trim().is_empty()) {
            return;
        }
        let record = line
            .filter(|l| l.len() <= MAX_LINE_BYTES)
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .filter(is_record);
        let Some(record) = record else {
            self.out.skipped += 1;
            self.out.first_skipped_line.get_or_insert(self.line);
            return;
        };
        self.out.records += 1;
        let name = record["server"].as_str().unwrap_or("?");
        if self.server.as_deref().is_some_and(|s| s != name) {
            return;
        }
        let message = &record["message"];
        let sent = record["dir"].as_str() == Some("send");
        let exchange = !record["http_status"].is_null();
        if exchange {
            self.out.http_exchanges += 1;
            // The status of a POST, not a message: only an error status's JSON-RPC body (a
            // 400 with `{"error": ...}`) is a message, the reply to the exchange's request.
            if !is_reply(message) || record["id"].is_null() {
                return;
            }
        }
        let Some(method) = record["method"].as_str().filter(|m| !m.is_empty()) else {
            return;
        };
        let id = (!record["id"].is_null()).then(|| record["id"].to_string());
        let reply = is_reply(message);
        let latency = self.latency(name, &record, id.as_ref(), sent, reply);
        let entry = self.row(name, method);
        match (sent, id.is_some(), reply) {
            (false, _, true) => {
                entry.replies += 1;
                if message.get("error").is_some()
                    || message["result"]["isError"].as_bool() == Some(true)
                {
                    entry.errors += 1;
                }
                if let Some(us) = latency {
                    entry.latencies_us.push(us);
                }
            }
            // Our answer to a server's request: counted with that request.
            (true, _, true) => {}
            (true, true, false) => entry.requests_sent += 1,
            (false, true, false) => entry.requests_received += 1,
            (true, false, false) => entry.notifications_sent += 1,
            (false, false, false) => entry.notifications_received += 1,
        }
    }

    /// The reply latency of `record` (server `name`'s message `id`): the recorded one, else
    /// the time since its request was sent; a request sent is noted with its time.
    fn latency(
        &mut self,
        name: &str,
        record: &Value,
        id: Option<&String>,
        sent: bool,
        reply: bool,
    ) -> Option<u64> {
        let ts = record["ts"].as_str().and_then(epoch_us);
        let mut latency = record["latency_us"].as_u64();
        match (sent, id, reply) {
            (true, Some(id), false) => {
                if let Some(ts) = ts {
                    if self.sent_at.len() < MAX_PENDING {
                        self.sent_at.insert((name.to_owned(), id.clone()), ts);
                    }
                }
            }
            (false, Some(id), true) => {
                let asked = self.sent_at.remove(&(name.to_owned(), id.clone()));
                if latency.is_none() {
                    latency = asked.zip(ts).map(|(a, t)| t.saturating_sub(a));
                }
            }
            _ => {}
        }
        latency
    }

    /// The row of server `name`'s `method` (past [`MAX_ROWS`], the one row of the rest).
    fn row(&mut self, name: &str, method: &str) -> &mut MethodStats {
        let mut key = (shown(name), shown(method));
        if self.by_key.len() >= MAX_ROWS && !self.by_key.contains_key(&key) {
            key = ("*".to_owned(), MORE_METHODS.to_owned());
        }
        self.by_key
            .entry(key)
            .or_insert_with_key(|(server, method)| MethodStats {
                server: server.clone(),
                method: method.clone(),
                ..MethodStats::default()
            })
    }

    /// The table, sorted by server then method.
    pub fn finish(mut self) -> TraceStats {
        self.out.methods = self
            .by_key
            .into_values()
            .map(|mut m| {
                m.latency_ms = percentiles(&mut m.latencies_us);
                m
            })
            .collect();
        self.out
    }
}

/// Whether `v` is a trace record: a JSON object with a direction (`send` or `recv`), as
/// `--trace` writes every line.
pub fn is_record(v: &Value) -> bool {
    v.is_object() && matches!(v["dir"].as_str(), Some("send" | "recv"))
}

/// Whether a record's message is a JSON-RPC reply (a result or an error, no method).
fn is_reply(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// A record's `ts` (RFC 3339 UTC, as the trace writes it: `2026-12-05T10:00:00.123456Z`) in
/// microseconds since the epoch; `None` for any other shape.
fn epoch_us(ts: &str) -> Option<u64> {
    let b = ts.as_bytes();
    if b.len() < 20 || b.len() > 40 || !ts.is_ascii() || !ts.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let frac = &ts[19..ts.len() - 1];
    let micros = match frac.strip_prefix('.') {
        None if frac.is_empty() => 0,
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|c| c.is_ascii_digit()) => {
            let six: String = f.chars().chain(std::iter::repeat('0')).take(6).collect();
            six.parse::<u64>().ok()?
        }
        _ => return None,
    };
    // Days since the epoch from the civil date (Howard Hinnant's algorithm).
    let (y, mo, d) = (y as i64, mo as i64, d as i64);
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + mi * 60 + s;
    Some(secs * 1_000_000 + micros)
}

/// p50, p90, p99 and max of `us` in milliseconds (nearest rank).
fn percentiles(us: &mut [u64]) -> Option<[f64; 4]> {
    if us.is_empty() {
        return None;
    }
    us.sort_unstable();
    let rank = |p: f64| {
        let i = ((p / 100.0) * us.len() as f64).ceil() as usize;
        us[i.clamp(1, us.len()) - 1] as f64 / 1000.0
    };
    Some([rank(50.0), rank(90.0), rank(99.0), rank(100.0)])
}

/// The table as text, one line per server and method.
pub fn render(s: &TraceStats) -> String {
    let sw = s
        .methods
        .iter()
        .map(|m| m.server.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let mw = s
        .methods
        .iter()
        .map(|m| m.method.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = format!(
        "{:<sw$}  {:<mw$}  {:>6} {:>6} {:>5} {:>6} {:>7} {:>8} {:>8} {:>8} {:>8}\n",
        "SERVER",
        "METHOD",
        "SENT",
        "REPLY",
        "ERR",
        "ASKED",
        "NOTIFY",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms"
    );
    for m in &s.methods {
        let lat = |i: usize| {
            m.latency_ms
                .map(|l| format!("{:.2}", l[i]))
                .unwrap_or_else(|| "-".to_owned())
        };
        out.push_str(&format!(
            "{:<sw$}  {:<mw$}  {:>6} {:>6} {:>5} {:>6} {:>7} {:>8} {:>8} {:>8} {:>8}\n",
            m.server,
            m.method,
            m.requests_sent,
            m.replies,
            m.errors,
            m.requests_received,
            m.notifications_sent + m.notifications_received,
            lat(0),
            lat(1),
            lat(2),
            lat(3)
        ));
    }
    out.push_str(&format!("{} records", s.records));
    if s.http_exchanges > 0 {
        out.push_str(&format!(
            " ({} of them HTTP exchanges: a response's status, not a message)",
            s.http_exchanges
        ));
    }
    if s.skipped > 0 {
        out.push_str(&format!(
            "; {} lines were not trace records (the first at line {})",
            s.skipped,
            s.first_skipped_line.unwrap_or(0)
        ));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hostile_names_are_cut_and_cleaned_and_rows_are_bounded() {
        let long = "m".repeat(10_000);
        let line = format!(
            r#"{{"dir":"send","server":"s\u001b[31m","id":1,"method":"{long}","message":{{"method":"{long}"}}}}"#
        );
        let st = stats([line.as_str()], None);
        let m = &st.methods[0];
        assert_eq!(m.method.chars().count(), MAX_NAME_CHARS + 3);
        assert!(!m.server.contains('\u{1b}'), "{:?}", m.server);
        let mut b = StatsBuilder::new(None);
        for i in 0..MAX_ROWS + 5 {
            let l =
                format!(r#"{{"dir":"send","server":"s","id":1,"method":"m{i}","message":{{}}}}"#);
            b.push(Some(&l));
        }
        let st = b.finish();
        assert_eq!(st.methods.len(), MAX_ROWS + 1);
        let more = st.methods.iter().find(|m| m.method == MORE_METHODS);
        assert_eq!(more.map(|m| m.requests_sent), Some(5));
    }

    fn rec(
        dir: &str,
        id: Option<u64>,
        method: &str,
        latency: Option<u64>,
        message: &str,
    ) -> String {
        serde_json::json!({
            "ts": "2026-12-05T00:00:00Z", "server": "s", "dir": dir, "id": id, "method": method,
            "latency_us": latency, "bytes": message.len(),
            "message": serde_json::from_str::<Value>(message).unwrap(),
        })
        .to_string()
    }

    #[test]
    fn counts_each_kind_and_the_reply_latencies() {
        let mut lines = Vec::new();
        for i in 0..10u64 {
            lines.push(rec(
                "send",
                Some(i),
                "tools/call",
                None,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            ));
            let reply = if i == 9 {
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#
            } else {
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
            };
            lines.push(rec(
                "recv",
                Some(i),
                "tools/call",
                Some((i + 1) * 1000),
                reply,
            ));
        }
        lines.push(rec(
            "recv",
            None,
            "notifications/progress",
            None,
            r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
        ));
        lines.push(rec(
            "send",
            None,
            "notifications/initialized",
            None,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ));
        lines.push(rec(
            "recv",
            Some(7),
            "roots/list",
            None,
            r#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#,
        ));
        lines.push(rec(
            "send",
            Some(7),
            "roots/list",
            None,
            r#"{"jsonrpc":"2.0","id":7,"result":{"roots":[]}}"#,
        ));
        lines.push("not json".to_owned());
        let s = stats(lines.iter().map(String::as_str), None);
        assert_eq!(s.records, 24);
        assert_eq!((s.skipped, s.first_skipped_line), (1, Some(25)));
        let call = s.methods.iter().find(|m| m.method == "tools/call").unwrap();
        assert_eq!((call.requests_sent, call.replies, call.errors), (10, 10, 1));
        assert_eq!(call.latency_ms, Some([5.0, 9.0, 10.0, 10.0]));
        let roots = s.methods.iter().find(|m| m.method == "roots/list").unwrap();
        assert_eq!(
            (roots.requests_received, roots.requests_sent, roots.replies),
            (1, 0, 0)
        );
        let progress = s
            .methods
            .iter()
            .find(|m| m.method == "notifications/progress")
            .unwrap();
        assert_eq!(progress.notifications_received, 1);
        let text = render(&s);
        assert!(text.contains("tools/call"), "{text}");
        assert!(
            text.contains("1 lines were not trace records (the first at line 25)"),
            "{text}"
        );
    }

    #[test]
    fn http_exchange_records_are_not_messages_but_an_error_body_is_the_reply() {
        let at = |us: u32| format!("2026-12-05T10:00:00.{us:06}Z");
        let lines = [
            json_line(json!({"ts": at(0), "server": "s", "dir": "send", "id": 0,
                "method": "server/discover", "message": {"jsonrpc": "2.0", "id": 0, "method": "server/discover"}})),
            json_line(
                json!({"ts": at(1500), "server": "s", "dir": "recv", "id": 0,
                "method": "server/discover", "http_status": 400, "latency_us": null,
                "message": {"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "no"}}}),
            ),
            json_line(
                json!({"ts": at(2000), "server": "s", "dir": "send", "id": 1,
                "method": "initialize", "message": {"jsonrpc": "2.0", "id": 1, "method": "initialize"}}),
            ),
            json_line(
                json!({"ts": at(3000), "server": "s", "dir": "recv", "id": 1,
                "method": "initialize", "http_status": 200, "message": null}),
            ),
            json_line(
                json!({"ts": at(3000), "server": "s", "dir": "recv", "id": 1, "latency_us": 900,
                "method": "initialize", "message": {"jsonrpc": "2.0", "id": 1, "result": {}}}),
            ),
            json_line(
                json!({"ts": at(4000), "server": "s", "dir": "send", "id": null,
                "method": "notifications/initialized", "message": {"jsonrpc": "2.0", "method": "notifications/initialized"}}),
            ),
            json_line(
                json!({"ts": at(5000), "server": "s", "dir": "recv", "id": null,
                "method": "notifications/initialized", "http_status": 202, "message": null}),
            ),
            json_line(
                json!({"ts": at(5000), "server": "s", "dir": "recv", "id": null,
                "method": "", "http_status": 200, "message": null}),
            ),
        ];
        let s = stats(lines.iter().map(String::as_str), None);
        assert_eq!((s.records, s.http_exchanges, s.skipped), (8, 4, 0));
        let names: Vec<&str> = s.methods.iter().map(|m| m.method.as_str()).collect();
        assert_eq!(
            names,
            ["initialize", "notifications/initialized", "server/discover"]
        );
        let discover = &s.methods[2];
        assert_eq!((discover.replies, discover.errors), (1, 1));
        assert_eq!(discover.latency_ms, Some([1.5; 4]));
        let init = &s.methods[0];
        assert_eq!(
            (init.requests_sent, init.replies, init.requests_received),
            (1, 1, 0)
        );
        assert_eq!(init.latency_ms, Some([0.9; 4]));
        let n = &s.methods[1];
        assert_eq!((n.notifications_sent, n.notifications_received), (1, 0));
        // Lines that are JSON objects but not records are not counted as records.
        let s = stats([r#"{"name": "x"}"#, "[1]"], None);
        assert_eq!(
            (s.records, s.skipped, s.first_skipped_line),
            (0, 2, Some(1))
        );
    }

    fn json_line(v: Value) -> String {
        v.to_string()
    }

    #[test]
    fn trace_timestamps_read_as_microseconds_since_the_epoch() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_micros(1_796_000_000_123_456);
        let written = harness9_base::time::rfc3339(t);
        assert_eq!(epoch_us(&written), Some(1_796_000_000_123_456));
        assert_eq!(epoch_us("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            epoch_us("2000-03-01T00:00:01.5Z"),
            Some(951_868_801_500_000)
        );
        for bad in [
            "",
            "2026-12-05",
            "2026-13-05T00:00:00Z",
            "2026-12-05T00:00:00+01:00",
            "2026-12-05T00:00:00.Z",
            "1969-12-31T23:59:59Z",
            "２０２６-12-05T00:00:00Z",
        ] {
            assert_eq!(epoch_us(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_server_filter_keeps_its_records_only() {
        let lines = [rec(
            "send",
            Some(1),
            "ping",
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        )];
        assert_eq!(
            stats(lines.iter().map(String::as_str), Some("other")).methods,
            vec![]
        );
        assert_eq!(
            stats(lines.iter().map(String::as_str), Some("s"))
                .methods
                .len(),
            1
        );
    }
}
