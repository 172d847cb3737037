//! An OAuth login the user started from the TUI (`Login`): the flow runs beside the server
//! entry, its authorization page shows in the status while it waits, and on success the server
//! starts again with its new token.

use actix::prelude::*;

use super::ServerSupervisor;

use crate::messages::{Login, NoticeKind, ServerNotice, ServerStatus};
use crate::spec::TransportSpec;

/// A login's authorization page is known (shown in the server's status while it waits).
#[derive(Message)]
#[rtype(result = "()")]
struct LoginPage {
    server: String,
    url: String,
}

impl Handler<LoginPage> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, msg: LoginPage, ctx: &mut Context<Self>) {
        if let Some(ServerStatus::NeedsLogin { login_page, .. }) =
            self.entries.get_mut(&msg.server).map(|e| &mut e.status)
        {
            *login_page = Some(msg.url);
            self.publish(ctx);
        }
    }
}

impl Handler<Login> for ServerSupervisor {
    type Result = ();

    fn handle(&mut self, msg: Login, ctx: &mut Context<Self>) {
        let name = msg.0;
        let Some(entry) = self.entries.get_mut(&name) else {
            return;
        };
        let (TransportSpec::Http { url, .. }, Some(oauth)) =
            (&entry.spec.transport, &entry.spec.oauth)
        else {
            return;
        };
        // One login at a time per server, and only for a server that needs one.
        let ServerStatus::NeedsLogin { error, login_page } = &mut entry.status else {
            return;
        };
        if login_page.is_some() {
            return;
        }
        *login_page = Some(String::new());
        *error = format!("logging in to server \"{name}\": waiting for the browser");
        let (url, oauth, pinned) = (url.clone(), oauth.clone(), entry.spec.protocol);
        let me = ctx.address();
        let server = name.clone();
        let flow = async move {
            let challenge = crate::oauth::flow::probe(&url, pinned).await;
            let show = |page: &str| {
                me.do_send(LoginPage {
                    server: server.clone(),
                    url: page.to_owned(),
                })
            };
            let held = oauth.login_scopes(&url);
            crate::oauth::flow::login(&url, &oauth, challenge.as_ref(), &held, &show).await
        };
        ctx.spawn(flow.into_actor(self).map(move |res, act, ctx| {
            match res {
                Ok(grant) => {
                    tracing::info!(target: "mcp", server = %name, "logged in; starting it again");
                    act.send_notice(ServerNotice {
                        server: name.clone(),
                        kind: NoticeKind::LoggedIn {
                            scopes: grant.scopes,
                        },
                    });
                    act.restart_entry(&name, "logged in", ctx);
                }
                Err(e) => {
                    if let Some(entry) = act.entries.get_mut(&name) {
                        entry.status = ServerStatus::NeedsLogin {
                            error: format!(
                                "login to server \"{name}\" failed: {e}; try again, or run `harness9 mcp login {name}`"
                            ),
                            login_page: None,
                        };
                    }
                }
            }
            act.publish(ctx);
        }));
        self.publish(ctx);
    }
}
