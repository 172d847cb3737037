//! The ground floor every layer above may use (agent, app, tui, cli): private files created
//! exclusively and never through a symlink, bounded reads of text files, time formatting, the
//! `sandbox` setting's shape, and the sanitizing of server text for a terminal. It imports
//! nothing of harness9's own.
#![warn(missing_docs)]

pub mod path;
pub mod private_fs;
pub mod read;
pub mod sandbox_field;
pub mod sanitize;
pub mod text;
pub mod time;
