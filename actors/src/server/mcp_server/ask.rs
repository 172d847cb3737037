//! The asynchronous half of the server-requests seam: a server's `elicitation/create` and
//! `sampling/createMessage` go to the front end's handler (an [`InputRequest`] recipient the
//! runtime gives every [`McpServer`](super::McpServer)) and their answers come back on a
//! oneshot, awaited in a spawned future so the actor's mailbox never waits on a person. Both
//! eras come through here: a handshake-era request (`inbound.rs`) and a stateless
//! `input_required` round (`tool_call.rs`). Every wait is bounded ([`ASK_TIMEOUT`], and a
//! call's own deadline); without a handler the synchronous policy of [`crate::server::server_requests`] answers.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::messages::InputRequest;
use crate::protocol::jsonrpc::{ErrorObject, RequestId, INTERNAL_ERROR};
use crate::protocol::methods::{CreateMessage, Elicit, Request};
use crate::server::server_requests;

/// The longest a server's question waits for its answer (a person filling a form).
pub const ASK_TIMEOUT: Duration = Duration::from_secs(600);

/// The most questions one server may have waiting at once; more are refused at once.
pub const MAX_OPEN_ASKS: usize = 16;

/// The JSON-RPC error code of a sampling request the user (or the flags) refused, as the spec's
/// examples use it.
pub const USER_REJECTED: i64 = -1;

/// How long one server has had a question open, all told: a tool call's timeout does not run
/// while the user answers (the call, and the model's turn, wait on the user as they do on a
/// tool approval). Shared by the server actor and its calls' futures (which run in their
/// callers' tasks, so it is `Sync`; nobody holds its lock across anything but arithmetic).
#[derive(Debug, Default)]
pub(crate) struct AskClock(Mutex<Clock>);

#[derive(Debug, Default)]
struct Clock {
    open: usize,
    since: Option<Instant>,
    total: Duration,
}

impl AskClock {
    fn lock(&self) -> MutexGuard<'_, Clock> {
        // Only arithmetic runs under the lock: a poisoned one still holds whole values.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A question opened.
    pub(crate) fn open(&self) {
        let mut c = self.lock();
        if c.open == 0 {
            c.since = Some(Instant::now());
        }
        c.open += 1;
    }

    /// A question was answered or withdrawn.
    pub(crate) fn close(&self) {
        let mut c = self.lock();
        c.open = c.open.saturating_sub(1);
        if c.open == 0 {
            if let Some(t) = c.since.take() {
                c.total += t.elapsed();
            }
        }
    }

    /// The time questions have been open so far, the running one included.
    pub(crate) fn spent(&self) -> Duration {
        let c = self.lock();
        c.total + c.since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

/// Closes its question on the clock when dropped (answered, withdrawn, or the actor gone).
pub(crate) struct OpenAsk(pub(crate) Arc<AskClock>);

impl OpenAsk {
    /// Opens a question on `clock`.
    pub(crate) fn new(clock: &Arc<AskClock>) -> Self {
        clock.open();
        Self(clock.clone())
    }
}

impl Drop for OpenAsk {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The server's questions for a person and who answers them. Invariants: at most
/// [`MAX_OPEN_ASKS`] questions wait at once, one per request id; `clock` runs while any is
/// open; `answerer` is built once and dropped whenever the roots or the handler change.
#[derive(Default)]
pub(super) struct Questions {
    /// Where the server's elicitation and sampling requests go (the front end's handler);
    /// `None` answers them by the headless policy.
    pub(super) input: Option<Recipient<InputRequest>>,
    /// Who answers questions in the middle of a call (built once, shared by every call; dropped
    /// when the roots or the input handler change).
    pub(super) answerer: Option<std::sync::Arc<super::tool_call::Answerer>>,
    /// The server's questions waiting for an answer, by its request id (cancelled when it
    /// cancels the request; dropped with the actor).
    pub(super) asks: HashMap<RequestId, SpawnHandle>,
    /// How long questions have been open: calls' timeouts do not run meanwhile.
    pub(super) clock: Arc<AskClock>,
}

impl Questions {
    /// Whether another question from request `id` may open now.
    pub(super) fn has_room_for(&self, id: &RequestId) -> bool {
        self.asks.len() < MAX_OPEN_ASKS && !self.asks.contains_key(id)
    }
}

/// Whether `method` is answered by a person (through the handler) rather than at once.
pub fn is_ask(method: &str) -> bool {
    matches!(method, Elicit::METHOD | CreateMessage::METHOD)
}

/// The answer when nobody answered (the handler dropped the question or the wait ran out):
/// an elicitation is cancelled, a sampling request refused.
fn unanswered(method: &str, why: &str) -> Result<Value, ErrorObject> {
    if method == Elicit::METHOD {
        return Ok(json!({ "action": "cancel" }));
    }
    Err(ErrorObject {
        code: USER_REJECTED,
        message: format!("the sampling request was not answered: {why}"),
        data: None,
    })
}

/// Asks `handler` and waits at most `bound` for its answer; without a handler, answers by the
/// synchronous policy ([`server_requests::answer`]). A full handler mailbox is an error at once.
pub(crate) async fn ask(
    handler: Option<Recipient<InputRequest>>,
    server: String,
    method: String,
    params: Option<Value>,
    cwd: &Path,
    bound: Duration,
    parent: crate::telemetry::Parent,
) -> Result<Value, ErrorObject> {
    let Some(handler) = handler else {
        // Only elicitation and sampling come here: the roots are not asked for.
        return server_requests::answer(&method, params.as_ref(), &crate::spec::Roots::Off, cwd);
    };
    let (reply, rx) = oneshot::channel();
    let req = InputRequest {
        server,
        method: method.clone(),
        params: params.unwrap_or(Value::Null),
        reply,
        parent,
    };
    if handler.try_send(req).is_err() {
        return Err(ErrorObject {
            code: INTERNAL_ERROR,
            message: "the client has too many questions open; try again later".to_owned(),
            data: None,
        });
    }
    match tokio::time::timeout(bound, rx).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => unanswered(&method, "the client dropped it"),
        Err(_) => unanswered(
            &method,
            &format!("no answer within {}", crate::error::fmt_duration(bound)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Answers;
    impl Actor for Answers {
        type Context = Context<Self>;
    }
    impl Handler<InputRequest> for Answers {
        type Result = ();
        fn handle(&mut self, msg: InputRequest, _: &mut Context<Self>) {
            if msg.method == CreateMessage::METHOD {
                // Dropped: refused.
                return;
            }
            let _ = msg.reply.send(Ok(
                json!({"action": "accept", "content": {"from": msg.server}}),
            ));
        }
    }

    #[actix_rt::test]
    async fn questions_go_to_the_handler_and_a_dropped_one_is_a_no() {
        let h = Answers.start().recipient();
        let cwd = Path::new("/");
        let got = ask(
            Some(h.clone()),
            "s".into(),
            Elicit::METHOD.into(),
            None,
            cwd,
            ASK_TIMEOUT,
            crate::telemetry::Parent::default(),
        )
        .await
        .unwrap();
        assert_eq!(got, json!({"action": "accept", "content": {"from": "s"}}));
        let err = ask(
            Some(h),
            "s".into(),
            CreateMessage::METHOD.into(),
            None,
            cwd,
            ASK_TIMEOUT,
            crate::telemetry::Parent::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.code, USER_REJECTED);
        // No handler: the policy (decline by default) answers.
        let got = ask(
            None,
            "s".into(),
            Elicit::METHOD.into(),
            None,
            cwd,
            ASK_TIMEOUT,
            crate::telemetry::Parent::default(),
        )
        .await
        .unwrap();
        assert_eq!(got["action"], "decline");
    }
}
