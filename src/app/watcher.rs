//! The `ConfigWatcher` actor: owns hot reload of `.mcp.json`. It stats the file every 400 ms,
//! re-reads it only when its time or size changed (a content hash tells real changes from
//! touches), parses it (a project config's new or changed servers come back held until
//! approved), reconciles the supervisor with it, keeps the trace file's redaction list in step,
//! and publishes each outcome as a [`ConfigChanged`] to its subscribers (the TUI shows them;
//! headless front ends start no watcher).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use actix::prelude::*;
use harness9_actors::messages::Reconcile;
use harness9_actors::ServerSupervisor;
use tokio::sync::watch;

/// How often `.mcp.json` is checked for changes on disk.
const WATCH_EVERY: Duration = Duration::from_millis(400);

/// What a reload, or an approval, came to.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigOutcome {
    /// The file was read and the servers reconciled with it.
    Reloaded {
        /// The file, as shown to the user.
        path: String,
        /// What changed (`ReconcileReport::summary`).
        summary: String,
        /// The values the TUI's trace view must not show (env and header values).
        secrets: Vec<String>,
        /// Servers that come from another file than the project's (`Config::sources`).
        sources: Vec<(String, PathBuf)>,
        /// VS Code inputs the servers need and have no value for (`Config::inputs`).
        inputs: Vec<crate::config::input_vars::InputPrompt>,
        /// Servers the file marks `"disabled": true` (`Config::disabled`).
        disabled: Vec<String>,
        /// What the files have that is ignored (`Config::warnings`).
        warnings: Vec<String>,
    },
    /// The file cannot be used; the running servers are kept.
    Invalid(String),
    /// The supervisor did not answer the reconcile.
    ReconcileFailed(String),
    /// These servers were approved (the reload that starts them follows).
    Approved(Vec<String>),
    /// Some server changed since the trust screen showed it: nothing was approved for it.
    ApprovalStale,
    /// The approvals could not be read or written.
    ApprovalFailed(String),
}

/// An outcome, sent to every subscriber.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct ConfigChanged(pub ConfigOutcome);

/// Adds a subscriber to every later [`ConfigChanged`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct SubscribeConfig(pub Recipient<ConfigChanged>);

/// Reload now; `forced` reports an unchanged file too (the user asked: `/reload`, the editor
/// closed).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ReloadConfig {
    /// Report even when the content did not change.
    pub forced: bool,
}

/// Approve servers of a project config, each only if its spec is still exactly the one the
/// user saw: `(name, approval key of the shown spec)`; a forced reload follows, so the
/// approved ones start.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ApproveServers(pub Vec<(String, String)>);

/// Stop watching (the session ends).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopWatching;

/// A file's identity for change detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    hash: u64,
}

/// Modification time and length: what the watcher compares on each tick (a `stat`, no read).
fn file_id(path: &Path) -> Option<(Option<SystemTime>, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len()))
}

fn stamp(path: &Path) -> Option<Stamp> {
    let (modified, len) = file_id(path)?;
    // Bounded, regular files only: a config replaced by a link to `/dev/zero` is no endless read.
    let text = crate::config::read_regular(path, crate::config::MAX_CONFIG_BYTES)
        .ok()?
        .into_bytes();
    Some(Stamp {
        modified,
        len,
        hash: u64::from(harness9_actors::naming::fnv1a32(&text)) ^ (text.len() as u64) << 32,
    })
}

/// The watcher actor (runs on the main arbiter, beside the supervisor).
pub struct ConfigWatcher {
    path: PathBuf,
    /// The user's config file, merged under the project's.
    user: Option<PathBuf>,
    must_exist: bool,
    /// `--approve-project`: the project config's servers are approved as they are, on every
    /// reload of this session too.
    approve_project: bool,
    supervisor: Addr<ServerSupervisor>,
    /// The trace file's redaction list, replaced on every good reload.
    secrets: watch::Sender<Vec<String>>,
    /// The content last loaded (or seen), to tell real changes from touches.
    loaded: Option<Stamp>,
    /// The same for the user file.
    loaded_user: Option<Stamp>,
    subscribers: Vec<Recipient<ConfigChanged>>,
    /// What entries get that they do not say (the session's, for every reload and approval).
    defaults: crate::config::EntryDefaults,
}

impl ConfigWatcher {
    /// A watcher of `path` as loaded just now (its current content counts as seen).
    pub fn new(
        path: PathBuf,
        user: Option<PathBuf>,
        must_exist: bool,
        approve_project: bool,
        supervisor: Addr<ServerSupervisor>,
        secrets: watch::Sender<Vec<String>>,
        defaults: crate::config::EntryDefaults,
    ) -> Self {
        Self {
            loaded: stamp(&path),
            loaded_user: user.as_deref().and_then(stamp),
            path,
            user,
            must_exist,
            approve_project,
            supervisor,
            secrets,
            subscribers: Vec::new(),
            defaults,
        }
    }

    fn publish(&mut self, outcome: ConfigOutcome) {
        self.subscribers.retain(|s| s.connected());
        for s in &self.subscribers {
            s.do_send(ConfigChanged(outcome.clone()));
        }
    }

    /// Reloads `.mcp.json` and reconciles the servers; `forced` reports even an unchanged file.
    fn reload(&mut self, forced: bool, ctx: &mut Context<Self>) {
        let now = stamp(&self.path);
        let now_user = self.user.as_deref().and_then(stamp);
        let same = now.map(|s| s.hash) == self.loaded.map(|s| s.hash)
            && now_user.map(|s| s.hash) == self.loaded_user.map(|s| s.hash);
        self.loaded = now;
        self.loaded_user = now_user;
        if !forced && same {
            return;
        }
        let shown = self.path.display().to_string();
        // A new or changed server of a project config comes back held (unapproved): it stops
        // (if it ran with an older spec) and the trust screen asks about it.
        match crate::config::load_merged(
            &self.path,
            self.must_exist,
            self.approve_project,
            self.user.as_deref(),
            &self.defaults,
        ) {
            Err(e) => self.publish(ConfigOutcome::Invalid(format!("{e:#}"))),
            Ok(cfg) => {
                crate::telemetry::register(&cfg);
                self.secrets.send_replace(cfg.secrets.clone());
                let secrets = cfg.secrets;
                let sources = cfg.sources;
                let inputs = cfg.inputs;
                let disabled = cfg.disabled;
                let warnings = cfg.warnings;
                self.supervisor
                    .send(Reconcile { specs: cfg.servers })
                    .into_actor(self)
                    .then(move |r, act, _| {
                        act.publish(match r {
                            Ok(mut report) => {
                                // A server that left because it is now disabled is "disabled",
                                // not "removed".
                                let (off, gone): (Vec<String>, Vec<String>) =
                                    report.removed.drain(..).partition(|n| disabled.contains(n));
                                report.removed = gone;
                                let mut summary = report.summary();
                                if !off.is_empty() {
                                    summary = if summary == "no change" {
                                        format!("disabled {}", off.join(", "))
                                    } else {
                                        format!("{summary}; disabled {}", off.join(", "))
                                    };
                                }
                                ConfigOutcome::Reloaded {
                                    path: shown,
                                    summary,
                                    secrets,
                                    sources,
                                    inputs,
                                    disabled,
                                    warnings,
                                }
                            }
                            Err(e) => ConfigOutcome::ReconcileFailed(e.to_string()),
                        });
                        fut::ready(())
                    })
                    .spawn(ctx);
            }
        }
    }

    fn approve(&mut self, servers: &[(String, String)]) -> ConfigOutcome {
        let outcome = crate::config::trust::approve_shown(
            &self.path,
            self.must_exist,
            self.user.as_deref(),
            servers,
            &self.defaults,
        );
        match outcome {
            Ok(done) if done.len() == servers.len() => ConfigOutcome::Approved(done),
            Ok(_) => ConfigOutcome::ApprovalStale,
            Err(e) => ConfigOutcome::ApprovalFailed(format!("{e:#}")),
        }
    }
}

impl Actor for ConfigWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if harness9_actors::runtime_gone() {
            // Started while being dropped at exit: a timer would need the runtime.
            ctx.stop();
            return;
        }
        ctx.run_interval(WATCH_EVERY, |act, ctx| {
            // Only a changed time or size leads to reading the file (and its hash decides).
            let user_changed = act
                .user
                .as_deref()
                .is_some_and(|u| file_id(u) != act.loaded_user.map(|s| (s.modified, s.len)));
            if user_changed || file_id(&act.path) != act.loaded.map(|s| (s.modified, s.len)) {
                act.reload(false, ctx);
            }
        });
    }
}

impl Handler<SubscribeConfig> for ConfigWatcher {
    type Result = ();

    fn handle(&mut self, msg: SubscribeConfig, _ctx: &mut Context<Self>) {
        self.subscribers.push(msg.0);
    }
}

impl Handler<ReloadConfig> for ConfigWatcher {
    type Result = ();

    fn handle(&mut self, msg: ReloadConfig, ctx: &mut Context<Self>) {
        self.reload(msg.forced, ctx);
    }
}

impl Handler<ApproveServers> for ConfigWatcher {
    type Result = ();

    fn handle(&mut self, msg: ApproveServers, ctx: &mut Context<Self>) {
        let outcome = self.approve(&msg.0);
        self.publish(outcome);
        self.reload(true, ctx);
    }
}

impl Handler<StopWatching> for ConfigWatcher {
    type Result = ();

    fn handle(&mut self, _msg: StopWatching, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
