//! The retry policy of one model call: which failures are sent again and how often, the wait
//! before each retry (the server's `retry-after`, else exponential backoff) and the error once
//! the retries are used up.

use std::time::Duration;

use super::config::ProviderConfig;
use super::errors::ModelError;

/// A `retry-after` longer than this fails the call instead of waiting.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The kind of a transient failure, which decides the wording and the retry budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RetryClass {
    /// 429, or a rate-limit error event.
    RateLimit,
    /// 503, 529 or an `overloaded_error` event.
    Overloaded,
    /// Another 5xx, or a server error event.
    Server(u16),
    /// The connection could not be made or broke before a response; retried once at most.
    Network,
}

/// How one attempt failed.
pub(super) enum Failure {
    /// Sending again would not help (or would repeat streamed output).
    Fatal(ModelError),
    /// Sending again may work.
    Retry {
        /// Which wording and retry budget apply.
        class: RetryClass,
        /// The wait the server asked for, if it did.
        after: Option<Duration>,
        /// The status and the provider's message, for the texts: `529 overloaded_error: Overloaded`.
        detail: String,
    },
}

/// The retry that follows a transient failure.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NextTry {
    /// Which retry it is (1 = the first).
    pub attempt: u32,
    /// How long to wait before it.
    pub wait: Duration,
    /// What went wrong, for the announcement: `anthropic is overloaded (529 ...)`.
    pub reason: String,
}

/// The retries of one call so far.
pub(super) struct Retries<'a> {
    cfg: &'a ProviderConfig,
    /// Retries announced, of any class.
    retries: u32,
    /// Of those, after a network failure.
    net_retries: u32,
}

impl<'a> Retries<'a> {
    /// No retries yet, under `cfg`'s `max_retries`.
    pub(super) fn new(cfg: &'a ProviderConfig) -> Self {
        Self {
            cfg,
            retries: 0,
            net_retries: 0,
        }
    }

    /// After a transient failure of the latest send: the retry to make, or the error that ends
    /// the call (retries used up, or the server asks for a wait over [`MAX_RETRY_AFTER`]).
    pub(super) fn next(
        &mut self,
        class: RetryClass,
        after: Option<Duration>,
        detail: &str,
    ) -> Result<NextTry, ModelError> {
        // Every send but the first was a retry.
        let sends = self.retries + 1;
        let may_retry = self.retries < self.cfg.max_retries
            && (class != RetryClass::Network || self.net_retries < 1);
        if !may_retry {
            return Err(exhausted(self.cfg, class, detail, sends));
        }
        if let Some(after) = after.filter(|a| *a > MAX_RETRY_AFTER) {
            return Err(ModelError::RateLimited {
                attempts: sends,
                message: format!(
                    "{} ({detail}) and asks to wait {} s, longer than harness9 waits ({} s); try again later",
                    what(self.cfg, class),
                    after.as_secs(),
                    MAX_RETRY_AFTER.as_secs()
                ),
            });
        }
        let wait = after.unwrap_or_else(|| backoff(self.retries));
        self.retries += 1;
        if class == RetryClass::Network {
            self.net_retries += 1;
        }
        Ok(NextTry {
            attempt: self.retries,
            wait,
            reason: format!("{} ({detail})", what(self.cfg, class)),
        })
    }
}

/// What a retryable failure means, for messages: `anthropic is overloaded`.
fn what(cfg: &ProviderConfig, class: RetryClass) -> String {
    let p = cfg.kind.name();
    let m = &cfg.model;
    match class {
        RetryClass::RateLimit => format!("{p} rate limit hit for model \"{m}\""),
        RetryClass::Overloaded => format!("{p} is overloaded"),
        RetryClass::Server(_) => format!("{p} server error"),
        RetryClass::Network => "network error".to_owned(),
    }
}

/// The error for a retryable failure once no retries are left.
fn exhausted(cfg: &ProviderConfig, class: RetryClass, detail: &str, sends: u32) -> ModelError {
    let tries = if sends == 1 {
        "1 try".to_owned()
    } else {
        format!("{sends} tries")
    };
    match class {
        RetryClass::RateLimit | RetryClass::Overloaded => ModelError::RateLimited {
            attempts: sends,
            message: format!(
                "{} ({detail}); gave up after {tries}; wait a minute and try again",
                what(cfg, class)
            ),
        },
        RetryClass::Server(status) => ModelError::Server {
            status,
            message: format!(
                "{} ({detail}); gave up after {tries}; try again later",
                what(cfg, class)
            ),
        },
        RetryClass::Network => ModelError::Network(format!(
            "{detail} (after {tries}); check the network and the base URL"
        )),
    }
}

/// Exponential backoff: 1 s, 2 s, 4 s, ... capped at 30 s.
fn backoff(retries_done: u32) -> Duration {
    Duration::from_secs(1u64 << retries_done.min(5)).min(Duration::from_secs(30))
}

/// The wait a server asks for: `retry-after-ms` (milliseconds) wins over `retry-after`
/// (seconds, possibly fractional). An HTTP date or garbage means none.
pub(super) fn retry_after(ms: Option<&str>, secs: Option<&str>) -> Option<Duration> {
    let parse = |s: &str, scale: f64| {
        let v: f64 = s.trim().parse().ok()?;
        (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64((v * scale).min(1e9)))
    };
    ms.and_then(|s| parse(s, 0.001))
        .or_else(|| secs.and_then(|s| parse(s, 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProviderKind;

    #[test]
    fn retry_after_prefers_ms_and_accepts_fractions() {
        assert_eq!(
            retry_after(Some("1500"), Some("9")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_after(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after(None, Some(" 0.5 ")),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(Some("junk"), Some("3")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(retry_after(None, Some("-1")), None);
        assert_eq!(retry_after(None, None), None);
    }

    #[test]
    fn backoff_doubles_from_one_second() {
        let b: Vec<u64> = (0..4).map(|i| backoff(i).as_secs()).collect();
        assert_eq!(b, vec![1, 2, 4, 8]);
        assert_eq!(backoff(40), Duration::from_secs(30));
    }

    #[test]
    fn exhausted_retries_name_the_tries() {
        let cfg = ProviderConfig::new(ProviderKind::Anthropic, "claude-x");
        let e = exhausted(
            &cfg,
            RetryClass::Overloaded,
            "529 overloaded_error: Overloaded",
            4,
        );
        assert_eq!(
            e.to_string(),
            "anthropic is overloaded (529 overloaded_error: Overloaded); gave up after 4 tries; wait a minute and try again"
        );
        assert!(matches!(e, ModelError::RateLimited { attempts: 4, .. }));
    }
}
