//! The conversation's effects: switching the model (`/model`) and resuming a saved
//! conversation (`/resume`).

use super::*;

impl Tui {
    /// `/model [provider/]name`: the settings resolved again with that model (and provider),
    /// handed to the engine for the next turn.
    /// Whether `spec` (`provider/name` or a bare name) is the model in use.
    pub(super) fn uses_model(&self, spec: &str) -> bool {
        let current = self.state.model.as_deref().unwrap_or_default();
        self.state.model_id.as_deref() == Some(spec) || current.replacen(' ', "/", 1) == spec
    }

    pub(super) fn set_model(&mut self, spec: &str) {
        use crate::agent::model::settings;
        use crate::tui::state::Entry;
        let Some(engine) = self.engine.clone() else {
            return;
        };
        let flags = self.model_flags.with_model(spec);
        let resolved = settings::resolve(&flags);
        match resolved {
            Ok(s) => match s.provider.clone() {
                Some(p) => {
                    self.state.model = Some(format!("{} {}", p.kind, p.model));
                    self.state.model_id = Some(p.model.clone());
                    self.state.context_window = s.context_window(&p.model);
                    self.state.note(Entry::Info(format!(
                        "the next turn uses {} {}",
                        p.kind, p.model
                    )));
                    self.model_flags = flags;
                    self.state.settings = Some(std::sync::Arc::new(s));
                    engine.do_send(SetProvider(p));
                }
                None => self
                    .state
                    .note(Entry::Error(settings::how_to_configure().to_owned())),
            },
            Err(e) => self.state.note(Entry::Error(format!("/model {spec}: {e}"))),
        }
        self.dirty = true;
    }

    /// `/resume`: the list of saved conversations, or the one named, which replaces the
    /// transcript and the engine's conversation.
    pub(super) fn resume(&mut self, id: String, ctx: &mut Context<Self>) {
        use crate::app::sessions;
        use crate::tui::state::Entry;
        let dir = sessions::dir();
        if id.is_empty() {
            crate::tui::resume::open(&mut self.state, sessions::listing(&dir, 50));
            return;
        }
        let Some(engine) = self.engine.clone() else {
            return;
        };
        let cwd = std::env::current_dir().unwrap_or_default();
        let opened = match sessions::open(&dir, &sessions::Resume::Id(id), &cwd, "") {
            Ok(o) => o,
            Err(e) => return self.state.note(Entry::Error(e)),
        };
        let mut entries = crate::tui::state::entries_of(&opened.messages);
        entries.extend(opened.note.clone().map(Entry::Info));
        let session_id = opened.file.id.clone();
        let saved_model = opened.model.clone();
        ctx.spawn(
            engine
                .send(ResumeConversation(opened))
                .into_actor(self)
                .map(move |taken, act, ctx| {
                    if taken == Ok(true) {
                        act.state.session_id = Some(session_id);
                        act.state.transcript = entries;
                        act.state.scroll_back = 0;
                        // It goes on with the model it was saved with.
                        if let Some(m) = saved_model.filter(|m| !act.uses_model(m)) {
                            act.set_model(&m);
                        }
                    } else {
                        act.state.note(Entry::Error(
                            "a turn is running; press Esc to cancel it, then /resume".to_owned(),
                        ));
                    }
                    // Drawn now: no key or event may come to draw it.
                    act.schedule_draw(ctx);
                }),
        );
    }
}
