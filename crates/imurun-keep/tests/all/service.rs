//! The Keep service against a real SQLite store: two users and an operator.

use imurun_keep::random::OsRandom;
use std::collections::BTreeMap;

use imurun_keep::KeepError;
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::{KeyRole, Signed, TRUST_ROOT_TYPE, TrustRoot};
use imurun_keep::keys::KeyPair;
use imurun_keep::service::{
    BREAK_NOT_ABOUT_YOU, BadEntryView, EnrolProof, JournalCheckView, USER_CHECK_REUSE_S,
};
use serde_json::json;

use super::support::{Host, START, listed, pool};

fn rule_of<T: std::fmt::Debug>(result: Result<T, KeepError>) -> &'static str {
    result.expect_err("refused").rule()
}

#[tokio::test]
async fn user_tokens_cannot_use_operator_operations() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let request = host.deploy_request(&Host::manifest("helper", 1), 1);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&alice, request).await),
        "forbidden"
    );
    assert_eq!(
        rule_of(
            host.keep
                .ceilings()
                .put(&alice, "alice", &host.ceiling("alice", 1))
                .await
        ),
        "forbidden"
    );
    assert_eq!(
        rule_of(host.keep.devices().enrol_code(&alice, "alice", 60).await),
        "forbidden"
    );
    assert_eq!(rule_of(host.keep.agents().list(&alice).await), "forbidden");
    assert_eq!(
        rule_of(host.keep.trust_roots().view(&alice).await),
        "forbidden"
    );
}

#[tokio::test]
async fn deploys_are_checked_and_refusals_journaled() {
    let host = Host::new().await;
    let manifest = Host::manifest("helper", 2);
    let deployed = host
        .keep
        .agents()
        .deploy(&host.operator, host.deploy_request(&manifest, 1))
        .await
        .expect("deploy");
    assert_eq!((deployed.name.as_str(), deployed.version), ("helper", 2));
    assert_eq!(host.last_entry().await.kind, "deploy");

    // Same version again, and a lower one: rolled back.
    let again = host
        .keep
        .agents()
        .deploy(&host.operator, host.deploy_request(&manifest, 2))
        .await;
    assert_eq!(rule_of(again), "rolled_back");
    let entry = host.last_entry().await;
    assert_eq!(
        (entry.kind.as_str(), entry.detail["rule"].as_str()),
        ("refusal", Some("rolled_back"))
    );
    let lower = host
        .keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 2),
        )
        .await;
    assert_eq!(rule_of(lower), "rolled_back");

    // A bundle signed by an unknown key, by the policy key, and a changed bundle.
    let stranger = KeyPair::generate(&OsRandom).expect("key");
    let mut request = host.deploy_request(&Host::manifest("helper", 3), 3);
    request.bundle_signature = imurun_keep::trust::sign_bundle(&request.bundle, &stranger);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "untrusted_key"
    );
    let mut request = host.deploy_request(&Host::manifest("helper", 3), 3);
    request.bundle_signature = imurun_keep::trust::sign_bundle(&request.bundle, &host.policy);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "untrusted_key"
    );
    let mut request = host.deploy_request(&Host::manifest("helper", 3), 3);
    request.bundle[20] ^= 1;
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "bad_signature"
    );

    // A policy signed by a stranger, by the signer key, flipped after signing, and expired.
    let mut request = host.deploy_request(&Host::manifest("helper", 3), 3);
    request.policy = host.policy_for(&Host::manifest("helper", 3), &request.bundle, &stranger);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "untrusted_key"
    );
    let mut request = host.deploy_request(&Host::manifest("helper", 3), 3);
    request.policy = host.policy_for(&Host::manifest("helper", 3), &request.bundle, &host.signer);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "untrusted_key"
    );
    let mut request = host.deploy_request(&Host::manifest("helper", 3), 3);
    request.policy.signed["manifest"]["model_socket"] = json!(true);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "bad_signature"
    );
    let request = host.deploy_request(&Host::manifest("helper", 3), 3);
    host.advance(86_400);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "expired"
    );

    // Not a component.
    let mut request = host.deploy_request(&Host::manifest("other", 1), 3);
    request.bundle = b"\0asm\x01\0\0\0core".to_vec();
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "invalid"
    );

    let refusals = host
        .keep
        .journal()
        .list(&host.operator)
        .await
        .expect("journal")
        .into_iter()
        .filter(|e| e.kind == "refusal")
        .count();
    assert_eq!(refusals, 10);
}

#[tokio::test]
async fn a_credential_missing_from_the_vault_refuses_the_deploy() {
    let host = Host::new().await;
    let mut manifest = Host::manifest("mailer", 1);
    manifest["egress"] = json!({"mode": "allow", "rules": [{"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["POST"], "path_prefix": "/"}]});
    manifest["credentials"] = json!([{"name": "mail_key", "bind": {"host": "api.example.com", "port": 443, "methods": ["POST"], "path_prefix": "/send"}, "header": "Authorization"}]);
    let refused = host
        .keep
        .agents()
        .deploy(&host.operator, host.deploy_request(&manifest, 1))
        .await;
    assert_eq!(rule_of(refused), "missing_credential");
    // A user's entry of that name is not the operator's.
    let (alice, _) = host.user("alice").await;
    host.keep
        .vault()
        .put(&alice, "mail_key", b"alice-secret")
        .await
        .expect("put");
    assert_eq!(
        rule_of(
            host.keep
                .agents()
                .deploy(&host.operator, host.deploy_request(&manifest, 1))
                .await
        ),
        "missing_credential"
    );
    host.keep
        .vault()
        .put(&host.operator, "mail_key", b"operator-secret")
        .await
        .expect("put");
    let deployed = host
        .keep
        .agents()
        .deploy(&host.operator, host.deploy_request(&manifest, 1))
        .await
        .expect("deploy");
    assert_eq!(deployed.manifest["credentials"][0]["name"], "mail_key");
}

#[tokio::test]
async fn ceilings_are_versioned_per_user_and_private() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let (bob, _) = host.user("bob").await;
    let view = host
        .keep
        .ceilings()
        .get(&alice, "alice")
        .await
        .expect("empty");
    assert_eq!(
        (view.ceiling.version, view.empty_because.as_deref()),
        (0, Some("none set"))
    );
    assert!(
        view.ceiling.egress.is_empty()
            && view.ceiling.credentials.is_empty()
            && !view.ceiling.model_socket
    );

    host.keep
        .ceilings()
        .put(&host.operator, "alice", &host.ceiling("alice", 2))
        .await
        .expect("put");
    assert_eq!(
        host.keep
            .ceilings()
            .get(&alice, "alice")
            .await
            .expect("own")
            .ceiling
            .version,
        2
    );
    assert_eq!(
        rule_of(
            host.keep
                .ceilings()
                .put(&host.operator, "alice", &host.ceiling("alice", 2))
                .await
        ),
        "rolled_back"
    );
    assert_eq!(
        rule_of(
            host.keep
                .ceilings()
                .put(&host.operator, "bob", &host.ceiling("alice", 3))
                .await
        ),
        "invalid"
    );

    // Bob reading Alice's ceiling reads as a user that does not exist.
    let theirs = host
        .keep
        .ceilings()
        .get(&bob, "alice")
        .await
        .expect_err("hidden")
        .to_string();
    let nobody = host
        .keep
        .ceilings()
        .get(&bob, "nobody")
        .await
        .expect_err("hidden")
        .to_string();
    assert_eq!(theirs, nobody);

    // Restoring an older row brings back the empty ceiling, not the old one.
    let old = serde_json::to_string(&host.ceiling("alice", 1)).expect("json");
    sqlx::query("UPDATE keep_documents SET version = 1, envelope = $1 WHERE kind = 'ceiling' AND subject = 'alice'")
        .bind(old)
        .execute(&pool(&host).await)
        .await
        .expect("restore old row");
    let view = host.keep.ceilings().in_force("alice").await.expect("view");
    assert_eq!(view.ceiling.version, 0);
    assert!(view.empty_because.expect("why").starts_with("rolled back"));
}

#[tokio::test]
async fn trust_rotation_retires_keys_and_a_restored_root_is_refused() {
    let host = Host::new().await;
    let new_policy = KeyPair::generate(&OsRandom).expect("key");
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version: 2,
        expires_at: START + 1_000_000,
        keys: vec![
            listed(&host.policy, KeyRole::Policy, true),
            listed(&host.signer, KeyRole::Signer, false),
            listed(&new_policy, KeyRole::Policy, false),
        ],
    };
    let (first_root, first_seal) = sqlx::query_as::<_, (String, String)>(
        "SELECT envelope, seal FROM keep_documents WHERE kind = 'trust_root'",
    )
    .fetch_one(&pool(&host).await)
    .await
    .expect("root");
    host.keep
        .trust_roots()
        .rotate(
            &host.operator,
            &Signed::sign(&root, &host.policy).expect("sign"),
        )
        .await
        .expect("rotate");
    // The retired policy key signs no new policy or ceiling.
    let request = host.deploy_request(&Host::manifest("helper", 1), 1);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "untrusted_key"
    );
    assert_eq!(
        rule_of(
            host.keep
                .ceilings()
                .put(&host.operator, "alice", &host.ceiling("alice", 1))
                .await
        ),
        "untrusted_key"
    );
    let mut request = host.deploy_request(&Host::manifest("helper", 1), 1);
    request.policy = host.policy_for(&Host::manifest("helper", 1), &request.bundle, &new_policy);
    host.keep
        .agents()
        .deploy(&host.operator, request)
        .await
        .expect("the new key deploys");

    // Restoring the version-1 root row, seal and all, does not bring the old key back.
    sqlx::query(
        "UPDATE keep_documents SET version = 1, envelope = $1, seal = $2 WHERE kind = 'trust_root'",
    )
    .bind(first_root)
    .bind(first_seal)
    .execute(&pool(&host).await)
    .await
    .expect("restore");
    assert_eq!(
        rule_of(host.keep.trust_roots().view(&host.operator).await),
        "rolled_back"
    );
    let request = host.deploy_request(&Host::manifest("helper", 2), 2);
    assert_eq!(
        rule_of(host.keep.agents().deploy(&host.operator, request).await),
        "rolled_back"
    );
}

/// A ceiling and an agent checked against the trust root in force, then waiting for the write
/// lock while a newer root is accepted, are refused under the lock: a key the newer root
/// retired gets nothing in through a check made just before the rotation.
#[tokio::test]
async fn a_write_checked_against_a_root_replaced_while_it_waited_is_refused() {
    let host = Host::new().await;
    let pool = pool(&host).await;
    let mut rotation = pool.begin().await.expect("begin");
    sqlx::query("UPDATE keep_journal_head SET seq = seq WHERE one = 1")
        .execute(&mut *rotation)
        .await
        .expect("the lock");
    // What a rotation's write leaves behind it: the trust root's accepted version raised.
    sqlx::query("UPDATE keep_versions SET version = version + 1 WHERE kind = 'trust_root'")
        .execute(&mut *rotation)
        .await
        .expect("raise");
    let ceiling = {
        let (keep, operator) = (host.keep.clone(), host.operator.clone());
        let signed = host.ceiling("alice", 1);
        tokio::spawn(async move { keep.ceilings().put(&operator, "alice", &signed).await })
    };
    let deploy = {
        let (keep, operator) = (host.keep.clone(), host.operator.clone());
        let request = host.deploy_request(&Host::manifest("helper", 1), 1);
        tokio::spawn(async move { keep.agents().deploy(&operator, request).await })
    };
    // Both check their signatures against the root in force, then wait for the lock.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    rotation.commit().await.expect("commit");
    assert_eq!(rule_of(ceiling.await.unwrap()), "conflict");
    assert_eq!(rule_of(deploy.await.unwrap()), "conflict");
    let stored: Vec<(String,)> =
        sqlx::query_as("SELECT kind FROM keep_documents WHERE kind = 'ceiling'")
            .fetch_all(&pool)
            .await
            .expect("documents");
    assert!(stored.is_empty(), "{stored:?}");
}

#[tokio::test]
async fn a_restored_old_agent_row_is_not_served() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 1),
        )
        .await
        .expect("v1");
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 2), 2),
        )
        .await
        .expect("v2");
    sqlx::query("DELETE FROM keep_agents WHERE name = 'helper' AND version = 2")
        .execute(&pool(&host).await)
        .await
        .expect("delete");
    assert_eq!(
        rule_of(host.keep.agents().get(&host.operator, "helper").await),
        "rolled_back"
    );
    assert!(host.keep.agents().public().await.expect("list").is_empty());
}

#[tokio::test]
async fn devices_enrol_once_by_code_then_only_by_a_device_decision() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let (bob, _) = host.user("bob").await;
    let first = KeyPair::generate(&OsRandom).expect("key");
    let code = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await
        .expect("code");

    // Bob cannot use Alice's code; Alice can, once.
    let refused = host
        .enrol(&bob, &first, "bob", EnrolProof::Code(code.clone()))
        .await;
    assert_eq!(rule_of(refused), "forbidden");
    host.enrol(&alice, &first, "alice", EnrolProof::Code(code.clone()))
        .await
        .expect("enrol");
    let second = KeyPair::generate(&OsRandom).expect("key");
    let reused = host
        .enrol(&alice, &second, "alice", EnrolProof::Code(code))
        .await;
    assert_eq!(rule_of(reused), "forbidden");
    // No fresh code is made while she has a device.
    let fresh = host
        .keep
        .devices()
        .enrol_code(&host.operator, "alice", 600)
        .await;
    assert_eq!(rule_of(fresh), "conflict");

    // An expired code.
    let late = host
        .keep
        .devices()
        .enrol_code(&host.operator, "bob", 60)
        .await
        .expect("code");
    host.advance(61);
    let bobs = KeyPair::generate(&OsRandom).expect("k");
    let expired = host.enrol(&bob, &bobs, "bob", EnrolProof::Code(late)).await;
    assert_eq!(rule_of(expired), "forbidden");

    // A decision signed by the first device enrols the second, once.
    let hashes = BTreeMap::from([("public_key".to_owned(), second.public().sha256())]);
    let key_id = second.key_id();
    let expected = Expected {
        kind: DecisionKind::EnrolDevice,
        subject: &key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user: "alice",
    };
    let now = START + 61;
    let decision = Signed::sign(
        &Decision::new(&OsRandom, &expected, &first, now, 300, false).expect("d"),
        &first,
    )
    .expect("sign");
    host.enrol(
        &alice,
        &second,
        "alice",
        EnrolProof::Decision(decision.clone()),
    )
    .await
    .expect("second device");
    let third = KeyPair::generate(&OsRandom).expect("key");
    let replay = host
        .enrol(&alice, &third, "alice", EnrolProof::Decision(decision))
        .await;
    assert_eq!(rule_of(replay), "decision_refused");

    // A decision made against an older ceiling version is refused once the ceiling moved.
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &host.ceiling("alice", 1))
        .await
        .expect("ceiling");
    let hashes = BTreeMap::from([("public_key".to_owned(), third.public().sha256())]);
    let key_id = third.key_id();
    let stale = Expected {
        kind: DecisionKind::EnrolDevice,
        subject: &key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user: "alice",
    };
    let decision = Signed::sign(
        &Decision::new(&OsRandom, &stale, &first, now, 300, false).expect("d"),
        &first,
    )
    .expect("sign");
    let refused = host
        .enrol(&alice, &third, "alice", EnrolProof::Decision(decision))
        .await;
    assert!(
        refused
            .expect_err("stale")
            .to_string()
            .contains("ceiling version 0")
    );

    // Bob sees none of Alice's devices, and one of hers reads like one that does not exist.
    assert!(
        host.keep
            .devices()
            .list(&bob)
            .await
            .expect("list")
            .is_empty()
    );
    let hers = host
        .keep
        .devices()
        .get(&bob, &first.key_id())
        .await
        .expect_err("hidden")
        .to_string();
    let none = host
        .keep
        .devices()
        .get(&bob, &"0".repeat(32))
        .await
        .expect_err("hidden")
        .to_string();
    assert_eq!(hers, none);

    // A retired device signs nothing.
    host.retire(&alice, &first, &first, "alice")
        .await
        .expect("retire");
    let stale = Expected {
        ceiling_version: 1,
        ..stale
    };
    let decision = Signed::sign(
        &Decision::new(&OsRandom, &stale, &first, now, 300, false).expect("d"),
        &first,
    )
    .expect("sign");
    let refused = host
        .enrol(&alice, &third, "alice", EnrolProof::Decision(decision))
        .await;
    assert_eq!(rule_of(refused), "untrusted_key");
}

#[tokio::test]
async fn the_journal_names_the_first_tampered_entry() {
    let host = Host::new().await;
    for version in 1..=4 {
        host.keep
            .agents()
            .deploy(
                &host.operator,
                host.deploy_request(&Host::manifest("helper", version), version as u8),
            )
            .await
            .expect("deploy");
    }
    let report = host
        .keep
        .journal()
        .verify(&host.operator)
        .await
        .expect("verify");
    assert_eq!((report.entries, report.first_bad.clone()), (6, None));
    let db = pool(&host).await;
    let snapshot: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, detail FROM keep_journal ORDER BY seq")
            .fetch_all(&db)
            .await
            .expect("rows");

    // Edit entry 4's detail.
    sqlx::query("UPDATE keep_journal SET detail = replace(detail, '\"version\":2', '\"version\":9') WHERE seq = 4").execute(&db).await.expect("edit");
    assert_eq!(first_bad(&host).await, Some(4));
    sqlx::query("UPDATE keep_journal SET detail = $1 WHERE seq = 4")
        .bind(&snapshot[3].1)
        .execute(&db)
        .await
        .expect("undo");
    assert_eq!(first_bad(&host).await, None);

    // Reorder: swap entries 3 and 4.
    sqlx::query("UPDATE keep_journal SET seq = 1000000 WHERE seq = 3")
        .execute(&db)
        .await
        .expect("swap");
    sqlx::query("UPDATE keep_journal SET seq = 3 WHERE seq = 4")
        .execute(&db)
        .await
        .expect("swap");
    sqlx::query("UPDATE keep_journal SET seq = 4 WHERE seq = 1000000")
        .execute(&db)
        .await
        .expect("swap");
    assert_eq!(first_bad(&host).await, Some(3));
    sqlx::query("UPDATE keep_journal SET seq = 1000000 WHERE seq = 3")
        .execute(&db)
        .await
        .expect("swap");
    sqlx::query("UPDATE keep_journal SET seq = 3 WHERE seq = 4")
        .execute(&db)
        .await
        .expect("swap");
    sqlx::query("UPDATE keep_journal SET seq = 4 WHERE seq = 1000000")
        .execute(&db)
        .await
        .expect("swap");
    assert_eq!(first_bad(&host).await, None);

    // Insert a copy of entry 2 as entry 7 at the end, then delete it again.
    sqlx::query("INSERT INTO keep_journal SELECT 7, at_ms, actor, user_name, kind, subject, detail, prev_hash, hash FROM keep_journal WHERE seq = 2").execute(&db).await.expect("insert");
    assert_eq!(first_bad(&host).await, Some(7));
    sqlx::query("DELETE FROM keep_journal WHERE seq = 7")
        .execute(&db)
        .await
        .expect("undo");

    // Delete entry 5, then the newest entry.
    sqlx::query("DELETE FROM keep_journal WHERE seq = 6")
        .execute(&db)
        .await
        .expect("delete tail");
    assert_eq!(first_bad(&host).await, Some(5));
    sqlx::query("DELETE FROM keep_journal WHERE seq = 2")
        .execute(&db)
        .await
        .expect("delete");
    assert_eq!(first_bad(&host).await, Some(3));
}

#[tokio::test]
async fn a_user_checks_the_whole_chain_and_learns_only_of_entries_about_them() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let (bob, _) = host.user("bob").await;
    for (who, name) in [(&alice, "github"), (&bob, "mail"), (&alice, "notes")] {
        host.keep.vault().put(who, name, b"v").await.expect("put");
    }
    let alices: Vec<i64> = host
        .keep
        .journal()
        .list(&alice)
        .await
        .expect("journal")
        .iter()
        .map(|entry| entry.seq)
        .collect();
    assert_eq!(
        host.keep.journal().verify(&alice).await.expect("verify"),
        JournalCheckView {
            entries: alices.len(),
            first_bad: None
        }
    );
    let db = pool(&host).await;
    let (bobs_newest,): (i64,) =
        sqlx::query_as("SELECT max(seq) FROM keep_journal WHERE user_name = 'bob'")
            .fetch_one(&db)
            .await
            .expect("bob's entry");
    let alices_newest = alices.iter().copied().max().expect("alice's entries");
    assert!(bobs_newest < alices_newest, "Alice has entries past Bob's");

    // The entry tampered, and what Alice is told of where the chain breaks.
    let cases = [
        (bobs_newest, None, BREAK_NOT_ABOUT_YOU),
        (
            alices_newest,
            Some(alices_newest),
            "its content was changed after it was written",
        ),
    ];
    for (tampered, seq, reason) in cases {
        let (subject,): (String,) =
            sqlx::query_as("SELECT subject FROM keep_journal WHERE seq = $1")
                .bind(tampered)
                .fetch_one(&db)
                .await
                .expect("subject");
        sqlx::query("UPDATE keep_journal SET subject = 'x' WHERE seq = $1")
            .bind(tampered)
            .execute(&db)
            .await
            .expect("edit");
        if tampered == bobs_newest {
            // Asked again at once, with the head unmoved, the last answer stands: a person's
            // check reads the whole journal at most once per USER_CHECK_REUSE_S seconds.
            let again = host.keep.journal().verify(&alice).await.expect("verify");
            assert_eq!(again.first_bad, None, "the last answer is reused");
        }
        host.advance(USER_CHECK_REUSE_S);
        assert_eq!(
            host.keep.journal().verify(&alice).await.expect("verify"),
            JournalCheckView {
                entries: alices.iter().filter(|seq| **seq <= tampered).count(),
                first_bad: Some(BadEntryView {
                    seq,
                    reason: reason.to_owned()
                }),
            },
            "entry {tampered} tampered"
        );
        // The operator is told where, whoever the entry is about.
        assert_eq!(first_bad(&host).await, Some(tampered));
        sqlx::query("UPDATE keep_journal SET subject = $1 WHERE seq = $2")
            .bind(&subject)
            .bind(tampered)
            .execute(&db)
            .await
            .expect("undo");
        host.advance(USER_CHECK_REUSE_S);
    }
    assert_eq!(
        host.keep
            .journal()
            .verify(&alice)
            .await
            .expect("verify")
            .first_bad,
        None
    );
}

#[tokio::test]
async fn a_vault_canary_is_nowhere_but_sealed() {
    const CANARY: &str = "canary-7f3e9a1c-d00d-4b1e";
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    host.keep
        .vault()
        .put(&alice, "github", CANARY.as_bytes())
        .await
        .expect("put");
    host.keep
        .vault()
        .put(&host.operator, "mail_key", CANARY.as_bytes())
        .await
        .expect("put");
    assert_eq!(
        host.keep
            .vault()
            .open("user:alice", "github")
            .await
            .expect("open")
            .expose(),
        CANARY.as_bytes()
    );
    let views = format!(
        "{:?} {:?}",
        host.keep.vault().list(&alice).await.expect("list"),
        host.keep
            .journal()
            .list(&host.operator)
            .await
            .expect("journal")
    );
    assert!(!views.contains(CANARY));
    assert!(views.contains("github"));
    // Every byte of the database: its files, the write-ahead log and shared memory included
    // (SQLite), or its whole dump (PostgreSQL).
    let stored = super::support::database_bytes(&host);
    for (name, bytes) in &stored {
        assert!(
            !bytes.windows(CANARY.len()).any(|w| w == CANARY.as_bytes()),
            "{name}"
        );
    }
    let scanned: usize = stored.iter().map(|(_, bytes)| bytes.len()).sum();
    let wanted = if host.database.is_some() { 1 } else { 2 };
    assert!(
        stored.len() >= wanted && scanned > 4096,
        "the database was scanned ({} parts, {scanned} bytes)",
        stored.len()
    );
    // The user cannot open or list the operator's entry.
    assert!(
        host.keep
            .vault()
            .list(&alice)
            .await
            .expect("list")
            .iter()
            .all(|e| e.name != "mail_key")
    );
    assert_eq!(
        rule_of(host.keep.vault().delete(&alice, "mail_key").await),
        "not_found"
    );
}

async fn first_bad(host: &Host) -> Option<i64> {
    host.keep
        .journal()
        .verify(&host.operator)
        .await
        .expect("verify")
        .first_bad
        .and_then(|bad| bad.seq)
}

/// A token revoked after its request was let in (on this host or another sharing the
/// database) authorises nothing that commits after the revoke: the write is refused under the
/// write lock, and nothing of it is kept or journaled. Revoking one's own token still works.
#[tokio::test]
async fn a_token_revoked_after_its_request_was_let_in_writes_nothing() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let token_id = match &alice {
        imurun_keep::service::Identity::User { token_id, .. } => token_id.clone(),
        other => panic!("a user's identity: {other:?}"),
    };
    let before = host
        .keep
        .journal()
        .list(&host.operator)
        .await
        .expect("journal")
        .len();
    host.keep
        .tokens()
        .revoke(&host.operator, &token_id)
        .await
        .expect("revoke");
    let refused = host
        .keep
        .vault()
        .put(&alice, "late", b"written after the revoke")
        .await;
    assert!(
        matches!(refused, Err(imurun_keep::KeepError::Unauthorized)),
        "{refused:?}"
    );
    let journal = host
        .keep
        .journal()
        .list(&host.operator)
        .await
        .expect("journal");
    assert_eq!(journal.len(), before + 1, "only the revoke is journaled");
    assert!(host.keep.vault().list(&host.operator).await.is_ok());
    // The operator may revoke the very token it uses.
    let second = host
        .keep
        .tokens()
        .create(&host.operator, &imurun_keep::service::TokenRole::Operator)
        .await
        .expect("a second operator token");
    let second_identity = host
        .keep
        .tokens()
        .authenticate(&second.token)
        .await
        .expect("auth");
    host.keep
        .tokens()
        .revoke(&second_identity, &second.id)
        .await
        .expect("an operator revokes its own token");
}
