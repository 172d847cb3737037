//! `@server:uri` in the input: Tab completes a server that offers resources, then its resources'
//! URIs and templates; inside a template's variable the server completes its value
//! (`completion/complete` with `ref/resource`, one variable per template); on Enter each mention's resource is read and
//! its contents attached to the prompt (text as is, cut at [`MAX_ATTACHED`] bytes; a png, jpeg,
//! gif or webp image of at most [`MAX_IMAGE`] bytes as an image after the text; other binary
//! contents summarised).

use harness9_actors::messages::ServerStatus;
use harness9_actors::protocol::types::ReadResourceResult;

use super::state::{Effect, Entry, State};
use harness9_agent::builtins::resources::contents_text;
use harness9_agent::model::Block;

/// Mentions read for one prompt at most.
pub const MAX_MENTIONS: usize = 8;
/// Bytes of one resource's text attached at most.
pub const MAX_ATTACHED: usize = 64 * 1024;
/// Base64 bytes of one image attached at most (providers refuse larger ones).
pub const MAX_IMAGE: usize = 5 * 1024 * 1024;

/// Whether a resource part is an image that goes to the model as an image.
fn attachable(c: &harness9_actors::protocol::types::ResourceContents) -> bool {
    c.text.is_none()
        && c.blob.as_ref().is_some_and(|b| b.len() <= MAX_IMAGE)
        && c.mime_type
            .as_deref()
            .is_some_and(|m| harness9_agent::model::model_image_type(m).is_some())
}

/// The images of `reads` that follow the prompt's text (see [`attach`]).
pub fn attached_images(
    reads: &[(String, String, Result<ReadResourceResult, String>)],
) -> Vec<Block> {
    reads
        .iter()
        .filter_map(|(_, _, r)| r.as_ref().ok())
        .flat_map(|r| r.contents.iter())
        .filter(|c| attachable(c))
        .filter_map(|c| {
            Some(Block::Image {
                mime_type: c.mime_type.clone()?,
                data: c.blob.clone()?,
            })
        })
        .collect()
}

/// The `@server:uri` words of `line` whose server is connected, in order (at most
/// [`MAX_MENTIONS`]).
pub fn mentions(state: &State, line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .filter_map(|w| w.split_once(':'))
        .filter(|(server, uri)| !uri.is_empty() && offers_resources(state, server))
        .map(|(s, u)| (s.to_owned(), u.to_owned()))
        .take(MAX_MENTIONS)
        .collect()
}

/// Whether a connected server says it has resources.
fn offers_resources(state: &State, server: &str) -> bool {
    state.servers.status.get(server).is_some_and(|s| {
        matches!(&s.status, ServerStatus::Connected { info, .. } if info.capabilities.resources.is_some())
    })
}

/// Tab on a word that starts with `@`: the candidates that complete it (whole words), or the
/// load that must come first.
pub(super) fn candidates(state: &mut State, word: &str) -> Result<Vec<String>, Vec<Effect>> {
    let Some(rest) = word.strip_prefix('@') else {
        return Ok(Vec::new());
    };
    let Some((server, uri)) = rest.split_once(':') else {
        let names: Vec<String> = state
            .servers
            .status
            .keys()
            .filter(|s| s.starts_with(rest) && offers_resources(state, s))
            .map(|s| format!("@{s}:"))
            .collect();
        return Ok(names);
    };
    // A server that declared no `resources` capability is never asked for them.
    if !offers_resources(state, server) {
        return Ok(Vec::new());
    }
    match state
        .servers
        .extras
        .get(server)
        .and_then(|e| e.resources.as_ref())
    {
        Some(Ok(list)) => {
            // Into a template's variable: the server completes its value.
            for (template, _) in &list.templates {
                let Some((lit, variable, tail)) = one_variable(template) else {
                    continue;
                };
                let Some(value) = uri.strip_prefix(lit) else {
                    continue;
                };
                if value.contains('/') || (value.is_empty() && !uri.starts_with(lit)) {
                    continue;
                }
                return Err(vec![Effect::CompleteTemplate {
                    input: state.editor.input.clone(),
                    server: server.to_owned(),
                    template: template.clone(),
                    variable: variable.to_owned(),
                    value: value.to_owned(),
                    head: format!("@{server}:{lit}"),
                    tail: tail.to_owned(),
                }]);
            }
            Ok(list
                .resources
                .iter()
                .chain(&list.templates)
                .map(|(u, _)| u)
                .filter(|u| u.starts_with(uri))
                .map(|u| format!("@{server}:{u}"))
                .collect())
        }
        Some(Err(_)) => Ok(Vec::new()),
        None => {
            let extras = state.servers.extras.entry(server.to_owned()).or_default();
            if extras.loading {
                return Err(Vec::new());
            }
            extras.loading = true;
            state.note(Entry::Info(format!(
                "loading the resources of {}; Tab again",
                harness9_base::sanitize::clean_line(server)
            )));
            Err(vec![Effect::LoadResources(server.to_owned())])
        }
    }
}

/// A URI template with one simple variable (`demo://text/{id}`): the text before it, its name
/// and the text after it.
fn one_variable(template: &str) -> Option<(&str, &str, &str)> {
    let (lit, rest) = template.split_once('{')?;
    let (name, tail) = rest.split_once('}')?;
    let simple = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (simple && !tail.contains('{')).then_some((lit, name, tail))
}

/// Values for a template variable came back: one completes the mention, more are offered in
/// the popup; nothing changes if the input changed meanwhile.
pub(super) fn completed(
    state: &mut State,
    input: &str,
    head: &str,
    tail: &str,
    values: Vec<String>,
) {
    if state.editor.input != input {
        return;
    }
    let start = input.rfind(char::is_whitespace).map_or(0, |i| {
        i + input[i..].chars().next().map_or(1, char::len_utf8)
    });
    let before = &input[..start];
    match values.as_slice() {
        [] => state.note(Entry::Info(format!(
            "the server offers no values for {}",
            harness9_base::sanitize::clean_line(head)
        ))),
        [one] => {
            state.editor.input = format!("{before}{head}{one}{tail} ");
            state.editor.cursor = state.editor.input.chars().count();
        }
        many => {
            state.editor.popup = Some(
                many.iter()
                    .take(super::editor::POPUP_MAX)
                    .map(|v| (format!("{head}{v}{tail}"), String::new()))
                    .collect(),
            )
        }
    }
}

/// The prompt with each read resource attached after it.
pub fn attach(
    line: &str,
    reads: &[(String, String, Result<ReadResourceResult, String>)],
) -> String {
    let mut out = line.to_owned();
    for (server, uri, read) in reads {
        out.push_str(&format!(
            "\n\n<resource server=\"{server}\" uri=\"{uri}\">\n"
        ));
        match read {
            Ok(r) => {
                let parts: Vec<String> = r
                    .contents
                    .iter()
                    .map(|c| {
                        if attachable(c) {
                            format!(
                                "[an image, {}: attached after this text]",
                                c.mime_type.as_deref().unwrap_or_default()
                            )
                        } else {
                            contents_text(c)
                        }
                    })
                    .collect();
                let text = parts.join("\n");
                let mut end = text.len().min(MAX_ATTACHED);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                out.push_str(&text[..end]);
                if end < text.len() {
                    out.push_str(&format!(
                        "\n[cut at {MAX_ATTACHED} bytes; read_mcp_resource reads it whole]"
                    ));
                }
            }
            Err(e) => out.push_str(&format!("[could not read it: {e}]")),
        }
        out.push_str("\n</resource>");
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crossterm::event::KeyCode;
    use harness9_actors::messages::{ServerState, ServerStatus};
    use harness9_actors::protocol::types::{
        ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    };

    use super::*;
    use crate::state::{update, Event};
    use crate::tests::support::{connected, key_event as key, typed};

    fn with_resources() -> State {
        let mut ev = connected(1, 5);
        if let ServerStatus::Connected { info, .. } = &mut ev.status {
            info.capabilities = Arc::new(ServerCapabilities {
                resources: Some(serde_json::json!({})),
                ..Default::default()
            });
        }
        let mut s = State::new(".mcp.json".into(), Some("anthropic m".into()), "x".into());
        let snap: BTreeMap<String, ServerState> = [
            ("everything".to_owned(), ev),
            ("plain".to_owned(), connected(1, 5)),
        ]
        .into();
        update(&mut s, Event::Status(Arc::new(snap)));
        s
    }

    #[test]
    fn tab_completes_servers_then_their_resources_and_enter_attaches_them() {
        let mut s = with_resources();
        typed(&mut s, "explain @ev");
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(s.editor.input, "explain @everything:");
        // Not loaded yet: loaded first, then Tab again.
        assert_eq!(
            update(&mut s, key(KeyCode::Tab)),
            vec![Effect::LoadResources("everything".into())]
        );
        let r = |uri: &str| Resource {
            uri: uri.into(),
            name: "n".into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        };
        update(
            &mut s,
            Event::Resources {
                server: "everything".into(),
                result: Ok((
                    vec![
                        r("demo://resource/static/document/features.md"),
                        r("demo://resource/static/document/startup.md"),
                    ],
                    vec![],
                )),
            },
        );
        typed(&mut s, "demo://resource/static/document/f");
        update(&mut s, key(KeyCode::Tab));
        assert_eq!(
            s.editor.input,
            "explain @everything:demo://resource/static/document/features.md "
        );
        let sent = update(&mut s, key(KeyCode::Enter));
        assert_eq!(
            sent,
            vec![Effect::SubmitWithResources {
                prompt: "explain @everything:demo://resource/static/document/features.md".into(),
                mentions: vec![(
                    "everything".into(),
                    "demo://resource/static/document/features.md".into()
                )],
            }]
        );
    }

    #[test]
    fn attached_contents_are_cut_and_failures_said() {
        let big = "x".repeat(MAX_ATTACHED + 10);
        let ok = ReadResourceResult {
            contents: vec![ResourceContents {
                uri: "a://b".into(),
                mime_type: None,
                text: Some(big),
                blob: None,
            }],
            result_type: None,
        };
        let out = attach(
            "look",
            &[
                ("s".into(), "a://b".into(), Ok(ok)),
                ("s".into(), "a://c".into(), Err("gone".into())),
            ],
        );
        assert!(out.starts_with("look\n\n<resource server=\"s\" uri=\"a://b\">\nxxx"));
        assert!(out.contains(&format!("[cut at {MAX_ATTACHED} bytes;")));
        assert!(out.ends_with(
            "<resource server=\"s\" uri=\"a://c\">\n[could not read it: gone]\n</resource>"
        ));
    }

    #[test]
    fn an_image_resource_is_attached_as_an_image_and_other_blobs_summarised() {
        let part = |mime: &str, blob: &str| ResourceContents {
            uri: "a://img".into(),
            mime_type: Some(mime.into()),
            text: None,
            blob: Some(blob.into()),
        };
        let read = ReadResourceResult {
            contents: vec![
                part("image/png", "iVBO"),
                part("application/pdf", "JVBE"),
                part("image/png", &"A".repeat(MAX_IMAGE + 4)),
            ],
            result_type: None,
        };
        let reads = [("s".to_owned(), "a://img".to_owned(), Ok(read))];
        let text = attach("what is it?", &reads);
        assert!(
            text.contains("[an image, image/png: attached after this text]"),
            "{text}"
        );
        assert!(
            text.contains("[binary contents: application/pdf, 3 bytes; not shown]"),
            "{text}"
        );
        assert_eq!(
            attached_images(&reads),
            vec![Block::Image {
                mime_type: "image/png".into(),
                data: "iVBO".into()
            }],
            "only the image within the bound"
        );
    }

    #[test]
    fn a_template_variable_is_completed_by_the_server() {
        use harness9_actors::protocol::types::ResourceTemplate;
        let mut s = with_resources();
        let template = ResourceTemplate {
            uri_template: "demo://text/{id}".into(),
            name: "t".into(),
            title: None,
            description: None,
            mime_type: None,
        };
        update(
            &mut s,
            Event::Resources {
                server: "everything".into(),
                result: Ok((vec![], vec![template])),
            },
        );
        typed(&mut s, "read @everything:demo://text/4");
        let effects = update(&mut s, key(KeyCode::Tab));
        assert!(
            matches!(&effects[..], [Effect::CompleteTemplate { template, variable, value, .. }]
                if template == "demo://text/{id}" && variable == "id" && value == "4"),
            "{effects:?}"
        );
        let input = s.editor.input.clone();
        let done = |values: Vec<&str>| Event::MentionCompleted {
            input: input.clone(),
            head: "@everything:demo://text/".into(),
            tail: String::new(),
            values: values.into_iter().map(str::to_owned).collect(),
        };
        update(&mut s, done(vec!["42"]));
        assert_eq!(s.editor.input, "read @everything:demo://text/42 ");
        s.editor.input = input.clone();
        update(&mut s, done(vec!["41", "42"]));
        assert_eq!(s.editor.popup.as_ref().map(Vec::len), Some(2));
    }
}
