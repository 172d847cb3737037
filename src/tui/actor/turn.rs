//! The turn as the `Tui` actor follows it: a prompt sent to the engine as `RunTurn`, the turn's
//! one ordered stream read back (its events, its questions about tool calls, its outcome), and
//! the engine gone before the outcome said.

use actix::prelude::*;
use futures_util::StreamExt as _;
use harness9_agent::engine::{turn_stream, EngineError, RunTurn, TurnEvent, TurnOutcome};

use super::Tui;
use crate::state::{Approval, Event};

/// An item of a turn's stream, and the stream's end.
enum TurnItem {
    Event(TurnEvent),
    Ended,
}

/// The summary line of a turn that ended with an answer.
fn summary(o: &TurnOutcome) -> String {
    format!(
        "{} model call{} · {} · {} tokens in{}, {} out",
        o.steps,
        if o.steps == 1 { "" } else { "s" },
        harness9_actors::error::fmt_duration(o.elapsed),
        o.usage.input_tokens,
        match o.usage.cached_input_tokens {
            0 => String::new(),
            c => format!(" ({c} cached)"),
        },
        o.usage.output_tokens
    )
}

impl Tui {
    /// Starts a turn on `prompt` (and what follows it in the user's message).
    pub(super) fn submit(
        &mut self,
        prompt: String,
        attachments: Vec<harness9_agent::model::Block>,
        ctx: &mut Context<Self>,
    ) {
        let Some(engine) = self.engine.clone() else {
            self.apply(Event::TurnNotStarted, ctx);
            return;
        };
        let (events, rx) = turn_stream();
        engine.do_send(RunTurn {
            prompt,
            attachments,
            events,
            can_ask: true,
        });
        // The turn's one ordered stream; its end without an outcome means the engine is gone.
        self.turn_open = true;
        let mut rx = rx;
        let items = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
            .map(TurnItem::Event)
            .chain(futures_util::stream::once(async { TurnItem::Ended }));
        ctx.add_stream(items);
    }
}

impl StreamHandler<TurnItem> for Tui {
    fn handle(&mut self, item: TurnItem, ctx: &mut Context<Self>) {
        match item {
            TurnItem::Event(TurnEvent::Update(e)) => self.apply(Event::Engine(e), ctx),
            TurnItem::Event(TurnEvent::Ask(q)) => {
                let key = self.replies.tool_asked(q.answer);
                // A question of a turn being cancelled is never shown: the cancel ends it.
                if self.state.turn.cancelling {
                    return;
                }
                let mut a = Approval::new(key, q.name, q.arguments.to_string());
                a.tool_rule = harness9_agent::permissions::tool_rule(
                    &a.name,
                    q.server.as_deref(),
                    &q.arguments,
                );
                a.call = Some(q.id);
                a.server = q.server;
                a.rule = q.rule;
                self.apply(Event::ApprovalAsked(a), ctx);
            }
            TurnItem::Event(TurnEvent::Done(r)) => {
                self.turn_open = false;
                // The questions a cancel left unanswered: the turn has ended them.
                self.replies.clear_tools();
                let done = r.as_ref().map(summary).map_err(EngineError::to_string);
                self.apply(Event::TurnDone(done), ctx);
            }
            TurnItem::Ended => {
                self.replies.clear_tools();
                if std::mem::take(&mut self.turn_open) {
                    self.apply(Event::TurnDone(Err("the engine stopped".to_owned())), ctx);
                }
            }
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}
