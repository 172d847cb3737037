//! Positions in a config's text: serde_json errors without their position suffix, byte offsets
//! as line and column, and where each server's key starts.

/// Strips serde_json's ` at line L column C` suffix.
pub(super) fn bare(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) if e.line() > 0 => s[..i].to_owned(),
        _ => s,
    }
}

/// The 1-based line and column of byte `offset` in `text` (columns count bytes, as serde_json's).
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = 1 + before.iter().filter(|b| **b == b'\n').count();
    let start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    (line, offset - start + 1)
}

/// Where each server's key starts: `(name, line, column)`, 1-based, in file order. A small scan
/// that tracks strings and nesting; only keys directly inside the top-level `mcpServers`.
pub(super) fn server_positions(text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let (mut line, mut col) = (1usize, 0usize);
    let mut depth = 0usize;
    let mut in_servers = false;
    let mut last_top_key = String::new();
    let mut chars = text.chars().peekable();
    let mut pending: Option<(String, usize, usize)> = None;
    while let Some(c) = chars.next() {
        col += 1;
        match c {
            '\n' => {
                line += 1;
                col = 0;
            }
            '"' => {
                let (l0, c0) = (line, col);
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    col += 1;
                    match c {
                        '\\' => {
                            if let Some(e) = chars.next() {
                                col += 1;
                                s.push(e);
                            }
                        }
                        '"' => break,
                        '\n' => {
                            line += 1;
                            col = 0;
                        }
                        c => s.push(c),
                    }
                }
                pending = Some((s, l0, c0));
                continue;
            }
            ':' => {
                if let Some((key, l, c)) = pending.take() {
                    if depth == 1 {
                        last_top_key = key;
                    } else if depth == 2 && in_servers {
                        out.push((key, l, c));
                    }
                }
            }
            '{' | '[' => {
                depth += 1;
                if depth == 2 {
                    in_servers = c == '{' && last_top_key == "mcpServers";
                }
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !c.is_whitespace() && c != ':' {
            pending = None;
        }
    }
    out
}
