//! Where credentials may go: requests carry the configured headers only to the configured
//! URL's origin, and redirects are followed here (awc's own are off) so that a hop to another
//! origin goes without them; relative URLs (`Location`, the legacy `endpoint`) are resolved
//! against the URL they came from.

use std::time::Duration;

use awc::http::StatusCode;

use super::{fail, Conn, Failure};

/// Redirect hops followed for one request.
const MAX_REDIRECTS: usize = 5;

type Response = awc::ClientResponse;

/// Whether two URLs share scheme, host and port.
pub(super) fn same_origin(a: &str, b: &str) -> bool {
    let origin = |u: &str| crate::net::origin_of(u).map(|o| o.0);
    matches!((origin(a), origin(b)), (Some(x), Some(y)) if x == y)
}

impl Conn {
    /// A request to `url`; the configured headers (credentials) go only to the configured
    /// URL's origin.
    pub(super) fn request(
        &self,
        method: awc::http::Method,
        url: &str,
        with_session: bool,
        extra: &[(String, String)],
    ) -> awc::ClientRequest {
        let mut req = self
            .client
            .request(method.clone(), url)
            .insert_header(("Accept", "application/json, text/event-stream"))
            .timeout(self.target.request_timeout);
        // Nearly every request goes to the configured URL itself: no parsing then.
        if url == self.target.url || same_origin(url, &self.target.url) {
            for (k, v) in &self.target.headers {
                req = req.insert_header((k.as_str(), v.as_str()));
            }
        }
        // The OAuth token (and its DPoP proof, made for this method and URL) goes to the
        // server's origin only, like the configured headers.
        if let Some(a) = &self.auth {
            if url == self.target.url || same_origin(url, &self.target.url) {
                for (k, v) in a.headers(&self.target.name, method.as_str(), url) {
                    req = req.insert_header((k, v));
                }
            }
        }
        if with_session {
            if let Some(s) = self.session.borrow().as_deref() {
                req = req.insert_header(("Mcp-Session-Id", s));
            }
            if let Some(p) = self.protocol.borrow().as_deref() {
                req = req.insert_header(("MCP-Protocol-Version", p));
            }
        }
        // Mirrors of the body (`Mcp-Method`, ...): they name no credential and go to every hop.
        for (k, v) in extra {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        req
    }

    /// Sends one request and follows redirects itself: at most [`MAX_REDIRECTS`] hops, a loop
    /// named as such, a POST only through 307/308 (which keep method and body); a hop to
    /// another origin carries none of the configured headers. GETs are event streams and carry
    /// no timeout of their own (the caller bounds the wait for headers).
    pub(super) async fn send_following(
        &self,
        method: awc::http::Method,
        url: &str,
        body: Option<&[u8]>,
        with_session: bool,
        extra: &[(String, String)],
    ) -> Result<Response, Failure> {
        let mut url = url.to_owned();
        let mut seen: Vec<String> = Vec::new();
        loop {
            let mut req = self.request(method.clone(), &url, with_session, extra);
            let resp = match body {
                Some(b) => {
                    req.content_type("application/json")
                        .send_body(b.to_vec())
                        .await
                }
                None => {
                    if method == awc::http::Method::GET {
                        req = req
                            .insert_header(("Accept", "text/event-stream"))
                            .timeout(Duration::from_secs(3600 * 24));
                    }
                    req.send().await
                }
            }
            .map_err(|e| self.send_error(e))?;
            if let Some(a) = &self.auth {
                if url == self.target.url || same_origin(&url, &self.target.url) {
                    a.note_nonce(&url, resp.headers());
                }
            }
            let status = resp.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(resp);
            }
            let location = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(|l| resolve(&url, l));
            let Some(next) = location else {
                return Err(fail(
                    format!("HTTP {status} from {url} without a Location header"),
                    false,
                ));
            };
            let keeps_body = matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            if body.is_some() && !keeps_body {
                return Err(fail(
                    format!(
                        "HTTP {status}: {url} redirects to {next}, which a JSON-RPC POST cannot follow; \
                         set the url of server \"{}\" to the new address",
                        self.target.name
                    ),
                    false,
                ));
            }
            seen.push(url.clone());
            if seen.contains(&next) {
                seen.push(next);
                return Err(fail(format!("redirect loop: {}", seen.join(" -> ")), false));
            }
            if seen.len() > MAX_REDIRECTS {
                return Err(fail(
                    format!(
                        "more than {MAX_REDIRECTS} redirects, starting at {}: last to {next}",
                        seen[0]
                    ),
                    false,
                ));
            }
            tracing::debug!(target: "mcp", server = %self.target.name, from = %url, to = %next, status = status.as_u16(), "following a redirect");
            url = next;
        }
    }
}

/// Resolves the legacy `endpoint` event's data against the SSE URL.
pub(super) fn resolve(base: &str, data: &str) -> String {
    if data.starts_with("http://") || data.starts_with("https://") {
        return data.to_owned();
    }
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let authority_end = base[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(base.len());
    if data.starts_with('/') {
        return format!("{}{data}", &base[..authority_end]);
    }
    let dir_end = base
        .rfind('/')
        .filter(|i| *i >= authority_end)
        .map(|i| i + 1)
        .unwrap_or(base.len());
    let mut dir = base[..dir_end].to_owned();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    format!("{dir}{data}")
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn endpoint_resolution() {
        assert_eq!(
            resolve("http://h:1/sse", "/messages?s=1"),
            "http://h:1/messages?s=1"
        );
        assert_eq!(
            resolve("http://h:1/a/sse", "msg?s=1"),
            "http://h:1/a/msg?s=1"
        );
        assert_eq!(resolve("http://h:1/sse", "http://x/y"), "http://x/y");
        assert_eq!(resolve("http://h:1", "m"), "http://h:1/m");
    }
}
