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
pub struct PromptQueue(Arc<Mutex<Waiting>>);

#[derive(Debug, Default)]
struct Waiting {
    prompts: VecDeque<String>,
    closed: bool,
}

impl PromptQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a prompt, or says the queue is full or closed.
    pub fn push(&self, prompt: impl Into<String>) -> Result<(), AgentError> {
        let mut queue = self.lock();
        if queue.closed {
            return Err(AgentError::QueueClosed);
        }
        if queue.prompts.len() >= QUEUED_PROMPTS_MAX {
            return Err(AgentError::QueueFull {
                capacity: QUEUED_PROMPTS_MAX,
            });
        }
        queue.prompts.push_back(prompt.into());
        Ok(())
    }

    /// Takes the oldest waiting prompt.
    pub fn pop(&self) -> Option<String> {
        self.lock().prompts.pop_front()
    }

    /// Refuses every later [`push`](Self::push) and returns the prompts still waiting, oldest
    /// first. A turn closes its queue once its loop has ended, so a prompt sent after that
    /// starts the next turn instead of waiting in one that will not read it.
    pub fn close(&self) -> Vec<String> {
        let mut queue = self.lock();
        queue.closed = true;
        queue.prompts.drain(..).collect()
    }

    pub fn len(&self) -> usize {
        self.lock().prompts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().prompts.is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
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

    #[test]
    fn a_closed_queue_hands_back_what_waits_and_refuses_more() {
        let queue = PromptQueue::new();
        queue.push("first").unwrap();
        queue.push("second").unwrap();
        assert_eq!(queue.close(), ["first", "second"]);
        assert_eq!(queue.push("late"), Err(AgentError::QueueClosed));
        assert!(queue.is_empty());
        assert_eq!(queue.pop(), None);
    }
}
