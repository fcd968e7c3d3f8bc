//! A count of bytes examined, so tests can prove the parser stays linear by counting work
//! instead of timing it.

/// Bytes examined by the innermost loops, including the spans `memchr` skipped over.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Work(u64);

impl Work {
    pub(crate) fn add(&mut self, bytes: usize) {
        self.0 = self.0.saturating_add(bytes as u64);
    }

    /// The number of bytes examined so far.
    pub fn bytes(self) -> u64 {
        self.0
    }
}
