//! The address and origin guard of a login ([`Guard`]), the resolver that applies its rule
//! again at connect time, and the OAuth HTTP clients built on it.

use super::{REQUEST_TIMEOUT, RESOLVE_TIMEOUT};
use crate::parse;
use harness9_net::install_crypto;

/// An HTTP client for OAuth requests (built in the task that uses it: it is `!Send`). It
/// follows no redirect by itself: metadata GETs follow theirs through the [`Guard`], requests
/// with credentials refuse them. Its resolver refuses link-local and unusable addresses (a
/// refresh's token endpoint was checked at login; a host name may have changed since).
pub fn http_client() -> awc::Client {
    client_with(PinnedResolver {
        server_kind: None,
        trusted: Vec::new(),
    })
}

/// The OAuth client of a login, whose resolver applies `guard`'s address rule again when it
/// connects: a host name checked by [`Guard::check`] that resolves elsewhere a moment later
/// (DNS rebinding) is refused then.
pub(super) fn guarded_client(guard: &Guard) -> awc::Client {
    client_with(PinnedResolver {
        server_kind: Some(guard.server_kind),
        trusted: guard.trusted_hosts.clone(),
    })
}

fn client_with(resolver: PinnedResolver) -> awc::Client {
    install_crypto();
    let tcp = actix_tls::connect::Connector::new(actix_tls::connect::Resolver::custom(resolver))
        .service();
    awc::Client::builder()
        // Metadata and token replies delimited by the close are read whole too.
        .connector(
            awc::Connector::new()
                .connector(harness9_net::http_io::CloseBodies(tcp))
                .rustls_0_23(harness9_net::tls_config()),
        )
        .timeout(REQUEST_TIMEOUT)
        .disable_redirects()
        .finish()
}

/// Name resolution for the OAuth client: the addresses of a host name, refused when one of
/// them is of a kind the [`Guard`] refuses (checked at connect time, not only before).
#[derive(Clone)]
struct PinnedResolver {
    /// The MCP server's address kind; `None`: refuse only link-local and unusable addresses.
    server_kind: Option<parse::AddrKind>,
    /// Hosts and ports of trusted origins (the MCP server's, `allowOrigins`): not checked.
    trusted: Vec<(String, u16)>,
}

impl actix_tls::connect::Resolve for PinnedResolver {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> futures_util::future::LocalBoxFuture<
        'a,
        Result<Vec<std::net::SocketAddr>, Box<dyn std::error::Error>>,
    > {
        Box::pin(async move {
            // An IPv6 literal comes bracketed, as in the URL.
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((bare, port)).await?.collect();
            if self
                .trusted
                .iter()
                .any(|(h, p)| *p == port && h.eq_ignore_ascii_case(bare))
            {
                return Ok(addrs);
            }
            for a in &addrs {
                let k = parse::addr_kind(a.ip());
                let ok = match self.server_kind {
                    Some(s) => parse::address_allowed(k, s),
                    None => !matches!(k, parse::AddrKind::LinkLocal | parse::AddrKind::Unusable),
                };
                if !ok {
                    return Err(format!(
                        "{host} resolves to {} address {}: refusing to connect",
                        kind_name(k),
                        a.ip()
                    )
                    .into());
                }
            }
            Ok(addrs)
        })
    }
}

/// Which URLs the OAuth client of one MCP server may reach (the MCP authorization spec's
/// communication security, and no request forgery toward the user's own network):
/// - the MCP server's own origin, and the origins the user lists in `oauth.allowOrigins`:
///   always;
/// - any other: `https` only (plain `http` only to loopback, when the MCP server is itself on
///   loopback), and every address its host resolves to must be public, or of the same kind as
///   the MCP server's own address (loopback, or private); never link-local (169.254/16,
///   fe80::/10: cloud metadata services), unspecified or multicast.
///
/// A challenge's `resource_metadata` must moreover be on the MCP server's own origin (or an
/// allowed one): the protected resource's metadata is the resource's to publish.
pub struct Guard {
    server_url: String,
    server_origin: Option<String>,
    server_kind: parse::AddrKind,
    allow: Vec<String>,
    /// Host and port of the server's origin and of the allowed ones.
    trusted_hosts: Vec<(String, u16)>,
}

impl Guard {
    /// The guard of the MCP server at `server_url`, with the user's `allow` list.
    pub async fn new(server_url: &str, allow: &[String]) -> Guard {
        let origin = parse::origin_of(server_url);
        let server_kind = match &origin {
            Some((_, host, port)) => resolve(host, *port)
                .await
                .ok()
                .and_then(|a| a.first().map(|(_, k)| *k))
                .unwrap_or(parse::AddrKind::Public),
            None => parse::AddrKind::Public,
        };
        let allowed: Vec<_> = allow.iter().filter_map(|a| parse::origin_of(a)).collect();
        let trusted_hosts = origin
            .iter()
            .chain(&allowed)
            .map(|(_, h, p)| (h.clone(), *p))
            .collect();
        Guard {
            server_url: server_url.to_owned(),
            server_origin: origin.map(|o| o.0),
            server_kind,
            allow: allowed.into_iter().map(|o| o.0).collect(),
            trusted_hosts,
        }
    }

    fn trusted(&self, origin: &str) -> bool {
        self.server_origin.as_deref() == Some(origin) || self.allow.iter().any(|a| a == origin)
    }

    /// Whether `url` (named `what` in the error) may be reached.
    pub async fn check(&self, url: &str, what: &str) -> Result<(), String> {
        let Some((origin, host, port)) = parse::origin_of(url) else {
            return Err(format!("{what} {url:?} is not an http(s) URL: refusing it"));
        };
        if self.trusted(&origin) {
            return Ok(());
        }
        let hint = format!(
            "refusing it (if you trust it, list \"{origin}\" in the \"oauth\": {{\"allowOrigins\": [...]}} of this server)"
        );
        let https = origin.starts_with("https://");
        if !https && self.server_kind != parse::AddrKind::Loopback {
            return Err(format!(
                "{what} {url} is not https (the MCP server {} is not on loopback): {hint}",
                self.server_url
            ));
        }
        let addrs = resolve(&host, port)
            .await
            .map_err(|e| format!("{what} {url}: {e}"))?;
        for (ip, kind) in addrs {
            if !parse::address_allowed(kind, self.server_kind) {
                return Err(format!(
                    "{what} {url} is at {} address {ip}, which the MCP server {} (a {} address) may not send us to: {hint}",
                    kind_name(kind),
                    self.server_url,
                    kind_name(self.server_kind)
                ));
            }
            if !https && kind != parse::AddrKind::Loopback {
                return Err(format!(
                    "{what} {url} is not https and {ip} is not loopback: {hint}"
                ));
            }
        }
        Ok(())
    }

    /// Whether a challenge's `resource_metadata` URL may be fetched: on the MCP server's own
    /// origin (or an allowed one), and passing [`Guard::check`].
    pub async fn check_resource_metadata(&self, url: &str) -> Result<(), String> {
        let origin = parse::origin_of(url).map(|o| o.0);
        if !origin.as_deref().is_some_and(|o| self.trusted(o)) {
            return Err(format!(
                "the resource metadata of {} would come from {url:?}, not on the server's own origin: refusing it (list that origin in the \"oauth\": {{\"allowOrigins\": [...]}} of this server if you trust it)",
                self.server_url
            ));
        }
        self.check(url, "the resource metadata").await
    }
}

/// The addresses `host` resolves to, with their kinds (an IP literal as itself).
async fn resolve(
    host: &str,
    port: u16,
) -> Result<Vec<(std::net::IpAddr, parse::AddrKind)>, String> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(vec![(ip, parse::addr_kind(ip))]);
    }
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| {
            format!(
                "resolving {host} took longer than {} s",
                RESOLVE_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let out: Vec<_> = found.map(|a| (a.ip(), parse::addr_kind(a.ip()))).collect();
    if out.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    Ok(out)
}

fn kind_name(k: parse::AddrKind) -> &'static str {
    match k {
        parse::AddrKind::Public => "a public",
        parse::AddrKind::Loopback => "a loopback",
        parse::AddrKind::Private => "a private",
        parse::AddrKind::LinkLocal => "a link-local",
        parse::AddrKind::Unusable => "an unusable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The resolver checks a host name's addresses when it connects (a name that resolves to
    /// loopback is refused for a public server, taken for a loopback one or a trusted origin).
    #[actix_rt::test]
    async fn names_are_checked_when_connecting() {
        use actix_tls::connect::Resolve as _;
        let public = PinnedResolver {
            server_kind: Some(parse::AddrKind::Public),
            trusted: Vec::new(),
        };
        let err = public.lookup("localhost", 80).await.unwrap_err();
        assert!(err.to_string().contains("a loopback address"), "{err}");
        let local = PinnedResolver {
            server_kind: Some(parse::AddrKind::Loopback),
            trusted: Vec::new(),
        };
        assert!(!local.lookup("localhost", 80).await.unwrap().is_empty());
        let trusted = PinnedResolver {
            server_kind: Some(parse::AddrKind::Public),
            trusted: vec![("localhost".to_owned(), 80)],
        };
        assert!(trusted.lookup("localhost", 80).await.is_ok());
        let refresh = PinnedResolver {
            server_kind: None,
            trusted: Vec::new(),
        };
        assert!(refresh.lookup("localhost", 80).await.is_ok());
    }
}
