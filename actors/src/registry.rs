//! The `ToolRegistry` actor: the one tool table (built-ins first, then MCP tools by server in
//! order of first connect), the router of every tool call (and every resource, prompt and
//! completion request) to the owning server's current actor, the checker of a result's
//! `structuredContent` against its tool's `outputSchema`, and the keeper of the connected
//! servers' `instructions`.
//!
//! A name clash is skipped with a warning; a name two servers' tools would both take is
//! neither's (the config holds such servers, `naming::collide`: routing never depends on
//! which connected first). A schema mismatch is set on the result
//! (`schema_error`), which is kept whole. `GetInstructions` answers a new `Arc` only when a
//! server with instructions connects or leaves. A table from the tool-list cache has no
//! address: a call of its tool puts a progress line on the call, asks the supervisor
//! (`AwaitServer`, bounded by the server's startup timeout plus `AWAIT_MARGIN` and by the
//! call's cancellation), then is routed once more on the live table (`Rerouted`); resource,
//! prompt and completion requests wait the same way. A tool that a server's newer list lacks
//! is kept by name (`vanished`), so its call fails as `CallError::ToolVanished` naming the
//! server, not as an unknown tool.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use crate::error::{CallError, RequestError};
use crate::messages::{
    AwaitServer, AwaitTask, CallBuiltin, CallServerTool, CallTool, CancelServerTask, Complete,
    GetInstructions, GetPrompt, GetSkill, GetTaskStatus, ListPrompts, ListResourceTemplates,
    ListResources, ListServers, ListSkills, ListTools, LookupTool, ReadResource, Routed,
    ServerGone, ServerRequest, ServerTools, SetBuiltins, SubscribeResource, ToolEntry,
    ToolProgress, WhyFiltered,
};
use crate::naming::{full_name_prefixed, sanitize, server_prefix, write_full_name};
use crate::protocol::types::{CallToolResult, Tool};
use crate::server::McpServer;
use crate::spec::ServerSpec;

enum Route {
    Builtin,
    Mcp {
        /// One copy per server, shared by its routes.
        server: Arc<str>,
        /// The tool as listed (its name on its server is `def.name`).
        def: Arc<Tool>,
    },
}

struct ServerTable {
    spec: Arc<ServerSpec>,
    /// `None` while the tools come from the cache: a call asks `starter` for the actor.
    addr: Option<Addr<McpServer>>,
    starter: Option<Recipient<AwaitServer>>,
    tools: Arc<[Arc<Tool>]>,
}

/// A call routed again once its server connected (its tools were offered from the cache):
/// the table is the live one now, so a tool the live list lacks is named as vanished.
#[derive(Message)]
#[rtype(result = "Routed")]
struct Rerouted(CallTool);

/// How long past its startup timeout a call waits for a server offered from the cache (the
/// supervisor answers at the timeout; this only bounds a supervisor that is gone).
const AWAIT_MARGIN: Duration = Duration::from_secs(5);

/// The longest `GetInstructions` waits for skills listings on their way.
const SKILLS_WAIT: Duration = Duration::from_secs(5);

/// The tool table.
#[derive(Default)]
pub struct ToolRegistry {
    builtins: Vec<Arc<Tool>>,
    executor: Option<Recipient<CallBuiltin>>,
    servers: HashMap<String, ServerTable>,
    /// Servers in order of first connect: the clash tie-break.
    order: Vec<String>,
    /// Servers whose tools left, with why.
    unavailable: BTreeMap<String, String>,
    routes: HashMap<Arc<str>, Route>,
    entries: Arc<Vec<ToolEntry>>,
    /// Each connected server's `instructions`, by name.
    instructions: BTreeMap<String, Arc<str>>,
    /// The same, each followed by the server's skills section (`skills::prompt_section`), as
    /// handed out (a new `Arc` only when they change).
    instructions_list: Arc<Vec<(String, Arc<str>)>>,
    /// Each connected server's skills, listed when it connected (the Skills extension).
    skills: BTreeMap<String, Arc<crate::protocol::skills::SkillListing>>,
    /// How many skills listings are on their way: `GetInstructions` waits for them (at most
    /// [`SKILLS_WAIT`]), so the first model request already names the skills.
    skills_pending: tokio::sync::watch::Sender<usize>,
    /// Until when `GetInstructions` may wait for them: [`SKILLS_WAIT`] after the latest ask, so
    /// a server that stalls its listing costs the session those seconds once, not every turn.
    skills_wait_until: Option<tokio::time::Instant>,
    /// Registered names whose server's newer list no longer has them: name -> (server, tool).
    vanished: HashMap<String, (String, String)>,
    /// Compiled output schemas, by registered tool name (cleared on every rebuild).
    validators: HashMap<String, Arc<Result<jsonschema::Validator, String>>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls a tool and cancels it (sending `notifications/cancelled`) if this future is dropped.
    pub async fn call(
        addr: &Addr<ToolRegistry>,
        name: impl Into<String>,
        arguments: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<CallToolResult, CallError> {
        let mut msg = CallTool::new(name, arguments);
        msg.timeout = timeout;
        Self::send(addr, msg).await
    }

    /// Sends a prepared `CallTool`, cancelling it if this future is dropped.
    pub async fn send(
        addr: &Addr<ToolRegistry>,
        msg: CallTool,
    ) -> Result<CallToolResult, CallError> {
        let _guard = msg.cancel.clone().drop_guard();
        let name = msg.name.clone();
        match addr.send(msg).await {
            // The call runs here, in the caller's task (see `Routed`).
            Ok(routed) => routed.await,
            Err(_) => Err(CallError::ServerUnavailable {
                server: name,
                reason: "unreachable: the tool registry has stopped".to_owned(),
            }),
        }
    }

    /// Rebuilds the table; warns about clashes that involve `changed`.
    fn rebuild(&mut self, changed: Option<&str>) {
        use std::collections::hash_map::Entry;
        let total =
            self.builtins.len() + self.servers.values().map(|t| t.tools.len()).sum::<usize>();
        let mut routes = HashMap::with_capacity(total);
        let mut entries = Vec::with_capacity(total);
        let mut contested: Vec<Arc<str>> = Vec::new();
        let mut scratch = String::new();
        for t in &self.builtins {
            let name: Arc<str> = Arc::from(t.name.as_str());
            if routes.insert(name.clone(), Route::Builtin).is_none() {
                entries.push(ToolEntry {
                    name,
                    server: None,
                    tool: t.clone(),
                });
            }
        }
        for server in &self.order {
            let Some(table) = self.servers.get(server) else {
                continue;
            };
            let prefix = server_prefix(server);
            let shared: Arc<str> = Arc::from(server.as_str());
            for t in table.tools.iter() {
                if !table.spec.tool_enabled(&t.name) {
                    continue;
                }
                write_full_name(&mut scratch, &prefix, &t.name);
                match routes.entry(Arc::from(scratch.as_str())) {
                    Entry::Occupied(owner) => {
                        if matches!(owner.get(), Route::Mcp { server: s, .. } if **s != **server) {
                            contested.push(owner.key().clone());
                        }
                        if changed == Some(server.as_str()) {
                            let by = match owner.get() {
                                Route::Builtin => "a built-in tool".to_owned(),
                                Route::Mcp { server, def } => {
                                    format!("tool \"{}\" of server \"{server}\"", def.name)
                                }
                            };
                            tracing::warn!(target: "mcp", server = %server, tool = %t.name,
                                "tool skipped: its name {} is taken by {by}", owner.key());
                        }
                    }
                    Entry::Vacant(slot) => {
                        let name = slot.key().clone();
                        slot.insert(Route::Mcp {
                            server: shared.clone(),
                            def: t.clone(),
                        });
                        entries.push(ToolEntry {
                            name,
                            server: Some(shared.clone()),
                            tool: t.clone(),
                        });
                    }
                }
            }
        }
        // A name two servers' tools would take is neither's, whichever connected first (the
        // config holds such servers; this keeps routing from depending on who came first).
        for name in &contested {
            if let Some(Route::Mcp { server, .. }) = routes.remove(&**name) {
                tracing::warn!(target: "mcp", server = %server, "tool {name} left out: another server's tool takes the same name");
            }
        }
        entries.retain(|e| !contested.contains(&e.name));
        self.routes = routes;
        self.entries = Arc::new(entries);
        self.validators.clear();
    }

    /// Keeps `server`'s instructions (or forgets them); a new list only when they change.
    fn set_instructions(&mut self, server: &str, text: Option<Arc<str>>) {
        let changed = match text {
            Some(t) => {
                self.instructions
                    .insert(server.to_owned(), t.clone())
                    .as_deref()
                    != Some(&*t)
            }
            None => self.instructions.remove(server).is_some(),
        };
        if changed {
            self.publish_instructions();
        }
    }

    /// Rebuilds the handed-out list: each server's `instructions`, then its skills section.
    fn publish_instructions(&mut self) {
        let mut names: Vec<&String> = self.instructions.keys().chain(self.skills.keys()).collect();
        names.sort();
        names.dedup();
        self.instructions_list = Arc::new(
            names
                .into_iter()
                .filter_map(|name| {
                    let section = self
                        .skills
                        .get(name)
                        .and_then(|l| crate::skills::prompt_section(name, l));
                    let text: Arc<str> = match (self.instructions.get(name), section) {
                        (Some(i), None) => i.clone(),
                        (Some(i), Some(s)) => format!("{i}\n\n{s}").into(),
                        (None, Some(s)) => s.into(),
                        (None, None) => return None,
                    };
                    Some((name.clone(), text))
                })
                .collect(),
        );
    }

    /// Keeps `server`'s skills listing (or forgets it).
    fn set_skills(
        &mut self,
        server: &str,
        listing: Option<Arc<crate::protocol::skills::SkillListing>>,
    ) {
        let changed = match listing {
            Some(l) => {
                self.skills.insert(server.to_owned(), l);
                true
            }
            None => self.skills.remove(server).is_some(),
        };
        if changed {
            self.publish_instructions();
        }
    }

    /// The compiled output schema of a registered MCP tool that declares one (compiled once per
    /// table; a cached one costs a lookup, no copy of the schema).
    fn validator(&mut self, name: &str) -> Option<Arc<Result<jsonschema::Validator, String>>> {
        if let Some(v) = self.validators.get(name) {
            return Some(v.clone());
        }
        let Some(Route::Mcp { def, .. }) = self.routes.get(name) else {
            return None;
        };
        let v = Arc::new(compile_schema(def.output_schema.as_ref()?.get()));
        self.validators.insert(name.to_owned(), v.clone());
        Some(v)
    }

    /// Sends a resource, prompt or completion request to its server's current actor.
    fn forward<M>(&self, msg: M) -> ResponseFuture<Result<M::Output, RequestError>>
    where
        M: ServerRequest + 'static,
        M::Result: Send,
        McpServer: Handler<M>,
    {
        let server = msg.server().to_owned();
        let Some(table) = self.servers.get(&server) else {
            let reason = self
                .unavailable
                .get(&server)
                .cloned()
                .unwrap_or_else(|| "not connected".to_owned());
            return Box::pin(async move { Err(RequestError::Unavailable { server, reason }) });
        };
        let (addr, starter) = (table.addr.clone(), table.starter.clone());
        let bound = table.spec.startup_timeout + AWAIT_MARGIN;
        Box::pin(async move {
            let stopped =
                |server: String, reason: String| RequestError::Unavailable { server, reason };
            let addr = match (addr, starter) {
                (Some(a), _) => a,
                (None, Some(starter)) => {
                    let wait = starter.send(AwaitServer {
                        server: server.clone(),
                    });
                    match tokio::time::timeout(bound, wait).await {
                        Ok(Ok(Ok(a))) => a,
                        Ok(Ok(Err(why))) => return Err(stopped(server, why)),
                        _ => return Err(stopped(server, "not connected".to_owned())),
                    }
                }
                (None, None) => return Err(stopped(server, "not connected".to_owned())),
            };
            addr.send(msg)
                .await
                .unwrap_or_else(|_| Err(stopped(server, "stopped".to_owned())))
        })
    }

    /// The server and tool a registered-style `name` would be if the server's filters did not
    /// leave it out, with the filter that does.
    /// Why a call of `name`, which the table does not have, fails.
    fn absent(&self, name: String) -> CallError {
        if let Some((server, tool)) = self.vanished.get(&name) {
            return CallError::ToolVanished {
                server: server.clone(),
                tool: tool.clone(),
            };
        }
        match self.unavailable_owner(&name) {
            Some((server, reason)) => CallError::ServerUnavailable {
                server: server.clone(),
                reason: reason.clone(),
            },
            None => self
                .filtered_owner(&name)
                .unwrap_or(CallError::UnknownTool { name }),
        }
    }

    fn filtered_owner(&self, name: &str) -> Option<CallError> {
        self.servers.iter().find_map(|(server, table)| {
            let prefix = server_prefix(server);
            let rest = name.strip_prefix(prefix.as_str())?;
            let t = table
                .tools
                .iter()
                .find(|t| full_name_prefixed(&prefix, &t.name) == name || t.name == rest)?;
            if table.spec.tool_enabled(&t.name) {
                return None;
            }
            let filter = if table.spec.disabled_tools.iter().any(|d| *d == t.name) {
                "disabledTools"
            } else {
                "enabledTools"
            };
            Some(CallError::ToolFiltered {
                server: server.clone(),
                tool: t.name.clone(),
                filter,
            })
        })
    }

    fn unavailable_owner(&self, name: &str) -> Option<(&String, &String)> {
        self.unavailable.iter().find(|(server, _)| {
            name.strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(sanitize(server).as_str()))
                .is_some_and(|rest| rest.starts_with("__"))
        })
    }
}

impl Actor for ToolRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(crate::MAILBOX);
    }
}

impl Handler<SetBuiltins> for ToolRegistry {
    type Result = ();

    fn handle(&mut self, msg: SetBuiltins, _ctx: &mut Context<Self>) {
        self.builtins = msg.tools.into_iter().map(Arc::new).collect();
        self.executor = Some(msg.executor);
        self.rebuild(None);
    }
}

impl Handler<ServerTools> for ToolRegistry {
    type Result = ();

    fn handle(&mut self, msg: ServerTools, ctx: &mut Context<Self>) {
        let name = msg.spec.name.clone();
        self.unavailable.remove(&name);
        // A new connection: its skills are listed once (entries only, never a file); a server
        // without the extension answers at once that it offers none.
        if let Some(addr) = msg
            .addr
            .clone()
            .filter(|a| self.servers.get(&name).and_then(|t| t.addr.as_ref()) != Some(a))
        {
            let server = name.clone();
            let ask = addr.send(crate::messages::ListSkills {
                server: server.clone(),
            });
            self.skills_pending.send_modify(|n| *n += 1);
            self.skills_wait_until = Some(tokio::time::Instant::now() + SKILLS_WAIT);
            ctx.spawn(ask.into_actor(self).map(move |got, act, _| {
                act.skills_pending.send_modify(|n| *n = n.saturating_sub(1));
                // Only for the connection it was asked of.
                let current = act.servers.get(&server).and_then(|t| t.addr.as_ref());
                if current != Some(&addr) {
                    return;
                }
                match got {
                    Ok(Ok(listing)) => act.set_skills(&server, Some(listing)),
                    Ok(Err(RequestError::NotOffered { .. })) | Err(_) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(target: "mcp", server = %server, "skills not listed: {e}");
                    }
                }
            }));
        }
        if !self.order.contains(&name) {
            self.order.push(name.clone());
        }
        self.set_instructions(&name, msg.instructions);
        let prefix = server_prefix(&name);
        // Only the last change's removals are kept: a server that renames its tools at every
        // list_changed cannot grow this map past its own list.
        self.vanished.retain(|_, (server, _)| *server != name);
        if let Some(old) = self.servers.get(&name) {
            // A set of the new names: a re-list of n tools costs n lookups, not n * n.
            let listed: HashSet<&str> = msg.tools.iter().map(|t| t.name.as_str()).collect();
            for t in old.tools.iter() {
                if !listed.contains(t.name.as_str()) {
                    self.vanished.insert(
                        full_name_prefixed(&prefix, &t.name),
                        (name.clone(), t.name.clone()),
                    );
                }
            }
        }
        // Another server's vanished tool may be listed again under this one's name.
        if !self.vanished.is_empty() {
            for t in msg.tools.iter() {
                self.vanished.remove(&full_name_prefixed(&prefix, &t.name));
            }
        }
        self.servers.insert(
            name.clone(),
            ServerTable {
                spec: msg.spec,
                addr: msg.addr,
                starter: msg.starter,
                tools: msg.tools,
            },
        );
        self.rebuild(Some(&name));
    }
}

impl Handler<ServerGone> for ToolRegistry {
    type Result = ();

    fn handle(&mut self, msg: ServerGone, _ctx: &mut Context<Self>) {
        let had = self.servers.remove(&msg.server).is_some();
        self.set_instructions(&msg.server, None);
        self.set_skills(&msg.server, None);
        self.unavailable.insert(msg.server, msg.reason);
        if had {
            self.rebuild(None);
        }
    }
}

impl Handler<ListTools> for ToolRegistry {
    type Result = MessageResult<ListTools>;

    fn handle(&mut self, _msg: ListTools, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.entries.clone())
    }
}

impl Handler<LookupTool> for ToolRegistry {
    type Result = Result<ToolEntry, CallError>;

    fn handle(&mut self, msg: LookupTool, _ctx: &mut Context<Self>) -> Self::Result {
        match self.entries.iter().find(|e| *e.name == *msg.name) {
            Some(e) => Ok(e.clone()),
            None => Err(self.absent(msg.name)),
        }
    }
}

impl Handler<WhyFiltered> for ToolRegistry {
    type Result = Option<CallError>;

    fn handle(&mut self, msg: WhyFiltered, _ctx: &mut Context<Self>) -> Self::Result {
        self.filtered_owner(&crate::naming::full_name(&msg.server, &msg.tool))
    }
}

impl Handler<ListServers> for ToolRegistry {
    type Result = Vec<String>;

    fn handle(&mut self, _msg: ListServers, _ctx: &mut Context<Self>) -> Vec<String> {
        self.order
            .iter()
            .filter(|s| self.servers.contains_key(*s))
            .cloned()
            .collect()
    }
}

impl Handler<GetInstructions> for ToolRegistry {
    type Result = ResponseActFuture<Self, Arc<Vec<(String, Arc<str>)>>>;

    fn handle(&mut self, _msg: GetInstructions, _ctx: &mut Context<Self>) -> Self::Result {
        let mut pending = self.skills_pending.subscribe();
        let until = self.skills_wait_until;
        Box::pin(
            async move {
                if let Some(until) = until {
                    let _ = tokio::time::timeout_at(until, pending.wait_for(|n| *n == 0)).await;
                }
            }
            .into_actor(self)
            .map(|(), act, _| act.instructions_list.clone()),
        )
    }
}

impl Handler<crate::messages::GetSkills> for ToolRegistry {
    type Result = MessageResult<crate::messages::GetSkills>;

    fn handle(
        &mut self,
        _msg: crate::messages::GetSkills,
        _ctx: &mut Context<Self>,
    ) -> Self::Result {
        MessageResult(
            self.skills
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }
}

macro_rules! route_to_server {
    ($($m:ty),* $(,)?) => {$(
        impl Handler<$m> for ToolRegistry {
            type Result = ResponseFuture<Result<<$m as ServerRequest>::Output, RequestError>>;

            fn handle(&mut self, msg: $m, _ctx: &mut Context<Self>) -> Self::Result {
                self.forward(msg)
            }
        }
    )*};
}

route_to_server!(
    ListSkills,
    GetSkill,
    GetTaskStatus,
    CancelServerTask,
    AwaitTask,
    ListResources,
    ListResourceTemplates,
    ReadResource,
    SubscribeResource,
    ListPrompts,
    GetPrompt,
    Complete,
);

/// The most of a schema mismatch that is reported (the first errors, then a count).
const MAX_SCHEMA_ERRORS: usize = 5;

/// Compiles an `outputSchema`; a `$ref` to anything outside the schema is never fetched
/// (the crate is built without its HTTP and file resolvers), so it fails to compile.
fn compile_schema(schema: &str) -> Result<jsonschema::Validator, String> {
    let v: Value = serde_json::from_str(schema).map_err(|e| e.to_string())?;
    jsonschema::validator_for(&v).map_err(|e| e.to_string())
}

/// Why a result does not match its tool's `outputSchema`, or `None` when it does (or is an
/// error result, which need not).
fn check_output(
    result: &CallToolResult,
    validator: &Result<jsonschema::Validator, String>,
) -> Option<String> {
    if result.is_error {
        return None;
    }
    let validator = match validator {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "the tool's outputSchema is not a usable JSON Schema: {e}"
            ))
        }
    };
    let Some(structured) = &result.structured_content else {
        return Some(
            "the tool declares an outputSchema but the result has no structuredContent".to_owned(),
        );
    };
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            let text: String = e.to_string().chars().take(300).collect();
            format!("at {at}: {text}")
        })
        .take(MAX_SCHEMA_ERRORS + 1)
        .collect();
    if errors.is_empty() {
        return None;
    }
    let more = if errors.len() > MAX_SCHEMA_ERRORS {
        "; and more"
    } else {
        ""
    };
    Some(format!(
        "structuredContent does not match the tool's outputSchema: {}{more}",
        errors[..errors.len().min(MAX_SCHEMA_ERRORS)].join("; ")
    ))
}

impl Handler<CallTool> for ToolRegistry {
    type Result = MessageResult<CallTool>;

    fn handle(&mut self, msg: CallTool, ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.route(msg, Some(ctx)))
    }
}

impl Handler<Rerouted> for ToolRegistry {
    type Result = MessageResult<Rerouted>;

    fn handle(&mut self, msg: Rerouted, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.route(msg.0, None))
    }
}

impl ToolRegistry {
    /// Waits for the server of a tool offered from the cache (within its startup timeout, a
    /// progress line on the call), then routes the call again on the live table (`me`).
    fn await_then_route(
        &self,
        msg: CallTool,
        server: String,
        table: &ServerTable,
        me: Addr<ToolRegistry>,
    ) -> Routed {
        let Some(starter) = table.starter.clone() else {
            return Routed::ready(Err(CallError::ServerUnavailable {
                server,
                reason: "not connected".to_owned(),
            }));
        };
        let startup = table.spec.startup_timeout;
        if let Some(p) = &msg.progress {
            p.send(ToolProgress {
                server: server.clone(),
                progress: 0.0,
                total: None,
                message: Some(format!(
                    "waiting for server \"{server}\" to start (up to {}, its startupTimeoutSec)",
                    crate::error::fmt_duration(startup)
                )),
            });
        }
        Routed(Box::pin(async move {
            let cancel = msg.cancel.clone();
            let wait = starter.send(AwaitServer {
                server: server.clone(),
            });
            let got = tokio::select! {
                r = tokio::time::timeout(startup + AWAIT_MARGIN, wait) => r,
                _ = cancel.cancelled() => {
                    let tool = msg.name.clone();
                    return Err(CallError::Cancelled { server, tool });
                }
            };
            match got {
                Ok(Ok(Ok(_))) => match me.send(Rerouted(msg)).await {
                    Ok(routed) => routed.await,
                    Err(_) => Err(CallError::ServerUnavailable {
                        server,
                        reason: "unreachable: the tool registry has stopped".to_owned(),
                    }),
                },
                Ok(Ok(Err(reason))) => Err(CallError::ServerUnavailable { server, reason }),
                Ok(Err(_)) => Err(CallError::ServerUnavailable {
                    server,
                    reason: "unreachable: its supervisor has stopped".to_owned(),
                }),
                Err(_) => Err(CallError::ServerUnavailable {
                    server,
                    reason: format!(
                        "still not connected after {}",
                        crate::error::fmt_duration(startup + AWAIT_MARGIN)
                    ),
                }),
            }
        }))
    }

    /// Routes a call; `me` is set on its first routing (a call of a tool offered from the cache
    /// may then wait for its server and be routed again, once). Its address is made only then:
    /// an actix address is two allocations, and a routed call needs none.
    fn route(&mut self, msg: CallTool, me: Option<&Context<ToolRegistry>>) -> Routed {
        match self.routes.get(msg.name.as_str()) {
            Some(Route::Mcp { server, def }) => {
                let (server, def) = (server.clone(), def.clone());
                // Most tools declare no `outputSchema`: their calls look nothing more up.
                let validator = match def.output_schema {
                    Some(_) => self.validator(&msg.name),
                    None => None,
                };
                let tool = &def.name;
                let Some(table) = self.servers.get(&*server) else {
                    return Routed::ready(Err(CallError::ServerUnavailable {
                        server: server.to_string(),
                        reason: "gone".to_owned(),
                    }));
                };
                let addr = match (&table.addr, me) {
                    (Some(a), _) => a,
                    (None, Some(me)) => {
                        return self.await_then_route(msg, server.to_string(), table, me.address())
                    }
                    (None, None) => {
                        return Routed::ready(Err(CallError::ServerUnavailable {
                            server: server.to_string(),
                            reason: "not connected".to_owned(),
                        }))
                    }
                };
                let call = addr.send(CallServerTool {
                    tool: tool.clone(),
                    arguments: msg.arguments,
                    timeout: msg.timeout.unwrap_or(table.spec.tool_timeout),
                    cancel: msg.cancel,
                    progress: msg.progress,
                    parent: msg.parent,
                    detach: msg.detach,
                });
                Routed(Box::pin(async move {
                    let mut result = match call.await {
                        Ok(sent) => sent.await?,
                        Err(_) => {
                            return Err(CallError::ServerUnavailable {
                                server: server.to_string(),
                                reason: "stopped".to_owned(),
                            })
                        }
                    };
                    if let Some(v) = validator {
                        result.schema_error = check_output(&result, &v);
                    }
                    Ok(result)
                }))
            }
            Some(Route::Builtin) => {
                let Some(exec) = self.executor.clone() else {
                    let name = msg.name;
                    return Routed::ready(Err(CallError::UnknownTool { name }));
                };
                let name = msg.name.clone();
                let call = exec.send(CallBuiltin {
                    name: msg.name,
                    arguments: msg.arguments,
                    cancel: msg.cancel,
                });
                Routed(Box::pin(async move {
                    call.await.unwrap_or_else(|_| {
                        Err(CallError::ServerUnavailable {
                            server: "built-in".to_owned(),
                            reason: format!(
                                "unable to run \"{name}\": the built-in executor stopped"
                            ),
                        })
                    })
                }))
            }
            None => Routed::ready(Err(self.absent(msg.name))),
        }
    }
}
