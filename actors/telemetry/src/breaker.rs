//! What the exporters know of each collector (by origin, `scheme://host:port`): a circuit
//! breaker, so a collector that is down costs one failed attempt, not one per export. A
//! refused, reset or timed-out exchange marks it down for [`RETRY_AFTER`]; meanwhile every
//! export to it fails at once without touching the network (the batch is dropped: the SDK's
//! queues are bounded), then one export tries again. Any HTTP answer marks it up. The first
//! failure of the process is said once: a warning in the log (stderr for the headless
//! commands) and the [`failures`] watch, which the TUI turns into one transcript line. The
//! exit flush asks [`exit_bound`] how long the collectors deserve. The state is process-wide,
//! behind one lock held only for a lookup or an insert: the SDK's export threads, the start's
//! probe and doctor's probe share it; no actor touches it.

use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// How long a collector that failed is left alone before one export tries it again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// The exit flush's bound when a collector answered in this process: it is there, and what is
/// left is real data.
pub const FLUSH_WHEN_UP: Duration = Duration::from_secs(3);
/// The exit flush's bound when no collector has answered yet (a short command: the start's
/// probe is still out): a collector that accepts and never answers costs at most this.
pub const FLUSH_WHEN_UNKNOWN: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    Up,
    Down { until: Instant },
}

static HEALTH: LazyLock<Mutex<BTreeMap<String, Health>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// The first failure's message, once it happened.
static FAILING: LazyLock<tokio::sync::watch::Sender<Option<String>>> =
    LazyLock::new(|| tokio::sync::watch::channel(None).0);

fn with_health<T>(f: impl FnOnce(&mut BTreeMap<String, Health>) -> T) -> T {
    // A poisoned lock only means a panic elsewhere mid-update: the map is still a map.
    let mut g = match HEALTH.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    f(&mut g)
}

/// Whether exports to `origin` are skipped now (it failed less than [`RETRY_AFTER`] ago).
pub(crate) fn is_down(origin: &str) -> bool {
    with_health(
        |h| matches!(h.get(origin), Some(Health::Down { until }) if Instant::now() < *until),
    )
}

/// `origin` answered.
pub(crate) fn answered(origin: &str) {
    with_health(|h| h.insert(origin.to_owned(), Health::Up));
}

/// `origin` failed (`why`) on the way to `endpoint`: down for [`RETRY_AFTER`], and said once
/// per process (the endpoint without credentials; header values are never part of it).
pub fn failed(origin: &str, endpoint: &str, why: &str) {
    with_health(|h| {
        h.insert(
            origin.to_owned(),
            Health::Down {
                until: Instant::now() + RETRY_AFTER,
            },
        )
    });
    report(endpoint, why);
}

/// Says once that export is failing.
fn report(endpoint: &str, why: &str) {
    let shown = super::without_credentials(endpoint);
    let why = super::redact_text(why);
    let text = format!(
        "telemetry: export to {shown} failed: {why}; spans and metrics are dropped while the collector is down (tried again every {} s); check OTEL_EXPORTER_OTLP_ENDPOINT and that the collector runs",
        RETRY_AFTER.as_secs()
    );
    let first = FAILING.send_if_modified(|v| {
        if v.is_some() {
            return false;
        }
        *v = Some(text.clone());
        true
    });
    if first {
        tracing::warn!("{text}");
    }
}

/// Says once that the exit flush ran out of time on `endpoint` (a collector that accepts and
/// does not answer).
pub fn flush_timed_out(endpoint: &str, bound: Duration) {
    report(
        endpoint,
        &format!("no answer within {} ms at exit", bound.as_millis()),
    );
}

/// The first failure's message, when there was one: `changed()` fires once it happens.
pub fn failures() -> tokio::sync::watch::Receiver<Option<String>> {
    FAILING.subscribe()
}

/// How long the exit flush may wait for `origins`: nothing when each is known down, else
/// [`FLUSH_WHEN_UP`] when one answered, else [`FLUSH_WHEN_UNKNOWN`].
pub fn exit_bound(origins: &[String]) -> Duration {
    with_health(|h| {
        let now = Instant::now();
        let down = |o: &String| matches!(h.get(o), Some(Health::Down { until }) if now < *until);
        if !origins.is_empty() && origins.iter().all(down) {
            Duration::ZERO
        } else if origins.iter().any(|o| h.get(o) == Some(&Health::Up)) {
            FLUSH_WHEN_UP
        } else {
            FLUSH_WHEN_UNKNOWN
        }
    })
}

/// `scheme://host:port` of `url` (the port explicit), the breaker's key; `None` when it does
/// not parse as an http(s) URL.
pub fn origin(url: &str) -> Option<String> {
    harness9_net::origin_of(url).map(|o| o.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_collector_is_skipped_and_the_exit_does_not_wait_for_it() {
        let o = "http://breaker-test:1".to_owned();
        assert!(!is_down(&o));
        assert_eq!(exit_bound(std::slice::from_ref(&o)), FLUSH_WHEN_UNKNOWN);
        failed(&o, "http://user:pw@breaker-test:1/v1/traces?k=v", "refused");
        assert!(is_down(&o));
        assert_eq!(exit_bound(std::slice::from_ref(&o)), Duration::ZERO);
        let said = failures().borrow().clone().unwrap_or_default();
        assert!(said.contains("breaker-test:1/v1/traces"), "{said}");
        assert!(!said.contains("pw"), "{said}");
        answered(&o);
        assert!(!is_down(&o));
        assert_eq!(exit_bound(&[o]), FLUSH_WHEN_UP);
        assert_eq!(exit_bound(&[]), FLUSH_WHEN_UNKNOWN);
    }

    #[test]
    fn origins_name_scheme_host_and_port() {
        assert_eq!(
            origin("http://C:4318/v1/traces").as_deref(),
            Some("http://c:4318")
        );
        assert_eq!(
            origin("https://c/v1/traces").as_deref(),
            Some("https://c:443")
        );
        assert_eq!(origin("not a url"), None);
    }
}
