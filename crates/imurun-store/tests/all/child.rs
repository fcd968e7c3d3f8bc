//! A child process the test kills, killed too when the test fails first.

/// Kills the child when a test fails before it does.
pub(crate) struct KillOnDrop(pub(crate) std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // The child may already be dead and reaped; either way there is nothing left to do.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
