//! The recent conversation the agent keeps for the model: the last few exchanges, bounded in
//! count and bytes, whole exchanges only (a model's chat template wants a person's turn first).

use std::collections::VecDeque;

use crate::text::cut_bytes;

/// Exchanges kept.
pub const EXCHANGES_MAX: usize = 6;
/// Bytes of all exchanges kept together.
pub const BYTES_MAX: usize = 12 * 1024;
/// Bytes of one side of an exchange.
pub const TURN_BYTES_MAX: usize = 2 * 1024;

/// One message of the person's and the agent's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub person: String,
    pub agent: String,
}

impl Exchange {
    fn bytes(&self) -> usize {
        self.person.len() + self.agent.len()
    }
}

/// The last exchanges, oldest first.
#[derive(Debug, Default)]
pub struct History {
    exchanges: VecDeque<Exchange>,
}

impl History {
    /// Keeps an exchange, each side cut to [`TURN_BYTES_MAX`], forgetting the oldest past the
    /// bounds.
    pub fn push(&mut self, person: &str, agent: &str) {
        self.exchanges.push_back(Exchange {
            person: cut_bytes(person, TURN_BYTES_MAX).to_owned(),
            agent: cut_bytes(agent, TURN_BYTES_MAX).to_owned(),
        });
        while self.exchanges.len() > EXCHANGES_MAX || self.bytes() > BYTES_MAX {
            self.exchanges.pop_front();
        }
    }

    /// The exchanges, oldest first.
    pub fn exchanges(&self) -> impl Iterator<Item = &Exchange> {
        self.exchanges.iter()
    }

    fn bytes(&self) -> usize {
        self.exchanges.iter().map(Exchange::bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_exchanges_within_count_and_bytes() {
        let mut history = History::default();
        assert_eq!(history.exchanges().count(), 0);
        for n in 0..10 {
            history.push(&format!("q{n}"), &format!("a{n}"));
        }
        let kept: Vec<&str> = history.exchanges().map(|e| e.person.as_str()).collect();
        assert_eq!(kept, ["q4", "q5", "q6", "q7", "q8", "q9"]);

        let big = "x".repeat(10_000);
        for _ in 0..4 {
            history.push(&big, &big);
        }
        assert!(history.bytes() <= BYTES_MAX);
        assert!(
            history
                .exchanges()
                .all(|e| e.person.len() <= TURN_BYTES_MAX)
        );
        assert_eq!(history.exchanges().count(), 3);
    }

    #[test]
    fn cuts_on_a_character() {
        let mut history = History::default();
        history.push(&"é".repeat(TURN_BYTES_MAX), "");
        let kept = history.exchanges().next().map(|e| e.person.len());
        assert_eq!(kept, Some(TURN_BYTES_MAX));
    }
}
