//! The conversation's effects: switching the model (`/model`) and resuming a saved
//! conversation (`/resume`).

use actix::prelude::*;
use harness9_agent::engine::{ResumeConversation, SetProvider};

use super::Tui;
use crate::state::Event;

impl Tui {
    /// `/model [provider/]name`: the settings resolved again with that model (and provider),
    /// handed to the engine for the next turn.
    /// Whether `spec` (`provider/name` or a bare name) is the model in use.
    pub(super) fn uses_model(&self, spec: &str) -> bool {
        let current = self.state.model.label.as_deref().unwrap_or_default();
        self.state.model.id.as_deref() == Some(spec) || current.replacen(' ', "/", 1) == spec
    }

    pub(super) fn set_model(&mut self, spec: &str, ctx: &mut Context<Self>) {
        use harness9_agent::model::settings;
        let Some(engine) = self.engine.clone() else {
            return;
        };
        let flags = self.model_flags.with_model(spec);
        let resolved = settings::resolve(&flags);
        match resolved {
            Ok(s) => match s.provider.clone() {
                Some(p) => {
                    self.model_flags = flags;
                    let switched = Event::ModelSwitched {
                        model: format!("{} {}", p.kind, p.model),
                        model_id: p.model.clone(),
                        context_window: s.context_window(&p.model),
                        settings: std::sync::Arc::new(s),
                    };
                    engine.do_send(SetProvider(p));
                    self.apply(switched, ctx);
                }
                None => self.notice(true, settings::how_to_configure().to_owned(), ctx),
            },
            Err(e) => self.notice(true, format!("/model {spec}: {e}"), ctx),
        }
    }

    /// `/resume`: the list of saved conversations, or the one named, which replaces the
    /// transcript and the engine's conversation.
    pub(super) fn resume(&mut self, id: String, ctx: &mut Context<Self>) {
        use crate::state::Entry;
        use harness9_app::stores::conversations;
        let dir = conversations::dir();
        if id.is_empty() {
            let here = &self.policy.place.root;
            let listing = conversations::listing(&dir, here, 50);
            self.apply(Event::SessionsListed(listing), ctx);
            return;
        }
        let Some(engine) = self.engine.clone() else {
            return;
        };
        let cwd = std::env::current_dir().unwrap_or_default();
        let opened = match conversations::open(&dir, &conversations::Resume::Id(id), &cwd, "") {
            Ok(o) => o,
            Err(e) => return self.notice(true, e, ctx),
        };
        let mut entries = crate::state::entries_of(&opened.messages);
        entries.extend(opened.note.clone().map(Entry::Info));
        let session_id = opened.file.id.clone();
        let saved_model = opened.model.clone();
        ctx.spawn(
            engine
                .send(ResumeConversation {
                    log: Box::new(opened.file),
                    messages: opened.messages,
                })
                .into_actor(self)
                .map(move |taken, act, ctx| {
                    if taken == Ok(true) {
                        act.apply(
                            Event::Resumed {
                                session_id,
                                entries,
                            },
                            ctx,
                        );
                        // It goes on with the model it was saved with.
                        if let Some(m) = saved_model.filter(|m| !act.uses_model(m)) {
                            act.set_model(&m, ctx);
                        }
                    } else {
                        act.notice(
                            true,
                            "a turn is running; press Esc to cancel it, then /resume".to_owned(),
                            ctx,
                        );
                    }
                }),
        );
    }
}
