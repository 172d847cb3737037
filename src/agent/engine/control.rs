//! The engine's other messages: cancel, clear, compact, resume, switch the model, turn tools
//! off, list the tools the next request offers. Each is refused or ignored while a turn runs,
//! except cancel (a list then comes from an offer of its own).

use std::sync::Arc;

use actix::prelude::*;
use harness9_actors::messages::{GetInstructions, ListTools};
use tokio_util::sync::CancellationToken;

use super::{compact, CancelTurn, ClearConversation, Engine};
use crate::model::{Message, Provider};
impl Handler<ClearConversation> for Engine {
    type Result = ();

    fn handle(&mut self, _msg: ClearConversation, _ctx: &mut Context<Self>) {
        if self.running.is_none() {
            self.conversation.clear();
            self.new_conversation();
            self.offer.deferral.forget();
            if let Some(log) = &mut self.log {
                if let Err(e) = log.replace("clear", &[]) {
                    tracing::warn!("{e}");
                }
                // A new conversation: the old one's pending tasks are not delivered into it.
                if let Some(j) = log.tasks() {
                    j.settled(&j.pending());
                }
            }
        }
    }
}

/// Replace the conversation with a summary the model writes (`/compact [focus]`). Refused while
/// a turn runs; [`CancelTurn`] cancels it. The conversation is unchanged when it fails.
#[derive(Debug, Message)]
#[rtype(result = "Result<compact::Compacted, String>")]
pub struct Compact {
    /// What the summary should keep above all.
    pub focus: Option<String>,
}

impl Handler<Compact> for Engine {
    type Result = ResponseActFuture<Self, Result<compact::Compacted, String>>;

    fn handle(&mut self, msg: Compact, _ctx: &mut Context<Self>) -> Self::Result {
        if self.running.is_some() {
            return Box::pin(actix::fut::ready(Err(
                "a turn is running; press Esc to cancel it, then /compact".to_owned(),
            )));
        }
        if !super::turn::worth_summarizing(&self.conversation) {
            return Box::pin(actix::fut::ready(Err("nothing to compact yet".to_owned())));
        }
        let cancel = CancellationToken::new();
        self.running = Some(cancel.clone());
        let messages = std::mem::take(&mut self.conversation);
        let (provider, config) = (self.provider.clone(), self.config.clone());
        let fut = async move {
            let tokens_before = compact::estimate_tokens(&messages);
            let summary = compact::summarize(
                &*provider,
                &config,
                &messages,
                msg.focus.as_deref(),
                &cancel,
            )
            .await;
            (messages, summary, tokens_before)
        };
        Box::pin(
            fut.into_actor(self)
                .map(|(messages, summary, tokens_before), act, _| {
                    act.running = None;
                    match summary {
                        Ok((new, usage)) => {
                            let replaced = messages.len();
                            act.conversation = new;
                            act.save_whole("compact");
                            let tokens_after = compact::estimate_tokens(&act.conversation);
                            act.last_input = tokens_after as u64;
                            Ok(compact::Compacted {
                                replaced,
                                tokens_before,
                                tokens_after,
                                usage,
                            })
                        }
                        Err(e) => {
                            act.conversation = messages;
                            Err(format!("compaction failed: {e}"))
                        }
                    }
                }),
        )
    }
}

/// Use this provider (and model) from the next turn on (`/model`).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetProvider(pub crate::model::ProviderConfig);

impl Handler<SetProvider> for Engine {
    type Result = ();

    fn handle(&mut self, msg: SetProvider, _ctx: &mut Context<Self>) {
        let spec = format!("{}/{}", msg.0.kind, msg.0.model);
        if let Some(log) = &mut self.log {
            if let Err(e) = log.record_model(&spec) {
                tracing::warn!("{e}; this conversation is no longer saved");
                self.log = None;
            }
        }
        self.provider = Arc::new(Provider::new(msg.0));
    }
}

/// The tools turned off for the rest of the session (`/tools off NAME`): the whole set.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct DisableTools(pub std::collections::BTreeSet<String>);

impl Handler<DisableTools> for Engine {
    type Result = ();

    fn handle(&mut self, msg: DisableTools, _ctx: &mut Context<Self>) {
        // The next turn's offer is built anew, its definitions without these tools.
        self.disabled = Arc::new(msg.0);
    }
}

/// Continue a saved conversation (`/resume ID`): it replaces the current one, and later turns
/// are saved to its log. Refused (`false`) while a turn runs.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct ResumeConversation {
    /// Where its later turns are saved.
    pub log: Box<dyn super::ConversationLog>,
    /// The saved messages.
    pub messages: Vec<Message>,
}

impl std::fmt::Debug for ResumeConversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeConversation")
            .field("messages", &self.messages.len())
            .finish_non_exhaustive()
    }
}

impl Handler<ResumeConversation> for Engine {
    type Result = bool;

    fn handle(&mut self, msg: ResumeConversation, _ctx: &mut Context<Self>) -> bool {
        if self.running.is_some() {
            return false;
        }
        self.conversation = msg.messages;
        self.log = Some(msg.log);
        self.new_conversation();
        true
    }
}

impl Handler<CancelTurn> for Engine {
    type Result = ();

    fn handle(&mut self, _msg: CancelTurn, _ctx: &mut Context<Self>) {
        if let Some(c) = &self.running {
            c.cancel();
        }
    }
}

/// The names of the tools the next model request would be offered, as a turn's first step
/// offers them (tool search's deferral applied: the loaded tools and `tool_search`), and of
/// every tool in the registry's table. `run --json`'s start event.
#[derive(Debug, Message)]
#[rtype(result = "OfferedTools")]
pub struct ListOffered;

/// What [`ListOffered`] answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, MessageResponse)]
pub struct OfferedTools {
    /// The tools the model is offered, in the order sent.
    pub offered: Vec<String>,
    /// Every tool in the table (the offered, the deferred and the turned off).
    pub all: Vec<String>,
}

impl Handler<ListOffered> for Engine {
    type Result = ResponseActFuture<Self, OfferedTools>;

    fn handle(&mut self, _msg: ListOffered, _ctx: &mut Context<Self>) -> Self::Result {
        let registry = self.registry.clone();
        let config = self.config.clone();
        let kind = self.provider.config().kind;
        let fut = async move {
            let table = registry.send(ListTools).await.unwrap_or_default();
            let instructions = registry.send(GetInstructions).await.unwrap_or_default();
            (table, instructions)
        };
        Box::pin(
            fut.into_actor(self)
                .map(move |(table, instructions), act, _| {
                    let all = table.iter().map(|e| e.name.to_string()).collect();
                    // The offer the next turn takes, so what it offers is the one listed (and not built
                    // twice); a turn that started meanwhile has its own.
                    let mut offer = act.take_offer();
                    let (_, tools) =
                        offer.for_step(&config, kind, table, instructions, &act.conversation);
                    if act.running.is_none() {
                        act.offer = offer;
                    }
                    OfferedTools {
                        offered: tools.iter().map(|d| d.name.clone()).collect(),
                        all,
                    }
                }),
        )
    }
}
