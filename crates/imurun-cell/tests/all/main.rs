//! imurun-cell's integration tests, against the guests in `examples/keep/`.

// Helpers shared by the tests may unwrap: a panic there is a failed assertion too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attacks_broker;
mod broker;
mod cells;
mod egress;
mod support;
mod upstream;
