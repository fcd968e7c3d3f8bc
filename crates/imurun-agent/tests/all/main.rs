//! imurun-agent's integration tests: one test binary, one module per subject. Every loop
//! test runs the real `ToolExecutor` in a temporary workspace against a scripted model that
//! records the exact messages it received.

// Helpers outside `#[test]` functions unwrap too: in a test binary a panic is a failed
// assertion with a location, which is what a helper's failure should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod budget;
mod flow;
mod grounding;
mod prefetch;
mod recovery;
mod subagent;
mod support;
mod taint;
