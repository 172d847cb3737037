//! MCP prompts as slash commands: every prompt of a connected server is
//! `/mcp__{server}__{prompt}` (names sanitized like tool names), Tab completes it, its
//! arguments are `name=value` words (or values in the prompt's argument order), and its
//! messages go to the model as the user's input (shown in the transcript when no model is
//! configured). Prompt lists are loaded when a server that offers prompts connects, and again
//! after `notifications/prompts/list_changed`.

use std::collections::BTreeMap;

use harness9_actors::messages::ServerStatus;
use harness9_actors::naming::sanitize;
use harness9_actors::protocol::types::{ContentBlock, GetPromptResult, Prompt};

use super::state::{Effect, Entry, State};
use harness9_agent::builtins::resources::block_text;
use harness9_base::sanitize::clean_line;

/// The most prompts kept per server.
pub const MAX_PROMPTS: usize = 1000;

/// One prompt as a slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    /// `/mcp__{server}__{prompt}`.
    pub command: String,
    /// The prompt's name on its server.
    pub name: String,
    /// Its arguments: name and whether it is required.
    pub arguments: Vec<(String, bool)>,
}

impl PromptCommand {
    /// Its arguments as typed: `name=` followed by `filler`, in brackets when optional.
    pub(super) fn argument_hints(&self, filler: &str) -> String {
        let hints: Vec<String> = self
            .arguments
            .iter()
            .map(|(name, required)| {
                if *required {
                    format!("{name}={filler}")
                } else {
                    format!("[{name}={filler}]")
                }
            })
            .collect();
        hints.join(" ")
    }
}

/// The prompts of every connected server that offers them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptTable {
    /// Each server's prompt commands (`None` while loading).
    pub servers: BTreeMap<String, Option<Vec<PromptCommand>>>,
}

impl PromptTable {
    /// Every prompt command of every server (loaded ones).
    pub(super) fn all(&self) -> impl Iterator<Item = &PromptCommand> {
        self.servers.values().flatten().flatten()
    }

    /// The prompt whose slash command is `command`, with its server.
    pub(super) fn find(&self, command: &str) -> Option<(String, PromptCommand)> {
        self.servers.iter().find_map(|(server, list)| {
            list.iter()
                .flatten()
                .find(|c| c.command == command)
                .map(|c| (server.clone(), c.clone()))
        })
    }
}

/// Every prompt command, for Tab completion.
pub(super) fn commands(state: &State) -> impl Iterator<Item = &str> {
    state.servers.prompts.all().map(|c| c.command.as_str())
}

/// After a status snapshot: a connected server that offers prompts gets its list loaded; one
/// that is gone loses it.
pub(super) fn status_changed(state: &mut State) -> Vec<Effect> {
    let mut effects = Vec::new();
    let servers = state.servers.status.clone();
    state.servers.prompts.servers.retain(|name, _| {
        servers
            .get(name)
            .is_some_and(|s| matches!(s.status, ServerStatus::Connected { .. }))
    });
    for (name, st) in servers.iter() {
        let ServerStatus::Connected { info, .. } = &st.status else {
            continue;
        };
        if info.capabilities.prompts.is_some() && !state.servers.prompts.servers.contains_key(name)
        {
            state.servers.prompts.servers.insert(name.clone(), None);
            effects.push(Effect::LoadPrompts(name.clone()));
        }
    }
    effects
}

/// `notifications/prompts/list_changed`: load the list again.
pub(super) fn changed(state: &mut State, server: &str) -> Vec<Effect> {
    if matches!(state.servers.prompts.servers.get(server), Some(Some(_))) {
        state
            .servers
            .prompts
            .servers
            .insert(server.to_owned(), None);
        return vec![Effect::LoadPrompts(server.to_owned())];
    }
    Vec::new()
}

/// A server's prompt list arrived.
pub(super) fn loaded(state: &mut State, server: String, result: Result<Vec<Prompt>, String>) {
    if !state.servers.prompts.servers.contains_key(&server) {
        return;
    }
    let list = match result {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!(server = %server, "prompts/list failed: {e}");
            Vec::new()
        }
    };
    let prefix = format!("/mcp__{}__", sanitize(&server));
    let commands = list
        .into_iter()
        .take(MAX_PROMPTS)
        .map(|p| PromptCommand {
            command: format!("{prefix}{}", sanitize(&p.name)),
            arguments: p
                .arguments
                .iter()
                .map(|a| (a.name.clone(), a.required))
                .collect(),
            name: p.name,
        })
        .collect();
    state.servers.prompts.servers.insert(server, Some(commands));
}

/// `/mcp__{server}__{prompt} args...`: asks the server for the prompt's messages.
pub(super) fn run(state: &mut State, command: &str, rest: &str) -> Vec<Effect> {
    let found = state.servers.prompts.find(command);
    let Some((server, prompt)) = found else {
        state.note(Entry::Error(format!(
            "unknown command {}; /help lists the commands, Tab completes MCP prompts",
            clean_line(command)
        )));
        return Vec::new();
    };
    let usage = || {
        clean_line(&format!(
            "usage: {} {}",
            prompt.command,
            prompt.argument_hints("…")
        ))
        .into_owned()
    };
    let mut arguments = BTreeMap::new();
    let words: Vec<&str> = rest.split_whitespace().collect();
    if words.iter().all(|w| w.contains('=')) {
        for w in words {
            if let Some((k, v)) = w.split_once('=') {
                arguments.insert(k.to_owned(), v.to_owned());
            }
        }
    } else if words.len() <= prompt.arguments.len() {
        for (w, (name, _)) in words.iter().zip(&prompt.arguments) {
            arguments.insert(name.clone(), (*w).to_owned());
        }
    } else {
        state.note(Entry::Error(usage()));
        return Vec::new();
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|(n, req)| *req && !arguments.contains_key(n))
        .map(|(n, _)| n.as_str())
        .collect();
    if !missing.is_empty() {
        state.note(Entry::Error(format!(
            "{}: missing {}; {}",
            clean_line(&prompt.command),
            clean_line(&missing.join(", ")),
            usage()
        )));
        return Vec::new();
    }
    vec![Effect::GetPrompt {
        server,
        name: prompt.name,
        arguments,
    }]
}

/// A prompt's messages as one input: each message's text, with its role when the prompt has
/// more than one speaker.
pub fn prompt_text(result: &GetPromptResult) -> String {
    let roles: std::collections::BTreeSet<&str> =
        result.messages.iter().map(|m| m.role.as_str()).collect();
    let mut out = Vec::new();
    for m in &result.messages {
        let text = block_text(&m.content);
        if roles.len() > 1 {
            out.push(format!("[{}]\n{text}", m.role));
        } else {
            out.push(text);
        }
    }
    out.join("\n\n")
}

/// The prompt came back: its messages go to the model (or, without one, to the transcript).
pub(super) fn got(
    state: &mut State,
    command: &str,
    result: Result<GetPromptResult, String>,
) -> Vec<Effect> {
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            state.note(Entry::Error(format!("{}: {e}", clean_line(command))));
            return Vec::new();
        }
    };
    let text = prompt_text(&r);
    let attachments = prompt_images(&r);
    if state.model.label.is_none() || state.turn.busy {
        let why = if state.model.label.is_none() {
            "no model is configured"
        } else {
            "a turn is running"
        };
        state.note(Entry::Info(format!(
            "{} ({why}; not sent):\n{text}",
            clean_line(command)
        )));
        return Vec::new();
    }
    state.note(Entry::User(text.clone()));
    state.turn.busy = true;
    if attachments.is_empty() {
        vec![Effect::Submit(text)]
    } else {
        vec![Effect::SubmitWith {
            prompt: text,
            attachments,
        }]
    }
}

/// A prompt's images, which follow its text in the user's message (the text keeps a line
/// for each, where it stood).
pub fn prompt_images(result: &GetPromptResult) -> Vec<harness9_agent::model::Block> {
    result
        .messages
        .iter()
        .filter_map(|m| match &m.content {
            ContentBlock::Image { data, mime_type } => Some(harness9_agent::model::Block::Image {
                mime_type: mime_type.clone(),
                data: data.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Tab in a prompt command's arguments: asks the server (`completion/complete`) for values of
/// the argument being typed (`name=value`, or the next one in order); `None` when the input is
/// not a prompt command with arguments.
pub(super) fn complete_argument(state: &State) -> Option<Vec<Effect>> {
    let input = &state.editor.input;
    let (command, rest) = input.split_once(' ')?;
    let (server, prompt) = state.servers.prompts.find(command)?;
    let words: Vec<&str> = rest.split(' ').collect();
    let (last, before) = words.split_last()?;
    let mut context = BTreeMap::new();
    for (i, w) in before.iter().filter(|w| !w.is_empty()).enumerate() {
        match w.split_once('=') {
            Some((k, v)) => context.insert(k.to_owned(), v.to_owned()),
            None => prompt
                .arguments
                .get(i)
                .and_then(|(n, _)| context.insert(n.clone(), (*w).to_owned())),
        };
    }
    let (argument, value) = match last.split_once('=') {
        Some((k, v)) => (k.to_owned(), v.to_owned()),
        None => {
            // Positional: the first argument not given yet.
            let next = prompt
                .arguments
                .iter()
                .find(|(n, _)| !context.contains_key(n))?;
            (next.0.clone(), (*last).to_owned())
        }
    };
    if !prompt.arguments.iter().any(|(n, _)| *n == argument) {
        return Some(Vec::new());
    }
    Some(vec![Effect::CompleteArgument {
        input: input.clone(),
        server,
        prompt: prompt.name,
        argument,
        value,
        context,
    }])
}

/// Values for the argument being typed came back: one replaces the word (`name=value `), more
/// are listed; nothing changes if the input changed meanwhile.
pub(super) fn completed(state: &mut State, input: &str, argument: &str, values: Vec<String>) {
    if state.editor.input != input {
        return;
    }
    let head = match input.rfind(' ') {
        Some(i) => &input[..=i],
        None => return,
    };
    match values.as_slice() {
        [] => state.note(Entry::Info(format!(
            "no values offered for {}",
            clean_line(argument)
        ))),
        [one] => {
            state.editor.input = format!("{head}{argument}={one} ");
            state.editor.cursor = state.editor.input.chars().count();
        }
        many => {
            // The popup over the input, until the next key.
            state.editor.popup = Some(
                many.iter()
                    .take(super::editor::POPUP_MAX)
                    .map(|v| (format!("{argument}={v}"), String::new()))
                    .collect(),
            );
        }
    }
}
