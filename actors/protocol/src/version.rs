//! MCP protocol revisions, their negotiation, and the era a connection speaks.

use std::fmt;

/// The revision we offer in `initialize`.
pub const LATEST: ProtocolVersion = ProtocolVersion::V2025_11_25;

/// A protocol revision this client can speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// The first published revision (HTTP+SSE era).
    V2024_11_05,
    /// Streamable HTTP, tool annotations.
    V2025_03_26,
    /// Structured tool output, elicitation.
    V2025_06_18,
    /// The last revision of the handshake era.
    V2025_11_25,
    /// The first revision of the stateless era: no handshake, `_meta` on every request.
    V2026_07_28,
}

/// The stateless revision we speak.
pub const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

impl ProtocolVersion {
    /// Every revision of the handshake era we accept, oldest first.
    pub const HANDSHAKE_ERA: [ProtocolVersion; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];

    /// Every revision we speak, oldest first.
    pub const KNOWN: [ProtocolVersion; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The wire string, e.g. `2025-11-25`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string of either era; `None` for a revision we do not speak.
    pub fn parse(s: &str) -> Option<Self> {
        Self::KNOWN.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether this revision is of the stateless era (no `initialize`).
    pub fn is_stateless(self) -> bool {
        self >= MODERN
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a connection talks to its server, decided once per server (and cached by the
/// supervisor for the next generation).
///
/// The handshake era (`initialize` -> `notifications/initialized` -> requests) is what the npm
/// reference servers speak. The stateless era (2026-07-28) has no handshake: every request
/// carries `_meta` with the version, our capabilities and our identity. Code that builds a
/// request asks the era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// A negotiated handshake-era revision.
    Handshake(ProtocolVersion),
    /// A stateless-era revision, found by `server/discover` or pinned.
    Stateless(ProtocolVersion),
}

impl Era {
    /// The revision string to report in status and, for HTTP, in `MCP-Protocol-Version`.
    pub fn version_str(&self) -> &'static str {
        self.version().as_str()
    }

    /// The revision.
    pub fn version(&self) -> ProtocolVersion {
        match self {
            Era::Handshake(v) | Era::Stateless(v) => *v,
        }
    }

    /// `handshake` or `stateless`, as `mcp list`, the panel and the trace show it.
    pub fn label(&self) -> &'static str {
        match self {
            Era::Handshake(_) => "handshake",
            Era::Stateless(_) => "stateless",
        }
    }

    /// Whether requests carry the stateless `_meta`.
    pub fn is_stateless(&self) -> bool {
        matches!(self, Era::Stateless(_))
    }

    /// The era a revision belongs to.
    pub fn of(v: ProtocolVersion) -> Era {
        if v.is_stateless() {
            Era::Stateless(v)
        } else {
            Era::Handshake(v)
        }
    }
}

/// Checks the server's answer to our `initialize` offer.
pub fn negotiate(answered: &str) -> Result<Era, String> {
    match ProtocolVersion::parse(answered) {
        // A server that answers a stateless revision speaks it: requests carry `_meta` then.
        Some(v) => Ok(Era::of(v)),
        None => Err(format!(
            "server answered protocol version {answered:?}; this client speaks {}",
            ProtocolVersion::HANDSHAKE_ERA
                .map(|v| v.as_str())
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_accepts_the_revisions_we_speak() {
        for v in ProtocolVersion::HANDSHAKE_ERA {
            assert_eq!(negotiate(v.as_str()), Ok(Era::Handshake(v)));
        }
        assert_eq!(negotiate("2026-07-28"), Ok(Era::Stateless(MODERN)));
        let err = negotiate("1999-01-01").unwrap_err();
        assert!(
            err.contains("1999-01-01") && err.contains("2025-11-25"),
            "{err}"
        );
    }
}
