//! The `ToolRegistry` actor: the one tool table (built-ins first, then MCP tools by server in
//! order of first connect) and the router of every tool call to the owning server's current actor.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use crate::error::CallError;
use crate::messages::{
    CallBuiltin, CallServerTool, CallTool, ListTools, ServerGone, ServerTools, SetBuiltins,
    ToolEntry, WhyFiltered,
};
use crate::naming::{full_name_prefixed, sanitize, server_prefix};
use crate::protocol::types::{CallToolResult, Tool};
use crate::server::McpServer;
use crate::spec::ServerSpec;

enum Route {
    Builtin,
    Mcp { server: String, tool: String },
}

struct ServerTable {
    spec: Arc<ServerSpec>,
    addr: Addr<McpServer>,
    tools: Arc<[Arc<Tool>]>,
}

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
    routes: HashMap<String, Route>,
    entries: Arc<Vec<ToolEntry>>,
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
        let name = msg.name.clone();
        let _guard = msg.cancel.clone().drop_guard();
        match addr.send(msg).await {
            Ok(r) => r,
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
        for t in &self.builtins {
            if routes.insert(t.name.clone(), Route::Builtin).is_none() {
                entries.push(ToolEntry {
                    name: t.name.clone(),
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
            for t in table.tools.iter() {
                if !table.spec.tool_enabled(&t.name) {
                    continue;
                }
                match routes.entry(full_name_prefixed(&prefix, &t.name)) {
                    Entry::Occupied(owner) => {
                        if changed == Some(server.as_str()) {
                            let by = match owner.get() {
                                Route::Builtin => "a built-in tool".to_owned(),
                                Route::Mcp { server, tool } => {
                                    format!("tool \"{tool}\" of server \"{server}\"")
                                }
                            };
                            tracing::warn!(target: "mcp", server = %server, tool = %t.name,
                                "tool skipped: its name {} is taken by {by}", owner.key());
                        }
                    }
                    Entry::Vacant(slot) => {
                        let name = slot.key().clone();
                        slot.insert(Route::Mcp {
                            server: server.clone(),
                            tool: t.name.clone(),
                        });
                        entries.push(ToolEntry {
                            name,
                            server: Some(server.clone()),
                            tool: t.clone(),
                        });
                    }
                }
            }
        }
        self.routes = routes;
        self.entries = Arc::new(entries);
    }

    /// The server and tool a registered-style `name` would be if the server's filters did not
    /// leave it out, with the filter that does.
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

    fn handle(&mut self, msg: ServerTools, _ctx: &mut Context<Self>) {
        let name = msg.spec.name.clone();
        self.unavailable.remove(&name);
        if !self.order.contains(&name) {
            self.order.push(name.clone());
        }
        self.servers.insert(
            name.clone(),
            ServerTable {
                spec: msg.spec,
                addr: msg.addr,
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

impl Handler<WhyFiltered> for ToolRegistry {
    type Result = Option<CallError>;

    fn handle(&mut self, msg: WhyFiltered, _ctx: &mut Context<Self>) -> Self::Result {
        self.filtered_owner(&crate::naming::full_name(&msg.server, &msg.tool))
    }
}

impl Handler<CallTool> for ToolRegistry {
    type Result = ResponseFuture<Result<CallToolResult, CallError>>;

    fn handle(&mut self, msg: CallTool, _ctx: &mut Context<Self>) -> Self::Result {
        match self.routes.get(&msg.name) {
            Some(Route::Mcp { server, tool }) => {
                let Some(table) = self.servers.get(server) else {
                    let server = server.clone();
                    return Box::pin(async move {
                        Err(CallError::ServerUnavailable {
                            server,
                            reason: "gone".to_owned(),
                        })
                    });
                };
                let call = table.addr.send(CallServerTool {
                    tool: tool.clone(),
                    arguments: msg.arguments,
                    timeout: msg.timeout.unwrap_or(table.spec.tool_timeout),
                    cancel: msg.cancel,
                    progress: msg.progress,
                });
                let server = server.clone();
                Box::pin(async move {
                    call.await.unwrap_or_else(|_| {
                        Err(CallError::ServerUnavailable {
                            server,
                            reason: "stopped".to_owned(),
                        })
                    })
                })
            }
            Some(Route::Builtin) => {
                let Some(exec) = self.executor.clone() else {
                    let name = msg.name;
                    return Box::pin(async move { Err(CallError::UnknownTool { name }) });
                };
                let name = msg.name.clone();
                let call = exec.send(CallBuiltin {
                    name: msg.name,
                    arguments: msg.arguments,
                    cancel: msg.cancel,
                });
                Box::pin(async move {
                    call.await.unwrap_or_else(|_| {
                        Err(CallError::ServerUnavailable {
                            server: "built-in".to_owned(),
                            reason: format!(
                                "unable to run \"{name}\": the built-in executor stopped"
                            ),
                        })
                    })
                })
            }
            None => {
                let err = match self.unavailable_owner(&msg.name) {
                    Some((server, reason)) => CallError::ServerUnavailable {
                        server: server.clone(),
                        reason: reason.clone(),
                    },
                    None => self
                        .filtered_owner(&msg.name)
                        .unwrap_or(CallError::UnknownTool { name: msg.name }),
                };
                Box::pin(async move { Err(err) })
            }
        }
    }
}
