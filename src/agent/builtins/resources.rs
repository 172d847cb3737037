//! The model's view of MCP resources: `list_mcp_resources` (every connected server's resources
//! and templates, or one server's) and `read_mcp_resource` (text as is; an image the model can
//! take as an image; any other binary summarised, never dumped), through the registry.

use std::fmt::Write as _;

use actix::prelude::*;
use harness9_actors::messages::{ListResourceTemplates, ListResources, ListServers, ReadResource};
use harness9_actors::protocol::types::{CallToolResult, ContentBlock, ResourceContents};
use harness9_actors::ToolRegistry;
use serde_json::{json, Value};

use super::{tool, Effects};
use harness9_actors::protocol::types::Tool;

/// Resources and templates `list_mcp_resources` shows at most, over all servers.
const MAX_LISTED: usize = 500;

/// One line about binary contents: its type and decoded size.
pub fn blob_summary(mime: Option<&str>, base64: &str) -> String {
    let len = base64.trim_end_matches('=').len() * 3 / 4;
    format!(
        "[binary contents: {}, {len} bytes; not shown]",
        mime.filter(|m| !m.is_empty()).unwrap_or("unknown type")
    )
}

/// One resource part as text: its text, or a summary of its blob.
pub fn contents_text(c: &ResourceContents) -> String {
    match (&c.text, &c.blob) {
        (Some(t), _) => t.clone(),
        (None, Some(b)) => blob_summary(c.mime_type.as_deref(), b),
        (None, None) => "[no contents]".to_owned(),
    }
}

/// One prompt message's content as text (images and audio summarised).
pub fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => text.clone(),
        ContentBlock::Image { data, mime_type } | ContentBlock::Audio { data, mime_type } => {
            blob_summary(Some(mime_type), data)
        }
        ContentBlock::Resource { resource } => {
            format!("[resource {}]\n{}", resource.uri, contents_text(resource))
        }
        ContentBlock::ResourceLink { uri, name, .. } => format!("[resource link {name}: {uri}]"),
        ContentBlock::Unknown { kind } => format!("[{kind} content]"),
        _ => "[content]".to_owned(),
    }
}

/// The two definitions.
pub(super) fn definitions() -> Vec<Tool> {
    vec![
        tool(
            "list_mcp_resources",
            Effects::Reads,
            format!(
                "List the resources (URIs with names and types) and resource templates that \
                 MCP servers offer; give `server` for one server's only. Shows at most \
                 {MAX_LISTED}. Read one with read_mcp_resource."
            ),
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "An MCP server's name (default: every connected server)."},
                },
                "additionalProperties": false,
            }),
        ),
        tool(
            "read_mcp_resource",
            Effects::Reads,
            "Read one resource of an MCP server by its URI (from list_mcp_resources, a filled \
             template, or a resource_link a tool returned). Text comes back as text, png/jpeg/\
             gif/webp images as images; other binary contents are described and saved whole \
             to a file whose path is given."
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The MCP server's name."},
                    "uri": {"type": "string", "description": "The resource's URI."},
                },
                "required": ["server", "uri"],
                "additionalProperties": false,
            }),
        ),
    ]
}

/// A text result (an error when `is_error`).
pub(super) fn text(t: String, is_error: bool) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::Text { text: t }],
        structured_content: None,
        is_error,
        result_type: None,
        schema_error: None,
        task: None,
    }
}

/// Saves a resource's base64 `blob`, decoded piece by piece, as a new private file in the
/// session's directory under the temp dir (beside the tool results cut for the model; see
/// [`harness9_base::private_fs`]), named after `uri`, within the session's spill cap; its path.
fn save_blob(uri: &str, blob: &str) -> Result<std::path::PathBuf, String> {
    use harness9_base::private_fs;
    let blob = blob.trim();
    let size = (blob.len() / 4 * 3) as u64;
    if !private_fs::reserve_spill(size) {
        return Err(format!(
            "this session already saved its cap of files (HARNESS9_SPILL_MAX, {} bytes)",
            private_fs::spill_cap()
        ));
    }
    let tail = uri
        .rsplit(['/', ':'])
        .find(|s| !s.is_empty())
        .unwrap_or("blob");
    let base = std::env::temp_dir();
    let saved = private_fs::new_session_file(&base, "resource", tail)
        .map_err(|e| format!("cannot save it under {}: {e}", base.display()))
        .and_then(|(path, file)| match decode_into(blob, file) {
            Ok(()) => Ok(path),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        });
    if saved.is_err() {
        private_fs::release_spill(size);
    }
    saved
}

/// Decodes base64 `blob` into `file` a piece at a time (never the whole decoded blob in
/// memory).
fn decode_into(blob: &str, file: std::fs::File) -> Result<(), String> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(file);
    decode_base64_into(blob, &mut out)?;
    out.flush().map_err(|e| format!("cannot write it: {e}"))
}

/// Decodes base64 `blob` into `out` 48 KiB at a time; a message names what went wrong.
pub fn decode_base64_into(blob: &str, out: &mut impl std::io::Write) -> Result<(), String> {
    use base64::Engine as _;
    // A multiple of 4 base64 characters decodes on its own.
    const PIECE: usize = 64 * 1024;
    let mut buf = Vec::with_capacity(PIECE / 4 * 3);
    for piece in blob.as_bytes().chunks(PIECE) {
        buf.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(piece, &mut buf)
            .map_err(|e| format!("its contents are not valid base64 ({e})"))?;
        out.write_all(&buf)
            .map_err(|e| format!("cannot write it: {e}"))?;
    }
    Ok(())
}

fn str_arg<'a>(args: &'a Option<Value>, key: &str) -> Option<&'a str> {
    args.as_ref()?.get(key)?.as_str()
}

/// Runs `list_mcp_resources` or `read_mcp_resource`.
pub(super) async fn run(
    registry: Option<&Addr<ToolRegistry>>,
    name: &str,
    args: &Option<Value>,
) -> CallToolResult {
    let Some(registry) = registry else {
        return text("no MCP servers are connected".to_owned(), true);
    };
    if name == "read_mcp_resource" {
        let (Some(server), Some(uri)) = (str_arg(args, "server"), str_arg(args, "uri")) else {
            return text(
                "read_mcp_resource needs \"server\" and \"uri\" strings".to_owned(),
                true,
            );
        };
        return read(registry, server, uri).await;
    }
    let servers = match str_arg(args, "server") {
        Some(s) => vec![s.to_owned()],
        None => registry.send(ListServers).await.unwrap_or_default(),
    };
    list(registry, &servers).await
}

async fn list(registry: &Addr<ToolRegistry>, servers: &[String]) -> CallToolResult {
    let mut out = String::new();
    let mut shown = 0usize;
    let mut total = 0usize;
    for server in servers {
        let resources = registry
            .send(ListResources {
                server: server.clone(),
            })
            .await;
        let templates = registry
            .send(ListResourceTemplates {
                server: server.clone(),
            })
            .await;
        let (resources, templates) = match (resources, templates) {
            (Ok(Ok(r)), t) => (r, t.ok().and_then(Result::ok).unwrap_or_default()),
            (Ok(Err(e)), _) if servers.len() == 1 => return text(e.to_string(), true),
            // Several servers: one without resources is left out.
            _ => continue,
        };
        if resources.is_empty() && templates.is_empty() {
            continue;
        }
        let _ = writeln!(out, "server {server}:");
        for r in &resources {
            total += 1;
            if shown < MAX_LISTED {
                shown += 1;
                let _ = write!(out, "  {}  {}", r.uri, r.name);
                if let Some(m) = &r.mime_type {
                    let _ = write!(out, " ({m})");
                }
                if let Some(d) = &r.description {
                    let _ = write!(out, ": {}", d.chars().take(200).collect::<String>());
                }
                out.push('\n');
            }
        }
        for t in &templates {
            total += 1;
            if shown < MAX_LISTED {
                shown += 1;
                let _ = write!(out, "  template {}  {}", t.uri_template, t.name);
                if let Some(d) = &t.description {
                    let _ = write!(out, ": {}", d.chars().take(200).collect::<String>());
                }
                out.push('\n');
            }
        }
    }
    if total == 0 {
        return text("no MCP resources".to_owned(), false);
    }
    if shown < total {
        let _ = writeln!(
            out,
            "[{shown} of {total} shown; give `server` to list one server's]"
        );
    }
    text(out, false)
}

async fn read(registry: &Addr<ToolRegistry>, server: &str, uri: &str) -> CallToolResult {
    let result = match registry
        .send(ReadResource {
            server: server.to_owned(),
            uri: uri.to_owned(),
        })
        .await
    {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return text(e.to_string(), true),
        Err(_) => return text("the tool registry stopped".to_owned(), true),
    };
    let mut content = Vec::new();
    for c in result.contents {
        let head = if c.uri != uri {
            format!("[{}]\n", c.uri)
        } else {
            String::new()
        };
        match (c.text, c.blob) {
            (Some(t), _) => content.push(ContentBlock::Text {
                text: format!("{head}{t}"),
            }),
            (None, Some(b)) => {
                let mime = c.mime_type.unwrap_or_default();
                if crate::model::model_image_type(&mime).is_some() {
                    content.push(ContentBlock::Image {
                        data: b,
                        mime_type: mime,
                    });
                } else {
                    let saved = match save_blob(&c.uri, &b) {
                        Ok(path) => format!(" Saved whole to {}.", path.display()),
                        Err(e) => format!(" It could not be saved: {e}."),
                    };
                    content.push(ContentBlock::Text {
                        text: format!("{head}{}{saved}", blob_summary(Some(&mime), &b)),
                    });
                }
            }
            (None, None) => {}
        }
    }
    if content.is_empty() {
        return text(format!("{uri} has no contents"), false);
    }
    CallToolResult {
        content,
        structured_content: None,
        is_error: false,
        result_type: None,
        schema_error: None,
        task: None,
    }
}
