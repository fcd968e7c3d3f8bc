//! imurun-exec's integration tests: one test binary, one module per subject. The executor
//! runs fake tools (imurun-testkit's), with the built-in tools' real specs and categories
//! where a test needs the policy to see a file tool or the shell: these tests are about the
//! order of the steps, the events, the audit and the approvals, not about any tool.

// Helpers outside `#[test]` functions unwrap too: in a test binary a panic is a failed
// assertion with a location, which is what a helper's failure should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod executor;
mod support;
