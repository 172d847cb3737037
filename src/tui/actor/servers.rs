//! The effects that talk to the servers through the registry: `/call` (with its progress),
//! prompts, completions, resources and subscriptions, `@` mentions read before a prompt,
//! `/tasks`' cancel.

use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::StreamExt as _;
use harness9_actors::messages::{
    CallTool, Complete, CompletionRef, GetPrompt, ListPrompts, ListResourceTemplates,
    ListResources, ProgressSink, SubscribeResource, ToolProgress,
};
use harness9_app::user_call;
use tokio::sync::mpsc;

use super::Tui;
use crate::state::{Effect, Event};

/// What a registry that stopped answering leaves of a request.
const REGISTRY_STOPPED: &str = "the tool registry stopped";

impl Tui {
    /// The effects that talk to the servers: calls, resources, prompts, completions,
    /// subscriptions, and prompts with resources attached.
    pub(super) fn server_effect(&mut self, effect: Effect, ctx: &mut Context<Self>) {
        match effect {
            Effect::CallTool {
                id,
                name,
                arguments,
            } => self.call_tool(id, name, arguments, ctx),
            Effect::SubmitWithResources { prompt, mentions } => {
                self.submit_with_resources(prompt, mentions, ctx)
            }
            Effect::LoadPrompts(server) => self.load_prompts(server, ctx),
            Effect::CompleteArgument {
                input,
                server,
                prompt,
                argument,
                value,
                context,
            } => {
                let ask = Complete {
                    server,
                    reference: CompletionRef::Prompt(prompt),
                    argument: argument.clone(),
                    value,
                    context,
                };
                self.complete_argument(input, argument, ask, ctx);
            }
            Effect::CompleteTemplate {
                input,
                server,
                template,
                variable,
                value,
                head,
                tail,
            } => {
                let ask = Complete {
                    server,
                    reference: CompletionRef::Resource(template),
                    argument: variable,
                    value,
                    context: Default::default(),
                };
                self.complete_template(input, (head, tail), ask, ctx);
            }
            Effect::GetPrompt {
                server,
                name,
                arguments,
            } => self.get_prompt(server, name, arguments, ctx),
            Effect::Subscribe { server, uri, on } => self.subscribe(server, uri, on, ctx),
            Effect::LoadResources(server) => self.load_resources(server, ctx),
            _ => {}
        }
    }

    /// `/call`: the user's own call of a tool, with its progress, ending in `CallDone`.
    fn call_tool(
        &mut self,
        id: u64,
        name: String,
        arguments: Option<serde_json::Value>,
        ctx: &mut Context<Self>,
    ) {
        // The user's own call: it runs unless a deny rule of theirs names it.
        let entry = self.state.servers.tools.iter().find(|t| *t.name == *name);
        if let Err(refused) = user_call::check(&self.policy, &name, entry, arguments.as_ref()) {
            self.apply(
                Event::CallDone {
                    id,
                    output: refused.to_string(),
                    is_error: true,
                    elapsed: Duration::ZERO,
                },
                ctx,
            );
            return;
        }
        let mut msg = CallTool::new(name, arguments);
        // Progress notices come back through a bounded channel (a flood loses notices,
        // never grows memory); the call's result closes it.
        let (tx, mut rx) = mpsc::channel::<ToolProgress>(64);
        msg.progress = Some(ProgressSink::new(move |p| {
            let _ = tx.try_send(p);
        }));
        ctx.add_stream(
            futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
                .map(move |p| CallProgressItem(id, p)),
        );
        let cancel = msg.cancel.clone();
        self.calls.push((id, cancel));
        let registry = self.registry.clone();
        let started = Instant::now();
        ctx.spawn(
            async move { user_call::call_tool(&registry, msg).await }
                .into_actor(self)
                .map(move |r, act, ctx| {
                    act.calls.retain(|(c, _)| *c != id);
                    let (output, is_error) = match r {
                        Ok(r) => (r.text(), r.is_error),
                        Err(e) => (e.to_string(), true),
                    };
                    act.apply(
                        Event::CallDone {
                            id,
                            output,
                            is_error,
                            elapsed: started.elapsed(),
                        },
                        ctx,
                    );
                }),
        );
    }

    /// A prompt with `@` mentions: each resource read in turn (a failed one said), then the
    /// prompt sent with what was read attached.
    fn submit_with_resources(
        &mut self,
        prompt: String,
        mentions: Vec<(String, String)>,
        ctx: &mut Context<Self>,
    ) {
        let registry = self.registry.clone();
        let reads = async move {
            let mut out = Vec::new();
            for (server, uri) in mentions {
                let read = user_call::read_resource(&registry, &server, &uri)
                    .await
                    .map_err(|e| e.to_string());
                out.push((server, uri, read));
            }
            out
        };
        ctx.spawn(reads.into_actor(self).map(move |reads, act, ctx| {
            for (server, uri, read) in &reads {
                if let Err(e) = read {
                    act.notice(true, format!("@{server}:{uri}: {e}"), ctx);
                }
            }
            let full = crate::mentions::attach(&prompt, &reads);
            let attachments = crate::mentions::attached_images(&reads);
            act.effect(
                Effect::SubmitWith {
                    prompt: full,
                    attachments,
                },
                ctx,
            );
        }));
    }

    /// A server's prompts (`prompts/list`), for the slash commands.
    fn load_prompts(&mut self, server: String, ctx: &mut Context<Self>) {
        let ask = self.registry.send(ListPrompts {
            server: server.clone(),
        });
        ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
            let result = registry_reply(r);
            act.apply(Event::Prompts { server, result }, ctx);
        }));
    }

    /// Values for a prompt's argument being typed.
    fn complete_argument(
        &mut self,
        input: String,
        argument: String,
        ask: Complete,
        ctx: &mut Context<Self>,
    ) {
        self.complete_then(ask, ctx, move |values| Event::Completion {
            input,
            argument,
            values,
        });
    }

    /// Asks for completion values and applies the event `done` makes of them.
    fn complete_then(
        &mut self,
        ask: Complete,
        ctx: &mut Context<Self>,
        done: impl FnOnce(Vec<String>) -> Event + 'static,
    ) {
        let ask = user_call::complete(&self.registry, ask);
        ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
            let event = done(completion_values(r));
            act.apply(event, ctx);
        }));
    }

    /// Values for a resource template's variable in an `@` mention, put back between `head`
    /// and `tail`.
    fn complete_template(
        &mut self,
        input: String,
        (head, tail): (String, String),
        ask: Complete,
        ctx: &mut Context<Self>,
    ) {
        self.complete_then(ask, ctx, move |values| Event::MentionCompleted {
            input,
            head,
            tail,
            values,
        });
    }

    /// A prompt's messages (`prompts/get`) with the user's arguments.
    fn get_prompt(
        &mut self,
        server: String,
        name: String,
        arguments: std::collections::BTreeMap<String, String>,
        ctx: &mut Context<Self>,
    ) {
        let ask = user_call::get_prompt(
            &self.registry,
            GetPrompt {
                server,
                name: name.clone(),
                arguments,
            },
        );
        ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
            let result = r.map_err(|e| e.to_string());
            act.apply(Event::PromptGot { name, result }, ctx);
        }));
    }

    /// `/subscribe` or `/unsubscribe` of a resource; what came of it is said.
    fn subscribe(&mut self, server: String, uri: String, on: bool, ctx: &mut Context<Self>) {
        let ask = self.registry.send(SubscribeResource {
            server: server.clone(),
            uri: uri.clone(),
            on,
        });
        ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
            use crate::state::Entry;
            let (s, u) = (
                harness9_base::sanitize::clean_line(&server).into_owned(),
                harness9_base::sanitize::clean_line(&uri).into_owned(),
            );
            let entry = match r {
                Ok(Ok(())) if on => Entry::Info(format!(
                    "subscribed to {u} of {s}: its changes show here (/unsubscribe @{s}:{u} stops them)"
                )),
                Ok(Ok(())) => Entry::Info(format!("unsubscribed from {u} of {s}")),
                Ok(Err(e)) => Entry::Error(format!(
                    "cannot {}subscribe to {u} of {s}: {e}",
                    if on { "" } else { "un" }
                )),
                Err(_) => Entry::Error(REGISTRY_STOPPED.to_owned()),
            };
            let (error, text) = match entry {
                Entry::Error(t) => (true, t),
                Entry::Info(t) => (false, t),
                _ => return,
            };
            act.apply(Event::Notice { error, text }, ctx);
        }));
    }

    /// A server's resources and resource templates, for its panel.
    fn load_resources(&mut self, server: String, ctx: &mut Context<Self>) {
        let registry = self.registry.clone();
        let name = server.clone();
        ctx.spawn(
            async move {
                let resources = registry
                    .send(ListResources {
                        server: name.clone(),
                    })
                    .await
                    .map_err(|_| REGISTRY_STOPPED.to_owned())?
                    .map_err(|e| e.to_string())?;
                // A server without templates may refuse the method: none, then.
                let templates = registry
                    .send(ListResourceTemplates { server: name })
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_default();
                Ok((resources, templates))
            }
            .into_actor(self)
            .map(move |result, act, ctx| {
                act.apply(Event::Resources { server, result }, ctx);
            }),
        );
    }

    /// `tasks/cancel` of a running task, as `mcp tasks cancel` sends it; the turn following the
    /// task sees it end (`cancelled`) and gives the model that result. A failure is said.
    pub(super) fn cancel_task(&mut self, server: String, task_id: String, ctx: &mut Context<Self>) {
        let ask = self
            .registry
            .send(harness9_actors::messages::CancelServerTask {
                server: server.clone(),
                task_id,
            });
        ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
            let why = match r {
                Ok(Ok(())) => return,
                Ok(Err(e)) => e.to_string(),
                Err(_) => REGISTRY_STOPPED.to_owned(),
            };
            let text = format!(
                "cannot cancel the task on {}: {why}",
                harness9_base::sanitize::clean_line(&server)
            );
            act.apply(Event::Notice { error: true, text }, ctx);
        }));
    }
}

/// A progress notice of a `/call`.
pub(super) struct CallProgressItem(u64, ToolProgress);

impl StreamHandler<CallProgressItem> for Tui {
    fn handle(&mut self, CallProgressItem(id, p): CallProgressItem, ctx: &mut Context<Self>) {
        self.apply(
            Event::CallProgress {
                id,
                progress: p.progress,
                total: p.total,
                message: p.message,
            },
            ctx,
        );
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

/// The values of a `completion/complete` answer (none when the server failed or is gone).
pub(super) fn completion_values(
    r: Result<harness9_actors::protocol::types::Completion, user_call::SendError>,
) -> Vec<String> {
    match r {
        Ok(c) => c.values,
        Err(user_call::SendError::Failed(e)) => {
            tracing::debug!("completion/complete: {e}");
            Vec::new()
        }
        Err(user_call::SendError::Stopped(_)) => Vec::new(),
    }
}

/// A registry's answer with its error as text (the registry's own when it stopped).
fn registry_reply<T, E: std::fmt::Display>(
    r: Result<Result<T, E>, MailboxError>,
) -> Result<T, String> {
    match r {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(REGISTRY_STOPPED.to_owned()),
    }
}
