//! imurun-policy's integration tests, in one binary to keep link times down.

// As `clippy.toml` allows in unit tests: here a panic is a failed assertion with a location.
// Clippy's exemption covers `#[test]` functions only, not the helpers beside them.
#![allow(clippy::unwrap_used)]

mod support;

mod confinement;
mod deny_list;
mod docs;
mod env;
mod evasion_table;
mod evasions;
mod files;
mod grants;
mod modes;
mod never_panics;
mod protected;
mod roots;
mod toggles;
