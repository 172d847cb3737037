//! `harness9 mcp resources|read|prompts|prompt|complete`: a server's resources, prompts and
//! argument completion, headless.
//! Every server string is printed through the sanitizer (`--json` through `to_json`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use harness9_actors::messages::{
    Complete, CompletionRef, GetPrompt, ListPrompts, ListResourceTemplates, ListResources,
    ServerStatus, StatusSnapshot,
};
use serde_json::{json, Value};

use crate::agent::builtins::resources::{block_text, contents_text};
use crate::app::{user_call, Runtime};
use crate::sanitize::{clean_line, clean_text, to_json};

use super::UsageError;

/// `mcp resources <server>`: every resource and template (all pages).
pub async fn resources(rt: &Runtime, server: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let server_name = server.to_owned();
    let list = rt
        .registry
        .send(ListResources {
            server: server_name.clone(),
        })
        .await
        .context("the tool registry stopped")??;
    // A server without templates may refuse the method: that is an empty list.
    let templates = rt
        .registry
        .send(ListResourceTemplates {
            server: server_name,
        })
        .await
        .context("the tool registry stopped")?
        .unwrap_or_default();
    if as_json {
        say!(
            "{}",
            to_json(
                &json!({ "resources": list, "resourceTemplates": templates }),
                true
            )?
        );
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "server \"{}\": {} resources, {} templates",
        clean_line(server),
        list.len(),
        templates.len()
    );
    for r in &list {
        let mime = r.mime_type.as_deref().unwrap_or("-");
        say!(
            "{}  {}  {}",
            clean_line(&r.uri),
            clean_line(&r.name),
            clean_line(mime)
        );
        if let Some(d) = &r.description {
            say!("  {}", clean_line(d));
        }
    }
    if !templates.is_empty() {
        say!("\ntemplates:");
        for t in &templates {
            say!("{}  {}", clean_line(&t.uri_template), clean_line(&t.name));
            if let Some(d) = &t.description {
                say!("  {}", clean_line(d));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp read <server> <uri>`: the contents; blobs summarised, or every part written to
/// `--out` (text as is, blobs decoded).
pub async fn read(
    rt: &Runtime,
    server: &str,
    uri: &str,
    out: Option<&Path>,
    as_json: bool,
    watch: usize,
) -> anyhow::Result<ExitCode> {
    let result = read_once(rt, server, uri).await?;
    if let Some(path) = out {
        let written = write_contents(&result, uri, path)?;
        say!("wrote {written} bytes to {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if watch == 0 {
        print_read(&result, uri, as_json, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    let what = Watch {
        server,
        uri,
        as_json,
        times: watch,
    };
    watch_changes(rt, what, &result).await
}

/// One `resources/read` of `uri` on `server`.
async fn read_once(
    rt: &Runtime,
    server: &str,
    uri: &str,
) -> anyhow::Result<harness9_actors::protocol::types::ReadResourceResult> {
    user_call::read_resource(&rt.registry, server, uri)
        .await
        .map_err(anyhow::Error::from)
}

/// `--out`: every part of `result` written to `path` (text as is, blobs decoded) piece by
/// piece to a new private temp file, then renamed over `path`: nothing is written through a
/// symlink there. The bytes written.
fn write_contents(
    result: &harness9_actors::protocol::types::ReadResourceResult,
    uri: &str,
    path: &Path,
) -> anyhow::Result<u64> {
    use std::io::Write as _;
    let mut problem = None;
    let mut written = 0u64;
    crate::app::private_fs::replace_with(path, 0o600, |f| {
        let mut w = std::io::BufWriter::new(&mut *f);
        for c in &result.contents {
            match (&c.text, &c.blob) {
                (Some(t), _) => w.write_all(t.as_bytes())?,
                (None, Some(b)) => {
                    if let Err(e) =
                        crate::agent::builtins::resources::decode_base64_into(b.trim(), &mut w)
                    {
                        problem = Some(e.clone());
                        return Err(std::io::Error::other(e));
                    }
                }
                _ => {}
            }
        }
        w.flush()?;
        drop(w);
        written = f.metadata()?.len();
        Ok(())
    })
    .map_err(|e| match problem.take() {
        Some(p) => anyhow::anyhow!("the blob of {uri}: {p}"),
        None => anyhow::anyhow!("cannot write {}: {e}", path.display()),
    })?;
    Ok(written)
}

/// What `mcp read --watch N` watches.
struct Watch<'a> {
    server: &'a str,
    uri: &'a str,
    as_json: bool,
    /// How many changes to print.
    times: usize,
}

/// `--watch N`: subscribe, and read and print again on each of the next N changes (each
/// result one JSON line with --json). Notices come through a bounded channel.
async fn watch_changes(
    rt: &Runtime,
    what: Watch<'_>,
    first: &harness9_actors::protocol::types::ReadResourceResult,
) -> anyhow::Result<ExitCode> {
    let Watch {
        server,
        uri,
        as_json,
        times: watch,
    } = what;
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let tap = actix::Actor::start(NoticeTap(tx));
    rt.supervisor
        .send(harness9_actors::messages::SubscribeNotices(tap.recipient()))
        .await
        .context("the supervisor stopped")?;
    print_read(first, uri, as_json, true)?;
    rt.registry
        .send(harness9_actors::messages::SubscribeResource {
            server: server.to_owned(),
            uri: uri.to_owned(),
            on: true,
        })
        .await
        .context("the tool registry stopped")??;
    let mut status = rt.status.clone();
    let gone = |snap: &harness9_actors::messages::StatusSnapshot| {
        !snap.get(server).is_some_and(|s| {
            matches!(
                s.status,
                harness9_actors::messages::ServerStatus::Connected { .. }
            )
        })
    };
    let mut seen = 0;
    while seen < watch {
        let notice = tokio::select! {
            n = rx.recv() => n,
            changed = status.changed() => {
                if changed.is_err() || gone(&status.borrow()) {
                    bail!("server \"{server}\" is no longer connected; stopped watching {uri}");
                }
                continue;
            }
            _ = super::interrupted() => {
                eprintln!("[mcp] interrupted");
                return Ok(ExitCode::from(130));
            }
        };
        let Some(n) = notice else {
            bail!("server \"{server}\" went away while watching {uri}");
        };
        let changed = matches!(&n.kind,
            harness9_actors::messages::NoticeKind::ResourceUpdated { uri: u } if u == uri);
        if n.server != server || !changed {
            continue;
        }
        seen += 1;
        if !as_json {
            say!("--- changed ({seen} of {watch})");
        }
        print_read(&read_once(rt, server, uri).await?, uri, as_json, true)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Forwards server notices into a channel (a full channel loses them).
struct NoticeTap(tokio::sync::mpsc::Sender<harness9_actors::messages::ServerNotice>);

impl actix::Actor for NoticeTap {
    type Context = actix::Context<Self>;
}

impl actix::Handler<harness9_actors::messages::ServerNotice> for NoticeTap {
    type Result = ();

    fn handle(&mut self, n: harness9_actors::messages::ServerNotice, _: &mut Self::Context) {
        let _ = self.0.try_send(n);
    }
}

/// Prints one `resources/read` result: its text (cleaned), or `--json` (one line when
/// watching, pretty otherwise).
fn print_read(
    result: &harness9_actors::protocol::types::ReadResourceResult,
    uri: &str,
    as_json: bool,
    watching: bool,
) -> anyhow::Result<()> {
    if as_json {
        say!("{}", to_json(result, !watching)?);
        return Ok(());
    }
    for (i, c) in result.contents.iter().enumerate() {
        if result.contents.len() > 1 || c.uri != uri {
            if i > 0 {
                say!("");
            }
            say!(
                "--- {} ({})",
                clean_line(&c.uri),
                clean_line(c.mime_type.as_deref().unwrap_or("-"))
            );
        }
        say!("{}", clean_text(&contents_text(c)));
    }
    Ok(())
}

/// `mcp prompts <server>`: every prompt with its arguments.
pub async fn prompts(rt: &Runtime, server: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let list = rt
        .registry
        .send(ListPrompts {
            server: server.to_owned(),
        })
        .await
        .context("the tool registry stopped")??;
    if as_json {
        say!("{}", to_json(&list, true)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!("server \"{}\": {} prompts", clean_line(server), list.len());
    for p in &list {
        let args: Vec<String> = p
            .arguments
            .iter()
            .map(|a| {
                if a.required {
                    clean_line(&a.name).into_owned()
                } else {
                    format!("[{}]", clean_line(&a.name))
                }
            })
            .collect();
        say!("\n{} {}", clean_line(&p.name), args.join(" "));
        if let Some(d) = &p.description {
            say!("  {}", clean_line(d));
        }
        for a in &p.arguments {
            if let Some(d) = &a.description {
                say!("  {}: {}", clean_line(&a.name), clean_line(d));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A prompt's arguments from `--args`: an object whose values are strings (numbers and
/// booleans are taken as their JSON text).
fn prompt_args(text: Option<&str>) -> anyhow::Result<BTreeMap<String, String>> {
    let Some(text) = text else {
        return Ok(BTreeMap::new());
    };
    string_values("--args", &super::mcp::args_object(text)?)
}

/// The values of a JSON object of arguments, as strings (numbers and booleans as their JSON
/// text); any other value is a usage error naming `flag`.
fn string_values(flag: &str, v: &Value) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (k, v) in v.as_object().into_iter().flatten() {
        let s = match v {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => v.to_string(),
            _ => {
                return Err(UsageError(format!(
                    "{flag}: a prompt's arguments are strings; \"{k}\" is not"
                ))
                .into())
            }
        };
        out.insert(k.clone(), s);
    }
    Ok(out)
}

/// `mcp prompt <server> <name>`: the prompt's messages.
pub async fn prompt(
    rt: &Runtime,
    server: &str,
    name: &str,
    args: Option<&str>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let arguments = prompt_args(args)?;
    let msg = GetPrompt {
        server: server.to_owned(),
        name: name.to_owned(),
        arguments,
    };
    let result = user_call::get_prompt(&rt.registry, msg).await?;
    if as_json {
        say!("{}", to_json(&result, true)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(d) = &result.description {
        say!("{}\n", clean_line(d));
    }
    for m in &result.messages {
        say!("[{}]", clean_line(&m.role));
        say!("{}", clean_text(&block_text(&m.content)));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `mcp complete` asks for.
pub struct Ask<'a> {
    /// The prompt or resource template.
    pub reference: CompletionRef,
    /// The argument's (or template variable's) name.
    pub argument: &'a str,
    /// What is typed so far.
    pub value: &'a str,
    /// `--context`: the arguments already chosen, a JSON object.
    pub context: Option<&'a str>,
}

/// `mcp complete <server>`: the values the server offers (`completion/complete`), one per
/// line, or the result object with `--json`. A server that did not declare the `completions`
/// capability is not asked.
pub async fn complete(
    rt: &Runtime,
    snap: &StatusSnapshot,
    server: &str,
    ask: Ask<'_>,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let context = match ask.context {
        None => BTreeMap::new(),
        Some(text) => {
            let v: Value = serde_json::from_str(text).map_err(|e| {
                UsageError(format!("--context is not valid JSON ({e}): {text:.200}"))
            })?;
            if !v.is_object() {
                return Err(UsageError(
                    "--context must be a JSON object, like '{\"department\": \"Sales\"}'"
                        .to_owned(),
                )
                .into());
            }
            string_values("--context", &v)?
        }
    };
    let offers = snap.get(server).is_some_and(|s| {
        matches!(&s.status, ServerStatus::Connected { info, .. }
            if info.capabilities.completions.is_some())
    });
    if !offers {
        bail!(
            "server \"{}\" does not offer completions (it did not declare the completions capability)",
            clean_line(server)
        );
    }
    let msg = Complete {
        server: server.to_owned(),
        reference: ask.reference,
        argument: ask.argument.to_owned(),
        value: ask.value.to_owned(),
        context,
    };
    let completion = user_call::complete(&rt.registry, msg).await?;
    if as_json {
        say!("{}", to_json(&json!({ "completion": completion }), true)?);
        return Ok(ExitCode::SUCCESS);
    }
    for v in &completion.values {
        say!("{}", clean_line(v));
    }
    if completion.has_more {
        let total = completion
            .total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        eprintln!(
            "[mcp] {}{total} values shown; the server has more",
            completion.values.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
