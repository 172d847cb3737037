//! A server's features beyond tools: resources (lists, read, subscriptions), prompts, argument
//! completion, the roots it is offered and the log level it is asked for. Lists are walked with
//! `list_all` (bounded like `tools/list`); every request waits at most the server's
//! `toolTimeoutSec`, and one that times out or whose caller goes away is cancelled.
//!
//! In the handshake era the configured `logLevel` is sent as `logging/setLevel` after the
//! handshake (the stateless era carries it in each request's `_meta`), and `SetRoots` is told
//! to the server with `notifications/roots/list_changed`; later `roots/list` requests get the
//! new roots.
//! In the stateless era the `subscriptions/listen` filter carries the list changes the server
//! offers and the subscribed resources: a subscription change opens it again and is answered
//! when the server acknowledges the new filter.

use std::collections::BTreeSet;
use std::time::Duration;

use actix::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use super::handshake::{check_result_type, list_all};
use super::outbound::{CancelRequest, Reply};
use super::{McpServer, ReplyError};
use crate::error::RequestError;
use crate::messages::{
    Complete, CompletionRef, GetPrompt, ListPrompts, ListResourceTemplates, ListResources,
    ReadResource, SetRoots, SubscribeResource,
};
use crate::protocol::jsonrpc::{self, LineError};
use crate::protocol::methods::{
    self as m, Listen, Notification, Request, RootsListChanged, SetLevel, Subscribe, Unsubscribe,
};
use crate::protocol::types::{
    CompleteArgument, CompleteContext, CompleteParams, CompleteRef, Completion, GetPromptParams,
    GetPromptResult, Page, PaginatedParams, Prompt, ReadResourceResult, Resource, ResourceParams,
    ResourceTemplate, SetLevelParams,
};

/// The most resources one server actor keeps subscriptions to.
pub(super) const MAX_SUBSCRIPTIONS: usize = 256;
/// The most completion values kept (the spec's own cap).
const MAX_COMPLETIONS: usize = 100;

/// Resource subscriptions and, in the stateless era, the `subscriptions/listen` that carries
/// them. Invariants: at most [`MAX_SUBSCRIPTIONS`] URIs and as many waiters; at most one listen
/// is open (`listen_id`); a waiter is answered once the server acknowledges a filter that has
/// (or lacks) its URI.
pub(super) struct Subscriptions {
    /// Resources subscribed to.
    pub(super) uris: BTreeSet<String>,
    /// Stateless era: the id of the open `subscriptions/listen`.
    pub(super) listen_id: Option<i64>,
    /// Stateless era: subscription changes waiting for the server to acknowledge the new
    /// listen filter (`notifications/subscriptions/acknowledged`).
    /// Each waits for a filter that has (`true`) or lacks (`false`) its URI.
    ack_waiters: Vec<(String, bool, oneshot::Sender<()>)>,
    /// The wait before the next listen, doubled after each one that ends.
    pub(super) listen_wait: Duration,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Self {
            uris: BTreeSet::new(),
            listen_id: None,
            ack_waiters: Vec::new(),
            listen_wait: Duration::from_secs(1),
        }
    }
}

impl Subscriptions {
    /// The server acknowledged a listen filter whose subscriptions are `honored`: the changes
    /// it settles are answered, the others wait on.
    pub(super) fn acknowledged(&mut self, honored: &[String]) {
        let waiters = std::mem::take(&mut self.ack_waiters);
        for (uri, on, tx) in waiters {
            if honored.contains(&uri) == on {
                let _ = tx.send(());
            } else {
                self.ack_waiters.push((uri, on, tx));
            }
        }
    }

    /// Waits for the filter that has (`on`) or lacks `uri` on `tx`; when
    /// [`MAX_SUBSCRIPTIONS`] changes already wait, `tx` is dropped (its receiver fails).
    fn wait_for(&mut self, uri: String, on: bool, tx: oneshot::Sender<()>) {
        self.ack_waiters.retain(|(_, _, w)| !w.is_closed());
        if self.ack_waiters.len() < MAX_SUBSCRIPTIONS {
            self.ack_waiters.push((uri, on, tx));
        }
    }
}

pub(super) type Answer<T> = ResponseFuture<Result<T, RequestError>>;

pub(super) fn fail<T: 'static>(e: RequestError) -> Answer<T> {
    Box::pin(async move { Err(e) })
}

pub(super) fn failed(
    server: &str,
    method: &'static str,
    detail: impl Into<String>,
) -> RequestError {
    RequestError::Failed {
        server: server.to_owned(),
        method,
        detail: detail.into(),
    }
}

/// Sends `notifications/cancelled` for a request whose waiter went away before its reply.
struct CancelGuard {
    addr: Addr<McpServer>,
    id: i64,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            self.addr.do_send(CancelRequest {
                id: self.id,
                reason: "timed out",
            });
        }
    }
}

impl McpServer {
    /// `Ok` when the server can take a request now.
    pub(super) fn ready(&self) -> Result<(), RequestError> {
        if self.session.connected && self.accepting() {
            return Ok(());
        }
        Err(RequestError::Unavailable {
            server: self.spec.name.clone(),
            reason: if self.session.connected {
                self.life.gone_reason()
            } else {
                "still starting".to_owned()
            },
        })
    }

    /// `Ok` when the server declared the capability `method` needs (in either era): no
    /// request goes to a server that did not say it answers it.
    pub(super) fn offers(&self, method: &str) -> Result<(), RequestError> {
        let caps = &self.session.server_caps;
        let (missing, what, capability) = match method {
            m::ListResources::METHOD
            | m::ListResourceTemplates::METHOD
            | m::ReadResource::METHOD => (caps.resources.is_none(), "resources", "resources"),
            Subscribe::METHOD | Unsubscribe::METHOD => (
                !caps.flag("resources", "subscribe"),
                "resource subscriptions",
                "resources.subscribe",
            ),
            m::ListPrompts::METHOD | m::GetPrompt::METHOD => {
                (caps.prompts.is_none(), "prompts", "prompts")
            }
            m::Complete::METHOD => (
                caps.completions.is_none(),
                "argument completion",
                "completions",
            ),
            SetLevel::METHOD => (caps.logging.is_none(), "logging", "logging"),
            // The spec's rule: a skills server must also declare resources (its files are
            // read as resources).
            m::ListSkills::METHOD | m::GetSkill::METHOD => (
                caps.extension(crate::protocol::skills::EXTENSION).is_none()
                    || caps.resources.is_none(),
                "skills",
                "extensions.io.modelcontextprotocol/skills",
            ),
            _ => (false, "", ""),
        };
        if missing {
            return Err(RequestError::NotOffered {
                server: self.spec.name.clone(),
                what,
                capability,
            });
        }
        Ok(())
    }

    /// Sends one request of `R` (with the stateless `_meta` in that era) and answers with its
    /// parsed result within the server's `toolTimeoutSec`.
    pub(super) fn request_for<'p, R>(
        &mut self,
        params: &R::Params<'p>,
        ctx: &mut Context<Self>,
    ) -> Answer<R::Result>
    where
        R: Request,
        R::Params<'p>: Serialize,
        R::Result: DeserializeOwned + 'static,
    {
        let method = R::METHOD;
        if let Err(e) = self.ready().and_then(|()| self.offers(method)) {
            return fail(e);
        }
        let server = self.spec.name.clone();
        let params = match serde_json::to_value(params) {
            Ok(p) => p,
            Err(e) => return fail(failed(&server, method, format!("invalid params: {e}"))),
        };
        let stateless = self.stateless();
        let params = match stateless {
            Some(v) => self.client.stamp(Some(params), v),
            None => params,
        };
        let id = self.alloc_id();
        let target = (method == m::GetPrompt::METHOD)
            .then(|| params.get("name").and_then(Value::as_str))
            .flatten();
        let (trace, op) = self.op(method, target, id, &tracing::Span::none());
        if let Some(uri) = params.get("uri").and_then(Value::as_str) {
            op.set_attribute("mcp.resource.uri", uri);
        }
        let params = match trace {
            Some(tc) => tc.stamp(Some(params)).unwrap_or_default(),
            None => params,
        };
        let line = jsonrpc::request_line(id, method, Some(&params));
        let (rx, backlog) = self.request(method, id, line, Vec::new(), op);
        let guard = CancelGuard {
            addr: ctx.address(),
            id,
            armed: true,
        };
        let after = self.spec.tool_timeout;
        Box::pin(async move {
            // The whole guard moves in (not just the field the future touches).
            let mut guard = guard;
            let wait = async {
                if let Some(b) = backlog {
                    b.send().await;
                }
                rx.await
            };
            let reply: Reply = match tokio::time::timeout(after, wait).await {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => Err(ReplyError::Gone("stopped".to_owned())),
                Err(_) => {
                    return Err(RequestError::Timeout {
                        server,
                        method,
                        after,
                    })
                }
            };
            guard.armed = false;
            let raw = reply.map_err(|e| failed(&server, method, reply_detail(e)))?;
            if stateless.is_some() {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Kind {
                    #[serde(default)]
                    result_type: Option<String>,
                }
                if let Ok(k) = raw.parse::<Kind>() {
                    check_result_type(k.result_type.as_deref(), method)
                        .map_err(|e| failed(&server, method, e))?;
                }
            }
            raw.parse::<R::Result>().map_err(|e| {
                let detail = match e {
                    LineError::Both => "the reply has both a result and an error".to_owned(),
                    e => format!("invalid result: {e}"),
                };
                failed(&server, method, detail)
            })
        })
    }

    /// Walks a paginated list of `R` within the server's `toolTimeoutSec` (at most `maxTools`
    /// items).
    fn list<R>(&mut self, ctx: &mut Context<Self>) -> Answer<Vec<<R::Result as Page>::Item>>
    where
        R: for<'a> Request<Params<'a> = PaginatedParams<'a>> + 'static,
        R::Result: Page + DeserializeOwned,
        <R::Result as Page>::Item: 'static,
    {
        let method = R::METHOD;
        if let Err(e) = self.ready().and_then(|()| self.offers(method)) {
            return fail(e);
        }
        let server = self.spec.name.clone();
        let addr = ctx.address();
        let (max, after) = (self.spec.max_tools, self.spec.tool_timeout);
        Box::pin(async move {
            let walk = list_all::<R>(&addr, max, "maxTools", |_| {});
            match tokio::time::timeout(after, walk).await {
                Ok(r) => r.map_err(|e| failed(&server, method, e)),
                Err(_) => Err(RequestError::Timeout {
                    server,
                    method,
                    after,
                }),
            }
        })
    }

    /// Handshake era: asks the server for the configured `logLevel` (when it offers logging).
    pub(super) fn set_log_level(&mut self, ctx: &mut Context<Self>) {
        let Some(level) = self.spec.log_level.clone() else {
            return;
        };
        if self.session.server_caps.logging.is_none() {
            tracing::debug!(target: "mcp", server = %self.name, "logLevel set, but the server offers no logging");
            return;
        }
        let ask = self.request_for::<SetLevel>(&SetLevelParams { level: &level }, ctx);
        let name = self.name.clone();
        ctx.spawn(
            async move {
                if let Err(e) = ask.await {
                    tracing::warn!(target: "mcp", server = %name, "{}: {e}", SetLevel::METHOD);
                }
            }
            .into_actor(self),
        );
    }
}

/// What a failed reply says, for [`RequestError::Failed`].
pub(super) fn reply_detail(e: ReplyError) -> String {
    match e {
        ReplyError::Rpc(e) => e.to_string(),
        ReplyError::Gone(why) => format!("the server {why}"),
        ReplyError::Transport(e) | ReplyError::StreamBroken(e) => e,
        ReplyError::TooLarge(max) => format!(
            "the reply exceeds the maximum message size of {}; raise maxMessageBytes if it is legitimate",
            crate::protocol::render::human_bytes(max)
        ),
    }
}

impl Handler<ListResources> for McpServer {
    type Result = Answer<Vec<Resource>>;

    fn handle(&mut self, _msg: ListResources, ctx: &mut Context<Self>) -> Self::Result {
        self.list::<m::ListResources>(ctx)
    }
}

impl Handler<ListResourceTemplates> for McpServer {
    type Result = Answer<Vec<ResourceTemplate>>;

    fn handle(&mut self, _msg: ListResourceTemplates, ctx: &mut Context<Self>) -> Self::Result {
        self.list::<m::ListResourceTemplates>(ctx)
    }
}

impl Handler<ListPrompts> for McpServer {
    type Result = Answer<Vec<Prompt>>;

    fn handle(&mut self, _msg: ListPrompts, ctx: &mut Context<Self>) -> Self::Result {
        self.list::<m::ListPrompts>(ctx)
    }
}

impl Handler<ReadResource> for McpServer {
    type Result = Answer<ReadResourceResult>;

    fn handle(&mut self, msg: ReadResource, ctx: &mut Context<Self>) -> Self::Result {
        self.request_for::<m::ReadResource>(&ResourceParams { uri: &msg.uri }, ctx)
    }
}

impl Handler<GetPrompt> for McpServer {
    type Result = Answer<GetPromptResult>;

    fn handle(&mut self, msg: GetPrompt, ctx: &mut Context<Self>) -> Self::Result {
        let params = GetPromptParams {
            name: &msg.name,
            arguments: &msg.arguments,
        };
        self.request_for::<m::GetPrompt>(&params, ctx)
    }
}

impl Handler<Complete> for McpServer {
    type Result = Answer<Completion>;

    fn handle(&mut self, msg: Complete, ctx: &mut Context<Self>) -> Self::Result {
        let params = CompleteParams {
            reference: match &msg.reference {
                CompletionRef::Prompt(name) => CompleteRef::Prompt { name },
                CompletionRef::Resource(uri) => CompleteRef::Resource { uri },
            },
            argument: CompleteArgument {
                name: &msg.argument,
                value: &msg.value,
            },
            context: (!msg.context.is_empty()).then_some(CompleteContext {
                arguments: &msg.context,
            }),
        };
        let ask = self.request_for::<m::Complete>(&params, ctx);
        Box::pin(async move {
            let mut c = ask.await?.completion;
            c.values.truncate(MAX_COMPLETIONS);
            Ok(c)
        })
    }
}

impl Handler<SubscribeResource> for McpServer {
    type Result = Answer<()>;

    fn handle(&mut self, msg: SubscribeResource, ctx: &mut Context<Self>) -> Self::Result {
        // Both eras: the stateless listen filter carries subscriptions only for a server that
        // offers them.
        if let Err(e) = self.ready().and_then(|()| self.offers(Subscribe::METHOD)) {
            return fail(e);
        }
        let server = self.spec.name.clone();
        let had = self.subs.uris.contains(&msg.uri);
        if msg.on && !had && self.subs.uris.len() >= MAX_SUBSCRIPTIONS {
            return fail(failed(
                &server,
                Subscribe::METHOD,
                format!("at most {MAX_SUBSCRIPTIONS} resources can be subscribed to"),
            ));
        }
        if self.stateless().is_some() {
            // The stateless era subscribes through the listen filter: answered once the
            // server acknowledges the new filter.
            if msg.on == had {
                return Box::pin(async { Ok(()) });
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.subs.wait_for(msg.uri.clone(), msg.on, tx);
            if msg.on {
                self.subs.uris.insert(msg.uri);
            } else {
                self.subs.uris.remove(&msg.uri);
            }
            self.listen_again(ctx);
            let after = self.spec.tool_timeout;
            return Box::pin(async move {
                match tokio::time::timeout(after, rx).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(_)) => Err(failed(
                        &server,
                        Listen::METHOD,
                        "the server went away before it acknowledged the subscription",
                    )),
                    Err(_) => Err(RequestError::Timeout {
                        server,
                        method: Listen::METHOD,
                        after,
                    }),
                }
            });
        }
        let params = ResourceParams { uri: &msg.uri };
        let ask = if msg.on {
            self.request_for::<Subscribe>(&params, ctx)
        } else {
            self.request_for::<Unsubscribe>(&params, ctx)
        };
        if msg.on {
            self.subs.uris.insert(msg.uri);
        } else {
            self.subs.uris.remove(&msg.uri);
        }
        Box::pin(async move { ask.await.map(|_| ()) })
    }
}

impl Handler<SetRoots> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: SetRoots, _ctx: &mut Context<Self>) {
        if self.roots == msg.0 {
            return;
        }
        self.roots = msg.0;
        self.questions.answerer = None;
        // The stateless era asks for roots with each request that needs them: nothing to say.
        if self.session.connected && self.stateless().is_none() {
            let line = match crate::telemetry::Op::notification(
                RootsListChanged::METHOD,
                &tracing::Span::none(),
                &self.session.otel,
            ) {
                None => jsonrpc::notification::<RootsListChanged>(None),
                Some(tc) => {
                    jsonrpc::notification_line(RootsListChanged::METHOD, tc.stamp(None).as_ref())
                }
            };
            self.write(line, None, RootsListChanged::METHOD);
        }
    }
}
