//! imurun-model integration tests, in one binary to keep link times down.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod concurrency;
mod docs;
mod replay;
mod script_file;
