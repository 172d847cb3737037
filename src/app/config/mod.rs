//! The config pipeline: from the files to the session's `ServerSpec`s, in one flow
//! ([`load_merged`]), each stage a file:
//!
//! 1. [`sources`]: which files (the project's `.mcp.json`, the user's `mcp.json`, or the one
//!    `--config`), each [`read`] bounded;
//! 2. [`parse`](mod@parse): the text as JSON, each server entry on its own ([`entry`]: what an
//!    entry may say; [`formats`]: other tools' shapes; `scan`: positions for errors), so one
//!    bad entry fails only its server;
//! 3. [`expand`](mod@expand): `${VAR}`, `${VAR:-default}` and `${input:ID}` ([`input_vars`]:
//!    the values the user gave), as each entry is built into its spec (`build`, its OAuth
//!    grant checked by `grant`);
//! 4. [`trust`]: what a repository (or a sandboxed server) wrote waits for the user's approval;
//! 5. [`merge`]: the session's specs, the user's servers merged under the project's, clashes
//!    held.
//!
//! Only a file that is not JSON, or whose `mcpServers` is not an object of servers, fails as a
//! whole; an error inside one server's entry fails that server alone. What a loaded config
//! holds is in [`types`].

use std::path::Path;

mod build;
mod entry;
mod expand;
mod formats;
mod grant;
pub mod input_vars;
mod merge;
mod parse;
#[cfg(test)]
mod props;
mod read;
mod scan;
pub mod sources;
#[cfg(test)]
mod tests;
pub mod trust;
mod types;

pub use entry::{EntryDefaults, SandboxField};
pub use expand::expand;
pub use formats::{foreign_reason, input_var};
pub use grant::enterprise_idp;
pub use parse::{name_problem, parse};
pub use read::{load, read_regular, MAX_CONFIG_BYTES};
pub use sources::workspace_root;
pub use types::{timeout_secs, Config, ConfigError, Written, DEFAULT_PATH, MAX_TIMEOUT_SECS};

/// The config a session starts with and every hot reload reads: the project config at
/// `project` (`must_exist`: given with `--config`) and the user file `user`, through every
/// stage; `approve_project` (`--approve-project`) approves the project's servers first.
pub(crate) fn load_merged(
    project: &Path,
    must_exist: bool,
    approve_project: bool,
    user: Option<&Path>,
    defaults: &EntryDefaults,
) -> anyhow::Result<Config> {
    // Sources, parse, expand: each file read into its servers' specs.
    let project_cfg = load(project, must_exist, defaults)?;
    let user_cfg = match user {
        Some(u) => sources::load_user(u, defaults)?,
        None => None,
    };
    // Trust: the servers of what a repository or a sandboxed server wrote held to approval.
    let files = trust::Files {
        project,
        given: must_exist,
        user,
    };
    let (project_cfg, user_cfg) = trust::guard(project_cfg, user_cfg, files, approve_project)?;
    // The specs: the user's merged under the project's.
    Ok(merge::merged(project_cfg, user_cfg, approve_project))
}
