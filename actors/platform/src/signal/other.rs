//! Stop signals where only Ctrl-C is known (targets other than Unix and Windows).

use std::io;

use super::Stop;

pub(super) struct Listeners;

impl Listeners {
    pub(super) fn new() -> io::Result<Listeners> {
        Ok(Listeners)
    }

    pub(super) async fn recv(&mut self) -> Stop {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Stop::Interrupt,
            Err(_) => std::future::pending().await,
        }
    }
}
