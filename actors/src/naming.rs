//! Registered tool names: `mcp__{server}__{tool}`, limited to `[A-Za-z0-9_]` and 64 characters;
//! a tool's name as a rule spells it (its server's identity, the configured name, unsanitized);
//! and which servers' names would collide once sanitized.

/// The longest name models accept.
pub const MAX_NAME: usize = 64;

/// Whether `c` is kept as it is in a registered name.
fn kept(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every character outside `[A-Za-z0-9_]` becomes `_`.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_sanitized(&mut out, s);
    out
}

/// Appends `s` sanitized to `out`: as one copy when it is already clean (most names are),
/// character by character only when it is not.
fn push_sanitized(out: &mut String, s: &str) {
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        out.push_str(s);
    } else {
        out.extend(s.chars().map(|c| if kept(c) { c } else { '_' }));
    }
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
    write_full_name(&mut name, prefix, tool);
    name
}

/// `full_name_prefixed` written into `name` (cleared first), so a table of many tools can
/// build each name in one scratch buffer.
pub fn write_full_name(name: &mut String, prefix: &str, tool: &str) {
    name.clear();
    name.push_str(prefix);
    push_sanitized(name, tool);
    if name.len() > MAX_NAME {
        use std::fmt::Write as _;
        let hash = fnv1a32(name.as_bytes());
        name.truncate(MAX_NAME - 9);
        let _ = write!(name, "_{hash:08x}");
    }
}

/// A tool's name as permission rules spell it: `mcp__{server}__{tool}` with the server's
/// configured name as written (its identity: `brave.search`, not `brave_search`) and the rest
/// of the `registered` name (the tool as registered: sanitized, cut with its hash when long).
/// A registered name whose server prefix was cut (a very long server name) keeps it whole
/// after the server's own prefix, so no rule written for another server matches it either.
pub fn rule_name(server: &str, registered: &str) -> String {
    let rest = registered
        .strip_prefix(server_prefix(server).as_str())
        .unwrap_or(registered);
    format!("mcp__{server}__{rest}")
}

/// The registered names a server's tools can take all start with this: its prefix, up to
/// where a long name is cut for its hash.
fn namespace(server: &str) -> String {
    let mut p = server_prefix(server);
    p.truncate(MAX_NAME - 9);
    p
}

/// Whether two servers' tools could be registered under one name: their sanitized names are
/// equal (`brave.search`, `brave_search`) or one's prefix starts the other's (`a` and `a__b`:
/// `mcp__a__b__x` is tool `b__x` of one and `x` of the other).
pub fn collide(a: &str, b: &str) -> bool {
    let (a, b) = (namespace(a), namespace(b));
    a.starts_with(&b) || b.starts_with(&a)
}

/// The pairs of `servers` (indices, the first lower) whose tool names would collide
/// ([`collide`]), in order: sorted by namespace, so a long list is not compared pair by pair.
pub fn collisions(servers: &[&str]) -> Vec<(usize, usize)> {
    let mut keyed: Vec<(String, usize)> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| (namespace(s), i))
        .collect();
    keyed.sort();
    let mut out = Vec::new();
    for (k, (ns, i)) in keyed.iter().enumerate() {
        // Every namespace that starts with this one sorts right after it.
        for (_, j) in keyed[k + 1..]
            .iter()
            .take_while(|(o, _)| o.starts_with(ns.as_str()))
        {
            out.push(((*i).min(*j), (*i).max(*j)));
        }
    }
    out.sort_unstable();
    out
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

    #[test]
    fn rule_names_spell_the_server_as_configured() {
        assert_eq!(
            rule_name("brave.search", &full_name("brave.search", "web-search")),
            "mcp__brave.search__web_search"
        );
        assert_eq!(
            rule_name("github", &full_name("github", "get_issue")),
            "mcp__github__get_issue"
        );
        let long = "s".repeat(70);
        let registered = full_name(&long, "t");
        assert!(rule_name(&long, &registered).starts_with(&format!("mcp__{long}__mcp__")));
    }

    #[test]
    fn sanitized_names_and_nested_prefixes_collide() {
        assert!(collide("brave.search", "brave_search"));
        assert!(collide("a", "a__b"));
        assert!(collide("a_", "a"));
        assert!(!collide("a", "ab"));
        assert!(!collide("github", "GitHub"));
        // Long names collide on what survives the cut.
        let a = format!("{}x", "s".repeat(60));
        let b = format!("{}y", "s".repeat(60));
        assert!(collide(&a, &b));
        let names = ["a__b", "c", "brave_search", "a", "brave.search", "d"];
        assert_eq!(collisions(&names), [(0, 3), (2, 4)]);
        assert!(collisions(&["x", "y", "xy"]).is_empty());
    }
}
