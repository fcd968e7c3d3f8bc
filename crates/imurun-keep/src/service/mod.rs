//! The Keep service: the rules of this crate applied to the host's state in the store. One
//! method per thing a caller can ask; each checks who asks ([`Identity`]), applies the rules,
//! writes in one [`KeepTx`](imurun_store::KeepTx) with its journal entry, and journals refusals.
//! The server maps its results and errors to HTTP; the binary's `imurun keep` commands call it
//! directly with [`Identity::local_operator`].

mod ceilings;
mod decide;
mod deploy;
mod devices;
mod egress_answers;
mod host_settings;
mod journal_access;
mod proposal_access;
pub(crate) mod refusals;
mod sessions;
mod tool_access;
mod tool_calls;
mod tool_decisions;
mod tool_proposals;
mod tool_revocation;
mod vault_access;

use std::sync::Arc;

use imurun_keep_rules::RuleError;
use imurun_keep_rules::checks::Attempt;
use imurun_keep_rules::random::Random;
use imurun_store::{JournalDraft, KeepTx, Store};
use serde_json::{Value, json};

use crate::KeepError;
use crate::documents::Signed;
use crate::journal::JournalEntry;
use crate::keys::KeyPair;
use crate::tokens::{TOKEN_BYTES_MAX, TOKEN_PREFIX, new_secret, secret_hash, token_id};
use crate::trust::Trust;
use crate::vault::VaultKey;

pub use ceilings::CeilingView;
pub use deploy::{AgentView, BUNDLE_BYTES_MAX, DeployRequest, PublicAgentView};
pub use devices::{DeviceView, ENROL_CODE_TTL_S_DEFAULT, ENROL_CODE_TTL_S_MAX, EnrolProof};
pub use egress_answers::{ApprovalView, EGRESS_ANSWERS_CHANNEL};
pub use host_settings::ToolProposeView;
pub use imurun_keep_rules::checks::enrol::{DEVICE_LABEL_CHARS_MAX, possession_message};
pub use journal_access::{
    BREAK_NOT_ABOUT_YOU, BadEntryView, JOURNAL_LIST_ENTRIES_MAX, JournalCheckView, JournalView,
    USER_CHECK_REUSE_S,
};
pub use proposal_access::ProposalView;
pub use refusals::{
    Claimed, DoorRefusal, REFUSAL_TEXT_CHARS_MAX, REFUSALS_JOURNALED_PER_MINUTE_MAX,
    escaped_and_cut, noting_refusals,
};
pub use sessions::{
    FILE_NAME_CHARS_MAX, FILE_TEXT_BYTES_MAX, MESSAGE_BYTES_MAX, REPLIES_BYTES_MAX,
    REPLY_EVENT_BYTES_MAX, SessionView,
};
pub use tool_access::{DecisionBasis, TOOL_PROPOSAL_ID_PREFIX, ToolOrigin, ToolReview, ToolView};
pub use tool_proposals::IntakeContext;
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

/// A token's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRole {
    Operator,
    User(String),
}

/// A token just made: shown once.
#[derive(Debug)]
pub struct NewToken {
    pub id: String,
    pub token: String,
}

/// Seconds since the Unix epoch, from the host's clock or a test's.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Milliseconds since the Unix epoch, from the system clock.
pub fn now_ms() -> i64 {
    imurun_core::now_unix_ms()
}

/// The system clock in seconds.
pub fn system_clock() -> Clock {
    Arc::new(|| imurun_core::now_unix_ms() / 1_000)
}

/// The token id of the operator at the host (the command line): no token row has it (token ids
/// are hexadecimal).
const LOCAL_TOKEN_ID: &str = "local";

/// The host name of a service that was given none (the command line, tests): one host.
pub const DEFAULT_HOST_ID: &str = "local";

/// The Keep service over one store.
#[derive(Clone)]
pub struct KeepService {
    store: Store,
    /// The marks kept outside the database (`None` for a service without a Keep folder).
    high_water_file: Option<crate::high_water::HighWaterFile>,
    vault_key: Arc<VaultKey>,
    host_key: Arc<KeyPair>,
    clock: Clock,
    /// Where keys, tokens, ids and nonces get their random numbers: the operating system's.
    random: Arc<dyn Random>,
    /// The cells of live sessions (`None` where sessions are not served: the command line).
    cells: Option<Arc<crate::cells::Cells>>,
    /// People's last journal checks (see `verify_journal`): one runs at a time, and a person
    /// asking again soon after, with the journal unchanged, gets the last answer.
    user_checks: Arc<journal_access::UserChecks>,
    /// This host's name among the hosts that share the database (`keep.host_id`): the egress
    /// uses its cells wait on are recorded under it.
    host_id: Arc<str>,
    /// Refusals journaled per identity this minute (see `refusals`).
    refusal_counts: Arc<refusals::RefusalCounts>,
}

impl std::fmt::Debug for KeepService {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("KeepService")
            .field("host_key", &self.host_key)
            .finish_non_exhaustive()
    }
}

impl KeepService {
    /// The service over `store`, with the host's vault and host keys.
    pub fn new(store: Store, vault_key: VaultKey, host_key: KeyPair, clock: Clock) -> KeepService {
        KeepService {
            store,
            high_water_file: None,
            vault_key: Arc::new(vault_key),
            host_key: Arc::new(host_key),
            clock,
            random: Arc::new(crate::random::OsRandom),
            cells: None,
            user_checks: Arc::default(),
            host_id: Arc::from(DEFAULT_HOST_ID),
            refusal_counts: Arc::default(),
        }
    }

    /// Names this host among the hosts that share the database.
    pub fn with_host_id(mut self, host_id: &str) -> KeepService {
        self.host_id = Arc::from(host_id);
        self
    }

    /// This host's name among the hosts that share the database.
    pub fn host_id(&self) -> &str {
        &self.host_id
    }

    /// Serves sessions with `cells`.
    pub fn with_cells(mut self, cells: crate::cells::Cells) -> KeepService {
        self.cells = Some(Arc::new(cells));
        self
    }

    /// The cells of live sessions, when this service runs them.
    pub fn cells(&self) -> Option<&Arc<crate::cells::Cells>> {
        self.cells.as_ref()
    }

    /// This service without its cells: what a session's host holds, so that the cells do not
    /// hold themselves.
    pub(crate) fn without_cells(&self) -> KeepService {
        KeepService {
            cells: None,
            ..self.clone()
        }
    }

    /// Appends one journal entry in a write of its own, by `actor` (`agent:<name>` for what a
    /// cell did).
    pub(crate) async fn journal_as(
        &self,
        actor: &str,
        user: Option<&str>,
        kind: &str,
        subject: &str,
        detail: Value,
    ) -> Result<(), KeepError> {
        let mut tx = self.store.keep_begin().await?;
        append_as(&mut tx, actor, user, kind, subject, detail).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Keeps the high-water marks in `file` too, outside the database.
    pub fn with_high_water_file(mut self, file: crate::high_water::HighWaterFile) -> KeepService {
        self.high_water_file = Some(file);
        self
    }

    /// The highest version accepted for `kind` and `subject`: the higher of the database's mark
    /// (`in_database`) and the file's.
    pub(crate) fn high_water(
        &self,
        kind: &str,
        subject: &str,
        in_database: i64,
    ) -> Result<i64, KeepError> {
        let in_file = match &self.high_water_file {
            Some(file) => file.get(kind, subject)?,
            None => 0,
        };
        Ok(in_database.max(in_file))
    }

    /// The trust root's version in force, read under the lock of `tx`.
    pub(crate) async fn trust_root_version_locked(
        &self,
        tx: &mut KeepTx,
    ) -> Result<i64, KeepError> {
        self.high_water(
            TRUST_ROOT_KIND,
            "",
            tx.high_water(TRUST_ROOT_KIND, "").await?,
        )
    }

    /// Raises the file's mark (the database's is raised in the transaction).
    pub(crate) fn raise_high_water_file(
        &self,
        kind: &str,
        subject: &str,
        version: i64,
    ) -> Result<(), KeepError> {
        match &self.high_water_file {
            Some(file) => file.raise(kind, subject, version),
            None => Ok(()),
        }
    }

    /// Commits `tx`, then raises the file's mark for `kind` and `subject` to `version`, in a
    /// task of their own: a request dropped while it waits (its client went away) cannot leave
    /// a committed write without its mark outside the database.
    pub(crate) async fn commit_and_mark(
        &self,
        tx: KeepTx,
        (kind, subject, version): (&'static str, String, i64),
    ) -> Result<(), KeepError> {
        let file = self.high_water_file.clone();
        tokio::spawn(async move {
            tx.commit().await?;
            match file {
                Some(file) => file.raise(kind, &subject, version),
                None => Ok(()),
            }
        })
        .await
        .map_err(|error| KeepError::Unavailable(format!("a Keep write stopped: {error}")))?
    }

    /// The host key's public half: what the host signs approved tools' bundles with.
    pub fn host_key_id(&self) -> String {
        self.host_key.key_id()
    }

    /// Seals and opens the notices this host and the others on its database send each other.
    pub fn notice_seal(&self) -> crate::seal::NoticeSeal {
        crate::seal::NoticeSeal::new(Arc::clone(&self.host_key))
    }

    pub(crate) fn now_s(&self) -> i64 {
        (self.clock)()
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn vault_key(&self) -> &VaultKey {
        &self.vault_key
    }

    pub(crate) fn host_key(&self) -> &KeyPair {
        &self.host_key
    }

    /// The generator the rules draw keys, tokens, ids and nonces from.
    pub(crate) fn random(&self) -> &dyn Random {
        self.random.as_ref()
    }

    /// Writes a signed document row, sealed by the host key.
    pub(crate) async fn put_sealed_document(
        &self,
        tx: &mut KeepTx,
        kind: &str,
        subject: &str,
        version: i64,
        envelope: &str,
    ) -> Result<(), KeepError> {
        let fields = crate::seal::DocumentFields {
            kind,
            subject,
            version,
            envelope,
        };
        let seal = crate::seal::seal_document(&self.host_key, &fields);
        tx.put_document(kind, subject, version, envelope, &seal)
            .await?;
        Ok(())
    }

    /// Checks a stored document row's seal.
    pub(crate) fn check_document_row(
        &self,
        row: &imurun_store::DocumentRow,
    ) -> Result<(), KeepError> {
        let fields = crate::seal::DocumentFields {
            kind: &row.kind,
            subject: &row.subject,
            version: row.version,
            envelope: &row.envelope,
        };
        Ok(crate::seal::check_document(
            &self.host_key.public(),
            &fields,
            &row.seal,
        )?)
    }

    /// Whether a trust root is installed.
    pub async fn is_initialised(&self) -> Result<bool, KeepError> {
        Ok(self.store.keep_high_water(TRUST_ROOT_KIND, "").await? > 0)
    }

    /// Installs the first trust root (`keep init`); refused when one is installed already.
    pub async fn install_trust_root(&self, envelope: &Signed) -> Result<(), KeepError> {
        let trust = Trust::install(envelope, self.now_s())?;
        let version = trust.root().version;
        let text = envelope_text(envelope)?;
        let mut tx = self.store.keep_begin().await?;
        if tx.high_water(TRUST_ROOT_KIND, "").await? > 0 {
            return Err(KeepError::Conflict(
                "a trust root is installed already; rotate it with a new signed version".into(),
            ));
        }
        self.put_sealed_document(&mut tx, TRUST_ROOT_KIND, "", version, &text)
            .await?;
        tx.raise_high_water(TRUST_ROOT_KIND, "", version).await?;
        let detail = json!({
            "version": version,
            "root_sha256": envelope.document_sha256()?,
            "keys": key_summary(&trust),
            "host_key_id": self.host_key.key_id(),
        });
        append(
            &mut tx,
            &Identity::local_operator(),
            None,
            "trust_root",
            "trust_root@1",
            detail,
        )
        .await?;
        self.commit_and_mark(tx, (TRUST_ROOT_KIND, String::new(), version))
            .await?;
        Ok(())
    }

    /// The trust root in force, checked against the highest version accepted and its expiry.
    pub async fn trust(&self) -> Result<Trust, KeepError> {
        let trust = self.trust_even_expired().await?;
        crate::trust::check_expiry("the trust root", trust.root().expires_at, self.now_s())?;
        Ok(trust)
    }

    /// The trust root in force, or `None` when none is (not set up, expired, or a stored root
    /// that does not hold: then nothing it would verify is in force). A failing database is an
    /// error, never "no trust root": a decision must not be checked against the empty ceiling
    /// because a read failed.
    pub(crate) async fn trust_if_any(&self) -> Result<Option<Trust>, KeepError> {
        match self.trust().await {
            Ok(trust) => Ok(Some(trust)),
            Err(error @ KeepError::Store(_)) => Err(error),
            Err(_) => Ok(None),
        }
    }

    /// The trust root in force even when it has expired: what verifies its successor, and what
    /// the host checks at start (an expired root must not keep the host from starting, or it
    /// could never be replaced).
    pub async fn trust_even_expired(&self) -> Result<Trust, KeepError> {
        let in_database = self.store.keep_high_water(TRUST_ROOT_KIND, "").await?;
        let highest = self.high_water(TRUST_ROOT_KIND, "", in_database)?;
        let row = self
            .store
            .keep_document(TRUST_ROOT_KIND, "")
            .await?
            .ok_or(KeepError::NotInitialised)?;
        self.check_document_row(&row)?;
        let envelope = Signed::from_text(row.envelope.as_bytes())?;
        Ok(Trust::load_expired(&envelope, highest)?)
    }

    /// Who holds `token`; unknown, revoked and malformed tokens are all [`KeepError::Unauthorized`].
    pub async fn authenticate(&self, token: &str) -> Result<Identity, KeepError> {
        if token.len() > TOKEN_BYTES_MAX || !token.starts_with(TOKEN_PREFIX) {
            return Err(KeepError::Unauthorized);
        }
        let row = self
            .store
            .keep_token_by_hash(&secret_hash(token))
            .await?
            .ok_or(KeepError::Unauthorized)?;
        match (row.role.as_str(), row.user_name) {
            ("operator", _) => Ok(Identity::Operator { token_id: row.id }),
            ("user", Some(name)) => Ok(Identity::User {
                name,
                token_id: row.id,
            }),
            _ => Err(KeepError::Unauthorized),
        }
    }

    /// Whether `identity`'s token still works: a long-lived answer (an event stream) asks
    /// before each thing it sends, so a token revoked meanwhile, by any host or the command
    /// line, receives nothing more. A store that cannot answer counts as revoked.
    pub async fn still_authorized(&self, identity: &Identity) -> bool {
        let token_id = match identity {
            Identity::Operator { token_id } | Identity::User { token_id, .. } => token_id,
        };
        self.store
            .keep_token_active(token_id)
            .await
            .unwrap_or(false)
    }

    /// Makes a token for `role` (operator only); the token is in the answer and nowhere else.
    pub async fn create_token(
        &self,
        caller: &Identity,
        role: &TokenRole,
    ) -> Result<NewToken, KeepError> {
        caller.require_operator()?;
        if let TokenRole::User(user) = role {
            crate::documents::check_user(user, "user")?;
        }
        let token = new_secret(self.random(), TOKEN_PREFIX)?;
        let hash = secret_hash(&token);
        let id = token_id(&hash);
        let (role_name, user) = match role {
            TokenRole::Operator => ("operator", None),
            TokenRole::User(user) => ("user", Some(user.as_str())),
        };
        let mut tx = self.store.keep_begin().await?;
        tx.insert_token(&id, &hash, role_name, user).await?;
        let detail = json!({"token_id": id, "role": role_name, "action": "create"});
        append(
            &mut tx,
            caller,
            user,
            "token",
            &format!("token:{id}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        Ok(NewToken { id, token })
    }

    /// Revokes token `id` (operator only); it stops working at once.
    pub async fn revoke_token(&self, caller: &Identity, id: &str) -> Result<(), KeepError> {
        caller.require_operator()?;
        let mut tx = self.store.keep_begin().await?;
        let row = tx
            .revoke_token(id)
            .await?
            .ok_or(KeepError::NotFound("token"))?;
        let detail = json!({"token_id": row.id, "role": row.role, "action": "revoke"});
        append(
            &mut tx,
            caller,
            row.user_name.as_deref(),
            "token",
            &format!("token:{id}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Journals a refusal of `action` on `subject` by the rule `error` names, in a write of its
    /// own (the refused write was never made). Store failures are not journaled.
    pub(crate) async fn refuse<T>(
        &self,
        caller: &Identity,
        user: Option<&str>,
        action: &str,
        subject: &str,
        error: KeepError,
    ) -> Result<T, KeepError> {
        self.refuse_attempt(caller, (user, action, subject), None, error)
            .await
    }

    /// [`KeepService::refuse`] for a request that names a version and a signing key: the entry
    /// records them, and whether the signature held.
    pub(crate) async fn refuse_attempt<T>(
        &self,
        caller: &Identity,
        (user, action, subject): (Option<&str>, &str, &str),
        attempt: Option<Attempt>,
        error: KeepError,
    ) -> Result<T, KeepError> {
        if matches!(
            error,
            KeepError::Store(_) | KeepError::Rule(RuleError::Random(_)) | KeepError::NotFound(_)
        ) {
            return Err(error);
        }
        // The reason and the subject may quote what the request sent: one line, escaped.
        let reason = crate::proposals::one_line(&error.to_string(), 500);
        let mut detail = json!({"action": action, "rule": error.rule(), "reason": reason});
        if let Some(attempt) = attempt {
            detail["attempt"] = json!({
                "version": attempt.version,
                "key_id": escaped_and_cut(&attempt.key_id),
                "verified": attempt.verified,
            });
        }
        self.journal_refusal(caller, user, &escaped_and_cut(subject), detail)
            .await?;
        Err(error)
    }
}

/// Appends an entry to the journal in `tx`: the one way entries are written (each Keep write
/// calls it in its own transaction; benchmarks call it to measure appends).
pub async fn append(
    tx: &mut KeepTx,
    caller: &Identity,
    user: Option<&str>,
    kind: &str,
    subject: &str,
    detail: Value,
) -> Result<(), KeepError> {
    // The caller's token is read again under the write lock: a token revoked (on this host or
    // another) after the request was let in authorises nothing that commits after the revoke.
    // Revoking one's own token is the one write it may still make.
    let token_id = match caller {
        Identity::Operator { token_id } | Identity::User { token_id, .. } => token_id.as_str(),
    };
    if token_id != LOCAL_TOKEN_ID
        && !tx.token_active(token_id).await?
        && !(kind == "token" && subject == format!("token:{token_id}"))
    {
        return Err(KeepError::Unauthorized);
    }
    append_as(tx, &caller.actor(), user, kind, subject, detail).await
}

/// [`append`] with the actor named as the journal names it.
pub(crate) async fn append_as(
    tx: &mut KeepTx,
    actor: &str,
    user: Option<&str>,
    kind: &str,
    subject: &str,
    detail: Value,
) -> Result<(), KeepError> {
    crate::canonical::check_document(&detail)?;
    let draft = JournalDraft {
        actor: actor.to_owned(),
        user_name: user.map(str::to_owned),
        kind: kind.to_owned(),
        subject: subject.to_owned(),
        detail: String::from_utf8(crate::canonical::canonicalize(&detail))
            .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))?,
    };
    tx.append_journal(draft, |row| {
        Ok::<_, KeepError>(entry_from_row(row)?.compute_hash()?)
    })
    .await??;
    Ok(())
}

/// A stored journal row as an entry of the chain.
pub(crate) fn entry_from_row(row: &imurun_store::JournalRow) -> Result<JournalEntry, KeepError> {
    Ok(JournalEntry {
        seq: row.seq,
        at_ms: row.at_ms,
        actor: row.actor.clone(),
        user: row.user_name.clone(),
        kind: row.kind.clone(),
        subject: row.subject.clone(),
        detail: crate::canonical::parse_document(row.detail.as_bytes())?,
        prev_hash: row.prev_hash.clone(),
        hash: row.hash.clone(),
    })
}

/// An envelope's JSON text, as stored.
pub(crate) fn envelope_text(envelope: &Signed) -> Result<String, KeepError> {
    serde_json::to_string(envelope)
        .map_err(|error| KeepError::Rule(RuleError::Canonical(error.to_string())))
}

/// The trust root's keys for the journal: ids, roles, retirement.
fn key_summary(trust: &Trust) -> Value {
    Value::Array(
        trust
            .root()
            .keys
            .iter()
            .map(|key| json!({"key_id": key.key_id, "role": key.role, "retired": key.retired}))
            .collect(),
    )
}
