//! The handshake (initialize, initialized, the first tools/list) and paginated lists, as
//! futures over a server actor's address: they run spawned on the actor, never awaited inside a
//! handler, and the caller bounds each one (the startup timeout, the re-list's bound).

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{json, Value};

use super::mcp_server::{McpServer, Notify, Payload, ReplyError, Rpc};
use crate::protocol::types::{
    Implementation, InitializeParams, InitializeResult, ListToolsResult, Tool,
};
use crate::protocol::version::{negotiate, Era, LATEST};

/// What a successful handshake yields.
pub(super) type Handshake = (InitializeResult, Era, Arc<[Arc<Tool>]>);

async fn rpc(
    addr: &Addr<McpServer>,
    method: &'static str,
    params: Option<Value>,
) -> Result<Payload, String> {
    let (rx, backlog) = addr
        .send(Rpc { method, params })
        .await
        .map_err(|_| "server actor stopped".to_owned())?;
    // A full queue: wait for room (the handshake and the re-list bound this whole call).
    if let Some(b) = backlog {
        if !b.send().await {
            return Err(format!("server stopped before {method} could be written"));
        }
    }
    match rx.await {
        Ok(Ok(raw)) => Ok(raw),
        Ok(Err(ReplyError::Rpc(e))) => Err(format!("{method} failed: {e}")),
        Ok(Err(ReplyError::Gone(why))) => Err(format!("server {why} during {method}")),
        Ok(Err(ReplyError::Transport(e))) => Err(format!("{method} failed: {e}")),
        Ok(Err(ReplyError::TooLarge(max))) => Err(format!(
            "{method} reply exceeds the maximum message size of {}",
            crate::protocol::render::human_bytes(max)
        )),
        Err(_) => Err("server actor stopped".to_owned()),
    }
}

pub(super) async fn handshake(
    addr: Addr<McpServer>,
    max_tools: usize,
) -> Result<Handshake, String> {
    let client = Implementation {
        name: "harness9".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        title: None,
    };
    let params = InitializeParams {
        protocol_version: LATEST.as_str(),
        capabilities: json!({ "roots": { "listChanged": false } }),
        client_info: &client,
    };
    let params = serde_json::to_value(&params).map_err(|e| e.to_string())?;
    let raw = rpc(&addr, "initialize", Some(params)).await?;
    let init: InitializeResult = raw
        .parse()
        .map_err(|e| format!("invalid initialize result: {e}"))?;
    let era = negotiate(&init.protocol_version)?;
    let backlog = addr
        .send(Notify {
            method: "notifications/initialized",
        })
        .await
        .map_err(|_| "server actor stopped".to_owned())?;
    if let Some(b) = backlog {
        b.send().await;
    }
    let tools = list_tools(addr, max_tools).await?;
    Ok((init, era, tools))
}

pub(super) async fn list_tools(
    addr: Addr<McpServer>,
    max: usize,
) -> Result<Arc<[Arc<Tool>]>, String> {
    let tools = list_all(
        &addr,
        "tools/list",
        max,
        "maxTools",
        |p: ListToolsResult| (p.tools, p.next_cursor),
    )
    .await?;
    Ok(tools.into_iter().map(Arc::new).collect())
}

/// Pages a server may send for one list.
const MAX_PAGES: usize = 10_000;

/// Walks a paginated list (`tools/list`; every later paginated list goes through here too) to
/// its end. A cursor seen before on this walk (A, B, A) is a cycle; more than `max` items
/// (`setting` raises it) or [`MAX_PAGES`] pages is an error; the caller bounds the time.
async fn list_all<P, T>(
    addr: &Addr<McpServer>,
    method: &'static str,
    max: usize,
    setting: &str,
    split: impl Fn(P) -> (Vec<T>, Option<String>),
) -> Result<Vec<T>, String>
where
    P: serde::de::DeserializeOwned,
{
    use std::hash::{Hash, Hasher};
    let mut all: Vec<T> = Vec::new();
    // Hashes, not cursors: a server's cursors may be large; a clash only ends a walk early.
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    for pages in 1..=MAX_PAGES {
        let params = cursor.as_deref().map(|c| json!({ "cursor": c }));
        let raw = rpc(addr, method, params).await?;
        let page: P = raw
            .parse()
            .map_err(|e| format!("invalid {method} result: {e}"))?;
        drop(raw);
        let (items, next) = split(page);
        if all.len() + items.len() > max {
            return Err(format!(
                "{method} returned more than {max} items; if that is legitimate, raise {setting} for this server"
            ));
        }
        all.extend(items);
        let Some(next) = next.filter(|c| !c.is_empty()) else {
            return Ok(all);
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        next.hash(&mut h);
        if !seen.insert(h.finish()) {
            let shown: String = next.chars().take(40).collect();
            return Err(format!(
                "{method} returned the cursor {shown:?} again after {pages} pages: the server's pagination cycles"
            ));
        }
        cursor = Some(next);
    }
    Err(format!("{method} returned more than {MAX_PAGES} pages"))
}
