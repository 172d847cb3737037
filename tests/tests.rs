//! The one integration-test binary: real servers, real child processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
