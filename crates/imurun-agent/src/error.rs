//! The one error type of the agent crate.

use imurun_core::ModelError;

/// Why a turn ended in error, or a prompt could not be queued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The model failed to generate.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The prompt, with everything else at its least, does not fit the context budget.
    #[error(
        "the message is too long for this model: {tokens} tokens, and the budget is {budget} \
         tokens; shorten it"
    )]
    PromptTooLong { tokens: usize, budget: usize },
    /// The prompt queue already holds `capacity` prompts.
    #[error("{capacity} prompts are already waiting; wait for the turn to take them")]
    QueueFull { capacity: usize },
    /// The turn has given its last answer and takes no more prompts; send the prompt again
    /// to start the next turn.
    #[error("the turn has ended and takes no more prompts")]
    QueueClosed,
}
