//! Where the config comes from: the project's `.mcp.json` found from a subdirectory (up to the
//! repository root), the user's `$XDG_CONFIG_HOME/harness9/mcp.json` merged under it, the
//! project winning a name; `--config` replaces both.

use std::time::Duration;

use serde_json::{json, Value};

use super::common::*;

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
    assert!(
        out.status.success(),
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
    assert_eq!(row("a")["status"], "connected");
    assert_eq!(row("a")["source"], project_file.as_str());
    // The project's entry wins: the user's (a command that does not exist) never runs.
    assert_eq!(row("both")["status"], "connected");
    assert_eq!(row("both")["source"], project_file.as_str());
    assert_eq!(row("u")["status"], "connected");
    assert_eq!(row("u")["source"], user_file.display().to_string().as_str());

    let text = run(&["mcp", "list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("shadowed by the project's"), "{text}");

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
