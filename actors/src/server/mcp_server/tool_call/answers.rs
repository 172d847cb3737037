//! Who answers the server's questions in the middle of a call ([`Answerer`]): a stateless
//! `input_required` round's input requests (through the server-requests seam, a person asked
//! through the front end's handler) and a `-32042` error's URL elicitations; a task's
//! `input_required` shares [`answer_requests`].

use std::path::PathBuf;

use actix::prelude::*;
use serde_json::{Map, Value};

use crate::messages::InputRequest;
use crate::protocol::methods::{Elicit, Request};
use crate::server::mcp_server::ask;
use crate::server::server_requests;
use crate::spec::Roots;

/// The parts of an `input_required` result the retry needs.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Interim {
    #[serde(default)]
    input_requests: Option<Map<String, Value>>,
    #[serde(default)]
    request_state: Option<Value>,
}

/// Who answers a stateless call's input requests: the front end's handler (elicitation,
/// sampling), and the server's roots (its configured ones, else the working directory).
pub(in crate::server::mcp_server) struct Answerer {
    pub(super) handler: Option<Recipient<InputRequest>>,
    pub(super) server: String,
    pub(super) roots: Roots,
    pub(super) cwd: PathBuf,
}

/// The retry's extra params: an answer for every input request the seam can answer (a
/// question for a person through the same handler as a handshake-era request, one at a time),
/// and the `requestState` exactly as it came (left out when none came). The caller bounds it
/// by the call's deadline and cancellation.
pub(super) async fn answers(interim: Interim, by: &Answerer) -> Map<String, Value> {
    let responses = answer_requests(interim.input_requests.unwrap_or_default(), by).await;
    let mut extra = Map::new();
    extra.insert("inputResponses".to_owned(), Value::Object(responses));
    if let Some(state) = interim.request_state {
        extra.insert("requestState".to_owned(), state);
    }
    extra
}

/// An answer for every input request (by key) the seam can answer: a question for a person
/// through the front end's handler, one at a time; a call's round and a task's
/// `input_required` share it.
pub(in crate::server::mcp_server) async fn answer_requests(
    requests: Map<String, Value>,
    by: &Answerer,
) -> Map<String, Value> {
    let mut responses = Map::new();
    for (key, req) in requests {
        let method = req.get("method").and_then(Value::as_str).unwrap_or("");
        let answer = if ask::is_ask(method) {
            ask::ask(
                by.handler.clone(),
                by.server.clone(),
                method.to_owned(),
                req.get("params").cloned(),
                &by.cwd,
                ask::ASK_TIMEOUT,
                crate::telemetry::Parent::default(),
            )
            .await
        } else {
            server_requests::answer(method, req.get("params"), &by.roots, &by.cwd)
        };
        if let Ok(v) = answer {
            responses.insert(key, v);
        }
    }
    responses
}

/// The JSON-RPC error a server answers a call with when the user must first open a page
/// (URL-mode elicitation on the error path, 2025-11-25).
pub(super) const URL_ELICITATION_REQUIRED: i64 = -32042;

/// Asks the user about each URL elicitation in a `-32042` error's `data.elicitations`; `true`
/// when there was at least one and every one was accepted.
pub(super) async fn open_pages(
    error: &crate::protocol::jsonrpc::ErrorObject,
    by: &Answerer,
) -> bool {
    let pages: Vec<Value> = error
        .data
        .as_ref()
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .map(|a| a.iter().take(4).cloned().collect())
        .unwrap_or_default();
    if pages.is_empty() {
        return false;
    }
    for mut page in pages {
        if let Some(o) = page.as_object_mut() {
            o.entry("mode").or_insert_with(|| Value::from("url"));
        }
        let answer = ask::ask(
            by.handler.clone(),
            by.server.clone(),
            Elicit::METHOD.to_owned(),
            Some(page),
            &by.cwd,
            ask::ASK_TIMEOUT,
            crate::telemetry::Parent::default(),
        )
        .await;
        let accepted = answer
            .ok()
            .and_then(|v| v.get("action").and_then(Value::as_str).map(str::to_owned))
            .is_some_and(|a| a == "accept");
        if !accepted {
            return false;
        }
    }
    true
}
