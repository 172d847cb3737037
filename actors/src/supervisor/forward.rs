//! `StatusForward`: one server's status, from every `StatusChanged`, to a channel.

use actix::prelude::*;

use crate::messages::{ServerStatus, StatusChanged};

/// Forwards one server's status from every `StatusChanged` to a channel: a headless tool (the
/// benchmark, the soak) subscribes it to the supervisor and waits on events, never polls.
pub struct StatusForward {
    server: String,
    tx: tokio::sync::mpsc::UnboundedSender<ServerStatus>,
}

impl StatusForward {
    /// A forwarder of `server`'s status to `tx`.
    pub fn new(
        server: impl Into<String>,
        tx: tokio::sync::mpsc::UnboundedSender<ServerStatus>,
    ) -> Self {
        Self {
            server: server.into(),
            tx,
        }
    }
}

impl Actor for StatusForward {
    type Context = Context<Self>;
}

impl Handler<StatusChanged> for StatusForward {
    type Result = ();

    fn handle(&mut self, msg: StatusChanged, _ctx: &mut Context<Self>) {
        if let Some(state) = msg.snapshot.get(&self.server) {
            let _ = self.tx.send(state.status.clone());
        }
    }
}
