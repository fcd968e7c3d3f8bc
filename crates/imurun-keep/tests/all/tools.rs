//! Agent-proposed tools on real cells: a session's cell proposes a tool, its person reviews
//! the authority diff and the clamped manifest, decides on a device, and calls the deployed
//! tool from a session; taint, revocation and every refusal the seed asks for.

use imurun_keep::random::OsRandom;
use std::collections::BTreeMap;

use base64::Engine;
use imurun_cell::CellConfig;
use imurun_keep::cells::CellsConfig;
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::{CEILING_TYPE, Signed};
use imurun_keep::keys::KeyPair;
use imurun_keep::service::{EnrolProof, Identity, ToolReview};
use imurun_keep::tool_intake::{PENDING_TOOL_PROPOSALS_MAX, TOOL_BUNDLE_BYTES_MAX};
use imurun_testkit::{Guest, Upstream};
use serde_json::{Value, json};

use super::attacks_tools::deploy_tool;
use super::sessions::{Sessions, answer, manifest};
use super::support::{START, pool};

/// The most of a bundle's base64 one message carries.
pub(crate) const CHUNK: usize = 40_000;

pub(crate) struct Bench {
    pub(crate) s: Sessions,
    pub(crate) upstream: Upstream,
    pub(crate) alice_device: KeyPair,
    pub(crate) bob_device: KeyPair,
    pub(crate) session: String,
}

impl Bench {
    /// A host with an agent `maker` (the scripted agent with every import), alice's ceiling
    /// allowing GET and POST to the local upstream, a device each for alice and bob, and a
    /// session of alice's.
    pub(crate) async fn start() -> Bench {
        Self::with_model(&["the model's reply"]).await
    }

    pub(crate) async fn with_model(replies: &[&str]) -> Bench {
        Self::with_api(replies, None).await
    }

    /// A bench whose host's own API is `api` (its port opened to cells too, as an operator
    /// might by mistake).
    pub(crate) async fn with_api(replies: &[&str], api: Option<u16>) -> Bench {
        let upstream = Upstream::start(answer).await;
        let config = CellsConfig {
            loopback_ports: [Some(upstream.port), api].into_iter().flatten().collect(),
            cell: CellConfig::default(),
            api_port: api,
        };
        let s = Sessions::build(config, replies).await;
        s.deploy(
            Guest::ScriptedFull,
            manifest(
                "maker",
                json!({
                    "egress": {"mode": "allow", "rules": [local(upstream.port, &["GET"], "/api")]},
                    "memory": "read", "model_socket": true,
                    "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
                }),
            ),
        )
        .await;
        let bench = Bench {
            alice_device: enrol(&s, &s.alice.clone(), "alice").await,
            bob_device: enrol(&s, &s.bob.clone(), "bob").await,
            session: String::new(),
            upstream,
            s,
        };
        bench.ceiling(1, &["GET", "POST"], &[]).await;
        let session = bench
            .s
            .keep
            .sessions()
            .start(&bench.s.alice, "maker")
            .await
            .unwrap();
        Bench {
            session: session.id,
            ..bench
        }
    }

    /// Puts alice's ceiling at `version`: the local upstream with `methods` under `/api`,
    /// `credentials`, memory read, no model socket, small resources.
    pub(crate) async fn ceiling(&self, version: i64, methods: &[&str], credentials: &[&str]) {
        let document = json!({
            "type": CEILING_TYPE, "user": "alice", "version": version,
            "expires_at": START + 86_400,
            "egress": [local(self.upstream.port, methods, "/api")],
            "credentials": credentials, "memory": "read", "model_socket": false,
            "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}
        });
        let envelope = Signed::sign(&document, &self.s.host.policy).unwrap();
        self.s
            .keep
            .ceilings()
            .put(&self.s.host.operator, "alice", &envelope)
            .await
            .unwrap();
    }

    /// Has alice's session's cell propose `payload` (its `bundle` is `guest`'s, in base64),
    /// sending the bundle over several messages. The cell's last answer: `emitted` or the
    /// refusal.
    pub(crate) async fn propose_in(&self, session: &str, guest: Guest, payload: Value) -> String {
        let bundle = base64::engine::general_purpose::STANDARD.encode(guest.bytes());
        self.propose_raw(session, &bundle, payload).await
    }

    pub(crate) async fn propose_raw(&self, session: &str, bundle: &str, payload: Value) -> String {
        let mut rest = bundle;
        while !rest.is_empty() {
            let (head, tail) = rest.split_at(rest.len().min(CHUNK));
            self.s
                .say(&self.s.alice, session, json!({"buffer": head}))
                .await;
            rest = tail;
        }
        let mut event = payload;
        event["type"] = json!("tool.propose");
        event["bundle"] = json!("$buffer");
        let said = self
            .s
            .say(&self.s.alice, session, json!({"emit": event}))
            .await;
        said[0].clone()
    }

    pub(crate) async fn propose(&self, guest: Guest, payload: Value) -> String {
        self.propose_in(&self.session, guest, payload).await
    }

    pub(crate) async fn only_review(&self) -> ToolReview {
        let reviews = self
            .s
            .keep
            .tool_proposals()
            .list(&self.s.alice)
            .await
            .unwrap();
        assert_eq!(reviews.len(), 1, "{reviews:?}");
        reviews.into_iter().next().unwrap()
    }

    /// Approves (or denies) `review` with `device`.
    pub(crate) async fn decide(
        &self,
        review: &ToolReview,
        kind: DecisionKind,
        confirm_tainted: bool,
    ) -> Result<ToolReview, imurun_keep::KeepError> {
        let envelope = decision(&self.alice_device, "alice", review, kind, confirm_tainted);
        self.s
            .keep
            .tool_proposals()
            .decide(&self.s.alice, &review.id, &envelope)
            .await
    }

    pub(crate) async fn call(&self, session: &str, name: &str, args: Value) -> String {
        self.s
            .say(
                &self.s.alice,
                session,
                json!({"tool": {"name": name, "args": args}}),
            )
            .await[0]
            .clone()
    }
}

pub(crate) fn local(port: u16, methods: &[&str], path: &str) -> Value {
    json!({"scheme": "http", "host": "127.0.0.1", "port": port, "methods": methods, "path_prefix": path})
}

/// A tool's payload: `name`, a description and a manifest with `extra`.
pub(crate) fn tool(name: &str, version: i64, extra: Value) -> Value {
    let mut manifest = json!({
        "name": name, "version": version,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000},
        "approval_timeout_s": 30
    });
    if let (Some(target), Some(source)) = (manifest.as_object_mut(), extra.as_object()) {
        target.extend(source.clone());
    }
    json!({"name": name, "description": format!("The {name} tool."), "manifest": manifest})
}

pub(crate) async fn enrol(s: &Sessions, who: &Identity, user: &str) -> KeyPair {
    let device = KeyPair::generate(&OsRandom).unwrap();
    let code = s
        .keep
        .devices()
        .enrol_code(&s.host.operator, user, 600)
        .await
        .unwrap();
    s.host
        .enrol(who, &device, user, EnrolProof::Code(code))
        .await
        .unwrap();
    device
}

/// `user`'s decision of `kind` on `review`, signed by `device`, naming what the review says.
pub(crate) fn decision(
    device: &KeyPair,
    user: &str,
    review: &ToolReview,
    kind: DecisionKind,
    confirm_tainted: bool,
) -> Signed {
    let expected = Expected {
        kind,
        subject: &review.id,
        hashes: &review.hashes,
        ceiling_version: review.ceiling_version,
        policy_version: review.policy_version,
        user,
    };
    let made = Decision::new(&OsRandom, &expected, device, START, 600, confirm_tainted).unwrap();
    Signed::sign(&serde_json::to_value(&made).unwrap(), device).unwrap()
}

pub(crate) fn events_of(s: &Sessions, user: &str, kind: &str) -> Vec<Value> {
    s.events
        .of(user)
        .into_iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

#[tokio::test]
async fn a_proposal_is_reviewed_approved_on_a_device_called_and_revoked() {
    let b = Bench::start().await;
    let s = &b.s;
    // Proposing does nothing but store it.
    let said = b.propose(Guest::PureTool, tool("echo", 1, json!({}))).await;
    assert_eq!(said, "emitted");
    assert!(s.keep.tools().list(&s.alice).await.unwrap().is_empty());
    let review = b.only_review().await;
    assert_eq!(review.qualified_name, "u/alice/echo");
    assert_eq!(review.state, "pending");
    assert_eq!(review.origin.agent, "maker");
    assert_eq!(review.origin.agent_version, 1);
    assert_eq!(review.origin.signer_key_id, s.host.signer.key_id());
    assert_eq!(review.origin.session_id, b.session);
    assert_eq!(review.bundle_size as usize, Guest::PureTool.bytes().len());
    assert_eq!(
        review.bundle_sha256,
        imurun_keep::keys::sha256_hex(&Guest::PureTool.bytes())
    );
    // Pure computation with smaller limits than the agent's: no new authority.
    assert!(
        review.authority_diff.is_empty(),
        "{:?}",
        review.authority_diff
    );
    assert!(review.no_new_authority);
    assert!(!review.tainted);
    assert_eq!(events_of(s, "alice", "proposal.created").len(), 1);
    // Bob sees nothing, and his answer is a random id's, word for word.
    assert!(
        s.keep
            .tool_proposals()
            .list(&s.bob)
            .await
            .unwrap()
            .is_empty()
    );
    let theirs = s
        .keep
        .tool_proposals()
        .get(&s.bob, &review.id)
        .await
        .unwrap_err();
    let random = s
        .keep
        .tool_proposals()
        .get(&s.bob, "kt-0000")
        .await
        .unwrap_err();
    assert_eq!(theirs.to_string(), random.to_string());
    assert_eq!(theirs.rule(), "not_found");
    // Bob cannot decide it, with his own device or with alice's decision.
    let bobs = decision(
        &b.bob_device,
        "bob",
        &review,
        DecisionKind::ApproveProposal,
        false,
    );
    let error = s
        .keep
        .tool_proposals()
        .decide(&s.bob, &review.id, &bobs)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), random.to_string());
    let alices = decision(
        &b.alice_device,
        "alice",
        &review,
        DecisionKind::ApproveProposal,
        false,
    );
    let error = s
        .keep
        .tool_proposals()
        .decide(&s.bob, &review.id, &alices)
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "not_found");

    // Alice approves on her device: deployed as u/alice/echo@1 with the clamped manifest.
    let decided = b
        .decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    assert_eq!(decided.state, "approved");
    let tools = s.keep.tools().list(&s.alice).await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].qualified_name, "u/alice/echo");
    assert_eq!(tools[0].manifest, review.clamped_manifest);
    assert_eq!(tools[0].approved_by, b.alice_device.key_id());
    assert!(s.keep.tools().list(&s.bob).await.unwrap().is_empty());
    for kind in ["proposal.decided", "tool.deployed"] {
        assert_eq!(events_of(s, "alice", kind).len(), 1, "{kind}");
        assert!(events_of(s, "bob", kind).is_empty(), "{kind}");
    }
    // The decision counts once.
    let again = b
        .decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap_err();
    assert_eq!(again.rule(), "conflict", "{again}");

    // Callable from a new session, by its name or its full name; bob cannot call it.
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    for name in ["echo", "u/alice/echo"] {
        let said = b.call(&session.id, name, json!({"n": 7})).await;
        assert_eq!(said, r#"{"echo":{"n":7}}"#, "{name}");
    }
    let bob_session = s.keep.sessions().start(&s.bob, "maker").await.unwrap();
    let mut refusals = Vec::new();
    for name in ["u/alice/echo", "echo", "u/alice/nothing"] {
        let said = s
            .say(
                &s.bob,
                &bob_session.id,
                json!({"tool": {"name": name, "args": {}}}),
            )
            .await;
        assert!(said[0].starts_with("refused: no tool named"), "{said:?}");
        refusals.push(said[0].replace(name, "NAME"));
    }
    assert!(
        refusals.windows(2).all(|pair| pair[0] == pair[1]),
        "{refusals:?}"
    );

    // Revoked: at once, no call starts it, in this session or a new one.
    let revoked = s.keep.tools().revoke(&s.alice, "echo").await.unwrap();
    assert!(revoked.revoked_at_ms.is_some());
    let said = b.call(&session.id, "echo", json!({})).await;
    assert!(said.starts_with("refused: no tool named"), "{said}");
    let fresh = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let said = b.call(&fresh.id, "echo", json!({})).await;
    assert!(said.starts_with("refused: no tool named"), "{said}");
    assert_eq!(events_of(s, "alice", "tool.revoked").len(), 1);
    let again = s.keep.tools().revoke(&s.alice, "echo").await.unwrap_err();
    assert_eq!(again.rule(), "conflict");
    let bobs = s.keep.tools().revoke(&s.bob, "echo").await.unwrap_err();
    assert_eq!(bobs.rule(), "not_found");

    // The journal holds proposal, approval, deploy and revoke: names, hashes, diffs; no code.
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    let actions: Vec<(String, String)> = journal
        .iter()
        .filter(|entry| matches!(entry.kind.as_str(), "proposal" | "tool"))
        .map(|entry| {
            (
                entry.kind.clone(),
                entry.detail["action"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    for wanted in [
        ("proposal", "propose"),
        ("proposal", "approve"),
        ("tool", "deploy"),
        ("tool", "revoke"),
    ] {
        let wanted = (wanted.0.to_owned(), wanted.1.to_owned());
        assert!(actions.contains(&wanted), "{wanted:?} in {actions:?}");
    }
    let bundle = base64::engine::general_purpose::STANDARD.encode(Guest::PureTool.bytes());
    for entry in &journal {
        let text = entry.detail.to_string();
        assert!(
            !text.contains(&bundle[..64]),
            "code in the journal: {}",
            entry.kind
        );
    }
    let proposed = journal
        .iter()
        .find(|entry| entry.detail["action"] == "propose" && entry.detail["kind"] == "tool")
        .unwrap();
    assert_eq!(proposed.detail["bundle_sha256"], review.bundle_sha256);
    assert!(proposed.detail["authority_diff"].is_array());
    assert!(
        s.keep
            .journal()
            .verify(&s.host.operator)
            .await
            .unwrap()
            .first_bad
            .is_none()
    );
}

#[tokio::test]
async fn decisions_are_refused_unsigned_flipped_replayed_foreign_expired_and_stale() {
    let b = Bench::start().await;
    let s = &b.s;
    assert_eq!(
        b.propose(Guest::PureTool, tool("one", 1, json!({}))).await,
        "emitted"
    );
    assert_eq!(
        b.propose(Guest::PureTool, tool("two", 1, json!({}))).await,
        "emitted"
    );
    let reviews = s.keep.tool_proposals().list(&s.alice).await.unwrap();
    let (two, one) = (&reviews[0], &reviews[1]);
    assert_eq!(one.name, "one");
    let refused = |envelope: Signed, id: String| {
        let keep = s.keep.clone();
        let alice = s.alice.clone();
        async move {
            keep.tool_proposals()
                .decide(&alice, &id, &envelope)
                .await
                .unwrap_err()
                .rule()
        }
    };
    let good = decision(
        &b.alice_device,
        "alice",
        one,
        DecisionKind::ApproveProposal,
        false,
    );
    // Unsigned: a signature that is not one.
    let mut unsigned = good.clone();
    unsigned.signature.sig = "00".repeat(64);
    assert_eq!(refused(unsigned, one.id.clone()).await, "bad_signature");
    // Flipped: approve turned to deny after signing (and the other way).
    let mut flipped = good.clone();
    flipped.signed["kind"] = json!("deny_proposal");
    assert_eq!(refused(flipped, one.id.clone()).await, "bad_signature");
    // Another user's key, or a key that is nobody's.
    let bobs = decision(
        &b.bob_device,
        "alice",
        one,
        DecisionKind::ApproveProposal,
        false,
    );
    assert_eq!(refused(bobs, one.id.clone()).await, "untrusted_key");
    let stranger = KeyPair::generate(&OsRandom).unwrap();
    let strangers = decision(
        &stranger,
        "alice",
        one,
        DecisionKind::ApproveProposal,
        false,
    );
    assert_eq!(refused(strangers, one.id.clone()).await, "untrusted_key");
    // A decision for another proposal.
    assert_eq!(
        refused(good.clone(), two.id.clone()).await,
        "decision_refused"
    );
    // Any hash changed: the bundle, the clamped manifest, the description, the authority shown.
    for name in ["bundle", "manifest", "description", "authority"] {
        let mut changed = one.clone();
        changed.hashes.insert(name.into(), "ab".repeat(32));
        let envelope = decision(
            &b.alice_device,
            "alice",
            &changed,
            DecisionKind::ApproveProposal,
            false,
        );
        assert_eq!(
            refused(envelope, one.id.clone()).await,
            "decision_refused",
            "{name}"
        );
    }
    // Another version of the proposing agent, or of the ceiling.
    for field in ["policy", "ceiling"] {
        let mut changed = one.clone();
        if field == "policy" {
            changed.policy_version += 1;
        } else {
            changed.ceiling_version += 1;
        }
        let envelope = decision(
            &b.alice_device,
            "alice",
            &changed,
            DecisionKind::ApproveProposal,
            false,
        );
        assert_eq!(
            refused(envelope, one.id.clone()).await,
            "decision_refused",
            "{field}"
        );
    }
    // Expired.
    s.host.advance(601);
    assert_eq!(refused(good.clone(), one.id.clone()).await, "expired");
    s.host.advance(-601);
    // Made before the ceiling changed: refused when it arrives after.
    b.ceiling(2, &["GET", "POST"], &[]).await;
    assert_eq!(
        refused(good.clone(), one.id.clone()).await,
        "decision_refused"
    );
    let fresh = s
        .keep
        .tool_proposals()
        .get(&s.alice, &one.id)
        .await
        .unwrap();
    assert_eq!(fresh.ceiling_version, 2);
    // A deny counts once; its nonce cannot be used again, even for the other proposal.
    let deny = decision(
        &b.alice_device,
        "alice",
        &fresh,
        DecisionKind::DenyProposal,
        false,
    );
    let denied = s
        .keep
        .tool_proposals()
        .decide(&s.alice, &one.id, &deny)
        .await
        .unwrap();
    assert_eq!(denied.state, "denied");
    assert!(s.keep.tools().list(&s.alice).await.unwrap().is_empty());
    assert_eq!(refused(deny, one.id.clone()).await, "conflict");
    // Replayed nonce on another proposal: a decision naming `two` with the same nonce.
    let two_now = s
        .keep
        .tool_proposals()
        .get(&s.alice, &two.id)
        .await
        .unwrap();
    let mut replay: Decision = serde_json::from_value(
        decision(
            &b.alice_device,
            "alice",
            &two_now,
            DecisionKind::ApproveProposal,
            false,
        )
        .signed,
    )
    .unwrap();
    replay.nonce = serde_json::from_value::<Decision>(denied_nonce(s).await)
        .unwrap()
        .nonce;
    let replayed = Signed::sign(&serde_json::to_value(&replay).unwrap(), &b.alice_device).unwrap();
    assert_eq!(refused(replayed, two.id.clone()).await, "decision_refused");
    // Every refusal is journaled with its rule.
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    let refusals = journal
        .iter()
        .filter(|entry| entry.kind == "refusal" && entry.detail["action"] == "decide_tool")
        .count();
    assert!(refusals >= 12, "{refusals}");
}

/// A proposal the host refuses (here its row edited in the database, so its seal fails) is
/// never approved, however signed, and can still be denied on a device, which clears it from
/// the pending list and is journaled like any denial.
#[tokio::test]
async fn a_refused_proposal_cannot_be_approved_and_can_be_denied() {
    let b = Bench::start().await;
    let s = &b.s;
    assert_eq!(
        b.propose(Guest::PureTool, tool("edited", 1, json!({})))
            .await,
        "emitted"
    );
    let id = s.keep.tool_proposals().list(&s.alice).await.unwrap()[0]
        .id
        .clone();
    sqlx::query("UPDATE keep_tool_proposals SET description = $1 WHERE id = $2")
        .bind("The edited tool, now harmless-sounding.")
        .bind(&id)
        .execute(&pool(&s.host).await)
        .await
        .expect("edit");
    let review = s.keep.tool_proposals().get(&s.alice, &id).await.unwrap();
    let refused = review.refused.clone().expect("an edited row is refused");
    assert!(refused.contains("edited in the database"), "{refused}");
    let on = |device: &KeyPair, user: &str, kind| decision(device, user, &review, kind, false);
    let approve = on(&b.alice_device, "alice", DecisionKind::ApproveProposal);
    let error = s
        .keep
        .tool_proposals()
        .decide(&s.alice, &id, &approve)
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "untrusted_key", "{error}");
    assert!(s.keep.tools().list(&s.alice).await.unwrap().is_empty());
    // Bob cannot deny it for her: another person's proposal reads as none.
    let bobs = on(&b.bob_device, "bob", DecisionKind::DenyProposal);
    assert_eq!(
        s.keep
            .tool_proposals()
            .decide(&s.bob, &id, &bobs)
            .await
            .unwrap_err()
            .rule(),
        "not_found"
    );
    let deny = on(&b.alice_device, "alice", DecisionKind::DenyProposal);
    let denied = s
        .keep
        .tool_proposals()
        .decide(&s.alice, &id, &deny)
        .await
        .unwrap();
    assert_eq!(denied.state, "denied");
    assert!(s.keep.tools().list(&s.alice).await.unwrap().is_empty());
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    // The denial says the host had refused the proposal, and why; the name and version of a
    // row that does not hold its seal are not the proposal's, so none are journaled.
    let denial = journal
        .iter()
        .find(|entry| entry.detail["action"] == "deny" && entry.subject == format!("proposal:{id}"))
        .expect("the denial is journaled");
    assert_eq!(denial.detail["refused"].as_str(), Some(refused.as_str()));
    assert_eq!(
        (&denial.detail["name"], &denial.detail["version"]),
        (&Value::Null, &Value::Null),
        "{}",
        denial.detail
    );
    // Decided once: the same decision again is a conflict, not a second entry.
    assert_eq!(
        s.keep
            .tool_proposals()
            .decide(&s.alice, &id, &deny)
            .await
            .unwrap_err()
            .rule(),
        "conflict"
    );
}

/// A proposal row edited after its review was read and before the approval takes the write
/// lock deploys nothing: what deploys is read again under the lock, and its seal with it.
#[tokio::test]
async fn a_row_edited_while_the_approval_waits_for_the_lock_deploys_nothing() {
    let b = Bench::start().await;
    let s = &b.s;
    assert_eq!(
        b.propose(Guest::PureTool, tool("raced", 1, json!({})))
            .await,
        "emitted"
    );
    let review = s.keep.tool_proposals().list(&s.alice).await.unwrap()[0].clone();
    assert!(review.refused.is_none());
    let approve = decision(
        &b.alice_device,
        "alice",
        &review,
        DecisionKind::ApproveProposal,
        false,
    );
    // Another writer holds the lock every Keep write takes, and edits the row meanwhile.
    let pool = pool(&s.host).await;
    let mut editor = pool.begin().await.expect("begin");
    sqlx::query("UPDATE keep_journal_head SET seq = seq WHERE one = 1")
        .execute(&mut *editor)
        .await
        .expect("the lock");
    sqlx::query("UPDATE keep_tool_proposals SET name = 'renamed' WHERE id = $1")
        .bind(&review.id)
        .execute(&mut *editor)
        .await
        .expect("edit");
    let deciding = {
        let (keep, alice, id) = (s.keep.clone(), s.alice.clone(), review.id.clone());
        tokio::spawn(async move { keep.tool_proposals().decide(&alice, &id, &approve).await })
    };
    // The decision reads the review as it was, then waits for the lock.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    editor.commit().await.expect("commit");
    let error = deciding.await.unwrap().unwrap_err();
    assert_eq!(error.rule(), "untrusted_key", "{error}");
    assert!(s.keep.tools().list(&s.alice).await.unwrap().is_empty());
}

/// The decision document of the journal's `deny` entry's nonce, as a decision to copy it from.
async fn denied_nonce(s: &Sessions) -> Value {
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    let entry = journal
        .iter()
        .find(|entry| entry.detail["action"] == "deny")
        .unwrap();
    let mut made = serde_json::to_value(
        Decision::new(
            &OsRandom,
            &Expected {
                kind: DecisionKind::DenyProposal,
                subject: "x",
                hashes: &BTreeMap::new(),
                ceiling_version: 0,
                policy_version: 0,
                user: "alice",
            },
            &KeyPair::generate(&OsRandom).unwrap(),
            START,
            60,
            false,
        )
        .unwrap(),
    )
    .unwrap();
    made["nonce"] = entry.detail["nonce"].clone();
    made
}

#[tokio::test]
async fn the_ceiling_clamps_what_deploys_and_the_review_says_what_it_dropped() {
    let b = Bench::start().await;
    let s = &b.s;
    let port = b.upstream.port;
    let asked = tool(
        "poster",
        1,
        json!({
            "egress": {"mode": "allow", "rules": [
                local(port, &["GET", "POST", "DELETE"], "/api/items"),
                {"scheme": "https", "host": "elsewhere.example", "port": 443, "methods": ["GET"], "path_prefix": "/"},
            ]},
            "memory": "write", "model_socket": true,
            "resources": {"memory_mb": 256, "cpu_ms": 60_000, "timeout_ms": 600_000},
            "approval_timeout_s": 600,
        }),
    );
    assert_eq!(b.propose(Guest::FetchTool, asked).await, "emitted");
    let review = b.only_review().await;
    let classes: Vec<String> = review
        .authority_diff
        .iter()
        .map(|change| {
            serde_json::to_value(change.class)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for class in ["egress", "new_host", "memory", "resources", "timeouts"] {
        assert!(
            classes.contains(&class.to_owned()),
            "{class} in {classes:?}"
        );
    }
    // The agent has the model socket already: asking for it is no new authority.
    assert!(!classes.contains(&"model".to_owned()), "{classes:?}");
    assert!(!review.no_new_authority);
    let clamped = &review.clamped_manifest;
    assert_eq!(
        clamped["egress"]["rules"],
        json!([local(port, &["GET", "POST"], "/api/items")])
    );
    assert_eq!(clamped["memory"], "read");
    assert_eq!(clamped["model_socket"], false);
    assert_eq!(
        clamped["resources"],
        json!({"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000})
    );
    let dropped: Vec<&str> = review.dropped.iter().map(|d| d.field.as_str()).collect();
    for field in [
        "egress.rules[0].methods",
        "egress.rules[1]",
        "memory",
        "model_socket",
        "resources.memory_mb",
    ] {
        assert!(dropped.contains(&field), "{field} in {dropped:?}");
    }
    // Approved: what deploys is the clamped manifest, whatever was proposed.
    b.decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let deployed = &s.keep.tools().list(&s.alice).await.unwrap()[0];
    assert_eq!(&deployed.manifest, clamped);
    // The tool reaches what the clamp kept and nothing it dropped.
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let url = format!("http://127.0.0.1:{port}/api/items/1");
    let said = b
        .call(&session.id, "poster", json!({"url": url, "method": "POST"}))
        .await;
    assert!(said.contains("\"status\":200"), "{said}");
    let said = b
        .call(
            &session.id,
            "poster",
            json!({"url": url, "method": "DELETE"}),
        )
        .await;
    assert!(said.contains("refused"), "{said}");
    assert_eq!(b.upstream.hits(), 1);
    // What the tool read from outside taints the session that called it.
    assert!(
        s.keep
            .sessions()
            .get(&s.alice, &session.id)
            .await
            .unwrap()
            .tainted
    );
}

/// A session that read from outside (tainted) proposes the fetch tool as `reader`; approved
/// with the tainted confirm, it deploys asking. Its URL and the deployed tool.
pub(crate) async fn tainted_reader(b: &Bench) -> (String, imurun_keep::service::ToolView) {
    let s = &b.s;
    let port = b.upstream.port;
    // The session reads from outside: tainted.
    let url = format!("http://127.0.0.1:{port}/api/page");
    s.say(
        &s.alice,
        &b.session,
        json!({"fetch": {"method": "GET", "url": url}}),
    )
    .await;
    let asked = tool(
        "reader",
        1,
        json!({"egress": {"mode": "allow", "rules": [local(port, &["GET"], "/api")]}}),
    );
    assert_eq!(b.propose(Guest::FetchTool, asked).await, "emitted");
    let review = b.only_review().await;
    assert!(review.tainted && review.needs_confirm_tainted);
    assert!(
        review
            .origin
            .taint_source
            .as_deref()
            .unwrap()
            .contains("egress answer")
    );
    let error = b
        .decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "confirm_tainted");
    b.decide(&review, DecisionKind::ApproveProposal, true)
        .await
        .unwrap();
    let deployed = s.keep.tools().get(&s.alice, "reader").await.unwrap();
    assert!(deployed.tainted && !deployed.taint_cleared);
    assert_eq!(
        serde_json::to_value(deployed.egress_mode).unwrap(),
        "ask",
        "a tainted tool asks"
    );
    (url, deployed)
}

#[tokio::test]
async fn a_tainted_proposal_needs_the_confirm_and_deploys_asking_until_a_device_clears_it() {
    let b = Bench::start().await;
    let s = &b.s;
    let (url, deployed) = tainted_reader(&b).await;
    // Its egress waits for the person even though its rule allows.
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let call = s.spawn_say(
        &s.alice,
        &session.id,
        json!({"tool": {"name": "reader", "args": {"url": url}}}),
    );
    let approval = super::sessions::wait_for_approvals(&s.keep, &s.alice, 1).await;
    let waiting = s.keep.approvals().list(&s.alice).await.unwrap();
    assert_eq!(waiting[0].waiting.agent, "u/alice/reader");
    s.keep
        .approvals()
        .answer(&s.alice, &approval[0], false, None)
        .await
        .unwrap();
    let said = call.await.unwrap().unwrap();
    assert!(said[0].contains("refused"), "{said:?}");
    // Nothing the agent emits clears it: it may only propose.
    for kind in ["tool.clear_taint", "clear-taint", "tool.approve"] {
        let said = s
            .say(
                &s.alice,
                &session.id,
                json!({"emit": {"type": kind, "name": "reader"}}),
            )
            .await;
        assert!(said[0].starts_with("refused:"), "{kind}: {said:?}");
    }
    assert!(
        !s.keep
            .tools()
            .get(&s.alice, "reader")
            .await
            .unwrap()
            .taint_cleared
    );
    // A clear-taint decision needs the device: bob's key and a stale basis are refused.
    let basis = deployed.clear_taint.clone().unwrap();
    let clear = |device: &KeyPair, user: &str, ceiling_version: i64| {
        let expected = Expected {
            kind: DecisionKind::ClearTaint,
            subject: &basis.subject,
            hashes: &basis.hashes,
            ceiling_version,
            policy_version: 0,
            user,
        };
        let made = Decision::new(&OsRandom, &expected, device, START, 600, false).unwrap();
        Signed::sign(&serde_json::to_value(&made).unwrap(), device).unwrap()
    };
    let error = s
        .keep
        .tools()
        .clear_taint(
            &s.alice,
            "reader",
            &clear(&b.bob_device, "alice", basis.ceiling_version),
        )
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "untrusted_key");
    let error = s
        .keep
        .tools()
        .clear_taint(
            &s.alice,
            "reader",
            &clear(&b.alice_device, "alice", basis.ceiling_version + 1),
        )
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "decision_refused");
    let cleared = s
        .keep
        .tools()
        .clear_taint(
            &s.alice,
            "reader",
            &clear(&b.alice_device, "alice", basis.ceiling_version),
        )
        .await
        .unwrap();
    assert!(cleared.taint_cleared);
    assert_eq!(serde_json::to_value(cleared.egress_mode).unwrap(), "allow");
    assert_eq!(events_of(s, "alice", "tool.taint_cleared").len(), 1);
    let said = b.call(&session.id, "reader", json!({"url": url})).await;
    assert!(said.contains("\"status\":200"), "{said}");
}

/// A tool proposed by a tainted session taints the session that calls it with whatever it
/// answers, a failure included: the failure's words are the tool's.
#[tokio::test]
async fn a_failure_of_a_tool_proposed_by_a_tainted_session_taints_its_caller() {
    let b = Bench::start().await;
    let s = &b.s;
    tainted_reader(&b).await;
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let said = s
        .say(
            &s.alice,
            &session.id,
            json!({"tool": {"name": "reader", "args": "not an object"}}),
        )
        .await;
    assert!(said[0].contains("the tool failed"), "{said:?}");
    let view = s.keep.sessions().get(&s.alice, &session.id).await.unwrap();
    assert!(view.tainted, "the failure taints: {said:?}");
}

/// A tainted tool's row edited in the database (its manifest widened) is not sealed again by
/// clearing its taint, even with a decision signed over the edited row as the host shows it:
/// the seal is checked under the write lock, and the tool stays tainted and uncallable.
#[tokio::test]
async fn clearing_the_taint_of_an_edited_tool_row_seals_nothing() {
    let b = Bench::start().await;
    let s = &b.s;
    let (url, deployed) = tainted_reader(&b).await;
    sqlx::query("UPDATE keep_tools SET manifest = REPLACE(manifest, '\"GET\"', '\"GET\",\"POST\"') WHERE name = 'reader'")
        .execute(&pool(&s.host).await)
        .await
        .expect("edit");
    let edited = s.keep.tools().get(&s.alice, "reader").await.unwrap();
    assert!(
        edited.manifest.to_string().contains("POST"),
        "{}",
        edited.manifest
    );
    // The person sees that the host refuses the row, and nothing to sign.
    let refused = edited.refused.clone().expect("an edited row is refused");
    assert!(refused.contains("edited in the database"), "{refused}");
    assert!(edited.clear_taint.is_none());
    assert_eq!(
        s.keep.tools().list(&s.alice).await.unwrap()[0]
            .refused
            .as_deref(),
        Some(refused.as_str())
    );
    // A decision signed before the edit, over the genuine row, seals nothing either.
    let basis = deployed.clear_taint.clone().expect("tainted");
    let expected = Expected {
        kind: DecisionKind::ClearTaint,
        subject: &basis.subject,
        hashes: &basis.hashes,
        ceiling_version: basis.ceiling_version,
        policy_version: 0,
        user: "alice",
    };
    let made = Decision::new(&OsRandom, &expected, &b.alice_device, START, 600, false).unwrap();
    let signed = Signed::sign(&serde_json::to_value(&made).unwrap(), &b.alice_device).unwrap();
    let error = s
        .keep
        .tools()
        .clear_taint(&s.alice, "reader", &signed)
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "untrusted_key", "{error}");
    assert!(
        !s.keep
            .tools()
            .get(&s.alice, "reader")
            .await
            .unwrap()
            .taint_cleared
    );
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let said = b.call(&session.id, "reader", json!({"url": url})).await;
    assert!(said.contains("refused"), "{said}");
}

/// A tool revoked while one of its egress uses waits for its person: the revoke refuses the
/// use in its own write (journaled `by: revoked`), and the waiting call hears it at once.
#[tokio::test]
async fn revoking_a_tool_refuses_its_uses_waiting_for_an_answer() {
    let b = Bench::start().await;
    let s = &b.s;
    let (url, _) = tainted_reader(&b).await;
    // Its egress waits for the person even though its rule allows.
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let call = s.spawn_say(
        &s.alice,
        &session.id,
        json!({"tool": {"name": "reader", "args": {"url": url}}}),
    );
    let approval = super::sessions::wait_for_approvals(&s.keep, &s.alice, 1).await;
    s.keep.tools().revoke(&s.alice, "reader").await.unwrap();
    // The call ends either way: its use denied, or its cell stopped by the revoke.
    let said = call.await.unwrap().unwrap();
    assert!(
        said[0].contains("denied") || said[0].starts_with("refused: revoked:"),
        "{said:?}"
    );
    assert!(s.keep.approvals().list(&s.alice).await.unwrap().is_empty());
    let journal = s.host.keep.journal().list(&s.host.operator).await.unwrap();
    let refused = journal
        .iter()
        .find(|entry| entry.subject == format!("approval:{}", approval[0]))
        .expect("the refusal is journaled");
    assert_eq!(refused.detail["action"], "deny", "{:?}", refused.detail);
    assert_eq!(refused.detail["by"], "revoked", "{:?}", refused.detail);
    // Answered already: the person's answer finds nothing waiting.
    let error = s
        .keep
        .approvals()
        .answer(&s.alice, &approval[0], true, None)
        .await
        .unwrap_err();
    assert_eq!(error.rule(), "not_found", "{error}");
    assert_eq!(b.upstream.hits(), 1, "only the session's own read left");
}

#[tokio::test]
async fn intake_holds_its_bounds_and_refuses_what_is_not_a_plain_proposal() {
    let b = Bench::start().await;
    let s = &b.s;
    let pure = |name: &str| tool(name, 1, json!({}));
    let refused = |said: String, what: &str| {
        assert!(said.starts_with("refused:"), "{what}: {said}");
        said
    };
    // Unknown fields, in the payload and in the manifest.
    let mut auto = pure("auto");
    auto["auto_approve"] = json!(true);
    let said = refused(b.propose(Guest::PureTool, auto).await, "auto_approve");
    assert!(said.contains("auto_approve"), "{said}");
    let mut signing = pure("signing");
    signing["manifest"]["imports"] = json!(["sign"]);
    refused(b.propose(Guest::PureTool, signing).await, "imports");
    let mut trust = pure("trust");
    trust["manifest"]["memory"] = json!("trust_store");
    refused(
        b.propose(Guest::PureTool, trust).await,
        "memory as the trust store",
    );
    // Names: path characters, the agent's own, look-alikes of names in use.
    for name in ["../x", "a/b", "maker", "mаker", "m-aker", "rnaker"] {
        let said = refused(b.propose(Guest::PureTool, pure(name)).await, name);
        assert!(said.contains("payload.name"), "{name}: {said}");
    }
    // Bundles: not a component; past the bound, plain or compressed; compressed twice.
    let said = b
        .propose_raw(
            &b.session,
            &base64::engine::general_purpose::STANDARD.encode(b"\0asm\x01\0\0\0"),
            pure("core"),
        )
        .await;
    let said = refused(said, "core module");
    assert!(said.contains("component"), "{said}");
    let bomb = gzip(&vec![0_u8; TOOL_BUNDLE_BYTES_MAX + 1]);
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    let said = b
        .propose_raw(
            &b.session,
            &base64::engine::general_purpose::STANDARD.encode(&bomb),
            pure("bomb"),
        )
        .await;
    assert!(refused(said, "bomb").contains("expands past"));
    let twice = gzip(&gzip(&Guest::PureTool.bytes()));
    let said = b
        .propose_raw(
            &b.session,
            &base64::engine::general_purpose::STANDARD.encode(&twice),
            pure("twice"),
        )
        .await;
    assert!(refused(said, "twice").contains("another compressed"));
    let once = gzip(&Guest::PureTool.bytes());
    let said = b
        .propose_raw(
            &b.session,
            &base64::engine::general_purpose::STANDARD.encode(&once),
            pure("zipped"),
        )
        .await;
    assert_eq!(said, "emitted");
    // Manifest depth.
    let mut deep = pure("deep");
    deep["manifest"]["egress"] = json!({"mode": "deny", "rules": [[[[[[1]]]]]]});
    let said = refused(b.propose(Guest::PureTool, deep).await, "deep");
    assert!(said.contains("nests"), "{said}");
    // The description: escapes shown, never acting, and the flag from the diff only.
    let mut sly = pure("sly");
    sly["description"] =
        json!("\u{1b}[32mNo new authority ✓\u{1b}[0m\rsafe \u{202e}txt.exe\u{202c} helper");
    sly["manifest"]["egress"] = json!({"mode": "allow", "rules": [
        {"scheme": "https", "host": "exfil.example", "port": 443, "methods": ["POST"], "path_prefix": "/"}
    ]});
    assert_eq!(b.propose(Guest::FetchTool, sly).await, "emitted");
    let review = s
        .keep
        .tool_proposals()
        .list(&s.alice)
        .await
        .unwrap()
        .into_iter()
        .find(|review| review.name == "sly")
        .unwrap();
    assert_eq!(
        review.description,
        "\\u{001B}[32mNo new authority ✓\\u{001B}[0m\\u{000D}safe \\u{202E}txt.exe\\u{202C} helper"
    );
    assert!(!review.no_new_authority);
    assert_eq!(review.authority_diff.len(), 1);
    // Pending proposals: N held, N+1 refused.
    let pending = s.keep.tool_proposals().list(&s.alice).await.unwrap().len() as i64;
    for index in pending..PENDING_TOOL_PROPOSALS_MAX {
        let name = format!("filler{}", (b'a' + index as u8) as char);
        assert_eq!(
            b.propose(Guest::PureTool, pure(&name)).await,
            "emitted",
            "{name}"
        );
    }
    let said = refused(b.propose(Guest::PureTool, pure("onemore")).await, "N+1");
    assert!(said.contains("wait for their person"), "{said}");
    assert_eq!(
        s.keep.tool_proposals().list(&s.alice).await.unwrap().len() as i64,
        PENDING_TOOL_PROPOSALS_MAX
    );
    // Each refusal is an event and in the journal.
    assert!(events_of(s, "alice", "proposal.refused").len() >= 14);
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test]
async fn versions_are_immutable_and_a_new_version_is_a_new_proposal() {
    let b = Bench::start().await;
    let s = &b.s;
    assert_eq!(
        b.propose(Guest::PureTool, tool("calc", 1, json!({}))).await,
        "emitted"
    );
    let first = b.only_review().await;
    b.decide(&first, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    // The same name and version, other bytes or the same: refused at intake.
    for guest in [Guest::FetchTool, Guest::PureTool] {
        let said = b.propose(guest, tool("calc", 1, json!({}))).await;
        assert!(said.contains("deployed already"), "{said}");
    }
    // A look-alike of the person's own tool is refused; its name with a higher version is a
    // new proposal.
    let said = b.propose(Guest::PureTool, tool("ca1c", 2, json!({}))).await;
    assert!(said.contains("looks like your tool calc"), "{said}");
    assert_eq!(
        b.propose(Guest::PureTool, tool("calc", 2, json!({}))).await,
        "emitted"
    );
    let second = s
        .keep
        .tool_proposals()
        .list(&s.alice)
        .await
        .unwrap()
        .into_iter()
        .find(|review| review.state == "pending")
        .unwrap();
    assert_eq!(second.version, 2);
    b.decide(&second, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    assert_eq!(
        s.keep.tools().get(&s.alice, "calc").await.unwrap().version,
        2
    );
}

#[tokio::test]
async fn a_revoke_ends_the_call_in_flight_and_the_session_goes_on() {
    let b = Bench::start().await;
    let s = &b.s;
    assert_eq!(
        b.propose(Guest::PureTool, tool("slow", 1, json!({}))).await,
        "emitted"
    );
    let review = b.only_review().await;
    b.decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    // Once, so that the component is compiled before the race.
    assert_eq!(
        b.call(&session.id, "slow", json!({})).await,
        r#"{"echo":{}}"#
    );
    let call = s.spawn_say(
        &s.alice,
        &session.id,
        json!({"tool": {"name": "slow", "args": {"sleep_ms": 3000}}}),
    );
    // By now the call has read the tool's row and is sleeping in its cell.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    s.keep.tools().revoke(&s.alice, "slow").await.unwrap();
    // Stopped, not run to its end: the call's answer is "revoked", never the tool's echo.
    let said = call.await.unwrap().unwrap();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("refused: revoked: u/alice/slow"),
        "{said:?}"
    );
    // The session goes on: its next call is refused as for any tool it does not have.
    let said = b.call(&session.id, "slow", json!({})).await;
    assert!(said.starts_with("refused: no tool named"), "{said}");
    let said = s
        .say(&s.alice, &session.id, json!({"reply": "still here"}))
        .await;
    assert_eq!(said, ["still here"]);
}

#[tokio::test]
async fn only_sessions_of_the_agent_that_proposed_a_tool_may_call_it() {
    let b = Bench::start().await;
    let s = &b.s;
    deploy_tool(&b, Guest::PureTool, "calc", json!({}), false).await;
    // Another of the operator's agents: the tool's review was against `maker`, so whatever
    // it adds to `narrow` no one reviewed. Refused by the agent's name, even where the two
    // manifests grant the same.
    let authority = json!({
        "egress": {"mode": "allow", "rules": [local(b.upstream.port, &["GET"], "/api")]},
        "memory": "read", "model_socket": true,
        "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
    });
    s.deploy(Guest::ScriptedFull, manifest("narrow", authority.clone()))
        .await;
    let narrow = s.keep.sessions().start(&s.alice, "narrow").await.unwrap();
    let said = b.call(&narrow.id, "calc", json!({})).await;
    assert!(
        said.starts_with(
            "refused: u/alice/calc: only sessions of the agent that proposed it (maker)"
        ),
        "{said}"
    );
    let said = b.call(&narrow.id, "u/alice/calc", json!({})).await;
    assert!(said.contains("only sessions of the agent"), "{said}");
    // Refused calls are journaled for alice, with their rule.
    let journal = s.host.keep.journal().list(&s.host.operator).await.unwrap();
    let refused = journal
        .iter()
        .filter(|entry| entry.kind == "refusal" && entry.detail["rule"] == "not_proposer")
        .count();
    assert_eq!(refused, 2);
    let maker = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    assert_eq!(b.call(&maker.id, "calc", json!({})).await, r#"{"echo":{}}"#);
    // A new version of `maker` is another authority: the tool is proposed again from it.
    let mut second = authority;
    second["version"] = json!(2);
    s.deploy(Guest::ScriptedFull, manifest("maker", second))
        .await;
    s.keep.sessions().stop(&s.alice, &maker.id).await.unwrap();
    let upgraded = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let said = b.call(&upgraded.id, "calc", json!({})).await;
    assert!(
        said.contains("reviewed against maker version 1") && said.contains("version 2"),
        "{said}"
    );
}

#[tokio::test]
async fn a_tool_cannot_sign_mint_propose_or_reach_the_host_itself() {
    let b = Bench::start().await;
    let s = &b.s;
    // A tool importing signing and minting interfaces is approvable as bytes, and never starts.
    assert_eq!(
        b.propose(Guest::KeyTool, tool("keys", 1, json!({}))).await,
        "emitted"
    );
    let review = b.only_review().await;
    b.decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let said = b.call(&session.id, "keys", json!({})).await;
    assert!(
        said.contains("did not start") && said.contains("keys"),
        "{said}"
    );
    // A tool's cell proposes nothing.
    assert_eq!(
        b.propose(Guest::PureTool, tool("pure", 1, json!({}))).await,
        "emitted"
    );
    let pure = s
        .keep
        .tool_proposals()
        .list(&s.alice)
        .await
        .unwrap()
        .into_iter()
        .find(|review| review.state == "pending")
        .unwrap();
    b.decide(&pure, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let said = b
        .call(
            &session.id,
            "pure",
            json!({"propose": tool("inner", 1, json!({}))}),
        )
        .await;
    assert!(said.contains("proposes nothing"), "{said}");
    assert_eq!(
        s.keep.tool_proposals().list(&s.alice).await.unwrap().len(),
        2
    );
}

#[tokio::test]
async fn the_host_itself_is_forbidden_authority_whatever_the_ceiling_allows() {
    // The operator opened the API's own port as a loopback port and put it in the ceiling:
    // still no tool may name it.
    let api = Upstream::start(answer).await;
    let config = CellsConfig {
        loopback_ports: vec![api.port],
        cell: CellConfig::default(),
        api_port: Some(api.port),
    };
    let s = Sessions::build(config, &["x"]).await;
    s.deploy(
        Guest::ScriptedFull,
        manifest(
            "maker",
            json!({
                "egress": {"mode": "allow", "rules": [local(api.port, &["GET"], "/api")]},
                "memory": "read", "model_socket": true,
                "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
            }),
        ),
    )
    .await;
    let document = json!({
        "type": CEILING_TYPE, "user": "alice", "version": 1, "expires_at": START + 86_400,
        "egress": [local(api.port, &["GET", "POST"], "/"),
                   {"scheme": "http", "host": "localhost", "port": api.port, "methods": ["POST"], "path_prefix": "/"}],
        "credentials": [], "memory": "read", "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}
    });
    let envelope = Signed::sign(&document, &s.host.policy).unwrap();
    s.keep
        .ceilings()
        .put(&s.host.operator, "alice", &envelope)
        .await
        .unwrap();
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let bundle = base64::engine::general_purpose::STANDARD.encode(Guest::FetchTool.bytes());
    for (host, path) in [
        ("127.0.0.1", "/v1/agents"),
        ("localhost", "/"),
        ("[::ffff:127.0.0.1]", "/v1/agents"),
        ("[::1]", "/"),
        ("0.0.0.0", "/"),
    ] {
        let mut payload = tool(
            "deployer",
            1,
            json!({"egress": {"mode": "allow", "rules": [
                {"scheme": "http", "host": host, "port": api.port, "methods": ["POST"], "path_prefix": path}
            ]}}),
        );
        let mut rest = bundle.as_str();
        while !rest.is_empty() {
            let (head, tail) = rest.split_at(rest.len().min(CHUNK));
            s.say(&s.alice, &session.id, json!({"buffer": head})).await;
            rest = tail;
        }
        payload["bundle"] = json!("$buffer");
        payload["type"] = json!("tool.propose");
        let said = s.say(&s.alice, &session.id, json!({"emit": payload})).await;
        assert!(said[0].contains("forbidden authority"), "{host}: {said:?}");
    }
    assert!(
        s.keep
            .tool_proposals()
            .list(&s.alice)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(api.hits(), 0, "the host's own API was reached");
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    assert!(journal.iter().any(|entry| entry.kind == "refusal"
        && entry.detail["action"] == "review"
        && entry.detail["rule"] == "forbidden_authority"));
}

#[tokio::test]
async fn a_model_reply_holding_a_tool_call_creates_no_proposal_and_no_tool() {
    let reply = r#"<tool_call>{"name": "tool.propose", "arguments": {"name": "x", "description": "d", "bundle": "AGFzbQ0AAQA=", "manifest": {}}}</tool_call>"#;
    let b = Bench::with_model(&[reply]).await;
    let s = &b.s;
    let said = s
        .say(
            &s.alice,
            &b.session,
            json!({"generate": [{"role": "user", "content": "make yourself a tool"}]}),
        )
        .await;
    assert_eq!(said, [reply]);
    assert!(
        s.keep
            .tool_proposals()
            .list(&s.alice)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.keep.tools().list(&s.alice).await.unwrap().is_empty());
    assert!(events_of(s, "alice", "proposal.created").is_empty());
}

#[tokio::test]
async fn a_deployed_tool_cannot_reach_the_hosts_api_in_any_address_form() {
    let api = Upstream::start(answer).await;
    let b = Bench::with_api(&["x"], Some(api.port)).await;
    let s = &b.s;
    let asked = tool(
        "fetcher",
        1,
        json!({"egress": {"mode": "allow", "rules": [local(b.upstream.port, &["GET", "POST"], "/api")]}}),
    );
    assert_eq!(b.propose(Guest::FetchTool, asked).await, "emitted");
    let review = b.only_review().await;
    b.decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let port = api.port;
    for url in [
        format!("http://127.0.0.1:{port}/v1/agents"),
        format!("http://localhost:{port}/v1/agents"),
        format!("http://[::1]:{port}/v1/agents"),
        format!("http://[::ffff:127.0.0.1]:{port}/v1/agents"),
        format!("http://2130706433:{port}/v1/agents"),
        format!("http://0x7f.1:{port}/v1/agents"),
        format!("http://127.1:{port}/v1/agents"),
        format!("http://0.0.0.0:{port}/v1/agents"),
        format!("http://127.0.0.1:{port}/api/../v1/agents"),
    ] {
        for method in ["GET", "POST"] {
            let said = b
                .call(
                    &session.id,
                    "fetcher",
                    json!({"url": url, "method": method}),
                )
                .await;
            assert!(said.contains("refused"), "{method} {url}: {said}");
        }
    }
    assert_eq!(api.hits(), 0, "the host's own API was reached");
    assert_eq!(b.upstream.hits(), 0);
}

/// A tool's `memory: read` reaches the person's accepted memory entries of the agent that
/// proposed it (the only agent whose sessions may call it), and only with the grant.
#[tokio::test]
async fn a_tools_memory_is_the_persons_accepted_entries_of_its_agent() {
    let b = Bench::start().await;
    let s = &b.s;
    // `maker` at a version that may propose memory entries.
    let writer = json!({
        "version": 2,
        "egress": {"mode": "allow", "rules": [local(b.upstream.port, &["GET"], "/api")]},
        "memory": "write", "model_socket": true,
        "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
    });
    s.deploy(Guest::ScriptedFull, manifest("maker", writer))
        .await;
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let remember = json!({"emit": {"type": "memory.propose", "text": "likes tea"}});
    assert_eq!(s.say(&s.alice, &session.id, remember).await, ["emitted"]);
    let pending = json!({"emit": {"type": "memory.propose", "text": "not accepted"}});
    assert_eq!(s.say(&s.alice, &session.id, pending).await, ["emitted"]);
    let entries = s
        .keep
        .proposals()
        .list(&s.alice, Some("memory"))
        .await
        .unwrap();
    let tea = entries
        .iter()
        .find(|entry| entry.payload["text"] == "likes tea")
        .unwrap();
    s.keep
        .proposals()
        .decide(&s.alice, &tea.id, true, false)
        .await
        .unwrap();
    for (name, memory) in [("recall", "read"), ("forgetful", "none")] {
        deploy_tool(
            &b,
            Guest::MemoryTool,
            name,
            json!({"memory": memory}),
            false,
        )
        .await;
    }
    let said = b.call(&session.id, "recall", json!({"memory": true})).await;
    assert_eq!(said, r#"{"memory":["likes tea"]}"#);
    // No grant, no import: the component does not start.
    let said = b
        .call(&session.id, "forgetful", json!({"memory": true}))
        .await;
    assert!(said.contains("did not start"), "{said}");
}

/// A cell's refusals are bounded per person too: stopping and starting sessions journals no
/// more in a minute than one session may.
#[tokio::test]
async fn a_persons_sessions_together_journal_a_bounded_number_of_refusals() {
    let b = Bench::start().await;
    let s = &b.s;
    let journaled = |journal: &[imurun_keep::service::JournalView]| {
        journal
            .iter()
            .filter(|entry| entry.kind == "refusal" && entry.user.as_deref() == Some("alice"))
            .count()
    };
    let before = journaled(&s.host.keep.journal().list(&s.host.operator).await.unwrap());
    for _ in 0..3 {
        let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
        for call in 0..40 {
            let said = b
                .call(&session.id, &format!("nosuch{call}"), json!({}))
                .await;
            assert!(said.starts_with("refused: no tool named"), "{said}");
        }
        s.keep.sessions().stop(&s.alice, &session.id).await.unwrap();
    }
    let journal = s.host.keep.journal().list(&s.host.operator).await.unwrap();
    let added = journaled(&journal) - before;
    // 64 a minute and the entry that says so, over at most two minutes.
    assert!((65..=130).contains(&added), "{added} entries");
    assert!(
        journal
            .iter()
            .any(|entry| entry.detail["rule"] == "journal_bound"),
        "the bound is journaled"
    );
}
