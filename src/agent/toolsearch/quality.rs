//! The search's quality over the recorded tool lists of 16 real servers
//! (`tests/fixtures/toolsets/`), as a test so a ranking change cannot lower it unnoticed:
//! recall@5 of the task set `queries.tsv` at least 95%, and every tool found by its exact name.
//! `cargo bench --bench toolsearch` prints the figures and the misses.

use std::path::Path;
use std::sync::Arc;

use harness9_actors::messages::ToolEntry;
use harness9_actors::protocol::types::Tool;

use super::rank::Index;

fn entries() -> Vec<ToolEntry> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/toolsets");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let v: serde_json::Value = std::fs::read(&f)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let server = v["server"].as_str().unwrap_or_default().to_owned();
        let prefix = server.replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_");
        for t in v["tools"].as_array().into_iter().flatten() {
            let Ok(tool) = serde_json::from_value::<Tool>(t.clone()) else {
                continue;
            };
            out.push(ToolEntry {
                name: format!("mcp__{prefix}__{}", tool.name).into(),
                server: Some(server.as_str().into()),
                tool: Arc::new(tool),
            });
        }
    }
    out
}

#[test]
fn recall_at_5_over_the_recorded_servers_is_at_least_95_percent() {
    let entries = entries();
    assert!(
        entries.len() >= 200,
        "the fixtures: {} tools",
        entries.len()
    );
    let index = Index::new(entries.iter().filter_map(super::doc).collect());
    let queries = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/toolsets/queries.tsv"),
    )
    .unwrap_or_default();
    let (mut n, mut hits) = (0, 0);
    for line in queries
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let Some((q, want)) = line.split_once('\t') else {
            panic!("queries.tsv: {line:?} is not query<TAB>server/tool");
        };
        let want = want.replacen('/', "__", 1).replace('-', "_");
        let got: Vec<&str> = index
            .search(q, None, 5)
            .into_iter()
            .map(|i| index.docs()[i].name.as_str())
            .collect();
        n += 1;
        if got
            .iter()
            .any(|g| g.strip_prefix("mcp__") == Some(want.as_str()))
        {
            hits += 1;
        }
    }
    assert!(n >= 100, "{n} tasks");
    assert!(hits * 100 >= n * 95, "recall@5 {hits}/{n}");
    for e in &entries {
        let hit = index.search(&e.name, None, 1);
        assert_eq!(
            hit.first().map(|i| index.docs()[*i].name.as_str()),
            Some(&*e.name)
        );
    }
}
