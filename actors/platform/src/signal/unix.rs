//! Stop signals on Unix.

use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};

use super::Stop;

pub(super) struct Listeners {
    term: Signal,
    hup: Signal,
    int: Signal,
}

impl Listeners {
    pub(super) fn new() -> io::Result<Listeners> {
        Ok(Listeners {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    pub(super) async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.term.recv() => Stop::Terminate,
            _ = self.hup.recv() => Stop::Hangup,
            _ = self.int.recv() => Stop::Interrupt,
        }
    }
}
