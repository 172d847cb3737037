//! The seam of the on-disk tool-list cache: what one entry holds ([`CachedList`]) and the
//! store the supervisor reads at start and writes after every live listing
//! ([`ToolListCache`]); the files themselves are the app's (`src/app/tool_cache.rs`). A cached
//! list is offered to the model until the live one arrives, never trusted over it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::protocol::types::{Implementation, ServerCapabilities, Tool};
use crate::protocol::version::Era;
use crate::spec::ServerSpec;

/// A server's tool list as a live connection last gave it, with what came with it.
#[derive(Debug, Clone)]
pub struct CachedList {
    /// Every tool of the listing (all its pages), before the spec's filters.
    pub tools: Arc<[Arc<Tool>]>,
    /// The era the server spoke.
    pub era: Era,
    /// The server's name and version.
    pub server_info: Implementation,
    /// Its `instructions`.
    pub instructions: Option<String>,
    /// Its capabilities.
    pub capabilities: Arc<ServerCapabilities>,
    /// The list's `ttlMs` (stateless era), when it gave one.
    pub ttl_ms: Option<u64>,
    /// When it was written.
    pub written: SystemTime,
}

impl CachedList {
    /// How old the entry is now (zero for a time in the future).
    pub fn age(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.written)
            .unwrap_or_default()
    }
}

/// Where the supervisor keeps tool lists between sessions. Implementations must not block
/// for long: `load` reads one bounded file, `store` hands the list to a writer.
pub trait ToolListCache: Send + Sync {
    /// The fresh entry for exactly this spec, if there is one (a stale, corrupt or hostile
    /// one is `None`, with a warning for the last two).
    fn load(&self, spec: &ServerSpec) -> Option<CachedList>;
    /// Remembers `list` as the one of exactly this spec.
    fn store(&self, spec: &ServerSpec, list: CachedList);
}

/// How a server with a fresh cache entry is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartMode {
    /// At once, in the background, while its cached tools are offered.
    #[default]
    Eager,
    /// On the first call of one of its tools (its cached tools are offered meanwhile).
    Lazy,
}

impl StartMode {
    /// `eager` or `lazy`.
    pub fn label(self) -> &'static str {
        match self {
            StartMode::Eager => "eager",
            StartMode::Lazy => "lazy",
        }
    }
}

/// The cache a supervisor uses and how it starts servers that have an entry.
#[derive(Clone)]
pub struct CacheUse {
    /// The store.
    pub store: Arc<dyn ToolListCache>,
    /// The start mode of a spec that names none.
    pub default_start: StartMode,
    /// Offer cached lists at start (else the cache is only written).
    pub offer: bool,
}
