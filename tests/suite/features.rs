//! A server's features beyond tools, against real servers: server-everything's resources,
//! templates, subscriptions, prompts and completions over stdio and Streamable HTTP; its log
//! messages at the configured `logLevel`; its `instructions` in the model's system prompt;
//! roots (configured, changed on reload, `false`) with server-everything (over stdio and
//! Streamable HTTP) and the reference filesystem server; and `structuredContent` checked
//! against a tool's `outputSchema`.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::prelude::*;
use harness9::app::Runtime;
use harness9_actors::messages::{
    Complete, CompletionRef, GetInstructions, GetPrompt, ListPrompts, ListResourceTemplates,
    ListResources, NoticeKind, ReadResource, Reconcile, ServerNotice, ServerStatus,
    SubscribeNotices, SubscribeResource,
};
use harness9_actors::{Roots, ServerSpec, ToolRegistry};
use serde_json::json;
use tokio::sync::mpsc;

use super::common::*;
use super::http::{everything_http, free_port, http_spec, python_http};

const T: Duration = Duration::from_secs(90);
const CONNECT: Duration = Duration::from_secs(30);
const NOTICE: Duration = Duration::from_secs(20);

/// Forwards every server notice into a channel.
struct Tap(mpsc::UnboundedSender<ServerNotice>);

impl Actor for Tap {
    type Context = Context<Self>;
}

impl Handler<ServerNotice> for Tap {
    type Result = ();

    fn handle(&mut self, n: ServerNotice, _ctx: &mut Context<Self>) {
        let _ = self.0.send(n);
    }
}

fn tap(rt: &Runtime) -> mpsc::UnboundedReceiver<ServerNotice> {
    let (tx, rx) = mpsc::unbounded_channel();
    rt.supervisor
        .do_send(SubscribeNotices(Tap(tx).start().recipient()));
    rx
}

/// The next notice of `server` that `pred` accepts (panics after [`NOTICE`]).
async fn notice(
    rx: &mut mpsc::UnboundedReceiver<ServerNotice>,
    server: &str,
    pred: impl Fn(&NoticeKind) -> bool,
) -> NoticeKind {
    let wait = async {
        while let Some(n) = rx.recv().await {
            if n.server == server && pred(&n.kind) {
                return Some(n.kind);
            }
        }
        None
    };
    match tokio::time::timeout(NOTICE, wait).await {
        Ok(Some(k)) => k,
        _ => panic!("no matching notice from {server:?} within {NOTICE:?}"),
    }
}

fn is_log(k: &NoticeKind, needle: &str) -> bool {
    matches!(k, NoticeKind::Log { text, .. } if text.contains(needle))
}

/// Everything server-everything offers beyond tools, through the registry.
async fn everything_features(rt: &Runtime, server: &str) {
    let s = || server.to_owned();
    let mut notices = tap(rt);
    let resources = rt
        .registry
        .send(ListResources { server: s() })
        .await
        .unwrap()
        .unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r.uri == "demo://resource/static/document/features.md"
                && r.mime_type.as_deref() == Some("text/markdown")),
        "{resources:?}"
    );
    let templates = rt
        .registry
        .send(ListResourceTemplates { server: s() })
        .await
        .unwrap()
        .unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"),
        "{templates:?}"
    );
    let read = |uri: &str| {
        rt.registry.send(ReadResource {
            server: s(),
            uri: uri.to_owned(),
        })
    };
    let text = read("demo://resource/dynamic/text/7")
        .await
        .unwrap()
        .unwrap();
    assert!(
        text.contents[0]
            .text
            .as_deref()
            .unwrap()
            .starts_with("Resource 7:"),
        "{text:?}"
    );
    let blob = read("demo://resource/dynamic/blob/7")
        .await
        .unwrap()
        .unwrap();
    assert!(blob.contents[0]
        .blob
        .as_deref()
        .is_some_and(|b| !b.is_empty()));
    let missing = read("demo://nothing/here").await.unwrap();
    assert!(missing.is_err(), "{missing:?}");

    let prompts = rt
        .registry
        .send(ListPrompts { server: s() })
        .await
        .unwrap()
        .unwrap();
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    assert!(args
        .arguments
        .iter()
        .any(|a| a.name == "city" && a.required));
    let got = rt
        .registry
        .send(GetPrompt {
            server: s(),
            name: "args-prompt".into(),
            arguments: BTreeMap::from([("city".into(), "Paris".into())]),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.messages[0].role, "user");
    assert!(
        format!("{:?}", got.messages[0].content).contains("Paris"),
        "{got:?}"
    );
    let complete = |argument: &str, value: &str, context: &[(&str, &str)]| {
        rt.registry.send(Complete {
            server: s(),
            reference: CompletionRef::Prompt("completable-prompt".into()),
            argument: argument.into(),
            value: value.into(),
            context: context
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    };
    let c = complete("department", "S", &[]).await.unwrap().unwrap();
    assert_eq!(c.values, ["Sales", "Support"]);
    let c = complete("name", "", &[("department", "Engineering")])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.values, ["Alice", "Bob", "Charlie"]);

    // Subscriptions: updates arrive for the subscribed resource.
    let uri = "demo://resource/dynamic/text/1";
    rt.registry
        .send(SubscribeResource {
            server: s(),
            uri: uri.into(),
            on: true,
        })
        .await
        .unwrap()
        .unwrap();
    call_text(
        rt,
        &format!("mcp__{server}__toggle_subscriber_updates"),
        json!({}),
    )
    .await;
    let got = notice(&mut notices, server, |k| {
        matches!(k, NoticeKind::ResourceUpdated { .. })
    })
    .await;
    assert_eq!(got, NoticeKind::ResourceUpdated { uri: uri.into() });

    // Log messages at the configured level (debug: all of them).
    call_text(
        rt,
        &format!("mcp__{server}__toggle_simulated_logging"),
        json!({}),
    )
    .await;
    notice(&mut notices, server, |k| is_log(k, "-level message")).await;

    // The server's instructions reach the registry, for the system prompt.
    let instructions = rt.registry.send(GetInstructions).await.unwrap();
    assert!(
        instructions
            .iter()
            .any(|(n, t)| n == server && !t.is_empty()),
        "{instructions:?}"
    );
}

#[test]
fn resources_prompts_completion_logging_over_stdio() {
    run(T, || async {
        let mut spec = everything("ev");
        spec.log_level = Some("debug".into());
        let rt = start(vec![spec], fast_policy());
        let pid = pid_of(&connected(&rt, "ev", CONNECT).await);
        everything_features(&rt, "ev").await;
        shutdown(rt, &[pid]).await;
    });
}

#[test]
fn resources_prompts_completion_logging_over_streamable_http() {
    let port = free_port();
    let _server = everything_http(port);
    run(T, || async move {
        let mut spec = http_spec("evh", format!("http://127.0.0.1:{port}/mcp"), false);
        spec.log_level = Some("debug".into());
        let rt = start(vec![spec], fast_policy());
        connected(&rt, "evh", CONNECT).await;
        everything_features(&rt, "evh").await;
        shutdown(rt, &[]).await;
    });
}

fn roots_text(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("URI: "))
        .map(str::to_owned)
        .collect()
}

/// Configured roots reach server-everything as `spec` (its `roots` replaced); a reload that
/// changes only the roots tells the server (list_changed) without restarting it.
async fn configured_roots(mut spec: ServerSpec) {
    let name = spec.name.clone();
    let a = temp_path("root a");
    let b = temp_path("root-b");
    spec.roots = Roots::Paths(vec![a.clone(), b.clone()]);
    let rt = start(vec![spec.clone()], fast_policy());
    let mut notices = tap(&rt);
    let first = connected(&rt, &name, CONNECT).await;
    let tool = format!("mcp__{name}__get_roots_list");
    let enc = |p: &std::path::Path| format!("file://{}", p.display()).replace(' ', "%20");
    let got = call_text(&rt, &tool, json!({})).await;
    assert_eq!(roots_text(&got), [enc(&a), enc(&b)], "{got}");

    // Only the roots change: the server is told (list_changed), not restarted.
    spec.roots = Roots::Paths(vec![b.clone()]);
    let report = rt
        .supervisor
        .send(Reconcile { specs: vec![spec] })
        .await
        .unwrap();
    assert_eq!(report.roots_changed, [name.as_str()]);
    notice(&mut notices, &name, |k| {
        is_log(k, "Roots updated: 1 root(s)")
    })
    .await;
    let got = call_text(&rt, &tool, json!({})).await;
    assert_eq!(roots_text(&got), [enc(&b)], "{got}");
    // The same connection (its handshake facts are the ones of the first connect), and for
    // stdio the same process.
    let now = snapshot(&rt)[name.as_str()].status.clone();
    let (ServerStatus::Connected { info: i1, .. }, ServerStatus::Connected { info: i2, .. }) =
        (&first, &now)
    else {
        panic!("{first:?} / {now:?}");
    };
    assert!(
        std::sync::Arc::ptr_eq(&i1.capabilities, &i2.capabilities),
        "reconnected"
    );
    assert_eq!(i1.pid, i2.pid);
    let pids: Vec<i32> = i1.pid.map(|p| p as i32).into_iter().collect();
    shutdown(rt, &pids).await;
}

#[test]
fn configured_roots_reach_the_server_and_a_reload_changes_them_in_place() {
    run(T, || async { configured_roots(everything("roots")).await });
}

#[test]
fn configured_roots_reach_an_http_server_and_a_reload_changes_them_in_place() {
    let port = free_port();
    let _server = everything_http(port);
    run(T, || async move {
        configured_roots(http_spec(
            "rootsh",
            format!("http://127.0.0.1:{port}/mcp"),
            false,
        ))
        .await
    });
}

/// The reference filesystem server with `dir` on its command line.
fn filesystem(name: &str, dir: &std::path::Path) -> ServerSpec {
    let js =
        repo().join("tests/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        js.exists(),
        "server-filesystem not found: run scripts/setup.sh"
    );
    ServerSpec::stdio(
        name,
        "node",
        vec![js.display().to_string(), dir.display().to_string()],
    )
}

#[test]
fn the_filesystem_server_serves_its_argument_without_roots_and_the_roots_with_them() {
    run(T, || async {
        let arg = temp_path("fs-arg");
        let root = temp_path("fs-root");
        for d in [&arg, &root] {
            std::fs::create_dir_all(d).unwrap();
        }
        let arg = arg.canonicalize().unwrap();
        let root = root.canonicalize().unwrap();
        let mut off = filesystem("fsoff", &arg);
        off.roots = Roots::Off;
        let mut on = filesystem("fson", &arg);
        on.roots = Roots::Paths(vec![root.clone()]);
        let rt = start(vec![off, on], fast_policy());
        let mut pids = Vec::new();
        for s in ["fsoff", "fson"] {
            pids.push(pid_of(&connected(&rt, s, CONNECT).await));
        }
        let got = call_text(&rt, "mcp__fsoff__list_allowed_directories", json!({})).await;
        assert!(got.contains(&arg.display().to_string()), "{got}");
        // The server fetches the roots after `initialized`; a call may come first: wait for
        // the roots to take over (each answer is the server's state at that moment).
        let want = root.display().to_string();
        let mut got = String::new();
        for _ in 0..200 {
            got = call_text(&rt, "mcp__fson__list_allowed_directories", json!({})).await;
            if got.contains(&want) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            got.contains(&want) && !got.contains(&arg.display().to_string()),
            "{got}"
        );
        shutdown(rt, &pids).await;
    });
}

#[test]
fn structured_content_is_checked_against_the_output_schema() {
    run(T, || async {
        let rt = start(vec![fixture("fx", &[])], fast_policy());
        let pid = pid_of(&connected(&rt, "fx", CONNECT).await);
        let call = |tool: &str, args| {
            ToolRegistry::call(&rt.registry, format!("mcp__fx__{tool}"), Some(args), None)
        };
        let ok = call("shaped", json!({"n": 3})).await.unwrap();
        assert_eq!(ok.schema_error, None);
        let bad = call("shaped", json!({"n": "three"})).await.unwrap();
        let why = bad.schema_error.clone().unwrap();
        assert!(why.contains("at /n") && why.contains("integer"), "{why}");
        // Kept whole, and reported with the result.
        assert_eq!(bad.structured_content, Some(json!({"n": "three"})));
        assert!(bad
            .text()
            .contains("does not match the tool's outputSchema"));
        let none = call("shaped", json!({"n": 1, "omit": true})).await.unwrap();
        assert!(none
            .schema_error
            .unwrap()
            .contains("has no structuredContent"));
        // A remote $ref is never fetched: the schema is reported as unusable.
        let remote = call("remote_ref", json!({})).await.unwrap();
        assert!(
            remote
                .schema_error
                .as_deref()
                .is_some_and(|e| e.contains("not a usable JSON Schema")),
            "{remote:?}"
        );
        shutdown(rt, &[pid]).await;
    });
}

/// `mcp resources|read|prompts|prompt|complete` against server-everything over stdio (`e`)
/// and Streamable HTTP (`h`); `mcp complete` against a server without the completions
/// capability (the fixture) fails, naming it.
#[test]
fn headless_resource_and_prompt_commands_over_stdio_and_http() {
    let port = free_port();
    let _server = everything_http(port);
    let dir = project_with(
        "features-cli",
        json!({"e": stdio_json(everything("x")),
               "h": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")},
               "fx": stdio_json(fixture("fx", &[]))}),
    );
    let h9_code = |args: &[&str]| {
        let mut cmd = harness9_in(&dir);
        cmd.args(args);
        let out = output_within(cmd, None, T);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let h9 = |args: &[&str]| {
        let (code, text, err) = h9_code(args);
        assert_eq!(code, Some(0), "{args:?}: {text}\n{err}");
        text
    };
    for s in ["e", "h"] {
        let out = h9(&["mcp", "resources", s]);
        assert!(
            out.starts_with(&format!("server \"{s}\": "))
                && out.contains("demo://resource/static/document/features.md")
                && out.contains("templates:\ndemo://resource/dynamic/text/{resourceId}"),
            "{out}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&h9(&["mcp", "resources", s, "--json"])).unwrap();
        assert!(
            v["resourceTemplates"]
                .as_array()
                .is_some_and(|t| t.len() >= 2),
            "{v}"
        );
        let out = h9(&["mcp", "read", s, "demo://resource/dynamic/text/5"]);
        assert!(out.starts_with("Resource 5:"), "{out}");
        let out = h9(&["mcp", "read", s, "demo://resource/dynamic/blob/5"]);
        assert!(out.starts_with("[binary contents: "), "{out}");
        let v: serde_json::Value = serde_json::from_str(&h9(&[
            "mcp",
            "read",
            s,
            "demo://resource/dynamic/blob/5",
            "--json",
        ]))
        .unwrap();
        assert!(v["contents"][0]["blob"].is_string(), "{v}");
        let out = h9(&["mcp", "prompts", s]);
        assert!(out.contains("\nargs-prompt city [state]\n"), "{out}");
        let out = h9(&[
            "mcp",
            "prompt",
            s,
            "args-prompt",
            "--args",
            r#"{"city": "Oslo"}"#,
        ]);
        assert!(out.contains("[user]\n") && out.contains("Oslo"), "{out}");
        let v: serde_json::Value =
            serde_json::from_str(&h9(&["mcp", "prompt", s, "simple-prompt", "--json"])).unwrap();
        assert_eq!(v["messages"][0]["role"], "user", "{v}");

        // Completions: a prompt's argument, narrowed by the context, and a template's variable.
        let complete = ["mcp", "complete", s, "--prompt", "completable-prompt"];
        let out = h9(&[&complete[..], &["--arg", "department", "--value", "S"]].concat());
        assert_eq!(out, "Sales\nSupport\n");
        let ctx = r#"{"department": "Engineering"}"#;
        let out = h9(&[&complete[..], &["--arg", "name", "--context", ctx]].concat());
        assert_eq!(out, "Alice\nBob\nCharlie\n");
        let out = h9(&[&complete[..], &["--arg", "name", "--value", "A"]].concat());
        assert_eq!(out, "", "no department chosen: no names");
        let template = "demo://resource/dynamic/text/{resourceId}";
        let v: serde_json::Value = serde_json::from_str(&h9(&[
            "mcp",
            "complete",
            s,
            "--resource",
            template,
            "--arg",
            "resourceId",
            "--value",
            "42",
            "--json",
        ]))
        .unwrap();
        assert_eq!(v["completion"]["values"], json!(["42"]), "{v}");
    }
    // A server that did not declare completions is not asked: exit 1, naming it (and with
    // --json, the error as JSON on stdout).
    let (code, out, err) = h9_code(&[
        "mcp", "complete", "fx", "--prompt", "p", "--arg", "a", "--json",
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        err.contains("server \"fx\" does not offer completions"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["code"], 1, "{v}");
    // One of --prompt or --resource, exactly.
    let (code, _, err) = h9_code(&["mcp", "complete", "e", "--arg", "a"]);
    assert_eq!(code, Some(2), "{err}");
    // A file for binary contents.
    let file = dir.join("blob.bin");
    let out = h9(&[
        "mcp",
        "read",
        "e",
        "demo://resource/dynamic/blob/5",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(out.starts_with("wrote "), "{out}");
    assert!(std::fs::metadata(&file).unwrap().len() > 0);
    // Saved blobs are private (README: `mcp read --out FILE` writes FILE 0600), even under a
    // permissive umask, and a symlink at FILE is replaced, not written through.
    use std::os::unix::fs::PermissionsExt as _;
    let mode =
        |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "{}", file.display());
    let target = dir.join("target.txt");
    std::fs::write(&target, "keep me").unwrap();
    let linked = dir.join("linked.bin");
    std::os::unix::fs::symlink(&target, &linked).unwrap();
    let out = h9(&[
        "mcp",
        "read",
        "e",
        "demo://resource/dynamic/blob/5",
        "--out",
        linked.to_str().unwrap(),
    ]);
    assert!(out.starts_with("wrote "), "{out}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(!std::fs::symlink_metadata(&linked)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(mode(&linked), 0o600, "{}", linked.display());
}

/// The stateless era (the PyPI `mcp` server in 2026-07-28 mode, over stdio and Streamable
/// HTTP): resources, prompts, the log level in each request's `_meta`, and a resource
/// subscription through the `subscriptions/listen` filter.
#[test]
fn stateless_resources_prompts_log_level_and_subscriptions() {
    let port = free_port();
    let _server = python_http(port);
    run(T, || async move {
        let mut stdio = python("py");
        stdio.log_level = Some("error".into());
        let mut http = http_spec("pyh", format!("http://127.0.0.1:{port}/mcp"), false);
        http.log_level = Some("error".into());
        let rt = start(vec![stdio, http], fast_policy());
        let mut notices = tap(&rt);
        let mut pids = Vec::new();
        for server in ["py", "pyh"] {
            let st = connected(&rt, server, CONNECT).await;
            if server == "py" {
                pids.push(pid_of(&st));
            }
            let s = || server.to_owned();
            let list = rt
                .registry
                .send(ListResources { server: s() })
                .await
                .unwrap()
                .unwrap();
            assert_eq!(list[0].uri, "note://hello", "{list:?}");
            let read = rt
                .registry
                .send(ReadResource {
                    server: s(),
                    uri: "note://hello".into(),
                })
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                read.contents[0].text.as_deref(),
                Some("hello from a resource")
            );
            let got = rt
                .registry
                .send(GetPrompt {
                    server: s(),
                    name: "review".into(),
                    arguments: BTreeMap::from([("code".into(), "x = 1".into())]),
                })
                .await
                .unwrap()
                .unwrap();
            assert!(format!("{:?}", got.messages).contains("Please review: x = 1"));

            // logLevel error: the debug line is not sent, the error line is.
            call_text(&rt, &format!("mcp__{server}__chatty"), json!({})).await;
            let mut seen = Vec::new();
            let wait = async {
                while let Some(n) = notices.recv().await {
                    if n.server != server {
                        continue;
                    }
                    if let NoticeKind::Log { text, .. } = &n.kind {
                        seen.push(text.clone());
                        if text == "chatty error" {
                            return;
                        }
                    }
                }
            };
            tokio::time::timeout(NOTICE, wait)
                .await
                .unwrap_or_else(|_| panic!("{server}: no log line; saw {seen:?}"));
            assert_eq!(seen, ["chatty error"], "{server}");

            // A subscription joins the listen filter; the server's update arrives.
            rt.registry
                .send(SubscribeResource {
                    server: s(),
                    uri: "note://hello".into(),
                    on: true,
                })
                .await
                .unwrap()
                .unwrap();
            // Answered once the server acknowledged the new filter: one touch, one update.
            call_text(&rt, &format!("mcp__{server}__touch"), json!({})).await;
            let got = notice(&mut notices, server, |k| {
                matches!(k, NoticeKind::ResourceUpdated { .. })
            })
            .await;
            let NoticeKind::ResourceUpdated { uri } = got else {
                unreachable!()
            };
            assert_eq!(uri, "note://hello");
        }
        shutdown(rt, &pids).await;
    });
}
