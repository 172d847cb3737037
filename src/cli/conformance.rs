//! `harness9 conformance <URL>`: the client entry point of the official MCP conformance suite
//! (`scripts/conformance.sh`). The suite starts a scenario server and runs this command with its
//! URL appended; the scenario's checks judge what the client sent.
//!
//! The driver does what a user does, with the public commands of this same binary, each a
//! process of its own: it writes a config file (one HTTP server, with an `oauth` entry for the
//! `auth/` scenarios), then runs `harness9 mcp get SERVER --json --config FILE`, and
//! `harness9 mcp call SERVER TOOL --args JSON --elicitation accept-defaults --config FILE` once
//! per tool, with arguments made from its input schema. Whenever a command's output names
//! `harness9 mcp login` (a server that needs a login, or more scopes), it runs
//! `harness9 mcp login SERVER --config FILE` and tries that command once more, as a user does.
//! The browser is `$BROWSER`: the hidden `harness9 conformance-browser`, which follows the
//! authorization redirect. Tokens go to a store of the run's own (`$HARNESS9_OAUTH_STORE`), never
//! the user's. Whatever a scenario expects of the protocol (headers, eras, elicitation,
//! retries, OAuth) must come from the runtime and those commands, never from here.

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{json, Map, Value};

use super::{interrupted, ConformanceArgs};
use crate::app::SessionOptions;
use crate::sanitize::{clean_line, clean_text};

/// The server's name in the written config.
const SERVER: &str = "conformance";

/// The whole run's budget: the suite kills a client after 30 s per scenario.
const RUN_BUDGET: Duration = Duration::from_secs(27);

/// How long the server has to connect: its `startupTimeoutSec`.
const SETTLE_BOUND: Duration = Duration::from_secs(20);

/// Logins one command may be retried after.
const MAX_LOGINS: usize = 3;

/// How much of a command's output is echoed to stderr.
const ECHO_CHARS: usize = 2000;

/// What one public command left.
struct Step {
    ok: bool,
    stdout: String,
    /// Its output names `harness9 mcp login`: the user's cue to log in.
    wants_login: bool,
}

/// The run: its config file, its token store, the binary, the deadline.
struct Driver {
    /// Variables the commands run with (a secret the config names as `${VAR}`).
    env: Vec<(String, String)>,
    exe: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    /// The user's settings file of the run (`--settings`), if the scenario needs one.
    settings: Option<PathBuf>,
    deadline: Instant,
    verbose: bool,
}

impl Driver {
    /// Runs `harness9 ARGS --config FILE` (bounded by the run's deadline; killed past it),
    /// echoing what it printed.
    async fn step(&self, args: &[&str]) -> Step {
        let shown = args.join(" ");
        let Some(left) = self.deadline.checked_duration_since(Instant::now()) else {
            eprintln!(
                "[conformance] out of time; not run: harness9 {}",
                clean_line(&shown)
            );
            return Step {
                ok: false,
                stdout: String::new(),
                wants_login: false,
            };
        };
        eprintln!("[conformance] $ harness9 {}", clean_line(&shown));
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(args)
            .arg("--config")
            .arg(&self.config)
            .args(
                self.settings
                    .iter()
                    .flat_map(|s| [std::ffi::OsStr::new("--settings"), s.as_os_str()]),
            )
            .env("HARNESS9_OAUTH_STORE", self.dir.join("oauth.json"))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(
                "BROWSER",
                format!("{} conformance-browser", self.exe.display()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if self.verbose {
            cmd.arg("-v");
        }
        let out = match tokio::time::timeout(left, cmd.output()).await {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => {
                eprintln!("[conformance] cannot run harness9: {e}");
                return Step {
                    ok: false,
                    stdout: String::new(),
                    wants_login: false,
                };
            }
            Err(_) => {
                eprintln!(
                    "[conformance] out of time; stopped: harness9 {}",
                    clean_line(&shown)
                );
                return Step {
                    ok: false,
                    stdout: String::new(),
                    wants_login: false,
                };
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            if !text.trim().is_empty() {
                let cut: String = text.chars().take(ECHO_CHARS).collect();
                eprintln!("[conformance] {what}: {}", clean_text(cut.trim_end()));
            }
        }
        eprintln!("[conformance] exit {:?}", out.status.code());
        let wants_login = [&stdout, &stderr]
            .iter()
            .any(|t| t.contains(&format!("harness9 mcp login {SERVER}")));
        Step {
            ok: out.status.success(),
            stdout,
            wants_login,
        }
    }

    /// `step`, and while its output asks for a login (at most [`MAX_LOGINS`] times): `mcp
    /// login`, then `step` again, as a user does (a server may ask again: another scope, or
    /// another authorization server).
    async fn step_with_login(&self, args: &[&str]) -> Step {
        let mut last = self.step(args).await;
        for _ in 0..MAX_LOGINS {
            if !last.wants_login || !self.step(&["mcp", "login", SERVER]).await.ok {
                break;
            }
            last = self.step(args).await;
        }
        last
    }
}

/// Runs the conformance driver against the scenario server at `args.url`: exits 1 if the
/// server's tools could not be listed, else 0 (a failed call is only reported on stderr: the
/// scenario's checks are the verdict).
pub async fn run(opts: &SessionOptions, args: &ConformanceArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!(
        "[conformance] scenario {:?} against {}",
        clean_line(&scenario),
        clean_line(&args.url)
    );
    let auth = scenario.starts_with("auth/");
    // The run's config and tokens: a private directory (unpredictable name, 0700, created
    // exclusively) in the shared temp dir, and its files created exclusively, 0600.
    let dir = crate::app::private_fs::session_dir(&std::env::temp_dir())
        .context("cannot create the run's private directory")?;
    let config = dir.join("mcp.json");
    let write = |path: &std::path::Path, text: &str| {
        crate::app::private_fs::create_new(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))
    };
    let mut env = Vec::new();
    let mut settings = None;
    let oauth = match unattended_oauth(&scenario, &dir) {
        Some(u) => {
            for (file, text) in &u.files {
                write(&dir.join(file), text)?;
            }
            if let Some(text) = &u.settings {
                let path = dir.join("config.toml");
                write(&path, text)?;
                settings = Some(path);
            }
            env = u.env;
            Some(u.oauth)
        }
        None => auth.then(context_oauth),
    };
    let text = conformance_config(&args.url, oauth);
    write(&config, &text.to_string())?;
    let driver = Driver {
        env,
        exe: std::env::current_exe().context("cannot find the harness9 binary")?,
        dir: dir.clone(),
        config,
        settings,
        deadline: started + RUN_BUDGET,
        verbose: opts.verbose > 0,
    };
    let out = tokio::select! {
        r = drive(&driver, &scenario) => r,
        _ = interrupted() => {
            eprintln!("[conformance] interrupted");
            ExitCode::from(130)
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("[conformance] done in {} ms", started.elapsed().as_millis());
    Ok(out)
}

/// `mcp get`, then `mcp call` per tool, each with a login when its output asks for one; for a
/// skills scenario, `mcp skills` ([`skills`]).
async fn drive(driver: &Driver, scenario: &str) -> ExitCode {
    let got = driver
        .step_with_login(&["mcp", "get", SERVER, "--json"])
        .await;
    if !got.ok {
        return ExitCode::from(1);
    }
    let tools: Vec<Value> = match serde_json::from_str(&got.stdout) {
        Ok(Value::Array(t)) => t,
        _ => {
            eprintln!("[conformance] `mcp get --json` printed no list of tools");
            return ExitCode::from(1);
        }
    };
    if scenario.starts_with("sep-2640-") {
        return skills(driver, scenario).await;
    }
    for entry in &tools {
        let Some(name) = entry.get("tool").and_then(Value::as_str) else {
            continue;
        };
        let schema = entry
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let arguments = scenario_arguments(scenario, name)
            .or_else(|| echoed_schema(scenario, name, &tools))
            .unwrap_or_else(|| arguments_for(&schema));
        let arguments = arguments.to_string();
        driver
            .step_with_login(&[
                "mcp",
                "call",
                SERVER,
                name,
                "--args",
                &arguments,
                "--elicitation",
                "accept-defaults",
            ])
            .await;
    }
    ExitCode::SUCCESS
}

/// The Skills extension's scenarios, as a user meets skills: `mcp skills list` (which must
/// read no skill's file: `no-prefetch`), then, where the scenario is about loading
/// (`verify-digest`, `-size`, `-frontmatter`), `mcp skills get` of each listed skill, which
/// must refuse a tampered `SKILL.md` and so never go on to the skill's other files.
async fn skills(driver: &Driver, scenario: &str) -> ExitCode {
    let listed = driver
        .step(&["mcp", "skills", "list", SERVER, "--json"])
        .await;
    if !listed.ok {
        return ExitCode::from(1);
    }
    if !scenario.starts_with("sep-2640-client-verify-") {
        return ExitCode::SUCCESS;
    }
    let names: Vec<String> = serde_json::from_str::<Value>(&listed.stdout)
        .ok()
        .and_then(|v| {
            v.get("skills")?.as_array().map(|s| {
                s.iter()
                    .filter_map(|e| e.get("uri").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    for uri in &names {
        // A refusal is the expected outcome here: the scenario's check is the verdict.
        let _ = driver.step(&["mcp", "skills", "get", SERVER, uri]).await;
    }
    ExitCode::SUCCESS
}

/// The config file of the one server at `url`, as a user writes it.
fn conformance_config(url: &str, oauth: Option<Value>) -> Value {
    let mut entry = json!({
        "url": url,
        "startupTimeoutSec": SETTLE_BOUND.as_secs_f64(),
    });
    if let Some(o) = oauth {
        entry["oauth"] = o;
    }
    // The suite says which revision a scenario runs at (MCP_CONFORMANCE_PROTOCOL_VERSION), but
    // it is not pinned here: the runtime finds each server's era itself (`server/discover`
    // first, then the handshake), and that choice is what the suite checks.
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        eprintln!(
            "[conformance] suite protocol version {} (the era is chosen automatically)",
            clean_line(&version)
        );
    }
    json!({ "mcpServers": { SERVER: entry } })
}

/// The client metadata document URL the suite's CIMD scenarios expect (as the Python SDK's
/// conformance client uses).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The `oauth` entry of an auth scenario: the pre-registered client of
/// `MCP_CONFORMANCE_CONTEXT` (`client_id`, `client_secret`) when the runner gives one, and the
/// client metadata document URL.
fn context_oauth() -> Value {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let mut o = json!({ "clientMetadataUrl": CLIENT_METADATA_URL });
    if let Some(id) = context.get("client_id").and_then(Value::as_str) {
        o["clientId"] = json!(id);
    }
    if let Some(secret) = context.get("client_secret").and_then(Value::as_str) {
        o["clientSecret"] = json!(secret);
    }
    o
}

/// What a user writes for a server whose tokens come without a login: the `oauth` entry,
/// the files it names (next to the config) and the variables its `${VAR}`s read.
struct Unattended {
    oauth: Value,
    files: Vec<(&'static str, String)>,
    env: Vec<(String, String)>,
    /// The user's settings file (TOML), for a grant that reads it (`[enterprise_idp]`).
    settings: Option<String>,
}

/// The variable a client secret is kept in, as a CI job keeps it.
const SECRET_VAR: &str = "HARNESS9_CONFORMANCE_CLIENT_SECRET";

/// The config of the scenarios whose grant needs no user, from `MCP_CONFORMANCE_CONTEXT`:
/// client credentials with a secret in a variable (`client-credentials-basic`), or with a
/// private key in a file (`client-credentials-jwt`); the JWT bearer grant with the
/// workload's token in a file, as a platform writes it (`wif-jwt-bearer`); the enterprise
/// grant with the IdP in the user's settings and the user's ID token in the file an SSO tool
/// keeps (`enterprise-managed-authorization`: the suite's IdP has no login page, it hands the
/// client an ID token).
fn unattended_oauth(scenario: &str, dir: &std::path::Path) -> Option<Unattended> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let s = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let client_id = s("client_id")?;
    match scenario {
        "auth/client-credentials-basic" => Some(Unattended {
            oauth: json!({
                "grant": "client_credentials",
                "clientId": client_id,
                "clientSecret": format!("${{{SECRET_VAR}}}"),
                "tokenEndpointAuth": "client_secret_basic",
            }),
            files: Vec::new(),
            env: vec![(SECRET_VAR.to_owned(), s("client_secret")?)],
            settings: None,
        }),
        "auth/client-credentials-jwt" => {
            let mut oauth = json!({
                "grant": "client_credentials",
                "clientId": client_id,
                "tokenEndpointAuth": "private_key_jwt",
                "privateKeyFile": "client-key.pem",
            });
            if let Some(alg) = s("signing_algorithm") {
                oauth["alg"] = json!(alg);
            }
            Some(Unattended {
                oauth,
                files: vec![("client-key.pem", s("private_key_pem")?)],
                env: Vec::new(),
                settings: None,
            })
        }
        "auth/wif-jwt-bearer" => Some(Unattended {
            oauth: json!({
                "grant": "jwt_bearer",
                "clientId": client_id,
                "assertionFile": "workload-token",
            }),
            files: vec![("workload-token", s("valid_jwt")?)],
            env: Vec::new(),
            settings: None,
        }),
        "auth/enterprise-managed-authorization" => {
            let mut idp = toml::Table::new();
            idp.insert("issuer".into(), s("idp_issuer")?.into());
            idp.insert("client_id".into(), s("idp_client_id")?.into());
            idp.insert(
                "id_token_file".into(),
                dir.join("id-token").display().to_string().into(),
            );
            let mut top = toml::Table::new();
            top.insert("enterprise_idp".into(), idp.into());
            Some(Unattended {
                oauth: json!({
                    "grant": "enterprise",
                    "clientId": client_id,
                    "clientSecret": format!("${{{SECRET_VAR}}}"),
                }),
                files: vec![("id-token", s("idp_id_token")?)],
                env: vec![(SECRET_VAR.to_owned(), s("client_secret")?)],
                settings: Some(toml::to_string(&top).ok()?),
            })
        }
        _ => None,
    }
}

/// `harness9 conformance-browser <URL>`: what a browser does with an authorization URL that
/// redirects at once: GET it without following, then GET its `Location` (the loopback
/// listener). Exits 1 if there is no redirect or the listener does not answer.
pub async fn browser(url: &str) -> anyhow::Result<ExitCode> {
    harness9_actors::net::install_crypto();
    let client = awc::Client::builder()
        .disable_redirects()
        .timeout(Duration::from_secs(10))
        .finish();
    let resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot fetch the authorization URL: {e}"))?;
    let Some(next) = resp
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .map(str::to_owned)
    else {
        eprintln!(
            "[conformance-browser] the authorization URL answered HTTP {} without a redirect",
            resp.status()
        );
        return Ok(ExitCode::from(1));
    };
    let resp = client
        .get(&next)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the redirect URI: {e}"))?;
    Ok(if resp.status().is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The argument values a scenario's checks look for, where values made from the schema would
/// exercise nothing: `http-custom-headers` wants header-unsafe strings (non-ASCII, edge
/// whitespace, control characters) and a `null` that must leave its header out. Values only:
/// the headers themselves come from the runtime.
fn scenario_arguments(scenario: &str, tool: &str) -> Option<Value> {
    match (scenario, tool) {
        ("http-custom-headers", "test_custom_headers") => Some(json!({
            "region": "us-west1",
            "priority": 42,
            "verbose": false,
            "debug": true,
            "empty_val": "",
            "method_val": "POST",
            "float_val": 3.5,
            "non_ascii_val": "Hello, 世界",
            "whitespace_val": " padded ",
            "leading_space_val": " leading",
            "trailing_space_val": "trailing ",
            "internal_space_val": "a b c",
            "control_char_val": "bell\u{7}",
            "crlf_val": "line1\r\nline2",
            "tab_val": "a\tb",
            "query": "SELECT 1",
        })),
        ("http-custom-headers", "test_custom_headers_null") => Some(json!({
            "region": "us-west1",
            "priority": 7,
            "verbose": null,
            "query": "SELECT 1",
        })),
        _ => None,
    }
}

/// `json-schema-2020-12-preservation` asks for the focal tool's input schema back, as the runtime
/// keeps it (`mcp get --json` prints it), through its echo tool: a runtime that parsed the
/// schema into a struct would lose `$schema`, `$defs`, `allOf`, `if`/`then`/`else` here.
fn echoed_schema(scenario: &str, tool: &str, tools: &[Value]) -> Option<Value> {
    if (scenario, tool) != ("json-schema-2020-12-preservation", "json_schema_echo") {
        return None;
    }
    let focal = tools
        .iter()
        .find(|t| t.get("tool").and_then(Value::as_str) == Some("json_schema_2020_12_tool"))?;
    Some(json!({ "schema": focal.get("inputSchema")?.clone() }))
}

/// Arguments for a tool from its input schema: every property of `properties`, valued by
/// [`value_for`].
fn arguments_for(schema: &Value) -> Value {
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            out.insert(name.clone(), value_for(prop));
        }
    }
    Value::Object(out)
}

/// A value for one property schema: its `default`, else its `const`, else the first member of
/// its `enum`, else one by `type` (number and integer 1, string "test", boolean true, array [],
/// object: its own properties filled the same way, null null), else the first branch of
/// `anyOf`/`oneOf`, else null.
fn value_for(prop: &Value) -> Value {
    if let Some(v) = prop.get("default").or_else(|| prop.get("const")) {
        return v.clone();
    }
    if let Some(first) = prop
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let ty = match prop.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        // ["string", "null"]: the first type that is not null.
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or_else(|| types.first().and_then(Value::as_str)),
        _ => None,
    };
    match ty {
        Some("number" | "integer") => json!(1),
        Some("string") => json!("test"),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => arguments_for(prop),
        Some("null") => Value::Null,
        _ => ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| prop.get(*k).and_then(Value::as_array)?.first())
            .map_or(Value::Null, value_for),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn arguments_follow_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "integer", "default": 7},
                "s": {"type": "string"},
                "e": {"type": "string", "enum": ["x", "y"]},
                "f": {"type": "boolean"},
                "l": {"type": "array", "items": {"type": "string"}},
                "o": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "m": {"type": ["null", "string"]},
                "u": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
                "z": {}
            }
        });
        assert_eq!(
            arguments_for(&schema),
            json!({
                "a": 1, "b": 7, "s": "test", "e": "x", "f": true, "l": [],
                "o": {"n": 1}, "m": "test", "u": true, "z": null
            })
        );
        assert_eq!(arguments_for(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn the_config_is_one_http_server() {
        let text = conformance_config("http://localhost:1234/mcp", None).to_string();
        let c = crate::app::config::parse(
            &text,
            "<test>",
            Path::new(""),
            &|_| None,
            &crate::app::config::EntryDefaults {
                sandbox: None,
                oauth_store: std::sync::Arc::new(harness9_actors::oauth::MemoryStore::default()),
                enterprise_idp: None,
                enterprise_idp_error: None,
            },
        )
        .unwrap();
        assert_eq!(c.servers.len(), 1);
        let s = &c.servers[0];
        assert_eq!(s.name, SERVER);
        assert!(s.hold.is_none(), "{:?}", s.hold);
        assert!(matches!(
            &s.transport,
            harness9_actors::TransportSpec::Http { url, sse: false, .. } if url == "http://localhost:1234/mcp"
        ));
        assert_eq!(s.startup_timeout, SETTLE_BOUND);
    }
}
