//! imurun-tools' integration tests: one test binary, one module per subject. The built-in
//! tools run directly and through the executor; the network tools against local servers
//! (`replay`), never the internet.

// Helpers outside `#[test]` functions unwrap too: in a test binary a panic is a failed
// assertion with a location, which is what a helper's failure should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fetch_url;
mod file_tools;
mod privacy;
mod providers;
mod replay;
mod sandbox;
mod shell;
mod support;
mod weather;
