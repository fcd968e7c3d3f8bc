//! A cell's wall clock: a deadline that stops while the host waits for a person.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a paused clock is looked at again.
const PAUSED_RECHECK: Duration = Duration::from_millis(50);

/// The wall time a call into a cell has left. Time spent waiting for a person's approval
/// (held in a [`PauseGuard`]) is not counted: a person taking a minute to decide does not
/// use up a cell's seconds.
#[derive(Debug)]
pub struct WallClock {
    state: Mutex<ClockState>,
}

#[derive(Debug)]
struct ClockState {
    deadline: Instant,
    pauses: usize,
    paused_at: Option<Instant>,
}

impl WallClock {
    /// A clock that runs out `timeout` from now.
    pub fn starting(timeout: Duration) -> Self {
        Self {
            state: Mutex::new(ClockState {
                deadline: Instant::now() + timeout,
                pauses: 0,
                paused_at: None,
            }),
        }
    }

    /// Starts the clock again for a new call.
    pub fn restart(&self, timeout: Duration) {
        let mut state = self.lock();
        state.deadline = Instant::now() + timeout;
        state.pauses = 0;
        state.paused_at = None;
    }

    /// Stops the clock until the guard is dropped.
    pub fn pause(&self) -> PauseGuard<'_> {
        let mut state = self.lock();
        if state.pauses == 0 {
            state.paused_at = Some(Instant::now());
        }
        state.pauses += 1;
        PauseGuard { clock: self }
    }

    /// When to look at the clock next: the deadline, or soon while paused.
    pub(crate) fn next_check(&self) -> Instant {
        let state = self.lock();
        if state.pauses > 0 {
            Instant::now() + PAUSED_RECHECK
        } else {
            state.deadline
        }
    }

    /// Whether the time is up.
    pub(crate) fn expired(&self) -> bool {
        let state = self.lock();
        state.pauses == 0 && Instant::now() >= state.deadline
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ClockState> {
        // The state is plain data: a panic elsewhere cannot leave it half-written.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Holds a [`WallClock`] stopped; the time it was held is added to the deadline.
#[derive(Debug)]
pub struct PauseGuard<'a> {
    clock: &'a WallClock,
}

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.clock.lock();
        state.pauses = state.pauses.saturating_sub(1);
        if state.pauses == 0
            && let Some(paused_at) = state.paused_at.take()
        {
            let held = paused_at.elapsed();
            state.deadline += held;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_clock_does_not_expire_and_resumes_with_its_time_left() {
        let clock = WallClock::starting(Duration::from_millis(500));
        {
            let _guard = clock.pause();
            std::thread::sleep(Duration::from_millis(600));
            assert!(!clock.expired(), "a paused clock ran out");
        }
        assert!(!clock.expired(), "the paused time was counted");
        let spent = WallClock::starting(Duration::ZERO);
        assert!(spent.expired());
        let _guard = spent.pause();
        assert!(!spent.expired(), "a paused clock ran out");
    }
}
