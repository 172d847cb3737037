//! Tool search's two figures over the recorded tool lists of 16 real servers
//! (`tests/fixtures/toolsets`): the bytes of tool definitions in the first model request, all
//! tools against deferred (goal: at most 10%), with every tool reachable by a search for its
//! purpose; and recall@5 over the task set `queries.tsv` (goal: at least 95%), with the misses.
//! Not timed. Run: `cargo bench --bench toolsearch`.
// A benchmark's own fixtures: a failure is a broken benchmark.
#![allow(clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use harness9::agent::engine::schema_object;
use harness9::agent::model::ToolDef;
use harness9::agent::toolsearch::{self, rank::Index, ToolSearchSettings};
use harness9_actors::messages::ToolEntry;
use harness9_actors::protocol::types::Tool;

/// The table as the registry builds it: `mcp__server__tool` names, servers in file order.
fn table(dir: &Path) -> Vec<ToolEntry> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/fixtures/toolsets")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&f).expect("read")).expect("json");
        let server = v["server"].as_str().expect("server").to_owned();
        let prefix = server.replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_");
        for t in v["tools"].as_array().expect("tools") {
            let tool: Tool = serde_json::from_value(t.clone()).expect("a tool");
            out.push(ToolEntry {
                name: format!("mcp__{prefix}__{}", tool.name).into(),
                server: Some(server.as_str().into()),
                tool: Arc::new(tool),
            });
        }
    }
    out
}

/// The definitions the model gets, as the engine builds them.
fn def(e: &ToolEntry) -> ToolDef {
    harness9::agent::toolsearch::entry_def(e).expect("a recorded tool's schema is an object")
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("tests/fixtures/toolsets");
    let entries = table(&dir);
    first_request_bytes(&entries);
    let index = Index::new(entries.iter().filter_map(toolsearch::doc).collect());
    recall(&dir, &entries, &index);
    reachability(&entries, &index);
}

/// The first model request's bytes of tool definitions: every tool, and with tool search on.
fn first_request_bytes(entries: &[ToolEntry]) {
    let servers: BTreeSet<&str> = entries.iter().filter_map(|e| e.server.as_deref()).collect();
    let builtins: Vec<ToolDef> = harness9::agent::builtins::definitions()
        .iter()
        .map(|t| ToolDef {
            name: t.name.clone(),
            description: t.description.as_deref().unwrap_or_default().to_owned(),
            input_schema: schema_object(t.input_schema.get()).expect("schema"),
        })
        .collect();
    let defs: Vec<ToolDef> = entries.iter().map(def).collect();
    let meta: Vec<(&ToolDef, Option<&str>, bool)> = builtins
        .iter()
        .map(|d| (d, None, false))
        .chain(
            defs.iter()
                .zip(entries)
                .map(|(d, e)| (d, e.server.as_deref(), false)),
        )
        .collect();
    let bytes =
        |ds: &mut dyn Iterator<Item = &ToolDef>| ds.map(toolsearch::def_bytes).sum::<usize>();
    let all_bytes = bytes(&mut meta.iter().map(|(d, _, _)| *d));
    let mcp_bytes = bytes(&mut defs.iter());
    let window = 200_000;
    let settings = ToolSearchSettings::default();
    let plan = toolsearch::plan(&settings, window, &meta, &BTreeSet::new(), &[]);
    let search = toolsearch::search_def();
    let offered_bytes = bytes(
        &mut meta
            .iter()
            .zip(&plan.offered)
            .filter(|(_, o)| **o)
            .map(|((d, _, _), _)| *d),
    ) + toolsearch::def_bytes(&search);
    let note = toolsearch::deferred_note(&plan).unwrap_or_default();
    println!(
        "tool set: {} servers, {} MCP tools, {} built-ins",
        servers.len(),
        defs.len(),
        builtins.len()
    );
    println!(
        "first request, all tools:      {all_bytes} bytes of tool definitions (~{} tokens; MCP {mcp_bytes} bytes)",
        toolsearch::tokens(all_bytes)
    );
    println!(
        "first request, tool search on: {offered_bytes} bytes of tool definitions + {} bytes of system-prompt note = {} bytes, {:.1}% of all (deferring: {}, window {window}, share {})",
        note.len(),
        offered_bytes + note.len(),
        100.0 * (offered_bytes + note.len()) as f64 / all_bytes as f64,
        plan.deferring,
        settings.share
    );
}

/// Search quality: recall@1 and recall@5 over the task set `queries.tsv`, with the misses.
fn recall(dir: &Path, entries: &[ToolEntry], index: &Index) {
    let name_of = |server: &str, tool: &str| {
        entries
            .iter()
            .find(|e| e.server.as_deref() == Some(server) && e.tool.name == tool)
            .map(|e| e.name.clone())
            .unwrap_or_else(|| {
                panic!("queries.tsv names {server}/{tool}, which is not in the fixtures")
            })
    };
    let text = std::fs::read_to_string(dir.join("queries.tsv")).expect("queries.tsv");
    let (mut n, mut hit1, mut hit5) = (0, 0, 0);
    let mut misses = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (q, want) = line.split_once('\t').expect("query<TAB>server/tool");
        let (s, t) = want.split_once('/').expect("server/tool");
        let want = name_of(s, t);
        let got: Vec<&str> = index
            .search(q, None, 5)
            .into_iter()
            .map(|i| index.docs()[i].name.as_str())
            .collect();
        n += 1;
        if got.first() == Some(&&*want) {
            hit1 += 1;
        }
        if got.contains(&&*want) {
            hit5 += 1;
        } else {
            misses.push(format!("  {q:?} wants {want}; got {got:?}"));
        }
    }
    println!(
        "search: {n} tasks, recall@1 {:.1}%, recall@5 {:.1}% ({hit5}/{n})",
        100.0 * hit1 as f64 / n as f64,
        100.0 * hit5 as f64 / n as f64
    );
    println!("misses at 5:");
    for m in &misses {
        println!("{m}");
    }
}

/// Every tool reachable: its exact name, and the first sentence of its description.
fn reachability(entries: &[ToolEntry], index: &Index) {
    let mut unreachable = Vec::new();
    for e in entries {
        let by_name = index.search(&e.tool.name, Some(e.server.as_deref().unwrap_or("")), 5);
        let purpose = e.tool.description.as_deref().unwrap_or("");
        let purpose = purpose.split(['.', '\n']).next().unwrap_or(purpose);
        let by_purpose = index.search(purpose, None, 5);
        let found = |hits: &[usize]| hits.iter().any(|i| *index.docs()[*i].name == *e.name);
        if !found(&by_name) || !found(&by_purpose) {
            unreachable.push(format!(
                "  {} (by name: {}, by purpose {purpose:?}: {})",
                e.name,
                found(&by_name),
                found(&by_purpose)
            ));
        }
    }
    println!(
        "reachable: {}/{} tools found by their exact name and by the first sentence of their description",
        entries.len() - unreachable.len(),
        entries.len()
    );
    for u in &unreachable {
        println!("{u}");
    }
}
