//! The TUI's state and its pure update function: every key, status snapshot, tool list, trace
//! record and tool result is an [`Event`]; [`update`] changes the [`State`] and returns the
//! [`Effect`]s the `Tui` actor carries out. Nothing here touches a terminal or an actor.
//!
//! [`update`] only routes: a key goes to the question waiting for an answer (a tool approval,
//! then a server's question), else to the open
//! modal's feature (panel, trace, help, trust), else to the input; other events go to the feature
//! they are about. Each feature module (`editor`, `transcript`, `commands`, `approvals`, `panel`,
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
use super::approvals::{asked, decline_all};
pub use super::commands::{HelpView, COMMANDS};
use super::editor::paste;
pub use super::editor::MAX_INPUT_ROWS;
pub use super::elicit::{AskAnswer, AskKind, PendingAsk};
pub use super::input_vars::InputView;
pub use super::panel::{tool_lines, PanelState, ToolLayout};
pub use super::trace::{TraceBuf, TraceRow, TraceView, TRACE_MESSAGE_MAX, TRACE_PER_SERVER};
use super::transcript::{engine_event, finish_call};
pub use super::transcript::{entries_of, CallState, Entry, RESULT_LINES};
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
    /// Every connected server's skills, for `/skills`.
    Skills(
        Vec<(
            String,
            std::sync::Arc<harness9_actors::protocol::skills::SkillListing>,
        )>,
    ),
    /// The saved conversations' listing, for the `/resume` picker.
    SessionsListed(harness9_app::stores::conversations::Listing),
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
        inputs: Vec<harness9_app::config::input_vars::InputPrompt>,
    },
    /// A turn could not start (no engine).
    TurnNotStarted,
}

/// What the actor must do after an update.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Stop every server and exit.
    Quit,
    /// `tasks/cancel` of a running task (`/tasks`' `c`), through the registry.
    CancelTask {
        /// The server's name in `.mcp.json`.
        server: String,
        /// The server's id of the task.
        task_id: String,
    },
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
    /// `/skills`: the servers' skills; reply with [`Event::Skills`].
    ListSkills,
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
    Help(super::commands::HelpView),
    /// The trust screen: the project config's unapproved servers, with what they would run.
    Trust(TrustView),
    /// A VS Code input (`${input:ID}`) asked for.
    Input(InputView),
    /// `/resume` without an id: the saved conversations to pick from.
    Resume(super::resume::ResumePicker),
    /// `/permissions`: the rules in force.
    Permissions(super::permissions::PermissionsView),
    /// `/tasks`: the running tasks, with cancel.
    Tasks(super::tasks::TasksView),
}

/// A modal: one screen over the session with its own keys and drawing. Its module implements
/// this; [`Modal`] only names which one is open.
pub trait ModalView: Sized {
    /// Handles a key. The modal was taken out of [`State::modal`]; it puts itself back to stay
    /// open.
    fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect>;
    /// Draws it over the session, in `area`.
    fn draw(&self, state: &State, frame: &mut ratatui::Frame, area: ratatui::layout::Rect);
}

/// Calls `$body` with the open modal's [`ModalView`], whichever it is.
macro_rules! each_modal {
    ($modal:expr, $m:ident => $body:expr) => {
        match $modal {
            Modal::Overview($m) => $body,
            Modal::Panel($m) => $body,
            Modal::Trace($m) => $body,
            Modal::Help($m) => $body,
            Modal::Trust($m) => $body,
            Modal::Input($m) => $body,
            Modal::Resume($m) => $body,
            Modal::Permissions($m) => $body,
            Modal::Tasks($m) => $body,
        }
    };
}

impl Modal {
    /// The open modal's keys.
    pub fn key(self, state: &mut State, key: KeyEvent) -> Vec<Effect> {
        each_modal!(self, m => m.key(state, key))
    }

    /// The open modal's drawing.
    pub fn draw(&self, state: &State, frame: &mut ratatui::Frame, area: ratatui::layout::Rect) {
        each_modal!(self, m => m.draw(state, frame, area))
    }
}

/// The whole TUI state: one sub-state per feature, each owned (and its fields documented) by
/// the module that handles it, plus what the screen as a whole needs.
#[derive(Debug)]
pub struct State {
    /// The input box: its text, cursor, history and Tab candidates (`editor`).
    pub editor: super::editor::EditorState,
    /// The conversation as shown: entries, scrolling, call ids (`transcript`).
    pub transcript: super::transcript::TranscriptState,
    /// Questions waiting for the user: tool calls, servers' questions, VS Code inputs, the
    /// trust screen's memory, and which question takes keys (`guard`).
    pub questions: super::guard::Questions,
    /// What the runtime reports of the servers: statuses, tools, logs, prompts
    /// (`server_view`).
    pub servers: super::server_view::ServersState,
    /// Traced messages, for `/trace` (`trace`).
    pub trace: TraceBuf,
    /// The model in use and what it has cost (`tool_sizes` draws it).
    pub model: ModelState,
    /// The running turn, if any.
    pub turn: TurnState,
    /// The tasks the running turn follows (`tasks`).
    pub tasks: super::tasks::TasksState,
    /// The open modal.
    pub modal: Option<Modal>,
    /// Terminal width and height.
    pub size: (u16, u16),
    /// Quit was asked.
    pub quitting: bool,
    /// `/panic` is allowed (`HARNESS9_DEBUG_PANIC=1`).
    pub debug_panic: bool,
    /// The user's own settings file as hints name it (`your own settings file (PATH)`):
    /// where `allow` rules work, which a project's `harness9.toml` may not add.
    pub own_settings: String,
    /// The time of the event being handled (set by the actor before each [`update`]; tests
    /// set it): a new question ignores keys for a moment (`guard`).
    pub now: std::time::Instant,
}

/// The model in use, the conversation it is in and what it has cost.
#[derive(Debug, Default)]
pub struct ModelState {
    /// The model settings (prices, context windows), when a model is configured.
    pub settings: Option<std::sync::Arc<harness9_agent::model::settings::Settings>>,
    /// The bare model name in use (for prices and windows).
    pub id: Option<String>,
    /// The model in use as shown (`anthropic claude-...`), if one is configured.
    pub label: Option<String>,
    /// How to configure a model, shown when none is.
    pub help: String,
    /// Tokens so far by model name: (input, of which cached, output).
    pub usage: BTreeMap<String, (u64, u64, u64)>,
    /// The saved conversation's id.
    pub session_id: Option<String>,
    /// Input tokens of the last model request (the context in use), once there was one.
    pub context_used: Option<u64>,
    /// The model's context window, when the settings know it.
    pub context_window: Option<u64>,
    /// The MCP tools the last model request carried and deferred (tool search), once there
    /// was one.
    pub tools_offered: Option<harness9_agent::toolsearch::ToolsOffered>,
    /// Tools the user turned off for this session (`/tools off NAME`).
    pub disabled_tools: std::collections::BTreeSet<String>,
}

/// The running turn.
#[derive(Debug, Default)]
pub struct TurnState {
    /// A turn is running.
    pub busy: bool,
    /// The running turn was asked to stop (Esc or Ctrl+C); the next Ctrl+C quits.
    pub cancelling: bool,
    /// The spinner's frame while busy (advanced by the actor's clock).
    pub spinner: usize,
    /// Seconds the running turn has taken so far (set by the actor's clock).
    pub busy_secs: u64,
}

impl State {
    /// Adds one model call's tokens to the model in use (`/cost`, `/status`).
    pub fn count_usage(&mut self, usage: &harness9_agent::model::Usage) {
        let model = self.model.id.clone().unwrap_or_default();
        let u = self.model.usage.entry(model).or_default();
        u.0 += usage.input_tokens;
        u.1 += usage.cached_input_tokens;
        u.2 += usage.output_tokens;
    }

    /// A fresh state.
    pub fn new(config_path: String, model: Option<String>, model_help: String) -> Self {
        State {
            editor: Default::default(),
            transcript: Default::default(),
            questions: Default::default(),
            servers: super::server_view::ServersState::new(config_path),
            trace: TraceBuf::default(),
            model: ModelState {
                label: model,
                help: model_help,
                ..Default::default()
            },
            turn: TurnState::default(),
            tasks: Default::default(),
            modal: None,
            size: (80, 24),
            quitting: false,
            debug_panic: false,
            own_settings: harness9_agent::model::settings::own_settings(None),
            now: std::time::Instant::now(),
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

/// Applies one event: to the feature it is about, by kind (the input, the servers, the turn,
/// the session).
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
        Event::Paste(text) => {
            pasted(state, &text);
            Vec::new()
        }
        Event::Status(s) => status(state, s),
        Event::ServerNotice(n) => {
            if n.kind == harness9_actors::messages::NoticeKind::PromptsChanged {
                return super::prompts::changed(state, &n.server);
            }
            super::server_view::notice(state, n)
        }
        Event::PromptGot { name, result } => super::prompts::got(state, &name, result),
        Event::TurnDone(r) => turn_done(state, r),
        e @ (Event::AskWithdrawn(_)
        | Event::Prompts { .. }
        | Event::Completion { .. }
        | Event::MentionCompleted { .. }
        | Event::Resources { .. }
        | Event::Tools(_)
        | Event::Trace(_)) => {
            server_reply(state, e);
            Vec::new()
        }
        e @ (Event::CallProgress { .. }
        | Event::CallDone { .. }
        | Event::Engine(_)
        | Event::CompactDone(_)
        | Event::Tick(_)
        | Event::TurnNotStarted) => {
            turn_event(state, e);
            Vec::new()
        }
        e @ (Event::Resize(..)
        | Event::Skills(_)
        | Event::Notice { .. }
        | Event::ConfigWarnings(_)
        | Event::Permissions(_)
        | Event::SessionsListed(_)
        | Event::ModelSwitched { .. }
        | Event::Resumed { .. }
        | Event::ConfigReloaded { .. }) => {
            session_event(state, e);
            Vec::new()
        }
    }
}

/// Pasted text: into the input, or a pasted token's first line into the input prompt; never
/// into a question that just opened.
fn pasted(state: &mut State, text: &str) {
    if state.questions.guard.is_some() && super::guard::swallow(state) {
        return;
    }
    match &mut state.modal {
        None if state.questions.asks.is_empty() && state.questions.approvals.is_empty() => {
            paste(state, text)
        }
        // A pasted token: its first line.
        Some(Modal::Input(v)) => v
            .value
            .push_str(text.lines().next().unwrap_or_default().trim_end()),
        _ => {}
    }
}

/// A new status snapshot: every feature that shows the servers follows it.
fn status(state: &mut State, s: StatusSnapshot) -> Vec<Effect> {
    state.servers.status = s;
    super::panel::status_changed(state);
    super::trust::status_changed(state);
    let mut effects = super::server_view::status_changed(state);
    effects.extend(super::prompts::status_changed(state));
    effects
}

/// What the servers and the registry answered or sent (the kinds `route` sends here).
fn server_reply(state: &mut State, event: Event) {
    match event {
        Event::AskWithdrawn(key) => super::elicit::withdrawn(state, key),
        Event::Prompts { server, result } => super::prompts::loaded(state, server, result),
        Event::Completion {
            input,
            argument,
            values,
        } => super::prompts::completed(state, &input, &argument, values),
        Event::MentionCompleted {
            input,
            head,
            tail,
            values,
        } => super::mentions::completed(state, &input, &head, &tail, values),
        Event::Resources { server, result } => super::server_view::loaded(state, server, result),
        Event::Tools(t) => state.set_tools(t),
        Event::Trace(r) => state.trace.push(r),
        _ => {}
    }
}

/// What a turn or a `/call` did (the kinds `route` sends here).
fn turn_event(state: &mut State, event: Event) {
    match event {
        Event::CallProgress {
            id,
            progress,
            total,
            message,
        } => super::transcript::call_progress(state, id, progress, total, message),
        Event::CallDone {
            id,
            output,
            is_error,
            elapsed,
        } => finish_call(state, id, &output, is_error, elapsed),
        Event::Engine(e) => engine_event(state, e),
        Event::CompactDone(r) => compacted(state, r),
        Event::Tick(busy) => match busy {
            Some(secs) => {
                state.turn.spinner = state.turn.spinner.wrapping_add(1);
                state.turn.busy_secs = secs;
            }
            None => state.turn.busy_secs = 0,
        },
        Event::TurnNotStarted => state.turn.busy = false,
        _ => {}
    }
}

/// The turn ended: what still waits for an answer is declined, its summary or error noted.
fn turn_done(state: &mut State, r: Result<String, String>) -> Vec<Effect> {
    // Normally empty by now: a finished turn asks nothing more.
    let stale = decline_all(state);
    state.turn.busy = false;
    state.turn.cancelling = false;
    state.transcript.engine_calls.clear();
    super::tasks::turn_ended(state);
    match r {
        Ok(summary) => state.note(Entry::Info(summary)),
        Err(e) => state.note(Entry::Error(e)),
    }
    stale
}

/// `/compact` done: the context's new size and the summary's cost, or why it failed.
fn compacted(state: &mut State, r: Result<harness9_agent::engine::compact::Compacted, String>) {
    match r {
        Ok(c) => {
            state.model.context_used = Some(c.tokens_after as u64);
            state.count_usage(&c.usage);
            state.note(Entry::Info(format!(
                "compacted {} messages into a summary (~{} -> ~{} tokens)",
                c.replaced, c.tokens_before, c.tokens_after
            )))
        }
        Err(e) => state.note(Entry::Error(e)),
    }
}

/// The session's own events: the terminal, notices, lists to show, the model, a resumed
/// conversation, a reloaded config (the kinds `route` sends here).
fn session_event(state: &mut State, event: Event) {
    match event {
        Event::Resize(w, h) => state.size = (w, h),
        Event::Skills(listings) => {
            state.note(Entry::Info(super::commands::skills_text(&listings)));
        }
        Event::Notice { error, text } => state.note(if error {
            Entry::Error(text)
        } else {
            Entry::Info(text)
        }),
        Event::ConfigWarnings(warnings) => super::transcript::config_warnings(state, warnings),
        Event::Permissions(rules) => super::permissions::open(state, rules),
        Event::SessionsListed(lines) => super::resume::open(state, lines),
        Event::ModelSwitched {
            model,
            model_id,
            context_window,
            settings,
        } => {
            state.note(Entry::Info(format!("the next turn uses {model}")));
            state.model.label = Some(model);
            state.model.id = Some(model_id);
            state.model.context_window = context_window;
            state.model.settings = Some(settings);
        }
        Event::Resumed {
            session_id,
            entries,
        } => {
            state.model.session_id = Some(session_id);
            state.transcript.entries = entries;
            state.transcript.scroll_back = 0;
        }
        Event::ConfigReloaded {
            secrets,
            sources,
            disabled,
            inputs,
        } => {
            state.servers.disabled = disabled;
            state.trace.secrets = secrets;
            state.set_sources(sources);
            super::input_vars::inputs_needed(state, inputs);
        }
        _ => {}
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
        if state.turn.busy && !state.turn.cancelling {
            return cancel_turn(state);
        }
        // A half-typed draft in the input is cleared first (kept in the history, so ↑ brings
        // it back); the next Ctrl+C quits.
        if state.modal.is_none() && !state.editor.input.trim().is_empty() {
            let draft = std::mem::take(&mut state.editor.input);
            if state.editor.history.last() != Some(&draft) {
                state.editor.history.push(draft);
            }
            state.editor.cursor = 0;
            state.editor.history_pos = None;
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
    if !state.questions.approvals.is_empty() {
        return super::approvals::key(state, key);
    }
    if !state.questions.asks.is_empty() {
        return super::elicit::key(state, key);
    }
    match state.modal.take() {
        Some(modal) => modal.key(state, key),
        None => super::editor::key(state, key),
    }
}

/// Cancels the running turn (Ctrl+C anywhere; Esc in the input or at a tool question): the
/// tool questions waiting go without an answer (the engine's cancelled turn ends them, so
/// none runs and the model is not asked again), servers' questions are cancelled.
pub(super) fn cancel_turn(state: &mut State) -> Vec<Effect> {
    if state.turn.busy && !state.turn.cancelling {
        state.turn.cancelling = true;
        state.note(Entry::Info(
            "cancelling the turn; Ctrl+C again quits".to_owned(),
        ));
    }
    super::approvals::cancel_all(state);
    let mut effects = super::elicit::cancel_all(state);
    effects.push(Effect::CancelTurn);
    effects
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::support::{key_event as key, typed};

    #[test]
    fn ctrl_c_clears_a_draft_first_and_quits_the_second_time() {
        let ctrl_c = || Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        let mut s = State::new("x".into(), None, String::new());
        typed(&mut s, "half a thought");
        assert_eq!(update(&mut s, ctrl_c()), vec![]);
        assert!(s.editor.input.is_empty() && !s.quitting);
        update(&mut s, key(KeyCode::Up));
        assert_eq!(
            s.editor.input, "half a thought",
            "the draft comes back from the history"
        );
        s.editor.input.clear();
        s.editor.cursor = 0;
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
            matches!(s.transcript.entries.last(), Some(Entry::Info(t)) if t.contains("Ctrl+C again quits"))
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
        assert!(!s.turn.busy);
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
