//! The `InputDesk`: the one handler of every server's elicitation and sampling requests (both
//! eras reach it as an [`InputRequest`]). With a person at the front end (the TUI registered
//! with [`SetUser`]) it asks them ([`UserAsk`]); headless it answers by the flags:
//! elicitation declined by default, accepted with the schema's defaults
//! (`--elicitation accept-defaults`) or from a JSON file (`--elicitation-answers`), URL mode
//! always declined; sampling refused unless `--sampling allow`. A sampling request the user or
//! the flags allow goes to the configured model ([`super::sampler`]), at most
//! [`SAMPLING_BURST`] at once per server and then one per [`SAMPLING_REFILL`] (a token bucket).
//! Every question is withdrawn when the server stops waiting (its reply channel closes).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use actix::prelude::*;
use harness9_actors::messages::InputRequest;
use harness9_actors::protocol::jsonrpc::{ErrorObject, INVALID_PARAMS, METHOD_NOT_FOUND};
use harness9_actors::protocol::methods::{CreateMessage, Elicit, Request};
use harness9_actors::server::ask::USER_REJECTED;
use harness9_actors::server::server_requests::{ElicitPolicy, InputCaps};
use harness9_actors::telemetry::Parent;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::sampler::{sample, Sampling};
use super::HeadlessLines;
use harness9_agent::model::Provider;
use harness9_base::sanitize::clean_line;

/// Sampling requests one server may make at once before the bucket runs dry.
pub const SAMPLING_BURST: f64 = 5.0;
/// How long the bucket takes to gain one request back.
pub const SAMPLING_REFILL: Duration = Duration::from_secs(12);

/// A server's question for the person at the front end.
#[derive(Debug)]
pub enum ServerQuestion {
    /// `elicitation/create`: answer with the result (`{"action": ...}`); a dropped sender is
    /// a cancel.
    Elicit {
        /// The request's params (message, mode, requestedSchema or url).
        params: Value,
        /// The answer.
        answer: oneshot::Sender<Value>,
    },
    /// `sampling/createMessage`: may it go to the model? A dropped sender is a no.
    Sample {
        /// What it asks.
        sampling: Sampling,
        /// The model it would go to (`anthropic claude-...`).
        model: String,
        /// Yes or no.
        answer: oneshot::Sender<bool>,
    },
}

/// A server's question for the user (sent to the TUI). The sender side is closed when the
/// server stops waiting.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct UserAsk {
    /// The server's name.
    pub server: String,
    /// What it asks.
    pub question: ServerQuestion,
}

/// From now on, ask `0` (the TUI) instead of answering by the flags.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetUser(pub Recipient<UserAsk>);

/// The headless answers: how the desk is set up.
#[derive(Debug, Clone, Default)]
pub struct DeskOptions {
    /// `--elicitation-answers FILE`, read: field name -> value.
    pub answers: Option<Map<String, Value>>,
    /// `--elicitation`: how a form is answered without an answers file (decline by default).
    pub elicitation: ElicitPolicy,
    /// `--sampling allow`: headless sampling goes to the model.
    pub sampling_allowed: bool,
    /// A person answers (the TUI will register with [`SetUser`]).
    pub interactive: bool,
    /// Other models of the provider a sampling request's hints may pick.
    pub sampling_models: Vec<String>,
    /// Where the headless answers are told (the front end prints them on stderr).
    pub lines: HeadlessLines,
}

/// One server's sampling allowance.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let gained = now.duration_since(self.at).as_secs_f64() / SAMPLING_REFILL.as_secs_f64();
        self.tokens = (self.tokens + gained).min(SAMPLING_BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The handler of every server's questions.
pub struct InputDesk {
    opts: DeskOptions,
    provider: Option<Provider>,
    user: Option<Recipient<UserAsk>>,
    buckets: HashMap<String, Bucket>,
    /// Interactive, before the TUI registered: questions kept for it (at most
    /// [`EARLY_QUESTIONS`]; more are answered by the flags).
    early: Vec<InputRequest>,
}

/// Questions an interactive desk keeps until the TUI registers.
const EARLY_QUESTIONS: usize = 64;

impl InputDesk {
    /// A desk answering by `opts`, sampling with `provider` (none: sampling is refused).
    pub fn new(opts: DeskOptions, provider: Option<Provider>) -> Self {
        Self {
            opts,
            provider,
            user: None,
            buckets: HashMap::new(),
            early: Vec::new(),
        }
    }

    /// What this desk can answer, for the capabilities we declare.
    pub fn caps(&self) -> InputCaps {
        InputCaps {
            elicitation_form: true,
            elicitation_url: self.opts.interactive,
            sampling: self.provider.is_some()
                && (self.opts.interactive || self.opts.sampling_allowed),
        }
    }

    /// The headless answer to an elicitation, told in the headless lines (`[mcp]`, server text
    /// cleaned; the front end prints them on stderr),
    /// with the reason of a decline.
    fn headless_elicit(&self, server: &str, params: &Value) -> Value {
        let (answer, how) = match self.headless_answer(params) {
            Ok(answer) => (answer, "accepted".to_owned()),
            Err(why) => (json!({ "action": "decline" }), format!("declined ({why})")),
        };
        let message = params.get("message").and_then(Value::as_str).unwrap_or("");
        self.opts.lines.say(&format!(
            "[mcp] server \"{}\" asked: \"{}\" -> {}",
            clean_line(server),
            clean_line(message),
            clean_line(&how)
        ));
        answer
    }

    /// The accepted answer, or why the form is declined.
    fn headless_answer(&self, params: &Value) -> Result<Value, String> {
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            return Err("a page is never opened headless".to_owned());
        }
        if let Some(answers) = &self.opts.answers {
            return super::elicit::from_answers(params, answers)
                .map_err(|e| format!("the answers file does not fit: {e}"));
        }
        match self.opts.elicitation {
            ElicitPolicy::Decline => Err(
                "answer with --elicitation accept-defaults or --elicitation-answers FILE"
                    .to_owned(),
            ),
            ElicitPolicy::AcceptDefaults => super::elicit::from_defaults(params),
        }
    }

    fn elicit(&mut self, msg: InputRequest) {
        let InputRequest {
            server,
            params,
            mut reply,
            ..
        } = msg;
        let Some(user) = &self.user else {
            let _ = reply.send(Ok(self.headless_elicit(&server, &params)));
            return;
        };
        let (tx, rx) = oneshot::channel();
        let ask = UserAsk {
            server,
            question: ServerQuestion::Elicit { params, answer: tx },
        };
        if user.try_send(ask).is_err() {
            let _ = reply.send(Ok(json!({ "action": "cancel" })));
            return;
        }
        actix_rt::spawn(async move {
            let got = tokio::select! {
                a = rx => Some(a.unwrap_or_else(|_| json!({ "action": "cancel" }))),
                _ = reply.closed() => None,
            };
            if let Some(a) = got {
                let _ = reply.send(Ok(a));
            }
        });
    }

    fn sample(&mut self, msg: InputRequest) {
        let InputRequest {
            server,
            params,
            reply,
            parent,
            ..
        } = msg;
        let admitted = self
            .admit(&server, &params)
            .and_then(|(provider, sampling)| {
                let approval = self.approval(&server, &sampling, &provider)?;
                Ok(SamplingRun {
                    server,
                    provider,
                    sampling,
                    approval,
                    parent,
                })
            });
        match admitted {
            Ok(run) => {
                actix_rt::spawn(run.answer(reply));
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    /// Whether `server`'s sampling request `params` may go to a model, and to which: a model
    /// is configured, a person or `--sampling allow` lets it, the request reads, the server's
    /// bucket has a request left; the model its hints pick among the settings'.
    fn admit(&mut self, server: &str, params: &Value) -> Result<(Provider, Sampling), ErrorObject> {
        let Some(provider) = self.provider.clone() else {
            return Err(refusal(
                "sampling is not available: no model is configured".into(),
            ));
        };
        if self.user.is_none() && !self.opts.sampling_allowed {
            self.opts.lines.say(&format!(
                "[mcp] server \"{}\" asked to use the model -> refused (allow with --sampling allow)",
                clean_line(server)
            ));
            return Err(refusal(
                "sampling is refused (run harness9 with --sampling allow to allow it)".into(),
            ));
        }
        let sampling = Sampling::parse(params).map_err(|e| ErrorObject {
            code: INVALID_PARAMS,
            message: e,
            data: None,
        })?;
        let now = Instant::now();
        let bucket = self.buckets.entry(server.to_owned()).or_insert(Bucket {
            tokens: SAMPLING_BURST,
            at: now,
        });
        if !bucket.take(now) {
            return Err(refusal(format!(
                "too many sampling requests from \"{server}\"; one more every {} s",
                SAMPLING_REFILL.as_secs()
            )));
        }
        // The server's hints may pick another of the provider's models the settings name.
        let chosen = sampling
            .model_for(&provider.config().model, &self.opts.sampling_models)
            .to_owned();
        let provider = if chosen == provider.config().model {
            provider
        } else {
            let mut cfg = provider.config().clone();
            cfg.model = chosen;
            Provider::new(cfg)
        };
        Ok((provider, sampling))
    }

    /// With a person at the front end, the question whether `server`'s `sampling` may go to
    /// `provider`'s model, asked: its answer to come; headless, none (the flags allowed it).
    fn approval(
        &self,
        server: &str,
        sampling: &Sampling,
        provider: &Provider,
    ) -> Result<Option<oneshot::Receiver<bool>>, ErrorObject> {
        let Some(user) = &self.user else {
            return Ok(None);
        };
        let (tx, rx) = oneshot::channel();
        let cfg = provider.config();
        let ask = UserAsk {
            server: server.to_owned(),
            question: ServerQuestion::Sample {
                sampling: sampling.clone(),
                model: format!("{} {}", cfg.kind, cfg.model),
                answer: tx,
            },
        };
        if user.try_send(ask).is_err() {
            return Err(refusal("the user could not be asked".into()));
        }
        Ok(Some(rx))
    }
}

/// A refusal of a sampling request, saying why.
fn refusal(message: String) -> ErrorObject {
    ErrorObject {
        code: USER_REJECTED,
        message,
        data: None,
    }
}

/// An admitted sampling request on its way to the model.
struct SamplingRun {
    server: String,
    provider: Provider,
    sampling: Sampling,
    /// The person's answer to wait for first (headless: none).
    approval: Option<oneshot::Receiver<bool>>,
    parent: Parent,
}

impl SamplingRun {
    /// Waits for the person's yes, calls the model and sends its result to `reply`; the
    /// model call is cancelled when the server stops waiting.
    async fn answer(self, mut reply: oneshot::Sender<Result<Value, ErrorObject>>) {
        let SamplingRun {
            server,
            provider,
            sampling,
            approval,
            parent,
        } = self;
        let cancel = CancellationToken::new();
        let run = async {
            if let Some(rx) = approval {
                if !rx.await.unwrap_or(false) {
                    return Err(refusal("the user declined the sampling request".into()));
                }
            }
            tracing::info!(server, "sampling request sent to the model");
            sample(&provider, &sampling, &cancel, &parent.span())
                .await
                .map_err(|e| ErrorObject {
                    code: harness9_actors::protocol::jsonrpc::INTERNAL_ERROR,
                    message: format!("the model call failed: {e}"),
                    data: None,
                })
        };
        let got = tokio::select! {
            r = run => Some(r),
            _ = reply.closed() => None,
        };
        match got {
            Some(r) => {
                let _ = reply.send(r);
            }
            None => cancel.cancel(),
        }
    }
}

impl Actor for InputDesk {
    type Context = Context<Self>;
}

impl Handler<InputRequest> for InputDesk {
    type Result = ();

    fn handle(&mut self, msg: InputRequest, _ctx: &mut Context<Self>) {
        if self.opts.interactive && self.user.is_none() && self.early.len() < EARLY_QUESTIONS {
            self.early.push(msg);
            return;
        }
        self.route(msg);
    }
}

impl InputDesk {
    fn route(&mut self, msg: InputRequest) {
        match msg.method.as_str() {
            Elicit::METHOD => self.elicit(msg),
            CreateMessage::METHOD => self.sample(msg),
            other => {
                let e = ErrorObject {
                    code: METHOD_NOT_FOUND,
                    message: format!("method not found: {other}"),
                    data: None,
                };
                let _ = msg.reply.send(Err(e));
            }
        }
    }
}

impl Handler<SetUser> for InputDesk {
    type Result = ();

    fn handle(&mut self, msg: SetUser, _ctx: &mut Context<Self>) {
        self.user = Some(msg.0);
        for q in std::mem::take(&mut self.early) {
            self.route(q);
        }
    }
}

/// Reads `--elicitation-answers FILE`: a JSON object of field name -> value.
pub fn read_answers(path: &std::path::Path) -> anyhow::Result<Map<String, Value>> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the elicitation answers {}", path.display()))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => anyhow::bail!(
            "{}: the elicitation answers must be a JSON object of field name to value",
            path.display()
        ),
        Err(e) => anyhow::bail!("{}:{}:{}: {e}", path.display(), e.line(), e.column()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_one_per_refill() {
        let t0 = Instant::now();
        let mut b = Bucket {
            tokens: SAMPLING_BURST,
            at: t0,
        };
        for _ in 0..5 {
            assert!(b.take(t0));
        }
        assert!(!b.take(t0));
        assert!(b.take(t0 + SAMPLING_REFILL));
        assert!(!b.take(t0 + SAMPLING_REFILL));
    }
}
