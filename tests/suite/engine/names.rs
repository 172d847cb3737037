//! Servers are named by identity, not by sanitized name (issue 32, C8): a user's rule for
//! `brave_search` does not reach a project server `brave.search`; two servers whose tool names
//! would collide are both held with an error naming them and their files; tool search's
//! `server` scope is the exact name. Through `harness9 run -p` and `mcp list` with the
//! scripted model, the fixture server in a project `.mcp.json` (approved with
//! `--approve-project`) and the user's own config.

use super::*;

/// The user's config directory (`~/.config/harness9` under the test's `HOME`), made.
fn user_config(dir: &Path) -> PathBuf {
    let config = home(dir).join(".config/harness9");
    std::fs::create_dir_all(&config).unwrap();
    config
}

/// A project whose `.mcp.json` has the fixture server as `brave.search` (recording its calls
/// to the returned file), and a user config with the fixture server as `mine`.
fn dotted_project(tag: &str) -> (PathBuf, PathBuf) {
    let dir = project(tag, Value::Null);
    let record = dir.join("brave-record.jsonl");
    let servers = json!({"brave.search": fixture_json(&["--record", &record.display().to_string()], json!({}))});
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    std::fs::write(
        user_config(&dir).join("mcp.json"),
        json!({"mcpServers": {"mine": fixture_json(&[], json!({}))}}).to_string(),
    )
    .unwrap();
    (dir, record)
}

/// The model calls `brave.search`'s `write` (registered `mcp__brave_search__write`), then
/// answers when it has seen the result.
fn write_call(tag: &str, written: &Path, last_contains: &str) -> Model {
    Model::start(
        tag,
        json!({"steps": [
            {"tool_calls": [call("w", "mcp__brave_search__write",
                json!({"path": written.display().to_string(), "text": "x"}))]},
            {"text": "done", "expect": {"last_tool_result_contains": last_contains}}
        ]}),
    )
}

fn calls_in(record: &Path) -> usize {
    methods(record)
        .iter()
        .filter(|m| *m == "tools/call")
        .count()
}

/// The user allows `mcp__brave_search__*` (their own `brave_search`, not configured here):
/// the repository's `brave.search`, whose tools register as `mcp__brave_search__...`, is not
/// that server, so its unannotated tool is refused headless, and the refusal spells the rule
/// that would allow it with the server's own name.
#[test]
fn a_users_allow_rule_does_not_reach_a_project_server_of_the_same_sanitized_name() {
    let (dir, record) = dotted_project("names-allow");
    std::fs::write(
        user_config(&dir).join("config.toml"),
        "[permissions]\nallow = [\"mcp__brave_search__*\", \"mcp__brave_search__write\"]\n",
    )
    .unwrap();
    let written = dir.join("made-by-write");
    let model = write_call("names-allow", &written, "this run cannot ask");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let refused = out.event("tool_refused", "w");
    let reason = refused["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("--allowed-tools 'mcp__brave.search__write'"),
        "{refused}"
    );
    assert!(
        !written.exists(),
        "the project's server ran the call: {out}"
    );
    assert_eq!(calls_in(&record), 0, "{out}");

    // The rule spelled with the server's configured name allows it.
    let written = dir.join("made-by-write");
    let model = write_call("names-allow-exact", &written, "wrote");
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "mcp__brave.search__write",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert!(written.exists(), "{out}");
    assert_eq!(calls_in(&record), 1, "{out}");
}

/// The user denies `mcp__brave_search__*`: a deny is about their `brave_search`, not the
/// repository's `brave.search` (which the flag allows); the deny spelled with `brave.search`
/// refuses it.
#[test]
fn a_users_deny_rule_is_about_the_server_it_names() {
    let (dir, record) = dotted_project("names-deny");
    std::fs::write(
        user_config(&dir).join("config.toml"),
        "[permissions]\ndeny = [\"mcp__brave_search__*\"]\n",
    )
    .unwrap();
    let written = dir.join("made-by-write");
    let model = write_call("names-deny", &written, "wrote");
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--allowed-tools",
        "mcp__brave.search__*",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    assert!(!out.stdout.contains("tool_refused"), "{out}");
    assert!(written.exists(), "{out}");
    assert_eq!(calls_in(&record), 1, "{out}");

    let model = write_call("names-deny-exact", &written, "deny rule");
    let args = [
        "run",
        "-p",
        "go",
        "--json",
        "--permission-mode",
        "bypass",
        "--disallowed-tools",
        "mcp__brave.search__*",
    ];
    let out = Run::start(anthropic(&dir, &model), &args).finish(LIMIT);
    out.ok();
    let refused = out.event("tool_refused", "w");
    assert!(
        refused["rule"]
            .as_str()
            .unwrap_or_default()
            .starts_with("deny rule \"mcp__brave.search__*\""),
        "{refused}"
    );
    assert_eq!(calls_in(&record), 1, "{out}");
}

/// A project server `brave.search` and the user's `brave_search` would register the same
/// tool names: neither starts, each fails with an error naming both servers and both files
/// (no tool of either is offered, whichever would have connected first); the user's other
/// server is untouched.
#[test]
fn servers_whose_tool_names_collide_are_both_held_naming_both_files() {
    let (dir, record) = dotted_project("names-clash");
    let user_file = user_config(&dir).join("mcp.json");
    std::fs::write(
        &user_file,
        json!({"mcpServers": {
            "brave_search": fixture_json(&[], json!({})),
            "mine": fixture_json(&[], json!({})),
        }})
        .to_string(),
    )
    .unwrap();
    let out = output_within(
        {
            let mut c = harness9(&dir);
            c.args(["mcp", "list", "--json"]);
            c
        },
        None,
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == n))
            .cloned()
            .unwrap_or_else(|| panic!("no row {n}: {rows}"))
    };
    // The project file as harness9 found it (from the working directory), the user's in full.
    let project_file = ".mcp.json";
    let user_shown = user_file.display().to_string();
    for n in ["brave.search", "brave_search"] {
        let r = row(n);
        assert_eq!(r["status"], "failed", "{r}");
        let error = r["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(&format!("server \"brave.search\" ({project_file})"))
                && error.contains(&format!("server \"brave_search\" ({user_shown})")),
            "{error}"
        );
    }
    assert_eq!(row("mine")["status"], "connected", "{rows}");
    assert_eq!(calls_in(&record), 0);
}

/// Tool search's `server` is the exact name: with the project's `GitHub` and the user's
/// `github`, a search scoped to `github` finds `github`'s tools only.
#[test]
fn tool_search_scoped_to_a_server_is_case_exact() {
    let dir = project(
        "names-search",
        json!({"GitHub": fixture_json(&[], json!({}))}),
    );
    std::fs::write(
        user_config(&dir).join("mcp.json"),
        json!({"mcpServers": {"github": fixture_json(&[], json!({}))}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("harness9.toml"),
        "[context_windows]\n\"claude-sonnet-4-5\" = 4000\n",
    )
    .unwrap();
    let model = Model::start(
        "names-search",
        json!({"steps": [
            {"tool_calls": [call("s", "tool_search",
                json!({"query": "echo text back", "server": "github", "limit": 20}))]},
            {"text": "found"}
        ]}),
    );
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let found = out.event("tool_result", "s");
    assert_eq!(found["is_error"], false, "{found}");
    let text = found["output"].as_str().unwrap_or_default();
    assert!(text.contains("## mcp__github__echo"), "{text}");
    assert!(!text.contains("mcp__GitHub__"), "{text}");
}

/// A name a rule cannot spell exactly (`git__evil` would make `mcp__git__evil__x` mean two
/// servers' tools) holds its server with an error saying what names may hold; `mcp add`
/// refuses it before writing.
#[test]
fn a_server_name_rules_cannot_spell_is_held_and_mcp_add_refuses_it() {
    let dir = project(
        "names-bad",
        json!({"git__evil": fixture_json(&[], json!({})), "ok": fixture_json(&[], json!({}))}),
    );
    let out = output_within(
        {
            let mut c = harness9(&dir);
            c.args(["mcp", "list", "--json"]);
            c
        },
        None,
        LIMIT,
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == n))
            .cloned()
            .unwrap_or_else(|| panic!("no row {n}: {rows}"))
    };
    assert_eq!(row("git__evil")["status"], "failed", "{rows}");
    assert!(
        row("git__evil")["error"]
            .as_str()
            .unwrap_or_default()
            .contains("server \"git__evil\": a server's name may hold only"),
        "{rows}"
    );
    assert_eq!(row("ok")["status"], "connected", "{rows}");
    let fixture = fixture_bin().display().to_string();
    let out = output_within(
        {
            let mut c = harness9(&dir);
            c.args(["mcp", "add", "a b", "--", &fixture]);
            c
        },
        None,
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let config = std::fs::read_to_string(dir.join(".mcp.json")).unwrap();
    assert!(!config.contains("a b"), "{config}");
}

/// The registry on its own (specs that did not come through a config's checks): two servers
/// whose tools register under the same names (`x.y` and `x_y`) get none of those names,
/// whichever connected first, so a call never goes to the one that won a race.
#[test]
fn the_registry_gives_a_contested_tool_name_to_neither_server() {
    use harness9_actors::messages::{ListServers, ListTools};
    run(Duration::from_secs(60), || async {
        let mut rt = start(
            vec![
                fixture("x.y", &["--tools", "1"]),
                fixture("x_y", &[]),
                fixture("z", &[]),
            ],
            fast_policy(),
        );
        rt.settled(Duration::from_secs(30)).await;
        // Both tables are in (the registry hears of a server before its status says so).
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while rt.registry.send(ListServers).await.unwrap().len() < 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "servers not registered"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let tools = rt.registry.send(ListTools).await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
        assert!(!names.contains(&"mcp__x_y__echo"), "{names:?}");
        // What only one of them has is its own; another server is untouched.
        let own = tools
            .iter()
            .find(|t| &*t.name == "mcp__x_y__tool_00000")
            .map(|t| t.server.as_deref().map(str::to_owned));
        assert_eq!(own, Some(Some("x.y".to_owned())), "{names:?}");
        assert!(names.contains(&"mcp__z__echo"), "{names:?}");
        let err = harness9_actors::ToolRegistry::call(&rt.registry, "mcp__x_y__echo", None, None)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("mcp__x_y__echo"), "{err}");
        shutdown(rt, &[]).await;
    });
}
