//! A server's questions (elicitation, sampling) answered headless, through the public CLI:
//! server-everything over stdio and Streamable HTTP (handshake-era requests) and the PyPI
//! `mcp` server in the stateless era (`input_required`), both through the same desk. The
//! conditional tools appear only for what we declare; sampling reaches the scripted model
//! (tests/python/scripted_model.py) only with `--sampling allow`. `mcp call` and `run -p`
//! (a question in the middle of a model turn, its answer in the next tool result) take the
//! same flags. URL mode is never declared or followed headless.

use std::path::Path;
use std::time::Duration;

use harness9_actors::messages::InputRequest;
use serde_json::{json, Value};

use super::common::*;
use super::engine::Model;
use super::http::{everything_http, free_port, python_http};

const LIMIT: Duration = Duration::from_secs(90);

/// `harness9 ARGS` in `dir` (no user settings; `model` answers as Anthropic when given).
fn cli(dir: &Path, model: Option<&Model>, args: &[&str]) -> (bool, Value, String) {
    let mut c = harness9_in(dir);
    without_user_env(&mut c)
        .env("HOME", dir.join("home"))
        .args(args);
    if let Some(m) = model {
        c.env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", &m.url);
    }
    let out = output_within(c, None, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), v, stderr)
}

/// The text of a call result's content parts, joined.
fn text(v: &Value) -> String {
    v["content"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default()
}

fn tool_names(get: &Value) -> Vec<String> {
    get.as_array()
        .unwrap_or_else(|| panic!("no tools in {get}"))
        .iter()
        .filter_map(|t| t["tool"].as_str().map(str::to_owned))
        .collect()
}

fn project(tag: &str, servers: Value) -> std::path::PathBuf {
    let dir = project_with(tag, servers);
    std::fs::create_dir_all(dir.join("home")).expect("home");
    dir
}

#[test]
fn everything_asks_are_answered_headless_over_stdio_and_http() {
    let port = free_port();
    let _http = everything_http(port);
    let dir = project(
        "asks-everything",
        json!({
            "everything": stdio_json(everything("everything")),
            "everything-http": {"url": format!("http://127.0.0.1:{port}/mcp")},
        }),
    );
    std::fs::write(dir.join("answers.json"), r#"{"name": "Ada Lovelace"}"#).expect("answers");
    let model = Model::start(
        "asks-everything",
        json!({"steps": [{"text": "sampled words one"}, {"text": "sampled words two"}]}),
    );
    for server in ["everything", "everything-http"] {
        // Form elicitation is declared headless; URL mode and sampling are not.
        let (ok, get, err) = cli(&dir, None, &["mcp", "get", server, "--json"]);
        assert!(ok, "{err}");
        let names = tool_names(&get);
        assert!(
            names.iter().any(|n| n == "trigger-elicitation-request"),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n == "trigger-url-elicitation"),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n == "trigger-sampling-request"),
            "{names:?}"
        );

        let call = [
            "mcp",
            "call",
            server,
            "trigger-elicitation-request",
            "--json",
        ];
        let (ok, v, err) = cli(&dir, None, &call);
        assert!(ok, "{err}");
        assert!(text(&v).contains("declined"), "{server}: {v}");
        assert!(
            err.contains(&format!(
                "[mcp] server \"{server}\" asked: \"Please provide inputs"
            )) && err.contains("-> declined (answer with --elicitation"),
            "{err}"
        );

        // Its required "name" has no default: accept-defaults declines the form and says why.
        let mut accept = vec!["--elicitation", "accept-defaults"];
        accept.extend(call);
        let (ok, v, err) = cli(&dir, None, &accept);
        assert!(ok, "{err}");
        assert!(text(&v).contains("declined"), "{server}: {v}");
        assert!(
            err.contains("-> declined (required field \"name\" has no default"),
            "{err}"
        );

        let mut answers = vec!["--elicitation-answers", "answers.json"];
        answers.extend(call);
        let (ok, v, err) = cli(&dir, None, &answers);
        assert!(ok, "{err}");
        let t = text(&v);
        assert!(
            t.contains("Name: Ada Lovelace") && t.contains("Favorite Integer: 42"),
            "{server}: {v}"
        );

        // With --sampling allow and a model, sampling is declared and reaches the model.
        let (ok, get, err) = cli(
            &dir,
            Some(&model),
            &["--sampling", "allow", "mcp", "get", server, "--json"],
        );
        assert!(ok, "{err}");
        assert!(tool_names(&get)
            .iter()
            .any(|n| n == "trigger-sampling-request"));
        let sample = [
            "--sampling",
            "allow",
            "mcp",
            "call",
            server,
            "trigger-sampling-request",
            "--args",
            r#"{"prompt": "say something", "maxTokens": 77}"#,
            "--json",
        ];
        let (ok, v, err) = cli(&dir, Some(&model), &sample);
        assert!(ok, "{err}");
        let t = text(&v);
        assert!(t.contains("sampled words"), "{server}: {v}");
        assert!(t.contains("claude"), "the model's name goes back: {v}");
    }
    // The model got the server's system prompt, its message and its token cap.
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    for r in &reqs {
        let body = &r["body"];
        assert_eq!(body["max_tokens"], 77, "{body}");
        assert!(
            body["system"]
                .to_string()
                .contains("You are a helpful test server."),
            "{body}"
        );
        assert!(
            body["messages"].to_string().contains("say something"),
            "{body}"
        );
        assert!(body.get("tools").is_none(), "no tools in sampling: {body}");
    }
}

#[test]
fn stateless_input_requests_go_through_the_same_desk() {
    let port = free_port();
    let _http = python_http(port);
    let dir = project(
        "asks-python",
        json!({
            "py-stdio": stdio_json(python("py-stdio")),
            "py-http": {"url": format!("http://127.0.0.1:{port}/mcp")},
        }),
    );
    std::fs::write(dir.join("answers.json"), r#"{"size": "large"}"#).expect("answers");
    // The `poem` tool's hint ("haiku") names a model the settings allow for sampling.
    std::fs::write(
        dir.join("harness9.toml"),
        "[anthropic]\nsampling_models = [\"claude-haiku-4-5\"]\n",
    )
    .expect("settings");
    let call = |city: &str| json!({"tool_calls": [{"id": "t1", "name": "lookup", "input": {"city": city}}]});
    let model = Model::start(
        "asks-python",
        // Per server: the poem, then the plan.
        json!({"steps": [{"text": "waves of tea"}, call("Oslo"), {"text": "waves of tea"}, call("Oslo")]}),
    );
    for server in ["py-stdio", "py-http"] {
        let order = [
            "mcp",
            "call",
            server,
            "order",
            "--args",
            r#"{"item":"tea"}"#,
            "--json",
        ];
        let mut answers = vec!["--elicitation-answers", "answers.json"];
        answers.extend(order);
        let (ok, v, err) = cli(&dir, None, &answers);
        assert!(ok, "{err}");
        assert_eq!(text(&v), "ordered a large tea", "{server}");

        let poem = [
            "mcp",
            "call",
            server,
            "poem",
            "--args",
            r#"{"topic":"tea"}"#,
            "--json",
        ];
        // Refused without the flag: sampling is not declared, so the server fails the call.
        let (ok, v, err) = cli(&dir, Some(&model), &poem);
        assert!(!ok, "{server}: {v} {err}");
        let mut allow = vec!["--sampling", "allow"];
        allow.extend(poem);
        let (ok, v, err) = cli(&dir, Some(&model), &allow);
        assert!(ok, "{err}");
        assert!(
            text(&v).starts_with("poem by claude-haiku-4-5"),
            "{server}: {v}"
        );
        assert!(text(&v).ends_with("waves of tea"), "{server}: {v}");

        // Sampling with tools (sampling.tools): the model's tool call goes back to the server.
        let plan = [
            "--sampling",
            "allow",
            "mcp",
            "call",
            server,
            "plan",
            "--args",
            r#"{"city":"Oslo"}"#,
            "--json",
        ];
        let (ok, v, err) = cli(&dir, Some(&model), &plan);
        assert!(ok, "{err}");
        assert_eq!(
            text(&v),
            r#"stop=toolUse; lookup({"city": "Oslo"})"#,
            "{server}"
        );
    }
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4, "{reqs:?}");
    assert!(reqs[0]["body"]["system"]
        .to_string()
        .contains("You are a poet."));
    assert_eq!(reqs[0]["body"]["max_tokens"], 64);
    assert_eq!(reqs[0]["body"]["model"], "claude-haiku-4-5");
    assert_eq!(
        reqs[1]["body"]["tools"][0]["name"], "lookup",
        "{}",
        reqs[1]["body"]
    );
}

/// Headless, URL-mode elicitation is not declared, so server-everything does not offer
/// `trigger-url-elicitation`; a server that asks anyway (the fixture: `elicitation/create` in
/// URL mode, and `-32042` naming a page) is declined under every policy, and no page is
/// opened (`$BROWSER` would leave a marker).
#[test]
fn headless_url_elicitation_is_declined_and_nothing_is_opened() {
    let dir = project(
        "asks-url",
        json!({
            "everything": stdio_json(everything("everything")),
            "fx": stdio_json(fixture("fx", &["--url-elicitation"])),
        }),
    );
    std::fs::write(dir.join("answers.json"), r#"{"name": "Ada"}"#).expect("answers");
    let opened = dir.join("opened");
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", opened.display()),
    )
    .expect("browser");
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    // The marker works: the script run by hand leaves it.
    let ran = std::process::Command::new(&browser)
        .arg("https://example.com/check")
        .status()
        .expect("browser.sh");
    assert!(ran.success() && opened.exists());
    std::fs::remove_file(&opened).expect("marker");
    let h9 = |args: &[&str]| {
        let mut c = harness9_in(&dir);
        without_user_env(&mut c)
            .env("HOME", dir.join("home"))
            .env("BROWSER", &browser)
            .args(args);
        let out = output_within(c, None, LIMIT);
        let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), v, stderr)
    };
    let url = r#"{"url": "https://example.com/login"}"#;
    let declined = "[mcp] server \"fx\" asked: \"Open this page to go on.\" -> declined (a page is never opened headless)";
    let policies: [&[&str]; 3] = [
        &[],
        &["--elicitation", "accept-defaults"],
        &["--elicitation-answers", "answers.json"],
    ];
    for policy in policies {
        let call = |server: &str, tool: &str| {
            let mut args = vec!["mcp", "call", server, tool, "--args", url, "--json"];
            args.extend(policy);
            h9(&args)
        };
        let (code, v, err) = call("everything", "trigger-url-elicitation");
        assert_eq!(code, Some(2), "{policy:?}: {v} {err}");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("has no tool \"trigger-url-elicitation\"")),
            "{policy:?}: {v}"
        );

        let (code, v, err) = call("fx", "ask_url");
        assert_eq!(code, Some(0), "{policy:?}: {v} {err}");
        assert_eq!(
            text(&v),
            r#"the client answered: {"action":"decline"}"#,
            "{policy:?}"
        );
        assert!(err.contains(declined), "{policy:?}: {err}");

        // The error path: the page is declined, so the server's error stands.
        let (code, v, err) = call("fx", "url_required");
        assert_eq!(code, Some(1), "{policy:?}: {v} {err}");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("open a page first")),
            "{policy:?}: {v}"
        );
        assert!(err.contains(declined), "{policy:?}: {err}");
    }
    assert!(!opened.exists(), "a page was opened headless");
}

/// `harness9 run -p go --json ARGS` in `dir` against `model`: success, the events, stderr.
fn run_p(dir: &Path, model: &Model, args: &[&str]) -> (bool, Vec<Value>, String) {
    let mut c = harness9_in(dir);
    without_user_env(&mut c)
        .env("HOME", dir.join("home"))
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &model.url)
        .args(["run", "-p", "go", "--json", "--allowed-tools", "mcp__*"])
        .args(args);
    let out = output_within(c, None, LIMIT);
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), events, stderr)
}

/// The text of the last tool result the model was sent in recorded request `r`.
fn last_tool_result(r: &Value) -> (String, bool) {
    let last = r["body"]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .unwrap_or_else(|| panic!("no messages in {r}"));
    let block = last["content"]
        .as_array()
        .and_then(|b| b.iter().rev().find(|b| b["type"] == "tool_result"))
        .unwrap_or_else(|| panic!("no tool_result in {last}"));
    let text = match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.to_string(),
    };
    (text, block["is_error"] == true)
}

fn tool_offered(events: &[Value], name: &str) -> bool {
    let start = events
        .iter()
        .find(|e| e["event"] == "start")
        .unwrap_or_else(|| panic!("no start event in {events:?}"));
    start["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|n| n == name))
}

/// `run -p`: the model calls server-everything's `trigger-elicitation-request`; the question
/// is declined by default and answered from `--elicitation-answers`, and the answer is in the
/// tool result the model gets next.
#[test]
fn run_p_answers_an_elicitation_in_a_model_turn_by_the_flags() {
    let dir = project(
        "asks-run-elicit",
        json!({"everything": stdio_json(everything("everything"))}),
    );
    std::fs::write(dir.join("answers.json"), r#"{"name": "Ada Lovelace"}"#).expect("answers");
    let call = json!({"tool_calls": [{"name": "mcp__everything__trigger_elicitation_request"}]});
    let model = Model::start(
        "asks-run-elicit",
        json!({"steps": [
            call,
            {"text": "fine", "expect": {"last_tool_result_contains": "declined"}},
            call,
            {"text": "hello Ada", "expect": {"last_tool_result_contains": "Name: Ada Lovelace"}},
        ]}),
    );
    let (ok, events, err) = run_p(&dir, &model, &[]);
    assert!(ok, "{events:?}\n{err}");
    assert!(
        err.contains("[mcp] server \"everything\" asked: \"Please provide inputs")
            && err.contains("-> declined (answer with --elicitation"),
        "{err}"
    );
    let (ok, events, err) = run_p(&dir, &model, &["--elicitation-answers", "answers.json"]);
    assert!(ok, "{events:?}\n{err}");
    assert!(err.contains("-> accepted"), "{err}");
    let done = events.iter().find(|e| e["event"] == "done").unwrap();
    assert_eq!(done["text"], "hello Ada", "{events:?}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4, "{reqs:?}");
    let (declined, _) = last_tool_result(&reqs[1]);
    assert!(declined.contains("declined"), "{declined}");
    let (answered, is_error) = last_tool_result(&reqs[3]);
    assert!(
        answered.contains("Name: Ada Lovelace") && answered.contains("Favorite Integer: 42"),
        "{answered}"
    );
    assert!(!is_error, "{answered}");
}

/// `run -p`: without `--sampling allow` sampling is not declared, so server-everything does
/// not offer `trigger-sampling-request` and the model's call of it fails without reaching the
/// model; with the flag the server's request goes to the model and its answer comes back in
/// the tool result.
#[test]
fn run_p_sampling_is_refused_without_the_flag_and_answered_with_it() {
    let dir = project(
        "asks-run-sample",
        json!({"everything": stdio_json(everything("everything"))}),
    );
    let tool = "mcp__everything__trigger_sampling_request";
    let call = json!({"tool_calls": [{"name": tool,
        "input": {"prompt": "say something", "maxTokens": 33}}]});
    let refused = Model::start(
        "asks-run-sample-refused",
        json!({"steps": [call, {"text": "no luck"}]}),
    );
    let (ok, events, err) = run_p(&dir, &refused, &[]);
    assert!(ok, "{events:?}\n{err}");
    assert!(!tool_offered(&events, tool), "{events:?}");
    let reqs = refused.requests();
    assert_eq!(
        reqs.len(),
        2,
        "no sampling request reached the model: {reqs:?}"
    );
    let (text, is_error) = last_tool_result(&reqs[1]);
    assert!(is_error && text.contains("there is no tool"), "{text}");

    let allowed = Model::start(
        "asks-run-sample-allowed",
        json!({"steps": [
            call,
            {"text": "sampled words"},
            {"text": "done", "expect": {"last_tool_result_contains": "sampled words"}},
        ]}),
    );
    let (ok, events, err) = run_p(&dir, &allowed, &["--sampling", "allow"]);
    assert!(ok, "{events:?}\n{err}");
    assert!(tool_offered(&events, tool), "{events:?}");
    let reqs = allowed.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    // The second request is the server's: its message and token cap, no tools.
    let sampling = &reqs[1]["body"];
    assert_eq!(sampling["max_tokens"], 33, "{sampling}");
    assert!(
        sampling["messages"].to_string().contains("say something"),
        "{sampling}"
    );
    assert!(sampling.get("tools").is_none(), "{sampling}");
    let (text, is_error) = last_tool_result(&reqs[2]);
    assert!(!is_error && text.contains("sampled words"), "{text}");
}

/// A user who takes `delay` over every question and then answers with a name.
struct SlowUser {
    delay: Duration,
}

impl actix::Actor for SlowUser {
    type Context = actix::Context<Self>;
}

impl actix::Handler<InputRequest> for SlowUser {
    type Result = ();

    fn handle(&mut self, msg: InputRequest, _ctx: &mut actix::Context<Self>) {
        let delay = self.delay;
        actix_rt::spawn(async move {
            // The user thinks it over (test input, not synchronisation).
            tokio::time::sleep(delay).await;
            let _ = msg.reply.send(Ok(
                json!({"action": "accept", "content": {"name": "Slow Poke"}}),
            ));
        });
    }
}

#[test]
fn the_time_a_question_waits_does_not_count_toward_the_call_timeout() {
    use actix::Actor as _;
    run(LIMIT, || async {
        let port = free_port();
        let _http = python_http(port);
        let mut stdio = everything("e");
        stdio.tool_timeout = Duration::from_secs(1);
        let mut py = super::http::http_spec("py", format!("http://127.0.0.1:{port}/mcp"), false);
        py.tool_timeout = Duration::from_secs(1);
        let user = SlowUser {
            delay: Duration::from_millis(1500),
        }
        .start();
        let rt = harness9::app::Runtime::start_with_input(
            vec![stdio, py],
            None,
            fast_policy(),
            Some(user.recipient()),
        );
        connected(&rt, "e", Duration::from_secs(30)).await;
        connected(&rt, "py", Duration::from_secs(30)).await;
        // The handshake era: the server's own request while our call waits.
        let t = call_text(&rt, "mcp__e__trigger_elicitation_request", json!({})).await;
        assert!(t.contains("Name: Slow Poke"), "{t}");
        // The stateless era: an `input_required` round.
        let t = call_text(&rt, "mcp__py__order", json!({"item": "tea"})).await;
        assert_eq!(t, "ordered a medium tea", "the size keeps its default");
        shutdown(rt, &[]).await;
    });
}
