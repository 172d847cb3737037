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
}

impl ProtocolVersion {
    /// Every revision of the handshake era we accept, oldest first.
    pub const HANDSHAKE_ERA: [ProtocolVersion; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];

    /// The wire string, e.g. `2025-11-25`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
        }
    }

    /// Parses a wire string; `None` for a revision we do not speak.
    pub fn parse(s: &str) -> Option<Self> {
        Self::HANDSHAKE_ERA.into_iter().find(|v| v.as_str() == s)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a connection talks to its server, decided once per connection.
///
/// The handshake era (`initialize` -> `notifications/initialized` -> requests) is what every
/// server speaks today. The stateless era (2026-07-28: no handshake, `_meta` on every request,
/// `server/discover`) will be a second variant; code that builds requests asks the era, so adding
/// it does not touch the handshake path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// A negotiated handshake-era revision.
    Handshake(ProtocolVersion),
}

impl Era {
    /// The revision string to report in status and, for HTTP, in `MCP-Protocol-Version`.
    pub fn version_str(&self) -> &'static str {
        match self {
            Era::Handshake(v) => v.as_str(),
        }
    }
}

/// Checks the server's answer to our `initialize` offer.
pub fn negotiate(answered: &str) -> Result<Era, String> {
    match ProtocolVersion::parse(answered) {
        Some(v) => Ok(Era::Handshake(v)),
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
    fn negotiation_accepts_the_handshake_era_only() {
        for v in ProtocolVersion::HANDSHAKE_ERA {
            assert_eq!(negotiate(v.as_str()), Ok(Era::Handshake(v)));
        }
        let err = negotiate("1999-01-01").unwrap_err();
        assert!(
            err.contains("1999-01-01") && err.contains("2025-11-25"),
            "{err}"
        );
    }
}
