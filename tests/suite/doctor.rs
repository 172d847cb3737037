//! `harness9 doctor`, run as a user runs it: a healthy server, a missing command, an unset
//! variable, a server slower than its `startupTimeoutSec`, an unapproved project server, an
//! HTTP server that needs a login, `--json`, and the model provider's checks (offline: a port
//! nobody listens on). Each test runs the real binary with a private HOME, config and state
//! directories, and a hard timeout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;
use super::http::{free_port, http_fixture};

/// `harness9 doctor ARGS` in `dir` with everything private to the test: HOME, the user config,
/// the state (approvals, OAuth store, input values), the tool cache; no model settings of this
/// machine. Killed after 90 s (the test then fails on its output).
fn doctor(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness9"));
    without_user_env(&mut cmd);
    cmd.arg("doctor")
        .args(args)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        .env("HARNESS9_TOOL_CACHE", dir.join("tool-cache"))
        .envs(vars.iter().copied())
        .current_dir(dir);
    output_within(cmd, None, Duration::from_secs(90))
}

/// [`doctor`], its exit code checked (`code`); its stdout.
fn doctor_exits(dir: &Path, args: &[&str], env: &[(&str, &str)], code: i32) -> String {
    let out = doctor(dir, args, env);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    stdout
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The check lines of server `name` in doctor's text output (up to the next heading).
fn server_lines(stdout: &str, name: &str) -> Vec<String> {
    let heading = format!("server \"{name}\" (");
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(&heading))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::to_owned)
        .collect()
}

/// The one line of check `check` among `lines`.
fn line<'a>(lines: &'a [String], check: &str) -> &'a str {
    let prefix_ok = |l: &&String| l.get(8..8 + check.len()) == Some(check);
    let found: Vec<&String> = lines.iter().filter(prefix_ok).collect();
    assert_eq!(found.len(), 1, "one {check} line in {lines:#?}");
    found[0]
}

/// The project's `.mcp.json`, as the binary names it.
fn config_of(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir.join(".mcp.json")).expect("the config exists")
}

fn fixture_json(args: &[&str]) -> Value {
    json!({"command": fixture_bin().display().to_string(), "args": args})
}

#[test]
fn a_healthy_server_passes_every_check() {
    let dir = project_with(
        "doctor-ok",
        json!({"everything": stdio_json(everything("x"))}),
    );
    let stdout = doctor_exits(&dir, &["--approve-project"], &[], 0);
    let lines = server_lines(&stdout, "everything");
    assert_eq!(
        line(&lines, "source"),
        format!(
            "  ok    source    from the project config {}",
            config_of(&dir).display()
        )
    );
    assert_eq!(
        line(&lines, "approval"),
        "  ok    approval  approved (--approve-project)"
    );
    assert_eq!(
        line(&lines, "sandbox"),
        "  ok    sandbox   none: it runs with your user's rights; to confine it, set \"sandbox\": true in its entry (or sandbox under [mcp] in the settings)"
    );
    assert!(
        line(&lines, "command").starts_with("  ok    command   `node` is /"),
        "{lines:#?}"
    );
    let start = line(&lines, "start");
    assert!(
        start.starts_with("  ok    start     cold start took ")
            && start.ends_with(" (spawn to tools listed), within its startupTimeoutSec of 30 s"),
        "{start}"
    );
    assert!(
        line(&lines, "era").starts_with(
            "  ok    era       protocol 2025-11-25 (handshake era), server mcp-servers/everything "
        ),
        "{lines:#?}"
    );
    let tools = line(&lines, "tools");
    assert!(
        tools.starts_with("  ok    tools     ")
            && tools.contains(" tools, ")
            && tools.contains(" bytes of tool definitions (~"),
        "{tools}"
    );
    // No OAuth line for a stdio server, no failure anywhere; the model is not configured here.
    assert!(!stdout.lines().any(|l| l.starts_with("  fail")), "{stdout}");
    assert!(
        stdout.contains("\nmodel\n  warn  provider  no model provider is configured; "),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("no check failed; 1 warning"));
}

#[test]
fn a_missing_command_fails_with_what_to_do() {
    let dir = project_with(
        "doctor-missing",
        json!({"gone": {"command": "harness9-no-such-command"}}),
    );
    let stdout = doctor_exits(&dir, &["gone", "--approve-project"], &[], 1);
    let lines = server_lines(&stdout, "gone");
    assert_eq!(
        line(&lines, "command"),
        "  fail  command   command `harness9-no-such-command` not found on PATH; install it or give its full path"
    );
    assert_eq!(
        line(&lines, "start"),
        "  fail  start     did not start: spawn harness9-no-such-command: No such file or directory; run its command by hand to see why"
    );
    // One server named: no model section.
    assert!(!stdout.contains("\nmodel\n"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("2 checks failed, 0 warnings"));
}

#[test]
fn an_unset_variable_is_named_and_a_set_one_never_shown() {
    let mut entry = fixture_json(&[]);
    entry["env"] = json!({"TOKEN": "${H9_DOCTOR_UNSET}", "OTHER": "${H9_DOCTOR_SET}"});
    let dir = project_with("doctor-unset", json!({"v": entry}));
    let secret = "s3cret-doctor-value";
    let out = doctor(&dir, &["--approve-project"], &[("H9_DOCTOR_SET", secret)]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let lines = server_lines(&stdout, "v");
    let env: Vec<&String> = lines
        .iter()
        .filter(|l| l.get(8..11) == Some("env"))
        .collect();
    assert_eq!(
        env,
        [
            "  ok    env       ${H9_DOCTOR_SET} is set",
            "  fail  env       ${H9_DOCTOR_UNSET} is not set; set H9_DOCTOR_UNSET in the environment, or give a default in the entry (${H9_DOCTOR_UNSET:-default})",
        ],
        "{lines:#?}"
    );
    assert_eq!(
        line(&lines, "approval"),
        "  ok    approval  approved (--approve-project)"
    );
    assert_eq!(
        line(&lines, "entry"),
        "  fail  entry     .mcp.json: server \"v\", field env.TOKEN: environment variable H9_DOCTOR_UNSET is not set; set it or write ${H9_DOCTOR_UNSET:-default}; a session does not start it until this is fixed"
    );
    assert_eq!(
        line(&lines, "start"),
        "  warn  start     not started: its entry is invalid (see above)"
    );
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn a_server_slower_than_its_timeout_is_timed_and_given_a_value() {
    // 2.5 s of start against a timeout of 2 s: the doctor waits up to three times the timeout
    // (6 s), so a loaded machine has 3.5 s of slack before this would read as a hang.
    let mut slow = fixture_json(&["--start-delay-ms", "2500"]);
    slow["startupTimeoutSec"] = json!(2);
    // One that never answers the handshake, after a word on stderr: not timed, told so, and
    // what it said is shown (it arrives with its exit, after the start was given up).
    let script = format!(
        "echo waiting for the database >&2; exec '{}' --no-init",
        fixture_bin().display()
    );
    let hung = json!({"command": "sh", "args": ["-c", script], "startupTimeoutSec": 1});
    let dir = project_with("doctor-slow", json!({"slow": slow, "hung": hung}));
    let stdout = doctor_exits(&dir, &["--approve-project"], &[], 1);
    let lines = server_lines(&stdout, "slow");
    let start = line(&lines, "start");
    let (head, tail) = start
        .split_once(" (spawn to tools listed), ")
        .unwrap_or_else(|| panic!("{start}"));
    let took: f64 = head
        .strip_prefix("  fail  start     cold start took ")
        .and_then(|t| t.strip_suffix(" s"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{start}"));
    // A bound, not a speed: the server itself sleeps 2.5 s before it answers, and a time past
    // the doctor's 6 s wait would have been told as a hang, not timed.
    assert!((2.5..=6.0).contains(&took), "{start}");
    let suggested = format!(
        "over its startupTimeoutSec of 2 s: a session gives up on it; set \"startupTimeoutSec\": {} in its entry",
        (took * 3.0).ceil() as u64
    );
    // The measured time is shown to a tenth: the suggestion may round from the exact time.
    assert!(
        tail == suggested
            || tail
                == suggested.replace(
                    &format!(": {} in", (took * 3.0).ceil() as u64),
                    &format!(": {} in", (took * 3.0).ceil() as u64 + 1)
                ),
        "{start}"
    );
    // It did connect: era and tools are there.
    assert!(line(&lines, "tools").starts_with("  ok    tools     21 tools, "));
    let lines = server_lines(&stdout, "hung");
    assert_eq!(
        line(&lines, "start"),
        "  fail  start     no tools listed within 3 s, well past its startupTimeoutSec of 1 s: it hangs or needs far longer; check that it speaks MCP on stdout; if it is only slow, raise \"startupTimeoutSec\""
    );
    assert!(
        stdout.contains(
            "  warn  stderr    the last 1 line it wrote to stderr:\n                  | waiting for the database\n"
        ),
        "{stdout}"
    );
}

#[test]
fn an_unapproved_project_server_is_not_started() {
    let dir = temp_path("doctor-trust");
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("MARKER");
    let script = format!(
        "touch '{}'; exec '{}'",
        marker.display(),
        fixture_bin().display()
    );
    let config = json!({"mcpServers": {"t": {"command": "sh", "args": ["-c", script]}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let stdout = doctor_exits(&dir, &[], &[], 1);
    let lines = server_lines(&stdout, "t");
    assert_eq!(
        line(&lines, "approval"),
        "  fail  approval  not approved: a session does not start it; approve it with `harness9 mcp approve t` (or run with --approve-project)"
    );
    assert_eq!(
        line(&lines, "start"),
        "  warn  start     not started: it is not approved; approve it with `harness9 mcp approve t`, then run `harness9 doctor t` again"
    );
    assert!(!marker.exists(), "an unapproved server was spawned");

    // Approved as the hint says, it starts.
    let mut approve = Command::new(env!("CARGO_BIN_EXE_harness9"));
    approve
        .args(["mcp", "approve", "t"])
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .current_dir(&dir);
    let done = output_within(approve, None, Duration::from_secs(30));
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let stdout = doctor_exits(&dir, &["t"], &[], 0);
    let lines = server_lines(&stdout, "t");
    assert_eq!(
        line(&lines, "approval"),
        "  ok    approval  approved as it is now"
    );
    assert!(line(&lines, "start").starts_with("  ok    start     cold start took "));
    assert!(marker.exists());
}

#[test]
fn an_http_server_that_needs_a_login_says_how_and_a_login_shows_no_token() {
    let srv = http_fixture("oauth", &["--token-ttl", "600"]);
    let url = format!("http://127.0.0.1:{}/mcp", srv.port);
    let dir = project_with("doctor-oauth", json!({"o": {"url": url}}));
    let stdout = doctor_exits(&dir, &["--approve-project"], &[], 1);
    let lines = server_lines(&stdout, "o");
    assert_eq!(
        line(&lines, "url"),
        format!("  ok    url       {url} answered HTTP 401")
    );
    assert_eq!(
        line(&lines, "start"),
        "  warn  start     not connected: it needs a login (see oauth)"
    );
    assert_eq!(
        line(&lines, "oauth"),
        "  fail  oauth     needs login: the server answered 401; run `harness9 mcp login o`"
    );
    assert!(!lines.iter().any(|l| l.get(8..15) == Some("sandbox")));

    // Logged in (through the `$BROWSER` stand-in), the state shows, never the token.
    let exe = env!("CARGO_BIN_EXE_harness9");
    let mut login = Command::new(exe);
    without_user_env(&mut login);
    login
        // Approved by the first run's --approve-project.
        .args(["mcp", "login", "o"])
        .env("HOME", &dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("HARNESS9_OAUTH_STORE", dir.join("oauth.json"))
        .env("BROWSER", format!("{exe} conformance-browser"))
        .current_dir(&dir);
    let done = output_within(login, None, Duration::from_secs(60));
    assert_eq!(done.status.code(), Some(0), "{}", text(&done.stderr));
    let out = doctor(&dir, &["o"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines = server_lines(&stdout, "o");
    let oauth = line(&lines, "oauth");
    assert!(
        oauth.starts_with(&format!(
            "  ok    oauth     logged in at http://127.0.0.1:{}",
            srv.port
        )) && oauth.contains(", scopes mcp offline_access; the access token expires in ")
            && oauth.ends_with(" min (refreshable)"),
        "{oauth}"
    );
    assert!(line(&lines, "start").starts_with("  ok    start     cold start took "));
    for secret in ["at-", "rt-", "code-"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret}: {stdout}\n{stderr}"
        );
    }
}

#[test]
fn json_has_every_server_and_check() {
    let dir = project_with(
        "doctor-json",
        json!({"everything": stdio_json(everything("x")), "gone": {"command": "/nonexistent/h9-doctor"}}),
    );
    // A server of the user's own config: no approval needed.
    let user = dir.join("config/harness9");
    std::fs::create_dir_all(&user).unwrap();
    let user_file = user.join("mcp.json");
    std::fs::write(
        &user_file,
        json!({"mcpServers": {"mine": fixture_json(&[])}}).to_string(),
    )
    .unwrap();
    let stdout = doctor_exits(&dir, &["--json", "--approve-project"], &[], 1);
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let servers = v["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 3, "{v:#}");
    assert_eq!(servers[0]["name"], "everything");
    assert_eq!(servers[0]["transport"], "stdio");
    let check = |s: &Value, name: &str| -> Value {
        s["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} check in {s:#}"))
    };
    let start = check(&servers[0], "start");
    assert_eq!(start["status"], "ok");
    assert!(start.get("hint").is_none(), "{start}");
    assert_eq!(
        check(&servers[0], "era")["detail"]
            .as_str()
            .map(|d| d.starts_with("protocol 2025-11-25 (handshake era)")),
        Some(true)
    );
    let command = check(&servers[1], "command");
    assert_eq!(command["status"], "fail");
    assert_eq!(
        command["detail"],
        "command `/nonexistent/h9-doctor` does not exist or is not executable"
    );
    assert_eq!(command["hint"], "fix the path, or install it there");
    assert_eq!(check(&servers[1], "start")["status"], "fail");
    assert_eq!(servers[2]["name"], "mine");
    assert_eq!(
        check(&servers[2], "source")["detail"],
        format!(
            "from the user config {}",
            std::fs::canonicalize(&user_file).unwrap().display()
        )
    );
    assert_eq!(
        check(&servers[2], "approval")["detail"],
        "not needed: the user config is yours"
    );
    assert_eq!(check(&servers[2], "start")["status"], "ok");
    assert_eq!(v["model"][0]["name"], "provider");
    assert_eq!(v["model"][0]["status"], "warn");
    assert_eq!(v["failed"], 2);
    assert_eq!(v["warnings"], 1);
}

#[test]
fn the_model_provider_is_checked_offline_and_unknown_names_are_usage_errors() {
    let dir = temp_path("doctor-model");
    std::fs::create_dir_all(&dir).unwrap();
    // A port nobody listens on: bound, then closed.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let stdout = doctor_exits(
        &dir,
        &[],
        &[
            ("HARNESS9_PROVIDER", "openai"),
            ("OPENAI_BASE_URL", &base),
            ("HARNESS9_MODEL", "m1"),
        ],
        1,
    );
    let model: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "model")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(model.len(), 5, "{stdout}");
    assert_eq!(
        model[4],
        "  ok    telemetry off; OTEL_TRACES_EXPORTER=otlp with OTEL_EXPORTER_OTLP_ENDPOINT, or export = \"otlp\" under [telemetry], turns it on"
    );
    assert_eq!(
        model[0],
        format!("  ok    provider  openai at {base}, model m1")
    );
    assert_eq!(
        model[1],
        "  ok    key       OPENAI_API_KEY is not set: no key is sent (a local server needs none)"
    );
    assert!(
        model[2].starts_with(&format!("  fail  reachable cannot reach {base}: "))
            && model[2].ends_with("; check the base URL (--base-url, OPENAI_BASE_URL or base_url in harness9.toml) and that the server runs"),
        "{}",
        model[2]
    );
    assert_eq!(
        model[3],
        "  warn  model     cannot check: the provider is not reachable"
    );

    // Telemetry on, to a collector that is not there: a warning naming where the spans go.
    let collector = free_port();
    let endpoint = format!("http://127.0.0.1:{collector}");
    let out = doctor(
        &dir,
        &[],
        &[
            ("HARNESS9_PROVIDER", "openai"),
            ("OPENAI_BASE_URL", &base),
            ("HARNESS9_MODEL", "m1"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ],
    );
    let stdout = text(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.contains(" telemetry "))
        .unwrap_or_default();
    assert!(
        line.starts_with(&format!(
            "  warn  telemetry traces go to {endpoint}/v1/traces, which cannot be reached: "
        )) && line.ends_with("; start the collector, or fix OTEL_EXPORTER_OTLP_ENDPOINT; sessions run either way, the spans are dropped"),
        "{stdout}"
    );
    // An exporter harness9 does not have: a warning that says so (and it runs without).
    let out = doctor(&dir, &[], &[("OTEL_TRACES_EXPORTER", "zipkin")]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  warn  telemetry off: OTEL_TRACES_EXPORTER=zipkin is not supported: harness9 exports with \"otlp\" (or \"none\"); fix the OTEL_* variable or [telemetry] in your settings"),
        "{stdout}"
    );

    // A server the config does not have: a usage error naming the ones it has.
    std::fs::write(
        dir.join(".mcp.json"),
        json!({"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}).to_string(),
    )
    .unwrap();
    let out = doctor(&dir, &["nope"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no server named \"nope\" in .mcp.json (servers: a, b)"),
        "{}",
        text(&out.stderr)
    );
}
