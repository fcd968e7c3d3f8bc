//! Keep sessions: a person starts one of the agents in force, sends it messages and files,
//! answers its egress approvals, and stops it. Each session is one cell (see
//! [`crate::cells`]); sessions are a person's own, and every other token reads one as a session
//! that does not exist.

use std::sync::Arc;

use imurun_cell::World;
use serde::Serialize;
use tokio::sync::watch;

use super::{AgentView, Identity, KeepService, Kept, Sessions, append, append_as};
use crate::KeepError;
use crate::cells::{
    Cells, LiveSession, SESSIONS_PER_USER_MAX, SessionHost, cell_error, cut_chars, cut_text,
    imports_for, limits_for,
};
use crate::events::KeepEvent;
use crate::journal_detail::{ConfigDetail, SessionDetail};
use crate::manifest::{Manifest, code_point, is_hidden_control};

/// The longest message to a session, in bytes.
pub const MESSAGE_BYTES_MAX: usize = 64 << 10;
/// The longest file a person may hand a session, in bytes of text.
pub const FILE_TEXT_BYTES_MAX: usize = 128 << 10;
/// The longest file name, in characters.
pub const FILE_NAME_CHARS_MAX: usize = 200;
/// The most of an agent's replies a `session.reply` event carries, in bytes; a longer answer's
/// event says how long it was instead.
pub const REPLY_EVENT_BYTES_MAX: usize = 64 << 10;
/// The most an agent may answer one message, in bytes of all its replies together; more is
/// refused as the agent's error (the session goes on).
pub const REPLIES_BYTES_MAX: usize = 1 << 20;

/// What a session's agent receives for a file its person hands it: `{"file": {"name", "text"}}`.
#[derive(Serialize)]
struct FileMessage<'a> {
    file: FileBody<'a>,
}

#[derive(Serialize)]
struct FileBody<'a> {
    name: &'a str,
    text: &'a str,
}

/// A Keep session, as its person sees it (`GET /v1/sessions/{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepSessionInfo))]
pub struct SessionView {
    pub id: String,
    /// The agent's name and the first words of the first message (the agent's name until
    /// there is one).
    pub title: String,
    pub agent: String,
    pub agent_version: i64,
    pub created_at_ms: i64,
    /// Whether its cell runs on this host now.
    pub live: bool,
    /// Whether it received untrusted content, and what that was.
    pub tainted: bool,
    pub taint_source: Option<String>,
    pub tainted_at_ms: Option<i64>,
    pub ended_at_ms: Option<i64>,
    /// `stopped`, `host_restarted`, or what ended its cell: `cpu_limit`, `memory_limit`,
    /// `timeout`, `trap`, `host`.
    pub end_reason: Option<String>,
}

impl Sessions<'_> {
    /// Starts a session of `agent` for the calling person: the agent in force, in a cell with
    /// what its manifest grants.
    pub async fn start(self, caller: &Identity, agent: &str) -> Result<SessionView, KeepError> {
        let user = session_user(caller)?;
        let cells = self.keep.running_cells()?;
        // Cells of hers whose sessions another host ended (she was revoked) hold no place.
        for id in cells.sessions_of(user) {
            let ended = self
                .core
                .store()
                .keep_session(&id)
                .await?
                .is_none_or(|row| row.ended_at_ms.is_some());
            if ended && let Some(live) = cells.get(user, &id) {
                halt(cells, &live).await;
            }
        }
        // Counted with the ones being started, before a slot is taken.
        let reservation = cells
            .reserve(user, SESSIONS_PER_USER_MAX)
            .ok_or_else(too_many_sessions)?;
        let (view, manifest, bundle) = self.agent_to_run(agent).await?;
        let id = imurun_keep_rules::random::hex_id(self.core.random(), "ks-")?;
        let host = Arc::new(SessionHost::new(
            Arc::new(self.keep.without_cells()),
            Arc::downgrade(cells),
            id.clone(),
            user.to_owned(),
            manifest,
            cells.egress_ports(),
        ));
        // Every session may call its person's deployed tools, so `tools` is always linked.
        let imports = imports_for(&host.manifest, true);
        let limits = limits_for(&host.manifest);
        let subject = format!("session:{id}");
        let started = cells
            .engine()
            .start(
                &view.bundle_sha256,
                &bundle,
                World::Agent,
                imports,
                limits,
                Arc::clone(&host) as Arc<dyn imurun_cell::CellHost>,
            )
            .await;
        let cell = match started {
            Ok(cell) => cell,
            Err(error) => {
                let refused = cell_error(error);
                return self
                    .core
                    .refuse(caller, Some(user), "start_session", &subject, refused)
                    .await;
            }
        };
        let (stopped, _) = watch::channel(false);
        let live = Arc::new(LiveSession {
            cell: Arc::new(tokio::sync::Mutex::new(Some(cell))),
            stopped,
            host: Arc::clone(&host),
        });
        cells.insert(Arc::clone(&live));
        drop(reservation);
        if let Err(error) = self.record_start(caller, (user, &id), &view).await {
            cells.remove(&id);
            return Err(error);
        }
        host.publish(KeepEvent::SessionStarted {
            session_id: id.clone(),
            agent: view.name.clone(),
            agent_version: view.version,
        });
        self.get(caller, &id).await
    }

    /// The agent `name` in force, its manifest and its bundle.
    async fn agent_to_run(self, name: &str) -> Result<(AgentView, Manifest, Vec<u8>), KeepError> {
        let view = self.keep.agents().checked(name).await?;
        let manifest: Manifest = serde_json::from_value(view.manifest.clone())
            .map_err(|error| KeepError::invalid("manifest", error.to_string()))?;
        let bundle = self
            .core
            .store()
            .keep_agent_bundle(&view.name, view.version)
            .await?
            .ok_or(KeepError::NotFound("agent"))?;
        Ok((view, manifest, bundle))
    }

    /// Stores and journals a session that started.
    async fn record_start(
        self,
        caller: &Identity,
        (user, id): (&str, &str),
        view: &AgentView,
    ) -> Result<(), KeepError> {
        let mut tx = self.core.store().keep_begin().await?;
        tx.insert_session((id, user), (&view.name, view.version), self.keep.host_id())
            .await?;
        let detail = SessionDetail::Start {
            agent: view.name.clone(),
            version: view.version,
            bundle_sha256: view.bundle_sha256.clone(),
        };
        let subject = format!("session:{id}");
        append(&mut tx, caller, Some(user), &subject, detail).await?;
        tx.commit().await?;
        self.trim(user).await
    }

    /// The calling person's sessions, newest first.
    pub async fn list(self, caller: &Identity) -> Result<Vec<SessionView>, KeepError> {
        let user = session_user(caller)?;
        let rows = self.core.store().keep_sessions(user).await?;
        Ok(rows.into_iter().map(|row| self.view(row)).collect())
    }

    /// One of the calling person's sessions, unless she deleted it.
    pub async fn get(self, caller: &Identity, id: &str) -> Result<SessionView, KeepError> {
        let user = session_user(caller)?;
        match self.core.store().keep_session(id).await? {
            Some(row) if row.user_name == user && row.deleted_at_ms.is_none() => Ok(self.view(row)),
            _ => Err(KeepError::NotFound("session")),
        }
    }

    /// Hands `text` to the session's agent and answers its replies. A limit, a trap or a stop
    /// ends the session; the agent's own error answer does not.
    pub async fn send_message(
        self,
        caller: &Identity,
        id: &str,
        text: &str,
    ) -> Result<Vec<String>, KeepError> {
        let user = session_user(caller)?;
        if text.len() > MESSAGE_BYTES_MAX {
            return Err(KeepError::invalid(
                "text",
                format!(
                    "a message is at most {} KiB and this one is {} KiB: hand a longer text to \
                     the session as a file (up to {} KiB), or send it in parts",
                    MESSAGE_BYTES_MAX >> 10,
                    text.len().div_ceil(1 << 10),
                    FILE_TEXT_BYTES_MAX >> 10
                ),
            ));
        }
        let live = self.live_session(user, id).await?;
        let sent = Kept::new("person", text.to_owned());
        self.deliver(live, text.to_owned(), sent).await
    }

    /// Hands a file the person chose to the session: the session is tainted first (its content
    /// comes from outside), then the agent receives `{"file": {"name", "text"}}`.
    pub async fn upload_file(
        self,
        caller: &Identity,
        id: &str,
        name: &str,
        text: &str,
    ) -> Result<Vec<String>, KeepError> {
        let user = session_user(caller)?;
        let name_chars = name.chars().count();
        if name_chars == 0 || name_chars > FILE_NAME_CHARS_MAX {
            return Err(KeepError::invalid(
                "name",
                format!("a file name is 1 to {FILE_NAME_CHARS_MAX} characters"),
            ));
        }
        if let Some(found) = name
            .chars()
            .find(|c| c.is_control() || is_hidden_control(*c))
        {
            return Err(KeepError::invalid(
                "name",
                format!(
                    "{} is a control, bidi or invisible formatting character; a file name is \
                     plain text",
                    code_point(found)
                ),
            ));
        }
        if text.len() > FILE_TEXT_BYTES_MAX {
            return Err(KeepError::invalid(
                "text",
                format!("a file is at most {FILE_TEXT_BYTES_MAX} bytes"),
            ));
        }
        let live = self.live_session(user, id).await?;
        live.host
            .taint(&format!("a file the person uploaded: {}", cut_text(name)))
            .await?;
        let message = serde_json::to_string(&FileMessage {
            file: FileBody { name, text },
        })
        .map_err(|error| KeepError::invalid("text", error.to_string()))?;
        let sent = Kept {
            role: "file",
            text: name.to_owned(),
            bytes: Some(text.len()),
        };
        self.deliver(live, message, sent).await
    }

    /// Stops one of the calling person's sessions: a call in flight is dropped, the cell ends
    /// and its slot is free. Stopping an ended session answers it as it is.
    pub async fn stop(self, caller: &Identity, id: &str) -> Result<SessionView, KeepError> {
        let user = session_user(caller)?;
        let cells = self.keep.running_cells()?;
        if let Some(live) = cells.get(user, id) {
            halt(cells, &live).await;
            self.end_session(&live, "stopped", "the person stopped it")
                .await?;
        }
        self.get(caller, id).await
    }

    /// Stops every session of `user` on this host (her being revoked, or her last device
    /// retired: `message` says which); how many.
    pub(crate) async fn stop_all_of(self, user: &str, message: &str) -> Result<usize, KeepError> {
        let Some(cells) = self.keep.cells() else {
            return Ok(0);
        };
        let ids = cells.sessions_of(user);
        let mut stopped = 0;
        for id in ids {
            if let Some(live) = cells.get(user, &id) {
                halt(cells, &live).await;
                self.end_session(&live, "stopped", message).await?;
                stopped += 1;
            }
        }
        Ok(stopped)
    }

    /// Ends, in the database, every session of `user` that has not ended (on any host: this
    /// host's were stopped first); how many. Each end is journaled.
    pub(crate) async fn end_everywhere(self, user: &str) -> Result<usize, KeepError> {
        let mut tx = self.core.store().keep_begin().await?;
        let ended = end_all_running(&mut tx, user, "the operator revoked the person").await?;
        tx.commit().await?;
        Ok(ended)
    }

    /// Journals the loopback ports the operator opened to cells' egress (at the host's start).
    pub async fn note_loopback_ports(self, ports: &[u16]) -> Result<(), KeepError> {
        let detail = ConfigDetail::EgressLoopbackPorts {
            ports: ports.to_vec(),
        };
        let mut tx = self.core.store().keep_begin().await?;
        append(&mut tx, &Identity::local_operator(), None, "egress", detail).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks session `id` of `user` tainted by `source` unless it is: whether it was not, and
    /// the source the store holds (the first one). The mark is journaled.
    pub(crate) async fn taint(
        self,
        user: &str,
        id: &str,
        source: &str,
    ) -> Result<(bool, String), KeepError> {
        let mut tx = self.core.store().keep_begin().await?;
        let newly = tx.taint_session(id, source).await?;
        if newly {
            // The source names a file or a URL of her conversation: the journal keeps its hash.
            let detail = SessionDetail::Taint {
                source: None,
                source_sha256: Some(crate::keys::sha256_hex(source.as_bytes())),
            };
            append_as(
                &mut tx,
                "host",
                Some(user),
                &format!("session:{id}"),
                detail,
            )
            .await?;
        }
        tx.commit().await?;
        let stored = if newly {
            None
        } else {
            self.core
                .store()
                .keep_session(id)
                .await?
                .and_then(|row| row.taint_source)
        };
        Ok((newly, stored.unwrap_or_else(|| source.to_owned())))
    }
}

impl KeepService {
    pub(super) fn running_cells(&self) -> Result<&Arc<Cells>, KeepError> {
        self.cells().ok_or_else(|| {
            KeepError::Unavailable(
                "this host does not run Keep sessions: they are served by `imurun serve --keep`"
                    .into(),
            )
        })
    }
}

impl Sessions<'_> {
    /// `user`'s live session `id`; an ended one is a conflict, anyone else's is not found.
    async fn live_session(self, user: &str, id: &str) -> Result<Arc<LiveSession>, KeepError> {
        let cells = self.keep.running_cells()?;
        let row = self.core.store().keep_session(id).await?;
        if let Some(live) = cells.get(user, id) {
            // Ended in the database by another host (its person revoked): the cell here ends
            // too, and takes no message.
            if row.as_ref().is_some_and(|row| row.ended_at_ms.is_some()) {
                halt(cells, &live).await;
            } else {
                return Ok(live);
            }
        }
        match row {
            Some(row) if row.user_name == user && row.deleted_at_ms.is_none() => {
                Err(KeepError::Conflict(format!(
                    "the session has ended ({}): start a new one",
                    row.end_reason
                        .as_deref()
                        .unwrap_or("not running on this host")
                )))
            }
            _ => Err(KeepError::NotFound("session")),
        }
    }

    /// Runs one message on a task of its own, so that a caller who stops waiting does not stop
    /// the cell; its replies are also published.
    async fn deliver(
        self,
        live: Arc<LiveSession>,
        message: String,
        sent: Kept,
    ) -> Result<Vec<String>, KeepError> {
        let service = self.keep.clone();
        tokio::spawn(async move { service.sessions().run_message(live, message, sent).await })
            .await
            .map_err(|_| KeepError::Unavailable("the session's task failed".into()))?
    }

    async fn run_message(
        self,
        live: Arc<LiveSession>,
        message: String,
        sent: Kept,
    ) -> Result<Vec<String>, KeepError> {
        let mut stopped = live.stopped.subscribe();
        // One message at a time, and none waits behind it: a client cannot pile work up on a
        // cell.
        let Ok(mut slot) = live.cell.try_lock() else {
            return Err(KeepError::Conflict(
                "a message is running in this session: send the next when it has answered".into(),
            ));
        };
        let Some(cell) = slot.as_mut() else {
            return Err(KeepError::Conflict("the session has ended".into()));
        };
        live.host.new_message();
        let session_id = live.host.session_id.clone();
        if sent.role == "person" {
            self.entitle(&session_id, &live.host.agent, &sent.text)
                .await?;
        }
        self.keep_entries(&session_id, &[sent]).await?;
        let outcome = tokio::select! {
            outcome = cell.handle(&message) => outcome,
            _ = stopped.wait_for(|stopped| *stopped) => {
                return Err(KeepError::Conflict("the session was stopped".into()));
            }
        };
        let outcome = outcome.and_then(|replies| {
            let bytes: usize = replies.iter().map(String::len).sum();
            if bytes > REPLIES_BYTES_MAX {
                return Err(imurun_cell::CellError::Guest {
                    message: format!(
                        "the agent answered {bytes} bytes; a message's replies are at most \
                         {REPLIES_BYTES_MAX}"
                    ),
                });
            }
            Ok(replies)
        });
        let network: Vec<Kept> = std::mem::take(&mut *crate::cells::lock(&live.host.network))
            .into_iter()
            .map(|text| Kept::new("network", text))
            .collect();
        match outcome {
            Ok(replies) => {
                let mut kept = network;
                kept.extend(
                    replies
                        .iter()
                        .map(|reply| Kept::new("agent", reply.clone())),
                );
                self.keep_after_running(&session_id, &kept).await;
                // Events are kept for replay: a long answer is in the response, not the event.
                live.host.publish(KeepEvent::reply(
                    &session_id,
                    &replies,
                    REPLY_EVENT_BYTES_MAX,
                ));
                Ok(replies)
            }
            Err(error) => {
                let ended = error.ends_cell();
                if ended {
                    *slot = None;
                }
                drop(slot);
                let message = error.to_string();
                let mut kept = network;
                kept.push(Kept::new(
                    "error",
                    format!("{}: {}", error.kind(), cut_chars(&message, 2_000)),
                ));
                self.keep_after_running(&session_id, &kept).await;
                live.host.publish(KeepEvent::SessionError {
                    session_id: session_id.clone(),
                    kind: error.kind().to_owned(),
                    message: cut_chars(&message, 2_000),
                    ended,
                });
                if ended {
                    self.end_session(&live, error.kind(), &message).await?;
                }
                Err(cell_error(error))
            }
        }
    }

    /// Keeps what a message's run gave in its conversation. The cell has run by now, so a
    /// store that fails here fails nothing the person asked: the replies are still answered
    /// and published, and the failure is logged.
    async fn keep_after_running(self, session_id: &str, kept: &[Kept]) {
        if let Err(error) = self.keep_entries(session_id, kept).await {
            tracing::warn!(session_id, %error, "a message's replies could not be kept in its conversation");
        }
    }

    /// Records that a live session ended (`reason`), journals it and says so.
    async fn end_session(
        self,
        live: &LiveSession,
        reason: &str,
        message: &str,
    ) -> Result<(), KeepError> {
        let host = &live.host;
        if let Some(cells) = self.keep.cells() {
            cells.remove(&host.session_id);
        }
        let mut tx = self.core.store().keep_begin().await?;
        if tx.end_session(&host.session_id, reason).await? {
            // A cell's own words (a trap's message) may echo the conversation: the journal keeps
            // the host's words alone, and the person's conversation the cell's.
            let message = if reason == "stopped" {
                cut_text(message)
            } else {
                format!("the cell ended: {reason} (its message is in the person's conversation)")
            };
            let detail = SessionDetail::End {
                reason: reason.to_owned(),
                message,
            };
            let subject = format!("session:{}", host.session_id);
            append_as(&mut tx, "host", Some(&host.user), &subject, detail).await?;
        }
        tx.commit().await?;
        host.publish(KeepEvent::SessionEnded {
            session_id: host.session_id.clone(),
            reason: reason.to_owned(),
        });
        Ok(())
    }

    fn view(self, row: imurun_store::SessionRow) -> SessionView {
        let live = row.ended_at_ms.is_none()
            && self
                .keep
                .cells()
                .is_some_and(|cells| cells.get(&row.user_name, &row.id).is_some());
        SessionView {
            live,
            title: row.title.unwrap_or_else(|| row.agent.clone()),
            tainted: row.tainted_at_ms.is_some(),
            id: row.id,
            agent: row.agent,
            agent_version: row.agent_version,
            created_at_ms: row.created_at_ms,
            taint_source: row.taint_source,
            tainted_at_ms: row.tainted_at_ms,
            ended_at_ms: row.ended_at_ms,
            end_reason: row.end_reason,
        }
    }
}

/// Stops `live`'s cell here: a message in flight is dropped, the cell ends and its slot is
/// free. Its row is the caller's to end.
async fn halt(cells: &Cells, live: &LiveSession) {
    live.stopped.send_replace(true);
    let cell = live.cell.lock().await.take();
    // The cell's instance is gone before the stop answers: its slot is free for the next.
    if let Some(cell) = cell
        && !cell.end().await
    {
        tracing::warn!(
            session = %live.host.session_id,
            "a stopped session's cell did not end within {:?}; its slot is let go anyway",
            imurun_cell::END_WAIT
        );
    }
    cells.remove(&live.host.session_id);
}

/// Ends, in `tx`, every session of `user` that has not ended, on any host, `stopped` with the
/// host's `message`, each end journaled; how many. Read a page at a time until none is left:
/// however many rows hosts that died left unended, none of hers is left running.
pub(super) async fn end_all_running(
    tx: &mut imurun_store::KeepTx,
    user: &str,
    message: &str,
) -> Result<usize, KeepError> {
    let mut ended = 0;
    loop {
        let running: Vec<(String, String)> = tx
            .sessions_running_of(user)
            .await?
            .into_iter()
            .map(|id| (id, user.to_owned()))
            .collect();
        if running.is_empty() {
            return Ok(ended);
        }
        let now = end_rows(tx, &running, ("stopped", message)).await?;
        if now == 0 {
            // Nothing of the page ended (it cannot happen: each was read unended in this
            // same transaction); stop rather than loop.
            return Ok(ended);
        }
        ended += now;
    }
}

/// Ends `sessions` (id, person) in `tx` with `reason` and the host's `message`, each end
/// journaled as the host's; how many had not ended.
pub(super) async fn end_rows(
    tx: &mut imurun_store::KeepTx,
    sessions: &[(String, String)],
    (reason, message): (&str, &str),
) -> Result<usize, KeepError> {
    let mut ended = 0;
    for (id, user) in sessions {
        if tx.end_session(id, reason).await? {
            let detail = SessionDetail::End {
                reason: reason.to_owned(),
                message: message.to_owned(),
            };
            append_as(tx, "host", Some(user), &format!("session:{id}"), detail).await?;
            ended += 1;
        }
    }
    Ok(ended)
}

/// The person a session belongs to: sessions, their proposals and approvals are a person's
/// own, so the operator's token has none.
pub(crate) fn session_user(caller: &Identity) -> Result<&str, KeepError> {
    caller.user().ok_or_else(|| {
        KeepError::Forbidden(
            "sessions, proposals and approvals are a person's own: use a user token".into(),
        )
    })
}

fn too_many_sessions() -> KeepError {
    KeepError::Conflict(format!(
        "at most {SESSIONS_PER_USER_MAX} sessions may be live at once: stop one first"
    ))
}

/// Whose use a waiting use's `agent` is, for `user`: an agent's (`None`), or a person's tool:
/// `Some(Some(name))` for `user`'s own, `Some(None)` for another person's, which is never in
/// force for `user` (no host shows one to them; only a database edit could).
pub(super) fn person_tool<'a>(user: &str, agent: &'a str) -> Option<Option<&'a str>> {
    agent
        .starts_with("u/")
        .then(|| super::tool_access::own_tool_name(user, agent))
}

#[cfg(test)]
mod tests {
    use super::person_tool;

    #[test]
    fn a_use_is_an_agents_or_a_persons_own_tool_or_never_in_force() {
        assert_eq!(person_tool("alice", "mail-helper"), None);
        assert_eq!(person_tool("alice", "u/alice/fetch"), Some(Some("fetch")));
        // Another person's tool, or a name with no owner: never this person's use.
        for other in ["u/bob/fetch", "u/alicex/fetch", "u/alice", "u/"] {
            assert_eq!(person_tool("alice", other), Some(None), "{other}");
        }
    }
}
