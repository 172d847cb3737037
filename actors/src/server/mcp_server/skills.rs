//! The Skills extension's requests (SEP-2640): `skills/list`, walked like every list
//! (`list_all`: `maxTools` entries, a repeated cursor or too many pages end it) within
//! `toolTimeoutSec`, each entry checked, and kept for the listing's `ttlMs` (at most
//! `MAX_TTL_MS`); `skills/get` of one skill. Only to a server that declares the extension and
//! resources (`offers`); no file of a skill is read here.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::features::{fail, failed, Answer};
use super::handshake::list_all;
use super::McpServer;
use crate::error::RequestError;
use crate::messages::{GetSkill, ListSkills};
use crate::protocol::methods::{self as m, Request as _};
use crate::protocol::skills::{SkillEntry, SkillListing, MAX_TTL_MS};
use crate::protocol::types::ResourceParams;

/// The last listing of a server actor and until when its `ttlMs` lets it be used.
#[derive(Debug, Default)]
pub(super) struct Cached(Option<(Instant, Arc<SkillListing>)>);

impl Cached {
    /// The listing while it is fresh.
    fn fresh(&self) -> Option<Arc<SkillListing>> {
        let (until, l) = self.0.as_ref()?;
        (Instant::now() < *until).then(|| l.clone())
    }
}

/// Keep a listing until `until`.
#[derive(Message)]
#[rtype(result = "()")]
struct KeepSkills {
    until: Instant,
    listing: Arc<SkillListing>,
}

impl Handler<KeepSkills> for McpServer {
    type Result = ();

    fn handle(&mut self, msg: KeepSkills, _ctx: &mut Context<Self>) {
        self.skills = Cached(Some((msg.until, msg.listing)));
    }
}

impl Handler<ListSkills> for McpServer {
    type Result = Answer<Arc<SkillListing>>;

    fn handle(&mut self, _msg: ListSkills, ctx: &mut Context<Self>) -> Self::Result {
        let method = m::ListSkills::METHOD;
        if let Err(e) = self.ready().and_then(|()| self.offers(method)) {
            return fail(e);
        }
        if let Some(l) = self.skills.fresh() {
            return Box::pin(async move { Ok(l) });
        }
        let server = self.spec.name.clone();
        let addr = ctx.address();
        let (max, after) = (self.spec.max_tools, self.spec.tool_timeout);
        Box::pin(async move {
            let mut ttl = None;
            let walk = list_all::<m::ListSkills>(&addr, max, "maxTools", |page| {
                ttl = ttl.or(page.ttl_ms);
            });
            let raw = match tokio::time::timeout(after, walk).await {
                Ok(r) => r.map_err(|e| failed(&server, method, e))?,
                Err(_) => {
                    return Err(RequestError::Timeout {
                        server,
                        method,
                        after,
                    })
                }
            };
            let listing = Arc::new(SkillListing::from_raw(&raw));
            for (uri, why) in &listing.invalid {
                tracing::warn!(target: "mcp", server = %server, uri = %uri, "skills/list: entry refused: {why}");
            }
            let ttl = Duration::from_millis(ttl.unwrap_or(0).min(MAX_TTL_MS));
            if !ttl.is_zero() {
                addr.do_send(KeepSkills {
                    until: Instant::now() + ttl,
                    listing: listing.clone(),
                });
            }
            Ok(listing)
        })
    }
}

impl Handler<GetSkill> for McpServer {
    type Result = Answer<SkillEntry>;

    fn handle(&mut self, msg: GetSkill, ctx: &mut Context<Self>) -> Self::Result {
        let server = self.spec.name.clone();
        let ask = self.request_for::<m::GetSkill>(&ResourceParams { uri: &msg.uri }, ctx);
        Box::pin(async move {
            let got = ask.await?;
            let entry = SkillEntry::parse(&got.skill).map_err(|why| {
                failed(
                    &server,
                    m::GetSkill::METHOD,
                    format!("invalid skill entry: {why}"),
                )
            })?;
            if entry.uri != msg.uri {
                return Err(failed(
                    &server,
                    m::GetSkill::METHOD,
                    "the entry's uri is not the one asked for",
                ));
            }
            Ok(entry)
        })
    }
}
