//! The load bench at CI size: the same driver as `benches/load.rs` (20 sessions, 100 SSE
//! subscribers), asserting only that nothing went wrong: every request answered as expected,
//! every turn ended `done`, every subscriber got every `turn.end` its filter carries. No timing
//! is asserted; every call is audited by the real writer; the figures are printed for whoever runs it with `--nocapture`.

#[path = "../../benches/load/driver.rs"]
mod driver;

use std::time::Duration;

use driver::{LoadConfig, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sessions_and_a_hundred_subscribers_run_without_an_error() {
    let mut config = LoadConfig::new(20, 100);
    config.prompts_per_session = 3;
    config.wait_max = Duration::from_secs(60);
    let report = run(&config).await;
    println!("{}", report.table());
    assert_eq!(report.error_count(), 0, "{}", report.table());
    // Each turn calls `file_read` once, and the real audit writer commits every call.
    assert_eq!(report.audit_rows_committed(), 20 * 3, "{}", report.table());
}
