//! The application around the runtime: the one [`Session`] wiring every front end uses, the
//! running [`Runtime`], and the [`ConfigWatcher`] that owns hot reload.

mod runtime;
mod session;
pub mod watcher;

pub use runtime::{spawn_event_printer, Runtime};
pub use session::{Session, SessionOptions, Start};
pub use watcher::ConfigWatcher;
