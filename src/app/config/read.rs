//! Bounded reads of regular files: a config, env or settings file named by a repository is read
//! only when it is a regular file of a bounded size.

/// The largest config, env or settings file read (a repository's file is not trusted to be
/// small): 4 MiB.
pub const MAX_CONFIG_BYTES: u64 = harness9_base::read::MAX_TEXT_BYTES;

pub use harness9_base::read::read_regular;
