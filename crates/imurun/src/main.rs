//! The `imurun` command: CLI, configuration and wiring.

fn main() {}
