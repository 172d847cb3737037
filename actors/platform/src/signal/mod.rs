//! The signals that ask harness9 to stop: SIGTERM, SIGHUP (a closed terminal) and SIGINT; on
//! Windows the console's control events that mean the same (`windows.rs`).

use std::io;

#[cfg(not(any(unix, windows)))]
mod other;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;
#[cfg(not(any(unix, windows)))]
use other as imp;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
use windows as imp;

/// Which stop signal came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM.
    Terminate,
    /// SIGHUP: the terminal closed.
    Hangup,
    /// SIGINT (Ctrl-C outside raw mode).
    Interrupt,
}

/// Listens for the stop signals from its creation on (needs a tokio runtime).
pub struct StopSignals(imp::Listeners);

impl StopSignals {
    /// Starts listening; fails when a handler cannot be installed.
    pub fn new() -> io::Result<StopSignals> {
        imp::Listeners::new().map(StopSignals)
    }

    /// The next stop signal.
    pub async fn recv(&mut self) -> Stop {
        self.0.recv().await
    }
}
