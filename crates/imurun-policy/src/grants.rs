//! Remembered grants: "always for this session" approvals, kept in memory only and lost on
//! restart by design. A delete is never remembered: each one asks, because it cannot be
//! undone and one approval must not cover the next.

use std::collections::{HashMap, HashSet};

use imurun_core::{Decision, ToolCategory};

use crate::decide::{Rule, Verdict};

/// Sessions that may hold grants at once. Past it new grants are refused (the call simply
/// asks again); the executor forgets a session's grants when the session ends.
pub const GRANT_SESSIONS_MAX: usize = 4096;

/// Tools one session may have remembered.
pub const GRANTS_PER_SESSION_MAX: usize = 256;

/// Why a grant was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// Deletes always ask.
    #[error("`{tool}` deletes, and deletes are never remembered: each one asks")]
    DeleteNeverRemembered { tool: String },
    /// The session already remembers `GRANTS_PER_SESSION_MAX` tools.
    #[error("this session already remembers {GRANTS_PER_SESSION_MAX} tools")]
    SessionFull,
    /// `GRANT_SESSIONS_MAX` sessions already hold grants.
    #[error("grants are held for at most {GRANT_SESSIONS_MAX} sessions")]
    TooManySessions,
}

/// Whether approving a tool of `category` may offer "always for this session".
pub fn is_rememberable(category: ToolCategory) -> bool {
    category != ToolCategory::Delete
}

/// Per-session remembered approvals: session id → tool names.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    sessions: HashMap<String, HashSet<String>>,
}

impl Grants {
    pub fn new() -> Self {
        Self::default()
    }

    /// Remembers that `tool` may run without asking for the rest of `session_id`.
    pub fn remember(
        &mut self,
        session_id: &str,
        tool: &str,
        category: ToolCategory,
    ) -> Result<(), GrantError> {
        if !is_rememberable(category) {
            return Err(GrantError::DeleteNeverRemembered {
                tool: tool.to_string(),
            });
        }
        if !self.sessions.contains_key(session_id) && self.sessions.len() >= GRANT_SESSIONS_MAX {
            return Err(GrantError::TooManySessions);
        }
        let tools = self.sessions.entry(session_id.to_string()).or_default();
        if !tools.contains(tool) && tools.len() >= GRANTS_PER_SESSION_MAX {
            return Err(GrantError::SessionFull);
        }
        tools.insert(tool.to_string());
        Ok(())
    }

    /// Whether `tool` was remembered for `session_id`.
    pub fn is_granted(&self, session_id: &str, tool: &str) -> bool {
        self.sessions
            .get(session_id)
            .is_some_and(|tools| tools.contains(tool))
    }

    /// Applies the session's grants to a policy verdict: an "ask" for a remembered tool
    /// becomes "allow". A denial is never lifted, and a delete always keeps asking.
    pub fn apply(
        &self,
        session_id: &str,
        tool: &str,
        category: ToolCategory,
        verdict: Verdict,
    ) -> Verdict {
        // A tainted session's ask is the person's to answer each time: a grant given before
        // the session read untrusted content does not speak for what it asks now. Nor does a
        // grant for the shell speak for a command nobody can read.
        if verdict.decision == Decision::Ask
            && verdict.rule != Rule::Tainted
            && verdict.rule != Rule::OpaqueCommand
            && is_rememberable(category)
            && self.is_granted(session_id, tool)
        {
            return Verdict {
                decision: Decision::Allow,
                rule: Rule::SessionGrant,
                reason: format!("`{tool}` was approved for the rest of this session"),
            };
        }
        verdict
    }

    /// Drops every grant of `session_id` (the session ended, or a person revoked them).
    /// Returns whether it had any.
    pub fn forget_session(&mut self, session_id: &str) -> bool {
        self.sessions.remove(session_id).is_some()
    }

    /// Drops every session's grants; returns the sessions that had some, sorted.
    pub fn forget_all(&mut self) -> Vec<String> {
        let mut sessions: Vec<String> = self.sessions.drain().map(|(session, _)| session).collect();
        sessions.sort();
        sessions
    }

    /// Every session with grants and its remembered tools, both sorted.
    pub fn list(&self) -> Vec<(String, Vec<String>)> {
        let mut list: Vec<(String, Vec<String>)> = self
            .sessions
            .iter()
            .filter(|(_, tools)| !tools.is_empty())
            .map(|(session, tools)| {
                let mut tools: Vec<String> = tools.iter().cloned().collect();
                tools.sort();
                (session.clone(), tools)
            })
            .collect();
        list.sort();
        list
    }

    /// How many sessions hold grants.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }
}
