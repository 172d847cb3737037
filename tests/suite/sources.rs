//! Where the config comes from: the project's `.mcp.json` found from a subdirectory (up to the
//! repository root), the user's `$XDG_CONFIG_HOME/harness9/mcp.json` merged under it, a name
//! in both an error naming both files; `--config` replaces both.

use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;

/// The names of the connected servers in `mcp list --json` output.
fn connected(list: &str) -> Vec<String> {
    let rows: Value = serde_json::from_str(list).expect("mcp list --json");
    rows.as_array()
        .expect("an array")
        .iter()
        .filter(|r| r["status"] == "connected")
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_project_config_is_found_from_a_subdirectory_and_merged_with_the_users() {
    let dir = project_with(
        "sources",
        json!({"a": stdio_json(fixture("a", &[])), "both": stdio_json(fixture("both", &[]))}),
    );
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let sub = dir.join("src/deeper");
    std::fs::create_dir_all(&sub).unwrap();
    let user = dir.join("xdg");
    std::fs::create_dir_all(user.join("harness9")).unwrap();
    let user_file = user.join("harness9/mcp.json");
    std::fs::write(
        &user_file,
        json!({"mcpServers": {
            "u": stdio_json(fixture("u", &[])),
            "both": {"command": "/nonexistent/the-users-own"},
        }})
        .to_string(),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut c = harness9_in(&dir);
        without_user_env(&mut c)
            .current_dir(&sub)
            .env("XDG_CONFIG_HOME", &user)
            .args(args);
        output_within(c, None, Duration::from_secs(60))
    };
    let out = run(&["mcp", "list", "--json"]);
    // A name in both files fails (exit 1): neither entry runs.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |n: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("{n} missing from {rows}"))
            .clone()
    };
    let project_file = dir.join(".mcp.json").display().to_string();
    let user_shown = user_file.display().to_string();
    assert_eq!(row("a")["status"], "connected");
    assert_eq!(row("a")["source"], project_file.as_str());
    // Neither the project's entry nor the user's (a command that does not exist) runs under
    // the contested name: an error names both files.
    assert_eq!(row("both")["status"], "failed", "{rows}");
    let error = row("both")["error"].as_str().unwrap_or_default().to_owned();
    assert!(
        error.contains(&project_file) && error.contains(&user_shown),
        "{error}"
    );
    assert_eq!(row("u")["status"], "connected");
    assert_eq!(row("u")["source"], user_shown.as_str());

    // --config replaces both.
    let only = dir.join("only.json");
    std::fs::write(
        &only,
        json!({"mcpServers": {"o": stdio_json(fixture("o", &[]))}}).to_string(),
    )
    .unwrap();
    let only_arg = only.display().to_string();
    let out = run(&["--config", only_arg.as_str(), "mcp", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["o"]);
}

#[test]
fn mcp_add_add_json_and_remove_round_trip_on_both_scopes() {
    let dir = temp_path("add-remove");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let user = dir.join("xdg");
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
        without_user_env(&mut c)
            .current_dir(&dir)
            .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
            .env("XDG_CONFIG_HOME", &user)
            .args(args);
        let out = output_within(c, None, Duration::from_secs(60));
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let fixture = fixture_bin().display().to_string();
    // No --approve-project: a server added with `mcp add` is the user's own and approved.
    let (code, _, err) = run(&[
        "mcp", "add", "fx", "-e", "A=1", "--", &fixture, "--tools", "2",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let entry = json!({"command": fixture, "args": ["--tools", "1"]}).to_string();
    let (code, _, err) = run(&["mcp", "add-json", "mine", &entry, "--scope", "user"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = run(&["mcp", "list", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(connected(&out), ["fx", "mine"], "{out}");
    // A name that is there already, and a stdio command given flags without `--`.
    let (code, _, err) = run(&["mcp", "add", "fx", "--", "true"]);
    // A refusal, not a crash (101); README's "usage error: 2" for a duplicate name is
    // issue 21's section 2 point 9, owned elsewhere.
    assert!(matches!(code, Some(1 | 2)), "{code:?}: {err}");
    assert!(err.contains("already there"), "{err}");
    for (name, scope) in [("fx", "project"), ("mine", "user")] {
        let (code, out, err) = run(&["mcp", "remove", name, "--scope", scope]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("removed server"), "{out}");
    }
    let (_, out, _) = run(&["mcp", "list", "--json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!([]),
        "{out}"
    );
}

#[test]
fn mcp_add_writes_http_and_sse_entries_with_headers_and_a_stdio_env() {
    // Streamable HTTP that refuses a POST without the bearer token; legacy HTTP+SSE that
    // records what it is sent.
    let http = super::http::http_fixture("bearer", &[]);
    let dir = temp_path("add-http");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let recorded = dir.join("sse-requests.jsonl");
    let sse = super::http::http_fixture(
        "legacy-only",
        &["--record", &recorded.display().to_string()],
    );
    let user = dir.join("xdg");
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
        without_user_env(&mut c)
            .current_dir(&dir)
            .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
            .env("XDG_CONFIG_HOME", &user)
            .args(args);
        let out = output_within(c, None, Duration::from_secs(60));
        let (out_s, err_s) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out_s}{err_s}");
        out_s
    };
    let http_url = format!("http://127.0.0.1:{}/mcp", http.port);
    let sse_url = format!("http://127.0.0.1:{}/sse", sse.port);
    // A URL is HTTP without --transport; --transport http says it outright.
    run(&[
        "mcp",
        "add",
        "bare",
        "-H",
        "Authorization: Bearer s3cret-token",
        &http_url,
    ]);
    run(&[
        "mcp",
        "add",
        "api",
        "--transport",
        "http",
        "-H",
        "Authorization: Bearer s3cret-token",
        "-H",
        "X-Team:  blue ",
        &http_url,
    ]);
    run(&[
        "mcp",
        "add",
        "old",
        "--transport",
        "sse",
        "--scope",
        "user",
        "-H",
        "X-Trace: t-42",
        &sse_url,
    ]);
    // -e on a stdio server: the child starts only if both values reach it as given.
    let fixture = fixture_bin().display().to_string();
    let script = r#"test "$A" = 1 && test "$B" = "two words=2" && exec "$0" --tools 1"#;
    run(&[
        "mcp",
        "add",
        "envd",
        "-e",
        "A=1",
        "-e",
        "B=two words=2",
        "--",
        "sh",
        "-c",
        script,
        &fixture,
    ]);
    let project: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".mcp.json")).unwrap()).unwrap();
    let user_file: Value =
        serde_json::from_str(&std::fs::read_to_string(user.join("harness9/mcp.json")).unwrap())
            .unwrap();
    assert_eq!(
        project["mcpServers"]["bare"],
        json!({"type": "http", "url": http_url, "headers": {"Authorization": "Bearer s3cret-token"}})
    );
    assert_eq!(
        project["mcpServers"]["api"],
        json!({"type": "http", "url": http_url,
               "headers": {"Authorization": "Bearer s3cret-token", "X-Team": "blue"}})
    );
    assert_eq!(
        user_file["mcpServers"]["old"],
        json!({"type": "sse", "url": sse_url, "headers": {"X-Trace": "t-42"}})
    );
    assert_eq!(
        project["mcpServers"]["envd"],
        json!({"command": "sh", "args": ["-c", script, fixture],
               "env": {"A": "1", "B": "two words=2"}})
    );
    let out = run(&["mcp", "list", "--json"]);
    let rows: Value = serde_json::from_str(&out).unwrap();
    let transport = |n: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .map(|r| r["transport"].clone())
    };
    assert_eq!(connected(&out), ["api", "bare", "envd", "old"], "{out}");
    assert_eq!(transport("api"), Some(json!("http")), "{out}");
    assert_eq!(transport("old"), Some(json!("sse")), "{out}");
    // The SSE server got its header on the stream it was opened with (names arrive lowercase).
    let sent = std::fs::read_to_string(&recorded).unwrap();
    let get: Value = sent
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["method"] == "GET" && r["path"] == "/sse")
        .unwrap_or_else(|| panic!("no GET /sse in {sent}"));
    assert_eq!(get["headers"]["x-trace"], "t-42", "{get}");
}

#[test]
fn mcp_import_reads_other_tools_files_and_skips_names_already_there() {
    let dir = temp_path("import");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let fixture = fixture_bin().display().to_string();
    let desktop = dir.join("claude_desktop_config.json");
    std::fs::write(
        &desktop,
        json!({"mcpServers": {"a": {"command": fixture, "args": ["--tools", "1"]}}}).to_string(),
    )
    .unwrap();
    let codex = dir.join("config.toml");
    std::fs::write(
        &codex,
        format!("model = \"o3\"\n[mcp_servers.b]\ncommand = \"{fixture}\"\nargs = [\"--tools\", \"2\"]\n[mcp_servers.a]\ncommand = \"other\"\n"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
        without_user_env(&mut c)
            .current_dir(&dir)
            .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
            .env("XDG_CONFIG_HOME", dir.join("xdg"))
            .args(args);
        let out = output_within(c, None, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let d = desktop.display().to_string();
    let out = run(&["mcp", "import", "--from", "claude-desktop", "--file", &d]);
    assert!(out.contains("imported a"), "{out}");
    let c = codex.display().to_string();
    let out = run(&["mcp", "import", "--from", "codex", "--file", &c]);
    assert!(out.contains("imported b"), "{out}");
    assert!(out.contains("skipped a"), "{out}");
    let out = run(&["mcp", "list", "--json"]);
    assert_eq!(connected(&out), ["a", "b"], "{out}");
}

#[test]
fn another_tools_fields_warn_once_each_naming_ours_and_the_server_still_connects() {
    let mut entry = stdio_json(fixture("fs", &[]));
    entry["alwaysAllow"] = json!(["echo"]);
    entry["autoApprove"] = json!(["echo"]);
    entry["timeout"] = json!(60);
    entry["trust"] = json!(true);
    let dir = project_with("foreign", json!({ "fs": entry }));
    let mut c = harness9_in(&dir);
    without_user_env(&mut c).args(["mcp", "list", "--json"]);
    let out = output_within(c, None, Duration::from_secs(60));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(connected(&stdout), ["fs"], "{stdout}");
    // The file as `mcp list` names it (in the working directory: `.mcp.json`).
    let rows: Value = serde_json::from_str(&stdout).unwrap();
    let file = rows[0]["source"].as_str().unwrap().to_owned();
    assert!(file.ends_with(".mcp.json"), "{file}");
    for (field, ours) in [
        (
            "alwaysAllow",
            "`a` at the question allows that tool in this project from then on (a saved rule: `/permissions` lists and forgets it)",
        ),
        ("autoApprove", "--yes allows all"),
        ("timeout", "toolTimeoutSec"),
        ("trust", "`harness9 mcp approve`"),
    ] {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(&format!("\"{field}\" is not read by harness9")))
            .collect();
        assert_eq!(lines.len(), 1, "{field}: {stderr}");
        let line = lines[0];
        assert!(
            line.starts_with("harness9: warning: ")
                && line.contains(&format!(" {file}: server \"fs\": ")),
            "{line}"
        );
        assert!(line.contains(ours), "{field} should name {ours}: {line}");
    }
}

#[test]
fn mcp_import_reads_each_tools_file_from_its_standard_place_into_either_scope() {
    let dir = temp_path("import-places");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    // Claude Code keys a project's servers by its absolute path, as the working directory reads.
    let dir = dir.canonicalize().unwrap();
    let (home, xdg) = (dir.join("home"), dir.join("xdg"));
    let fixture = fixture_bin().display().to_string();
    let entry = |tools: &str| json!({"command": fixture, "args": ["--tools", tools]});
    let write = |path: &std::path::Path, text: String| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let run_in = |cwd: &std::path::Path, xdg: &std::path::Path, args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
        without_user_env(&mut c)
            .current_dir(cwd)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", xdg)
            .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
            .args(args);
        let out = output_within(c, None, Duration::from_secs(60));
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {o}{e}");
        o
    };
    let run = |args: &[&str]| run_in(&dir, &xdg, args);
    let project = ".mcp.json".to_owned();
    let user = xdg.join("harness9/mcp.json").display().to_string();
    // Each tool's file where that tool keeps it, none named with --file; the scopes alternate.
    let steps: [(&str, std::path::PathBuf, String, &str, &[&str]); 5] = [
        (
            "claude-desktop",
            xdg.join("Claude/claude_desktop_config.json"),
            json!({"mcpServers": {"desk": entry("1")}, "globalShortcut": ""}).to_string(),
            "project",
            &["desk"],
        ),
        (
            "claude-code",
            home.join(".claude.json"),
            json!({"numStartups": 3, "mcpServers": {"cc": entry("2")},
                   "projects": {dir.display().to_string(): {"mcpServers": {"ccp": entry("1")}},
                                "/elsewhere": {"mcpServers": {"nothere": entry("1")}}}})
            .to_string(),
            "user",
            &["cc", "ccp"],
        ),
        (
            "cursor",
            home.join(".cursor/mcp.json"),
            json!({"mcpServers": {"cur": entry("3")}}).to_string(),
            "project",
            &["cur"],
        ),
        (
            "vscode",
            dir.join(".vscode/mcp.json"),
            json!({"servers": {"vs": {"type": "stdio", "command": fixture, "args": ["--tools", "1"]}},
                   "inputs": []})
            .to_string(),
            "user",
            &["vs"],
        ),
        (
            "codex",
            home.join(".codex/config.toml"),
            format!("model = \"o3\"\n[mcp_servers.cdx]\ncommand = \"{fixture}\"\nargs = [\"--tools\", \"2\"]\n"),
            "project",
            &["cdx"],
        ),
    ];
    let mut want: Vec<(&str, &String)> = Vec::new();
    for (from, path, text, scope, names) in &steps {
        write(path, text.clone());
        let out = run(&["mcp", "import", "--from", from, "--scope", scope]);
        let target = if *scope == "project" { &project } else { &user };
        for n in *names {
            assert!(
                out.contains(&format!("imported {n} into {target}")),
                "{from}: {out}"
            );
            want.push((n, target));
        }
        assert!(!out.contains("nothere"), "{from}: {out}");
    }
    let out = run(&["mcp", "list", "--json"]);
    let rows: Value = serde_json::from_str(&out).unwrap();
    let mut got: Vec<(String, String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("name"), s("status"), s("source"))
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = want
        .into_iter()
        .map(|(n, src)| (n.to_owned(), "connected".to_owned(), src.clone()))
        .collect();
    want.sort();
    assert_eq!(got, want, "{out}");

    // A project whose config is VS Code's own file: its servers go to the user file.
    let vs_only = dir.join("vs-only");
    write(
        &vs_only.join(".vscode/mcp.json"),
        json!({"servers": {"vs2": entry("1")}}).to_string(),
    );
    std::fs::create_dir_all(vs_only.join(".git")).unwrap();
    let out = run_in(
        &vs_only,
        &dir.join("xdg2"),
        &["mcp", "import", "--from", "vscode", "--scope", "user"],
    );
    assert!(out.contains("imported vs2 into"), "{out}");
}

/// `harness9 ARGS` in `dir` (its own approvals and user dir): (exit code, stdout, stderr).
fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_harness9"));
    without_user_env(&mut c)
        .current_dir(dir)
        .env("HOME", dir.join("home"))
        .env("HARNESS9_APPROVALS", dir.join("approvals.json"))
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .args(args);
    let out = output_within(c, None, Duration::from_secs(60));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn add_add_json_and_import_write_our_file_never_vscodes() {
    let dir = temp_path("no-vscode-writes");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::create_dir_all(dir.join(".vscode")).unwrap();
    let fixture = fixture_bin().display().to_string();
    let vscode = dir.join(".vscode/mcp.json");
    let vs_text =
        json!({"servers": {"vs": {"type": "stdio", "command": fixture, "args": ["--tools", "1"]}},
                         "inputs": []})
        .to_string();
    std::fs::write(&vscode, &vs_text).unwrap();
    let desktop = dir.join("claude_desktop_config.json");
    std::fs::write(
        &desktop,
        json!({"mcpServers": {"desk": {"command": fixture, "args": ["--tools", "1"]}}}).to_string(),
    )
    .unwrap();
    // From a subdirectory, as a user works: the project is found upwards.
    let sub = dir.join("src");
    std::fs::create_dir_all(&sub).unwrap();
    // Removing is no way into VS Code's file either: the error names the flag that is.
    let (code, _, err) = run_in(&sub, &["mcp", "remove", "vs"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--config"), "{err}");
    let (code, out, err) = run_in(&sub, &["mcp", "add", "fx", "--", &fixture, "--tools", "2"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("import --from vscode"),
        "the first write says VS Code's file is no longer read: {out}"
    );
    let entry = json!({"command": fixture, "args": ["--tools", "1"]}).to_string();
    let (code, out, err) = run_in(&sub, &["mcp", "add-json", "js", &entry]);
    assert_eq!(code, Some(0), "{out}{err}");
    let d = desktop.display().to_string();
    let (code, out, err) = run_in(
        &sub,
        &["mcp", "import", "--from", "claude-desktop", "--file", &d],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(&vscode).unwrap(),
        vs_text,
        "VS Code's file was written"
    );
    let ours: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".mcp.json")).unwrap()).unwrap();
    let mut names: Vec<&String> = ours["mcpServers"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(names, ["desk", "fx", "js"], "{ours}");
    // They run, approved as the user's own.
    let (code, out, err) = run_in(&sub, &["mcp", "list", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let mut got = connected(&out);
    got.sort();
    assert_eq!(got, ["desk", "fx", "js"], "{out}");
    // VS Code's file is written only when a flag names it.
    let v = vscode.display().to_string();
    let (code, out, err) = run_in(&sub, &["mcp", "add-json", "named", &entry, "--config", &v]);
    assert_eq!(code, Some(0), "{out}{err}");
    let vs: Value = serde_json::from_str(&std::fs::read_to_string(&vscode).unwrap()).unwrap();
    assert!(vs["servers"].get("named").is_some(), "{vs}");
}

#[test]
fn codex_import_maps_every_field_names_the_dropped_and_checks_before_writing() {
    let dir = temp_path("codex-fields");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let fixture = fixture_bin().display().to_string();
    let codex = dir.join("config.toml");
    std::fs::write(
        &codex,
        format!(
            "[mcp_servers.on]\ncommand = \"{fixture}\"\nargs = [\"--tools\", \"3\"]\nstartup_timeout_sec = 20\ntool_timeout_sec = 90\nenabled_tools = [\"tool_00000\", \"tool_00001\"]\ndisabled_tools = [\"tool_00001\"]\nfuture_field = 1\n[mcp_servers.off]\ncommand = \"{fixture}\"\nenabled = false\n[mcp_servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env_var = \"WEB_TOKEN\"\nfuture_field = \"x\"\n"
        ),
    )
    .unwrap();
    let c = codex.display().to_string();
    let (code, out, err) = run_in(&dir, &["mcp", "import", "--from", "codex", "--file", &c]);
    assert_eq!(code, Some(0), "{out}{err}");
    for line in [
        "imported on into",
        "imported off (disabled) into",
        "imported web into",
        "left out \"future_field\" of 2 servers (on, web): harness9 has no equivalent",
    ] {
        assert!(out.contains(line), "{line:?} missing:\n{out}");
    }
    let ours: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".mcp.json")).unwrap()).unwrap();
    let s = &ours["mcpServers"];
    assert_eq!(s["on"]["startupTimeoutSec"], 20, "{ours}");
    assert_eq!(s["on"]["toolTimeoutSec"], 90, "{ours}");
    assert_eq!(s["on"]["enabledTools"], json!(["tool_00000", "tool_00001"]));
    assert_eq!(s["on"]["disabledTools"], json!(["tool_00001"]));
    assert_eq!(s["off"]["disabled"], true, "{ours}");
    assert_eq!(
        s["web"]["headers"]["Authorization"], "Bearer ${WEB_TOKEN}",
        "{ours}"
    );
    // The enabled server runs (approved) with only the tool the filters leave.
    let (code, out, err) = run_in(&dir, &["mcp", "get", "on", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("tool_00000") && !out.contains("tool_00001") && !out.contains("tool_00002"),
        "{out}"
    );
    // A `"disabled": true` entry through add-json: added, said so, exit 0.
    let entry = json!({"command": fixture, "disabled": true}).to_string();
    let (code, out, err) = run_in(&dir, &["mcp", "add-json", "off2", &entry]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("disabled"), "{out}");
    // An approvals file that cannot be read fails the command before the config is written.
    let before = std::fs::read_to_string(dir.join(".mcp.json")).unwrap();
    std::fs::write(dir.join("approvals.json"), "not json").unwrap();
    let (code, out, err) = run_in(
        &dir,
        &["mcp", "add-json", "late", &entry.replace("true", "false")],
    );
    assert_ne!(code, Some(0), "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join(".mcp.json")).unwrap(),
        before,
        "written, then failed: {err}"
    );
}

#[test]
fn add_json_mistakes_exit_2_and_an_import_names_each_dropped_field_once() {
    let dir = temp_path("add-json-usage");
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let fixture = fixture_bin().display().to_string();
    let entry = json!({"command": fixture}).to_string();
    let (code, _, err) = run_in(&dir, &["mcp", "add-json", "a", "{not json"]);
    assert_eq!(code, Some(2), "bad JSON: {err}");
    assert!(err.contains("not valid JSON"), "{err}");
    let (code, _, err) = run_in(&dir, &["mcp", "add-json", "a", &entry]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run_in(&dir, &["mcp", "add-json", "a", &entry]);
    assert_eq!(code, Some(2), "a duplicate name: {err}");
    assert!(err.contains("already there"), "{err}");
    let (code, _, err) = run_in(&dir, &["mcp", "remove", "nosuch"]);
    assert_eq!(code, Some(2), "no such server: {err}");
    let (code, _, err) = run_in(
        &dir,
        &["mcp", "import", "--from", "cursor", "--file", "nosuch.json"],
    );
    assert_eq!(code, Some(2), "no such file: {err}");
    // A field harness9 does not read is written as given, and said.
    let odd = json!({"command": fixture, "bogus": 1}).to_string();
    let (code, _, err) = run_in(&dir, &["mcp", "add-json", "odd", &odd]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("\"bogus\" is not a field harness9 reads"),
        "{err}"
    );
    // Eight servers with the same field another tool reads: one line for it, with the count.
    let servers: serde_json::Map<String, Value> = (0..8)
        .map(|i| {
            (
                format!("s{i}"),
                json!({"command": fixture, "autoApprove": ["x"]}),
            )
        })
        .collect();
    let desktop = dir.join("desktop.json");
    std::fs::write(&desktop, json!({ "mcpServers": servers }).to_string()).unwrap();
    let d = desktop.display().to_string();
    let (code, out, err) = run_in(
        &dir,
        &["mcp", "import", "--from", "claude-desktop", "--file", &d],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let all = format!("{out}{err}");
    let lines: Vec<&str> = all.lines().filter(|l| l.contains("autoApprove")).collect();
    assert_eq!(lines.len(), 1, "{all}");
    assert!(
        lines[0].contains("of 8 servers") && lines[0].contains("--yes"),
        "{all}"
    );
}
