//! The narrow port a session's host holds into the Keep service: what a cell may ask of it and
//! nothing more. The service implements it (over itself without its cells); the cells never
//! see the service, so the two do not hold each other.

use imurun_core::BoxFuture;
use imurun_keep_rules::random::Random;
use imurun_store::Store;

use super::{SessionHost, ToolAnswer};
use crate::KeepError;
use crate::journal_detail::JournalDetail;
use crate::proposals::Proposal;
use crate::vault::Secret;

/// Whether a refusal is journaled, or is the one entry that says the rest are not.
pub(crate) enum Bound {
    Journal,
    LastEntry,
    EventsOnly,
}

/// What the host knows at a tool proposal's intake beyond the store: the loopback ports the
/// operator opened, its API's port, and the names of the tools it gives agents itself.
#[derive(Debug, Clone, Default)]
pub struct IntakeContext {
    pub loopback_ports: Vec<u16>,
    pub api_port: Option<u16>,
    pub host_tools: Vec<String>,
}

/// What a session's cell asks of the Keep service.
pub(crate) trait SessionPort: Send + Sync {
    /// This host's name among the hosts sharing the database.
    fn host_id(&self) -> &str;

    /// Where ids for waiting uses come from.
    fn random(&self) -> &dyn Random;

    /// The store the waiting uses are recorded in.
    fn store(&self) -> &Store;

    /// Counts one refusal of `user`'s cells against the person's bound.
    fn refusal_bound(&self, user: &str) -> Bound;

    /// Appends one journal entry by `actor` in a write of its own.
    fn journal_as<'a>(
        &'a self,
        actor: &'a str,
        user: &'a str,
        subject: &'a str,
        detail: JournalDetail,
    ) -> BoxFuture<'a, Result<(), KeepError>>;

    /// Marks session `session` of `user` tainted by `source` unless it is: whether it was not,
    /// and the source the store holds.
    fn taint<'a>(
        &'a self,
        user: &'a str,
        session: &'a str,
        source: &'a str,
    ) -> BoxFuture<'a, Result<(bool, String), KeepError>>;

    /// Stores what the session's agent proposes and tells its person.
    fn propose<'a>(
        &'a self,
        host: &'a SessionHost,
        proposal: &'a Proposal,
        taint: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), KeepError>>;

    /// Takes in a tool the session's agent proposes, reviewed against `context`, and tells its
    /// person.
    fn propose_tool<'a>(
        &'a self,
        host: &'a SessionHost,
        payload_json: &'a str,
        taint: Option<&'a str>,
        context: &'a IntakeContext,
    ) -> BoxFuture<'a, Result<(), KeepError>>;

    /// The memory entries of `agent` for `user`, and whether any came from a tainted session.
    fn memory<'a>(
        &'a self,
        user: &'a str,
        agent: &'a str,
    ) -> BoxFuture<'a, Result<(Vec<String>, bool), KeepError>>;

    /// `owner`'s credential `name`, opened.
    fn credential<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Secret, KeepError>>;

    /// Calls the person's tool `name` for the session of `parent`.
    fn call_tool<'a>(
        &'a self,
        parent: &'a SessionHost,
        name: &'a str,
        args_json: &'a str,
    ) -> BoxFuture<'a, Result<ToolAnswer, String>>;
}
