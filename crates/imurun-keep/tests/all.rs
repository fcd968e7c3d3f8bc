//! imurun-keep's integration tests: one binary, one module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod all {
    mod attacks;
    mod attacks2;
    mod attacks_sessions;
    mod attacks_tools;
    mod authority;
    mod canonical;
    mod decisions;
    mod manifests;
    mod properties;
    mod proposals;
    mod service;
    mod sessions;
    mod support;
    mod tools;
    mod trust;
}
