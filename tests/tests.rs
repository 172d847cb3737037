//! The one integration-test binary: real servers, real child processes.
//!
//! Unix only (`cfg(unix)`, one of the listed exceptions to "cfg only in the platform seam"): the
//! suite drives real Unix processes (signals, process groups, `/proc`, file modes, the fixture
//! server's forks). On Windows it compiles to nothing; the platform's unit tests cover what
//! runs there.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
