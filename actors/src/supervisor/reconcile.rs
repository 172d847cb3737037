//! Hot reload (`Reconcile`): added servers launch, removed ones stop and are forgotten, changed
//! ones restart (a roots-only change is applied in place), equal ones are not touched.
//!
//! A removed server's `ServerGone` says "no longer in the config". A spec whose `roots` alone
//! changed is sent `SetRoots` (the server is told the new roots, not restarted). An equal
//! spec keeps its actor, its pid and its calls in flight.

use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;

use super::{Managed, ServerSupervisor};

use crate::messages::{Reconcile, ReconcileReport, ServerGone, SetRoots};

impl Handler<Reconcile> for ServerSupervisor {
    type Result = MessageResult<Reconcile>;

    fn handle(&mut self, msg: Reconcile, ctx: &mut Context<Self>) -> Self::Result {
        let mut report = ReconcileReport::default();
        let keep: std::collections::HashSet<&str> =
            msg.specs.iter().map(|s| s.name.as_str()).collect();
        let gone: Vec<String> = self
            .entries
            .keys()
            .filter(|n| !keep.contains(n.as_str()))
            .cloned()
            .collect();
        for name in gone {
            if let Some(mut entry) = self.entries.remove(&name) {
                entry.stop(None, ctx);
            }
            self.registry.do_send(ServerGone {
                server: name.clone(),
                reason: "no longer in the config".to_owned(),
            });
            // Its waiters' senders were dropped with the entry: those calls end at once.
            report.removed.push(name);
        }
        for spec in msg.specs {
            let name = spec.name.clone();
            match self.entries.get_mut(&name) {
                Some(entry) if *entry.spec == spec => report.unchanged.push(name),
                // Only the roots changed: the running server is told, not restarted.
                Some(entry) if entry.spec.only_roots_differ(&spec) => {
                    if let Some(addr) = &entry.addr {
                        addr.do_send(SetRoots(spec.roots.clone()));
                    }
                    entry.spec = Arc::new(spec);
                    report.roots_changed.push(name);
                }
                Some(entry) => {
                    entry.spec = Arc::new(spec);
                    entry.era = None;
                    entry.ever_connected = false;
                    self.restart_entry(&name, "restarting with its new config", ctx);
                    report.changed.push(name);
                }
                None => {
                    self.entries
                        .insert(name.clone(), Managed::new(spec, Instant::now()));
                    self.begin(&name, ctx);
                    report.added.push(name);
                }
            }
        }
        tracing::info!(target: "mcp", "config reloaded: {}", report.summary());
        self.publish(ctx);
        MessageResult(report)
    }
}
