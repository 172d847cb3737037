//! The tool-list cache in the supervisor: a spec with a fresh entry has its cached tools
//! registered at once and is launched now (eager) or on its first call (lazy, through
//! `AwaitServer`); every live listing is kept.
//!
//! At `begin` (at start, and for a server a reload adds) a spec without a hold asks the cache
//! for a fresh entry. Found, its tools go to the registry at once as a `ServerTools` with no
//! address and this supervisor's `AwaitServer` recipient, and the status is `Cached`; the
//! server starts now or on the first `AwaitServer`, by its spec's `start`, else
//! [`default_start`](crate::tool_cache::CacheUse::default_start). `AwaitServer` is answered
//! with the actor's address when it connects (after the live `ServerTools` went out), or with
//! the reason when it fails, times out, stops or leaves the config (every `ServerGone` fails
//! its waiters too). Every live listing (connect, `ToolsChanged`) is written through the store
//! with its `ttlMs`.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::ServerSupervisor;
use crate::messages::{AwaitServer, ServerStatus, ServerTools};
use crate::server::McpServer;
use crate::spec::ServerSpec;
use crate::tool_cache::{CacheUse, CachedList, StartMode};

impl ServerSupervisor {
    /// Keeps every live tool list in `cache` and, when it offers them, gives the model a
    /// server's cached tools at once (see [`StartMode`]).
    pub fn with_cache(mut self, cache: Option<CacheUse>) -> Self {
        self.cache = cache;
        self
    }

    /// Starts `name`: a spec with a fresh cache entry has its cached tools registered at once
    /// (status `Cached`) and is launched now (eager) or on its first call (lazy); any other is
    /// launched.
    pub(super) fn begin(&mut self, name: &str, ctx: &mut Context<Self>) {
        let me = ctx.address().recipient();
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let cached = match &self.cache {
            Some(c) if c.offer && entry.spec.hold.is_none() => c
                .store
                .load(&entry.spec)
                .map(|l| (l, entry.spec.start.unwrap_or(c.default_start))),
            _ => None,
        };
        let Some((list, mode)) = cached else {
            return self.launch(name, ctx);
        };
        // The era it spoke last time: the connection starts in it rather than probing (over
        // HTTP a round trip less); a server that changed era since is probed after all.
        entry.era = entry.era.or(Some(list.era));
        let count = list
            .tools
            .iter()
            .filter(|t| entry.spec.tool_enabled(&t.name))
            .count();
        let lazy = mode == StartMode::Lazy;
        tracing::debug!(target: "mcp", server = %name, tools = count, start = mode.label(),
            "tools offered from the cache");
        entry.cache_written = Some(list.written);
        entry.status = ServerStatus::Cached {
            tools: count,
            written: list.written,
            starting: (!lazy).then(Instant::now),
        };
        self.registry.do_send(ServerTools {
            spec: entry.spec.clone(),
            addr: None,
            starter: Some(me),
            tools: list.tools,
            instructions: list.instructions.as_deref().map(Arc::from),
        });
        if !lazy {
            self.launch(name, ctx);
        }
    }

    /// Keeps a live listing in the cache.
    pub(super) fn remember(
        &self,
        spec: &ServerSpec,
        info: &crate::messages::ConnectionInfo,
        tools: Arc<[Arc<crate::protocol::types::Tool>]>,
        ttl_ms: Option<u64>,
    ) {
        let Some(c) = &self.cache else {
            return;
        };
        c.store.store(
            spec,
            CachedList {
                tools,
                era: info.era,
                server_info: info.server_info.clone(),
                instructions: info.instructions.clone(),
                capabilities: info.capabilities.clone(),
                ttl_ms,
                written: std::time::SystemTime::now(),
            },
        );
    }
}

impl Handler<AwaitServer> for ServerSupervisor {
    type Result = ResponseFuture<Result<Addr<McpServer>, String>>;

    fn handle(&mut self, msg: AwaitServer, ctx: &mut Context<Self>) -> Self::Result {
        let name = msg.server;
        let refused = |why: String| -> Self::Result { Box::pin(async move { Err(why) }) };
        let Some(entry) = self.entries.get_mut(&name) else {
            return refused("no longer in the config".to_owned());
        };
        match &mut entry.status {
            ServerStatus::Connected { .. } => {
                return match entry.addr.clone() {
                    Some(a) => Box::pin(async move { Ok(a) }),
                    None => refused("not connected".to_owned()),
                }
            }
            ServerStatus::Cached { starting, .. } if starting.is_none() => {
                // A lazy server: its first call starts it.
                *starting = Some(Instant::now());
                let (tx, rx) = oneshot::channel();
                entry.waiters.push(tx);
                tracing::info!(target: "mcp", server = %name, "starting on its first call");
                self.launch(&name, ctx);
                self.publish(ctx);
                return Box::pin(
                    async move { rx.await.unwrap_or_else(|_| Err("stopped".to_owned())) },
                );
            }
            ServerStatus::Cached { .. }
            | ServerStatus::Starting { .. }
            | ServerStatus::Restarting { .. } => {}
            ServerStatus::Failed { error, .. } => return refused(format!("failed: {error}")),
            other => return refused(other.label().to_owned()),
        }
        let (tx, rx) = oneshot::channel();
        entry.waiters.push(tx);
        Box::pin(async move { rx.await.unwrap_or_else(|_| Err("stopped".to_owned())) })
    }
}
