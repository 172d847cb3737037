//! What the `/mcp` panel shows of a server beyond its tools: its log messages
//! (`notifications/message`, the last [`LOG_LINES`] kept per server) and its resources and
//! resource templates (loaded when the panel shows a connected server, again after
//! `notifications/resources/list_changed`). State, events and the header lines the panel draws.

use std::collections::VecDeque;

use harness9_actors::messages::{NoticeKind, ServerNotice, ServerStatus};
use harness9_actors::protocol::types::{Resource, ResourceTemplate};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::state::{Effect, Modal, State};
use super::widgets::DIM;
use harness9_base::sanitize::clean_line;

/// What the runtime reports of the servers, and where their config comes from.
#[derive(Debug)]
pub struct ServersState {
    /// Latest server statuses.
    pub status: harness9_actors::messages::StatusSnapshot,
    /// Latest tool table.
    pub tools: std::sync::Arc<Vec<harness9_actors::messages::ToolEntry>>,
    /// Per-server layout of `tools` for the panel.
    pub layout: std::collections::BTreeMap<std::sync::Arc<str>, super::panel::ToolLayout>,
    /// Servers the config marks `"disabled": true`: not running, shown dim in the bar.
    pub disabled: Vec<String>,
    /// The config file's display path.
    pub config_path: String,
    /// Servers that come from another file than `config_path` (the user's), with that file.
    pub sources: std::collections::BTreeMap<String, String>,
    /// Each server's log lines and resources, for the panel.
    pub extras: std::collections::BTreeMap<String, ServerExtras>,
    /// Every connected server's prompts, as slash commands.
    pub prompts: super::prompts::PromptTable,
}

impl ServersState {
    /// No servers yet; the config at `config_path`.
    pub fn new(config_path: String) -> Self {
        Self {
            status: Default::default(),
            tools: std::sync::Arc::new(Vec::new()),
            layout: Default::default(),
            disabled: Vec::new(),
            config_path,
            sources: Default::default(),
            extras: Default::default(),
            prompts: Default::default(),
        }
    }
}

/// Log lines kept per server.
pub const LOG_LINES: usize = 100;
/// Log lines the panel shows (the newest).
pub const LOG_SHOWN: usize = 8;
/// Resources and templates the panel lists.
pub const RESOURCES_SHOWN: usize = 50;

/// One log message of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its level (`debug` .. `emergency`).
    pub level: String,
    /// The server's logger, if it named one.
    pub logger: Option<String>,
    /// The message (not sanitized: drawn through `clean_line`).
    pub text: String,
}

/// A server's resources as the panel lists them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceList {
    /// `(uri, name)` of each resource.
    pub resources: Vec<(String, String)>,
    /// `(uri template, name)` of each template.
    pub templates: Vec<(String, String)>,
}

/// What the panel knows of one server beyond its status and tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerExtras {
    /// Its newest log messages, oldest first.
    pub logs: VecDeque<LogLine>,
    /// Its resources: `None` until loaded (or after a change), `Err` when the server refused.
    pub resources: Option<Result<ResourceList, String>>,
    /// A load is on its way.
    pub loading: bool,
}

/// A server's resources arrived (for [`super::state::Event::Resources`]).
pub type Loaded = Result<(Vec<Resource>, Vec<ResourceTemplate>), String>;

/// Takes in a server notice: a log line is kept, a resource list change drops the list (and
/// reloads it if the panel shows that server).
pub(super) fn notice(state: &mut State, n: ServerNotice) -> Vec<Effect> {
    let extras = state.servers.extras.entry(n.server.clone()).or_default();
    match n.kind {
        NoticeKind::Log {
            level,
            logger,
            text,
        } => {
            if extras.logs.len() == LOG_LINES {
                extras.logs.pop_front();
            }
            extras.logs.push_back(LogLine {
                level,
                logger,
                text,
            });
            Vec::new()
        }
        NoticeKind::ResourcesChanged => {
            extras.resources = None;
            wanted(state)
        }
        NoticeKind::LoggedIn { scopes } => {
            let scopes = if scopes.is_empty() {
                "none".to_owned()
            } else {
                scopes.join(" ")
            };
            state.note(super::state::Entry::Info(format!(
                "logged in to server \"{}\" (scopes: {}); connecting it",
                harness9_base::sanitize::clean_line(&n.server),
                harness9_base::sanitize::clean_line(&scopes)
            )));
            Vec::new()
        }
        NoticeKind::ResourceUpdated { uri } => {
            state.note(super::state::Entry::Info(format!(
                "{}: resource {} changed",
                harness9_base::sanitize::clean_line(&n.server),
                harness9_base::sanitize::clean_line(&uri)
            )));
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Takes in a server's resource list.
pub(super) fn loaded(state: &mut State, server: String, result: Loaded) {
    let extras = state.servers.extras.entry(server).or_default();
    extras.loading = false;
    extras.resources = Some(result.map(|(r, t)| ResourceList {
        resources: r.into_iter().map(|r| (r.uri, r.name)).collect(),
        templates: t.into_iter().map(|t| (t.uri_template, t.name)).collect(),
    }));
}

/// After a status snapshot: a server that is no longer connected has its list dropped (it is
/// loaded again once it is back).
pub(super) fn status_changed(state: &mut State) -> Vec<Effect> {
    let servers = state.servers.status.clone();
    for (name, extras) in state.servers.extras.iter_mut() {
        let up = servers
            .get(name)
            .is_some_and(|s| matches!(s.status, ServerStatus::Connected { .. }));
        if !up {
            extras.resources = None;
            extras.loading = false;
        }
    }
    wanted(state)
}

/// The load the open panel needs: the selected server's resources, when it is connected,
/// declares the `resources` capability and they are not there yet.
pub(super) fn wanted(state: &mut State) -> Vec<Effect> {
    let Some(Modal::Panel(p)) = &state.modal else {
        return Vec::new();
    };
    let Some(name) = state.server_at(p.selected).map(str::to_owned) else {
        return Vec::new();
    };
    // Only a server that declared the `resources` capability is asked for them.
    let up = state.servers.status.get(&name).is_some_and(|s| {
        matches!(&s.status, ServerStatus::Connected { info, .. } if info.capabilities.resources.is_some())
    });
    let extras = state.servers.extras.entry(name.clone()).or_default();
    if !up || extras.resources.is_some() || extras.loading {
        return Vec::new();
    }
    extras.loading = true;
    vec![Effect::LoadResources(name)]
}

fn level_color(level: &str) -> Color {
    match level {
        "debug" => Color::DarkGray,
        "info" | "notice" => Color::Reset,
        "warning" => Color::Yellow,
        _ => Color::Red,
    }
}

/// The panel's lines for `server`'s log and resources (after its status lines).
pub(super) fn extra_lines(state: &State, server: &str, out: &mut Vec<Line<'static>>) {
    let Some(extras) = state.servers.extras.get(server) else {
        return;
    };
    if !extras.logs.is_empty() {
        let skip = extras.logs.len().saturating_sub(LOG_SHOWN);
        out.push(Line::styled(
            format!(
                "log (newest {} of {}):",
                extras.logs.len() - skip,
                extras.logs.len()
            ),
            DIM,
        ));
        for l in extras.logs.iter().skip(skip) {
            let mut spans = vec![Span::styled(
                format!("  {:<9}", clean_line(&l.level)),
                Style::new().fg(level_color(&l.level)),
            )];
            if let Some(logger) = &l.logger {
                spans.push(Span::styled(format!("{} ", clean_line(logger)), DIM));
            }
            let first = l.text.lines().next().unwrap_or_default();
            spans.push(Span::raw(clean_line(first).into_owned()));
            out.push(Line::from(spans));
        }
    }
    match &extras.resources {
        None if extras.loading => out.push(Line::styled("resources: loading…", DIM)),
        None => {}
        Some(Err(e)) => out.push(Line::styled(format!("resources: {}", clean_line(e)), DIM)),
        Some(Ok(list)) if list.resources.is_empty() && list.templates.is_empty() => {
            out.push(Line::styled("resources: none", DIM))
        }
        Some(Ok(list)) => {
            out.push(Line::styled(
                format!(
                    "resources ({}) and templates ({}):",
                    list.resources.len(),
                    list.templates.len()
                ),
                DIM,
            ));
            let rows = list
                .resources
                .iter()
                .map(|r| (r, ""))
                .chain(list.templates.iter().map(|t| (t, "template ")));
            let total = list.resources.len() + list.templates.len();
            for ((uri, name), kind) in rows.take(RESOURCES_SHOWN) {
                out.push(Line::from(vec![
                    Span::raw(format!("  {kind}{}", clean_line(uri))),
                    Span::styled(format!("  {}", clean_line(name)), DIM),
                ]));
            }
            if total > RESOURCES_SHOWN {
                out.push(Line::styled(
                    format!(
                        "  … {} more (harness9 mcp resources {})",
                        total - RESOURCES_SHOWN,
                        clean_line(server)
                    ),
                    DIM,
                ));
            }
        }
    }
}
