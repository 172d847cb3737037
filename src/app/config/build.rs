//! One server entry into the runtime's `ServerSpec`: its checks, the spec built with values
//! expanded (each part a step of [`Entry`]), and the written form kept for approvals.

use std::path::{Path, PathBuf};

use harness9_actors::oauth::{OAuthConfig, OAuthSpec};
use harness9_actors::protocol::codec::DEFAULT_MAX_MESSAGE_BYTES;
use harness9_actors::protocol::version::ProtocolVersion;
use harness9_actors::spec::LOG_LEVELS;
use harness9_actors::telemetry::{secret_parts, worth_hiding, PUBLIC_VARS};
use harness9_actors::{Roots, SandboxSpec, ServerSpec, TransportSpec};
use serde_json::value::RawValue;

use super::entry::{EntryDefaults, RawRoots, RawServer, SandboxField, TransportType};
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
            let place = Place {
                shown,
                base,
                defaults,
            };
            build(name, r, place, lookups, &mut Collected::default()).ok()
        })
        .map(|s| s.transport);
    Written {
        entry,
        transport,
        env_file,
        inputs: Vec::new(),
    }
}

/// Where an entry is built: the file it is in (as shown in errors), the directory its
/// relative paths start from, and what it does not say (its sandbox, the OAuth store).
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub(super) shown: &'a str,
    pub(super) base: &'a Path,
    pub(super) defaults: &'a EntryDefaults,
}

/// What building entries collects besides their specs: every secret value, and each
/// `${VAR}` value with its written form.
#[derive(Default)]
pub(super) struct Collected {
    pub(super) secrets: Vec<String>,
    pub(super) expansions: Vec<(String, String)>,
}

/// Builds server `name`'s spec from its entry at `place`: values expanded with
/// `lookups.values`, the `envFile` path with `lookups.paths` (the same, except for the written
/// form); the secrets and expansions it uses go to `found`.
pub(super) fn build(
    name: &str,
    raw: RawServer,
    place: Place<'_>,
    lookups: Lookups<'_>,
    found: &mut Collected,
) -> Result<ServerSpec, ConfigError> {
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
    let noted_values = |var: &str| noting(lookups.values, var);
    let noted_paths = |var: &str| noting(lookups.paths, var);
    let entry = Entry {
        name,
        place,
        lookup: &noted_values,
        path_lookup: &noted_paths,
    };
    let spec = entry.spec(raw, &mut found.secrets)?;
    for (v, written) in expanded.into_inner() {
        keep_secret(&mut found.secrets, &v);
        if worth_hiding(&v) && !found.expansions.iter().any(|(have, _)| *have == v) {
            found.expansions.push((v, written));
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.secrets.retain(|s| seen.insert(s.clone()));
    Ok(spec)
}

/// Adds `value`'s [`secret_parts`] (itself, a scheme-prefixed header's token) to `secrets`.
pub(super) fn keep_secret(secrets: &mut Vec<String>, value: &str) {
    secrets.extend(secret_parts(value).into_iter().map(str::to_owned));
}

/// One entry being built: its server's name, where it is, and how its `${...}` references
/// are looked up (in its values, in its `envFile` path).
pub(super) struct Entry<'a> {
    name: &'a str,
    place: Place<'a>,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    path_lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Entry<'_> {
    /// An error of this entry: it names the file, the server and the field.
    pub(super) fn fail(&self, field: &str, message: String) -> ConfigError {
        ConfigError::Expand {
            path: self.place.shown.to_owned(),
            server: self.name.to_owned(),
            field: field.to_owned(),
            message,
        }
    }

    /// `v`, the value of `field`, expanded.
    pub(super) fn x(&self, field: &str, v: &str) -> Result<String, ConfigError> {
        expand(v, self.lookup).map_err(|message| self.fail(field, message))
    }

    /// The directory the entry's relative paths start from.
    pub(super) fn base(&self) -> &Path {
        self.place.base
    }

    /// What the entry does not say.
    pub(super) fn defaults(&self) -> &EntryDefaults {
        self.place.defaults
    }

    /// The spec, each part checked in the entry's order: the transport, the sandbox and OAuth
    /// it may have, the bounds, the roots, the log level, the start mode.
    fn spec(&self, raw: RawServer, secrets: &mut Vec<String>) -> Result<ServerSpec, ConfigError> {
        let kind = raw.kind.unwrap_or(if raw.command.is_some() {
            TransportType::Stdio
        } else {
            TransportType::Http
        });
        let transport = match kind {
            TransportType::Stdio => self.stdio(&raw, secrets)?,
            TransportType::Http | TransportType::Sse => self.http(&raw, kind, secrets)?,
        };
        let sandbox = self.sandbox_field(&transport, &raw)?;
        let oauth = self.oauth(&transport, &raw, secrets)?;
        let mut spec = ServerSpec::stdio(self.name, "", Vec::new());
        spec.transport = transport;
        spec.oauth = oauth;
        if let Some(f) = sandbox.filter(|f| f.on) {
            spec.sandbox = Some(self.sandbox(f)?);
        }
        set_timeouts(&mut spec, &raw);
        if let Some(v) = &raw.protocol_version {
            spec.protocol = Some(self.protocol(v)?);
        }
        spec.roots = self.roots(&raw)?;
        if let Some(level) = &raw.log_level {
            spec.log_level = Some(self.log_level(level)?);
        }
        spec.start = match raw.start.as_deref() {
            None => None,
            Some(s) => Some(parse_start(s).ok_or_else(|| {
                self.fail(
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

    /// A stdio transport: the command and its arguments, the env (with the `envFile`'s
    /// entries the env does not set), the working directory.
    fn stdio(
        &self,
        raw: &RawServer,
        secrets: &mut Vec<String>,
    ) -> Result<TransportSpec, ConfigError> {
        let command = self.x("command", raw.command.as_deref().unwrap_or_default())?;
        let args = raw
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| self.x(&format!("args[{i}]"), a))
            .collect::<Result<Vec<_>, _>>()?;
        let mut env = Vec::new();
        for (k, v) in &raw.env.0 {
            let v = self.x(&format!("env.{k}"), v)?;
            keep_secret(secrets, &v);
            env.push((k.clone(), v));
        }
        if let Some(file) = &raw.env_file {
            self.env_file(file, &mut env, secrets)?;
        }
        let cwd = match &raw.cwd {
            Some(c) => {
                let c = PathBuf::from(self.x("cwd", c)?);
                Some(if c.is_relative() {
                    self.base().join(c)
                } else {
                    c
                })
            }
            None => None,
        };
        Ok(TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        })
    }

    /// Adds the entries of the `envFile` `file` that `env` does not set.
    fn env_file(
        &self,
        file: &str,
        env: &mut Vec<(String, String)>,
        secrets: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let file =
            expand(file, self.path_lookup).map_err(|message| self.fail("envFile", message))?;
        let file = self.base().join(file);
        let text = read_regular(&file, MAX_CONFIG_BYTES)
            .map_err(|e| self.fail("envFile", format!("cannot read {}: {e}", file.display())))?;
        for (k, v) in env_file_entries(&text) {
            if env.iter().any(|(have, _)| *have == k) {
                continue;
            }
            keep_secret(secrets, &v);
            env.push((k, v));
        }
        Ok(())
    }

    /// An HTTP transport (`kind` http or sse): the URL and the headers.
    fn http(
        &self,
        raw: &RawServer,
        kind: TransportType,
        secrets: &mut Vec<String>,
    ) -> Result<TransportSpec, ConfigError> {
        let url = self.x("url", raw.url.as_deref().unwrap_or_default())?;
        let mut headers = Vec::new();
        for (k, v) in &raw.headers {
            let v = self.x(&format!("headers.{k}"), v)?;
            keep_secret(secrets, &v);
            headers.push((k.clone(), v));
        }
        Ok(TransportSpec::Http {
            url,
            headers,
            sse: kind == TransportType::Sse,
        })
    }

    /// The sandbox setting that applies to a server of `transport`: the entry's, else the
    /// default; an HTTP server has none (and may not ask for one).
    fn sandbox_field<'r>(
        &'r self,
        transport: &TransportSpec,
        raw: &'r RawServer,
    ) -> Result<Option<&'r SandboxField>, ConfigError> {
        match (transport, &raw.sandbox) {
            (TransportSpec::Http { .. }, Some(f)) if f.on => Err(self.fail(
                "sandbox",
                "the sandbox is for stdio servers only; remove it".to_owned(),
            )),
            (TransportSpec::Http { .. }, _) => Ok(None),
            (_, Some(f)) => Ok(Some(f)),
            (_, None) => Ok(self.defaults().sandbox.as_ref()),
        }
    }

    /// The sandbox of a setting that is on: the project's directory and the writable paths.
    fn sandbox(&self, f: &SandboxField) -> Result<SandboxSpec, ConfigError> {
        let project_dir = if self.base().as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            self.base().to_path_buf()
        };
        let writable = f
            .writable
            .iter()
            .enumerate()
            .map(|(i, p)| {
                self.x(&format!("sandbox.writable[{i}]"), p)
                    .map(|p| project_dir.join(p))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SandboxSpec {
            project_dir,
            writable,
            network: f.network,
        })
    }

    /// The OAuth of a server of `transport`: an HTTP server's (its grant through
    /// [`super::grant::apply`]); a stdio server may not have one.
    fn oauth(
        &self,
        transport: &TransportSpec,
        raw: &RawServer,
        secrets: &mut Vec<String>,
    ) -> Result<Option<OAuthSpec>, ConfigError> {
        if !matches!(transport, TransportSpec::Http { .. }) {
            return match raw.oauth {
                Some(_) => Err(self.fail(
                    "oauth",
                    "OAuth is for HTTP servers only; remove it".to_owned(),
                )),
                None => Ok(None),
            };
        }
        let o = raw.oauth.as_ref();
        let field = |f: &str, v: Option<&String>| -> Result<Option<String>, ConfigError> {
            v.map(|v| self.x(&format!("oauth.{f}"), v)).transpose()
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
            super::grant::apply(&mut config, o, self, secrets)?;
        }
        Ok(Some(OAuthSpec::new(
            config,
            self.defaults().oauth_store.clone(),
        )))
    }

    /// The `protocolVersion` `v`, when harness9 speaks it.
    fn protocol(&self, v: &str) -> Result<ProtocolVersion, ConfigError> {
        ProtocolVersion::parse(v).ok_or_else(|| {
            self.fail(
                "protocolVersion",
                format!(
                "{v:?} is not a revision harness9 speaks ({}); remove it to choose automatically",
                ProtocolVersion::KNOWN.map(|v| v.as_str()).join(", ")
            ),
            )
        })
    }

    /// The roots: the working directory (by default), none, or the paths given (absolute).
    fn roots(&self, raw: &RawServer) -> Result<Roots, ConfigError> {
        Ok(match &raw.roots {
            None | Some(RawRoots::On(true)) => Roots::WorkingDirectory,
            Some(RawRoots::On(false)) => Roots::Off,
            Some(RawRoots::Paths(paths)) => Roots::Paths(
                paths
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        self.x(&format!("roots[{i}]"), p).map(|p| {
                            let p = self.base().join(p);
                            // A root is a `file://` URI: absolute, whatever the base.
                            std::path::absolute(&p).unwrap_or(p)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        })
    }

    /// The `logLevel` `level`, when it is one.
    fn log_level(&self, level: &str) -> Result<String, ConfigError> {
        if !LOG_LEVELS.contains(&level) {
            return Err(self.fail(
                "logLevel",
                format!(
                    "{level:?} is not a log level; use one of {}",
                    LOG_LEVELS.join(", ")
                ),
            ));
        }
        Ok(level.to_owned())
    }
}

/// The entry's timeouts, over the spec's defaults. Checked by `validate`; a bad value keeps
/// the default rather than panic.
fn set_timeouts(spec: &mut ServerSpec, raw: &RawServer) {
    let checked = |field: &str, t: Option<f64>| t.and_then(|t| timeout_secs(field, t).ok());
    if let Some(t) = checked("startupTimeoutSec", raw.startup_timeout_sec) {
        spec.startup_timeout = t;
    }
    if let Some(t) = checked("toolTimeoutSec", raw.tool_timeout_sec) {
        spec.tool_timeout = t;
    }
    if let Some(t) = checked("toolIdleTimeoutSec", raw.tool_idle_timeout_sec) {
        spec.tool_idle_timeout = Some(t);
    }
    if let Some(t) = checked("taskTimeoutSec", raw.task_timeout_sec) {
        spec.task_timeout = t;
    }
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
