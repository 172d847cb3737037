//! Tool search end to end: `harness9 run -p` against the scripted model and real servers
//! (server-everything, the PyPI `mcp` server) with a small context window in the project's
//! `harness9.toml`, so their tools pass `[tool_search] share` and are deferred.

use super::*;

/// A project whose `harness9.toml` says `settings` (a model window of 4,000 tokens: the
/// two servers' definitions pass 10% of it).
fn deferring_project(tag: &str, settings: &str) -> PathBuf {
    let dir = project(
        tag,
        json!({"everything": stdio_json(everything("x")), "py": stdio_json(python("py"))}),
    );
    let toml = format!(
        "[context_windows]\n\"claude-sonnet-4-5\" = 4000\n\"llama3.1\" = 4000\n\n[tool_search]\n{settings}\n"
    );
    std::fs::write(dir.join("harness9.toml"), toml).unwrap();
    dir
}

/// The request's system prompt and messages as one text (both formats).
fn request_text(r: &Value) -> String {
    format!("{}{}", r["body"]["system"], r["body"]["messages"])
}

/// The names a request offers in either format (`tools[].name` or `tools[].function.name`).
fn offered(r: &Value) -> Vec<String> {
    r["body"]["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| {
                    t["name"]
                        .as_str()
                        .or_else(|| t["function"]["name"].as_str())
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Search, then call what it found, in one turn.
fn script() -> Value {
    json!({"steps": [
        {"tool_calls": [call("s1", "tool_search", json!({"query": "add two numbers and return their sum"}))]},
        {"tool_calls": [call("c1", "mcp__everything__get_sum", json!({"a": 6, "b": 7}))],
         "expect": {"last_tool_result_contains": "mcp__everything__get_sum"}},
        {"text": "It is 13.", "expect": {"last_tool_result_contains": "13"}}
    ]})
}

fn check_search_then_call(out: &Out, reqs: &[Value]) {
    out.ok();
    assert_eq!(out.event("done", "")["text"], "It is 13.", "{out}");
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    let first = offered(&reqs[0]);
    // Deferred: the search tool and the built-ins, no MCP tool.
    assert!(first.contains(&"tool_search".to_owned()), "{first:?}");
    assert!(first.contains(&"read_file".to_owned()), "{first:?}");
    assert!(!first.iter().any(|t| t.starts_with("mcp__")), "{first:?}");
    // The system prompt says what is deferred, per server with its tool count.
    // The start event lists what the first request offered, and every tool apart.
    let start = out.event("start", "");
    let names = |v: &Value| {
        let mut n: Vec<String> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        n.sort();
        n
    };
    let mut want = first.clone();
    want.sort();
    assert_eq!(names(&start["tools"]), want, "{start}");
    let all = names(&start["tools_all"]);
    assert!(
        all.contains(&"mcp__everything__get_sum".to_owned()),
        "{start}"
    );
    assert!(!all.contains(&"tool_search".to_owned()), "{start}");
    let sys = request_text(&reqs[0]);
    assert!(sys.contains("Deferred tools"), "{sys}");
    assert!(sys.contains("- everything (15 tools)"), "{sys}");
    assert!(sys.contains("- py ("), "{sys}");
    // The search's result names the tool with its schema; from the next step it is offered.
    let found = out.event("tool_result", "s1");
    assert_eq!(found["is_error"], false, "{found}");
    let text = found["output"].as_str().unwrap_or_default();
    assert!(text.contains("## mcp__everything__get_sum"), "{text}");
    assert!(text.contains("input schema: {"), "{text}");
    let second = offered(&reqs[1]);
    assert!(
        second.contains(&"mcp__everything__get_sum".to_owned()),
        "{second:?}"
    );
    // Only what the search returned (at most 5) joined the built-ins.
    assert!(
        !second.contains(&"mcp__everything__echo".to_owned()),
        "{second:?}"
    );
    assert!(
        second.iter().filter(|t| t.starts_with("mcp__")).count() <= 5,
        "{second:?}"
    );
    let sum = out.event("tool_result", "c1");
    assert_eq!(sum["is_error"], false, "{sum}");
    assert!(
        sum["output"].as_str().unwrap_or_default().contains("13"),
        "{sum}"
    );
    // The note is the same in every request (a stable prompt-cache prefix).
    assert_eq!(reqs[0]["body"]["system"], reqs[2]["body"]["system"]);
}

#[test]
fn a_deferred_tool_is_found_and_called_in_one_turn_anthropic() {
    let model = Model::start("ts-anthropic", script());
    let dir = deferring_project("ts-anthropic", "");
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "what is 6 + 7?", "--json"],
    )
    .finish(LIMIT);
    check_search_then_call(&out, &model.requests());
}

#[test]
fn a_deferred_tool_is_found_and_called_in_one_turn_openai_compatible() {
    let model = Model::start("ts-openai", script());
    let dir = deferring_project("ts-openai", "");
    let mut cmd = harness9(&dir);
    cmd.env("HARNESS9_PROVIDER", "openai")
        .env("OPENAI_BASE_URL", format!("{}/v1", model.url))
        .env("HARNESS9_MODEL", "llama3.1");
    let out = Run::start(cmd, &["run", "-p", "what is 6 + 7?", "--json"]).finish(LIMIT);
    let reqs = model.requests();
    assert!(reqs.iter().all(|r| r["path"] == "/v1/chat/completions"));
    check_search_then_call(&out, &reqs);
}

#[test]
fn a_pinned_tool_or_server_is_never_deferred() {
    let model = Model::start(
        "ts-pinned",
        json!({"steps": [
            {"tool_calls": [call("e1", "mcp__everything__echo", json!({"message": "hi"}))]},
            {"tool_calls": [call("s1", "tool_search", json!({"query": "py: multiply"}))]},
            {"text": "done"}
        ]}),
    );
    let dir = deferring_project("ts-pinned", "pinned = [\"mcp__everything__echo\", \"py\"]");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go", "--json"]).finish(LIMIT);
    out.ok();
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    for r in &reqs {
        let tools = offered(r);
        assert!(tools.contains(&"tool_search".to_owned()), "{tools:?}");
        assert!(
            tools.contains(&"mcp__everything__echo".to_owned()),
            "{tools:?}"
        );
        assert!(tools.contains(&"mcp__py__multiply".to_owned()), "{tools:?}");
        assert!(
            !tools.contains(&"mcp__everything__get_sum".to_owned()),
            "{tools:?}"
        );
    }
    // A pinned server is not in the note, nor searchable: the search says which servers are.
    let sys = request_text(&reqs[0]);
    assert!(sys.contains("- everything (14 tools)"), "{sys}");
    assert!(!sys.contains("- py ("), "{sys}");
    let text = out.event("tool_result", "s1")["output"].clone();
    let text = text.as_str().unwrap_or_default();
    assert!(!text.contains("## mcp__py__"), "{text}");
    // Not an empty or failed search: it ran over the deferred tools and names the one server
    // they are of.
    assert!(
        text.contains("no deferred tool matches \"py: multiply\"")
            && text.contains("(servers: everything)"),
        "{text}"
    );
}

#[test]
fn under_the_share_every_tool_is_offered_and_never_is_never() {
    let model = Model::start("ts-under", json!({"steps": [{"text": "a"}, {"text": "b"}]}));
    // The default window (200,000 tokens): 10% is far above these two servers' tools.
    let dir = project(
        "ts-under",
        json!({"everything": stdio_json(everything("x")), "py": stdio_json(python("py"))}),
    );
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    let tools = offered(&model.requests()[0]);
    assert!(
        tools.contains(&"mcp__everything__get_sum".to_owned()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"tool_search".to_owned()), "{tools:?}");
    // A small window, but mode = "never".
    let dir = deferring_project("ts-never", "mode = \"never\"");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    out.ok();
    let tools = offered(&model.requests()[1]);
    assert!(
        tools.contains(&"mcp__everything__get_sum".to_owned()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"tool_search".to_owned()), "{tools:?}");
}

#[test]
fn a_bad_share_in_harness9_toml_is_a_clear_error() {
    let model = Model::start("ts-bad", json!({"steps": [{"text": "a"}]}));
    let dir = deferring_project("ts-bad", "share = 1.5");
    let out = Run::start(anthropic(&dir, &model), &["run", "-p", "go"]).finish(LIMIT);
    assert_ne!(out.code, Some(0), "{out}");
    assert!(
        out.stderr.contains("harness9.toml") && out.stderr.contains("share under [tool_search]"),
        "{out}"
    );
}

#[test]
fn a_tool_called_earlier_stays_offered_when_the_conversation_goes_on() {
    let mut steps = script()["steps"].as_array().cloned().unwrap_or_default();
    steps.push(json!({"text": "Again 13."}));
    let model = Model::start("ts-continue", json!({ "steps": steps }));
    let dir = deferring_project("ts-continue", "");
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "what is 6 + 7?", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    // `run --json` says what each request carried and deferred.
    let first = &out.all("model")[0];
    assert_eq!(first["tools_loaded"], 0, "{first}");
    assert!(
        first["tools_deferred"].as_u64().unwrap_or(0) >= 15,
        "{first}"
    );
    assert!(
        first["tools_deferred_bytes"].as_u64().unwrap_or(0) > 1000,
        "{first}"
    );
    let second = &out.all("model")[1];
    assert!(
        (1..=5).contains(&second["tools_loaded"].as_u64().unwrap_or(0)),
        "{second}"
    );
    // The next run of the same conversation: the tool it called is offered from the start;
    // what the search found but nobody called is deferred again.
    let out = Run::start(
        anthropic(&dir, &model),
        &["run", "-p", "and again?", "--continue", "--json"],
    )
    .finish(LIMIT);
    out.ok();
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4, "{reqs:?}");
    let tools = offered(&reqs[3]);
    let mcp: Vec<&String> = tools.iter().filter(|t| t.starts_with("mcp__")).collect();
    assert_eq!(mcp, ["mcp__everything__get_sum"], "{tools:?}");
    assert!(tools.contains(&"tool_search".to_owned()), "{tools:?}");
    assert_eq!(out.all("model")[0]["tools_loaded"], 1, "{out}");
}
