//! The OAuth exchanges over HTTP and the login flow driver: discovery, registration, the
//! authorization code flow with a loopback redirect, token exchange and refresh. Every exchange
//! (headers and body) is bounded in time ([`REQUEST_TIMEOUT`]) and size ([`BODY_LIMIT`]), and
//! a login's whole discovery by [`DISCOVERY_TIMEOUT`]. Every URL a server names is checked by
//! a [`Guard`] before it is fetched (redirect hops included); requests that carry credentials
//! (registration, token, refresh) never follow a redirect. Tokens are checked before they are
//! kept. Errors name URLs and the server's `error`/`error_description`, never a token, code or
//! verifier.

use std::time::Duration;

mod discovery;
mod enterprise;
mod exchange;
mod guard;
mod login;
mod machine;
mod probe;

pub use discovery::{discover, Discovery, ResourceMetadata, ServerMetadata};
pub use enterprise::{sso_login, SSO_NEEDED};
pub use exchange::refresh;
pub use guard::{http_client, Guard};
pub use login::{login, login_with_paste};
pub use machine::{acquire, renew, JWT_BEARER};
pub use probe::{probe, probe_outcome, Probed};

/// How long one OAuth exchange may take, from connecting to the last byte of the body.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a login's whole discovery (every metadata document) may take.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// The shortest access token lifetime believed: an `expires_in` below it is taken as this
/// much, so a server saying `0` does not make every request wait on a refresh first (an
/// access token that really expires earlier gets a `401`, which refreshes it once).
pub const MIN_TOKEN_LIFETIME_SECS: u64 = 60;
/// Redirect hops followed for a metadata GET (each hop checked by the [`Guard`]).
const MAX_METADATA_REDIRECTS: usize = 3;
/// How long resolving a host name for the [`Guard`] may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or token response read.
pub const BODY_LIMIT: usize = 256 * 1024;

/// `fut`, bounded by `limit`; past it, an error saying `what` did not finish in time.
async fn bounded<T>(
    limit: Duration,
    what: impl FnOnce() -> String,
    fut: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "{} took longer than {} s (headers and body): giving up",
            what(),
            limit.as_secs()
        )),
    }
}
