//! The Keep service: the rules of this crate applied to the host's state in the store. One
//! method per thing a caller can ask; each checks who asks ([`Identity`]), applies the rules,
//! writes in one [`KeepTx`](imurun_store::KeepTx) with its journal entry, and journals refusals.
//! The server maps its results and errors to HTTP; the binary's `imurun keep` commands call it
//! directly with [`Identity::local_operator`].

mod ceilings;
mod conversations;
mod decide;
mod deploy;
mod devices;
mod egress_answers;
mod host_settings;
mod journal_access;
mod people;
mod port;
mod proposal_access;
pub(crate) mod refusals;
mod sessions;
mod shared;
mod tokens;
mod tool_access;
mod tool_calls;
mod tool_decisions;
mod tool_proposals;
mod tool_revocation;
mod trust_roots;
mod vault_access;

use std::sync::Arc;

use imurun_core::Clock;

use imurun_keep_rules::random::Random;
use imurun_store::Store;

use crate::KeepError;
use crate::keys::KeyPair;
use crate::vault::VaultKey;

pub use crate::cells::IntakeContext;
pub use ceilings::CeilingView;
pub(crate) use conversations::Kept;
pub use conversations::{
    ConversationEntry, ConversationView, ENTRY_BYTES_KEPT_MAX, HOST_RESTARTED,
    NETWORK_ENTRIES_PER_MESSAGE_MAX, TITLE_CHARS_MAX,
};
pub use deploy::{AgentReach, AgentView, BUNDLE_BYTES_MAX, DeployRequest, PublicAgentView};
pub use devices::{DeviceView, ENROL_CODE_TTL_S_DEFAULT, ENROL_CODE_TTL_S_MAX, EnrolProof};
pub use egress_answers::{ApprovalView, EGRESS_ANSWERS_CHANNEL};
pub use host_settings::{HostView, ToolProposeView};
pub use imurun_keep_rules::checks::enrol::{DEVICE_LABEL_CHARS_MAX, possession_message};
pub use journal_access::{
    BREAK_NOT_ABOUT_YOU, BadEntryView, JOURNAL_LIST_ENTRIES_MAX, JournalCheckView, JournalQuery,
    JournalView, USER_CHECK_REUSE_S,
};
pub use people::{PersonAdded, PersonDetail, PersonRevoked, PersonToken, PersonView};
pub use proposal_access::{AnyProposal, ProposalView};
pub use refusals::{
    Claimed, DoorRefusal, REFUSAL_TEXT_CHARS_MAX, REFUSALS_JOURNALED_PER_MINUTE_MAX,
    escaped_and_cut, noting_refusals,
};
pub use sessions::{
    FILE_NAME_CHARS_MAX, FILE_TEXT_BYTES_MAX, MESSAGE_BYTES_MAX, REPLIES_BYTES_MAX,
    REPLY_EVENT_BYTES_MAX, SessionView,
};
pub use shared::append;
pub(crate) use shared::{append_as, entry_from_row, envelope_text};
pub use tokens::{NewToken, TokenRole};
pub use tool_access::{DecisionBasis, TOOL_PROPOSAL_ID_PREFIX, ToolOrigin, ToolReview, ToolView};
pub use vault_access::{VAULT_ENTRIES_MAX, VaultEntryView};

/// The `kind` of the trust root's row and high-water mark.
pub(crate) const TRUST_ROOT_KIND: &str = "trust_root";
/// The `kind` of ceilings' rows and high-water marks.
pub(crate) const CEILING_KIND: &str = "ceiling";
/// The `kind` of agents' high-water marks.
pub(crate) const AGENT_KIND: &str = "agent";

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// The operator: deploys, ceilings, trust, tokens, enrolment codes, the whole journal.
    Operator {
        /// The token's id (`local` for the host's own command line).
        token_id: String,
    },
    /// A user: their own vault entries, devices, ceiling and journal entries.
    User { name: String, token_id: String },
}

impl Identity {
    /// The operator at the host's own command line (`imurun keep ...`), who holds the database.
    pub fn local_operator() -> Identity {
        Identity::Operator {
            token_id: LOCAL_TOKEN_ID.to_owned(),
        }
    }

    /// How the journal names the actor: `operator` or `user:<name>`.
    pub fn actor(&self) -> String {
        match self {
            Identity::Operator { .. } => "operator".to_owned(),
            Identity::User { name, .. } => format!("user:{name}"),
        }
    }

    /// The user's name, for a user.
    pub fn user(&self) -> Option<&str> {
        match self {
            Identity::Operator { .. } => None,
            Identity::User { name, .. } => Some(name),
        }
    }

    /// Whether this is the operator.
    pub fn is_operator(&self) -> bool {
        matches!(self, Identity::Operator { .. })
    }

    /// Refuses anyone but the operator.
    pub fn require_operator(&self) -> Result<(), KeepError> {
        match self {
            Identity::Operator { .. } => Ok(()),
            Identity::User { .. } => Err(KeepError::Forbidden(
                "this route is the operator's; a user token cannot use it".into(),
            )),
        }
    }

    /// The vault owner of the caller's own entries: `operator` or `user:<name>`.
    pub(crate) fn vault_owner(&self) -> String {
        self.actor()
    }
}

/// Milliseconds since the Unix epoch, from the system clock.
pub fn now_ms() -> i64 {
    imurun_core::now_unix_ms()
}

/// The token id of the operator at the host (the command line): no token row has it (token ids
/// are hexadecimal).
const LOCAL_TOKEN_ID: &str = "local";

/// The host name of a service that was given none (the command line, tests): one host.
pub const DEFAULT_HOST_ID: &str = "local";

/// The Keep service over one store: the shared [`Core`] and, where sessions are served, their
/// cells. What a caller can ask is grouped by area, each a view over the same core:
/// [`agents`](KeepService::agents), [`ceilings`](KeepService::ceilings),
/// [`devices`](KeepService::devices), [`vault`](KeepService::vault),
/// [`journal`](KeepService::journal), [`sessions`](KeepService::sessions),
/// [`proposals`](KeepService::proposals), [`tool_proposals`](KeepService::tool_proposals),
/// [`tools`](KeepService::tools), [`approvals`](KeepService::approvals),
/// [`tokens`](KeepService::tokens), [`trust_roots`](KeepService::trust_roots) and
/// [`host_settings`](KeepService::host_settings).
#[derive(Clone)]
pub struct KeepService {
    core: Core,
    /// The cells of live sessions (`None` where sessions are not served: the command line).
    cells: Option<Arc<crate::cells::Cells>>,
}

/// What every area works over: the store, the host's keys and marks, the clock, the random
/// numbers, and the refusal bounds. Its methods are the crate's own.
#[derive(Clone)]
pub(crate) struct Core {
    store: Store,
    /// The marks kept outside the database (`None` for a service without a Keep folder).
    high_water_file: Option<crate::high_water::HighWaterFile>,
    vault_key: Arc<VaultKey>,
    host_key: Arc<KeyPair>,
    clock: Arc<dyn Clock>,
    /// Where keys, tokens, ids and nonces get their random numbers: the operating system's.
    random: Arc<dyn Random>,
    /// People's last journal checks (see `verify_journal`): one runs at a time, and a person
    /// asking again soon after, with the journal unchanged, gets the last answer.
    user_checks: Arc<journal_access::UserChecks>,
    /// This host's name among the hosts that share the database (`keep.host_id`): the egress
    /// uses its cells wait on are recorded under it.
    host_id: Arc<str>,
    /// Refusals journaled per identity this minute (see `refusals`).
    refusal_counts: Arc<refusals::RefusalCounts>,
    /// Where people's live events go, where sessions are served: a refusal past the journal's
    /// bound is told to its person there.
    events: Option<Arc<dyn crate::cells::KeepEvents>>,
}

impl std::fmt::Debug for KeepService {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("KeepService")
            .field("host_key", &self.core.host_key)
            .finish_non_exhaustive()
    }
}

/// Declares an area of the service: a view over the service and its core, and the service's
/// method that gives it.
macro_rules! areas {
    ($($(#[$doc:meta])* $accessor:ident: $area:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $area<'a> {
            /// The whole service, for an area that asks another (not every area does).
            #[allow(dead_code)]
            keep: &'a KeepService,
            core: &'a Core,
        }

        impl std::fmt::Debug for $area<'_> {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.debug_struct(stringify!($area)).finish_non_exhaustive()
            }
        }

        impl KeepService {
            $(#[$doc])*
            pub fn $accessor(&self) -> $area<'_> {
                $area { keep: self, core: &self.core }
            }
        }
    )*};
}

areas! {
    /// Deployed agents: deploys, and what each person may see of them.
    agents: Agents;
    /// People's ceilings.
    ceilings: Ceilings;
    /// The trust root: installed once, rotated by signed versions.
    trust_roots: TrustRoots;
    /// API tokens.
    tokens: Tokens;
    /// People's devices: enrolment codes, enrolment, retirement.
    devices: Devices;
    /// The vault's credentials.
    vault: Vault;
    /// The journal: its entries, its check, and the refusals the door journals.
    journal: Journal;
    /// Sessions with deployed agents in their cells.
    sessions: Sessions;
    /// What agents propose (memory, notes) and the decisions on it.
    proposals: Proposals;
    /// Tools agents propose: intake, reviews and device-signed decisions.
    tool_proposals: ToolProposals;
    /// People's deployed tools: views, calls, taint clearing and revocation.
    tools: Tools;
    /// Egress uses waiting on a person, and their answers.
    approvals: Approvals;
    /// Settings for every host sharing the database (`tool.propose`).
    host_settings: HostSettings;
    /// People: listed, added and revoked by the operator.
    people: People;
}

impl KeepService {
    /// The service over `store`, with the host's vault and host keys and `clock`.
    pub fn new(
        store: Store,
        vault_key: VaultKey,
        host_key: KeyPair,
        clock: Arc<dyn Clock>,
    ) -> KeepService {
        let core = Core {
            store,
            high_water_file: None,
            vault_key: Arc::new(vault_key),
            host_key: Arc::new(host_key),
            clock,
            random: Arc::new(crate::random::OsRandom),
            user_checks: Arc::default(),
            host_id: Arc::from(DEFAULT_HOST_ID),
            refusal_counts: Arc::default(),
            events: None,
        };
        KeepService { core, cells: None }
    }

    /// Names this host among the hosts that share the database.
    pub fn with_host_id(mut self, host_id: &str) -> KeepService {
        self.core.host_id = Arc::from(host_id);
        self
    }

    /// This host's name among the hosts that share the database.
    pub fn host_id(&self) -> &str {
        &self.core.host_id
    }

    /// Serves sessions with `cells`.
    pub fn with_cells(mut self, cells: crate::cells::Cells) -> KeepService {
        self.core.events = Some(cells.events());
        self.cells = Some(Arc::new(cells));
        self
    }

    /// The cells of live sessions, when this service runs them.
    pub fn cells(&self) -> Option<&Arc<crate::cells::Cells>> {
        self.cells.as_ref()
    }

    /// Keeps the high-water marks in `file` too, outside the database.
    pub fn with_high_water_file(mut self, file: crate::high_water::HighWaterFile) -> KeepService {
        self.core.high_water_file = Some(file);
        self
    }

    /// The host key's public half: what the host signs approved tools' bundles with.
    pub fn host_key_id(&self) -> String {
        self.core.host_key.key_id()
    }

    /// Seals and opens the notices this host and the others on its database send each other.
    pub fn notice_seal(&self) -> crate::seal::NoticeSeal {
        crate::seal::NoticeSeal::new(Arc::clone(&self.core.host_key))
    }

    /// This service without its cells: what a session's host holds, so that the cells do not
    /// hold themselves.
    pub(crate) fn without_cells(&self) -> KeepService {
        KeepService {
            cells: None,
            ..self.clone()
        }
    }
}
