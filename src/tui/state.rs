//! The TUI's state and its pure update function: every key, status snapshot, tool list, trace
//! record and tool result is an [`Event`]; [`update`] changes the [`State`] and returns the
//! [`Effect`]s the `Tui` actor carries out. Nothing here touches a terminal or an actor.
//!
//! [`update`] only routes: a key goes to the question waiting for an answer (a tool approval,
//! then a server's question), else to the open
//! modal's feature (panel, trace, help, trust), else to the input; other events go to the feature
//! they are about. Each feature module (`input`, `transcript`, `commands`, `approvals`, `panel`,
//! `trace`, `trust`) owns its types, its keys, its layout numbers and its drawing; its public
//! types are re-exported here, so every `tui::state::X` path stays.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use harness9_actors::messages::{StatusSnapshot, ToolEntry};
use harness9_actors::trace::WireRecord;
use serde_json::Value;

use harness9_agent::engine::EngineEvent;

pub use super::approvals::Approval;
use super::approvals::{approval_key, asked, decline_all};
use super::commands::help_key;
pub use super::commands::COMMANDS;
pub use super::editor::MAX_INPUT_ROWS;
use super::editor::{paste, session_key};
pub use super::elicit::{AskAnswer, AskKind, PendingAsk};
use super::input_vars::input_key;
pub use super::input_vars::InputView;
use super::panel::panel_key;
pub use super::panel::{tool_lines, PanelState, ToolLayout};
use super::trace::trace_key;
pub use super::trace::{TraceBuf, TraceRow, TraceView, TRACE_MESSAGE_MAX, TRACE_PER_SERVER};
use super::transcript::{engine_event, finish_call};
pub use super::transcript::{entries_of, CallState, Entry, RESULT_LINES};
use super::trust::trust_key;
pub use super::trust::TrustView;

/// Something that happened, for [`update`].
#[derive(Debug, Clone)]
pub enum Event {
    /// A key press.
    Key(KeyEvent),
    /// A `/call`'s progress notice.
    CallProgress {
        /// The call's entry.
        id: u64,
        /// Progress so far.
        progress: f64,
        /// The total, when known.
        total: Option<f64>,
        /// The server's message.
        message: Option<String>,
    },
    /// The engine asks whether a tool call may run; answer with [`Effect::Answer`].
    ApprovalAsked(Approval),
    /// A server asks the user (elicitation, sampling); answer with [`Effect::AnswerAsk`].
    Asked(PendingAsk),
    /// The server stopped waiting for that question.
    AskWithdrawn(u64),
    /// Pasted text.
    Paste(String),
    /// The terminal's size changed.
    Resize(u16, u16),
    /// A new status snapshot from the supervisor.
    Status(StatusSnapshot),
    /// The registry's tool table.
    Tools(Arc<Vec<ToolEntry>>),
    /// A traced JSON-RPC message.
    Trace(WireRecord),
    /// A `/call` finished.
    CallDone {
        /// The call's id (the transcript entry).
        id: u64,
        /// The text to show.
        output: String,
        /// Whether it failed or reported `isError`.
        is_error: bool,
        /// How long it took.
        elapsed: Duration,
    },
    /// Something the engine did during a turn.
    Engine(EngineEvent),
    /// The turn ended: `Ok` with a summary line, `Err` with the error.
    TurnDone(Result<String, String>),
    /// A server's log line or change (`notifications/message`, list changes).
    ServerNotice(harness9_actors::messages::ServerNotice),
    /// A server's resources and templates, asked for with [`Effect::LoadResources`].
    Resources {
        /// The server's name.
        server: String,
        /// What it listed, or why not.
        result: super::server_view::Loaded,
    },
    /// A server's prompts, asked for with [`Effect::LoadPrompts`].
    Prompts {
        /// The server's name.
        server: String,
        /// What it listed, or why not.
        result: Result<Vec<harness9_actors::protocol::types::Prompt>, String>,
    },
    /// Values for a prompt's argument, asked for with [`Effect::CompleteArgument`].
    Completion {
        /// The input when Tab was pressed.
        input: String,
        /// The argument.
        argument: String,
        /// The values offered (empty when the server offered none or failed).
        values: Vec<String>,
    },
    /// Values for a template variable of an `@` mention, asked for with
    /// [`Effect::CompleteTemplate`].
    MentionCompleted {
        /// The input when Tab was pressed.
        input: String,
        /// The mention up to the value.
        head: String,
        /// The template's text after the variable.
        tail: String,
        /// The values offered.
        values: Vec<String>,
    },
    /// A prompt's messages, asked for with [`Effect::GetPrompt`].
    PromptGot {
        /// The prompt's name (for messages).
        name: String,
        /// Its messages, or why not.
        result: Result<harness9_actors::protocol::types::GetPromptResult, String>,
    },
    /// A line for the transcript from the app (reload results, editor errors).
    Notice {
        /// Show as an error.
        error: bool,
        /// The text.
        text: String,
    },
    /// What a reloaded config has that is ignored (`Config::warnings`).
    ConfigWarnings(Vec<String>),
    /// The permission rules in force, for `/permissions`.
    Permissions(Vec<harness9_agent::permissions::Rule>),
    /// The saved conversations' listing, for the `/resume` picker.
    SessionsListed(Vec<String>),
    /// `/model` switched the model for the next turn.
    ModelSwitched {
        /// `anthropic claude-...`.
        model: String,
        /// The bare model name.
        model_id: String,
        /// Its context window, when known.
        context_window: Option<u64>,
        /// The settings it was resolved with.
        settings: Arc<harness9_agent::model::settings::Settings>,
    },
    /// A saved conversation replaced the engine's: its transcript.
    Resumed {
        /// Its session id.
        session_id: String,
        /// Its transcript.
        entries: Vec<Entry>,
    },
    /// `/compact` ended: what it did, or why not.
    CompactDone(Result<harness9_agent::engine::compact::Compacted, String>),
    /// The clock's tick: how long the running turn has run (`None`: no turn runs).
    Tick(Option<u64>),
    /// The config was reloaded: its secrets, sources, disabled servers and input prompts.
    ConfigReloaded {
        /// Values `/trace` must not show.
        secrets: Vec<String>,
        /// Where each server's entry comes from.
        sources: Vec<(String, std::path::PathBuf)>,
        /// Servers marked disabled.
        disabled: Vec<String>,
        /// `${input:ID}` prompts the new config needs.
        inputs: Vec<harness9_app::input_vars::InputPrompt>,
    },
    /// A turn could not start (no engine).
    TurnNotStarted,
}

/// What the actor must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Stop every server and exit.
    Quit,
    /// Restart one server.
    Restart(String),
    /// Log in to an OAuth server that needs it (the runtime runs the browser flow).
    Login(String),
    /// Open `.mcp.json` in `$EDITOR` (or the system opener), then reload.
    OpenEditor,
    /// Reload `.mcp.json` and reconcile.
    Reload,
    /// Call a registered tool; reply with [`Event::CallDone`].
    CallTool {
        /// Transcript entry id.
        id: u64,
        /// Registered name.
        name: String,
        /// Arguments.
        arguments: Option<Value>,
    },
    /// Ordinary input for the engine.
    Submit(String),
    /// Input with blocks after its text (an MCP prompt's images).
    SubmitWith {
        /// The text.
        prompt: String,
        /// What follows it in the user's message.
        attachments: Vec<harness9_agent::model::Block>,
    },
    /// Input that mentions resources (`@server:uri`): read them, attach their contents, then
    /// [`Effect::Submit`].
    SubmitWithResources {
        /// The input as typed.
        prompt: String,
        /// `(server, uri)` of each mention.
        mentions: Vec<(String, String)>,
    },
    /// Cancel the running turn.
    CancelTurn,
    /// The user's answer to [`Event::ApprovalAsked`] (an "always" answer is also saved for
    /// the project).
    Answer {
        /// Which question.
        key: u64,
        /// The answer.
        answer: harness9_agent::engine::Answer,
    },
    /// `/permissions`: read the rules in force; reply with [`Event::Permissions`].
    ListPermissions,
    /// Forget a remembered "always" answer (from `/permissions`), then list again.
    ForgetRule(String),
    /// The user's answer to [`Event::Asked`].
    AnswerAsk {
        /// Which question.
        key: u64,
        /// The answer.
        answer: AskAnswer,
    },
    /// Open a URL elicitation's page in the browser (after the user's yes).
    OpenUrl(String),
    /// Start a new conversation with the model (`/clear`).
    ClearConversation,
    /// `/resume`: list the saved conversations (empty), or continue the one with this id.
    Resume(String),
    /// `/compact [focus]` (the focus, maybe empty).
    Compact(String),
    /// `/model [provider/]name`.
    SetModel(String),
    /// The tools turned off for the session, the whole set (`/tools off|on NAME`).
    DisableTools(std::collections::BTreeSet<String>),
    /// Panic on purpose (`/panic`, only in a debug build with `HARNESS9_DEBUG_PANIC=1`): proves
    /// the panic path.
    Panic,
    /// Approve these servers of the project config: `(name, command line the user saw)`; a
    /// server whose spec no longer has that command line is not approved.
    ApproveServers(Vec<(String, String)>),
    /// List a server's resources and templates; reply with [`Event::Resources`].
    LoadResources(String),
    /// `/subscribe` (`on`) or `/unsubscribe` a server's resource.
    Subscribe {
        /// The server's name.
        server: String,
        /// The resource's URI.
        uri: String,
        /// Subscribe (`true`) or unsubscribe.
        on: bool,
    },
    /// List a server's prompts; reply with [`Event::Prompts`].
    LoadPrompts(String),
    /// Ask for values of a prompt's argument (`completion/complete`); reply with
    /// [`Event::Completion`].
    CompleteArgument {
        /// The input when Tab was pressed.
        input: String,
        /// The server's name.
        server: String,
        /// The prompt's name on it.
        prompt: String,
        /// The argument being typed.
        argument: String,
        /// What is typed of its value.
        value: String,
        /// The other arguments given.
        context: BTreeMap<String, String>,
    },
    /// Ask for values of a resource template's variable (`completion/complete` with
    /// `ref/resource`) for an `@server:uri` mention; reply with [`Event::MentionCompleted`].
    CompleteTemplate {
        /// The input when Tab was pressed.
        input: String,
        /// The server's name.
        server: String,
        /// The template's URI.
        template: String,
        /// The variable being typed.
        variable: String,
        /// What is typed of its value.
        value: String,
        /// The mention up to the value (`@server:` and the template's text before it).
        head: String,
        /// The template's text after the variable.
        tail: String,
    },
    /// Get a prompt's messages; reply with [`Event::PromptGot`].
    GetPrompt {
        /// The server's name.
        server: String,
        /// The prompt's name on it.
        name: String,
        /// Its arguments.
        arguments: BTreeMap<String, String>,
    },
    /// Keep the value the user gave for a VS Code input (in the private inputs file), then
    /// reload.
    SaveInput {
        /// The config file that needs it.
        file: std::path::PathBuf,
        /// The input's id.
        id: String,
        /// The value.
        value: String,
    },
}

/// Which modal is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modal {
    /// `/mcp`: every server at a glance.
    Overview(super::overview::OverviewState),
    /// `/mcp NAME`, or Enter in the overview: one server.
    Panel(PanelState),
    /// `/trace`.
    Trace(TraceView),
    /// `/help`.
    Help,
    /// The trust screen: the project config's unapproved servers, with what they would run.
    Trust(TrustView),
    /// A VS Code input (`${input:ID}`) asked for.
    Input(InputView),
    /// `/resume` without an id: the saved conversations to pick from.
    Resume(super::resume::ResumePicker),
    /// `/permissions`: the rules in force.
    Permissions(super::permissions::PermissionsView),
}

/// The whole TUI state.
#[derive(Debug)]
pub struct State {
    /// The transcript.
    pub transcript: Vec<Entry>,
    /// The model settings (prices, context windows), when a model is configured.
    pub settings: Option<std::sync::Arc<harness9_agent::model::settings::Settings>>,
    /// The bare model name in use (for prices and windows).
    pub model_id: Option<String>,
    /// Tokens so far by model name: (input, of which cached, output).
    pub usage: BTreeMap<String, (u64, u64, u64)>,
    /// The saved conversation's id.
    pub session_id: Option<String>,
    /// Tools the user turned off for this session (`/tools off NAME`).
    pub disabled_tools: std::collections::BTreeSet<String>,
    /// Servers the config marks `"disabled": true`: not running, shown dim in the bar.
    pub disabled: Vec<String>,
    /// The candidates of an ambiguous Tab, shown until the next key.
    pub popup: Option<Vec<(String, String)>>,
    /// The spinner's frame while busy (advanced by the actor's clock).
    pub spinner: usize,
    /// Seconds the running turn has taken so far (set by the actor's clock).
    pub busy_secs: u64,
    /// Input tokens of the last model request (the context in use), once there was one.
    pub context_used: Option<u64>,
    /// The model's context window, when the settings know it.
    pub context_window: Option<u64>,
    /// The MCP tools the last model request carried and deferred (tool search), once there
    /// was one.
    pub tools_offered: Option<harness9_agent::toolsearch::ToolsOffered>,
    /// Tool calls waiting for the user's yes or no, the first one shown.
    pub approvals: std::collections::VecDeque<Approval>,
    /// Servers' questions waiting for the user, the first one shown (after tool approvals).
    pub asks: std::collections::VecDeque<PendingAsk>,
    /// Lines scrolled back from the bottom.
    pub scroll_back: usize,
    /// The input line.
    pub input: String,
    /// Cursor position in `input`, in chars.
    pub cursor: usize,
    /// Submitted lines, oldest first.
    pub history: Vec<String>,
    /// Position while browsing history.
    pub history_pos: Option<usize>,
    /// Latest server statuses.
    pub servers: StatusSnapshot,
    /// Latest tool table.
    pub tools: Arc<Vec<ToolEntry>>,
    /// Per-server layout of `tools` for the panel.
    pub layout: BTreeMap<String, ToolLayout>,
    /// The open modal.
    pub modal: Option<Modal>,
    /// Traced messages.
    pub trace: TraceBuf,
    /// The model in use (`anthropic claude-...`), if one is configured.
    pub model: Option<String>,
    /// How to configure a model, shown when none is.
    pub model_help: String,
    /// A turn is running.
    pub busy: bool,
    /// The running turn was asked to stop (Esc or Ctrl+C); the next Ctrl+C quits.
    pub cancelling: bool,
    /// The config file's display path.
    pub config_path: String,
    /// Servers that come from another file than `config_path` (the user's), with that file.
    pub sources: BTreeMap<String, String>,
    /// Terminal width and height.
    pub size: (u16, u16),
    /// Next call id.
    pub next_call: u64,
    /// Quit was asked.
    pub quitting: bool,
    /// The engine's tool lines show their arguments and results (Ctrl+O toggles).
    pub expand_tools: bool,
    /// The engine's call ids -> transcript call ids.
    pub engine_calls: BTreeMap<String, u64>,
    /// `/panic` is allowed (`HARNESS9_DEBUG_PANIC=1`).
    pub debug_panic: bool,
    /// Configured env and header values: `/trace` shows them as `[redacted]`.
    pub secrets: Vec<String>,
    /// Unapproved servers (name, command line) the trust screen has shown: it opens by itself
    /// only for new ones (a declined server does not ask again until its command line changes
    /// or it was approved in between).
    pub trust_seen: std::collections::BTreeSet<(String, String)>,
    /// Each server's log lines and resources, for the panel.
    pub extras: BTreeMap<String, super::server_view::ServerExtras>,
    /// Every connected server's prompts, as slash commands.
    pub prompts: super::prompts::PromptTable,
    /// VS Code inputs waiting to be asked for.
    pub inputs_pending: std::collections::VecDeque<harness9_app::input_vars::InputPrompt>,
    /// Inputs asked for this session (config file, id): never asked again.
    pub inputs_asked: std::collections::BTreeSet<(std::path::PathBuf, String)>,
    /// The time of the event being handled (set by the actor before each [`update`]; tests
    /// set it): a new question ignores keys for a moment (`guard`).
    pub now: std::time::Instant,
    /// The question keys go to, since when it takes them, its highlighted choice.
    pub guard: Option<super::guard::Guard>,
}

impl State {
    /// Adds one model call's tokens to the model in use (`/cost`, `/status`).
    pub fn count_usage(&mut self, usage: &harness9_agent::model::Usage) {
        let model = self.model_id.clone().unwrap_or_default();
        let u = self.usage.entry(model).or_default();
        u.0 += usage.input_tokens;
        u.1 += usage.cached_input_tokens;
        u.2 += usage.output_tokens;
    }

    /// A fresh state.
    pub fn new(config_path: String, model: Option<String>, model_help: String) -> Self {
        State {
            transcript: Vec::new(),
            context_used: None,
            context_window: None,
            tools_offered: None,
            spinner: 0,
            busy_secs: 0,
            popup: None,
            disabled: Vec::new(),
            settings: None,
            model_id: None,
            usage: BTreeMap::new(),
            session_id: None,
            disabled_tools: Default::default(),
            scroll_back: 0,
            input: String::new(),
            cursor: 0,
            history: Vec::new(),
            history_pos: None,
            servers: StatusSnapshot::default(),
            tools: Arc::new(Vec::new()),
            layout: BTreeMap::new(),
            modal: None,
            trace: TraceBuf::default(),
            model,
            model_help,
            busy: false,
            cancelling: false,
            approvals: Default::default(),
            asks: Default::default(),
            config_path,
            sources: BTreeMap::new(),
            size: (80, 24),
            next_call: 1,
            quitting: false,
            expand_tools: false,
            engine_calls: BTreeMap::new(),
            debug_panic: false,
            secrets: Vec::new(),
            trust_seen: Default::default(),
            extras: BTreeMap::new(),
            prompts: Default::default(),
            inputs_pending: Default::default(),
            inputs_asked: Default::default(),
            now: std::time::Instant::now(),
            guard: None,
        }
    }
}

/// Applies one event; returns what the actor must do. A question that came to the front
/// starts its grace (`guard`).
pub fn update(state: &mut State, event: Event) -> Vec<Effect> {
    let effects = route(state, event);
    super::guard::refresh(state);
    effects
}

/// Applies one event.
fn route(state: &mut State, event: Event) -> Vec<Effect> {
    match event {
        Event::Key(key) => {
            let effects = key_event(state, key);
            // A closed modal makes room for an input waiting to be asked for.
            super::input_vars::open_next(state);
            effects
        }
        Event::ApprovalAsked(a) => asked(state, a),
        Event::Asked(a) => super::elicit::asked(state, a),
        Event::AskWithdrawn(key) => {
            super::elicit::withdrawn(state, key);
            Vec::new()
        }
        Event::CallProgress {
            id,
            progress,
            total,
            message,
        } => {
            super::transcript::call_progress(state, id, progress, total, message);
            Vec::new()
        }
        Event::Paste(text) => {
            // Not into a question that just opened.
            if state.guard.is_some() && super::guard::swallow(state) {
                return Vec::new();
            }
            match &mut state.modal {
                None if state.asks.is_empty() && state.approvals.is_empty() => paste(state, &text),
                // A pasted token: its first line.
                Some(Modal::Input(v)) => v
                    .value
                    .push_str(text.lines().next().unwrap_or_default().trim_end()),
                _ => {}
            }
            Vec::new()
        }
        Event::Resize(w, h) => {
            state.size = (w, h);
            Vec::new()
        }
        Event::Status(s) => {
            state.servers = s;
            super::panel::status_changed(state);
            super::trust::status_changed(state);
            let mut effects = super::server_view::status_changed(state);
            effects.extend(super::prompts::status_changed(state));
            effects
        }
        Event::ServerNotice(n) => {
            if n.kind == harness9_actors::messages::NoticeKind::PromptsChanged {
                return super::prompts::changed(state, &n.server);
            }
            super::server_view::notice(state, n)
        }
        Event::Prompts { server, result } => {
            super::prompts::loaded(state, server, result);
            Vec::new()
        }
        Event::PromptGot { name, result } => super::prompts::got(state, &name, result),
        Event::Completion {
            input,
            argument,
            values,
        } => {
            super::prompts::completed(state, &input, &argument, values);
            Vec::new()
        }
        Event::MentionCompleted {
            input,
            head,
            tail,
            values,
        } => {
            super::mentions::completed(state, &input, &head, &tail, values);
            Vec::new()
        }
        Event::Resources { server, result } => {
            super::server_view::loaded(state, server, result);
            Vec::new()
        }
        Event::Tools(t) => {
            state.set_tools(t);
            Vec::new()
        }
        Event::Trace(r) => {
            state.trace.push(r);
            Vec::new()
        }
        Event::CallDone {
            id,
            output,
            is_error,
            elapsed,
        } => {
            finish_call(state, id, &output, is_error, elapsed);
            Vec::new()
        }
        Event::Engine(e) => {
            engine_event(state, e);
            Vec::new()
        }
        Event::TurnDone(r) => {
            // Normally empty by now: a finished turn asks nothing more.
            let stale = decline_all(state);
            state.busy = false;
            state.cancelling = false;
            state.engine_calls.clear();
            match r {
                Ok(summary) => state.note(Entry::Info(summary)),
                Err(e) => state.note(Entry::Error(e)),
            }
            stale
        }
        Event::Notice { error, text } => {
            state.note(if error {
                Entry::Error(text)
            } else {
                Entry::Info(text)
            });
            Vec::new()
        }
        Event::ConfigWarnings(warnings) => {
            super::transcript::config_warnings(state, warnings);
            Vec::new()
        }
        Event::Permissions(rules) => {
            super::permissions::open(state, rules);
            Vec::new()
        }
        Event::SessionsListed(lines) => {
            super::resume::open(state, lines);
            Vec::new()
        }
        Event::ModelSwitched {
            model,
            model_id,
            context_window,
            settings,
        } => {
            state.note(Entry::Info(format!("the next turn uses {model}")));
            state.model = Some(model);
            state.model_id = Some(model_id);
            state.context_window = context_window;
            state.settings = Some(settings);
            Vec::new()
        }
        Event::Resumed {
            session_id,
            entries,
        } => {
            state.session_id = Some(session_id);
            state.transcript = entries;
            state.scroll_back = 0;
            Vec::new()
        }
        Event::CompactDone(r) => {
            match r {
                Ok(c) => {
                    state.context_used = Some(c.tokens_after as u64);
                    state.count_usage(&c.usage);
                    state.note(Entry::Info(format!(
                        "compacted {} messages into a summary (~{} -> ~{} tokens)",
                        c.replaced, c.tokens_before, c.tokens_after
                    )))
                }
                Err(e) => state.note(Entry::Error(e)),
            }
            Vec::new()
        }
        Event::Tick(busy) => {
            match busy {
                Some(secs) => {
                    state.spinner = state.spinner.wrapping_add(1);
                    state.busy_secs = secs;
                }
                None => state.busy_secs = 0,
            }
            Vec::new()
        }
        Event::ConfigReloaded {
            secrets,
            sources,
            disabled,
            inputs,
        } => {
            state.disabled = disabled;
            state.secrets = secrets;
            state.set_sources(sources);
            super::input_vars::inputs_needed(state, inputs);
            Vec::new()
        }
        Event::TurnNotStarted => {
            state.busy = false;
            Vec::new()
        }
    }
}

/// A key press: to the question waiting for an answer, else the open modal, else the input.
fn key_event(state: &mut State, key: KeyEvent) -> Vec<Effect> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        // From anywhere: the first Ctrl+C stops a running turn (declining what waits
        // for an answer), any other one quits.
        if state.busy && !state.cancelling {
            state.cancelling = true;
            state.note(Entry::Info(
                "cancelling the turn; Ctrl+C again quits".to_owned(),
            ));
            let mut effects = decline_all(state);
            effects.extend(super::elicit::cancel_all(state));
            effects.push(Effect::CancelTurn);
            return effects;
        }
        // A half-typed draft in the input is cleared first (kept in the history, so ↑ brings
        // it back); the next Ctrl+C quits.
        if state.modal.is_none() && !state.input.trim().is_empty() {
            let draft = std::mem::take(&mut state.input);
            if state.history.last() != Some(&draft) {
                state.history.push(draft);
            }
            state.cursor = 0;
            state.history_pos = None;
            state.note(Entry::Info(
                "draft cleared (↑ brings it back); Ctrl+C again quits".to_owned(),
            ));
            return Vec::new();
        }
        state.quitting = true;
        return vec![Effect::Quit];
    }
    // Keys in flight when a question opened answer nothing (and it waits for a pause).
    if super::guard::swallow(state) {
        return Vec::new();
    }
    if !state.approvals.is_empty() {
        return approval_key(state, key);
    }
    if !state.asks.is_empty() {
        return super::elicit::ask_key(state, key);
    }
    match state.modal.take() {
        Some(Modal::Overview(o)) => super::overview::key(state, o, key),
        Some(Modal::Panel(p)) => panel_key(state, p, key),
        Some(Modal::Trace(t)) => trace_key(state, t, key),
        Some(Modal::Help) => help_key(state, key),
        Some(Modal::Trust(t)) => trust_key(state, t, key),
        Some(Modal::Input(v)) => input_key(state, v, key),
        Some(Modal::Resume(p)) => super::resume::key(state, p, key),
        Some(Modal::Permissions(p)) => super::permissions::key(state, p, key),
        None => session_key(state, key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{key_event as key, typed};

    #[test]
    fn ctrl_c_clears_a_draft_first_and_quits_the_second_time() {
        let ctrl_c = || Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        let mut s = State::new("x".into(), None, String::new());
        typed(&mut s, "half a thought");
        assert_eq!(update(&mut s, ctrl_c()), vec![]);
        assert!(s.input.is_empty() && !s.quitting);
        update(&mut s, key(KeyCode::Up));
        assert_eq!(
            s.input, "half a thought",
            "the draft comes back from the history"
        );
        s.input.clear();
        s.cursor = 0;
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::Quit]);
    }

    #[test]
    fn ctrl_c_cancels_a_running_turn_first_and_quits_the_second_time() {
        let ctrl_c = || Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        update(&mut s, key(KeyCode::Enter));
        // Even from a modal.
        typed(&mut s, "/help");
        update(&mut s, key(KeyCode::Enter));
        assert!(s.modal.is_some());
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::CancelTurn]);
        assert!(!s.quitting);
        assert!(
            matches!(s.transcript.last(), Some(Entry::Info(t)) if t.contains("Ctrl+C again quits"))
        );
        // The turn is still winding down: this one quits.
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::Quit]);

        // Once the cancelled turn has ended, the next turn gets its own first Ctrl+C.
        let mut s = State::new("x".into(), Some("m".into()), String::new());
        typed(&mut s, "go");
        update(&mut s, key(KeyCode::Enter));
        assert_eq!(update(&mut s, key(KeyCode::Esc)), vec![Effect::CancelTurn]);
        update(
            &mut s,
            Event::TurnDone(Err("the turn was cancelled".into())),
        );
        assert!(!s.busy);
        typed(&mut s, "again");
        update(&mut s, key(KeyCode::Enter));
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::CancelTurn]);
        // With nothing running, Ctrl+C quits at once.
        update(
            &mut s,
            Event::TurnDone(Err("the turn was cancelled".into())),
        );
        assert_eq!(update(&mut s, ctrl_c()), vec![Effect::Quit]);
    }
}
