//! The effects that talk to the servers through the registry: `/call` (with its progress),
//! prompts, completions, resources and subscriptions, `@` mentions read before a prompt,
//! `/tasks`' cancel.

use super::*;
use harness9_app::user_call;

impl Tui {
    /// The effects that talk to the servers: calls, resources, prompts, completions,
    /// subscriptions, and prompts with resources attached.
    pub(super) fn server_effect(&mut self, effect: Effect, ctx: &mut Context<Self>) {
        match effect {
            Effect::CallTool {
                id,
                name,
                arguments,
            } => {
                // The user's own call: it runs unless a deny rule of theirs names it.
                let entry = self.state.servers.tools.iter().find(|t| t.name == name);
                if let Err(refused) =
                    user_call::check(&self.policy, &name, entry, arguments.as_ref())
                {
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
            Effect::SubmitWithResources { prompt, mentions } => {
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
            Effect::LoadPrompts(server) => {
                let ask = self.registry.send(ListPrompts {
                    server: server.clone(),
                });
                ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
                    let result = match r {
                        Ok(r) => r.map_err(|e| e.to_string()),
                        Err(_) => Err("the tool registry stopped".to_owned()),
                    };
                    act.apply(Event::Prompts { server, result }, ctx);
                }));
            }
            Effect::CompleteArgument {
                input,
                server,
                prompt,
                argument,
                value,
                context,
            } => {
                let ask = user_call::complete(
                    &self.registry,
                    Complete {
                        server,
                        reference: CompletionRef::Prompt(prompt),
                        argument: argument.clone(),
                        value,
                        context,
                    },
                );
                ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
                    let values = completion_values(r);
                    act.apply(
                        Event::Completion {
                            input,
                            argument,
                            values,
                        },
                        ctx,
                    );
                }));
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
                let ask = user_call::complete(
                    &self.registry,
                    Complete {
                        server,
                        reference: CompletionRef::Resource(template),
                        argument: variable,
                        value,
                        context: Default::default(),
                    },
                );
                ctx.spawn(ask.into_actor(self).map(move |r, act, ctx| {
                    let values = completion_values(r);
                    act.apply(
                        Event::MentionCompleted {
                            input,
                            head,
                            tail,
                            values,
                        },
                        ctx,
                    );
                }));
            }
            Effect::GetPrompt {
                server,
                name,
                arguments,
            } => {
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
            Effect::Subscribe { server, uri, on } => {
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
                        Err(_) => Entry::Error("the tool registry stopped".to_owned()),
                    };
                    let (error, text) = match entry {
                        Entry::Error(t) => (true, t),
                        Entry::Info(t) => (false, t),
                        _ => return,
                    };
                    act.apply(Event::Notice { error, text }, ctx);
                }));
            }
            Effect::LoadResources(server) => {
                let registry = self.registry.clone();
                let name = server.clone();
                ctx.spawn(
                    async move {
                        let resources = registry
                            .send(ListResources {
                                server: name.clone(),
                            })
                            .await
                            .map_err(|_| "the tool registry stopped".to_owned())?
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
            _ => {}
        }
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
                Err(_) => "the tool registry stopped".to_owned(),
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
