//! imurun-keep's integration tests on PostgreSQL: the modules of `tests/all/`, each host on a
//! database of its own on the server `scripts/test` starts (`IMURUN_TEST_POSTGRES`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "all"]
mod all {
    /// The engine the tests' hosts run on.
    const BACKEND: imurun_store::Backend = imurun_store::Backend::Postgres;

    mod attacks;
    mod attacks2;
    mod attacks_sessions;
    mod attacks_tools;
    mod conversations;
    mod people;
    mod postgres_only;
    mod service;
    mod session_bench;
    mod sessions;
    mod support;
    mod tools;
}
