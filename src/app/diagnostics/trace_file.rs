//! `--trace FILE`: one JSON object per wire message (JSONL), secrets redacted.

use std::io::Write;
use std::path::Path;

use harness9_actors::trace::{WireRecord, WireTap};
use serde_json::{json, Value};

const REDACTED: &str = "[redacted]";

/// Whether an object key names a credential.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k == "authorization"
        || k == "proxy-authorization"
        || k == "cookie"
        || k == "set-cookie"
        || k.contains("token")
        || k.contains("secret")
        || k.contains("password")
        || k.contains("api_key")
        || k.contains("apikey")
        || k.ends_with("-key")
        || k.ends_with("_key")
}

/// Replaces credential values, every string of `secrets` and every secret of the process's
/// registry (`telemetry::redact_text`) inside `v`.
pub fn redact(v: &mut Value, secrets: &[String]) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_key(k) && (val.is_string() || val.is_number()) {
                    *val = Value::String(REDACTED.to_owned());
                } else {
                    redact(val, secrets);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact(i, secrets)),
        Value::String(s) => {
            for secret in secrets {
                if !secret.is_empty() && s.contains(secret.as_str()) {
                    *s = s.replace(secret.as_str(), REDACTED);
                }
            }
            // The process's one registry too: OAuth grants and model keys are in it.
            if let std::borrow::Cow::Owned(c) = harness9_actors::telemetry::redact_text(s) {
                *s = c;
            }
        }
        _ => {}
    }
}

pub use harness9_base::time::{civil_from_days, rfc3339};

/// One JSONL line for a record.
pub fn record_json(r: &WireRecord, secrets: &[String]) -> Value {
    let mut message = if r.message.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice::<Value>(&r.message)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&r.message).into_owned()))
    };
    redact(&mut message, secrets);
    let mut v = json!({
        "ts": rfc3339(r.ts),
        "server": &*r.server,
        "dir": r.dir.as_str(),
        "id": r.id,
        "method": r.method,
        "latency_us": r.latency_us,
        "bytes": r.message.len(),
        "message": message,
    });
    if let Some(status) = r.http_status {
        v["http_status"] = json!(status);
        v["session"] = json!(r.session);
    }
    if let Some(era) = r.era {
        v["era"] = json!(era);
    }
    if let Some(h) = &r.http {
        let map = |list: &[(String, String)]| {
            let mut m = serde_json::Map::new();
            for (k, val) in list {
                let mut val = Value::String(val.clone());
                redact(&mut val, secrets);
                m.insert(k.to_ascii_lowercase(), val);
            }
            Value::Object(m)
        };
        v["request_headers"] = map(&h.request_headers);
        v["response_headers"] = map(&h.response_headers);
    }
    v
}

/// Opens `path` and starts a writer thread; returns the tap and a handle that finishes the file
/// once every tap clone is dropped. `secrets` are the values to redact; [`open_watched`] takes
/// a list that can change (hot reload).
pub fn open(
    path: &Path,
    secrets: Vec<String>,
) -> anyhow::Result<(WireTap, std::thread::JoinHandle<()>)> {
    open_watched(path, tokio::sync::watch::channel(secrets).1)
}

/// [`open`] with a secret list that is re-read whenever it changes.
pub fn open_watched(
    path: &Path,
    mut secrets_rx: tokio::sync::watch::Receiver<Vec<String>>,
) -> anyhow::Result<(WireTap, std::thread::JoinHandle<()>)> {
    use anyhow::Context as _;
    // 0600 (the wire carries what servers and the user send), never through a symlink.
    let file = crate::private_fs::create_truncate(path)
        .with_context(|| format!("cannot create trace file {}", path.display()))?;
    let (tx, mut rx) = harness9_actors::trace::tap_channel();
    let handle = std::thread::Builder::new()
        .name("trace-writer".into())
        .spawn(move || {
            let mut out = std::io::BufWriter::new(file);
            let mut secrets = secrets_rx.borrow_and_update().clone();
            while let Some(r) = rx.blocking_recv() {
                if secrets_rx.has_changed().unwrap_or(false) {
                    secrets = secrets_rx.borrow_and_update().clone();
                }
                let line = record_json(&r, &secrets);
                if serde_json::to_writer(&mut out, &line).is_err() || out.write_all(b"\n").is_err()
                {
                    return;
                }
                if rx.is_empty() {
                    let _ = out.flush();
                }
            }
            let _ = out.flush();
        })
        .context("cannot start the trace writer")?;
    Ok((tx, handle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn redacts_keys_and_known_values() {
        let mut v = json!({"headers": {"Authorization": "Bearer x", "Accept": "a"},
            "args": {"api_key": "k", "text": "my hunter2-pass is here"}, "n": [{"token": 5}]});
        redact(&mut v, &["hunter2-pass".to_owned()]);
        assert_eq!(v["headers"]["Authorization"], REDACTED);
        assert_eq!(v["headers"]["Accept"], "a");
        assert_eq!(v["args"]["api_key"], REDACTED);
        assert_eq!(v["args"]["text"], "my [redacted] is here");
        assert_eq!(v["n"][0]["token"], REDACTED);
    }

    #[test]
    fn the_secret_list_follows_reloads() {
        let path = std::env::temp_dir().join(format!("harness9-trace-test-{}", std::process::id()));
        let (tx, rx) = tokio::sync::watch::channel(vec!["old-secret".to_owned()]);
        let (tap, handle) = open_watched(&path, rx).expect("open");
        let record = |text: &str| WireRecord {
            ts: UNIX_EPOCH,
            server: "s".into(),
            dir: harness9_actors::trace::Direction::Recv,
            id: None,
            method: Some("notifications/message".into()),
            latency_us: None,
            message: bytes::Bytes::from(format!(r#"{{"text":"{text}"}}"#)),
            http_status: None,
            session: None,
            http: None,
            era: None,
        };
        tap.try_send(record("old-secret new-secret")).expect("send");
        // The writer reads the list when each record arrives: wait until the first is written.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::fs::read_to_string(&path).map_or(true, |s| s.is_empty()) {
            assert!(
                std::time::Instant::now() < deadline,
                "first record never written"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        tx.send_replace(vec!["new-secret".to_owned()]);
        tap.try_send(record("old-secret new-secret")).expect("send");
        drop(tap);
        handle.join().expect("writer");
        let text = std::fs::read_to_string(&path).expect("trace file");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].contains("[redacted] new-secret"), "{}", lines[0]);
        assert!(lines[1].contains("old-secret [redacted]"), "{}", lines[1]);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn formats_timestamps() {
        let t = UNIX_EPOCH + std::time::Duration::from_micros(1_780_000_000_123_456);
        assert_eq!(rfc3339(t), "2026-05-28T20:26:40.123456Z");
    }
}
