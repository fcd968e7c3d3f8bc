//! imurun-integrations' integration tests: one test binary, one module per subject. The
//! connectors run against local servers that answer in the services' REST shapes, the MCP
//! client against real MCP servers from npm (`tests/mcp`, installed by `scripts/setup`), and
//! both through the executor; nothing reaches the internet.

// Helpers outside `#[test]` functions unwrap too: in a test binary a panic is a failed
// assertion with a location, which is what a helper's failure should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod connectors;
mod mcp;
mod offering;
mod support;
