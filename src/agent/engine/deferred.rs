//! The engine's side of tool search (`agent/toolsearch`): which tools a model step is offered
//! ([`ToolOffer::for_step`]), the system prompt's note on what is deferred, and the
//! `tool_search` call, answered here (never sent to a server). The tools a search returns and
//! the tools called in this conversation are offered from the next step on.

use std::collections::BTreeSet;
use std::sync::Mutex;

use std::sync::Arc;

use harness9_actors::messages::ToolEntry;
use serde_json::Value;

use super::calls::{CallCtx, Instructions, ToolOffer};
use super::EngineConfig;
use crate::model::ProviderKind;
use crate::model::{Block, Message, ToolDef};
use crate::toolsearch::{self, rank::Index, Plan, TOOL_SEARCH};
use harness9_actors::protocol::types::{CallToolResult, ContentBlock};

/// What the last offer was built from: the definitions and the instructions (held, compared by
/// `Arc` identity, so a freed one's address is never mistaken for a new one), the tools
/// loaded, the window.
#[derive(Clone)]
struct OfferKey {
    defs: Arc<Vec<ToolDef>>,
    instructions: Instructions,
    loaded: BTreeSet<String>,
    window: u64,
}

impl PartialEq for OfferKey {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.defs, &o.defs)
            && Arc::ptr_eq(&self.instructions, &o.instructions)
            && self.loaded == o.loaded
            && self.window == o.window
    }
}

/// Tool search's state in a [`ToolOffer`]: the tools found in this conversation and the last
/// offer, built again only when its key changes.
#[derive(Clone, Default)]
pub(super) struct Deferral {
    /// Names the searches of this conversation returned and the tools it called (shared with
    /// the turn's calls).
    found: Arc<Mutex<BTreeSet<String>>>,
    key: Option<OfferKey>,
    /// The index, with the definitions it was built from.
    index: Option<(Arc<Vec<ToolDef>>, Arc<Search>)>,
    offered: Arc<Vec<ToolDef>>,
    note: Option<String>,
    plan: Plan,
    /// Set while tools are deferred: what a `tool_search` call searches.
    pub(super) search: Option<Arc<Search>>,
}

impl Deferral {
    /// Forgets the tools found (a new conversation).
    pub(super) fn forget(&mut self) {
        *lock(&self.found) = BTreeSet::new();
        self.key = None;
    }

    /// What the last offer sent and deferred (for the front end's gauge).
    pub(super) fn offered(&self) -> toolsearch::ToolsOffered {
        (&self.plan).into()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The index a `tool_search` call searches, over every MCP tool of the table that is not
/// pinned, with their definitions as offered (shared, not copied: `defs[at[i]]` is the
/// definition of the index's doc `i`).
pub(super) struct Search {
    index: Index,
    defs: Arc<Vec<ToolDef>>,
    at: Vec<usize>,
    servers: Vec<String>,
    found: Arc<Mutex<BTreeSet<String>>>,
}

/// The tools the conversation's messages called (they stay offered).
fn used_tools(messages: &[Message]) -> impl Iterator<Item = &str> {
    messages.iter().flat_map(|m| {
        m.content.iter().filter_map(|b| match b {
            Block::ToolUse { name, .. } => Some(name.as_str()),
            _ => None,
        })
    })
}

impl ToolOffer {
    /// The system prompt and the tool definitions for one model step: every tool, or, when
    /// the MCP tools' definitions pass `[tool_search] share` of the window (see
    /// [`toolsearch::plan`]), the built-ins, pinned, used and found tools and `tool_search`,
    /// with a note on what is deferred after the system prompt.
    pub(super) fn for_step(
        &mut self,
        config: &EngineConfig,
        kind: ProviderKind,
        table: Arc<Vec<ToolEntry>>,
        instructions: Instructions,
        messages: &[Message],
    ) -> (Option<String>, Arc<Vec<ToolDef>>) {
        let all = self.definitions(table);
        let system = self.system(config.system.as_deref(), instructions.clone());
        let window = config
            .context_window
            .unwrap_or_else(|| toolsearch::default_window(kind));
        // A tool called stays offered, also once a compaction took its call out of the
        // messages.
        let loaded = {
            let mut found = lock(&self.deferral.found);
            found.extend(used_tools(messages).map(str::to_owned));
            found.clone()
        };
        let key = OfferKey {
            defs: all.clone(),
            instructions: instructions.clone(),
            loaded,
            window,
        };
        if self.deferral.key.as_ref() != Some(&key) {
            self.rebuild(config, &all, &instructions, window, &key.loaded);
            self.deferral.key = Some(key);
        }
        let d = &self.deferral;
        if !d.plan.deferring {
            return (system, all);
        }
        let system = match (system, &d.note) {
            (Some(s), Some(n)) => Some(format!("{s}{n}")),
            (None, Some(n)) => Some(n.trim_start().to_owned()),
            (s, None) => s,
        };
        (system, d.offered.clone())
    }

    fn rebuild(
        &mut self,
        config: &EngineConfig,
        all: &Arc<Vec<ToolDef>>,
        instructions: &Instructions,
        window: u64,
        loaded: &BTreeSet<String>,
    ) {
        let pins = &config.tool_search.pinned;
        let entries: std::collections::HashMap<&str, &ToolEntry> = self
            .source
            .iter()
            .flat_map(|t| t.iter())
            .map(|e| (&*e.name, e))
            .collect();
        let meta: Vec<(&ToolDef, Option<&str>, bool)> = all
            .iter()
            .map(|d| {
                let e = entries.get(d.name.as_str());
                let server = e.and_then(|e| e.server.as_deref());
                (d, server, e.is_some_and(|e| toolsearch::is_pinned(pins, e)))
            })
            .collect();
        let plan = toolsearch::plan(&config.tool_search, window, &meta, loaded, instructions);
        let mut offered: Vec<ToolDef> = all
            .iter()
            .zip(&plan.offered)
            .filter(|(_, o)| **o)
            .map(|(d, _)| d.clone())
            .collect();
        let search = if plan.deferring {
            offered.push(toolsearch::search_def());
            let search = match &self.deferral.index {
                Some((k, s)) if Arc::ptr_eq(k, all) => s.clone(),
                _ => {
                    let mut docs = Vec::new();
                    let mut at = Vec::new();
                    let mut servers: Vec<String> = Vec::new();
                    for (i, (d, _, pinned)) in meta.iter().enumerate() {
                        let Some(e) = entries.get(d.name.as_str()) else {
                            continue;
                        };
                        let Some(doc) = toolsearch::doc(e).filter(|_| !pinned) else {
                            continue;
                        };
                        if !servers.contains(&doc.server) {
                            servers.push(doc.server.clone());
                        }
                        at.push(i);
                        docs.push(doc);
                    }
                    let s = Arc::new(Search {
                        index: Index::new(docs),
                        defs: all.clone(),
                        at,
                        servers,
                        found: self.deferral.found.clone(),
                    });
                    self.deferral.index = Some((all.clone(), s.clone()));
                    s
                }
            };
            Some(search)
        } else {
            None
        };
        self.deferral.note = toolsearch::deferred_note(&plan);
        self.deferral.offered = Arc::new(offered);
        self.deferral.plan = plan;
        self.deferral.search = search;
    }
}

/// Answers a `tool_search` call: the best matches' definitions as text; the names are offered
/// from the next step on. Bad arguments are an error result naming what to send.
pub(super) fn search_call(search: &Search, input: &Value) -> Result<CallToolResult, String> {
    let servers: Vec<&str> = search.servers.iter().map(String::as_str).collect();
    let (query, server, limit) = toolsearch::arguments(input, &servers)?;
    let hits = search.index.search(&query, server.as_deref(), limit);
    let defs: Vec<&ToolDef> = hits
        .iter()
        .filter_map(|i| search.at.get(*i))
        .filter_map(|i| search.defs.get(*i))
        .collect();
    lock(&search.found).extend(defs.iter().map(|d| d.name.clone()));
    Ok(CallToolResult {
        content: vec![ContentBlock::Text {
            text: toolsearch::render(&query, &defs, &servers),
        }],
        structured_content: None,
        is_error: false,
        result_type: None,
        schema_error: None,
        task: None,
    })
}

/// Whether `name` is answered here: `tool_search` while tools are deferred.
pub(super) fn is_search(ctx: &CallCtx, name: &str) -> bool {
    name == TOOL_SEARCH && ctx.search.is_some()
}
