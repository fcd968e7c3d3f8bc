//! imurun-eval integration tests, in one binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bfcl;
