//! imurun-keep's integration tests: one binary, one module per area.

mod all {
    mod attacks;
    mod attacks2;
    mod canonical;
    mod decisions;
    mod manifests;
    mod properties;
    mod proposals;
    mod service;
    mod support;
    mod trust;
}
