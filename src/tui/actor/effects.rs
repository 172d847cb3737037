//! Carrying out the [`Effect`]s of `update`: one method per effect here (the supervisor, the
//! watcher, the engine, the permissions, the questions' answers), the ones that talk to the
//! servers in `servers.rs`, the editor and the opener in `opener.rs`, `/model` and `/resume` in
//! `conversation.rs`.

use actix::prelude::*;
use harness9_actors::messages::{Login, Restart};
use harness9_agent::engine::{
    Answer, CancelTurn, ClearConversation, Compact, DisableTools, Engine,
};
use harness9_app::watcher::{ApproveServers, ReloadConfig};

use super::Tui;
use crate::state::{AskAnswer, Effect, Event};

impl Tui {
    /// Carries out one effect.
    pub(super) fn effect(&mut self, effect: Effect, ctx: &mut Context<Self>) {
        match effect {
            Effect::Quit => self.quit(0, ctx),
            Effect::Login(server) => self.supervisor.do_send(Login(server.clone())),
            Effect::Restart(server) => self.restart(server, ctx),
            Effect::Reload => self.watcher.do_send(ReloadConfig { forced: true }),
            Effect::SaveInput { file, id, value } => self.save_input(&file, &id, &value, ctx),
            Effect::OpenEditor => self.open_editor(ctx),
            Effect::ClearConversation => self.tell_engine(ClearConversation),
            Effect::Resume(id) => self.resume(id, ctx),
            Effect::SetModel(spec) => self.set_model(&spec, ctx),
            Effect::DisableTools(set) => self.tell_engine(DisableTools(set)),
            Effect::Compact(focus) => self.compact(focus, ctx),
            Effect::CancelTurn => self.cancel_turn(),
            Effect::Submit(prompt) => self.submit(prompt, Vec::new(), ctx),
            Effect::SubmitWith {
                prompt,
                attachments,
            } => self.submit(prompt, attachments, ctx),
            Effect::Answer { key, answer } => self.answer(key, answer, ctx),
            Effect::ListSkills => self.list_skills(ctx),
            Effect::CancelTask { server, task_id } => self.cancel_task(server, task_id, ctx),
            Effect::ListPermissions => self.list_permissions(ctx),
            Effect::ForgetRule(text) => self.forget_rule(text, ctx),
            Effect::AnswerAsk { key, answer } => self.answer_ask(key, answer),
            Effect::OpenUrl(url) => self.open_url(&url, ctx),
            Effect::Panic => panic!("/panic: a deliberate panic (HARNESS9_DEBUG_PANIC=1)"),
            Effect::ApproveServers(servers) => self.watcher.do_send(ApproveServers(servers)),
            e @ (Effect::CallTool { .. }
            | Effect::SubmitWithResources { .. }
            | Effect::LoadPrompts(..)
            | Effect::CompleteArgument { .. }
            | Effect::CompleteTemplate { .. }
            | Effect::GetPrompt { .. }
            | Effect::Subscribe { .. }
            | Effect::LoadResources(..)) => self.server_effect(e, ctx),
        }
    }

    /// Restarts a server, and says so.
    fn restart(&mut self, server: String, ctx: &mut Context<Self>) {
        self.supervisor.do_send(Restart(server.clone()));
        self.notice(false, format!("restarting server \"{server}\""), ctx);
    }

    /// Keeps a VS Code input's value the user typed, then reloads the config that needs it.
    fn save_input(
        &mut self,
        file: &std::path::Path,
        id: &str,
        value: &str,
        ctx: &mut Context<Self>,
    ) {
        let store = harness9_app::config::input_vars::store_path();
        match harness9_app::config::input_vars::save(&store, file, id, value) {
            Ok(()) => {
                let text = format!("input \"{id}\" kept in {}", store.display());
                self.notice(false, text, ctx);
                self.watcher.do_send(ReloadConfig { forced: true });
            }
            Err(e) => self.notice(true, e, ctx),
        }
    }

    /// Sends `msg` to the engine, when there is one.
    fn tell_engine<M>(&self, msg: M)
    where
        M: Message + Send + 'static,
        M::Result: Send,
        Engine: Handler<M>,
    {
        if let Some(engine) = &self.engine {
            engine.do_send(msg);
        }
    }

    /// `/compact [focus]`: the engine summarizes the conversation; `CompactDone` says how.
    fn compact(&mut self, focus: String, ctx: &mut Context<Self>) {
        let Some(engine) = self.engine.clone() else {
            return;
        };
        let focus = (!focus.is_empty()).then_some(focus);
        ctx.spawn(
            engine
                .send(Compact { focus })
                .into_actor(self)
                .map(|r, act, ctx| {
                    let done = match r {
                        Ok(r) => r.map_err(|e| e.to_string()),
                        Err(_) => Err("the engine is gone".to_owned()),
                    };
                    act.apply(Event::CompactDone(done), ctx);
                }),
        );
    }

    /// Stops the running turn and the user's own calls.
    fn cancel_turn(&mut self) {
        for (_, c) in self.calls.drain(..) {
            c.cancel();
        }
        // The tool questions' senders are kept (see `approvals::cancel_all`): an
        // answer, even a no, could reach the engine before this cancel and let the
        // turn go on to the model.
        match &self.engine {
            Some(engine) => engine.do_send(CancelTurn),
            None => self.replies.clear_tools(),
        }
    }

    /// The user's answer to the engine's question about a tool call (an "always" kept for the
    /// project first).
    fn answer(&mut self, key: u64, answer: Answer, ctx: &mut Context<Self>) {
        if let Answer::Always(rule) = &answer {
            self.remember(rule, ctx);
        }
        self.replies.answer_tool(key, answer);
    }

    /// Saves an "always" answer's rule for the project (the engine has already taken it for
    /// this session); says where, or why it could not be saved.
    fn remember(&mut self, rule: &str, ctx: &mut Context<Self>) {
        use harness9_app::stores::permission_store as store;
        let file = store::path();
        let text = match store::remember(&file, &self.policy.place.root, rule) {
            Ok(()) => format!(
                "\"{rule}\" runs without asking in this project from now on (saved in {}; /permissions lists and forgets it)",
                file.display()
            ),
            Err(e) => format!("\"{rule}\" is allowed for this session only: {e:#}"),
        };
        self.notice(false, text, ctx);
    }

    /// `/skills`: every server's skills.
    fn list_skills(&mut self, ctx: &mut Context<Self>) {
        self.registry
            .send(harness9_actors::messages::GetSkills)
            .into_actor(self)
            .then(|r, act, ctx| {
                if let Ok(listings) = r {
                    act.apply(Event::Skills(listings), ctx);
                }
                fut::ready(())
            })
            .spawn(ctx);
    }

    /// `/permissions`: the session's rules.
    fn list_permissions(&mut self, ctx: &mut Context<Self>) {
        let rules = self.policy.rules.all();
        self.apply(Event::Permissions(rules), ctx);
    }

    /// Forgets an allow rule, for the session and in the project's file; the list again.
    fn forget_rule(&mut self, text: String, ctx: &mut Context<Self>) {
        use harness9_agent::permissions::Decision;
        use harness9_app::stores::permission_store as store;
        self.policy.rules.forget(Decision::Allow, &text);
        let note = match store::forget(&store::path(), &self.policy.place.root, &text) {
            Ok(()) => Event::Notice {
                error: false,
                text: format!("forgot \"{text}\": it asks again"),
            },
            Err(e) => Event::Notice {
                error: true,
                text: format!("{e:#}"),
            },
        };
        self.apply(note, ctx);
        self.list_permissions(ctx);
    }

    /// The user's answer to a server's question.
    fn answer_ask(&mut self, key: u64, answer: AskAnswer) {
        self.replies.answer_server(key, answer);
    }

    /// Opens a URL a server asked for (the user said yes), and says with what.
    fn open_url(&mut self, url: &str, ctx: &mut Context<Self>) {
        let text = match harness9_actors::opener::open_url(url, None, true) {
            Ok((opener, opened)) => (false, format!("opened {opened} with {opener}")),
            Err(e) => (true, e),
        };
        self.notice(text.0, text.1, ctx);
    }
}
