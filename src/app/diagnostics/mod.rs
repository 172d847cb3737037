//! What helps find out what happened: `doctor`'s checks ([`doctor`]), the `--trace` file
//! ([`trace_file`]) and what the trace commands read from it ([`trace_stats`],
//! [`trace_replay`]), the TUI's log file and how a log event reads on a user's terminal
//! ([`log_file`]).

pub mod doctor;
pub mod log_file;
pub mod trace_file;
pub mod trace_replay;
pub mod trace_stats;
