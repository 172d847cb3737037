//! What the real binary shows of a server a user reads: `mcp list` and `doctor` leave out an
//! empty server version (no `name ;`).

use std::time::Duration;

use serde_json::json;

use super::common::{
    fixture, harness9_in, output_within, project_with, stdio_json, without_user_env,
};

#[test]
fn an_empty_server_version_is_left_out_of_mcp_list_and_doctor() {
    let spec = fixture("blank", &["--server-version", ""]);
    let dir = project_with("shown-version", json!({"blank": stdio_json(spec)}));
    let mut cmd = harness9_in(&dir);
    without_user_env(&mut cmd).args(["mcp", "list"]);
    let out = output_within(cmd, None, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("blank "))
        .unwrap_or_else(|| panic!("no row:\n{stdout}"));
    assert!(row.contains(" fixture; tools live"), "{row}");
    assert!(!row.contains("fixture ;"), "{row}");
    let mut cmd = harness9_in(&dir);
    without_user_env(&mut cmd).args(["doctor", "blank"]);
    let out = output_within(cmd, None, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let era = stdout
        .lines()
        .find(|l| l.contains("era), server "))
        .unwrap_or_else(|| panic!("no era line:\n{stdout}"));
    assert!(era.trim_end().ends_with("era), server fixture"), "{era}");
    let _ = std::fs::remove_dir_all(&dir);
}
