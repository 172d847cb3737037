//! Edits to a config file that keep the rest of it as it was: a server is added or removed by
//! splicing its entry into or out of the text (other servers, their key order, comments of
//! style and spacing stay), and the file is replaced atomically (a temp file in the same
//! directory, then a rename), so a running session's hot reload never reads half a file.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::value::RawValue;
use serde_json::Value;

/// The byte range of `inner` (a slice of `text`) within `text`.
fn span(text: &str, inner: &str) -> (usize, usize) {
    let start = (inner.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    (start, start + inner.len())
}

/// The top-level members of a JSON object text, each value as its raw slice of `text`.
fn members(text: &str) -> Result<BTreeMap<String, &RawValue>, String> {
    serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))
}

/// The key under which the file keeps its servers: `mcpServers`, or VS Code's `servers`.
fn servers_key(top: &BTreeMap<String, &RawValue>) -> &'static str {
    if !top.contains_key("mcpServers") && top.contains_key("servers") {
        "servers"
    } else {
        "mcpServers"
    }
}

/// `text` with `name: entry` added to its servers (the file made when `text` is empty). A name
/// already there is an error: remove it first; so is a name no server may have
/// ([`crate::config::name_problem`]).
pub fn add_server(text: &str, name: &str, entry: &Value) -> Result<String, String> {
    if let Some(problem) = crate::config::name_problem(name) {
        return Err(problem);
    }
    let entry_text = serde_json::to_string(entry).map_err(|e| e.to_string())?;
    let key = serde_json::to_string(name).map_err(|e| e.to_string())?;
    if text.trim().is_empty() {
        return Ok(format!(
            "{{\n  \"mcpServers\": {{\n    {key}: {entry_text}\n  }}\n}}\n"
        ));
    }
    let top = members(text)?;
    let skey = servers_key(&top);
    match top.get(skey) {
        Some(servers) => {
            let existing: BTreeMap<String, &RawValue> = serde_json::from_str(servers.get())
                .map_err(|_| format!("\"{skey}\" is not an object of servers"))?;
            if existing.contains_key(name) {
                return Err(format!("a server named \"{name}\" is already there"));
            }
            let (start, end) = span(text, servers.get());
            let body = &text[start..end];
            let close = body.rfind('}').ok_or("unterminated servers object")? + start;
            let comma = if existing.is_empty() { "" } else { "," };
            // After the last entry (trailing whitespace before `}` kept as it was).
            let last = text[..close].trim_end().len();
            Ok(format!(
                "{}{comma}\n    {key}: {entry_text}{}",
                &text[..last],
                &text[last..]
            ))
        }
        None => {
            let close = text.rfind('}').ok_or("not a JSON object")?;
            let last = text[..close].trim_end().len();
            let comma = if top.is_empty() { "" } else { "," };
            Ok(format!(
                "{}{comma}\n  \"mcpServers\": {{\n    {key}: {entry_text}\n  }}{}",
                &text[..last],
                &text[last..]
            ))
        }
    }
}

/// `text` without the server `name` (its key, value and one separating comma).
pub fn remove_server(text: &str, name: &str) -> Result<String, String> {
    let top = members(text)?;
    let skey = servers_key(&top);
    let servers = top
        .get(skey)
        .ok_or_else(|| format!("there is no \"{skey}\" object"))?;
    let entries: BTreeMap<String, &RawValue> = serde_json::from_str(servers.get())
        .map_err(|_| format!("\"{skey}\" is not an object of servers"))?;
    // The entries borrow from `servers`, which borrows from `text`: spans are into `text`.
    let value = entries
        .get(name)
        .ok_or_else(|| format!("there is no server named \"{name}\""))?;
    let (vstart, vend) = span(text, value.get());
    let key = serde_json::to_string(name).map_err(|e| e.to_string())?;
    // Back from the value: whitespace, the colon, whitespace, then the key itself.
    let before = text[..vstart].trim_end();
    let before = before
        .strip_suffix(':')
        .ok_or("unexpected text before a server entry")?
        .trim_end();
    let kstart = before
        .strip_suffix(key.as_str())
        .map(str::len)
        .ok_or("the server's key is written in a way this editor does not follow")?;
    let after = &text[vend..];
    let trimmed = after.trim_start();
    let (from, to) = if let Some(rest) = trimmed.strip_prefix(',') {
        // Not the last entry: take the comma after it and the space up to the next key.
        let next = rest.len() - rest.trim_start().len();
        (kstart, vend + (after.len() - trimmed.len()) + 1 + next)
    } else {
        // The last entry: take the comma before it (if any) and the space after that comma.
        let head = text[..kstart].trim_end();
        match head.strip_suffix(',') {
            Some(h) => (h.len(), vend),
            None => (kstart, vend),
        }
    };
    Ok(format!("{}{}", &text[..from], &text[to..]))
}

pub use harness9_base::private_fs::write_atomic;

/// Writes `body` and a newline to `path` as a private file (0600 from its creation, in a
/// directory only we can write to; see [`super::private_fs::write_private`]). The approvals,
/// the OAuth store and the input store are written this way.
pub fn write_private(path: &Path, body: &[u8]) -> std::io::Result<()> {
    let mut all = Vec::with_capacity(body.len() + 1);
    all.extend_from_slice(body);
    all.push(b'\n');
    super::private_fs::write_private(path, &all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn add_then_remove_gives_back_the_file_and_keeps_the_others() {
        let text = "{\n  \"other\": 1,\n  \"mcpServers\": {\n    \"z\": {\"command\": \"z\"},\n    \"a\": {\"command\": \"a\", \"args\": [\"x\"]}\n  }\n}\n";
        let added = add_server(text, "new", &json!({"command": "n"})).unwrap();
        let v: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(v["mcpServers"]["new"]["command"], "n");
        assert_eq!(v["other"], 1);
        // Key order kept: z, a, then the new one.
        assert!(
            added.find("\"z\"") < added.find("\"a\"")
                && added.find("\"a\"") < added.find("\"new\"")
        );
        assert_eq!(remove_server(&added, "new").unwrap(), text);
        assert!(add_server(text, "a", &json!({})).is_err());
        // Removing the first, a middle and the only entry leaves valid JSON without it.
        for name in ["z", "a"] {
            let out = remove_server(text, name).unwrap();
            let v: Value = serde_json::from_str(&out).unwrap();
            assert!(v["mcpServers"].get(name).is_none(), "{out}");
            assert_eq!(v["mcpServers"].as_object().unwrap().len(), 1, "{out}");
        }
        let one = remove_server(&remove_server(text, "z").unwrap(), "a").unwrap();
        let v: Value = serde_json::from_str(&one).unwrap();
        assert!(v["mcpServers"].as_object().unwrap().is_empty(), "{one}");
        assert!(remove_server(text, "nope").is_err());
    }

    #[test]
    fn empty_files_files_without_servers_and_vscode_files() {
        let made = add_server("", "a", &json!({"url": "http://h/mcp"})).unwrap();
        let v: Value = serde_json::from_str(&made).unwrap();
        assert_eq!(v["mcpServers"]["a"]["url"], "http://h/mcp");
        let made = add_server("{\"x\": true}", "a", &json!({"command": "c"})).unwrap();
        let v: Value = serde_json::from_str(&made).unwrap();
        assert_eq!(v["mcpServers"]["a"]["command"], "c");
        assert_eq!(v["x"], true);
        let vscode = "{\"inputs\": [], \"servers\": {}}";
        let made = add_server(vscode, "gh", &json!({"url": "u"})).unwrap();
        let v: Value = serde_json::from_str(&made).unwrap();
        assert_eq!(v["servers"]["gh"]["url"], "u");
        assert!(v.get("mcpServers").is_none());
        assert_eq!(
            remove_server(&made, "gh").unwrap().replace(['\n', ' '], ""),
            vscode.replace(' ', "")
        );
    }
}
