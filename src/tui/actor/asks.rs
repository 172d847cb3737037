//! Where the answers to the questions on screen go: the engine's questions about tool calls
//! and the servers' questions ([`UserAsk`]: elicitation, sampling), each under its own key;
//! a server's question it stopped waiting for is withdrawn from the screen.

use std::collections::HashMap;

use actix::prelude::*;
use harness9_agent::engine::Answer;
use harness9_app::asks::{ServerQuestion, UserAsk};
use tokio::sync::oneshot;

use super::Tui;
use crate::state::{AskAnswer, AskKind, Event, PendingAsk};

/// Where the answer to a server's question goes.
enum AskReply {
    Elicit(oneshot::Sender<serde_json::Value>),
    Sample(oneshot::Sender<bool>),
}

/// The senders of the questions waiting for the user, by key.
#[derive(Default)]
pub(super) struct Replies {
    /// The engine's questions about tool calls.
    tools: HashMap<u64, oneshot::Sender<Answer>>,
    /// Servers' questions (see [`UserAsk`]).
    servers: HashMap<u64, AskReply>,
    /// The next question's key (one sequence for both kinds).
    next: u64,
}

impl Replies {
    /// A key for a new question.
    fn key(&mut self) -> u64 {
        let key = self.next;
        self.next += 1;
        key
    }

    /// Keeps the engine's question's sender; its key.
    pub(super) fn tool_asked(&mut self, answer: oneshot::Sender<Answer>) -> u64 {
        let key = self.key();
        self.tools.insert(key, answer);
        key
    }

    /// Sends the answer to the engine's question `key` (if it still waits).
    pub(super) fn answer_tool(&mut self, key: u64, answer: Answer) {
        if let Some(tx) = self.tools.remove(&key) {
            let _ = tx.send(answer);
        }
    }

    /// Drops the engine's questions' senders: they are declined.
    pub(super) fn clear_tools(&mut self) {
        self.tools.clear();
    }

    /// Drops every sender: every question is declined.
    pub(super) fn clear(&mut self) {
        self.tools.clear();
        self.servers.clear();
    }

    /// Sends the answer to a server's question `key`, if it waits for an answer of that kind.
    pub(super) fn answer_server(&mut self, key: u64, answer: AskAnswer) {
        match (self.servers.remove(&key), answer) {
            (Some(AskReply::Elicit(tx)), AskAnswer::Elicit(v)) => {
                let _ = tx.send(v);
            }
            (Some(AskReply::Sample(tx)), AskAnswer::Sample(yes)) => {
                let _ = tx.send(yes);
            }
            _ => {}
        }
    }
}

impl Handler<UserAsk> for Tui {
    type Result = ();

    fn handle(&mut self, msg: UserAsk, ctx: &mut Context<Self>) {
        let key = self.replies.key();
        let (ask, reply) = match msg.question {
            ServerQuestion::Elicit { params, answer } => (
                crate::elicit::elicitation(key, msg.server, &params),
                AskReply::Elicit(self.forward(key, answer, ctx)),
            ),
            ServerQuestion::Sample {
                sampling,
                model,
                answer,
            } => (
                PendingAsk {
                    key,
                    server: msg.server,
                    kind: AskKind::Sampling { sampling, model },
                },
                AskReply::Sample(self.forward(key, answer, ctx)),
            ),
        };
        self.replies.servers.insert(key, reply);
        self.apply(Event::Asked(ask), ctx);
    }
}

impl Tui {
    /// A sender whose answer goes on to `real`; when the server stops waiting first (`real`
    /// closes), the question is withdrawn from the screen.
    fn forward<T: Send + 'static>(
        &mut self,
        key: u64,
        mut real: oneshot::Sender<T>,
        ctx: &mut Context<Self>,
    ) -> oneshot::Sender<T> {
        let (tx, rx) = oneshot::channel();
        ctx.spawn(
            async move {
                let got = tokio::select! {
                    v = rx => Some(v),
                    _ = real.closed() => None,
                };
                match got {
                    Some(Ok(v)) => {
                        let _ = real.send(v);
                        false
                    }
                    Some(Err(_)) => false,
                    None => true,
                }
            }
            .into_actor(self)
            .map(move |withdrawn, act, ctx| {
                if withdrawn {
                    act.replies.servers.remove(&key);
                    act.apply(Event::AskWithdrawn(key), ctx);
                }
            }),
        );
        tx
    }
}
