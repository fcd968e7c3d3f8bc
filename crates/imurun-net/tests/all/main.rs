//! imurun-net's tests: the deny matrix from its data file, host normalisation, and the door
//! against servers on 127.0.0.1.

// Helpers outside `#[test]` functions unwrap too: in a test binary a panic is a failed
// assertion with a location, which is what a helper's failure should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod door;
mod hosts;
mod matrix;
