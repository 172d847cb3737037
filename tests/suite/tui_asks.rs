//! A server's questions in the real TUI (tmux): during a model turn, server-everything's form
//! elicitation is filled in and sent, then its sampling request is approved and goes to the
//! scripted model, whose answer returns to the server and on to the turn.

use serde_json::json;

use super::common::{everything, stdio_json};
use super::tui::{bar, project, settled, tmux_required, Tmux, BOUND};

#[test]
fn a_form_elicitation_and_a_sampling_approval_during_a_turn() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-asks",
        json!({"steps": [
            {"text": "Asking for your details.", "tool_calls": [
                {"id": "e1", "name": "mcp__everything__trigger_elicitation_request", "input": {}}]},
            {"text": "Now a sample.", "expect": {"last_tool_result_contains": "Name: Ada"},
             "tool_calls": [{"id": "s1", "name": "mcp__everything__trigger_sampling_request",
                             "input": {"prompt": "a haiku", "maxTokens": 50}}]},
            // The server's sampling request itself.
            {"text": "a quiet pond"},
            {"text": "All done.", "expect": {"last_tool_result_contains": "a quiet pond"}}
        ]}),
    );
    let dir = project(
        "tui-asks",
        |_| json!({"everything": stdio_json(everything("x"))}),
    );
    // The user allows the server's tools for this session (they would ask first).
    let t = Tmux::start_with(
        &dir,
        &["--allowed-tools", "mcp__everything__*"],
        None,
        &model.env(),
    );
    t.wait_for("the model named and everything connected", BOUND, |s| {
        s.contains("model anthropic") && bar(s).contains("everything ●")
    });
    t.send_keys(&["go", "Enter"]);
    t.wait_for("the elicitation form", BOUND, |s| {
        s.contains("everything asks") && s.contains("String*:") && settled(s)
    });
    // Enter with the required name empty says so; nothing is sent.
    t.send_keys(&["Enter"]);
    t.wait_for("the form's error", BOUND, |s| {
        s.contains("String is required")
    });
    t.send_keys(&["Ada", "Enter"]);
    let s = t.wait_for("the sampling approval", BOUND, |s| {
        s.contains("everything asks to use the model") && s.contains("a haiku") && settled(s)
    });
    assert!(s.contains("max tokens: 50"), "{s}");
    assert!(s.contains("You are a helpful test server."), "{s}");
    t.send_keys(&["y"]);
    t.wait_for("the turn's end", BOUND, |s| {
        s.contains("All done.") && s.contains("model calls")
    });
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4, "{reqs:?}");
    assert_eq!(reqs[2]["body"]["max_tokens"], 50);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn stateless_input_requests_reach_the_same_tui_questions() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-asks-py",
        json!({"steps": [{"text": "steam over the cup"}]}),
    );
    let dir = project(
        "tui-asks-py",
        |_| json!({"py": stdio_json(super::common::python("py"))}),
    );
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("py connected", BOUND, |s| bar(s).contains("py ●"));
    // `order` asks through `input_required`: the same form, its default filled in.
    t.send_keys(&[r#"/call mcp__py__order {"item":"tea"}"#, "Enter"]);
    t.wait_for("the form of the input request", BOUND, |s| {
        s.contains("py asks") && s.contains("Which size?") && s.contains("medium") && settled(s)
    });
    t.send_keys(&["Enter"]);
    t.wait_for("the order", BOUND, |s| s.contains("ordered a medium tea"));
    // `poem` asks for sampling the same way: approved, it reaches the model.
    t.send_keys(&[r#"/call mcp__py__poem {"topic":"tea"}"#, "Enter"]);
    let s = t.wait_for("the sampling approval", BOUND, |s| {
        s.contains("py asks to use the model") && s.contains("Write a line about tea") && settled(s)
    });
    assert!(s.contains("You are a poet."), "{s}");
    t.send_keys(&["y"]);
    t.wait_for("the poem", BOUND, |s| s.contains("steam over the cup"));
    assert_eq!(model.requests().len(), 1);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// server-everything's URL elicitation (offered only to a client that declares URL mode, as
/// the TUI does): the question shows the host and the full URL; nothing is opened until the
/// user's `y`, which hands the URL to `$BROWSER` and accepts.
#[test]
fn a_url_elicitation_opens_the_page_only_after_yes() {
    tmux_required();
    let dir = project(
        "tui-url",
        |_| json!({"everything": stdio_json(everything("x"))}),
    );
    let opened = dir.join("opened.txt");
    let browser = dir.join("browser.sh");
    std::fs::write(
        &browser,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display()),
    )
    .unwrap();
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&browser, exec).unwrap();
    let browser_s = browser.display().to_string();
    let t = Tmux::start_with(&dir, &[], None, &[("BROWSER", browser_s.as_str())]);
    t.wait_for("everything connected", BOUND, |s| {
        bar(s).contains("everything ●")
    });
    t.send_keys(&[
        r#"/call mcp__everything__trigger_url_elicitation {"url":"https://verify.example.com/device?code=42","message":"Verify this device"}"#,
        "Enter",
    ]);
    let s = t.wait_for("the URL question", BOUND, |s| {
        s.contains("everything asks you to open a page")
            && s.contains("verify.example.com")
            && settled(s)
    });
    assert!(
        s.contains("https://verify.example.com/device?code=42"),
        "{s}"
    );
    assert!(s.contains("Verify this device"), "{s}");
    assert!(!opened.exists(), "opened before the user's yes");
    t.send_keys(&["y"]);
    t.wait_for("the call's result", BOUND, |s| {
        s.contains("✓ mcp__everything__trigger_url_elicitation")
    });
    let got = || std::fs::read_to_string(&opened).unwrap_or_default();
    assert!(
        super::common::poll_until(BOUND, std::time::Duration::from_millis(20), || got()
            == "https://verify.example.com/device?code=42"),
        "the page was opened: {:?}",
        got()
    );
    std::fs::remove_file(&opened).unwrap();

    // The error path: the call fails with -32042 carrying the page; the same question is
    // asked, and after the user's yes the call goes again (server-everything's retry then
    // asks on the request path, answered the same way) and succeeds.
    t.send_keys(&[
        r#"/call mcp__everything__trigger_url_elicitation {"url":"https://pay.example.org/confirm","message":"Confirm the payment","errorPath":true}"#,
        "Enter",
    ]);
    // (server-everything's prerequisite page is its own: modelcontextprotocol.io.)
    t.wait_for("the error path's question", BOUND, |s| {
        s.contains("everything asks you to open a page")
            && s.contains("satisfy the prerequisite")
            && s.contains("opens a page on modelcontextprotocol.io")
            && settled(s)
    });
    assert!(!opened.exists(), "opened before the user's yes");
    t.send_keys(&["y"]);
    t.wait_for("the retry's question", BOUND, |s| {
        s.contains("everything asks you to open a page")
            && s.contains("opens a page on pay.example.org")
            && settled(s)
    });
    // The browser runs on its own: wait for what it wrote.
    let read = || std::fs::read_to_string(&opened).unwrap_or_default();
    assert!(
        super::common::poll_until(BOUND, std::time::Duration::from_millis(20), || read()
            == "https://modelcontextprotocol.io/"),
        "the prerequisite page was opened: {:?}",
        read()
    );
    t.send_keys(&["y"]);
    t.wait_for("the retried call's result", BOUND, |s| {
        s.matches("✓ mcp__everything__trigger_url_elicitation")
            .count()
            == 2
    });
    assert!(
        super::common::poll_until(BOUND, std::time::Duration::from_millis(20), || read()
            == "https://pay.example.org/confirm"),
        "the page was opened: {:?}",
        read()
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// An MCP prompt with an image (`look` of the PyPI server): run as a slash command, its text
/// and its image reach the model in one user message, the image as an image block.
#[test]
fn a_prompts_image_reaches_the_model_as_an_image() {
    tmux_required();
    let model = super::engine::Model::start(
        "tui-prompt-image",
        json!({"steps": [{"text": "A single pixel."}]}),
    );
    let dir = project(
        "tui-prompt-image",
        |_| json!({"py": stdio_json(super::common::python("py"))}),
    );
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("py connected", BOUND, |s| bar(s).contains("py ●"));
    t.send_keys(&["/mcp__py__look", "Enter"]);
    t.wait_for("the model's answer", BOUND, |s| {
        s.contains("A single pixel.")
    });
    let reqs = model.requests();
    let last = reqs[0]["body"]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let content = last["content"].as_array().cloned().unwrap_or_default();
    assert!(
        content.iter().any(|b| b["type"] == "text"
            && b["text"]
                .as_str()
                .unwrap_or("")
                .contains("What does this picture show?")),
        "{last}"
    );
    assert!(
        content.iter().any(|b| b["type"] == "image"
            && b["source"]["media_type"] == "image/png"
            && b["source"]["data"]
                .as_str()
                .unwrap_or("")
                .starts_with("iVBORw0KGgo")),
        "{last}"
    );
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// Type-ahead: the model asks to run `bash` while the user is still typing "any news?". Keys
/// that arrive as the question opens answer nothing (the `a` would have meant "always run
/// bash"); the question shows it is new until the user pauses, then Enter picks the
/// highlight, which starts on decline. bash never runs.
#[test]
fn keys_typed_as_a_tool_question_opens_do_not_answer_it() {
    tmux_required();
    let bash = json!({"id": "b1", "name": "bash",
                      "input": {"command": "echo typed-ahead > proof.txt"}});
    let model = super::engine::Model::start(
        "tui-typeahead",
        json!({"steps": [
            // A moment's thinking, so the question opens while the user types.
            {"text": "Checking.", "delay_ms": 300, "tool_calls": [bash]},
            {"text": "Not run.", "expect": {"last_tool_result_contains": "the user declined"}}
        ]}),
    );
    let dir = project("tui-typeahead", |_| json!({}));
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("the model named", BOUND, |s| s.contains("model anthropic"));
    t.send_keys(&["hello", "Enter"]);
    // The user goes on typing, a key every 40 ms, through the question's opening (test
    // input, not synchronisation): "any news?" and Enter, twice over.
    // Typing goes on until the question has shown, then for one more round (bounded).
    let mut opened_while_typing = false;
    let mut rounds_after = 0;
    for _ in 0..40 {
        for k in ["a", "n", "y", " ", "n", "e", "w", "s", "?", "Enter"] {
            t.send_keys(&[k]);
            std::thread::sleep(std::time::Duration::from_millis(40));
        }
        opened_while_typing |= t.screen().contains("run this tool?");
        if opened_while_typing {
            rounds_after += 1;
            if rounds_after == 2 {
                break;
            }
        }
    }
    // The question settles only after a pause with nothing typed: a key taken as an answer
    // would have closed it (and run bash) by then.
    let s = t.wait_for("the question, settled after the typing", BOUND, |s| {
        s.contains("run this tool?") && settled(s)
    });
    assert!(
        !dir.join("proof.txt").exists(),
        "bash ran on typed-ahead keys:\n{s}"
    );
    assert!(!s.contains("runs without asking"), "{s}");
    assert!(
        opened_while_typing,
        "the question did not open during the typing"
    );
    let s = t.wait_for("the question, still waiting and settled", BOUND, |s| {
        s.contains("run this tool?") && s.contains("echo typed-ahead") && settled(s)
    });
    assert!(s.contains("[n no]"), "{s}");
    assert!(!s.contains("runs without asking"), "{s}");
    assert!(
        !dir.join("proof.txt").exists(),
        "bash ran on typed-ahead keys"
    );
    t.send_keys(&["Enter"]);
    t.wait_for("the turn's end", BOUND, |s| s.contains("Not run."));
    assert!(!dir.join("proof.txt").exists(), "bash ran");
    t.send_keys(&["C-c"]);
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}

/// A task (`io.modelcontextprotocol/tasks`) that turns `input_required` mid-flight: its input
/// request is the same TUI question, and the answer goes back with `tasks/update`.
#[test]
fn a_tasks_input_request_is_asked_in_the_tui() {
    tmux_required();
    let model = super::engine::Model::start("tui-task-ask", json!({"steps": [{"text": "unused"}]}));
    let py = super::common::repo().join(".deps/venv/bin/python");
    let script = super::common::repo().join("tests/python/task_server.py");
    let dir = project(
        "tui-task-ask",
        |_| json!({"asker": {"command": py, "args": [script, "--mode", "input"]}}),
    );
    let t = Tmux::with_model(&dir, &model);
    t.wait_for("asker connected", BOUND, |s| bar(s).contains("asker ●"));
    t.send_keys(&["/call mcp__asker__ask {}", "Enter"]);
    t.wait_for("the task's question", BOUND, |s| {
        s.contains("asker asks") && s.contains("Your name?") && settled(s)
    });
    t.send_keys(&["Ada", "Enter"]);
    t.wait_for("the task's result", BOUND, |s| s.contains("hello Ada"));
    t.send_keys(&["C-c"]);
    assert_eq!(t.exit_code(), 0);
}
