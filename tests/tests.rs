//! The one integration-test binary: real servers, real child processes.

mod suite;
