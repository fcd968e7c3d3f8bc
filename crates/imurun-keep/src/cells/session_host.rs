//! What the host does for one session's cell: the model, memory, tools, files and emitted
//! proposals, and the taint that untrusted content leaves.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use imurun_cell::broker::EgressDecision;
use imurun_cell::egress::{self, EgressGrant};
use imurun_cell::{CellHost, ChatMessage, HttpRequest, HttpResponse, WallClock};
use imurun_core::{BoxFuture, GenerateRequest, Message, Role};

use super::port::{Bound, IntakeContext, SessionPort};
use super::{
    Cells, EgressPorts, GENERATE_TOKENS_MAX, REFUSALS_JOURNALED_PER_SESSION_MAX, cut_chars,
    cut_text, grant_for, lock,
};
use crate::KeepError;
use crate::events::KeepEvent;
use crate::journal_detail::{BoundRule, RefusalDetail, RefusalsBound, SessionRefused};
use crate::manifest::{Manifest, MemoryAccess};
use crate::proposals::{self, EmitGrants};

/// What the host does for one session's cell.
pub(crate) struct SessionHost {
    /// What the cell may ask of the Keep service.
    pub(crate) service: Arc<dyn SessionPort>,
    pub(crate) cells: Weak<Cells>,
    pub(crate) session_id: String,
    pub(crate) user: String,
    pub(crate) agent: String,
    pub(crate) agent_version: i64,
    /// Whose memory entries `memory.read` answers: the session's agent's, for a tool too (a
    /// tool runs only in sessions of the agent that proposed it).
    memory_of: String,
    pub(crate) manifest: Manifest,
    pub(crate) grant: Option<EgressGrant>,
    /// Whose vault the grant's credentials come from: `operator` for an agent, `user:<name>`
    /// for a tool in the person's namespace.
    pub(super) credential_owner: String,
    /// A deployed tool's cell: it hands back a result and proposes nothing.
    pub(super) tool: bool,
    /// The taint's source once the session is tainted.
    pub(crate) taint: Mutex<Option<String>>,
    /// Refusals journaled for the session (shared with the cells of the tools it calls).
    refusals_journaled: Arc<AtomicUsize>,
    /// Refused egress uses of the request in flight, journaled when it returns.
    pub(super) refused: Mutex<Vec<EgressDecision>>,
    /// The URL of the last use of the request in flight that reached upstream, or may have
    /// (allowed and sent, or refused only after it was sent): where untrusted content came
    /// from.
    pub(super) last_sent: Mutex<Option<String>>,
    /// Uses the message in flight asked the person about (shared with the cells of the tools
    /// it calls).
    pub(super) approvals_asked: Arc<AtomicUsize>,
    /// The network uses decided while the message in flight runs, in words, for its
    /// conversation (shared with the cells of the tools it calls).
    pub(crate) network: Arc<Mutex<Vec<String>>>,
}

impl SessionHost {
    pub(crate) fn new(
        service: Arc<dyn SessionPort>,
        cells: Weak<Cells>,
        session_id: String,
        user: String,
        manifest: Manifest,
        ports: EgressPorts<'_>,
    ) -> SessionHost {
        let grant = grant_for(&manifest, ports);
        SessionHost {
            service,
            cells,
            session_id,
            user,
            agent: manifest.name.clone(),
            agent_version: manifest.version,
            memory_of: manifest.name.clone(),
            grant,
            manifest,
            credential_owner: "operator".to_owned(),
            tool: false,
            taint: Mutex::new(None),
            refusals_journaled: Arc::new(AtomicUsize::new(0)),
            refused: Mutex::new(Vec::new()),
            last_sent: Mutex::new(None),
            approvals_asked: Arc::new(AtomicUsize::new(0)),
            network: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The host of a cell running the person's deployed tool `qualified` (`u/<user>/<name>`)
    /// for this session: the tool's own clamped manifest, the person's own connections, the
    /// session's taint, and egress in `ask` mode while the tool's taint is not cleared.
    pub(crate) fn for_tool(
        &self,
        qualified: String,
        manifest: Manifest,
        ask: bool,
        ports: EgressPorts<'_>,
    ) -> SessionHost {
        let mut grant = grant_for(&manifest, ports);
        if ask && let Some(grant) = grant.as_mut() {
            grant.mode = egress::EgressMode::Ask;
        }
        SessionHost {
            service: Arc::clone(&self.service),
            cells: self.cells.clone(),
            session_id: self.session_id.clone(),
            user: self.user.clone(),
            agent: qualified,
            agent_version: manifest.version,
            memory_of: self.memory_of.clone(),
            grant,
            manifest,
            credential_owner: format!("user:{}", self.user),
            tool: true,
            taint: Mutex::new(self.tainted_by()),
            refusals_journaled: Arc::clone(&self.refusals_journaled),
            refused: Mutex::new(Vec::new()),
            last_sent: Mutex::new(None),
            approvals_asked: Arc::clone(&self.approvals_asked),
            network: Arc::clone(&self.network),
        }
    }

    /// Publishes `event`, one of this session's, to its person.
    pub(crate) fn publish(&self, event: KeepEvent) {
        debug_assert_eq!(event.session_id(), Some(self.session_id.as_str()));
        if let Some(cells) = self.cells.upgrade() {
            cells.publish(&self.user, event);
        }
    }

    /// A new message starts: its uses may ask the person again.
    pub(crate) fn new_message(&self) {
        self.approvals_asked.store(0, Ordering::Relaxed);
        lock(&self.network).clear();
    }

    /// Refuses a door with effects (a request, a proposal) once the session's row has ended:
    /// another host may have ended it (its person revoked) while this cell ran a message.
    async fn still_in_force(&self) -> Result<(), String> {
        match self.service.store().keep_session(&self.session_id).await {
            Ok(Some(row)) if row.ended_at_ms.is_none() => Ok(()),
            Ok(_) => Err("the session has ended".to_owned()),
            Err(error) => Err(format!("the session could not be read: {error}")),
        }
    }

    pub(crate) fn tainted_by(&self) -> Option<String> {
        lock(&self.taint).clone()
    }

    /// Marks the session tainted by `source` (once: the first source stays).
    pub(crate) async fn taint(&self, source: &str) -> Result<(), KeepError> {
        if lock(&self.taint).is_some() {
            return Ok(());
        }
        // The store decides which source was first; the session carries that one.
        let (newly, stored) = self
            .service
            .taint(&self.user, &self.session_id, source)
            .await?;
        *lock(&self.taint) = Some(stored.clone());
        if newly {
            self.publish(KeepEvent::SessionTainted {
                session_id: self.session_id.clone(),
                source: stored,
            });
        }
        Ok(())
    }

    /// Journals the refusal of a tool call by `rule` (within the session's bound) and gives
    /// back its reason, for the cell.
    pub(crate) async fn refused_call(&self, rule: &str, reason: String) -> String {
        self.journal_refusal("tool_call", rule, &reason).await;
        reason
    }

    /// Journals a refusal, up to [`REFUSALS_JOURNALED_PER_SESSION_MAX`] per session.
    async fn journal_refusal(&self, action: &str, rule: &str, reason: &str) {
        // The person's sessions together are bounded too: stopping and starting sessions
        // journals no more in a minute than one session would.
        let person = self.service.refusal_bound(&self.user);
        let count = self.refusals_journaled.fetch_add(1, Ordering::Relaxed);
        let bound = |reason: &str| {
            RefusalDetail::Bound(RefusalsBound {
                action: action.to_owned(),
                rule: BoundRule::JournalBound,
                reason: reason.to_owned(),
                session: Some(self.session_id.clone()),
            })
        };
        // Past either bound a refusal is still an event for the person, never silence.
        let events_only = match person {
            Bound::EventsOnly => true,
            Bound::Journal => count > REFUSALS_JOURNALED_PER_SESSION_MAX,
            Bound::LastEntry => false,
        };
        if events_only {
            self.publish(KeepEvent::Refusal {
                session_id: Some(self.session_id.clone()),
                subject: format!("session:{}", self.session_id),
                detail: self.refused(action, rule, reason),
            });
            return;
        }
        let detail = match person {
            Bound::LastEntry => {
                bound("this person's sessions' further refusals this minute are events only")
            }
            Bound::Journal if count < REFUSALS_JOURNALED_PER_SESSION_MAX => {
                // A cell's words may carry its person's (a tool name, a kind, an address she
                // typed): the journal keeps the rule and their hash, her events the words.
                let hashed = format!(
                    "refused by `{}`; the words are in the person's events (SHA-256 {})",
                    cut_chars(rule, 64),
                    crate::keys::sha256_hex(reason.as_bytes())
                );
                self.refused(action, rule, &hashed)
            }
            _ => bound("this session's further refusals are events only"),
        };
        let subject = format!("session:{}", self.session_id);
        if let Err(error) = self
            .service
            .journal_as(
                &format!("agent:{}", self.agent),
                &self.user,
                &subject,
                detail.into(),
            )
            .await
        {
            self.publish(KeepEvent::JournalFailed {
                session_id: self.session_id.clone(),
                reason: error.to_string(),
            });
        }
    }

    /// A refusal of this session's cell by `rule`, as its journal entry holds it.
    fn refused(&self, action: &str, rule: &str, reason: &str) -> RefusalDetail {
        RefusalDetail::Session(SessionRefused {
            action: action.to_owned(),
            rule: rule.to_owned(),
            reason: cut_text(reason),
            session: self.session_id.clone(),
        })
    }

    async fn journal_refused_egress(&self) {
        let refused = std::mem::take(&mut *lock(&self.refused));
        for decision in refused {
            if let Some(refusal) = &decision.refusal {
                let reason = format!(
                    "{} {}: {}",
                    decision.used.method, decision.used.url, refusal.reason
                );
                self.journal_refusal("egress", refusal.rule, &reason).await;
            }
        }
    }

    async fn propose(&self, kind: String, payload_json: String) -> Result<(), String> {
        if self.tool {
            return Err("a tool hands back its result; it proposes nothing".to_owned());
        }
        if kind == "tool.propose" {
            return self.propose_tool(&payload_json).await;
        }
        let grants = EmitGrants {
            memory: self.manifest.memory,
            card: self.manifest.card,
        };
        let refused = match proposals::validate(&kind, &payload_json, grants) {
            Ok(proposal) => {
                let taint = self.tainted_by();
                match self
                    .service
                    .propose(self, &proposal, taint.as_deref())
                    .await
                {
                    Ok(()) => return Ok(()),
                    Err(error) => error,
                }
            }
            Err(error) => KeepError::from(error),
        };
        let reason = refused.to_string();
        self.publish(KeepEvent::ProposalRefused {
            session_id: self.session_id.clone(),
            kind: cut_text(&kind),
            rule: refused.rule().to_owned(),
            reason: proposals::escape(&reason),
        });
        self.journal_refusal("propose", refused.rule(), &reason)
            .await;
        Err(reason)
    }
}

impl SessionHost {
    async fn propose_tool(&self, payload_json: &str) -> Result<(), String> {
        let context = self
            .cells
            .upgrade()
            .map(|cells| IntakeContext {
                loopback_ports: cells.loopback_ports.clone(),
                api_port: cells.api_port,
                host_tools: cells
                    .tools
                    .as_ref()
                    .map(|tools| tools.names())
                    .unwrap_or_default(),
            })
            .unwrap_or_default();
        let taint = self.tainted_by();
        let refused = match self
            .service
            .propose_tool(self, payload_json, taint.as_deref(), &context)
            .await
        {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        let reason = refused.to_string();
        self.publish(KeepEvent::ProposalRefused {
            session_id: self.session_id.clone(),
            kind: "tool.propose".to_owned(),
            rule: refused.rule().to_owned(),
            reason: proposals::escape(&cut_chars(&reason, 500)),
        });
        self.journal_refusal("review", refused.rule(), &reason)
            .await;
        Err(reason)
    }
}

impl CellHost for SessionHost {
    fn generate(&self, messages: Vec<ChatMessage>) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let Some(cells) = self.cells.upgrade() else {
                return Err("the host is stopping".to_owned());
            };
            let Some(model) = (cells.model)() else {
                return Err("the model is not loaded on this host".to_owned());
            };
            let mut converted = Vec::with_capacity(messages.len());
            for message in messages {
                let role = match message.role.as_str() {
                    "system" => Role::System,
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    other => {
                        return Err(format!(
                            "a message's role is system, user or assistant, not {:?}",
                            cut_text(other)
                        ));
                    }
                };
                converted.push(Message::new(role, message.content));
            }
            let mut request = GenerateRequest::new(converted);
            request.max_tokens = Some(GENERATE_TOKENS_MAX);
            let mut ignore = |_: &str| {};
            model
                .generate(&request, &mut ignore)
                .await
                .map_err(|error| format!("the model failed: {error}"))
        })
    }

    fn send<'a>(
        &'a self,
        request: HttpRequest,
        clock: &'a WallClock,
    ) -> BoxFuture<'a, Result<HttpResponse, String>> {
        Box::pin(async move {
            let (Some(grant), Some(cells)) = (&self.grant, self.cells.upgrade()) else {
                return Err("this agent may not send requests".to_owned());
            };
            self.still_in_force().await?;
            let tainted = self.tainted_by().is_some();
            *lock(&self.last_sent) = None;
            let sent = cells
                .broker
                .send(grant, tainted, request, self, clock)
                .await;
            self.journal_refused_egress().await;
            // Whatever came back from upstream — an answer, or a refusal made after a byte was
            // sent (a redirect refused, an answer too big) — taints the session before the
            // cell sees any of it.
            let contacted = lock(&self.last_sent).clone();
            if let Some(from) = contacted {
                let source = format!("an egress answer from {}", cut_text(&from));
                if let Err(error) = self.taint(&source).await {
                    return Err(format!("the session could not be marked tainted: {error}"));
                }
            }
            sent.map_err(|refusal| format!("refused ({}): {}", refusal.rule, refusal.reason))
        })
    }

    fn read_memory(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async move {
            if self.manifest.memory < MemoryAccess::Read {
                return Err("this agent may not read memory".to_owned());
            }
            let (texts, tainted) = self
                .service
                .memory(&self.user, &self.memory_of)
                .await
                .map_err(|error| error.to_string())?;
            // An entry accepted from a tainted session carries what tainted it.
            if tainted {
                self.taint("a memory entry accepted from a tainted session")
                    .await
                    .map_err(|error| format!("the session could not be marked tainted: {error}"))?;
            }
            Ok(texts)
        })
    }

    fn call_tool(&self, name: String, args_json: String) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            if self.tool {
                return Err("a tool calls no other tools".to_owned());
            }
            let offered = self
                .cells
                .upgrade()
                .and_then(|cells| cells.tools.clone())
                .filter(|tools| tools.offers(&self.user, &self.agent));
            // A name the host gives agents is the host's tool; `u/<user>/<name>` and any
            // other name is the person's.
            let answer = match offered {
                Some(tools) if tools.names().contains(&name) => {
                    tools
                        .call(&self.user, &self.agent, &name, &args_json)
                        .await?
                }
                _ => self.service.call_tool(self, &name, &args_json).await?,
            };
            if answer.untrusted {
                let source = format!("an untrusted result from tool {}", cut_text(&name));
                self.taint(&source)
                    .await
                    .map_err(|error| format!("the session could not be marked tainted: {error}"))?;
            }
            Ok(answer.text)
        })
    }

    fn emit(&self, kind: String, payload_json: String) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            self.still_in_force().await?;
            self.propose(kind, payload_json).await
        })
    }
}
