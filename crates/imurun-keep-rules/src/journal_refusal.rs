//! The journal details of refusals and of egress answers (see [`crate::journal_detail`]).

use serde::{Deserialize, Serialize};

use crate::checks::Attempt;

/// What a refusal's entry holds: the action refused, the rule that fired and the reason,
/// every text from outside escaped and cut by the host before it gets here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RefusalDetail {
    /// A request the server's door refused.
    Door(DoorRefused),
    /// The entry that says the rest of a bound's refusals are events only.
    Bound(RefusalsBound),
    /// A session's cell refused at a door of its own (egress, an emit, a tool call).
    Session(SessionRefused),
    /// A request the service refused, with what it claimed when it named a signed version.
    Refused(Refused),
}

/// `anyOf` the shapes, not `oneOf` as a derive would say: a bound's entry (`journal_bound`)
/// has the fields of a refusal of its kind.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for RefusalDetail {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::ToSchema;
        use utoipa::openapi::schema::{AnyOfBuilder, Ref};
        AnyOfBuilder::new()
            .description(Some(
                "What a refusal's journal entry holds: the action refused, the rule that fired \
                 and the reason, and by where it was refused: at the server's door \
                 (`DoorRefused`), by a session's cell (`SessionRefused`), by the service \
                 (`Refused`), or the entry that says the rest of a bound's refusals are events \
                 only (`RefusalsBound`).",
            ))
            .item(Ref::from_schema_name(DoorRefused::name()))
            .item(Ref::from_schema_name(RefusalsBound::name()))
            .item(Ref::from_schema_name(SessionRefused::name()))
            .item(Ref::from_schema_name(Refused::name()))
            .into()
    }
}

/// The named schemas of an OpenAPI document's components.
#[cfg(feature = "openapi")]
type Schemas = Vec<(
    String,
    utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
)>;

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for RefusalDetail {
    fn schemas(schemas: &mut Schemas) {
        use utoipa::ToSchema;
        fn add<T: ToSchema>(schemas: &mut Schemas) {
            schemas.push((T::name().into_owned(), T::schema()));
            T::schemas(schemas);
        }
        add::<DoorRefused>(schemas);
        add::<RefusalsBound>(schemas);
        add::<SessionRefused>(schemas);
        add::<Refused>(schemas);
    }
}

impl RefusalDetail {
    /// The action refused.
    pub fn action(&self) -> &str {
        match self {
            RefusalDetail::Door(_) => "request",
            RefusalDetail::Bound(bound) => &bound.action,
            RefusalDetail::Session(refused) => &refused.action,
            RefusalDetail::Refused(refused) => &refused.action,
        }
    }
}

/// A request the service refused.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refused {
    /// `deploy`, `ceiling`, `trust_root`, `enrol_device`, `decide_tool`, `clear_taint`,
    /// `approve_egress`, `accept_proposal`, `start_session`, ...
    pub action: String,
    pub rule: String,
    pub reason: String,
    /// For a request carrying a signed document or decision: its version and key id, and
    /// whether its signature held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<Attempt>,
}

/// A request the server's door refused: the answer's error code is the rule.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoorRefused {
    pub action: DoorAction,
    pub rule: String,
    pub reason: String,
    /// The answer's HTTP status.
    pub status: u16,
    /// For a body the strict reader refused: the version and key id it claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<ClaimedDetail>,
}

/// The action of every door refusal: `request`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoorAction {
    Request,
}

/// What a body the strict reader refused claims, never verified.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimedDetail {
    pub version: Option<String>,
    pub key_id: Option<String>,
    /// Always `true`: nothing claimed was checked.
    pub unverified: bool,
}

/// A refusal a session's cell met.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRefused {
    /// `egress`, `propose`, `review` or `tool_call`.
    pub action: String,
    pub rule: String,
    pub reason: String,
    pub session: String,
}

/// The last refusal journaled within a bound: the rest are events only. It names none of the
/// refusals it stands for.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusalsBound {
    /// The action of the refusal that reached the bound.
    pub action: String,
    pub rule: BoundRule,
    pub reason: String,
    /// The session, for a bound of a session's refusals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// The rule of a bound's entry: `journal_bound`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundRule {
    JournalBound,
}

/// A person's answer to an egress use, or one that reached no one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum EgressDetail {
    Approve(EgressAnswer),
    Deny(EgressAnswer),
    /// Answered after the use stopped waiting (its time ran out or its session ended).
    NotDelivered {
        reason: String,
    },
}

impl EgressDetail {
    /// The answer `answer`, approving or denying.
    pub fn answered(approve: bool, answer: EgressAnswer) -> EgressDetail {
        if approve {
            EgressDetail::Approve(answer)
        } else {
            EgressDetail::Deny(answer)
        }
    }
}

/// An answer recorded for a use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressAnswer {
    pub method: String,
    /// Escaped and cut: entries written before `url_sha256` held the URL itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The SHA-256 of the URL: a person's conversation stays out of the operator's journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_sha256: Option<String>,
    pub session: String,
    pub body_sha256: String,
    pub by: EgressBy,
    /// The host whose cell waits, when it is not the host that recorded the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waits_on: Option<String>,
}

/// Who answered a use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EgressBy {
    /// `person` (their word) or `revoked` (the use's tool was revoked).
    Named(Answerer),
    /// A decision signed on one of the person's devices.
    Device(DeviceAnswer),
}

/// Who answered without a device: the person, or a revoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answerer {
    Person,
    Revoked,
}

/// The device that signed an answer, and the decision's nonce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceAnswer {
    pub device: String,
    pub nonce: String,
}

impl EgressBy {
    /// The person's word.
    pub const PERSON: EgressBy = EgressBy::Named(Answerer::Person);
    /// A revoke of the use's tool.
    pub const REVOKED: EgressBy = EgressBy::Named(Answerer::Revoked);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::journal_detail::JournalDetail;
    use crate::journal_detail::tests::check;

    #[test]
    fn egress_answers_are_the_json_written_before() {
        let answer = |by: EgressBy, waits_on: Option<&str>| EgressAnswer {
            method: "GET".into(),
            url: Some("https://example.com/".into()),
            url_sha256: None,
            session: "ks-1".into(),
            body_sha256: "00".into(),
            by,
            waits_on: waits_on.map(str::to_owned),
        };
        check(
            JournalDetail::Egress(EgressDetail::answered(
                true,
                answer(
                    EgressBy::Device(DeviceAnswer {
                        device: "d".into(),
                        nonce: "n".into(),
                    }),
                    Some("host-b"),
                ),
            )),
            json!({"action": "approve", "method": "GET", "url": "https://example.com/",
                   "session": "ks-1", "body_sha256": "00", "by": {"device": "d", "nonce": "n"},
                   "waits_on": "host-b"}),
        );
        check(
            JournalDetail::Egress(EgressDetail::answered(
                false,
                answer(EgressBy::REVOKED, None),
            )),
            json!({"action": "deny", "method": "GET", "url": "https://example.com/",
                   "session": "ks-1", "body_sha256": "00", "by": "revoked"}),
        );
        check(
            JournalDetail::Egress(EgressDetail::NotDelivered {
                reason: "the request stopped waiting".into(),
            }),
            json!({"action": "not_delivered", "reason": "the request stopped waiting"}),
        );
    }

    #[test]
    fn refusals_are_the_json_written_before() {
        check(
            JournalDetail::Refusal(RefusalDetail::Door(DoorRefused {
                action: DoorAction::Request,
                rule: "not_canonical".into(),
                reason: "r".into(),
                status: 400,
                claimed: Some(ClaimedDetail {
                    version: None,
                    key_id: Some("k".into()),
                    unverified: true,
                }),
            })),
            json!({"action": "request", "rule": "not_canonical", "reason": "r", "status": 400,
                   "claimed": {"version": null, "key_id": "k", "unverified": true}}),
        );
        check(
            JournalDetail::Refusal(RefusalDetail::Refused(Refused {
                action: "deploy".into(),
                rule: "bad_signature".into(),
                reason: "r".into(),
                attempt: Some(Attempt {
                    version: None,
                    key_id: "k".into(),
                    verified: false,
                }),
            })),
            json!({"action": "deploy", "rule": "bad_signature", "reason": "r",
                   "attempt": {"version": null, "key_id": "k", "verified": false}}),
        );
        check(
            JournalDetail::Refusal(RefusalDetail::Bound(RefusalsBound {
                action: "egress".into(),
                rule: BoundRule::JournalBound,
                reason: "r".into(),
                session: Some("ks-1".into()),
            })),
            json!({"action": "egress", "rule": "journal_bound", "reason": "r", "session": "ks-1"}),
        );
    }
}
