//! The integration tests of imurun-store, in one binary to keep link times down. The modules
//! live in `tests/all/`, where cargo does not mistake them for test binaries of their own.

mod backpressure;
// Kills a child process with SIGKILL and checks how it died: Unix only, like imurun itself.
#[cfg(unix)]
mod durability;
mod migrations;
mod round_trip;
mod support;
