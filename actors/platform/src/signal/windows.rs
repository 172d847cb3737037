//! Stop signals on Windows, from the console's control events: Ctrl-C and Ctrl-Break
//! (interrupt), the console window closing (hangup), the user logging off or the system shutting
//! down (terminate). The system gives a handler a few seconds after a close before it ends the
//! process; the children's Job Objects end with it either way.

use std::io;

use tokio::signal::windows::{
    ctrl_break, ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown, CtrlBreak, CtrlC, CtrlClose,
    CtrlLogoff, CtrlShutdown,
};

use super::Stop;

pub(super) struct Listeners {
    c: CtrlC,
    brk: CtrlBreak,
    close: CtrlClose,
    logoff: CtrlLogoff,
    shutdown: CtrlShutdown,
}

impl Listeners {
    pub(super) fn new() -> io::Result<Listeners> {
        Ok(Listeners {
            c: ctrl_c()?,
            brk: ctrl_break()?,
            close: ctrl_close()?,
            logoff: ctrl_logoff()?,
            shutdown: ctrl_shutdown()?,
        })
    }

    pub(super) async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.c.recv() => Stop::Interrupt,
            _ = self.brk.recv() => Stop::Interrupt,
            _ = self.close.recv() => Stop::Hangup,
            _ = self.logoff.recv() => Stop::Terminate,
            _ = self.shutdown.recv() => Stop::Terminate,
        }
    }
}
