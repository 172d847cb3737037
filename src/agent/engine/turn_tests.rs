//! The turn loop in-process: a scripted [`Model`] behind the engine and a small tool executor
//! behind the real `ToolRegistry` (`SetBuiltins`), one branch of `turn.rs`/`calls.rs` a test:
//! cancel mid-step, parallel calls, compaction, refusals. Every wait is bounded.

use std::collections::VecDeque;
use std::sync::Mutex;

use harness9_actors::messages::{CallBuiltin, SetBuiltins};
use harness9_actors::protocol::types::{CallToolResult, Tool};
use harness9_actors::CallError;
use tokio::sync::mpsc::UnboundedSender;

use super::calls::bad_arguments;
use super::*;
use crate::model::{ModelReply, ProviderConfig, ProviderKind};
use crate::model::{ModelRequest, ResultPart, StopReason, StreamEvent};

/// The bound of every wait in these tests.
const LIMIT: Duration = Duration::from_secs(10);

/// What the scripted model does at one call.
enum Step {
    /// Answers this.
    Reply(ModelReply),
    /// Fails with this.
    Fail(ModelError),
    /// Waits for the turn's cancellation (and says it started on `started`).
    Hang,
}

#[derive(Default)]
struct Script {
    steps: Mutex<VecDeque<Step>>,
    /// Every request the engine made, in order.
    requests: Mutex<Vec<ModelRequest>>,
    started: Mutex<Option<UnboundedSender<()>>>,
}

/// A model that plays a script; shared so the test reads what the engine asked.
#[derive(Clone)]
struct Scripted {
    cfg: ProviderConfig,
    script: Arc<Script>,
}

impl std::fmt::Debug for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scripted")
    }
}

impl Scripted {
    fn new(steps: Vec<Step>) -> Self {
        let script = Script::default();
        *script.steps.lock().unwrap() = steps.into();
        Self {
            cfg: ProviderConfig::new(ProviderKind::Anthropic, "scripted"),
            script: Arc::new(script),
        }
    }

    fn push(&self, steps: Vec<Step>) {
        self.script.steps.lock().unwrap().extend(steps);
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.script.requests.lock().unwrap().clone()
    }

    /// Signals on the receiver each time a `Hang` step starts.
    fn on_hang(&self) -> mpsc::UnboundedReceiver<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.script.started.lock().unwrap() = Some(tx);
        rx
    }
}

impl Model for Scripted {
    fn config(&self) -> &ProviderConfig {
        &self.cfg
    }

    fn complete<'a>(
        &'a self,
        req: &'a ModelRequest,
        events: &'a UnboundedSender<StreamEvent>,
        cancel: &'a CancellationToken,
    ) -> futures_util::future::LocalBoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            if cancel.is_cancelled() {
                return Err(ModelError::Cancelled);
            }
            self.script.requests.lock().unwrap().push(req.clone());
            let step = self.script.steps.lock().unwrap().pop_front();
            match step {
                Some(Step::Reply(r)) => {
                    let text = r.text();
                    if !text.is_empty() {
                        let _ = events.send(StreamEvent::TextDelta(text));
                    }
                    Ok(r)
                }
                Some(Step::Fail(e)) => Err(e),
                Some(Step::Hang) => {
                    if let Some(tx) = &*self.script.started.lock().unwrap() {
                        let _ = tx.send(());
                    }
                    cancel.cancelled().await;
                    Err(ModelError::Cancelled)
                }
                None => Err(ModelError::Protocol("the script has ended".to_owned())),
            }
        })
    }
}

fn text(t: &str, input_tokens: u64) -> Step {
    Step::Reply(ModelReply {
        content: vec![Block::Text(t.to_owned())],
        stop_reason: StopReason::EndTurn,
        usage: Usage {
            input_tokens,
            ..Usage::default()
        },
    })
}

fn calls(list: &[(&str, &str, Value)], stop: StopReason) -> Step {
    Step::Reply(ModelReply {
        content: list
            .iter()
            .map(|(id, name, input)| Block::ToolUse {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                input: input.clone(),
            })
            .collect(),
        stop_reason: stop,
        usage: Usage {
            input_tokens: 10,
            ..Usage::default()
        },
    })
}

/// The test's tools: `echo` (read-only), `meet` (read-only; returns once two calls of it are
/// in flight at the same time), `wait` (read-only; until cancelled) and `write` (not
/// read-only: the permissions ask about it). Every call is counted by name.
struct Tools {
    calls: Arc<Mutex<Vec<String>>>,
    meet: Arc<tokio::sync::Barrier>,
    /// Hears `wait` start and see its cancellation.
    waits: UnboundedSender<&'static str>,
}

impl Actor for Tools {
    type Context = Context<Self>;
}

fn result(text: &str, is_error: bool) -> CallToolResult {
    serde_json::from_value(serde_json::json!({
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    }))
    .expect("a result")
}

impl Handler<CallBuiltin> for Tools {
    type Result = ResponseFuture<Result<CallToolResult, CallError>>;

    fn handle(&mut self, msg: CallBuiltin, _ctx: &mut Context<Self>) -> Self::Result {
        self.calls.lock().unwrap().push(msg.name.clone());
        let (meet, waits) = (self.meet.clone(), self.waits.clone());
        Box::pin(async move {
            let args = msg.arguments.unwrap_or_default();
            Ok(match msg.name.as_str() {
                "meet" => match tokio::time::timeout(LIMIT / 2, meet.wait()).await {
                    Ok(_) => result("met", false),
                    Err(_) => result("alone: the calls did not run at once", true),
                },
                "wait" => {
                    let _ = waits.send("started");
                    msg.cancel.cancelled().await;
                    let _ = waits.send("cancelled");
                    result("cancelled", true)
                }
                _ => result(&format!("{} {args}", msg.name), false),
            })
        })
    }
}

fn tool(name: &str, read_only: bool) -> Tool {
    let text = format!(
        r#"{{"name": "{name}", "description": "a test tool", "inputSchema": {{"type": "object"}}, "annotations": {{"readOnlyHint": {read_only}}}}}"#
    );
    serde_json::from_str(&text).expect("a tool")
}

struct Rig {
    engine: Addr<Engine>,
    model: Scripted,
    calls: Arc<Mutex<Vec<String>>>,
    waits: mpsc::UnboundedReceiver<&'static str>,
}

fn rig(steps: Vec<Step>, config: EngineConfig) -> Rig {
    let (waits_tx, waits) = mpsc::unbounded_channel();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let tools = Tools {
        calls: calls.clone(),
        meet: Arc::new(tokio::sync::Barrier::new(2)),
        waits: waits_tx,
    }
    .start();
    let registry = ToolRegistry::new().start();
    registry.do_send(SetBuiltins {
        tools: vec![
            tool("echo", true),
            tool("meet", true),
            tool("wait", true),
            tool("write", false),
        ],
        executor: tools.recipient(),
    });
    let model = Scripted::new(steps);
    let engine = Engine::new(model.clone(), registry, config).start();
    Rig {
        engine,
        model,
        calls,
        waits,
    }
}

fn config() -> EngineConfig {
    EngineConfig {
        system: Some("sys".to_owned()),
        ..EngineConfig::new(8, 10_000)
    }
}

/// A turn's events (questions answered by `answer`) and its outcome.
async fn run(
    rig: &Rig,
    prompt: &str,
    can_ask: bool,
    mut answer: impl FnMut(&PermissionQuestion) -> Answer,
) -> (Vec<EngineEvent>, Result<TurnOutcome, EngineError>) {
    let (tx, mut rx) = turn_stream();
    rig.engine.do_send(RunTurn {
        prompt: prompt.to_owned(),
        attachments: Vec::new(),
        events: tx,
        can_ask,
    });
    let mut seen = Vec::new();
    loop {
        let item = tokio::time::timeout(LIMIT, rx.recv())
            .await
            .expect("the turn ends in time")
            .expect("the stream ends with Done");
        match item {
            TurnEvent::Update(e) => seen.push(e),
            TurnEvent::Ask(q) => {
                let a = answer(&q);
                let _ = q.answer.send(a);
            }
            TurnEvent::Done(result) => return (seen, result),
        }
    }
}

fn never(q: &PermissionQuestion) -> Answer {
    panic!("unexpected question about {}", q.name)
}

/// The tool results the engine sent back in `req` (its last message), by call id.
fn results(req: &ModelRequest) -> Vec<(String, String, bool)> {
    let last = req.messages.last().expect("a message");
    last.content
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult {
                id,
                content,
                is_error,
            } => Some((
                id.clone(),
                content
                    .iter()
                    .map(|p| match p {
                        ResultPart::Text(t) => t.clone(),
                        _ => String::new(),
                    })
                    .collect(),
                *is_error,
            )),
            _ => None,
        })
        .collect()
}

fn first_text(m: &Message) -> &str {
    match m.content.first() {
        Some(Block::Text(t)) => t,
        _ => "",
    }
}

#[actix_rt::test]
async fn a_cancel_during_the_model_call_ends_the_turn_and_keeps_the_conversation() {
    let mut r = rig(vec![text("first", 5), Step::Hang], config());
    let mut hung = r.model.on_hang();
    let (_, done) = run(&r, "one", false, never).await;
    assert_eq!(done.expect("answered").text, "first");
    let (tx, mut rx) = turn_stream();
    r.engine.do_send(RunTurn {
        prompt: "two".to_owned(),
        attachments: Vec::new(),
        events: tx,
        can_ask: false,
    });
    tokio::time::timeout(LIMIT, hung.recv())
        .await
        .expect("the model call starts");
    r.engine.do_send(CancelTurn);
    let done = loop {
        match tokio::time::timeout(LIMIT, rx.recv())
            .await
            .expect("in time")
        {
            Some(TurnEvent::Done(d)) => break d,
            Some(_) => {}
            None => panic!("the stream ended without Done"),
        }
    };
    assert_eq!(done, Err(EngineError::Cancelled));
    // The next turn follows the first one: the cancelled turn left nothing behind.
    r.model.push(vec![text("third", 5)]);
    let (_, done) = run(&r, "three", false, never).await;
    assert_eq!(done.expect("answered").text, "third");
    let last = r.model.requests().pop().expect("a request");
    let said: Vec<&str> = last.messages.iter().map(first_text).collect();
    assert_eq!(said, ["one", "first", "three"]);
    assert!(r.waits.try_recv().is_err(), "no tool ran");
}

#[actix_rt::test]
async fn a_cancel_during_a_tool_call_cancels_the_call_and_the_turn() {
    let mut r = rig(
        vec![calls(
            &[("w1", "wait", serde_json::json!({}))],
            StopReason::ToolUse,
        )],
        config(),
    );
    let (tx, mut rx) = turn_stream();
    r.engine.do_send(RunTurn {
        prompt: "go".to_owned(),
        attachments: Vec::new(),
        events: tx,
        can_ask: false,
    });
    let started = tokio::time::timeout(LIMIT, r.waits.recv()).await;
    assert_eq!(started.expect("in time"), Some("started"));
    r.engine.do_send(CancelTurn);
    let gone = tokio::time::timeout(LIMIT, r.waits.recv()).await;
    assert_eq!(gone.expect("in time"), Some("cancelled"), "the tool saw it");
    let done = loop {
        match tokio::time::timeout(LIMIT, rx.recv())
            .await
            .expect("in time")
        {
            Some(TurnEvent::Done(d)) => break d,
            Some(_) => {}
            None => panic!("the stream ended without Done"),
        }
    };
    assert_eq!(done, Err(EngineError::Cancelled));
    // Nothing of the cancelled turn stays: the next request holds only the new prompt.
    r.model.push(vec![text("ok", 5)]);
    let (_, done) = run(&r, "again", false, never).await;
    assert_eq!(done.expect("answered").steps, 1);
    let last = r.model.requests().pop().expect("a request");
    assert_eq!(last.messages.len(), 1);
    assert_eq!(first_text(&last.messages[0]), "again");
}

#[actix_rt::test]
async fn the_calls_of_one_reply_run_at_once_and_come_back_in_order() {
    let r = rig(
        vec![
            calls(
                &[
                    ("a", "meet", serde_json::json!({})),
                    ("b", "meet", serde_json::json!({})),
                ],
                StopReason::ToolUse,
            ),
            text("both met", 20),
        ],
        config(),
    );
    let (events, done) = run(&r, "meet twice", false, never).await;
    let done = done.expect("answered");
    assert_eq!((done.text.as_str(), done.steps), ("both met", 2));
    assert_eq!(done.usage.input_tokens, 30);
    let second = &r.model.requests()[1];
    assert_eq!(
        results(second),
        [
            ("a".to_owned(), "met".to_owned(), false),
            ("b".to_owned(), "met".to_owned(), false)
        ]
    );
    // Both started before either finished.
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ToolStarted { .. } => Some("started"),
            EngineEvent::ToolFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["started", "started", "finished", "finished"]);
}

#[actix_rt::test]
async fn a_turn_near_the_end_of_the_window_compacts_the_earlier_turns_first() {
    let cfg = EngineConfig {
        context_window: Some(1000),
        compact_at: 0.8,
        ..config()
    };
    let r = rig(vec![text("first answer", 900)], cfg);
    let (events, done) = run(&r, "one", false, never).await;
    done.expect("answered");
    assert!(!events
        .iter()
        .any(|e| matches!(e, EngineEvent::Compacted { .. })));
    r.model
        .push(vec![text("what happened", 50), text("second answer", 100)]);
    let (events, done) = run(&r, "two", false, never).await;
    let done = done.expect("answered");
    assert_eq!(done.text, "second answer");
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Compacted { reason, compacted } => {
                assert_eq!(compacted.replaced, 2);
                Some(reason.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(reasons, ["the last request used 900 of 1000 tokens"]);
    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 3);
    // The summary request carries the conversation and no tools.
    assert!(first_text(&reqs[1].messages[0]).starts_with("<conversation>"));
    assert!(reqs[1].tools.is_empty());
    // The turn's request follows the summary.
    let m = &reqs[2].messages;
    assert_eq!(m.len(), 3);
    assert!(first_text(&m[0]).starts_with(compact::SUMMARY_HEAD));
    assert!(first_text(&m[0]).ends_with("what happened"));
    assert_eq!(first_text(&m[2]), "two");
    // The summary request counts in the turn's tokens.
    assert_eq!(done.usage.input_tokens, 150);
}

#[actix_rt::test]
async fn a_context_length_refusal_compacts_and_runs_the_step_again_once() {
    let r = rig(vec![text("first answer", 10)], config());
    run(&r, "one", false, never).await.1.expect("answered");
    let too_long = || {
        Step::Fail(ModelError::BadRequest {
            status: 400,
            message: "prompt is too long: 300000 tokens > 200000 maximum".to_owned(),
        })
    };
    r.model.push(vec![
        too_long(),
        text("the summary", 5),
        text("second answer", 10),
    ]);
    let (events, done) = run(&r, "two", false, never).await;
    let done = done.expect("answered after the compaction");
    assert_eq!((done.text.as_str(), done.steps), ("second answer", 1));
    let reasons: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Compacted { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].starts_with("the model refused the request: prompt is too long"),
        "{}",
        reasons[0]
    );
    let last = r.model.requests().pop().expect("a request");
    assert!(first_text(&last.messages[0]).starts_with(compact::SUMMARY_HEAD));
    assert_eq!(first_text(last.messages.last().expect("one")), "two");
    // A second refusal in the same step is not compacted again: the turn fails with it, and
    // the conversation stays the compacted one.
    r.model
        .push(vec![too_long(), text("another summary", 5), too_long()]);
    let (events, done) = run(&r, "three", false, never).await;
    assert!(matches!(
        done,
        Err(EngineError::Model(ModelError::BadRequest { .. }))
    ));
    let compactions = events
        .iter()
        .filter(|e| matches!(e, EngineEvent::Compacted { .. }))
        .count();
    assert_eq!(compactions, 1);
}

/// Runs one call of `name` with `input` (stopped for `stop`), then a text answer; returns the
/// events, the result the model got, and the calls the executor saw.
async fn one_call(
    name: &str,
    input: Value,
    stop: StopReason,
    can_ask: bool,
    answer: impl FnMut(&PermissionQuestion) -> Answer,
) -> (Vec<EngineEvent>, (String, String, bool), Vec<String>) {
    let r = rig(
        vec![calls(&[("c1", name, input)], stop), text("done", 5)],
        config(),
    );
    let (events, done) = run(&r, "do it", can_ask, answer).await;
    assert_eq!(done.expect("answered").text, "done");
    let mut got = results(&r.model.requests()[1]);
    assert_eq!(got.len(), 1);
    let calls = r.calls.lock().unwrap().clone();
    (events, got.remove(0), calls)
}

#[actix_rt::test]
async fn arguments_that_are_not_an_object_are_not_run() {
    let raw = Value::String("{\"text\": tru".to_owned());
    let (events, (_, text, is_error), calls) =
        one_call("echo", raw, StopReason::ToolUse, false, never).await;
    assert!(is_error);
    assert_eq!(text, bad_arguments("echo", "{\"text\": tru", false));
    assert!(calls.is_empty(), "{calls:?}");
    assert!(events
        .iter()
        .any(|e| matches!(e, EngineEvent::ToolFinished { is_error: true, .. })));
}

#[actix_rt::test]
async fn a_call_cut_at_max_tokens_is_not_run() {
    let (_, (_, text, is_error), calls) = one_call(
        "echo",
        serde_json::json!({}),
        StopReason::MaxTokens,
        false,
        never,
    )
    .await;
    assert!(is_error);
    assert!(
        text.starts_with("the call of tool \"echo\" was cut off at max_tokens"),
        "{text}"
    );
    assert!(calls.is_empty(), "{calls:?}");
    // Broken arguments in the cut call say both.
    let raw = Value::String("{\"text\": \"abc".to_owned());
    let (_, (_, text, _), calls) = one_call("echo", raw, StopReason::MaxTokens, false, never).await;
    assert_eq!(text, bad_arguments("echo", "{\"text\": \"abc", true));
    assert!(calls.is_empty());
}

#[actix_rt::test]
async fn a_call_that_would_ask_is_refused_headless() {
    let (events, (_, text, is_error), calls) = one_call(
        "write",
        serde_json::json!({"path": "x"}),
        StopReason::ToolUse,
        false,
        never,
    )
    .await;
    assert!(is_error);
    assert!(calls.is_empty(), "{calls:?}");
    let refused: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::ToolRefused { name, reason, .. } if name == "write" => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [&text]);
    // A read-only tool runs unasked.
    let (_, (_, text, is_error), calls) = one_call(
        "echo",
        serde_json::json!({"a": 1}),
        StopReason::ToolUse,
        false,
        never,
    )
    .await;
    assert_eq!((text.as_str(), is_error), ("echo {\"a\":1}", false));
    assert_eq!(calls, ["echo"]);
}

#[actix_rt::test]
async fn the_users_answer_decides_a_call_that_asks() {
    let asked = |q: &PermissionQuestion| {
        assert_eq!((q.id.as_str(), q.name.as_str()), ("c1", "write"));
        assert_eq!(q.server, None);
    };
    let args = serde_json::json!({"path": "x"});
    let (_, (_, text, is_error), calls) =
        one_call("write", args.clone(), StopReason::ToolUse, true, |q| {
            asked(q);
            Answer::No
        })
        .await;
    assert!(is_error);
    assert_eq!(
        text,
        "the user declined this call of \"write\"; do not run it again unasked: say what you wanted to do, or find another way"
    );
    assert!(calls.is_empty());
    let (_, (_, text, is_error), calls) =
        one_call("write", args.clone(), StopReason::ToolUse, true, |q| {
            asked(q);
            Answer::NoWith("write to y instead".to_owned())
        })
        .await;
    assert!(is_error);
    assert_eq!(
        text,
        "the user declined this call of \"write\" and says: write to y instead"
    );
    assert!(calls.is_empty());
    let (_, (_, text, is_error), calls) = one_call("write", args, StopReason::ToolUse, true, |q| {
        asked(q);
        Answer::Yes
    })
    .await;
    assert_eq!((text.as_str(), is_error), ("write {\"path\":\"x\"}", false));
    assert_eq!(calls, ["write"]);
}

#[actix_rt::test]
async fn a_turn_stops_at_max_steps_and_leaves_the_conversation_as_it_was() {
    let cfg = EngineConfig {
        max_steps: 1,
        ..config()
    };
    let r = rig(
        vec![calls(
            &[("c1", "echo", serde_json::json!({}))],
            StopReason::ToolUse,
        )],
        cfg,
    );
    let (_, done) = run(&r, "loop", false, never).await;
    assert_eq!(done, Err(EngineError::MaxSteps(1)));
    r.model.push(vec![text("fresh", 5)]);
    run(&r, "again", false, never).await.1.expect("answered");
    let last = r.model.requests().pop().expect("a request");
    assert_eq!(last.messages.len(), 1);
}

#[actix_rt::test]
async fn a_long_turn_near_the_end_of_the_window_compacts_its_own_steps() {
    let cfg = EngineConfig {
        context_window: Some(1000),
        compact_at: 0.8,
        ..config()
    };
    let mut step = match calls(
        &[("c1", "echo", serde_json::json!({"n": 1}))],
        StopReason::ToolUse,
    ) {
        Step::Reply(r) => r,
        _ => unreachable!("a reply"),
    };
    step.usage.input_tokens = 900;
    let r = rig(
        vec![
            Step::Reply(step),
            text("ran echo once", 40),
            text("finished", 60),
        ],
        cfg,
    );
    let (events, done) = run(&r, "work", false, never).await;
    let done = done.expect("answered");
    assert_eq!((done.text.as_str(), done.steps), ("finished", 2));
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Compacted { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, ["the last request used 900 of 1000 tokens"]);
    let reqs = r.model.requests();
    assert_eq!(reqs.len(), 3);
    // The summary covers the turn's own steps (its call and result), and the request follows
    // it again with the note to continue.
    let summarized = first_text(&reqs[1].messages[0]);
    assert!(summarized.contains("echo"), "{summarized}");
    let m = &reqs[2].messages;
    assert_eq!(m.len(), 3);
    assert!(first_text(&m[0]).ends_with("ran echo once"));
    assert!(first_text(&m[2]).starts_with("work\n\n"));
    assert!(first_text(&m[2]).ends_with(turn::CONTINUE_NOTE));
    assert_eq!(r.calls.lock().unwrap().clone(), ["echo"]);
}

#[actix_rt::test]
async fn an_always_answer_runs_the_call_and_the_next_one_unasked() {
    let r = rig(
        vec![
            calls(
                &[("c1", "write", serde_json::json!({"path": "x"}))],
                StopReason::ToolUse,
            ),
            calls(
                &[("c2", "write", serde_json::json!({"path": "y"}))],
                StopReason::ToolUse,
            ),
            text("wrote both", 5),
        ],
        config(),
    );
    let mut asked = 0;
    let (_, done) = run(&r, "write twice", true, |q| {
        asked += 1;
        assert_eq!(q.id, "c1", "only the first call asks");
        Answer::Always("write".to_owned())
    })
    .await;
    assert_eq!(done.expect("answered").text, "wrote both");
    assert_eq!(asked, 1);
    assert_eq!(r.calls.lock().unwrap().clone(), ["write", "write"]);
}

#[actix_rt::test]
async fn a_question_dropped_unanswered_is_a_no() {
    let r = rig(
        vec![
            calls(
                &[("c1", "write", serde_json::json!({"path": "x"}))],
                StopReason::ToolUse,
            ),
            text("done", 5),
        ],
        config(),
    );
    let (tx, mut rx) = turn_stream();
    r.engine.do_send(RunTurn {
        prompt: "write".to_owned(),
        attachments: Vec::new(),
        events: tx,
        can_ask: true,
    });
    let done = loop {
        match tokio::time::timeout(LIMIT, rx.recv())
            .await
            .expect("in time")
        {
            // The front end goes away without an answer.
            Some(TurnEvent::Ask(q)) => drop(q),
            Some(TurnEvent::Done(d)) => break d,
            Some(TurnEvent::Update(_)) => {}
            None => panic!("the stream ended without Done"),
        }
    };
    assert_eq!(done.expect("answered").text, "done");
    let (_, text, is_error) = results(&r.model.requests()[1]).remove(0);
    assert!(is_error);
    assert!(text.starts_with("the user declined this call"), "{text}");
    assert!(r.calls.lock().unwrap().is_empty());
}

/// The real built-ins behind the engine: what the model saw of a file is forgotten when a new
/// conversation starts (`/clear`), so an edit refused as stale in one conversation runs in the
/// next (where the model never saw the file).
#[actix_rt::test]
async fn a_new_conversation_forgets_what_the_model_saw_of_files() {
    let dir = std::env::temp_dir().join(format!("harness9-engine-forget-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
    let builtins = crate::builtins::Builtins::new(dir.clone(), Default::default()).start();
    let registry = ToolRegistry::new().start();
    registry.do_send(SetBuiltins {
        tools: crate::builtins::definitions(),
        executor: builtins.clone().recipient(),
    });
    let edit = serde_json::json!({"path": "a.txt", "old_string": "alpha", "new_string": "gamma"});
    let model = Scripted::new(vec![
        calls(
            &[("r", "read_file", serde_json::json!({"path": "a.txt"}))],
            StopReason::ToolUse,
        ),
        text("read", 1),
        calls(&[("e1", "edit_file", edit.clone())], StopReason::ToolUse),
        text("refused", 1),
        calls(&[("e2", "edit_file", edit)], StopReason::ToolUse),
        text("edited", 1),
    ]);
    let engine = Engine::new(model.clone(), registry, config())
        .forgetting_files(builtins.recipient())
        .start();
    let rig = Rig {
        engine,
        model,
        calls: Arc::default(),
        waits: mpsc::unbounded_channel().1,
    };
    let yes = |_: &PermissionQuestion| Answer::Yes;
    run(&rig, "read it", true, yes).await.1.unwrap();
    std::fs::write(dir.join("a.txt"), "alpha\nbeta\n").unwrap();
    run(&rig, "edit it", true, yes).await.1.unwrap();
    let (_, out, is_error) = results(&rig.model.requests()[3]).remove(0);
    assert!(is_error && out.contains("changed on disk"), "{out}");
    rig.engine.send(ClearConversation).await.unwrap();
    run(&rig, "edit it", true, yes).await.1.unwrap();
    let (_, out, is_error) = results(&rig.model.requests()[5]).remove(0);
    assert!(!is_error, "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "gamma\nbeta\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
