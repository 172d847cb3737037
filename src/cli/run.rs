//! `harness9 run -p "prompt" [--json]`: one task, headless, to the end. Servers start and settle
//! first (bounded by their startup timeouts), then the engine runs the turn; the final answer
//! goes to stdout, or with `--json` one JSON event per line.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use actix::prelude::*;
use anyhow::Context as _;
use harness9_actors::messages::StatusSnapshot;
use serde_json::{json, Value};

use crate::agent::engine::EngineConfig;
use crate::agent::engine::{
    turn_stream, CancelTurn, Engine, EngineError, EngineEvent, RunTurn, TurnEvent, TurnOutcome,
};
use crate::agent::model::settings;
use crate::agent::model::ProviderConfig;
use crate::app::config::Config;
use crate::app::stores::conversations::Opened;
use crate::app::{spawn_status_lines, Session, SessionOptions, Start};
use crate::cli::{interrupted, RunArgs};
use crate::sanitize::{clean_line, clean_text, to_json};

/// Prints a turn's events as they come: JSON lines on stdout, or a line per tool call on
/// stderr.
struct Printer {
    json: bool,
    /// `--stream`: text deltas as `text` events.
    stream: bool,
    started: Instant,
}

/// A session id for `run --json`'s events: 16 random bytes as hex (from the OS, else from the
/// clock and pid).
fn session_id() -> String {
    let bytes = harness9_actors::net::random(16).unwrap_or_else(|_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let mut b = (t as u64).to_le_bytes().to_vec();
        b.extend_from_slice(&std::process::id().to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b
    });
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Writes one JSON event line (a closed stdout is ignored: the run still ends properly), with
/// DEL, C1 and bidi controls escaped like C0 ones.
fn json_line(v: &Value) {
    // A `Value` always serializes (its keys are strings).
    let line = to_json(v, false).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

impl Printer {
    /// Prints one event of the turn: a JSON line with `--json`, else the text line it has.
    fn print(&self, e: EngineEvent) {
        if !self.json {
            print_text(e);
        } else if let Some(v) = self.json_event(e) {
            json_line(&v);
        }
    }

    /// The JSON line of an event (`None` for one `--json` does not show).
    fn json_event(&self, e: EngineEvent) -> Option<Value> {
        let t = ms(self.started.elapsed());
        let v = match e {
            EngineEvent::TextDelta(delta) if self.stream => {
                json!({"event": "text", "t_ms": t, "delta": delta})
            }
            EngineEvent::TextDelta(_) => return None,
            EngineEvent::ModelRetrying {
                attempt,
                after,
                reason,
            } => {
                json!({"event": "model_retry", "t_ms": t, "attempt": attempt, "after_ms": ms(after), "reason": reason})
            }
            EngineEvent::ModelDone {
                step,
                text,
                tool_calls,
                elapsed,
                usage,
                tools,
            } => {
                json!({"event": "model", "t_ms": t, "step": step, "text": text, "tool_calls": tool_calls,
                        "ms": ms(elapsed), "input_tokens": usage.input_tokens, "cached_input_tokens": usage.cached_input_tokens,
                        "output_tokens": usage.output_tokens, "tools_loaded": tools.loaded, "tools_loaded_bytes": tools.loaded_bytes,
                        "tools_deferred": tools.deferred, "tools_deferred_bytes": tools.deferred_bytes})
            }
            EngineEvent::Compacted { reason, compacted } => {
                json!({"event": "compacted", "t_ms": t, "reason": reason, "replaced": compacted.replaced,
                       "tokens_before": compacted.tokens_before, "tokens_after": compacted.tokens_after})
            }
            EngineEvent::ToolStarted {
                id,
                name,
                arguments,
            } => {
                json!({"event": "tool_call", "t_ms": t, "id": id, "name": name, "arguments": arguments})
            }
            EngineEvent::ToolRefused {
                id,
                name,
                rule,
                reason,
            } => {
                json!({"event": "tool_refused", "t_ms": t, "id": id, "name": name, "rule": rule, "reason": reason})
            }
            EngineEvent::ToolProgress {
                id,
                progress,
                total,
                message,
            } => json!({"event": "tool_progress", "t_ms": t, "id": id, "progress": progress,
                        "total": total, "message": message}),
            EngineEvent::ToolFinished {
                id,
                name,
                is_error,
                elapsed,
                output,
                output_bytes,
                spilled,
            } => {
                let shown: String = output.chars().take(2000).collect();
                let mut v = json!({"event": "tool_result", "t_ms": t, "id": id, "name": name, "is_error": is_error,
                       "ms": ms(elapsed), "output": shown, "output_bytes": output_bytes,
                       "spilled_to": spilled.map(|p| p.display().to_string())});
                let changed = crate::agent::builtins::edit::changes(&name, &output, is_error);
                if !changed.is_empty() {
                    v["changes"] = json!(changed);
                }
                v
            }
            // The TUI's task list; `run` prints the task's handle and result as tool results.
            EngineEvent::TaskStarted { .. }
            | EngineEvent::TaskStatus { .. }
            | EngineEvent::TaskEnded { .. } => return None,
        };
        Some(v)
    }
}

/// Prints an event of the turn as text: a line per tool call, retry and compaction on
/// stderr; what the edit tools changed on stdout, with the answer.
fn print_text(e: EngineEvent) {
    match e {
        EngineEvent::ToolStarted { name, .. } => {
            eprintln!("[tool] {} …", clean_line(&name))
        }
        EngineEvent::ToolFinished {
            name,
            is_error,
            elapsed,
            output,
            ..
        } => {
            eprintln!(
                "[tool] {} {} {} ms",
                clean_line(&name),
                if is_error { "✗" } else { "✓" },
                ms(elapsed)
            );
            // What the edit tools changed, a line per file, with the answer on stdout.
            let changed = crate::agent::builtins::edit::changes(&name, &output, is_error);
            if !changed.is_empty() {
                let mut out = std::io::stdout().lock();
                for line in changed {
                    let _ = writeln!(out, "{}", clean_line(line));
                }
                let _ = out.flush();
            }
        }
        EngineEvent::ToolRefused { name, reason, .. } => {
            eprintln!(
                "[permission] {} refused: {}",
                clean_line(&name),
                clean_line(&reason)
            )
        }
        EngineEvent::ModelRetrying { reason, after, .. } => {
            let reason = clean_line(&reason);
            eprintln!("[model] {reason}; retrying in {} ms", after.as_millis())
        }
        EngineEvent::Compacted { reason, compacted } => eprintln!(
            "[model] compacted {} earlier messages (~{} -> ~{} tokens): {}",
            compacted.replaced,
            compacted.tokens_before,
            compacted.tokens_after,
            clean_line(&reason)
        ),
        _ => {}
    }
}

/// What the first model request is given, within `--startup-wait`, to reach the model.
const SEND_MARGIN: Duration = Duration::from_millis(50);

/// Runs `harness9 run`; `launched` is when the process started (the startup wait counts from
/// it).
pub async fn run(
    opts: &SessionOptions,
    args: &RunArgs,
    launched: Instant,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    check_task(args)?;
    let settings = opts.model_settings()?;
    let Some(provider) = settings.provider.clone() else {
        return Err(super::UsageError(settings::how_to_configure().to_owned()).into());
    };
    let model = RunModel { settings, provider };
    let prompt = task_prompt(args)?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let (policy, _logged) = opts.policy(&cwd)?;
    if let Some(warning) = crate::app::Session::bypass_warning(&policy) {
        eprintln!("{warning}");
    }
    let config = opts.load_config()?;
    crate::app::SessionOptions::unmatched_rules(&policy, &config);
    for line in crate::app::config::trust::hint_lines(&config, None) {
        eprintln!("{line}");
    }
    let start = Start {
        shutdown_grace: Some(crate::app::HEADLESS_GRACE),
        builtins: true,
        offer_cached: true,
        policy: Some(policy.clone()),
        ..Start::default()
    };
    let mut session = Session::start(opts, &config, config.servers.clone(), start)?;
    let this = Run {
        opts,
        args,
        config: &config,
        started,
        launched,
    };
    // Every way out of the session closes it: an early return would leave its actors to be
    // dropped with the runtime.
    let result = this.turn(&mut session, model, policy, prompt).await;
    let answered = matches!(&result, Ok(c) if *c == ExitCode::SUCCESS);
    if answered {
        cache_at_exit(&mut session, &config).await;
    }
    session.close().await;
    result
}

/// Refuses what cannot start a run: an empty task, `--continue` with nothing to continue.
fn check_task(args: &RunArgs) -> anyhow::Result<()> {
    if args.prompt.trim().is_empty() {
        return Err(super::UsageError(
            "-p needs a task: `harness9 run -p \"...\"`, or `-p -` to read it from stdin"
                .to_owned(),
        )
        .into());
    }
    if args.continue_ {
        // Said before anything starts: `--continue` is a wish to go on, not to start afresh.
        let cwd = std::env::current_dir().context("cannot read the working directory")?;
        if crate::app::stores::conversations::latest_for(
            &crate::app::stores::conversations::dir(),
            &cwd,
        )
        .is_none()
        {
            return Err(super::UsageError(format!(
                "--continue: there is no earlier conversation in {}; run without --continue to start one",
                clean_line(&cwd.display().to_string())
            ))
            .into());
        }
    }
    Ok(())
}

/// The task: `-p`'s text, stdin's with `-p -`, or `-p`'s followed by what is piped in.
fn task_prompt(args: &RunArgs) -> anyhow::Result<String> {
    if args.prompt == "-" {
        return read_stdin();
    }
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Ok(args.prompt.clone());
    }
    // `cat notes.md | harness9 run -p "summarize"`: what is piped in follows the task. A
    // stdin that is open but silent (a CI runner's, a parent's pipe) is not waited on.
    Ok(match read_piped(STDIN_FIRST_BYTE, STDIN_TOTAL)? {
        Some(piped) if !piped.trim().is_empty() => format!("{}\n\n{piped}", args.prompt),
        _ => args.prompt.clone(),
    })
}

/// The model a run talks to: the settings it was resolved from and their provider.
struct RunModel {
    settings: settings::Settings,
    provider: ProviderConfig,
}

impl RunModel {
    /// `anthropic claude-...`: the model as the `start` event names it.
    fn name(&self) -> String {
        format!("{} {}", self.provider.kind, self.provider.model)
    }

    /// The model's id, as conversations and prices know it.
    fn id(&self) -> &str {
        &self.provider.model
    }

    /// A resumed conversation goes on with the model it was saved with, unless the command
    /// line named one (or that model cannot be set up here: then this one, with a warning);
    /// the engine's window follows the model.
    fn resumed(
        self,
        opts: &SessionOptions,
        saved: Option<&Opened>,
        cfg: &mut EngineConfig,
    ) -> Self {
        let saved_model = saved.and_then(|o| o.model.clone()).filter(|m| {
            opts.model.model.is_none()
                && opts.model.provider.is_none()
                && m != self.id()
                && *m != format!("{}/{}", self.provider.kind, self.provider.model)
        });
        let Some(spec) = saved_model else {
            return self;
        };
        match settings::resolve(&opts.model.with_model(&spec)) {
            Ok(s) if s.provider.is_some() => {
                if let Some(p) = s.provider.clone() {
                    cfg.context_window = s.context_window(&p.model);
                    return RunModel {
                        settings: s,
                        provider: p,
                    };
                }
            }
            Ok(_) => tracing::warn!(
                "the session's model {spec} is not set up here; using {}",
                self.name()
            ),
            Err(e) => tracing::warn!("the session's model {spec}: {e}; using {}", self.name()),
        }
        self
    }
}

/// One `harness9 run`: what the command line and the config asked for, and when it started.
struct Run<'a> {
    opts: &'a SessionOptions,
    args: &'a RunArgs,
    config: &'a Config,
    /// When `run` began (the events' `t_ms` count from it).
    started: Instant,
    /// When the process started (the startup wait counts from it).
    launched: Instant,
}

impl Run<'_> {
    /// The run inside its session: the engine set up (a saved conversation resumed), the
    /// servers settled, the turn run and its outcome reported; the exit code.
    async fn turn(
        &self,
        session: &mut Session,
        model: RunModel,
        policy: std::sync::Arc<crate::agent::permissions::Policy>,
        prompt: String,
    ) -> anyhow::Result<ExitCode> {
        spawn_status_lines(
            session.runtime.status.clone(),
            self.opts.verbose > 0,
            self.opts.lines.clone(),
        );
        let mut engine_cfg = self.engine_config(session, &model, policy);
        let resume = super::resume_of(self.args.continue_, self.args.resume.as_deref());
        let saved = match session.conversation(&resume, model.id()) {
            Ok(o) => Some(o),
            Err(e) if resume != crate::app::stores::conversations::Resume::New => {
                return Err(super::UsageError(e).into())
            }
            Err(e) => {
                tracing::warn!("{e}; this run is not saved");
                None
            }
        };
        let session_id = saved
            .as_ref()
            .map_or_else(session_id, |o| o.file.id.clone());
        let model = model.resumed(self.opts, saved.as_ref(), &mut engine_cfg);
        let engine = session
            .engine(model.provider.clone(), engine_cfg, saved)
            .start();
        let printer = Printer {
            json: self.args.json_events(),
            stream: self.args.stream,
            started: self.started,
        };
        let rt = &mut session.runtime;
        // The bound counts from the process's start (loading the config and starting the
        // servers are part of it), less a moment to send the request, so the first model
        // request reaches the model within it.
        let wait = startup_wait(self.args.startup_wait)?
            .min(rt.max_startup + Duration::from_secs(5))
            .saturating_sub(self.launched.elapsed() + SEND_MARGIN);
        let model_name = model.name();
        let settle = self.settle(rt, &engine, wait, &session_id, &model_name);
        let interrupted_early = tokio::select! {
            _ = settle => false,
            _ = interrupted() => true,
        };
        let outcome = if interrupted_early {
            None
        } else {
            let (events, rx) = turn_stream();
            engine.do_send(RunTurn {
                attachments: Vec::new(),
                prompt,
                events,
                // Headless: a call that would ask is refused, naming what would allow it.
                can_ask: false,
            });
            read_turn(rx, &printer, &engine).await
        };
        Ok(self.report(outcome, &model, &session_id))
    }

    /// The engine's configuration from the settings and the flags.
    fn engine_config(
        &self,
        session: &Session,
        model: &RunModel,
        policy: std::sync::Arc<crate::agent::permissions::Policy>,
    ) -> EngineConfig {
        let settings = &model.settings;
        let mut cfg = session.engine_config(
            self.args.max_steps.unwrap_or(settings.max_steps),
            settings.tool_output_budget_tokens,
        );
        if let Some(dir) = &self.args.spill_dir {
            cfg.spill_dir = dir.clone();
        }
        cfg.context_window = settings.context_window(&model.provider.model);
        cfg.compact_at = settings.compact_at;
        cfg.policy = policy;
        cfg.tool_search = settings.tool_search.clone();
        cfg
    }

    /// Waits for the servers, at most `wait` (a server offering its tools from the cache is
    /// ready at once); with `--json`, then says the `start` event.
    async fn settle(
        &self,
        rt: &mut crate::app::Runtime,
        engine: &Addr<Engine>,
        wait: Duration,
        session_id: &str,
        model_name: &str,
    ) {
        let snap = if self.config.servers.is_empty() {
            StatusSnapshot::default()
        } else {
            rt.ready(wait).await
        };
        if !self.args.json_events() {
            return;
        }
        let servers: serde_json::Map<String, Value> = snap
            .iter()
            .map(|(n, s)| (n.clone(), json!(s.status.label())))
            .collect();
        // What the first request offers (tool search may defer some, then `tool_search` is
        // offered), and every tool in the table.
        let tools = engine
            .send(crate::agent::engine::ListOffered)
            .await
            .unwrap_or_default();
        json_line(&json!({
            "event": "start", "t_ms": ms(self.started.elapsed()), "session_id": session_id,
            "model": model_name, "servers": servers, "tools": tools.offered,
            "tools_all": tools.all,
        }));
    }

    /// With `--json`, the `error` event of a run that ends with `message` and `code`.
    fn error_event(&self, message: &str, code: u8) {
        if self.args.json_events() {
            json_line(
                &json!({"event": "error", "t_ms": ms(self.started.elapsed()), "message": message, "code": code}),
            );
        }
    }

    /// Says how the turn ended (the answer on stdout, or the `done` event; else the error on
    /// stderr and as an `error` event); the exit code.
    fn report(&self, outcome: Option<TurnEnd>, model: &RunModel, session_id: &str) -> ExitCode {
        match outcome {
            None => {
                eprintln!("harness9: interrupted; stopping servers");
                self.error_event("interrupted", 130);
                ExitCode::from(130)
            }
            Some(Err(EngineGone)) => {
                let message = "the engine stopped before the turn ended";
                self.error_event(message, 1);
                eprintln!("harness9: {message}");
                ExitCode::from(1)
            }
            Some(Ok(Err(e))) => {
                self.error_event(&e.to_string(), 1);
                eprintln!("harness9: {}", clean_text(&e.to_string()));
                ExitCode::from(1)
            }
            Some(Ok(Ok(done))) => {
                self.answer(&done, model, session_id);
                ExitCode::SUCCESS
            }
        }
    }

    /// The model's answer: on stdout, or the `done` event with the usage and its cost.
    fn answer(&self, done: &TurnOutcome, model: &RunModel, session_id: &str) {
        if self.args.json_events() {
            let u = &done.usage;
            let cost = model.settings.cost(
                model.id(),
                u.input_tokens,
                u.cached_input_tokens,
                u.output_tokens,
            );
            json_line(&json!({
                "event": "done", "t_ms": ms(self.started.elapsed()), "session_id": session_id,
                "text": done.text, "steps": done.steps, "ms": ms(done.elapsed),
                "input_tokens": u.input_tokens, "cached_input_tokens": u.cached_input_tokens,
                "output_tokens": u.output_tokens,
                "cost_usd": cost.map(|c| (c * 1e6).round() / 1e6),
            }));
        } else {
            let mut out = std::io::stdout().lock();
            // The model may repeat what a tool said: the answer is server text too.
            let _ = writeln!(out, "{}", clean_text(&done.text));
            let _ = out.flush();
        }
    }
}

/// A run that answered, with a server slower than it and not cached yet: its list is cached
/// anyway, within a bound, so the next run offers its tools at once (once per spec; Ctrl+C
/// skips it). A failed or interrupted run does not come here: it ends at once.
async fn cache_at_exit(session: &mut Session, config: &Config) {
    let Some(cache) = session.tool_cache.clone() else {
        return;
    };
    let bound = crate::app::stores::tool_cache::CACHE_AT_EXIT;
    let note = |names: &[&str]| {
        let names: Vec<String> = names
            .iter()
            .map(|n| format!("\"{}\"", clean_line(n)))
            .collect();
        eprintln!(
            "harness9: waiting up to {} s for {} to finish starting, so the next run offers its tools at once (once; Ctrl+C skips)",
            bound.as_secs(),
            names.join(", ")
        );
    };
    let wait = crate::app::stores::tool_cache::wait_to_cache(
        &mut session.runtime.status,
        &config.servers,
        &cache,
        bound,
        note,
    );
    tokio::select! {
        () = wait => {}
        () = interrupted() => {}
    }
}

/// How a turn read to its end came out: its outcome, or the engine gone without one.
type TurnEnd = Result<Result<TurnOutcome, EngineError>, EngineGone>;

/// The engine ended the turn's stream without an outcome.
struct EngineGone;

/// How long an interrupted turn has to end (so the servers get `notifications/cancelled`
/// before they are stopped).
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// Prints a turn's stream until its outcome. An interrupt cancels the turn (the model request
/// and every tool call) and waits up to [`CANCEL_GRACE`] for its end; `None` then.
async fn read_turn(
    mut rx: tokio::sync::mpsc::Receiver<TurnEvent>,
    printer: &Printer,
    engine: &Addr<Engine>,
) -> Option<TurnEnd> {
    let mut interrupt = std::pin::pin!(interrupted());
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let grace = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            item = rx.recv() => match item {
                Some(TurnEvent::Update(e)) => printer.print(e),
                // Headless turns do not ask (`can_ask: false`); a question is a no.
                Some(TurnEvent::Ask(q)) => {
                    let _ = q.answer.send(crate::agent::engine::Answer::No);
                }
                Some(TurnEvent::Done(r)) => return deadline.is_none().then_some(Ok(r)),
                None => return deadline.is_none().then_some(Err(EngineGone)),
            },
            _ = &mut interrupt, if deadline.is_none() => {
                engine.do_send(CancelTurn);
                deadline = Some(tokio::time::Instant::now() + CANCEL_GRACE);
            }
            () = grace => return None,
        }
    }
}

/// The default of `--startup-wait`: a few seconds, not a hung server's whole startup timeout.
const STARTUP_WAIT: Duration = Duration::from_secs(5);

/// `--startup-wait`, else `$HARNESS9_STARTUP_WAIT`, else [`STARTUP_WAIT`].
fn startup_wait(flag: Option<f64>) -> anyhow::Result<Duration> {
    let (value, from) = match flag {
        Some(v) => (v, "--startup-wait"),
        None => match std::env::var("HARNESS9_STARTUP_WAIT") {
            Ok(v) => (
                v.trim().parse::<f64>().map_err(|_| {
                    super::UsageError(format!(
                        "HARNESS9_STARTUP_WAIT={v:?} is not a number of seconds"
                    ))
                })?,
                "HARNESS9_STARTUP_WAIT",
            ),
            Err(_) => return Ok(STARTUP_WAIT),
        },
    };
    if !value.is_finite() || !(0.0..=crate::app::config::MAX_TIMEOUT_SECS).contains(&value) {
        return Err(super::UsageError(format!(
            "{from} must be a number of seconds from 0 to 86400, not {value}"
        ))
        .into());
    }
    Ok(Duration::from_secs_f64(value))
}

/// The most a prompt read from stdin may hold.
const MAX_STDIN_PROMPT: u64 = 16 * 1024 * 1024;

/// How long stdin piped under `-p "task"` may stay silent before the run goes on without it.
const STDIN_FIRST_BYTE: Duration = Duration::from_secs(1);

/// How long stdin piped under `-p "task"` may take to end once its first bytes came.
const STDIN_TOTAL: Duration = Duration::from_secs(300);

fn too_big() -> anyhow::Error {
    super::UsageError(format!(
        "stdin holds more than {} MiB; pass a smaller text or a path for the model to read",
        MAX_STDIN_PROMPT / (1024 * 1024)
    ))
    .into()
}

/// Text piped in under `-p "task"`, read on a thread of its own: `None` (with a note) when no
/// byte comes within `first_byte`; else everything to the end of input, which must come
/// within `total` of the first byte (at most [`MAX_STDIN_PROMPT`]).
fn read_piped(first_byte: Duration, total: Duration) -> anyhow::Result<Option<String>> {
    use std::io::Read as _;
    use std::sync::mpsc::{sync_channel, RecvTimeoutError};
    // A few chunks in flight: the reader waits for us, so the cap bounds memory too.
    let (tx, rx) = sync_channel::<std::io::Result<Vec<u8>>>(4);
    // Left blocked in `read` when stdin never ends; the process does not wait for it.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let chunk = match stdin.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(n) => Ok(buf[..n].to_vec()),
                Err(e) => Err(e),
            };
            let end = !matches!(chunk, Ok(ref c) if !c.is_empty());
            if tx.send(chunk).is_err() || end {
                return;
            }
        }
    });
    let asked = Instant::now();
    let mut began: Option<Instant> = None;
    let mut data = Vec::new();
    loop {
        let deadline = began.map_or(asked + first_byte, |b| b + total);
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(chunk)) if chunk.is_empty() => break,
            Ok(Ok(chunk)) => {
                began.get_or_insert_with(Instant::now);
                data.extend_from_slice(&chunk);
                if data.len() as u64 > MAX_STDIN_PROMPT {
                    return Err(too_big());
                }
            }
            Ok(Err(e)) => return Err(anyhow::anyhow!("cannot read stdin: {e}")),
            // The reader is gone without an end of input: only if it panicked.
            Err(RecvTimeoutError::Disconnected) => anyhow::bail!("cannot read stdin"),
            Err(RecvTimeoutError::Timeout) if began.is_none() => {
                eprintln!(
                    "[run] stdin gave nothing within {} s; ignoring it",
                    first_byte.as_secs_f64()
                );
                return Ok(None);
            }
            Err(RecvTimeoutError::Timeout) => anyhow::bail!(
                "stdin did not end within {} s of its first bytes ({} bytes so far); close it (or end the input), or put the text in a file and name it in the task",
                total.as_secs(),
                data.len()
            ),
        }
    }
    String::from_utf8(data)
        .map(Some)
        .map_err(|_| anyhow::anyhow!("cannot read the prompt from stdin (it must be UTF-8 text)"))
}

/// Standard input, to its end (at most [`MAX_STDIN_PROMPT`]).
fn read_stdin() -> anyhow::Result<String> {
    use std::io::Read as _;
    let mut s = String::new();
    std::io::stdin()
        .take(MAX_STDIN_PROMPT + 1)
        .read_to_string(&mut s)
        .context("cannot read the prompt from stdin (it must be UTF-8 text)")?;
    if s.len() as u64 > MAX_STDIN_PROMPT {
        return Err(too_big());
    }
    Ok(s)
}
