//! One server entry into the runtime's `ServerSpec`: its checks, the spec built with values
//! expanded, the written form kept for approvals, and the transport a held (invalid) entry shows.

use std::path::{Path, PathBuf};

use harness9_actors::oauth::{OAuthConfig, OAuthSpec};
use harness9_actors::protocol::codec::DEFAULT_MAX_MESSAGE_BYTES;
use harness9_actors::protocol::version::ProtocolVersion;
use harness9_actors::spec::LOG_LEVELS;
use harness9_actors::telemetry::{secret_parts, worth_hiding, PUBLIC_VARS};
use harness9_actors::{Roots, SandboxSpec, ServerSpec, TransportSpec};
use serde_json::value::RawValue;

use super::entry::{EntryDefaults, RawRoots, RawServer, TransportType};
use super::formats::env_file_entries;
use super::{expand, read_regular, timeout_secs, ConfigError, Written, MAX_CONFIG_BYTES};

/// How an entry's `${...}` references are resolved: in its values, and in its `envFile` path
/// (the same, except for the written form, whose values keep their references).
#[derive(Clone, Copy)]
pub(super) struct Lookups<'a> {
    pub(super) values: &'a dyn Fn(&str) -> Option<String>,
    pub(super) paths: &'a dyn Fn(&str) -> Option<String>,
}

/// What is wrong with a parsed server, if anything.
pub(super) fn validate(raw: &RawServer) -> Option<String> {
    let problem = match (raw.kind, &raw.command, &raw.url) {
        (None, None, None) => Some("has neither \"command\" nor \"url\"; give one of them"),
        (Some(TransportType::Stdio), None, _) => {
            Some("is \"type\": \"stdio\" but has no \"command\"")
        }
        (Some(TransportType::Http | TransportType::Sse), _, None) => {
            Some("is an HTTP server but has no \"url\"")
        }
        _ => None,
    };
    if let Some(p) = problem {
        return Some(p.to_owned());
    }
    for (field, t) in [
        ("startupTimeoutSec", raw.startup_timeout_sec),
        ("toolTimeoutSec", raw.tool_timeout_sec),
        ("toolIdleTimeoutSec", raw.tool_idle_timeout_sec),
        ("taskTimeoutSec", raw.task_timeout_sec),
    ] {
        if let Some(Err(e)) = t.map(|t| timeout_secs(&format!("\"{field}\""), t)) {
            return Some(format!("has a bad timeout: {e}"));
        }
    }
    None
}

/// The HTTP transport a bad entry asks for (a `url`, or a `type` of http/sse without a
/// `command`), its URL as written, for the status it is shown with; `None`: stdio.
pub(super) fn held_transport(entry: &str) -> Option<TransportSpec> {
    let v: serde_json::Value = serde_json::from_str(entry).ok()?;
    let kind = v.get("type").and_then(serde_json::Value::as_str);
    let http = match kind {
        Some("stdio") => false,
        Some(_) => true,
        None => v.get("command").is_none() && v.get("url").is_some(),
    };
    http.then(|| TransportSpec::Http {
        url: v
            .get("url")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        headers: Vec::new(),
        sse: kind == Some("sse"),
    })
}

/// Server `name`'s entry `value` as written: its JSON, and the transport built with
/// `lookups.values` (which leaves references as written); `lookups.paths` resolves the
/// `envFile` path, read as it is.
pub(super) fn written_form(
    name: &str,
    value: &RawValue,
    shown: &str,
    base: &Path,
    lookups: Lookups<'_>,
    defaults: &EntryDefaults,
) -> Written {
    let lookup = lookups.paths;
    let entry = serde_json::from_str::<serde_json::Value>(value.get()).unwrap_or_default();
    let raw = serde_json::from_str::<RawServer>(value.get()).ok();
    let env_file = raw.as_ref().and_then(|r| r.env_file.as_deref()).map(|f| {
        let f = expand(f, lookup).unwrap_or_else(|_| f.to_owned());
        base.join(f)
    });
    let transport = raw
        .filter(|r| validate(r).is_none())
        .and_then(|r| {
            build(
                name,
                r,
                shown,
                base,
                lookups,
                defaults,
                &mut Vec::new(),
                &mut Vec::new(),
            )
            .ok()
        })
        .map(|s| s.transport);
    Written {
        entry,
        transport,
        env_file,
        inputs: Vec::new(),
    }
}

/// Builds server `name`'s spec from its entry: values expanded with `lookups.values`, the
/// `envFile` path with `lookups.paths` (the same, except for the written form); what the entry
/// does not say (its sandbox, the OAuth store) from `defaults`.
#[allow(clippy::too_many_arguments)]
pub(super) fn build(
    name: &str,
    raw: RawServer,
    shown: &str,
    base: &Path,
    lookups: Lookups<'_>,
    defaults: &EntryDefaults,
    secrets: &mut Vec<String>,
    expansions: &mut Vec<(String, String)>,
) -> Result<ServerSpec, ConfigError> {
    let Lookups {
        values: lookup,
        paths: path_lookup,
    } = lookups;
    // Every value a `${...}` expands to is a secret, wherever it is used (a key in `args` or
    // in `url` as much as in a header), except the machine's public facts (`PUBLIC_VARS`).
    let expanded = std::cell::RefCell::new(Vec::<(String, String)>::new());
    let noting = |of: &dyn Fn(&str) -> Option<String>, var: &str| {
        let v = of(var);
        if let Some(v) = &v {
            if !PUBLIC_VARS.contains(&var) {
                expanded
                    .borrow_mut()
                    .push((v.clone(), format!("${{{var}}}")));
            }
        }
        v
    };
    let noted_values = |var: &str| noting(lookup, var);
    let noted_paths = |var: &str| noting(path_lookup, var);
    let lookup: &dyn Fn(&str) -> Option<String> = &noted_values;
    let path_lookup: &dyn Fn(&str) -> Option<String> = &noted_paths;
    let spec = build_spec(
        name,
        raw,
        shown,
        base,
        lookup,
        path_lookup,
        defaults,
        secrets,
    )?;
    for (v, written) in expanded.into_inner() {
        keep_secret(secrets, &v);
        if worth_hiding(&v) && !expansions.iter().any(|(have, _)| *have == v) {
            expansions.push((v, written));
        }
    }
    let mut seen = std::collections::HashSet::new();
    secrets.retain(|s| seen.insert(s.clone()));
    Ok(spec)
}

/// Adds `value`'s [`secret_parts`] (itself, a scheme-prefixed header's token) to `secrets`.
fn keep_secret(secrets: &mut Vec<String>, value: &str) {
    secrets.extend(secret_parts(value).into_iter().map(str::to_owned));
}

#[allow(clippy::too_many_arguments)]
fn build_spec(
    name: &str,
    raw: RawServer,
    shown: &str,
    base: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    path_lookup: &dyn Fn(&str) -> Option<String>,
    defaults: &EntryDefaults,
    secrets: &mut Vec<String>,
) -> Result<ServerSpec, ConfigError> {
    // Every error of this entry names the file, the server and the field.
    let fail = |field: &str, message: String| ConfigError::Expand {
        path: shown.to_owned(),
        server: name.to_owned(),
        field: field.to_owned(),
        message,
    };
    let x = |field: &str, v: &str| expand(v, lookup).map_err(|message| fail(field, message));
    let kind = raw.kind.unwrap_or(if raw.command.is_some() {
        TransportType::Stdio
    } else {
        TransportType::Http
    });
    let transport = match kind {
        TransportType::Stdio => {
            let command = x("command", raw.command.as_deref().unwrap_or_default())?;
            let args = raw
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| x(&format!("args[{i}]"), a))
                .collect::<Result<Vec<_>, _>>()?;
            let mut env = Vec::new();
            for (k, v) in &raw.env.0 {
                let v = x(&format!("env.{k}"), v)?;
                keep_secret(secrets, &v);
                env.push((k.clone(), v));
            }
            if let Some(file) = &raw.env_file {
                let file = expand(file, path_lookup).map_err(|message| fail("envFile", message))?;
                let file = base.join(file);
                let text = read_regular(&file, MAX_CONFIG_BYTES)
                    .map_err(|e| fail("envFile", format!("cannot read {}: {e}", file.display())))?;
                for (k, v) in env_file_entries(&text) {
                    if env.iter().any(|(have, _)| *have == k) {
                        continue;
                    }
                    keep_secret(secrets, &v);
                    env.push((k, v));
                }
            }
            let cwd = match &raw.cwd {
                Some(c) => {
                    let c = PathBuf::from(x("cwd", c)?);
                    Some(if c.is_relative() { base.join(c) } else { c })
                }
                None => None,
            };
            TransportSpec::Stdio {
                command,
                args,
                env,
                cwd,
            }
        }
        TransportType::Http | TransportType::Sse => {
            let url = x("url", raw.url.as_deref().unwrap_or_default())?;
            let mut headers = Vec::new();
            for (k, v) in &raw.headers {
                let v = x(&format!("headers.{k}"), v)?;
                keep_secret(secrets, &v);
                headers.push((k.clone(), v));
            }
            TransportSpec::Http {
                url,
                headers,
                sse: kind == TransportType::Sse,
            }
        }
    };
    let sandbox = match (&transport, &raw.sandbox) {
        (TransportSpec::Http { .. }, Some(f)) if f.on => {
            return Err(fail(
                "sandbox",
                "the sandbox is for stdio servers only; remove it".to_owned(),
            ))
        }
        (TransportSpec::Http { .. }, _) => None,
        (_, Some(f)) => Some(f),
        (_, None) => defaults.sandbox.as_ref(),
    };
    let oauth = match (&transport, &raw.oauth) {
        (TransportSpec::Http { .. }, o) => {
            let o = o.as_ref();
            let field = |f: &str, v: Option<&String>| -> Result<Option<String>, ConfigError> {
                v.map(|v| x(&format!("oauth.{f}"), v)).transpose()
            };
            let mut config = OAuthConfig {
                client_id: field("clientId", o.and_then(|o| o.client_id.as_ref()))?,
                client_secret: field("clientSecret", o.and_then(|o| o.client_secret.as_ref()))?,
                scopes: o.map(|o| o.scopes.clone()).unwrap_or_default(),
                callback_port: o.and_then(|o| o.callback_port),
                client_metadata_url: field(
                    "clientMetadataUrl",
                    o.and_then(|o| o.client_metadata_url.as_ref()),
                )?,
                allow_origins: o.map(|o| o.allow_origins.clone()).unwrap_or_default(),
                dpop: o.and_then(|o| o.dpop),
                ..OAuthConfig::default()
            };
            if let Some(s) = &config.client_secret {
                keep_secret(secrets, s);
            }
            if let Some(o) = o {
                super::grant::apply(&mut config, o, base, &x, &fail, secrets, defaults)?;
            }
            Some(OAuthSpec::new(config, defaults.oauth_store.clone()))
        }
        (_, Some(_)) => {
            return Err(fail(
                "oauth",
                "OAuth is for HTTP servers only; remove it".to_owned(),
            ))
        }
        (_, None) => None,
    };
    let mut spec = ServerSpec::stdio(name, "", Vec::new());
    spec.transport = transport;
    spec.oauth = oauth;
    if let Some(f) = sandbox.filter(|f| f.on) {
        let project_dir = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base.to_path_buf()
        };
        let writable = f
            .writable
            .iter()
            .enumerate()
            .map(|(i, p)| x(&format!("sandbox.writable[{i}]"), p).map(|p| project_dir.join(p)))
            .collect::<Result<Vec<_>, _>>()?;
        spec.sandbox = Some(SandboxSpec {
            project_dir,
            writable,
            network: f.network,
        });
    }
    // Checked by `validate`; a bad value keeps the default rather than panic.
    if let Some(Ok(t)) = raw
        .startup_timeout_sec
        .map(|t| timeout_secs("startupTimeoutSec", t))
    {
        spec.startup_timeout = t;
    }
    if let Some(Ok(t)) = raw
        .tool_timeout_sec
        .map(|t| timeout_secs("toolTimeoutSec", t))
    {
        spec.tool_timeout = t;
    }
    if let Some(Ok(t)) = raw
        .tool_idle_timeout_sec
        .map(|t| timeout_secs("toolIdleTimeoutSec", t))
    {
        spec.tool_idle_timeout = Some(t);
    }
    if let Some(Ok(t)) = raw
        .task_timeout_sec
        .map(|t| timeout_secs("taskTimeoutSec", t))
    {
        spec.task_timeout = t;
    }
    if let Some(v) = &raw.protocol_version {
        spec.protocol = Some(ProtocolVersion::parse(v).ok_or_else(|| {
            fail(
                "protocolVersion",
                format!(
                "{v:?} is not a revision harness9 speaks ({}); remove it to choose automatically",
                ProtocolVersion::KNOWN.map(|v| v.as_str()).join(", ")
            ),
            )
        })?);
    }
    spec.roots = match &raw.roots {
        None | Some(RawRoots::On(true)) => Roots::WorkingDirectory,
        Some(RawRoots::On(false)) => Roots::Off,
        Some(RawRoots::Paths(paths)) => Roots::Paths(
            paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    x(&format!("roots[{i}]"), p).map(|p| {
                        let p = base.join(p);
                        // A root is a `file://` URI: absolute, whatever the base.
                        std::path::absolute(&p).unwrap_or(p)
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    if let Some(level) = &raw.log_level {
        if !LOG_LEVELS.contains(&level.as_str()) {
            return Err(fail(
                "logLevel",
                format!(
                    "{level:?} is not a log level; use one of {}",
                    LOG_LEVELS.join(", ")
                ),
            ));
        }
        spec.log_level = Some(level.clone());
    }
    spec.start = match raw.start.as_deref() {
        None => None,
        Some(s) => Some(parse_start(s).ok_or_else(|| {
            fail(
                "start",
                format!("{s:?} is not a start mode; use \"eager\" or \"lazy\""),
            )
        })?),
    };
    spec.enabled_tools = raw.enabled_tools;
    spec.disabled_tools = raw.disabled_tools;
    spec.max_message_bytes = raw.max_message_bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES);
    spec.max_tools = raw
        .max_tools
        .unwrap_or(harness9_actors::spec::DEFAULT_MAX_TOOLS);
    Ok(spec)
}

/// `eager` or `lazy` (`start` in `.mcp.json`, `[mcp] start` in harness9.toml).
pub fn parse_start(s: &str) -> Option<harness9_actors::tool_cache::StartMode> {
    use harness9_actors::tool_cache::StartMode;
    match s {
        "eager" => Some(StartMode::Eager),
        "lazy" => Some(StartMode::Lazy),
        _ => None,
    }
}
