//! Attacks on Keep's rules at the service level, from an attacker's run: each `attack_` test is
//! named after what broke and asserts the secure behaviour; each `holds_` test checks what held.

use imurun_keep::KeepError;
use imurun_keep::canonical::canonicalize;
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::{
    CEILING_TYPE, KeyRole, Signature, Signed, TRUST_ROOT_TYPE, TrustRoot,
};
use imurun_keep::journal::JournalEntry;
use imurun_keep::keys::KeyPair;
use imurun_keep::random::OsRandom;
use imurun_keep::service::EnrolProof;
use serde_json::json;
use std::collections::BTreeMap;

use super::support::{Host, START, listed, pool, possession};

/// BREAK: a rotation whose new root does not list the key that signed it (a full hand-over to a
/// new policy key, exactly what "recovery: a policy key leaked" asks for) is accepted, and from
/// then on `Trust::load` refuses the stored root ("not signed by a key it lists"): no deploy,
/// ceiling or further rotation works again, and `init::open` (server start) fails.
#[tokio::test]
async fn attack_rotation_to_a_root_without_its_signer_bricks_the_host() {
    let host = Host::new().await;
    let new_policy = KeyPair::generate(&OsRandom).expect("key");
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version: 2,
        expires_at: START + 1_000_000,
        keys: vec![
            listed(&new_policy, KeyRole::Policy, false),
            listed(&host.signer, KeyRole::Signer, false),
        ],
    };
    let rotated = host
        .keep
        .trust_roots()
        .rotate(
            &host.operator,
            &Signed::sign(&root, &host.policy).expect("sign"),
        )
        .await;
    if rotated.is_err() {
        // Refusing the rotation up front would be a fix too.
        return;
    }
    // The rotation was accepted: the host must go on working with the new root.
    host.keep
        .trust_roots()
        .view(&host.operator)
        .await
        .expect("the root just accepted is readable");
    let mut request = host.deploy_request(&Host::manifest("helper", 1), 1);
    request.policy = host.policy_for(&Host::manifest("helper", 1), &request.bundle, &new_policy);
    host.keep
        .agents()
        .deploy(&host.operator, request)
        .await
        .expect("the new policy key deploys");
}

/// BREAK: once the trust root's `expires_at` passes, `rotate_trust_root` needs `self.trust()`,
/// which refuses the expired root, so no new root can ever be installed (and `keep init`
/// refuses because a root exists). docs/keep/trust.md says deploys are refused "until one is
/// installed"; TUF lets an expired root verify its successor.
#[tokio::test]
async fn attack_an_expired_root_can_never_be_replaced() {
    let host = Host::new().await;
    let current = host
        .keep
        .trust_roots()
        .view(&host.operator)
        .await
        .expect("root");
    // The first root lives a year; let it lapse by a second.
    host.now
        .store(current.expires_at, std::sync::atomic::Ordering::SeqCst);
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version: 2,
        expires_at: current.expires_at + 1_000_000,
        keys: current.keys.clone(),
    };
    host.keep
        .trust_roots()
        .rotate(
            &host.operator,
            &Signed::sign(&root, &host.policy).expect("sign"),
        )
        .await
        .expect("a root signed by the current root's active policy key replaces the expired one");
}

/// BREAK: `Store::keep_journal` reads at most 10,000 rows (oldest first). With 10,001 entries
/// `verify_journal` reports an intact journal as broken ("ends at entry 10000, but its recorded
/// head is entry 10001"), `journal()` (GET /v1/journal, "newest first") never shows the newest
/// entries, and `journal_entry(10001)` is "not found". Any user fills the journal (every refusal
/// and vault write is an entry).
#[tokio::test]
async fn attack_journal_past_ten_thousand_entries() {
    let host = Host::new().await;
    let pool = pool(&host).await;
    // Extend the real chain with correctly hashed entries (what 10k user actions would write).
    let (mut seq, mut hash): (i64, String) =
        sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
            .fetch_one(&pool)
            .await
            .expect("head");
    let mut tx = pool.begin().await.expect("tx");
    while seq < 10_001 {
        let mut entry = JournalEntry {
            seq: seq + 1,
            at_ms: START * 1000 + seq,
            actor: "user:alice".into(),
            user: Some("alice".into()),
            kind: "vault".into(),
            subject: "vault:k".into(),
            detail: json!({"name": "k", "action": "replace"}),
            prev_hash: hash.clone(),
            hash: String::new(),
        };
        entry.hash = entry.compute_hash().expect("hash");
        sqlx::query(
            "INSERT INTO keep_journal (seq, at_ms, actor, user_name, kind, subject, detail, \
             prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
        )
        .bind(entry.seq)
        .bind(entry.at_ms)
        .bind(&entry.actor)
        .bind(&entry.user)
        .bind(&entry.kind)
        .bind(&entry.subject)
        .bind(String::from_utf8(canonicalize(&entry.detail)).expect("utf8"))
        .bind(&entry.prev_hash)
        .bind(&entry.hash)
        .execute(&mut *tx)
        .await
        .expect("insert");
        seq = entry.seq;
        hash = entry.hash;
    }
    sqlx::query("UPDATE keep_journal_head SET seq = $1, hash = $2 WHERE one = 1")
        .bind(seq)
        .bind(&hash)
        .execute(&mut *tx)
        .await
        .expect("head");
    tx.commit().await.expect("commit");

    // One more real write through the service.
    host.keep
        .vault()
        .put(&host.operator, "gh", b"x")
        .await
        .expect("put");
    let report = host
        .keep
        .journal()
        .verify(&host.operator)
        .await
        .expect("verify");
    assert_eq!(
        report.first_bad, None,
        "an untouched chain of 10,002 entries is reported broken"
    );
    let newest = host.last_entry().await;
    assert_eq!(
        newest.seq, 10_002,
        "the newest entry is missing from the journal"
    );
    host.keep
        .journal()
        .entry(&host.operator, 10_002)
        .await
        .expect("entry 10002 is readable");
}

/// BREAK: a stored ceiling is never re-verified when read (unlike the trust root): an edited
/// `keep_documents` row with a garbage signature and a wider ceiling is served as in force.
#[tokio::test]
async fn attack_a_forged_stored_ceiling_is_served() {
    let host = Host::new().await;
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &host.ceiling("alice", 1))
        .await
        .expect("ceiling");
    let forged = Signed {
        signed: json!({
            "type": CEILING_TYPE, "user": "alice", "version": 1, "expires_at": START + 86_400,
            "egress": [{"scheme": "https", "host": "*.evil.example", "port": 443,
                        "methods": ["POST"], "path_prefix": "/"}],
            "credentials": [], "memory": "write", "model_socket": true,
            "resources": {"memory_mb": 4096, "cpu_ms": 600000, "timeout_ms": 3600000}
        }),
        signature: Signature {
            key_id: host.policy.key_id(),
            sig: "00".repeat(64),
        },
    };
    sqlx::query("UPDATE keep_documents SET envelope = $1 WHERE kind = 'ceiling'")
        .bind(serde_json::to_string(&forged).expect("json"))
        .execute(&pool(&host).await)
        .await
        .expect("edit");
    let (alice, _) = host.user("alice").await;
    let view = host
        .keep
        .ceilings()
        .get(&alice, "alice")
        .await
        .expect("ceiling");
    assert!(
        !view.ceiling.model_socket && view.empty_because.is_some(),
        "an unsigned ceiling is in force: {view:?}"
    );
}

/// BREAK: the same for an agent: `check_agent_row` compares only the version, so an edited
/// `keep_agents.manifest` (more egress, a model socket) is served with no signature check
/// against the stored policy.
#[tokio::test]
async fn attack_an_edited_stored_manifest_is_served() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 1),
        )
        .await
        .expect("deploy");
    let mut manifest = Host::manifest("helper", 1);
    manifest["model_socket"] = json!(true);
    manifest["memory"] = json!("write");
    sqlx::query("UPDATE keep_agents SET manifest = $1 WHERE name = 'helper'")
        .bind(manifest.to_string())
        .execute(&pool(&host).await)
        .await
        .expect("edit");
    let view = host.keep.agents().get(&host.operator, "helper").await;
    if let Ok(view) = view {
        assert_eq!(
            view.manifest["model_socket"],
            json!(false),
            "a manifest the signed policy does not hold is served"
        );
    }
}

/// BREAK (TOCTOU): the 256-entry vault bound is checked before the write lock is taken, so
/// concurrent puts of new names overshoot it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attack_vault_bound_overshoots_under_concurrency() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    for index in 0..250 {
        host.keep
            .vault()
            .put(&alice, &format!("k{index}"), b"v")
            .await
            .expect("put");
    }
    let mut tasks = Vec::new();
    for index in 0..40 {
        let keep = host.keep.clone();
        let alice = alice.clone();
        tasks.push(tokio::spawn(async move {
            keep.vault()
                .put(&alice, &format!("race{index}"), b"v")
                .await
                .is_ok()
        }));
    }
    for task in tasks {
        task.await.expect("join");
    }
    let count = host.keep.vault().list(&alice).await.expect("list").len();
    assert!(
        count <= 256,
        "the vault holds {count} entries, over its bound of 256"
    );
}

/// BREAK (TOCTOU): `verify_journal` reads the rows and the head in two separate reads, so a
/// write that commits between them makes an intact journal read as tampered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attack_journal_verify_false_alarm_under_concurrent_writes() {
    let host = Host::new().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let keep = host.keep.clone();
        let operator = host.operator.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && n < 400 {
                keep.vault().put(&operator, "k", b"v").await.expect("put");
                n += 1;
            }
        })
    };
    let mut alarms = Vec::new();
    for _ in 0..400 {
        let report = host
            .keep
            .journal()
            .verify(&host.operator)
            .await
            .expect("verify");
        if let Some(bad) = report.first_bad {
            alarms.push(bad.reason);
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.expect("writer");
    assert!(
        alarms.is_empty(),
        "an intact journal read as broken: {alarms:?}"
    );
}

/// BREAK (tenancy oracle): a decision naming another user's registered device key id is refused
/// with a different message than one naming a key id that was never registered, so Alice learns
/// that Bob's device exists (docs/keep/tenancy.md: "a user cannot learn whether another user's
/// object exists").
#[tokio::test]
async fn attack_decision_refusal_reveals_another_users_device() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let (bob, _) = host.user("bob").await;
    let bob_device = KeyPair::generate(&OsRandom).expect("key");
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "bob", 600)
        .await
        .expect("code");
    host.enrol(&bob, &bob_device, "bob", EnrolProof::Code(code))
        .await
        .expect("bob enrols");
    let never = KeyPair::generate(&OsRandom).expect("key");
    let new_key = KeyPair::generate(&OsRandom).expect("key");
    let hashes = BTreeMap::from([("public_key".to_owned(), new_key.public().sha256())]);
    let key_id = new_key.key_id();
    let refusal = |signer: &KeyPair| {
        let expected = Expected {
            kind: DecisionKind::EnrolDevice,
            subject: &key_id,
            hashes: &hashes,
            ceiling_version: 0,
            policy_version: 0,
            user: "alice",
        };
        let decision =
            Decision::new(&OsRandom, &expected, signer, START, 600, false).expect("decision");
        Signed::sign(&decision, signer).expect("sign")
    };
    let error = |result: Result<_, KeepError>| result.expect_err("refused").to_string();
    let about_bobs = error(
        host.enrol(
            &alice,
            &new_key,
            "alice",
            EnrolProof::Decision(refusal(&bob_device)),
        )
        .await,
    );
    let about_none = error(
        host.enrol(
            &alice,
            &new_key,
            "alice",
            EnrolProof::Decision(refusal(&never)),
        )
        .await,
    );
    // Key ids differ by construction; compare with the id masked.
    let masked = |text: String, id: &str| text.replace(id, "<id>");
    assert_eq!(
        masked(about_bobs, &bob_device.key_id()),
        masked(about_none, &never.key_id()),
        "Bob's device answers differently from a key that never existed"
    );
}

// ---- Probes that held on 75fc2a8 (kept as regression tests) ----

#[test]
fn holds_number_forms_are_refused_or_canonical() {
    use imurun_keep::canonical::parse_document;
    for text in [
        r#"{"a":1.0}"#,
        r#"{"a":1e2}"#,
        r#"{"a":1E2}"#,
        r#"{"a":0.0}"#,
        r#"{"a":-0.0}"#,
        r#"{"a":9007199254740992}"#,
        r#"{"a":-9007199254740992}"#,
        r#"{"a":18446744073709551615}"#,
        r#"{"a":{"b":1,"\u0062":2}}"#,
        r#"{"a":"\udfff"}"#,
        r#"{"a":1}{"a":2}"#,
    ] {
        assert!(parse_document(text.as_bytes()).is_err(), "{text} accepted");
    }
    // -0 is refused too (serde_json reads it as a float).
    assert!(parse_document(br#"{"a":-0}"#).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holds_one_nonce_and_one_code_count_once_under_concurrency() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let first = KeyPair::generate(&OsRandom).expect("key");
    // Two enrolments racing on one code: exactly one wins.
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await
        .expect("code");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (keep, alice, code) = (host.keep.clone(), alice.clone(), code.clone());
        let key = KeyPair::generate(&OsRandom).expect("key");
        tasks.push(tokio::spawn(async move {
            keep.devices()
                .enrol(
                    &alice,
                    &key.public().to_hex(),
                    "x",
                    &possession(&key, "alice"),
                    EnrolProof::Code(code),
                )
                .await
                .map_err(|error| format!("{}: {error}", error.rule()))
        }));
    }
    let mut wins = 0;
    let mut refused = Vec::new();
    for task in tasks {
        match task.await.expect("join") {
            Ok(_) => wins += 1,
            Err(error) => refused.push(error),
        }
    }
    assert_eq!(wins, 1, "refused: {refused:?}");
    let device = host.keep.devices().list(&alice).await.expect("devices");
    let _ = first;
    // Reuse the winner's device? We lack its key pair; enrol a decision-signed one instead.
    assert_eq!(device.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holds_a_decision_nonce_is_consumed_once_concurrently() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let first = KeyPair::generate(&OsRandom).expect("key");
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await
        .expect("code");
    host.enrol(&alice, &first, "alice", EnrolProof::Code(code))
        .await
        .expect("first");
    let new_key = KeyPair::generate(&OsRandom).expect("key");
    let hashes = BTreeMap::from([("public_key".to_owned(), new_key.public().sha256())]);
    let key_id = new_key.key_id();
    let expected = Expected {
        kind: DecisionKind::EnrolDevice,
        subject: &key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user: "alice",
    };
    let decision =
        Decision::new(&OsRandom, &expected, &first, START, 600, false).expect("decision");
    let envelope = Signed::sign(&decision, &first).expect("sign");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (keep, alice, envelope) = (host.keep.clone(), alice.clone(), envelope.clone());
        let public = new_key.public().to_hex();
        let proof = possession(&new_key, "alice");
        tasks.push(tokio::spawn(async move {
            keep.devices()
                .enrol(&alice, &public, "b", &proof, EnrolProof::Decision(envelope))
                .await
                .map_err(|error| format!("{}: {error}", error.rule()))
        }));
    }
    let mut wins = 0;
    let mut refused = Vec::new();
    for task in tasks {
        match task.await.expect("join") {
            Ok(_) => wins += 1,
            Err(error) => refused.push(error),
        }
    }
    assert_eq!(wins, 1, "refused: {refused:?}");
    // The decision replayed for another key is refused (subject and hashes bind it).
    let other = KeyPair::generate(&OsRandom).expect("key");
    assert!(
        host.enrol(&alice, &other, "alice", EnrolProof::Decision(envelope))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn holds_journal_tampering_is_named() {
    let host = Host::new().await;
    for index in 0..6 {
        host.keep
            .vault()
            .put(&host.operator, &format!("k{index}"), b"v")
            .await
            .expect("put");
    }
    let pool = pool(&host).await;
    // Edit the head entry's detail: found at the last seq.
    let (head,): (i64,) = sqlx::query_as("SELECT seq FROM keep_journal_head")
        .fetch_one(&pool)
        .await
        .expect("head");
    sqlx::query("UPDATE keep_journal SET subject = 'x' WHERE seq = $1")
        .bind(head)
        .execute(&pool)
        .await
        .expect("edit");
    let report = host
        .keep
        .journal()
        .verify(&host.operator)
        .await
        .expect("verify");
    assert_eq!(report.first_bad.and_then(|bad| bad.seq), Some(head));
}

/// BREAK (availability, low): a user who retires their only device can never enrol another:
/// codes are refused because `device_count` counts retired keys, and no live device is left to
/// sign an `enrol_device` decision. The operator has no recovery path short of a new database.
#[tokio::test]
async fn attack_retiring_the_only_device_locks_the_user_out_for_good() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let first = KeyPair::generate(&OsRandom).expect("key");
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await
        .expect("code");
    host.enrol(&alice, &first, "alice", EnrolProof::Code(code))
        .await
        .expect("enrol");
    host.retire(&alice, &first, &first, "alice")
        .await
        .expect("retire");
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await
        .expect("code");
    let next = KeyPair::generate(&OsRandom).expect("key");
    host.enrol(&alice, &next, "alice", EnrolProof::Code(code))
        .await
        .expect("with no live device, an operator-issued code enrols a replacement");
}

/// Enrolment needed no proof of possession of the private key, so Alice could register Bob's
/// public device key first, and Bob's own enrolment of it was then refused (409).
#[tokio::test]
async fn attack_a_user_can_squat_another_users_public_key() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let (bob, _) = host.user("bob").await;
    let bobs_key = KeyPair::generate(&OsRandom).expect("key");
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await
        .expect("code");
    let squatted = host
        .keep
        // All Alice can present: Bob's own proof (made for Bob), or one made with her key.
        .devices()
        .enrol(
            &alice,
            &bobs_key.public().to_hex(),
            "not mine",
            &possession(&bobs_key, "bob"),
            EnrolProof::Code(code.clone()),
        )
        .await;
    assert!(
        squatted.is_err(),
        "Bob's proof registered his key for Alice"
    );
    let mine = KeyPair::generate(&OsRandom).expect("key");
    let squatted = host
        .keep
        .devices()
        .enrol(
            &alice,
            &bobs_key.public().to_hex(),
            "not mine",
            &possession(&mine, "alice"),
            EnrolProof::Code(code),
        )
        .await;
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "bob", 600)
        .await
        .expect("code");
    let bobs = host
        .enrol(&bob, &bobs_key, "bob", EnrolProof::Code(code))
        .await;
    assert!(
        squatted.is_err() || bobs.is_ok(),
        "Alice registered a key she does not hold and locked Bob out of it: {bobs:?}"
    );
}
