//! imurun-calls integration tests, in one binary to keep link times down.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod corpus;
mod docs;
mod formats;
mod linear;
mod properties;
mod stream;
