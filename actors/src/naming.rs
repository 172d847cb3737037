//! Registered tool names: `mcp__{server}__{tool}`, limited to `[A-Za-z0-9_]` and 64 characters.

/// The longest name models accept.
pub const MAX_NAME: usize = 64;

/// Every character outside `[A-Za-z0-9_]` becomes `_`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 32 bits: stable across builds and platforms.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// `mcp__{sanitized server}__`: computed once per server.
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}__", sanitize(server))
}

/// The registered name of `tool` on `server`.
pub fn full_name(server: &str, tool: &str) -> String {
    full_name_prefixed(&server_prefix(server), tool)
}

/// `full_name` with the server's prefix given.
pub fn full_name_prefixed(prefix: &str, tool: &str) -> String {
    let mut name = String::with_capacity(prefix.len() + tool.len());
    name.push_str(prefix);
    name.extend(tool.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        }
    }));
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = fnv1a32(name.as_bytes());
    format!("{}_{hash:08x}", &name[..MAX_NAME - 9])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_like_the_seed() {
        assert_eq!(
            full_name("context7", "resolve-library-id"),
            "mcp__context7__resolve_library_id"
        );
        assert_eq!(full_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        assert_eq!(full_name("é", "x"), "mcp_____x");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let a = full_name("server", &"t".repeat(100));
        let b = full_name("server", &format!("{}u", "t".repeat(99)));
        assert_eq!(a.len(), 64);
        assert_eq!(b.len(), 64);
        assert_ne!(a, b);
        assert_eq!(a, full_name("server", &"t".repeat(100)));
        assert!(a.starts_with("mcp__server__ttt"));
        assert_eq!(fnv1a32(b"hello"), 0x4f9f_2cab);
    }
}
