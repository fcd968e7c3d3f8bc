//! Waiting while watching the stop flag: a delay a Stop cuts short at once.

use std::time::Duration;

use imurun_core::StopFlag;

/// Sleeps `wait_ms`, or less if `stop` is set meanwhile; false when the wait was stopped (or
/// `stop` was already set). A zero wait does not touch the runtime, so a script without
/// delays needs none.
pub(crate) async fn pause(wait_ms: u64, stop: &StopFlag) -> bool {
    if stop.is_stopped() {
        return false;
    }
    if wait_ms == 0 {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(wait_ms)) => !stop.is_stopped(),
        () = stop.stopped() => false,
    }
}
