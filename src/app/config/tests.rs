//! Tests of the config pipeline: parsing, errors and their positions, bounds, reads.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use harness9_actors::oauth::OAuthConfig;
use harness9_actors::{Hold, Roots, SandboxSpec, TransportSpec};

fn env(v: &str) -> Option<String> {
    match v {
        "HOME" => Some("/home/u".into()),
        "TOKEN" => Some("s3cret-token".into()),
        _ => None,
    }
}

fn p(text: &str) -> Result<Config, ConfigError> {
    parse(
        text,
        ".mcp.json",
        Path::new("/proj"),
        &env,
        &EntryDefaults::in_memory(),
    )
}

#[test]
fn a_name_rules_cannot_spell_exactly_holds_its_server() {
    for ok in ["github", "brave.search", "brave-search", "a_b", "_a", "A1"] {
        assert_eq!(name_problem(ok), None, "{ok}");
    }
    for bad in [
        "",
        "my server",
        "a__b",
        "a_",
        "*",
        "é",
        "a/b",
        "n\u{1b}[31m",
    ] {
        assert!(name_problem(bad).is_some(), "{bad:?}");
    }
    let c = p(r#"{"mcpServers": {"a__b": {"command": "x"}, "ok": {"command": "x"}, "x y": {"command": "x", "disabled": true}}}"#).unwrap();
    let Some(Hold::Invalid(why)) = &c.servers[0].hold else {
        panic!("{:?}", c.servers[0])
    };
    assert!(
        why.starts_with(".mcp.json:1:17: server \"a__b\": a server's name may hold only"),
        "{why}"
    );
    assert_eq!(c.servers[1].hold, None);
    assert_eq!(c.disabled, ["x y"]);
}

#[test]
fn parses_every_field_and_infers_the_type() {
    let c = p(r#"{"mcpServers": {
            "a": {"command": "npx", "args": ["-y", "${HOME}/x"], "env": {"K": "${TOKEN}"}, "cwd": "sub",
                  "startupTimeoutSec": 5, "toolTimeoutSec": 1.5, "toolIdleTimeoutSec": 2, "taskTimeoutSec": 90,
                  "enabledTools": ["echo"], "disabledTools": ["x"]},
            "b": {"command": "srv", "env": ["A=1", "B=x=y"]},
            "c": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "d": {"type": "sse", "url": "http://h/sse"},
            "e": {"command": "off", "disabled": true}
        }}"#)
        .unwrap();
    assert_eq!(c.servers.len(), 4);
    assert_eq!(c.disabled, vec!["e".to_owned()]);
    let a = &c.servers[0];
    assert_eq!(
        a.transport,
        TransportSpec::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "/home/u/x".into()],
            env: vec![("K".into(), "s3cret-token".into())],
            cwd: Some(PathBuf::from("/proj/sub")),
        }
    );
    assert_eq!(a.startup_timeout, Duration::from_secs(5));
    assert_eq!(a.tool_timeout, Duration::from_millis(1500));
    assert_eq!(a.tool_idle_timeout, Some(Duration::from_secs(2)));
    assert_eq!(a.task_timeout, Duration::from_secs(90));
    assert!(a.tool_enabled("echo") && !a.tool_enabled("x") && !a.tool_enabled("y"));
    let TransportSpec::Stdio { env, .. } = &c.servers[1].transport else {
        panic!()
    };
    assert_eq!(
        env,
        &vec![("A".into(), "1".into()), ("B".into(), "x=y".into())]
    );
    assert_eq!(c.servers[2].transport.kind(), "http");
    assert_eq!(c.servers[3].transport.kind(), "sse");
    assert!(c.secrets.contains(&"Bearer s3cret-token".to_owned()));
    assert_eq!(c.servers[1].startup_timeout, Duration::from_secs(30));
    assert_eq!(c.servers[1].tool_timeout, Duration::from_secs(60));
    assert_eq!(c.servers[1].tool_idle_timeout, None);
    assert_eq!(
        c.servers[1].task_timeout,
        harness9_actors::spec::DEFAULT_TASK_TIMEOUT
    );
}

/// The message of the server `name`'s hold, when its entry is invalid.
fn invalid<'a>(c: &'a Config, name: &str) -> Option<&'a str> {
    c.servers
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| match &s.hold {
            Some(Hold::Invalid(m)) => Some(m.as_str()),
            _ => None,
        })
}

#[test]
fn errors_name_file_line_column_and_server() {
    // Not JSON: the whole file fails.
    let e = p("{\"mcpServers\": {\n  \"x\": {\"command\": \"a\",}\n}}")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(".mcp.json:2:"), "{e}");
    let e = p(r#"{"mcpServers": ["a"]}"#).unwrap_err().to_string();
    assert!(e.contains("an object of servers by name"), "{e}");
    // Inside one entry: that server fails, with the position in the file.
    let c =
        p("{\"mcpServers\": {\n  \"ws\": {\"type\": \"websocket\", \"url\": \"u\"}\n}}").unwrap();
    let e = invalid(&c, "ws").unwrap();
    assert!(
        e.starts_with(".mcp.json:2:") && e.contains("server \"ws\"") && e.contains("websocket"),
        "{e}"
    );
    let c = p("{\"mcpServers\": {\n\n  \"empty\": {\"args\": []}\n}}").unwrap();
    let e = invalid(&c, "empty").unwrap();
    assert!(
        e.starts_with(".mcp.json:3:") && e.contains("server \"empty\" has neither"),
        "{e}"
    );
    let c = p(r#"{"mcpServers": {"s": {"command": "x", "args": ["${NOPE}"]}}}"#).unwrap();
    assert_eq!(
            invalid(&c, "s").unwrap(),
            ".mcp.json: server \"s\", field args[0]: environment variable NOPE is not set; set it or write ${NOPE:-default}"
        );
}

#[test]
fn one_bad_entry_fails_only_its_server() {
    let c = p(r#"{"mcpServers": {
            "unset": {"command": "x", "env": {"T": "${NOPE}"}},
            "good": {"command": "srv", "env": {"K": "${TOKEN}"}},
            "badfield": {"command": "x", "args": 5},
            "nocmd": {"type": "stdio"},
            "notobj": 7,
            "off": {"command": 5, "disabled": true},
            "slow": {"command": "x", "toolTimeoutSec": 1e20}
        }}"#)
    .unwrap();
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["unset", "good", "badfield", "nocmd", "notobj", "slow"]
    );
    assert_eq!(c.disabled, ["off"]);
    assert!(c.servers[1].hold.is_none());
    assert!(invalid(&c, "unset")
        .unwrap()
        .contains("field env.T: environment variable NOPE"));
    let e = invalid(&c, "badfield").unwrap();
    assert!(
        e.starts_with(".mcp.json:4:")
            && e.contains("server \"badfield\": invalid type: integer `5`"),
        "{e}"
    );
    assert!(invalid(&c, "nocmd").unwrap().contains("has no \"command\""));
    assert!(invalid(&c, "notobj")
        .unwrap()
        .contains("server \"notobj\": invalid type"));
    assert_eq!(
            invalid(&c, "slow").unwrap(),
            ".mcp.json:8:13: server \"slow\" has a bad timeout: \"toolTimeoutSec\" is 100000000000000000000; give a positive number of seconds up to 86400 (24 h)"
        );
    // Only the good server's values are secrets.
    assert_eq!(c.secrets, ["s3cret-token"]);
}

#[test]
fn oauth_entries() {
    let c = p(r#"{"mcpServers": {
            "o": {"url": "http://h/mcp", "oauth": {"clientId": "id", "clientSecret": "${TOKEN}",
                  "scopes": ["a", "b"], "callbackPort": 8765,
                  "clientMetadataUrl": "https://me.example/client.json",
                  "allowOrigins": ["http://10.0.0.9:8443"]}},
            "plain": {"url": "http://h/mcp"},
            "stdio": {"command": "x", "oauth": {}},
            "typo": {"url": "http://h/mcp", "oauth": {"client_id": "x"}}
        }}"#)
    .unwrap();
    let o = c.servers.iter().find(|s| s.name == "o").unwrap();
    let cfg = &o.oauth.as_ref().unwrap().config;
    assert_eq!(cfg.client_id.as_deref(), Some("id"));
    assert_eq!(cfg.client_secret.as_deref(), Some("s3cret-token"));
    assert_eq!(cfg.scopes, ["a", "b"]);
    assert_eq!(cfg.callback_port, Some(8765));
    assert_eq!(
        cfg.client_metadata_url.as_deref(),
        Some("https://me.example/client.json")
    );
    assert_eq!(cfg.allow_origins, ["http://10.0.0.9:8443"]);
    // The secret is redacted from traces.
    assert!(c.secrets.contains(&"s3cret-token".to_owned()));
    // Every HTTP server can log in; the defaults decide everything.
    let plain = c.servers.iter().find(|s| s.name == "plain").unwrap();
    assert_eq!(plain.oauth.as_ref().unwrap().config, OAuthConfig::default());
    assert!(invalid(&c, "stdio")
        .unwrap()
        .contains("OAuth is for HTTP servers only"));
    assert!(invalid(&c, "typo").is_some());
}

#[test]
fn timeouts_are_bounded() {
    assert_eq!(timeout_secs("t", 1.5), Ok(Duration::from_millis(1500)));
    assert_eq!(timeout_secs("t", 86_400.0), Ok(Duration::from_secs(86_400)));
    for bad in [0.0, -1.0, 86_400.5, 1e20, f64::INFINITY, f64::NAN] {
        let e = timeout_secs("--timeout", bad).unwrap_err();
        assert!(
            e.starts_with("--timeout is ") && e.contains("up to 86400 (24 h)"),
            "{e}"
        );
    }
    let c = p(r#"{"mcpServers": {"a": {"command": "x", "startupTimeoutSec": 0}}}"#).unwrap();
    assert!(invalid(&c, "a")
        .unwrap()
        .contains("\"startupTimeoutSec\" is 0;"));
}

#[test]
fn roots_and_log_levels() {
    let c = p(r#"{"mcpServers": {
                "a": {"command": "x"},
                "b": {"command": "x", "roots": false, "logLevel": "warning"},
                "c": {"url": "http://h/mcp", "roots": ["/srv/data", "sub dir"]},
                "d": {"command": "x", "logLevel": "loud"}
            }}"#)
    .unwrap();
    assert_eq!(c.servers[0].roots, Roots::WorkingDirectory);
    assert_eq!(c.servers[0].log_level, None);
    assert_eq!(c.servers[1].roots, Roots::Off);
    assert_eq!(c.servers[1].log_level.as_deref(), Some("warning"));
    assert_eq!(
        c.servers[2].roots,
        Roots::Paths(vec!["/srv/data".into(), "/proj/sub dir".into()])
    );
    let e = invalid(&c, "d").unwrap();
    assert!(e.contains("field logLevel") && e.contains("warning"), "{e}");
}

#[test]
fn windows_paths_with_drive_letters_and_spaces_are_kept_as_written() {
    // Backslashes, a drive letter and spaces reach the spawn untouched (no escaping, no
    // splitting); `${VAR}` still expands inside them.
    let c = p(r#"{"mcpServers": {"w": {
                "command": "C:\\Program Files\\nodejs\\npx.cmd",
                "args": ["-y", "server", "C:\\Users\\Ann Lee\\My Docs", "${HOME}\\x"],
                "env": {"DATA": "D:\\data dir\\"},
                "cwd": "C:\\work dir"
            }}}"#)
    .unwrap();
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = &c.servers[0].transport
    else {
        panic!("stdio")
    };
    assert_eq!(command, r"C:\Program Files\nodejs\npx.cmd");
    assert_eq!(args[2], r"C:\Users\Ann Lee\My Docs");
    assert_eq!(args[3], r"/home/u\x");
    assert_eq!(env[0], ("DATA".into(), r"D:\data dir\".into()));
    // Absolute on Windows, kept; elsewhere not a path of this system, so under the base.
    let cwd = cwd.as_deref().expect("cwd").to_string_lossy().into_owned();
    assert!(cwd.ends_with(r"C:\work dir"), "{cwd}");
}

#[test]
fn what_an_entry_does_not_say_comes_from_the_defaults_it_is_loaded_with() {
    let text = r#"{"mcpServers": {"s": {"command": "a"}, "off": {"command": "a", "sandbox": false},
            "h": {"url": "http://h/mcp"}}}"#;
    let with = |d: &EntryDefaults| {
        parse(text, ".mcp.json", Path::new("/proj"), &|_| None, d).expect("parses")
    };
    let plain = EntryDefaults::in_memory();
    let mut boxed = EntryDefaults::in_memory();
    boxed.sandbox = Some(SandboxField {
        on: true,
        ..SandboxField::default()
    });
    // Two loads in one process, each with its own defaults.
    let (a, b) = (with(&plain), with(&boxed));
    assert!(a.servers[0].sandbox.is_none());
    assert!(b.servers[0].sandbox.as_ref().is_some_and(|s| !s.network));
    assert!(b.servers[1].sandbox.is_none(), "an entry's own false wins");
    let store = |c: &Config| c.servers[2].oauth.as_ref().map(|o| o.store.clone());
    assert!(store(&a).is_some_and(|s| std::sync::Arc::ptr_eq(&s, &plain.oauth_store)));
    assert!(store(&b).is_some_and(|s| std::sync::Arc::ptr_eq(&s, &boxed.oauth_store)));
}

#[test]
fn sandbox_entries() {
    let c = p(r#"{"mcpServers": {
            "on": {"command": "a", "sandbox": true},
            "with": {"command": "a", "sandbox": {"writable": ["out", "${HOME}/x"], "network": true}},
            "off": {"command": "a", "sandbox": false},
            "none": {"command": "a"}
        }}"#)
        .unwrap();
    let sb = |i: usize| c.servers[i].sandbox.clone();
    assert_eq!(
        sb(0),
        Some(SandboxSpec {
            project_dir: PathBuf::from("/proj"),
            writable: vec![],
            network: false
        })
    );
    assert_eq!(
        sb(1),
        Some(SandboxSpec {
            project_dir: PathBuf::from("/proj"),
            writable: vec![PathBuf::from("/proj/out"), PathBuf::from("/home/u/x")],
            network: true
        })
    );
    assert_eq!((sb(2), sb(3)), (None, None));
    // A bad sandbox entry fails only its own server.
    let held = |text: &str, name: &str| {
        let c = p(text).unwrap();
        invalid(&c, name)
            .map(str::to_owned)
            .expect("held as invalid")
    };
    let e = held(
        r#"{"mcpServers": {"h": {"url": "http://h/mcp", "sandbox": true}}}"#,
        "h",
    );
    assert_eq!(
        e,
        ".mcp.json: server \"h\", field sandbox: the sandbox is for stdio servers only; remove it"
    );
    let e = held(
        r#"{"mcpServers": {"s": {"command": "a", "sandbox": {"net": false}}}}"#,
        "s",
    );
    assert!(
        e.contains("server \"s\"") && e.contains("unknown field `net`"),
        "{e}"
    );
    let e = held(
        r#"{"mcpServers": {"s": {"command": "a", "sandbox": "yes"}}}"#,
        "s",
    );
    assert!(e.contains(r#"expected true, false or {"writable""#), "{e}");
}

#[test]
fn expansion_defaults() {
    assert_eq!(expand("${NOPE:-d}/${HOME}", &env).unwrap(), "d//home/u");
    assert_eq!(expand("plain $HOME", &env).unwrap(), "plain $HOME");
    assert!(expand("${HOME", &env).is_err());
    assert!(expand("${A B}", &env).is_err());
}

#[test]
fn only_regular_files_of_a_bounded_size_are_read() {
    let dir = std::env::temp_dir().join(format!("h9-regular-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    let e = read_regular(&fifo, 10).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = read_regular(Path::new("/dev/zero"), 10).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    std::fs::write(dir.join("big"), "x".repeat(11)).unwrap();
    assert!(read_regular(&dir.join("big"), 10)
        .unwrap_err()
        .to_string()
        .contains("larger than 10 bytes"));
    assert_eq!(read_regular(&dir.join("big"), 11).unwrap().len(), 11);
    // An envFile that is a FIFO fails its server, at once.
    let text = format!(
        r#"{{"mcpServers": {{"s": {{"command": "x", "envFile": "{}"}}}}}}"#,
        fifo.display()
    );
    let c = p(&text).unwrap();
    assert!(invalid(&c, "s").unwrap().contains("not a regular file"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_file_is_empty_unless_required() {
    let c = load(
        Path::new("/nonexistent/.mcp.json"),
        false,
        &EntryDefaults::in_memory(),
    )
    .unwrap();
    assert!(c.servers.is_empty());
    assert!(load(
        Path::new("/nonexistent/.mcp.json"),
        true,
        &EntryDefaults::in_memory()
    )
    .is_err());
}

#[test]
fn other_tools_formats_load_or_say_what_they_are() {
    let dir = std::env::temp_dir().join(format!("h9-formats-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("proj/.vscode")).unwrap();
    // VS Code: `servers`, `inputs` (values from the environment headless), the workspace
    // folder, the streamable-http spelling.
    let vscode = dir.join("proj/.vscode/mcp.json");
    std::fs::write(
            &vscode,
            r#"{"inputs": [{"type": "promptString", "id": "api-key", "password": true}],
                "servers": {
                  "gh": {"type": "streamable-http", "url": "https://api.example/mcp",
                         "headers": {"Authorization": "Bearer ${input:api-key}"}},
                  "local": {"command": "${workspaceFolder}/bin/srv", "envFile": "${workspaceFolder}/.env"}}}"#,
        )
        .unwrap();
    std::fs::write(
        dir.join("proj/.env"),
        "# comment\nexport A=1\nB=\"two words\"\n",
    )
    .unwrap();
    let c = load(&vscode, true, &EntryDefaults::in_memory()).unwrap();
    let gh = c.servers.iter().find(|s| s.name == "gh").unwrap();
    let Some(Hold::Invalid(why)) = &gh.hold else {
        panic!("an input without a value holds the server: {gh:?}")
    };
    assert!(why.contains("HARNESS9_INPUT_API_KEY"), "{why}");
    // The TUI asks for it: masked, as the file declares it a password.
    assert_eq!(c.inputs.len(), 1, "{:?}", c.inputs);
    assert_eq!(
        (c.inputs[0].id.as_str(), c.inputs[0].password),
        ("api-key", true)
    );
    assert_eq!(c.inputs[0].file, vscode);
    let local = c.servers.iter().find(|s| s.name == "local").unwrap();
    let TransportSpec::Stdio { command, env, .. } = &local.transport else {
        unreachable!()
    };
    assert_eq!(*command, dir.join("proj/bin/srv").display().to_string());
    assert_eq!(
        *env,
        vec![
            ("A".to_owned(), "1".to_owned()),
            ("B".to_owned(), "two words".to_owned())
        ]
    );
    let c = parse(
        r#"{"servers": {"gh": {"type": "streamableHttp", "url": "https://x/mcp"}}}"#,
        "mcp.json",
        Path::new("/"),
        &|v| (v == "HARNESS9_INPUT_API_KEY").then(|| "k".to_owned()),
        &EntryDefaults::in_memory(),
    )
    .unwrap();
    assert!(matches!(
        c.servers[0].transport,
        TransportSpec::Http { sse: false, .. }
    ));
    // Codex's TOML: a clear error, not "expected value".
    let codex = dir.join("config.toml");
    std::fs::write(&codex, "[mcp_servers.docs]\ncommand = \"npx\"\n").unwrap();
    let e = load(&codex, true, &EntryDefaults::in_memory())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("TOML") && e.contains("Codex") && e.contains("mcpServers"),
        "{e}"
    );
    // ...and the command that converts it, with this very path.
    let convert = format!(
        "`harness9 mcp import --from codex --file {}`",
        codex.display()
    );
    assert!(e.contains(&convert), "{e}\nwanted {convert}");
    // A path a shell would split is quoted.
    let spaced = dir.join("my codex.toml");
    std::fs::write(&spaced, "[mcp_servers.docs]\ncommand = \"npx\"\n").unwrap();
    let e = load(&spaced, true, &EntryDefaults::in_memory())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("--file '{}'`", spaced.display())),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
