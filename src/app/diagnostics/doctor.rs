//! `harness9 doctor`'s pure parts: a check's result (`ok` / `warn` / `fail`, what was found
//! and what to do), the report of every server and the model, its text and JSON forms, the
//! `${VAR}` names an entry uses, and the start's verdict against `startupTimeoutSec` with a
//! suggested value. The command (`cli/doctor.rs`) does the I/O. Every string put into a check
//! is cleaned for the terminal, and of secrets (a `${VAR}` value shows as its name), when the
//! check is made, so both forms are safe to print.

use std::time::Duration;

use harness9_base::sanitize::clean_line;
use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Works, but worth a look (exit code 0).
    Warn,
    /// Will not work as configured (exit code 1).
    Fail,
}

impl Status {
    /// `ok`, `warn` or `fail`.
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// The most lines a check carries below it (a stderr tail).
pub const MAX_LINES: usize = 10;

/// One check: one line of the text form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked: `source`, `approval`, `sandbox`, `command`, `url`, `env`, `start`,
    /// `era`, `tools`, `oauth`, `stderr`, `provider`, `key`, `reachable`, `model`.
    pub name: String,
    /// How it came out.
    pub status: Status,
    /// What was found (one line, cleaned).
    pub detail: String,
    /// What to do, when there is something to do (one line, cleaned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// More lines shown under it (a failed start's stderr tail, cleaned, at most [`MAX_LINES`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
}

impl Check {
    /// A check named `name` with `status` and `detail` (cleaned to one line).
    pub fn new(name: &str, status: Status, detail: impl AsRef<str>) -> Self {
        Self {
            name: name.to_owned(),
            status,
            detail: clean_line(&shown(detail.as_ref())).into_owned(),
            hint: None,
            lines: Vec::new(),
        }
    }

    /// An `ok` check.
    pub fn ok(name: &str, detail: impl AsRef<str>) -> Self {
        Self::new(name, Status::Ok, detail)
    }

    /// A `warn` check.
    pub fn warn(name: &str, detail: impl AsRef<str>) -> Self {
        Self::new(name, Status::Warn, detail)
    }

    /// A `fail` check.
    pub fn fail(name: &str, detail: impl AsRef<str>) -> Self {
        Self::new(name, Status::Fail, detail)
    }

    /// With what to do (cleaned to one line).
    pub fn hint(mut self, hint: impl AsRef<str>) -> Self {
        self.hint = Some(clean_line(&shown(hint.as_ref())).into_owned());
        self
    }

    /// With the last [`MAX_LINES`] of `lines` under it, each cleaned to one line.
    pub fn lines<S: AsRef<str>>(mut self, lines: &[S]) -> Self {
        let skip = lines.len().saturating_sub(MAX_LINES);
        self.lines = lines[skip..]
            .iter()
            .map(|l| clean_line(&shown(l.as_ref())).into_owned())
            .collect();
        self
    }
}

/// A check's text as it may be printed: `${VAR}` values named, other known secrets redacted
/// (`telemetry::written_form`): a URL with `?key=${KEY}` shows the variable, not the key.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    harness9_actors::telemetry::written_form(text)
}

/// One server's checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerReport {
    /// Its name in the config (cleaned).
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// Its checks, in the order they are shown.
    pub checks: Vec<Check>,
}

impl ServerReport {
    /// A report for server `name` over `transport`, with no checks yet.
    pub fn new(name: &str, transport: &str) -> Self {
        Self {
            name: clean_line(name).into_owned(),
            transport: transport.to_owned(),
            checks: Vec::new(),
        }
    }
}

/// Everything `doctor` found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Each server checked, in config order.
    pub servers: Vec<ServerReport>,
    /// The model settings' checks (empty when only one server was asked about).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model: Vec<Check>,
    /// How many checks failed.
    pub failed: usize,
    /// How many checks warned.
    pub warnings: usize,
}

impl Report {
    /// The report of `servers` and `model`, with its counts.
    pub fn new(servers: Vec<ServerReport>, model: Vec<Check>) -> Self {
        let all = || servers.iter().flat_map(|s| &s.checks).chain(&model);
        let failed = all().filter(|c| c.status == Status::Fail).count();
        let warnings = all().filter(|c| c.status == Status::Warn).count();
        Self {
            servers,
            model,
            failed,
            warnings,
        }
    }
}

/// The width of the check-name column.
const NAME_WIDTH: usize = 9;

/// One check as its line: `  fail  command   command `x` not found on PATH; install it ...`.
pub fn check_line(c: &Check) -> String {
    let mut line = format!(
        "  {:<4}  {:<NAME_WIDTH$} {}",
        c.status.label(),
        c.name,
        c.detail
    );
    if let Some(h) = &c.hint {
        line.push_str("; ");
        line.push_str(h);
    }
    line
}

/// The text form: per server a heading and one line per check (a stderr tail's lines indented
/// under its check), then the model's, then a summary line.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let push_checks = |out: &mut String, checks: &[Check]| {
        for c in checks {
            out.push_str(&check_line(c));
            out.push('\n');
            for l in &c.lines {
                out.push_str(&format!("  {:<4}  {:<NAME_WIDTH$} | {l}\n", "", ""));
            }
        }
    };
    for s in &report.servers {
        out.push_str(&format!("server \"{}\" ({})\n", s.name, s.transport));
        push_checks(&mut out, &s.checks);
    }
    if !report.model.is_empty() {
        out.push_str("model\n");
        push_checks(&mut out, &report.model);
    }
    out.push_str(&match (report.failed, report.warnings) {
        (0, 0) => "all checks passed\n".to_owned(),
        (0, w) => format!("no check failed; {w} warning{}\n", plural(w)),
        (f, w) => format!("{f} check{} failed, {w} warning{}\n", plural(f), plural(w)),
    });
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// One `${...}` reference of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    /// The variable's name (`input:ID` for a VS Code input).
    pub name: String,
    /// Whether the reference gives a default (`${VAR:-default}`).
    pub has_default: bool,
}

/// Every `${...}` reference in the strings of an entry as its file writes it, in order, once
/// each (by name); `${workspaceFolder}` is the project's folder, not a variable, and is left
/// out.
pub fn var_refs(entry: &serde_json::Value) -> Vec<VarRef> {
    fn walk(v: &serde_json::Value, out: &mut Vec<VarRef>) {
        match v {
            serde_json::Value::String(s) => {
                let mut rest = s.as_str();
                while let Some(i) = rest.find("${") {
                    let after = &rest[i + 2..];
                    let Some(end) = after.find('}') else {
                        break;
                    };
                    let inner = &after[..end];
                    let (name, has_default) = match inner.split_once(":-") {
                        Some((n, _)) => (n, true),
                        None => (inner, false),
                    };
                    if !name.is_empty() && name != "workspaceFolder" {
                        match out.iter_mut().find(|r| r.name == name) {
                            // Once without a default is enough to need it.
                            Some(r) => r.has_default &= has_default,
                            None => out.push(VarRef {
                                name: name.to_owned(),
                                has_default,
                            }),
                        }
                    }
                    rest = &after[end + 1..];
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            serde_json::Value::Object(m) => m.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(entry, &mut out);
    out
}

/// The `env` check of each reference: set or not, by name only (`is_set` says whether the
/// variable has a non-empty value; `input_var` names the variable a VS Code input is read
/// from). Never a value.
pub fn var_checks(
    refs: &[VarRef],
    is_set: &dyn Fn(&str) -> bool,
    input_var: &dyn Fn(&str) -> String,
) -> Vec<Check> {
    refs.iter()
        .map(|r| {
            let (shown, var) = match r.name.strip_prefix("input:") {
                Some(id) => (format!("${{input:{id}}}"), input_var(id)),
                None => (format!("${{{}}}", r.name), r.name.clone()),
            };
            if is_set(&var) {
                Check::ok("env", format!("{shown} is set"))
            } else if r.has_default {
                Check::ok("env", format!("{shown} is not set: its default is used"))
            } else {
                Check::fail("env", format!("{shown} is not set")).hint(format!(
                    "set {var} in the environment, or give a default in the entry (${{{}:-default}})",
                    r.name
                ))
            }
        })
        .collect()
}

/// How long `doctor` lets a server start while it measures: three times its
/// `startupTimeoutSec` (at least 2 s more), at most 30 s more, so a server just over its
/// timeout is still timed and a hung one is not waited for long.
pub fn measure_bound(timeout: Duration) -> Duration {
    let longer = (timeout * 3).max(timeout + Duration::from_secs(2));
    longer.min(timeout + Duration::from_secs(30))
}

/// A `startupTimeoutSec` for a server that took `measured` to start: three times that,
/// rounded up to whole seconds (at least 1).
pub fn suggested_timeout(measured: Duration) -> u64 {
    let secs = (measured.as_secs_f64() * 3.0).ceil();
    (secs as u64).max(1)
}

/// `812 ms`, `2.4 s`, `30 s`.
pub fn fmt_secs(d: Duration) -> String {
    // The shared format, of whole milliseconds (a measured 2000.4 ms reads `2 s`).
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    harness9_actors::error::fmt_duration(Duration::from_millis(ms))
}

/// The `start` check of a server that listed its tools after `measured`, against its
/// `startupTimeoutSec` `timeout`: over it fails (a session gives up on it), over half of it
/// warns; both suggest [`suggested_timeout`].
pub fn start_check(measured: Duration, timeout: Duration) -> Check {
    let took = fmt_secs(measured);
    let limit = fmt_secs(timeout);
    let suggest = || {
        format!(
            "set \"startupTimeoutSec\": {} in its entry",
            suggested_timeout(measured)
        )
    };
    if measured > timeout {
        Check::fail(
            "start",
            format!("cold start took {took} (spawn to tools listed), over its startupTimeoutSec of {limit}: a session gives up on it"),
        )
        .hint(suggest())
    } else if measured * 2 > timeout {
        Check::warn(
            "start",
            format!("cold start took {took} (spawn to tools listed), more than half its startupTimeoutSec of {limit}"),
        )
        .hint(suggest())
    } else {
        Check::ok(
            "start",
            format!("cold start took {took} (spawn to tools listed), within its startupTimeoutSec of {limit}"),
        )
    }
}

/// `12 s`, `5 min`, `3 h`, `2 d`: a span, coarsely.
pub fn fmt_span(secs: u64) -> String {
    match secs {
        0..=119 => format!("{secs} s"),
        120..=7199 => format!("{} min", secs / 60),
        7200..=172_799 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// What a stored OAuth grant says, for the `oauth` check (never the token): the issuer, its
/// scopes and when the access token expires, relative to `now` (seconds since the epoch).
pub fn grant_check(
    issuer: &str,
    scopes: &[String],
    expires_at: Option<u64>,
    refreshable: bool,
    now: u64,
) -> Check {
    let scopes = if scopes.is_empty() {
        "no scopes named".to_owned()
    } else {
        format!("scopes {}", scopes.join(" "))
    };
    let refresh = if refreshable { " (refreshable)" } else { "" };
    let base = format!("logged in at {issuer}, {scopes}");
    match expires_at {
        Some(t) if t <= now => {
            let ago = fmt_span(now - t);
            if refreshable {
                Check::ok(
                    "oauth",
                    format!("{base}; the access token expired {ago} ago and is refreshed on the next request"),
                )
            } else {
                Check::warn(
                    "oauth",
                    format!("{base}; the access token expired {ago} ago and cannot be refreshed"),
                )
            }
        }
        Some(t) => Check::ok(
            "oauth",
            format!(
                "{base}; the access token expires in {}{refresh}",
                fmt_span(t - now)
            ),
        ),
        None => Check::ok("oauth", format!("{base}; no expiry given{refresh}")),
    }
}

/// The id of every model in an OpenAI- or Anthropic-style model list (`{"data": [{"id": ...}]}`);
/// `None` when the body is not one.
pub fn model_ids(body: &[u8]) -> Option<Vec<String>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let data = v.get("data")?.as_array()?;
    Some(
        data.iter()
            .filter_map(|m| m.get("id").and_then(|i| i.as_str()).map(str::to_owned))
            .collect(),
    )
}

/// The `model` check of `model` against the ids a provider lists.
pub fn model_check(model: &str, ids: &[String]) -> Check {
    if ids.iter().any(|i| i == model) {
        return Check::ok(
            "model",
            format!("{model} is among the models the provider lists"),
        );
    }
    let some: Vec<&str> = ids.iter().take(8).map(String::as_str).collect();
    let more = if ids.len() > some.len() { ", ..." } else { "" };
    Check::fail(
        "model",
        format!(
            "{model} is not among the {} models the provider lists",
            ids.len()
        ),
    )
    .hint(if some.is_empty() {
        "the provider lists no model; check the base URL".to_owned()
    } else {
        format!(
            "pick one with --model, HARNESS9_MODEL or model in harness9.toml: {}{more}",
            some.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_found_once_each_without_the_project_folder() {
        let entry = json!({
            "command": "${HOME}/bin/x",
            "args": ["--token", "${TOKEN}", "${workspaceFolder}/a", "${OPT:-1}"],
            "env": {"A": "${TOKEN}", "K": "${input:key}"},
            "headers": {"X": "pre${TOKEN}post ${BROKEN"}
        });
        let refs = var_refs(&entry);
        let names: Vec<(&str, bool)> = refs
            .iter()
            .map(|r| (r.name.as_str(), r.has_default))
            .collect();
        // serde_json's map is sorted by key: args, command, env, headers.
        assert_eq!(
            names,
            [
                ("TOKEN", false),
                ("OPT", true),
                ("HOME", false),
                ("input:key", false)
            ]
        );
        // Once without a default is enough to need the variable.
        let both = var_refs(&json!({"args": ["${A:-x}", "${A}"]}));
        assert!(!both[0].has_default);
    }

    #[test]
    fn variables_are_named_never_valued() {
        let refs = var_refs(&json!({"args": ["${SET}", "${UNSET}", "${DEF:-d}", "${input:k}"]}));
        let set = |v: &str| v == "SET" || v == "HARNESS9_INPUT_K";
        let checks = var_checks(&refs, &set, &|id| {
            format!("HARNESS9_INPUT_{}", id.to_uppercase())
        });
        let lines: Vec<String> = checks.iter().map(check_line).collect();
        assert_eq!(
            lines,
            [
                "  ok    env       ${SET} is set",
                "  fail  env       ${UNSET} is not set; set UNSET in the environment, or give a default in the entry (${UNSET:-default})",
                "  ok    env       ${DEF} is not set: its default is used",
                "  ok    env       ${input:k} is set",
            ]
        );
    }

    #[test]
    fn the_start_is_judged_against_the_timeout_with_a_suggestion() {
        let s = |ms| Duration::from_millis(ms);
        let ok = start_check(s(800), s(30_000));
        assert_eq!(ok.status, Status::Ok);
        assert_eq!(
            ok.detail,
            "cold start took 800 ms (spawn to tools listed), within its startupTimeoutSec of 30 s"
        );
        let warn = start_check(s(2100), s(3000));
        assert_eq!(warn.status, Status::Warn);
        assert_eq!(
            warn.hint.as_deref(),
            Some("set \"startupTimeoutSec\": 7 in its entry")
        );
        let fail = start_check(s(2000), s(1000));
        assert_eq!(fail.status, Status::Fail);
        assert!(
            fail.detail.contains("over its startupTimeoutSec of 1 s"),
            "{}",
            fail.detail
        );
        assert_eq!(suggested_timeout(s(2000)), 6);
        assert_eq!(suggested_timeout(s(10)), 1);
        assert_eq!(measure_bound(s(1000)), s(3000));
        assert_eq!(measure_bound(s(500)), s(2500));
        assert_eq!(measure_bound(s(30_000)), s(60_000));
    }

    #[test]
    fn the_text_has_one_line_per_check_and_server_text_is_cleaned() {
        let mut s = ServerReport::new("ev\u{1b}[31mil", "stdio");
        s.checks
            .push(Check::ok("source", "project config /p/.mcp.json"));
        s.checks.push(
            Check::fail("start", "did not start: boom\u{1b}]52;c;x\u{7}")
                .hint("look at its stderr")
                .lines(&["one", "two\u{1b}[2J"]),
        );
        let r = Report::new(vec![s], vec![Check::warn("provider", "none")]);
        assert_eq!((r.failed, r.warnings), (1, 1));
        let text = render(&r);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "server \"evil\" (stdio)");
        assert_eq!(lines[1], "  ok    source    project config /p/.mcp.json");
        assert!(
            lines[2].starts_with("  fail  start     did not start: boom"),
            "{}",
            lines[2]
        );
        assert!(lines[2].ends_with("; look at its stderr"), "{}", lines[2]);
        assert_eq!(lines[3], "                  | one");
        assert_eq!(lines[6], "  warn  provider  none");
        assert_eq!(lines[7], "1 check failed, 1 warning");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["servers"][0]["checks"][1]["status"], "fail");
        assert_eq!(v["servers"][0]["checks"][1]["lines"][1], "two");
        assert!(v["servers"][0]["checks"][0].get("hint").is_none());
        assert_eq!(v["model"][0]["name"], "provider");
    }

    #[test]
    fn a_stderr_tail_keeps_its_last_lines() {
        let many: Vec<String> = (0..25).map(|i| format!("l{i}")).collect();
        let c = Check::warn("stderr", "x").lines(&many);
        assert_eq!(c.lines.len(), MAX_LINES);
        assert_eq!(c.lines[0], "l15");
    }

    #[test]
    fn grants_show_scopes_and_expiry_never_tokens() {
        let c = grant_check(
            "http://as",
            &["read".into(), "write".into()],
            Some(1600),
            true,
            1000,
        );
        assert_eq!(c.status, Status::Ok);
        assert_eq!(
            c.detail,
            "logged in at http://as, scopes read write; the access token expires in 10 min (refreshable)"
        );
        let c = grant_check("http://as", &[], Some(900), false, 1000);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail
                .contains("expired 100 s ago and cannot be refreshed"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn model_lists_are_read_and_judged() {
        let body = br#"{"data": [{"id": "gpt-4.1"}, {"id": "llama3.1"}], "object": "list"}"#;
        let ids = model_ids(body).unwrap();
        assert_eq!(model_check("llama3.1", &ids).status, Status::Ok);
        let c = model_check("llama3", &ids);
        assert_eq!(c.status, Status::Fail);
        assert_eq!(
            c.hint.as_deref(),
            Some("pick one with --model, HARNESS9_MODEL or model in harness9.toml: gpt-4.1, llama3.1")
        );
        assert_eq!(model_ids(b"<html>"), None);
        assert_eq!(model_ids(br#"{"models": []}"#), None);
    }
}
