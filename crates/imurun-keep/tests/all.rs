//! imurun-keep's integration tests on SQLite: one binary, one module per area.
//! `tests/postgres.rs` runs the same modules on PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod all {
    /// The engine the tests' hosts run on.
    const BACKEND: imurun_store::Backend = imurun_store::Backend::Sqlite;

    mod attacks;
    mod attacks2;
    mod attacks_sessions;
    mod attacks_tools;
    mod conversations;
    mod events;
    mod journal_fixture;
    mod people;
    mod service;
    mod session_bench;
    mod sessions;
    mod support;
    mod tools;
}
