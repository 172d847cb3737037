//! `harness9 doctor [SERVER] [--json]`: checks every configured server (or one) the way a
//! session would load and start it, and the model settings; one line per check, `ok` / `warn`
//! / `fail` with what to do ([`crate::app::diagnostics::doctor`] holds the pure parts). The I/O is here:
//! the config as a session loads it, the command looked up on `PATH` through the platform
//! seam, a bounded request to an HTTP server's URL and to the model provider, a cold start of
//! every approved server on the real runtime, the OAuth store (never a token). A project
//! server the user has not approved is neither started nor contacted.

use std::process::ExitCode;
use std::time::Duration;

use harness9_actors::messages::{ServerStatus, StatusSnapshot};
use harness9_actors::spec::shell_quote;
use harness9_actors::{Hold, ServerSpec, TransportSpec};

use super::list::tool_sizes;
use super::mcp::unknown_server;
use super::{interrupted, DoctorArgs};
use crate::app::config::Config;
use crate::app::diagnostics::doctor::{
    fmt_secs, grant_check, measure_bound, model_check, model_ids, render, start_check, var_checks,
    var_refs, Check, Report, ServerReport,
};
use crate::app::{Session, SessionOptions, Start, HEADLESS_GRACE};

/// The longest a probe (an HTTP server's URL, the model provider) may take, body included.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a model list that is read.
const MAX_MODEL_LIST: usize = 4 * 1024 * 1024;

/// Runs `harness9 doctor`; every child is gone when this returns.
pub async fn doctor(opts: &SessionOptions, args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let config = opts.load_config()?;
    let only = args.server.as_deref();
    let (specs, disabled) = chosen(&config, only)?;
    let client = probe_client();
    // What a session would start: the approved, valid servers, each given longer than its
    // startupTimeoutSec so that one just over it is still timed.
    let runnable: Vec<ServerSpec> = specs
        .iter()
        .filter(|s| s.hold.is_none())
        .map(|s| {
            let mut s = (*s).clone();
            s.startup_timeout = measure_bound(s.startup_timeout);
            s
        })
        .collect();
    let mut reports = Vec::new();
    for spec in &specs {
        reports.push(before_start(opts, &config, spec, &client).await);
    }
    let started = if runnable.is_empty() {
        None
    } else {
        match cold_start(opts, &config, runnable).await? {
            Some(started) => Some(started),
            None => {
                eprintln!("[doctor] interrupted; servers stopped");
                return Ok(ExitCode::from(130));
            }
        }
    };
    let (snap, sizes) = started.unwrap_or_default();
    for (spec, report) in specs.iter().zip(reports.iter_mut()) {
        after_start(spec, &snap, &sizes, report);
    }
    reports.extend(disabled.into_iter().map(|name| disabled_report(name)));
    let model = if only.is_none() {
        tokio::select! {
            m = async {
                let mut m = model_checks(opts, &client).await;
                m.push(telemetry_check(opts, &client).await);
                m
            } => m,
            _ = interrupted() => return Ok(ExitCode::from(130)),
        }
    } else {
        Vec::new()
    };
    print_report(&Report::new(reports, model), args.json.json)
}

/// The servers `doctor` checks (every configured one, or `only`) and the disabled entries it
/// names; a name the config does not have is a usage error.
fn chosen<'a>(
    config: &'a Config,
    only: Option<&str>,
) -> anyhow::Result<(Vec<&'a ServerSpec>, Vec<&'a String>)> {
    let disabled: Vec<&String> = match only {
        Some(name) => config.disabled.iter().filter(|d| *d == name).collect(),
        None => config.disabled.iter().collect(),
    };
    let specs: Vec<&ServerSpec> = match only {
        Some(name) => {
            let found: Vec<&ServerSpec> =
                config.servers.iter().filter(|s| s.name == name).collect();
            if found.is_empty() && disabled.is_empty() {
                return Err(unknown_server(config, name).into());
            }
            found
        }
        None => config.servers.iter().collect(),
    };
    Ok((specs, disabled))
}

/// What a cold start of the servers showed: their statuses and the bytes of their tool
/// definitions.
type Started = (StatusSnapshot, std::collections::BTreeMap<String, usize>);

/// Starts `runnable` on the real runtime and waits for them to settle (bounded), then stops
/// them; `None` when interrupted.
async fn cold_start(
    opts: &SessionOptions,
    config: &Config,
    runnable: Vec<ServerSpec>,
) -> anyhow::Result<Option<Started>> {
    let start = Start {
        shutdown_grace: Some(HEADLESS_GRACE),
        ..Start::default()
    };
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let longest = runnable
            .iter()
            .map(|s| s.startup_timeout)
            .max()
            .unwrap_or_default();
        eprintln!(
            "[doctor] starting {} server{} (at most {})...",
            runnable.len(),
            if runnable.len() == 1 { "" } else { "s" },
            fmt_secs(longest)
        );
    }
    let mut session = Session::start(opts, config, runnable, start)?;
    let rt = &mut session.runtime;
    let bound = rt.max_startup + Duration::from_secs(5);
    let later = rt.status.clone();
    let outcome = tokio::select! {
        snap = rt.settled(bound) => Some((snap, tool_sizes(rt).await)),
        _ = interrupted() => None,
    };
    session.close().await;
    Ok(outcome.map(|(mut snap, sizes)| {
        with_late_stderr(&mut snap, &later.borrow());
        (snap, sizes)
    }))
}

/// A start that timed out is failed before its process is stopped; what it wrote to stderr
/// arrives with its exit, which the close waited for: `after`'s tail fills an empty one.
fn with_late_stderr(snap: &mut StatusSnapshot, after: &StatusSnapshot) {
    for (name, st) in std::sync::Arc::make_mut(snap).iter_mut() {
        if let (
            ServerStatus::Failed { stderr_tail, .. },
            Some(ServerStatus::Failed {
                stderr_tail: last, ..
            }),
        ) = (&mut st.status, after.get(name).map(|s| &s.status))
        {
            if stderr_tail.is_empty() {
                stderr_tail.clone_from(last);
            }
        }
    }
}

/// The report of an entry disabled in the config: not started.
fn disabled_report(name: &str) -> ServerReport {
    let mut r = ServerReport::new(name, "-");
    r.checks.push(
        Check::ok(
            "source",
            "disabled in its entry (\"disabled\": true): not started",
        )
        .hint("remove \"disabled\": true to use it"),
    );
    r
}

/// Prints the report (text, or JSON with `--json`); exit code 1 when a check failed.
fn print_report(report: &Report, as_json: bool) -> anyhow::Result<ExitCode> {
    if as_json {
        say!("{}", crate::sanitize::to_json(report, true)?);
    } else {
        use std::io::Write as _;
        write!(std::io::stdout().lock(), "{}", render(report))?;
    }
    Ok(if report.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The HTTP client of the probes: no redirect followed, every step bounded.
fn probe_client() -> awc::Client {
    harness9_actors::net::install_crypto();
    awc::Client::builder()
        .connector(
            awc::Connector::new()
                .rustls_0_23(harness9_actors::net::tls_config())
                .timeout(PROBE_TIMEOUT)
                .handshake_timeout(PROBE_TIMEOUT),
        )
        .disable_redirects()
        .timeout(PROBE_TIMEOUT)
        .finish()
}

/// Whether server `spec` comes from a project config (approval applies to it).
fn from_project(opts: &SessionOptions, config: &Config, spec: &ServerSpec) -> bool {
    !opts.config_must_exist && !config.sources.iter().any(|(n, _)| *n == spec.name)
}

/// The checks that need no start: where the entry comes from, approval, the entry's own
/// validity, the sandbox, the command (or the URL, unless unapproved), each `${VAR}`.
async fn before_start(
    opts: &SessionOptions,
    config: &Config,
    spec: &ServerSpec,
    client: &awc::Client,
) -> ServerReport {
    let name = spec.name.as_str();
    let mut r = ServerReport::new(name, spec.transport.kind());
    let c = &mut r.checks;
    c.push(source_check(opts, config, name));
    c.push(approval_check(opts, config, spec));
    if let Some(Hold::Invalid(why)) = &spec.hold {
        c.push(Check::fail("entry", why).hint("a session does not start it until this is fixed"));
    }
    let unapproved = spec.hold == Some(Hold::Unapproved);
    match &spec.transport {
        TransportSpec::Stdio {
            command, env, cwd, ..
        } => {
            c.push(sandbox_check(spec));
            if !matches!(spec.hold, Some(Hold::Invalid(_))) {
                c.push(command_check(command, env, cwd.as_deref()));
            }
        }
        // An unapproved server is not contacted.
        TransportSpec::Http { url, .. } if !unapproved && spec.hold.is_none() => {
            c.push(url_check(client, url).await);
        }
        _ => {}
    }
    env_checks(config, name, c);
    r
}

/// Where server `name`'s entry comes from.
fn source_check(opts: &SessionOptions, config: &Config, name: &str) -> Check {
    let shown = |p: &std::path::Path| {
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let source = match config.sources.iter().find(|(n, _)| n == name) {
        Some((_, p)) => format!("from the user config {}", shown(p)),
        None if opts.config_must_exist => format!("from the --config file {}", shown(&config.path)),
        None => format!("from the project config {}", shown(&config.path)),
    };
    Check::ok("source", source)
}

/// Whether server `spec` is approved, or needs no approval.
fn approval_check(opts: &SessionOptions, config: &Config, spec: &ServerSpec) -> Check {
    let quoted = shell_quote(&spec.name);
    if spec.hold == Some(Hold::Unapproved) {
        Check::fail("approval", "not approved: a session does not start it").hint(format!(
            "approve it with `harness9 mcp approve {quoted}` (or run with --approve-project)"
        ))
    } else if !from_project(opts, config, spec) {
        Check::ok(
            "approval",
            if opts.config_must_exist {
                "not needed: a --config file is trusted as given"
            } else {
                "not needed: the user config is yours"
            },
        )
    } else if matches!(spec.hold, Some(Hold::Invalid(_)))
        // An entry held only for a value of the user's (an unset variable) is approved
        // as written, or it would wait for approval instead.
        && config.written(&spec.name).is_none_or(|w| w.transport.is_none())
    {
        Check::ok("approval", "not checked until the entry is valid")
    } else if opts.approve_project {
        Check::ok("approval", "approved (--approve-project)")
    } else {
        Check::ok("approval", "approved as it is now")
    }
}

/// Each `${VAR}` server `name`'s entry uses, by name (a VS Code input with a saved value is
/// fine).
fn env_checks(config: &Config, name: &str, c: &mut Vec<Check>) {
    let Some(w) = config.written(name) else {
        return;
    };
    let store = crate::app::config::input_vars::store_path();
    let file = config
        .sources
        .iter()
        .find(|(n, _)| n == name)
        .map_or(config.path.clone(), |(_, p)| p.clone());
    let is_set = |var: &str| std::env::var_os(var).is_some();
    let input_var = |id: &str| crate::app::config::input_var(id);
    let refs = var_refs(&w.entry);
    for (check, r) in var_checks(&refs, &is_set, &input_var)
        .into_iter()
        .zip(&refs)
    {
        // A VS Code input may also have a value saved from the interactive session.
        let saved = r
            .name
            .strip_prefix("input:")
            .is_some_and(|id| crate::app::config::input_vars::get(&store, &file, id).is_some());
        c.push(
            if saved && check.status != crate::app::diagnostics::doctor::Status::Ok {
                Check::ok("env", format!("${{{}}} has a saved value", r.name))
            } else {
                check
            },
        );
    }
}

/// What sandbox a stdio server runs under, or none.
fn sandbox_check(spec: &ServerSpec) -> Check {
    let Some(sb) = &spec.sandbox else {
        return Check::ok("sandbox", "none: it runs with your user's rights").hint(
            "to confine it, set \"sandbox\": true in its entry (or sandbox under [mcp] in the settings)",
        );
    };
    let more = match sb.writable.len() {
        0 => String::new(),
        1 => " and 1 more path".to_owned(),
        n => format!(" and {n} more paths"),
    };
    let net = if sb.network {
        "network allowed"
    } else {
        "network blocked"
    };
    match harness9_platform::sandbox::kernel_abi() {
        Ok(abi) => Check::ok(
            "sandbox",
            format!("sandboxed (kernel sandbox ABI {abi}): writes only its working directory, its temp dir{more}; {net}"),
        ),
        Err(e) => Check::fail("sandbox", format!("it asks for a sandbox this system cannot give: {e}"))
            .hint("turn it off with \"sandbox\": false in its entry, or run it where the sandbox is available"),
    }
}

/// The command a stdio server runs, looked up as its spawn looks it up (its entry's `PATH`
/// when it sets one).
fn command_check(command: &str, env: &[(String, String)], cwd: Option<&std::path::Path>) -> Check {
    let path = crate::app::config::trust::entry_path(env);
    let here = crate::app::config::trust::resolved_cwd(cwd);
    let is_path = harness9_platform::command::is_path(command);
    match harness9_platform::command::locate(command, path.as_deref(), &here) {
        Some(_) if is_path => Check::ok("command", format!("`{command}` is executable")),
        Some(p) => Check::ok("command", format!("`{command}` is {}", p.display())),
        None if is_path => Check::fail(
            "command",
            format!("command `{command}` does not exist or is not executable"),
        )
        .hint("fix the path, or install it there"),
        None => Check::fail("command", format!("command `{command}` not found on PATH"))
            .hint("install it or give its full path"),
    }
}

/// A bounded GET of an HTTP server's URL: any answer means it is reachable (and TLS works,
/// for https).
async fn url_check(client: &awc::Client, url: &str) -> Check {
    let tls = url.starts_with("https://");
    let sent = tokio::time::timeout(PROBE_TIMEOUT, client.get(url).send()).await;
    match sent {
        Ok(Ok(resp)) => Check::ok(
            "url",
            format!(
                "{url} answered HTTP {}{}",
                resp.status().as_u16(),
                if tls { " over TLS" } else { "" }
            ),
        ),
        Ok(Err(e)) => {
            let e = e.to_string();
            let hint = harness9_actors::net::certificate_hint(&e);
            Check::fail("url", format!("cannot reach {url}: {e}{hint}"))
                .hint("check the URL and that the server runs")
        }
        Err(_) => Check::fail(
            "url",
            format!("{url} did not answer within {}", fmt_secs(PROBE_TIMEOUT)),
        )
        .hint("check the URL and that the server runs"),
    }
}

/// The bound on doctor's one probe of the collector: a collector answers a request in
/// milliseconds, so one that has not in 2 s is as good as down for a session's exit.
const COLLECTOR_PROBE: Duration = Duration::from_secs(2);

/// OpenTelemetry: off, or on and where to (the endpoint of the first signal exported probed
/// once, within [`COLLECTOR_PROBE`]: any HTTP answer means the collector is there). The same
/// plan the session makes (the `OTEL_*` environment over the user's `[telemetry]`). A
/// collector that fails the probe is marked down for the exporters, so doctor's own exit does
/// not wait for it.
async fn telemetry_check(opts: &SessionOptions, client: &awc::Client) -> Check {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let mut ignored = Vec::new();
    let plan = crate::agent::model::settings::telemetry(&opts.model, &mut ignored)
        .map_err(|e| e.to_string())
        .and_then(|t| crate::app::telemetry::plan(env, &t));
    let plan = match plan {
        Ok(p) => p,
        Err(e) => {
            return Check::warn("telemetry", format!("off: {e}"))
                .hint("fix the OTEL_* variable or [telemetry] in your settings")
        }
    };
    if !plan.traces && !plan.metrics {
        return Check::ok("telemetry", "off").hint(
            "OTEL_TRACES_EXPORTER=otlp with OTEL_EXPORTER_OTLP_ENDPOINT, or export = \"otlp\" under [telemetry], turns it on",
        );
    }
    let url = harness9_actors::telemetry::export::endpoint(
        &plan,
        if plan.traces { "traces" } else { "metrics" },
    );
    // Printed without userinfo or query values: an endpoint may carry credentials.
    let shown = harness9_actors::telemetry::without_credentials(&url);
    let what = match (plan.traces, plan.metrics) {
        (true, true) => "traces and metrics",
        (true, false) => "traces",
        _ => "metrics",
    };
    let down = |why: &str| {
        use harness9_actors::telemetry::breaker;
        breaker::failed(
            &breaker::origin(&url).unwrap_or_else(|| url.clone()),
            &url,
            why,
        );
    };
    let hint = "start the collector, or fix OTEL_EXPORTER_OTLP_ENDPOINT; sessions run either way, the spans are dropped";
    match tokio::time::timeout(COLLECTOR_PROBE, client.get(&url).send()).await {
        Ok(Ok(resp)) => Check::ok(
            "telemetry",
            format!(
                "{what} over OTLP/HTTP to {shown} (it answered HTTP {})",
                resp.status().as_u16()
            ),
        ),
        Ok(Err(e)) => {
            down(&e.to_string());
            Check::warn(
                "telemetry",
                format!("{what} go to {shown}, which cannot be reached: {e}"),
            )
            .hint(hint)
        }
        Err(_) => {
            let why = format!("it did not answer within {}", fmt_secs(COLLECTOR_PROBE));
            down(&why);
            Check::warn("telemetry", format!("{what} go to {shown}, which {why}")).hint(hint)
        }
    }
}

/// The checks of the start: how long it took against `startupTimeoutSec`, the era, the tools,
/// OAuth, a failed start's stderr tail.
fn after_start(
    spec: &ServerSpec,
    snap: &StatusSnapshot,
    sizes: &std::collections::BTreeMap<String, usize>,
    r: &mut ServerReport,
) {
    let name = spec.name.as_str();
    let status = snap.get(name).map(|s| &s.status);
    start_checks(spec, status, sizes, &mut r.checks);
    if let (TransportSpec::Http { url, .. }, Some(oauth), false) = (
        &spec.transport,
        &spec.oauth,
        spec.hold == Some(Hold::Unapproved),
    ) {
        let needs = matches!(status, Some(ServerStatus::NeedsLogin { .. }));
        r.checks.push(oauth_check(name, url, oauth, needs));
    }
}

/// The start's checks of server `spec` by its `status` after the cold start.
fn start_checks(
    spec: &ServerSpec,
    status: Option<&ServerStatus>,
    sizes: &std::collections::BTreeMap<String, usize>,
    c: &mut Vec<Check>,
) {
    let name = spec.name.as_str();
    let quoted = shell_quote(name);
    let timeout = spec.startup_timeout;
    match (&spec.hold, status) {
        (Some(Hold::Unapproved), _) => c.push(
            Check::warn("start", "not started: it is not approved").hint(format!(
                "approve it with `harness9 mcp approve {quoted}`, then run `harness9 doctor {quoted}` again"
            )),
        ),
        (Some(_), _) => c.push(Check::warn(
            "start",
            "not started: its entry is invalid (see above)",
        )),
        (None, Some(ServerStatus::Connected { tools, info })) => {
            let bytes = sizes.get(name).copied().unwrap_or(0);
            connected_checks(info, *tools, bytes, timeout, c);
        }
        (None, Some(ServerStatus::Failed { error, stderr_tail })) => {
            failed_checks(error, stderr_tail, timeout, c)
        }
        (None, Some(ServerStatus::NeedsLogin { .. })) => c.push(Check::warn(
            "start",
            "not connected: it needs a login (see oauth)",
        )),
        (None, Some(ServerStatus::Restarting { last_error, .. })) => c.push(
            Check::fail(
                "start",
                format!("connected, then exited: {last_error}"),
            )
            .hint("it crashes after starting; run its command by hand to see why"),
        ),
        (None, Some(other)) => c.push(
            Check::fail(
                "start",
                format!("still {} after {}", other.label(), fmt_secs(measure_bound(timeout))),
            )
            .hint("it did not settle; check it by hand"),
        ),
        (None, None) => c.push(Check::fail("start", "the runtime did not report it")),
    }
}

/// The checks of a server that connected: its start time, its era, its tools and their size
/// (`bytes` of definitions).
fn connected_checks(
    info: &harness9_actors::messages::ConnectionInfo,
    tools: usize,
    bytes: usize,
    timeout: Duration,
    c: &mut Vec<Check>,
) {
    c.push(start_check(info.connect_time, timeout));
    c.push(Check::ok(
        "era",
        format!(
            "protocol {} ({} era), server {}",
            info.protocol_version,
            info.era.label(),
            info.server_info.label()
        ),
    ));
    let detail = format!(
        "{tools} tool{}, {bytes} bytes of tool definitions (~{} tokens)",
        if tools == 1 { "" } else { "s" },
        crate::agent::toolsearch::tokens(bytes)
    );
    c.push(if tools == 0 {
        Check::warn("tools", detail)
            .hint("it lists no tools; check its enabledTools/disabledTools and the server")
    } else {
        Check::ok("tools", detail)
    });
}

/// The checks of a server whose start failed (`error`): a timeout or another failure, and
/// the last lines it wrote to stderr.
fn failed_checks(error: &str, stderr_tail: &[String], timeout: Duration, c: &mut Vec<Check>) {
    if error.starts_with(harness9_actors::supervisor::STARTUP_TIMED_OUT) {
        c.push(
            Check::fail(
                "start",
                format!(
                    "no tools listed within {}, well past its startupTimeoutSec of {}: it hangs or needs far longer",
                    fmt_secs(measure_bound(timeout)),
                    fmt_secs(timeout)
                ),
            )
            .hint("check that it speaks MCP on stdout; if it is only slow, raise \"startupTimeoutSec\""),
        );
    } else {
        c.push(
            Check::fail("start", format!("did not start: {error}")).hint(
                if stderr_tail.is_empty() {
                    "run its command by hand to see why"
                } else {
                    "see its stderr below; run its command by hand to see more"
                },
            ),
        );
    }
    if !stderr_tail.is_empty() {
        c.push(
            Check::warn(
                "stderr",
                format!(
                    "the last {} line{} it wrote to stderr:",
                    stderr_tail
                        .len()
                        .min(crate::app::diagnostics::doctor::MAX_LINES),
                    if stderr_tail.len() == 1 { "" } else { "s" }
                ),
            )
            .lines(stderr_tail),
        );
    }
}

/// The OAuth check of HTTP server `name` at `url`, by its grant; `needs` when it is waiting
/// for a login.
fn oauth_check(
    name: &str,
    url: &str,
    oauth: &harness9_actors::oauth::OAuthSpec,
    needs: bool,
) -> Check {
    let kind = oauth.config.grant;
    if let (harness9_actors::oauth::GrantKind::Enterprise, Some(idp)) = (kind, &oauth.config.idp) {
        return enterprise_check(name, idp, oauth, needs);
    }
    if kind.unattended() {
        // Tokens from the client's credentials or the workload's token: no login to check.
        let client = oauth.config.client_id.as_deref().unwrap_or("-");
        return if needs {
            Check::fail(
                "oauth",
                format!("grant {}: the server refused its token", kind.name()),
            )
            .hint("check the server's oauth entry (client id, credentials, scopes)")
        } else {
            Check::ok(
                "oauth",
                format!(
                    "grant {} (client {}): tokens got and renewed by the runtime, no login",
                    kind.name(),
                    crate::sanitize::clean_line(client)
                ),
            )
        };
    }
    let grant = oauth.store.load(url);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let login = format!("run `harness9 mcp login {}`", shell_quote(name));
    match (grant, needs) {
        (Some(_), true) => {
            Check::fail("oauth", "needs login: the server refused the stored login").hint(login)
        }
        (None, true) => Check::fail("oauth", "needs login: the server answered 401").hint(login),
        (Some(g), false) => grant_check(
            &g.issuer,
            &g.scopes,
            g.expires_at,
            g.refresh_token.is_some(),
            now,
        ),
        (None, false) => Check::ok(
            "oauth",
            "not logged in (the server did not ask for a login)",
        ),
    }
}

/// The OAuth check of the enterprise grant: one SSO login at the user's IdP, then tokens by
/// the runtime.
fn enterprise_check(
    name: &str,
    idp: &harness9_actors::oauth::IdpConfig,
    oauth: &harness9_actors::oauth::OAuthSpec,
    needs: bool,
) -> Check {
    let issuer = crate::sanitize::clean_line(&idp.issuer);
    let login = format!("run `harness9 mcp login {}`", shell_quote(name));
    let stored = idp.id_token_file.is_some() || oauth.store.load(&idp.store_key()).is_some();
    match (needs, stored) {
        (_, false) => Check::fail(
            "oauth",
            format!("grant enterprise: no SSO login at the identity provider {issuer}"),
        )
        .hint(login),
        (true, true) => Check::fail(
            "oauth",
            format!("grant enterprise (identity provider {issuer}): the server refused its token"),
        )
        .hint(format!("{login} again; if it is still refused, check the server's oauth entry and [enterprise_idp]")),
        (false, true) => Check::ok(
            "oauth",
            format!("grant enterprise (identity provider {issuer}): SSO login kept, tokens got and renewed by the runtime"),
        ),
    }
}

/// The model settings: which provider and model, the key's variable (its name only), a
/// bounded request to the provider's model list (reachable, key accepted, model known).
async fn model_checks(opts: &SessionOptions, client: &awc::Client) -> Vec<Check> {
    let settings = match opts.model_settings() {
        Ok(s) => s,
        Err(e) => {
            return vec![Check::fail("settings", e.to_string())
                .hint("fix the settings; `harness9 run` and the session need a model")]
        }
    };
    let Some(p) = settings.provider else {
        return vec![Check::warn("provider", "no model provider is configured").hint(
            "set ANTHROPIC_API_KEY or OPENAI_API_KEY (with OPENAI_BASE_URL for a local server), or provider in harness9.toml; the servers work without one",
        )];
    };
    let mut out = vec![Check::ok(
        "provider",
        format!("{} at {}, model {}", p.kind, p.base_url, p.model),
    )];
    let key_var = p.kind.key_var();
    out.push(match &p.api_key {
        Some(_) => Check::ok("key", format!("{key_var} is set")),
        None => Check::ok(
            "key",
            format!("{key_var} is not set: no key is sent (a local server needs none)"),
        ),
    });
    let (url, req) = models_request(client, &p);
    let answer = tokio::time::timeout(PROBE_TIMEOUT, list_models(req)).await;
    let (status, body) = match answer {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => return unreachable(out, unreachable_check(&p, Some(&e))),
        Err(_) => return unreachable(out, unreachable_check(&p, None)),
    };
    out.push(Check::ok(
        "reachable",
        format!("{} answered (GET {url}: HTTP {status})", p.base_url),
    ));
    if status == 401 || status == 403 {
        let key = &mut out[1];
        *key = match &p.api_key {
            Some(_) => Check::fail(
                "key",
                format!("the provider refused {key_var} (HTTP {status})"),
            )
            .hint(format!("check the key in {key_var}")),
            None => Check::fail("key", format!("the provider wants a key (HTTP {status})"))
                .hint(format!("set {key_var}")),
        };
    }
    out.push(match body.as_deref().and_then(model_ids) {
        Some(ids) => model_check(&p.model, &ids),
        None => Check::warn(
            "model",
            format!(
                "cannot check: the provider does not list its models (GET {url}: HTTP {status})"
            ),
        ),
    });
    out
}

/// The provider's answer to `req`: its status, and the body of a `200` (at most
/// [`MAX_MODEL_LIST`]).
async fn list_models(req: awc::ClientRequest) -> Result<(u16, Option<Vec<u8>>), String> {
    let mut resp = req.send().await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = if status == 200 {
        resp.body()
            .limit(MAX_MODEL_LIST)
            .await
            .ok()
            .map(|b| b.to_vec())
    } else {
        None
    };
    Ok((status, body))
}

/// The model checks so far, ended by the failed `reachable` check and an unchecked model.
fn unreachable(mut out: Vec<Check>, reachable: Check) -> Vec<Check> {
    out.push(reachable);
    out.push(Check::warn(
        "model",
        "cannot check: the provider is not reachable",
    ));
    out
}

/// The request for the provider's model list, with its key; its URL.
fn models_request(
    client: &awc::Client,
    p: &crate::agent::model::ProviderConfig,
) -> (String, awc::ClientRequest) {
    use crate::agent::model::ProviderKind;
    let url = match p.kind {
        ProviderKind::Anthropic => format!("{}/v1/models", p.base_url),
        ProviderKind::OpenAi => format!("{}/models", p.base_url),
    };
    let mut req = client.get(&url);
    match p.kind {
        ProviderKind::Anthropic => {
            req = req.insert_header(("anthropic-version", "2023-06-01"));
            if let Some(k) = &p.api_key {
                req = req.insert_header(("x-api-key", k.as_str()));
            }
        }
        ProviderKind::OpenAi => {
            if let Some(k) = &p.api_key {
                req = req.insert_header(("authorization", format!("Bearer {k}")));
            }
        }
    }
    (url, req)
}

/// The failed `reachable` check of a provider that could not be reached (`error`), or did not
/// answer within [`PROBE_TIMEOUT`] (`None`).
fn unreachable_check(p: &crate::agent::model::ProviderConfig, error: Option<&str>) -> Check {
    let url_var = p.kind.base_url_var();
    match error {
        Some(e) => {
            let hint = harness9_actors::net::certificate_hint(e);
            Check::fail("reachable", format!("cannot reach {}: {e}{hint}", p.base_url)).hint(
                format!("check the base URL (--base-url, {url_var} or base_url in harness9.toml) and that the server runs"),
            )
        }
        None => Check::fail(
            "reachable",
            format!(
                "{} did not answer within {}",
                p.base_url,
                fmt_secs(PROBE_TIMEOUT)
            ),
        )
        .hint(format!(
            "check the base URL ({url_var}) and that the server runs"
        )),
    }
}
