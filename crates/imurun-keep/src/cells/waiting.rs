//! Egress uses waiting for their person: what the person is shown, the hash a device decision
//! names, and how a session's requests reach the broker and its approvals.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use imurun_cell::broker::{EgressDecision, EgressHost, EgressUse};
use imurun_cell::egress::Approval;
use imurun_core::BoxFuture;
use serde::Serialize;
use tokio::sync::oneshot;

use super::{
    APPROVALS_PER_MESSAGE_MAX, Cells, HEADER_VALUE_CHARS_SHOWN, REFUSED_BEFORE_SENDING,
    SessionHost, URL_CHARS_SHOWN, Waiting, cut_chars, cut_text, lock,
};
use crate::events::{EgressApproval, EgressVerdict, KeepEvent};
use crate::service::{ApprovalView, NETWORK_ENTRIES_PER_MESSAGE_MAX};

/// What a person is shown about a waiting use, and what a device decision must name. Its JSON
/// is recorded with the use (and an answer's seal covers it): its fields and their order are
/// part of what other hosts read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WaitingView {
    pub session_id: String,
    pub agent: String,
    pub agent_version: i64,
    pub method: String,
    pub url: String,
    /// The headers the cell set, as `[name, value]` (values cut at 1 000 characters and
    /// escaped for showing; the `request` hash covers them whole).
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Vec<String>>))]
    pub headers: Vec<[String; 2]>,
    /// Whether the session is tainted: what it read may be steering this request.
    pub tainted: bool,
    pub body_bytes: usize,
    pub body_sha256: String,
    /// The credentials the host would add, by name.
    pub credentials: Vec<String>,
    /// Only an `approve_egress` decision signed on one of the person's devices approves it.
    pub device_signature: bool,
    /// The hashes a device decision names: `request` (the method, URL, headers, body's hash and
    /// the credentials the host would add) and `body`.
    pub hashes: BTreeMap<String, String>,
    pub asked_at_ms: i64,
}

/// The hash a device decision about an egress use names as `request`: the SHA-256 of the
/// canonical JSON `{"body_sha256", "credentials": [name, ...], "headers": [[name, value],
/// ...], "method", "url"}`, with the credentials the host would add and the headers the cell
/// set, whole and in the order it set them.
pub fn egress_request_hash(
    method: &str,
    url: &str,
    headers: &[[String; 2]],
    body_sha256: &str,
    credentials: &[String],
) -> String {
    let request = HashedRequest {
        body_sha256,
        credentials,
        headers,
        method,
        url,
    };
    let text = serde_json::to_value(&request)
        .map(|value| crate::canonical::canonicalize(&value))
        .unwrap_or_default();
    imurun_cell::sha256_hex(&text)
}

/// What a use's `request` hash covers.
#[derive(Serialize)]
struct HashedRequest<'a> {
    body_sha256: &'a str,
    credentials: &'a [String],
    headers: &'a [[String; 2]],
    method: &'a str,
    url: &'a str,
}

impl EgressHost for SessionHost {
    fn approve<'a>(&'a self, used: &'a EgressUse, approval: Approval) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(cells) = self.cells.upgrade() else {
                return false;
            };
            if !self.may_ask(used) {
                return false;
            }
            let Ok(id) = imurun_keep_rules::random::hex_id(self.service.random(), "ea-") else {
                return false;
            };
            let view = self.waiting_view(used, approval);
            // Whatever ends the wait (an answer, the timeout, a stop), the entry goes, here and
            // in the database. Made before the channel so that it is dropped after the
            // receiver: once it removes the entry, an answer being put back sees the wait
            // closed.
            let _forget = Forget {
                cells: &cells,
                id: &id,
                store: Some(self.service.store().clone()),
            };
            let (answer, answered) = oneshot::channel();
            lock(&cells.waiting).insert(
                id.clone(),
                Waiting {
                    user: self.user.clone(),
                    view: view.clone(),
                    answer,
                },
            );
            if !self.record_waiting(&id, &view).await {
                return false;
            }
            self.publish(KeepEvent::EgressApprovalNeeded {
                session_id: self.session_id.clone(),
                approval: ApprovalView {
                    id: id.clone(),
                    waiting: view,
                },
            });
            answered.await.unwrap_or(false)
        })
    }

    fn credential<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            // An agent's credentials are the operator's, checked at deploy; a tool's are its
            // person's own connections.
            let secret = self
                .service
                .credential(&self.credential_owner, name)
                .await
                .ok()?;
            String::from_utf8(secret.expose().to_vec()).ok()
        })
    }

    fn decided(&self, decision: &EgressDecision) {
        let used = &decision.used;
        let approval = match decision.approval {
            Approval::None => EgressApproval::None,
            Approval::Person => EgressApproval::Person,
            Approval::Device => EgressApproval::Device,
        };
        let reached_upstream = decision
            .refusal
            .as_ref()
            .is_none_or(|refusal| !REFUSED_BEFORE_SENDING.contains(&refusal.rule));
        if reached_upstream {
            *lock(&self.last_sent) = Some(used.url.clone());
        }
        if decision.refusal.is_some() {
            lock(&self.refused).push(decision.clone());
        }
        self.note_network_use(decision);
        self.publish(KeepEvent::EgressDecided {
            session_id: self.session_id.clone(),
            decision: match decision.refusal {
                None => EgressVerdict::Allow,
                Some(_) => EgressVerdict::Deny,
            },
            method: cut_chars(&used.method, 16),
            url: cut_chars(&used.url, URL_CHARS_SHOWN),
            rule: used.rule,
            credentials: used.credentials.clone(),
            approval,
            refused_by: decision
                .refusal
                .as_ref()
                .map(|refusal| refusal.rule.to_owned()),
            reason: decision
                .refusal
                .as_ref()
                .map(|refusal| cut_text(&refusal.reason)),
        });
    }
}

impl SessionHost {
    /// Notes a decided use in words for the message's conversation: who used the network,
    /// where, and what was decided (at most [`NETWORK_ENTRIES_PER_MESSAGE_MAX`] per message,
    /// then one line says how many more).
    fn note_network_use(&self, decision: &EgressDecision) {
        let used = &decision.used;
        let who = if self.tool {
            format!("The tool {}", self.agent)
        } else {
            format!("The agent {}", self.agent)
        };
        let what = format!(
            "{} {}",
            cut_chars(&used.method, 16),
            cut_chars(&used.url, URL_CHARS_SHOWN)
        );
        let text = match (&decision.refusal, decision.approval) {
            (Some(refusal), _) => {
                format!("{who} was refused {what}: {}", cut_text(&refusal.reason))
            }
            (None, Approval::Device) => {
                format!("{who} used {what}: you approved it on your device.")
            }
            (None, Approval::Person) => format!("{who} used {what}: you approved it."),
            (None, Approval::None) => format!("{who} used {what}: its rule allows it."),
        };
        let mut network = lock(&self.network);
        match network.len().cmp(&NETWORK_ENTRIES_PER_MESSAGE_MAX) {
            std::cmp::Ordering::Less => network.push(text),
            std::cmp::Ordering::Equal => network.push("More uses of the network followed.".into()),
            std::cmp::Ordering::Greater => {}
        }
    }
}

/// Removes a waiting approval when its wait ends, here and (in the background) from the
/// database.
struct Forget<'a> {
    cells: &'a Cells,
    id: &'a str,
    store: Option<imurun_store::Store>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.cells.waiting).remove(self.id);
        if let (Some(store), Ok(runtime)) =
            (self.store.take(), tokio::runtime::Handle::try_current())
        {
            let id = self.id.to_owned();
            runtime.spawn(async move {
                if let Err(error) = store.keep_egress_wait_delete(&id).await {
                    tracing::warn!("an ended egress wait stays listed until restart: {error}");
                }
            });
        }
    }
}

impl SessionHost {
    /// Whether this message may ask its person about one more use; past the bound, the use is
    /// refused without asking and the person is told.
    fn may_ask(&self, used: &EgressUse) -> bool {
        if self.approvals_asked.fetch_add(1, Ordering::Relaxed) < APPROVALS_PER_MESSAGE_MAX {
            return true;
        }
        self.publish(KeepEvent::EgressNotAsked {
            session_id: self.session_id.clone(),
            method: cut_chars(&used.method, 16),
            url: cut_chars(&used.url, URL_CHARS_SHOWN),
            reason: format!(
                "this message asked about {APPROVALS_PER_MESSAGE_MAX} uses already; the rest are \
                 refused without asking"
            ),
        });
        false
    }

    /// What the person is shown about `used`, and the hashes a device decision names: the
    /// whole request's and the body's (header values are cut for showing only).
    fn waiting_view(&self, used: &EgressUse, approval: Approval) -> WaitingView {
        let whole: Vec<[String; 2]> = used
            .headers
            .iter()
            .map(|header| [header.name.clone(), header.value.clone()])
            .collect();
        let request = egress_request_hash(
            &used.method,
            &used.url,
            &whole,
            &used.body_sha256,
            &used.credentials,
        );
        let hashes = BTreeMap::from([
            ("body".to_owned(), used.body_sha256.clone()),
            ("request".to_owned(), request),
        ]);
        let shown = whole
            .iter()
            .map(|[name, value]| {
                let count = value.chars().count();
                let mut shown = cut_chars(value, HEADER_VALUE_CHARS_SHOWN);
                if count > HEADER_VALUE_CHARS_SHOWN {
                    shown.push_str(&format!("… ({count} characters)"));
                }
                [name.clone(), shown]
            })
            .collect();
        WaitingView {
            session_id: self.session_id.clone(),
            agent: self.agent.clone(),
            agent_version: self.agent_version,
            method: used.method.clone(),
            url: used.url.clone(),
            headers: shown,
            tainted: self.tainted_by().is_some(),
            body_bytes: used.body_bytes,
            body_sha256: used.body_sha256.clone(),
            credentials: used.credentials.clone(),
            device_signature: approval == Approval::Device,
            hashes,
            asked_at_ms: imurun_core::now_unix_ms(),
        }
    }

    /// Records the use as waiting in the database, so every host lists it and may take its
    /// person's answer (docs/keep/scaling.md). Without the row only this host could: the use is
    /// refused (`false`) rather than waiting where an answer may never reach it.
    async fn record_waiting(&self, id: &str, view: &WaitingView) -> bool {
        let timeout_ms = self.grant.as_ref().map_or(0, |grant| {
            i64::try_from(grant.approval_timeout.as_millis()).unwrap_or(i64::MAX)
        });
        let row = imurun_store::EgressWaitRow {
            id: id.to_owned(),
            user_name: self.user.clone(),
            host: self.service.host_id().to_owned(),
            view: serde_json::to_string(view).unwrap_or_default(),
            asked_at_ms: view.asked_at_ms,
            expires_at_ms: view.asked_at_ms.saturating_add(timeout_ms),
            state: "waiting".into(),
            answered_at_ms: None,
            decision: None,
            seal: None,
        };
        match self.service.store().keep_egress_wait_insert(&row).await {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!("an egress use could not be recorded as waiting: {error}");
                false
            }
        }
    }
}
