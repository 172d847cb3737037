//! A call the user makes by hand, from any front end (the TUI's `/call` and its prompts,
//! completions and `@` mentions; `mcp call|read|prompt|complete`): the one check a hand-made
//! tool call passes (it runs unless a deny rule of the user's names it), with the one wording
//! of its refusal, and the sending of each kind of call through the runtime's registry.

use std::future::Future;

use actix::{Addr, Handler, MailboxError};
use harness9_actors::error::{CallError, RequestError};
use harness9_actors::messages::{
    CallTool, Complete, GetPrompt, ReadResource, ServerRequest, ToolEntry,
};
use harness9_actors::protocol::types::{
    CallToolResult, Completion, GetPromptResult, ReadResourceResult,
};
use harness9_actors::ToolRegistry;
use harness9_agent::permissions::{Action, Policy, Reason, ToolFacts};
use serde_json::Value;

/// A hand-made tool call the permissions refuse; its text is what every front end says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the call of \"{tool}\" is refused{}", by_rule(.rule))]
pub struct Refused {
    /// The tool's registered name (`mcp__server__tool`).
    pub tool: String,
    /// The rule that refuses it, as the user wrote it (`deny rule "..."`), when one does.
    pub rule: Option<String>,
}

/// The tail of a refusal naming the rule that refuses it.
fn by_rule(rule: &Option<String>) -> String {
    match rule {
        Some(rule) => format!(" by your {rule}; remove that rule to call it"),
        None => String::new(),
    }
}

/// Checks the user's own call of the tool registered as `name` (`entry` is its row in the
/// registry's table, when the front end has it) with `arguments`: it runs unless the
/// permissions refuse it, which only a deny rule of the user's does.
pub fn check(
    policy: &Policy,
    name: &str,
    entry: Option<&ToolEntry>,
    arguments: Option<&Value>,
) -> Result<(), Refused> {
    let facts = ToolFacts::of(
        name,
        entry.and_then(|e| e.server.as_deref()),
        entry.and_then(|e| e.tool.annotations.as_ref().map(|a| a.get())),
    );
    let verdict = policy.decide_explicit(facts, arguments.unwrap_or(&Value::Null));
    if verdict.action == Action::Run {
        return Ok(());
    }
    let rule = match &verdict.reason {
        Reason::Rule(rule) => Some(rule.describe()),
        _ => None,
    };
    Err(Refused {
        tool: name.to_owned(),
        rule,
    })
}

/// Sends a checked tool call through the registry (its progress, timeout and cancellation are
/// the message's).
pub async fn call_tool(
    registry: &Addr<ToolRegistry>,
    msg: CallTool,
) -> Result<CallToolResult, CallError> {
    ToolRegistry::send(registry, msg).await
}

/// Why a resource, prompt or completion request of the user's got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The registry is gone (the session is closing).
    #[error("the tool registry stopped")]
    Stopped(#[source] MailboxError),
    /// The server refused or failed the request.
    #[error(transparent)]
    Failed(#[from] RequestError),
}

/// Sends one request to a server through the registry: into the registry's mailbox now, the
/// answer awaited by the future returned.
fn request<M>(
    registry: &Addr<ToolRegistry>,
    msg: M,
) -> impl Future<Output = Result<M::Output, SendError>> + 'static
where
    M: ServerRequest + 'static,
    ToolRegistry: Handler<M>,
{
    let sent = registry.send(msg);
    async move { Ok(sent.await.map_err(SendError::Stopped)??) }
}

/// `resources/read` of `uri` on `server`.
pub fn read_resource(
    registry: &Addr<ToolRegistry>,
    server: &str,
    uri: &str,
) -> impl Future<Output = Result<ReadResourceResult, SendError>> + 'static {
    let msg = ReadResource {
        server: server.to_owned(),
        uri: uri.to_owned(),
    };
    request(registry, msg)
}

/// `prompts/get` of a prompt with its arguments.
pub fn get_prompt(
    registry: &Addr<ToolRegistry>,
    msg: GetPrompt,
) -> impl Future<Output = Result<GetPromptResult, SendError>> + 'static {
    request(registry, msg)
}

/// `completion/complete` of one argument's value.
pub fn complete(
    registry: &Addr<ToolRegistry>,
    msg: Complete,
) -> impl Future<Output = Result<Completion, SendError>> + 'static {
    request(registry, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness9_agent::permissions::{Decision, Policy, Rule, Rules, Source};

    #[test]
    fn a_refusal_names_the_tool_and_the_rule_that_refuses_it() {
        let refused = Refused {
            tool: "mcp__f__write".into(),
            rule: Some("deny rule \"mcp__f__write\"".into()),
        };
        assert_eq!(
            refused.to_string(),
            "the call of \"mcp__f__write\" is refused by your deny rule \"mcp__f__write\"; remove that rule to call it"
        );
        let refused = Refused {
            tool: "mcp__f__write".into(),
            rule: None,
        };
        assert_eq!(
            refused.to_string(),
            "the call of \"mcp__f__write\" is refused"
        );
    }

    #[test]
    fn only_a_deny_rule_refuses_the_users_own_call() {
        let policy = Policy::default();
        assert_eq!(check(&policy, "mcp__f__write", None, None), Ok(()));
        let deny = Rule::parse(
            Decision::Deny,
            "mcp__f__write",
            Source::Flag("--disallowed-tools"),
        );
        let policy = Policy {
            rules: Rules::new(deny.into_iter().collect(), Vec::new()),
            ..Policy::default()
        };
        let refused = check(&policy, "mcp__f__write", None, None).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "the call of \"mcp__f__write\" is refused by your deny rule \"mcp__f__write\" (--disallowed-tools); remove that rule to call it"
        );
        assert_eq!(check(&policy, "mcp__f__read", None, None), Ok(()));
    }
}
