//! The unauthenticated probe of an MCP server for its `Bearer` challenge, in either era
//! (stateless, or handshake).

use super::guard::http_client;
use super::REQUEST_TIMEOUT;
use crate::parse::Challenge;
use harness9_protocol::methods::{
    Discover, Initialize, Initialized, ListTools, Notification, Request,
};
use harness9_protocol::version::{ProtocolVersion, LATEST, MODERN};

/// The server's `Bearer` challenge, found the way the runtime connects, unauthenticated: in
/// the stateless era (unless `pinned` names a handshake-era revision) `server/discover`, then
/// `tools/list`; else `initialize`, `notifications/initialized` and `tools/list` in its
/// session. The first `401` (or `403`) with a challenge is it; `None` when every step is
/// accepted or fails otherwise (discovery then starts from the well-known URLs).
pub async fn probe(server_url: &str, pinned: Option<ProtocolVersion>) -> Option<Challenge> {
    match probe_outcome(server_url, pinned).await {
        Probed::Challenge(c) => Some(c),
        Probed::Accepted | Probed::Other => None,
    }
}

/// [`probe`], saying also whether the server answered every unauthenticated request
/// (`Accepted`: it asks for no login there) or failed one without a challenge (`Other`).
pub async fn probe_outcome(server_url: &str, pinned: Option<ProtocolVersion>) -> Probed {
    let client = http_client();
    let stateless = pinned.is_none_or(ProtocolVersion::is_stateless);
    if stateless {
        let version = pinned.unwrap_or(MODERN);
        match probe_stateless(&client, server_url, version).await {
            // A stateless server that answered without asking: nothing more to learn.
            Probed::Other if pinned.is_none() => {}
            other => return other,
        }
    }
    let offer = pinned.filter(|v| !v.is_stateless()).unwrap_or(LATEST);
    probe_handshake(&client, server_url, offer).await
}

/// What unauthenticated requests of [`probe`] got.
#[derive(Debug)]
pub enum Probed {
    /// A `401`/`403` with a `Bearer` challenge.
    Challenge(Challenge),
    /// A success (`2xx`).
    Accepted,
    /// Anything else: an error status without a challenge, a JSON-RPC error, no answer.
    Other,
}

/// One unauthenticated POST of [`probe`]; `session` and `version` go in their headers.
async fn probe_post(
    client: &awc::Client,
    server_url: &str,
    body: &serde_json::Value,
    session: Option<&str>,
    version: Option<&str>,
) -> (Probed, Option<String>) {
    let method = body
        .get("method")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut req = client
        .post(server_url)
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("Mcp-Method", method));
    if let Some(s) = session {
        req = req.insert_header(("Mcp-Session-Id", s));
    }
    if let Some(v) = version {
        req = req.insert_header(("MCP-Protocol-Version", v));
    }
    let Ok(Ok(mut resp)) = tokio::time::timeout(REQUEST_TIMEOUT, req.send_json(body)).await else {
        return (Probed::Other, None);
    };
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if status == awc::http::StatusCode::UNAUTHORIZED || status == awc::http::StatusCode::FORBIDDEN {
        let challenge = resp
            .headers()
            .get_all("www-authenticate")
            .filter_map(|v| v.to_str().ok())
            .find_map(Challenge::parse);
        return (challenge.map_or(Probed::Other, Probed::Challenge), session);
    }
    if !status.is_success() {
        return (Probed::Other, session);
    }
    if status == awc::http::StatusCode::ACCEPTED {
        return (Probed::Accepted, session);
    }
    // A JSON reply (or the first event of a stream) that is a JSON-RPC error is no success:
    // a handshake-era server refusing `server/discover`.
    let head = tokio::time::timeout(REQUEST_TIMEOUT, resp.body().limit(64 * 1024))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&head);
    // The JSON body, or the first `data:` of an event stream.
    let first = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str(d.trim()).ok())
        });
    let is_error = first.is_none_or(|m| m.get("error").is_some());
    (
        if is_error {
            Probed::Other
        } else {
            Probed::Accepted
        },
        session,
    )
}

/// The stateless era's first requests, unauthenticated: `server/discover`, then `tools/list`.
async fn probe_stateless(
    client: &awc::Client,
    server_url: &str,
    version: ProtocolVersion,
) -> Probed {
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": version.as_str(),
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo":
            {"name": "harness9", "version": env!("CARGO_PKG_VERSION")},
    });
    let v = Some(version.as_str());
    for (id, method) in [(0, Discover::METHOD), (1, ListTools::METHOD)] {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta}
        });
        match probe_post(client, server_url, &body, None, v).await.0 {
            Probed::Accepted => {}
            other => return other,
        }
    }
    Probed::Accepted
}

/// The handshake era's first requests, unauthenticated: `initialize`, then (in its session)
/// `notifications/initialized` and `tools/list`.
async fn probe_handshake(client: &awc::Client, server_url: &str, offer: ProtocolVersion) -> Probed {
    let init = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": Initialize::METHOD,
        "params": {"protocolVersion": offer.as_str(), "capabilities": {},
                   "clientInfo": {"name": "harness9", "version": env!("CARGO_PKG_VERSION")}}
    });
    let (got, session) = probe_post(client, server_url, &init, None, None).await;
    if !matches!(got, Probed::Accepted) {
        return got;
    }
    let v = Some(offer.as_str());
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": Initialized::METHOD});
    if let (Probed::Challenge(c), _) =
        probe_post(client, server_url, &initialized, session.as_deref(), v).await
    {
        return Probed::Challenge(c);
    }
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": ListTools::METHOD});
    let found = probe_post(client, server_url, &list, session.as_deref(), v)
        .await
        .0;
    if let Some(s) = &session {
        // The probe's session is not kept.
        let _ = tokio::time::timeout(
            REQUEST_TIMEOUT,
            client
                .delete(server_url)
                .insert_header(("Mcp-Session-Id", s.as_str()))
                .send(),
        )
        .await;
    }
    found
}
