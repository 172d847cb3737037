//! One round of a call in flight: sent ([`Round`], [`next_round`]), waited for within the
//! call's deadline (moved by the time the server's questions were open), its idle bound
//! ([`Idle`]) and its cancellation ([`wait_round`]), and withdrawn with
//! `notifications/cancelled` when it ends early ([`CancelOnDrop`]).

use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::NextRound;
use crate::error::CallError;
use crate::messages::ProgressSink;
use crate::server::mcp_server::ask::AskClock;
use crate::server::mcp_server::outbound::{Backlog, CancelRequest, Reply};
use crate::server::mcp_server::{McpServer, Payload, ReplyError};

/// One round of a call in flight: its id, where its reply comes, and its line if the write
/// queue was full.
pub(super) struct Round {
    pub(super) id: i64,
    pub(super) rx: oneshot::Receiver<Reply>,
    pub(super) backlog: Option<Backlog>,
}

/// Sends `notifications/cancelled` if the call future is dropped before its reply.
pub(super) struct CancelOnDrop {
    /// The server actor's, weak: upgraded only to send (a call does not keep it alive).
    pub(super) addr: actix::WeakAddr<McpServer>,
    pub(super) id: i64,
    pub(super) armed: bool,
}

impl CancelOnDrop {
    pub(super) fn fire(&mut self, reason: &'static str) {
        if std::mem::take(&mut self.armed) {
            if let Some(addr) = self.addr.upgrade() {
                addr.do_send(CancelRequest {
                    id: self.id,
                    reason,
                });
            }
        }
    }
}

impl CancelOnDrop {
    pub(super) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.fire("caller went away");
    }
}

/// Sends the next round of a call and points the cancel guard at its id; `None` when the
/// actor has stopped (or did not take the round before the call's deadline).
pub(super) async fn next_round(
    next: NextRound,
    guard: &mut CancelOnDrop,
    deadline: tokio::time::Instant,
) -> Option<Round> {
    let addr = guard.addr.upgrade()?;
    let r = tokio::time::timeout_at(deadline, addr.send(next))
        .await
        .ok()?
        .ok()
        .flatten()?;
    // The round before it was answered or withdrawn (the guard disarmed or fired); one still
    // armed is withdrawn now, as dropping its guard did.
    guard.fire("caller went away");
    guard.id = r.id;
    guard.armed = true;
    Some(r)
}

/// The error of a call whose server actor stopped between two rounds.
pub(super) fn stopped(server: &str, tool: &str) -> CallError {
    CallError::ServerExited {
        server: server.to_owned(),
        tool: tool.to_owned(),
        status: "stopped".to_owned(),
    }
}

/// Why a round ended without a reply.
pub(super) enum RoundError {
    Cancelled,
    NotReading,
    Timeout,
    /// No progress within the idle timeout.
    Idle(std::time::Duration),
    Reply(ReplyError),
    Dropped,
}

impl RoundError {
    pub(super) fn into_call_error(
        self,
        server: String,
        tool: String,
        after: std::time::Duration,
    ) -> CallError {
        match self {
            RoundError::Cancelled => CallError::Cancelled { server, tool },
            RoundError::NotReading => CallError::NotReading {
                server,
                tool,
                after,
            },
            RoundError::Idle(after) => CallError::Idle {
                server,
                tool,
                after,
            },
            RoundError::Timeout => CallError::Timeout {
                server,
                tool,
                after,
            },
            RoundError::Reply(ReplyError::Rpc(error)) => CallError::Rpc {
                server,
                tool,
                error,
            },
            RoundError::Reply(ReplyError::Gone(status)) => CallError::ServerExited {
                server,
                tool,
                status,
            },
            RoundError::Reply(ReplyError::TooLarge(max)) => {
                CallError::TooLarge { server, tool, max }
            }
            RoundError::Reply(ReplyError::Transport(detail) | ReplyError::StreamBroken(detail)) => {
                CallError::Transport {
                    server,
                    tool,
                    detail,
                }
            }
            RoundError::Dropped => CallError::ServerExited {
                server,
                tool,
                status: "stopped".to_owned(),
            },
        }
    }
}

/// A call's idle bound (`toolIdleTimeoutSec`): the moment of its last sign of life (a progress
/// notice, a new round), shared with the progress sink the server actor calls.
#[derive(Clone)]
pub(super) struct Idle {
    pub(super) after: std::time::Duration,
    base: std::time::Instant,
    /// Milliseconds after `base` of the last sign of life.
    last: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Idle {
    pub(super) fn new(after: std::time::Duration) -> Self {
        Self {
            after,
            base: std::time::Instant::now(),
            last: Default::default(),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// When the call is idle for too long, as of the last sign of life.
    fn deadline(&self) -> tokio::time::Instant {
        let ms = self.last.load(std::sync::atomic::Ordering::Relaxed);
        tokio::time::Instant::from_std(self.base + std::time::Duration::from_millis(ms))
            + self.after
    }

    /// Sleeps until the idle deadline; forever without an idle bound.
    async fn sleep(idle: Option<&Idle>) {
        match idle {
            // Boxed: few calls have an idle bound, and every call's future holds this one.
            Some(i) => Box::pin(tokio::time::sleep_until(i.deadline())).await,
            None => std::future::pending().await,
        }
    }

    /// A progress sink that marks each notice as a sign of life and hands it on to `inner`.
    pub(super) fn sink(&self, inner: Option<ProgressSink>) -> ProgressSink {
        let me = self.clone();
        ProgressSink::new(move |p| {
            me.touch();
            if let Some(s) = &inner {
                s.send(p);
            }
        })
    }
}

/// A call's deadline, the question time it has been moved by, and the server's question clock.
/// Invariant: when the deadline comes while questions were open, it moves by their time
/// ([`Deadline::extend`]), so a person answering never times a call out.
pub(super) struct Deadline {
    pub(super) at: tokio::time::Instant,
    /// The question time already accounted for.
    asked: Duration,
    clock: std::sync::Arc<AskClock>,
}

impl Deadline {
    /// `timeout` from now; the question time so far is not the call's.
    pub(super) fn start(timeout: Duration, clock: std::sync::Arc<AskClock>) -> Self {
        Self {
            at: tokio::time::Instant::now() + timeout,
            asked: clock.spent(),
            clock,
        }
    }

    /// Moves the deadline by the question time not yet accounted for; whether it moved.
    fn extend(&mut self) -> bool {
        let spent = self.clock.spent();
        let more = spent.saturating_sub(self.asked);
        self.asked = spent;
        if more.is_zero() {
            return false;
        }
        self.at += more;
        true
    }
}

/// The server is not reading: waits for room in the write queue, within the call's own
/// timeout and its cancellation.
async fn wait_for_room(
    b: Backlog,
    guard: &mut CancelOnDrop,
    dl: &Deadline,
    cancel: &CancellationToken,
) -> Result<(), RoundError> {
    tokio::select! {
        biased;
        _ = b.send() => Ok(()),
        _ = cancel.cancelled() => {
            guard.fire("cancelled by the user");
            Err(RoundError::Cancelled)
        }
        _ = tokio::time::sleep_until(dl.at) => {
            guard.fire("timed out");
            Err(RoundError::NotReading)
        }
    }
}

/// Waits for one round's reply: room in the write queue first, then the reply, both within
/// the call's deadline (moved by the time the server's questions were open) and its
/// cancellation; an early end tells the server (the guard). An `async move` block, not an
/// `async fn`, so that the round is held once in the future (see `Call::run`).
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn would hold the round twice in its future"
)]
pub(super) fn wait_round<'a>(
    round: Round,
    guard: &'a mut CancelOnDrop,
    dl: &'a mut Deadline,
    (cancel, idle): (&'a CancellationToken, Option<&'a Idle>),
    stuck: &'a impl Fn() -> bool,
) -> impl std::future::Future<Output = Result<Payload, RoundError>> + 'a {
    async move {
        if let Some(i) = idle {
            i.touch();
        }
        if let Some(b) = round.backlog {
            // Rare (the server is not reading), so in a box of its own: the call's future holds
            // the common path's state only.
            Box::pin(wait_for_room(b, guard, dl, cancel)).await?;
        }
        if tokio::time::Instant::now() >= dl.at {
            // Out of time before the first look at the reply: a timeout, whatever may have
            // arrived meanwhile (so a tiny timeout times out on any machine).
            guard.fire("timed out");
            return Err(RoundError::Timeout);
        }
        let mut rx = round.rx;
        let outcome = loop {
            tokio::select! {
                biased;
                r = &mut rx => break r,
                _ = cancel.cancelled() => {
                    guard.fire("cancelled by the user");
                    return Err(RoundError::Cancelled);
                }
                _ = tokio::time::sleep_until(dl.at) => {
                    if dl.extend() {
                        continue;
                    }
                    guard.fire("timed out");
                    if stuck() {
                        return Err(RoundError::NotReading);
                    }
                    return Err(RoundError::Timeout);
                }
                _ = Idle::sleep(idle) => {
                    let Some(i) = idle else { continue };
                    // Progress came meanwhile, or a question was open: the wait starts again.
                    if tokio::time::Instant::now() < i.deadline() {
                        continue;
                    }
                    if dl.extend() {
                        i.touch();
                        continue;
                    }
                    guard.fire("no progress within the idle timeout");
                    return Err(RoundError::Idle(i.after));
                }
            }
        };
        guard.disarm();
        match outcome {
            Ok(Ok(raw)) => Ok(raw),
            Ok(Err(e)) => Err(RoundError::Reply(e)),
            Err(_) => Err(RoundError::Dropped),
        }
    }
}
