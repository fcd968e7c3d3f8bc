//! The prompt queue: prompts a person sends while a turn runs. The loop hands the next one
//! to the model at an answer boundary — never between a call and its result — and the turn
//! goes on.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use crate::AgentError;

/// The most prompts that may wait. More would only grow a turn nobody is reading.
pub const QUEUED_PROMPTS_MAX: usize = 8;

/// A bounded queue shared between the turn and whoever accepts prompts (the server).
/// Cloning shares the queue.
#[derive(Debug, Clone, Default)]
pub struct PromptQueue(Arc<Mutex<VecDeque<String>>>);

impl PromptQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a prompt, or says the queue is full.
    pub fn push(&self, prompt: impl Into<String>) -> Result<(), AgentError> {
        let mut queue = self.lock();
        if queue.len() >= QUEUED_PROMPTS_MAX {
            return Err(AgentError::QueueFull {
                capacity: QUEUED_PROMPTS_MAX,
            });
        }
        queue.push_back(prompt.into());
        Ok(())
    }

    /// Takes the oldest waiting prompt.
    pub fn pop(&self) -> Option<String> {
        self.lock().pop_front()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        // Every operation is one push or pop, so a poisoned lock still holds a whole queue.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_first_in_first_out_and_bounded() {
        let queue = PromptQueue::new();
        for n in 0..QUEUED_PROMPTS_MAX {
            queue.push(format!("p{n}")).unwrap();
        }
        assert_eq!(
            queue.push("one too many"),
            Err(AgentError::QueueFull {
                capacity: QUEUED_PROMPTS_MAX
            })
        );
        assert_eq!(queue.clone().pop().as_deref(), Some("p0"));
        assert_eq!(queue.len(), QUEUED_PROMPTS_MAX - 1);
    }
}
