//! A second attacker's run on Keep's rules, after the first run's fixes: each `attack2_` test is
//! named after what broke and asserts the secure behaviour; each `holds2_` test checks what held.

use imurun_keep::random::OsRandom;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use imurun_keep::canonical::canonicalize;
use imurun_keep::documents::{
    CEILING_TYPE, KeyRole, POLICY_TYPE, Signed, TRUST_ROOT_TYPE, TrustRoot, TrustedKey,
};
use imurun_keep::journal::JournalEntry;
use imurun_keep::keys::{KeyPair, sha256_hex};
use imurun_keep::service::EnrolProof;
use imurun_store::Store;
use serde_json::{Value, json};

use super::support::{Host, START, listed, pool, possession};

/// Rotates to version `version` with `keys`, signed by `by`.
async fn rotate(host: &Host, version: i64, keys: Vec<TrustedKey>, by: &KeyPair) {
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version,
        expires_at: START + 10_000_000,
        keys,
    };
    host.keep
        .trust_roots()
        .rotate(&host.operator, &Signed::sign(&root, by).expect("sign"))
        .await
        .expect("rotation accepted");
}

fn wide_ceiling(user: &str, version: i64, expires_at: i64) -> Value {
    json!({
        "type": CEILING_TYPE, "user": user, "version": version, "expires_at": expires_at,
        "egress": [{"scheme": "https", "host": "*.evil.example", "port": 443,
                    "methods": ["POST"], "path_prefix": "/"}],
        "credentials": [], "memory": "write", "model_socket": true,
        "resources": {"memory_mb": 4096, "cpu_ms": 600000, "timeout_ms": 3600000}
    })
}

/// BREAK (trust, retired key): the recovery docs say "a policy key leaked: retire it". A
/// retired key's signature is "refused for anything new", yet `Trust::verify_stored`
/// (trust.rs:140) accepts any listed policy key, retired or not, for any stored document. Whoever
/// holds the leaked key and can write the database writes a brand-new ceiling (at the current
/// version, so no high-water mark is touched) and it is served as in force.
#[tokio::test]
async fn attack2_leaked_retired_key_forges_a_stored_ceiling() {
    let host = Host::new().await;
    let leaked = &host.policy; // P1, leaks
    let fresh = KeyPair::generate(&OsRandom).expect("key");
    rotate(
        &host,
        2,
        vec![
            listed(leaked, KeyRole::Policy, true),
            listed(&fresh, KeyRole::Policy, false),
            listed(&host.signer, KeyRole::Signer, false),
        ],
        leaked,
    )
    .await;
    // The operator sets Alice's ceiling with the new key.
    let narrow = Signed::sign(&host.ceiling("alice", 1).signed, &fresh).expect("sign");
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &narrow)
        .await
        .expect("ceiling");
    // The retired key is refused for anything new through the API (this holds):
    let forged = Signed::sign(&wide_ceiling("alice", 2, START + 86_400), leaked).expect("sign");
    assert!(
        host.keep
            .ceilings()
            .put(&host.operator, "alice", &forged)
            .await
            .is_err()
    );
    // ...but written straight into the row, at the version in force, it is served.
    let forged = Signed::sign(&wide_ceiling("alice", 1, START + 86_400), leaked).expect("sign");
    sqlx::query(
        "UPDATE keep_documents SET envelope = $1 WHERE kind = 'ceiling' AND subject = 'alice'",
    )
    .bind(serde_json::to_string(&forged).expect("json"))
    .execute(&pool(&host).await)
    .await
    .expect("edit");
    let view = host
        .keep
        .ceilings()
        .in_force("alice")
        .await
        .expect("ceiling");
    assert!(
        !view.ceiling.model_socket
            && view
                .ceiling
                .egress
                .iter()
                .all(|r| r.host != "*.evil.example"),
        "a ceiling signed after retirement by the retired (leaked) key is in force: {view:?}"
    );
}

/// BREAK (agents, retired key): the same for an agent: a policy forged with the retired key at the
/// agent's current version and bundle hash replaces the manifest served (model socket, egress
/// to anywhere). `verified_agent` (deploy.rs:204-206) takes any listed policy key.
#[tokio::test]
async fn attack2_leaked_retired_key_forges_an_agents_manifest() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 1),
        )
        .await
        .expect("deploy");
    let fresh = KeyPair::generate(&OsRandom).expect("key");
    rotate(
        &host,
        2,
        vec![
            listed(&host.policy, KeyRole::Policy, true),
            listed(&fresh, KeyRole::Policy, false),
            listed(&host.signer, KeyRole::Signer, false),
        ],
        &host.policy,
    )
    .await;
    let mut manifest = Host::manifest("helper", 1);
    manifest["model_socket"] = json!(true);
    manifest["memory"] = json!("write");
    manifest["egress"] = json!({"mode": "allow", "rules": [{"scheme": "https", "host": "*.evil.example",
        "port": 443, "methods": ["POST"], "path_prefix": "/"}]});
    let forged = host.policy_for(&manifest, &Host::bundle(1), &host.policy);
    sqlx::query("UPDATE keep_agents SET policy = $1 WHERE name = 'helper'")
        .bind(serde_json::to_string(&forged).expect("json"))
        .execute(&pool(&host).await)
        .await
        .expect("edit");
    if let Ok(view) = host.keep.agents().get(&host.operator, "helper").await {
        assert_eq!(
            view.manifest["model_socket"],
            json!(false),
            "a policy forged with the retired key after its retirement is served"
        );
    }
}

/// BREAK (stored documents not bound to what was accepted): a ceiling the host REFUSED (journaled
/// as a refusal) but that carries a valid signature at the current version can be put into the
/// row and is served. Nothing ties the row to the `ceiling_sha256` the journal recorded when the
/// ceiling was accepted (ceilings.rs:100-120).
#[tokio::test]
async fn attack2_a_refused_ceiling_at_the_current_version_is_served() {
    let host = Host::new().await;
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &host.ceiling("alice", 1))
        .await
        .expect("ceiling");
    let draft =
        Signed::sign(&wide_ceiling("alice", 1, START + 86_400), &host.policy).expect("sign");
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &draft)
        .await
        .expect_err("same version: refused (rolled_back)");
    sqlx::query(
        "UPDATE keep_documents SET envelope = $1 WHERE kind = 'ceiling' AND subject = 'alice'",
    )
    .bind(serde_json::to_string(&draft).expect("json"))
    .execute(&pool(&host).await)
    .await
    .expect("edit");
    let view = host
        .keep
        .ceilings()
        .in_force("alice")
        .await
        .expect("ceiling");
    assert!(
        !view.ceiling.model_socket,
        "a ceiling the host refused is served as in force: {view:?}"
    );
}

/// BREAK (docs/keep/packs.md: "A stored agent whose version is below its high-water mark (newer
/// rows deleted, an old database restored) is refused (rolled_back)"). The high-water marks live
/// in the same database (keep_versions), so restoring an old database brings them back too and
/// the old agent version is served as in force.
#[tokio::test]
async fn attack2_an_old_database_restored_serves_the_old_agent() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 1),
        )
        .await
        .expect("deploy 1");
    let (old, _old_guard) = super::support::backup(&host).await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 2), 2),
        )
        .await
        .expect("deploy 2");
    // The operator (or an attacker with the disk) restores yesterday's backup.
    let store = Store::open_url(&old).await.expect("old store");
    let clock = Arc::new(super::support::TestClock(Arc::new(AtomicI64::new(START))));
    let keep = imurun_keep::init::open(&host.dir.path().join("keep"), store, clock)
        .await
        .expect("the host starts on the restored database");
    let served = keep.agents().get(&host.operator, "helper").await;
    assert!(
        served.is_err(),
        "the old database's helper@1 is served after helper@2 was deployed: {:?}",
        served.map(|v| v.version)
    );
}

/// BREAK (freeze protection): docs/keep/trust.md: policies carry "an `expires_at` after which
/// they are refused (TUF's rollback and freeze protection)". A stored ceiling's expiry is checked
/// when read; an agent's policy expiry never is (`verified_agent`, deploy.rs:189-232): the agent
/// stays in force, and listed to every user, long after its policy expired.
#[tokio::test]
async fn attack2_an_agent_is_served_after_its_policy_expired() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 1),
        )
        .await
        .expect("deploy"); // policy expires at START + 86_400
    host.advance(30 * 86_400);
    let listed = host.keep.agents().public().await.expect("agents");
    assert!(
        listed.is_empty()
            && host
                .keep
                .agents()
                .get(&host.operator, "helper")
                .await
                .is_err(),
        "an agent whose policy expired 29 days ago is still in force and offered to users"
    );
}

/// BREAK (freeze protection of the root): once the trust root has expired the host refuses new
/// ceilings (`trust()`), but every stored ceiling and agent is still served under the expired
/// root (`trust_even_expired`, ceilings.rs:104, deploy.rs:204). trust.rs's contract: "Every
/// document has an `expires_at`; past it, it is refused." An expired root should only verify
/// its successor.
#[tokio::test]
async fn attack2_an_expired_root_still_vouches_for_stored_ceilings() {
    let host = Host::new().await;
    let ceiling = Signed::sign(
        &wide_ceiling("alice", 1, START + 5 * 365 * 86_400),
        &host.policy,
    )
    .expect("sign");
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &ceiling)
        .await
        .expect("ceiling");
    let root = host
        .keep
        .trust_roots()
        .view(&host.operator)
        .await
        .expect("root");
    host.now.store(
        root.expires_at + 86_400,
        std::sync::atomic::Ordering::SeqCst,
    );
    assert!(
        host.keep.trust_roots().view(&host.operator).await.is_err(),
        "root expired"
    );
    let view = host
        .keep
        .ceilings()
        .in_force("alice")
        .await
        .expect("ceiling");
    assert!(
        view.empty_because.is_some(),
        "a ceiling is in force under an expired trust root: {view:?}"
    );
}

/// BREAK (journal): an entry inserted with `seq` 0 or below is never read by `verify_journal`
/// (pages start at `seq > 0`, journal_access.rs:84 / store keep.rs:375) yet `journal()` lists it
/// and `journal_entry()` serves it: a forged entry about Alice passes "journal verify". The
/// column is `seq BIGINT PRIMARY KEY` with no CHECK (0004_keep.sql:98).
#[tokio::test]
async fn attack2_an_entry_at_seq_zero_or_below_passes_verify() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let pool = pool(&host).await;
    let forge = "INSERT INTO keep_journal (seq, at_ms, actor, user_name, kind, subject, detail, \
         prev_hash, hash) VALUES ($1, 1, 'operator', 'alice', 'vault', 'vault:github', \
         '{\"action\":\"opened\",\"name\":\"github\"}', 'x', 'y')";
    // The schema refuses such a row...
    assert!(sqlx::query(forge).bind(0_i64).execute(&pool).await.is_err());
    // ...but someone who holds the database can turn the check off; the chain check still
    // sees it.
    use sqlx::Connection;
    let mut connection = sqlx::AnyConnection::connect(&host.url)
        .await
        .expect("connection");
    let off = match super::BACKEND {
        imurun_store::Backend::Sqlite => "PRAGMA ignore_check_constraints = ON",
        imurun_store::Backend::Postgres => {
            "ALTER TABLE keep_journal DROP CONSTRAINT keep_journal_seq_check"
        }
    };
    sqlx::query(off)
        .execute(&mut connection)
        .await
        .expect("the check turned off");
    for seq in [0_i64, -7] {
        sqlx::query(forge)
            .bind(seq)
            .execute(&mut connection)
            .await
            .expect("insert");
    }
    let report = host
        .keep
        .journal()
        .verify(&host.operator)
        .await
        .expect("verify");
    let listed: Vec<i64> = host
        .keep
        .journal()
        .list(&alice)
        .await
        .expect("journal")
        .iter()
        .map(|e| e.seq)
        .collect();
    assert!(listed.contains(&0) && listed.contains(&-7), "{listed:?}");
    assert!(host.keep.journal().entry(&alice, -7).await.is_ok());
    assert!(
        report.first_bad.is_some(),
        "two forged entries shown to Alice, and the journal verifies as intact ({} entries)",
        report.entries
    );
}

/// BREAK (agents, low): `verified_agent` serves `owner`, `bundle_size` and `signer_key_id`
/// from columns nothing checks (deploy.rs:218-224): the bundle signature is not verified again
/// and the bundle's bytes are never compared with `bundle_sha256`. Latent: when a later part runs
/// the stored bundle, swapped bytes run under the signed policy.
#[tokio::test]
async fn attack2_unchecked_agent_columns_are_served() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("helper", 1), 1),
        )
        .await
        .expect("deploy");
    let fake_signer = KeyPair::generate(&OsRandom).expect("key");
    let evil = Host::bundle(9);
    sqlx::query(
        "UPDATE keep_agents SET owner = 'user:mallory', bundle_size = $1, bundle = $2, \
         bundle_signature = $3 WHERE name = 'helper'",
    )
    .bind(evil.len() as i64 + 1)
    .bind(&evil)
    .bind(json!({"key_id": fake_signer.key_id(), "sig": "00".repeat(64)}).to_string())
    .execute(&pool(&host).await)
    .await
    .expect("edit");
    if let Ok(view) = host.keep.agents().get(&host.operator, "helper").await {
        assert!(
            view.owner == "operator" && view.signer_key_id == host.signer.key_id(),
            "edited owner / signer / bundle served: owner {} signer {} size {}",
            view.owner,
            view.signer_key_id,
            view.bundle_size
        );
    }
}

/// BREAK (availability): a rotation that drops a retired policy key (clean-up; nothing refuses
/// it) makes every agent that key's policy deployed fail `verify_stored`, and `agents()`
/// (deploy.rs:160-162) propagates the first failure with `?`: `GET /v1/agents/...` for the
/// operator fails as a whole, hiding the agents that are fine. Ceilings it signed silently fall
/// to the empty ceiling.
#[tokio::test]
async fn attack2_dropping_a_retired_key_breaks_the_operators_agent_list() {
    let host = Host::new().await;
    host.keep
        .agents()
        .deploy(
            &host.operator,
            host.deploy_request(&Host::manifest("old", 1), 1),
        )
        .await
        .expect("deploy");
    let p2 = KeyPair::generate(&OsRandom).expect("key");
    rotate(
        &host,
        2,
        vec![
            listed(&host.policy, KeyRole::Policy, true),
            listed(&p2, KeyRole::Policy, false),
            listed(&host.signer, KeyRole::Signer, false),
        ],
        &host.policy,
    )
    .await;
    let mut request = host.deploy_request(&Host::manifest("fresh", 1), 2);
    request.policy = host.policy_for(&Host::manifest("fresh", 1), &request.bundle, &p2);
    host.keep
        .agents()
        .deploy(&host.operator, request)
        .await
        .expect("deploy fresh");
    // Clean-up rotation: the retired key is dropped. Accepted without a word.
    rotate(
        &host,
        3,
        vec![
            listed(&p2, KeyRole::Policy, false),
            listed(&host.signer, KeyRole::Signer, false),
        ],
        &p2,
    )
    .await;
    let agents = host.keep.agents().list(&host.operator).await;
    assert!(
        agents.is_ok(),
        "the operator's agent list fails as a whole: {:?}",
        agents.err()
    );
}

// ---------------------------------------------------------------- held

fn chain_row(seq: i64, prev: &str) -> JournalEntry {
    let mut entry = JournalEntry {
        seq,
        at_ms: START * 1000 + seq,
        actor: "user:alice".into(),
        user: Some("alice".into()),
        kind: "vault".into(),
        subject: "vault:k".into(),
        detail: json!({"name": "k", "action": "replace"}),
        prev_hash: prev.to_owned(),
        hash: String::new(),
    };
    entry.hash = entry.compute_hash().expect("hash");
    entry
}

async fn extend_chain(pool: &sqlx::AnyPool, to: i64) {
    let (mut seq, mut hash): (i64, String) =
        sqlx::query_as("SELECT seq, hash FROM keep_journal_head WHERE one = 1")
            .fetch_one(pool)
            .await
            .expect("head");
    let mut tx = pool.begin().await.expect("tx");
    while seq < to {
        let entry = chain_row(seq + 1, &hash);
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
}

/// HELD: tampering at the 1000/1001 page boundary, a gap across pages, a huge seq after the
/// head, and an edited head are all named.
#[tokio::test]
async fn holds2_page_boundary_tampering_is_found() {
    for case in 0..6 {
        let host = Host::new().await;
        let pool = pool(&host).await;
        extend_chain(&pool, 2_100).await;
        let sql = match case {
            0 => "UPDATE keep_journal SET subject = 'x' WHERE seq = 1000",
            1 => "UPDATE keep_journal SET subject = 'x' WHERE seq = 1001",
            2 => "DELETE FROM keep_journal WHERE seq = 1001",
            3 => "DELETE FROM keep_journal WHERE seq BETWEEN 1000 AND 2000",
            4 => {
                "INSERT INTO keep_journal SELECT 9000000000000000000, at_ms, actor, user_name, kind, subject, detail, hash, hash FROM keep_journal WHERE seq = 2100"
            }
            _ => "UPDATE keep_journal_head SET hash = 'ab' WHERE one = 1",
        };
        sqlx::query(sql).execute(&pool).await.expect("tamper");
        let report = host
            .keep
            .journal()
            .verify(&host.operator)
            .await
            .expect("verify");
        assert!(report.first_bad.is_some(), "case {case} not found");
    }
}

/// HELD: a possession proof is bound to its user and key; the same key cannot be enrolled for a
/// second user; a retired key cannot come back.
#[tokio::test]
async fn holds2_possession_is_bound_and_keys_are_single_owner() {
    let host = Host::new().await;
    let (alice, _) = host.user("alice").await;
    let (bob, _) = host.user("bob").await;
    let key = KeyPair::generate(&OsRandom).expect("key");
    let code = |user: &'static str| {
        let keep = host.keep.clone();
        let op = host.operator.clone();
        async move {
            keep.devices()
                .enrol_code(&op, user, 600)
                .await
                .expect("code")
        }
    };
    // Alice's proof replayed by Bob.
    assert!(
        host.keep
            .devices()
            .enrol(
                &bob,
                &key.public().to_hex(),
                "x",
                &possession(&key, "alice"),
                EnrolProof::Code(code("bob").await)
            )
            .await
            .is_err()
    );
    host.keep
        .devices()
        .enrol(
            &alice,
            &key.public().to_hex(),
            "x",
            &possession(&key, "alice"),
            EnrolProof::Code(code("alice").await),
        )
        .await
        .expect("alice enrols");
    // Bob holding the same key (shared), proving it for himself: refused.
    assert!(
        host.keep
            .devices()
            .enrol(
                &bob,
                &key.public().to_hex(),
                "x",
                &possession(&key, "bob"),
                EnrolProof::Code(code("bob").await)
            )
            .await
            .is_err()
    );
    host.retire(&alice, &key, &key, "alice")
        .await
        .expect("retire");
    assert!(
        host.keep
            .devices()
            .enrol(
                &alice,
                &key.public().to_hex(),
                "x",
                &possession(&key, "alice"),
                EnrolProof::Code(code("alice").await)
            )
            .await
            .is_err(),
        "a retired key enrolled again"
    );
    // Uppercase hex of the same key: same id, refused.
    assert!(
        host.keep
            .devices()
            .enrol(
                &alice,
                &key.public().to_hex().to_uppercase(),
                "x",
                &possession(&key, "alice"),
                EnrolProof::Code(code("alice").await)
            )
            .await
            .is_err()
    );
    let _ = (POLICY_TYPE, sha256_hex(b""));
}

/// The operator's `tool.propose` switch, rolled back or removed in the database, reads as off
/// on a host that shares the database and only ever read it (its own mark holds the version it
/// saw), never back on.
#[tokio::test]
async fn a_tool_propose_switch_rolled_back_in_the_database_stays_off_on_a_host_that_read_it() {
    let host = Host::new().await;
    host.keep
        .host_settings()
        .set_tool_propose(&host.operator, true)
        .await
        .expect("on");
    let pool = pool(&host).await;
    let on: (String, String) =
        sqlx::query_as("SELECT envelope, seal FROM keep_documents WHERE kind = 'host_setting'")
            .fetch_one(&pool)
            .await
            .expect("the setting's row");
    host.keep
        .host_settings()
        .set_tool_propose(&host.operator, false)
        .await
        .expect("off");
    // A second host: the same keys, a Keep folder of its own with no marks in it.
    let other_dir = tempfile::tempdir().expect("temp dir");
    let other_keep = other_dir.path().join("keep");
    std::fs::create_dir(&other_keep).expect("keep folder");
    for entry in std::fs::read_dir(host.dir.path().join("keep")).expect("keep folder") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|extension| extension == "key")
            || path
                .file_name()
                .is_some_and(|name| name == "trust-root.json")
        {
            std::fs::copy(&path, other_keep.join(path.file_name().expect("name"))).expect("copy");
        }
    }
    let store = Store::open_url(&host.url).await.expect("store");
    let other = imurun_keep::init::open(
        &other_keep,
        store,
        std::sync::Arc::new(imurun_core::SystemClock),
    )
    .await
    .expect("open");
    let operator = imurun_keep::service::Identity::local_operator();
    let read = other
        .host_settings()
        .tool_propose(&operator)
        .await
        .expect("read");
    assert_eq!((read.enabled, read.version), (false, 2));
    // Rolled back to the genuine, sealed version 1 (`enabled: true`), marks and all.
    sqlx::query(
        "UPDATE keep_documents SET version = 1, envelope = $1, seal = $2 \
         WHERE kind = 'host_setting'",
    )
    .bind(&on.0)
    .bind(&on.1)
    .execute(&pool)
    .await
    .expect("roll back");
    sqlx::query("UPDATE keep_versions SET version = 1 WHERE kind = 'host_setting'")
        .execute(&pool)
        .await
        .expect("roll back the mark");
    let read = other
        .host_settings()
        .tool_propose(&operator)
        .await
        .expect("read");
    assert!(!read.enabled, "{read:?}");
    assert!(read.refused.is_some(), "{read:?}");
    // Removed, marks and all.
    sqlx::query("DELETE FROM keep_documents WHERE kind = 'host_setting'")
        .execute(&pool)
        .await
        .expect("delete");
    sqlx::query("DELETE FROM keep_versions WHERE kind = 'host_setting'")
        .execute(&pool)
        .await
        .expect("delete the mark");
    for keep in [&other, &host.keep] {
        let read = keep
            .host_settings()
            .tool_propose(&operator)
            .await
            .expect("read");
        assert!(!read.enabled, "{read:?}");
    }
}

/// A refused signed document's entry names the version and the key it came with, and says
/// whether the signature held: a rolled-back ceiling by the policy key is verified, a forged one
/// by an unknown key is only claimed; a deploy likewise.
#[tokio::test]
async fn holds_a_refused_document_names_its_version_and_key_and_whether_they_held() {
    let host = Host::new().await;
    host.keep
        .ceilings()
        .put(&host.operator, "alice", &host.ceiling("alice", 2))
        .await
        .expect("ceiling 2");
    let attempt = |entry: imurun_keep::service::JournalView| entry.detail["attempt"].clone();

    let old = host.ceiling("alice", 1);
    let refused = host
        .keep
        .ceilings()
        .put(&host.operator, "alice", &old)
        .await;
    assert!(refused.is_err_and(|error| error.rule() == "rolled_back"));
    assert_eq!(
        attempt(host.last_entry().await),
        json!({"version": 1, "key_id": host.policy.key_id(), "verified": true})
    );

    let stranger = KeyPair::generate(&OsRandom).expect("key");
    let mut document = old.signed.clone();
    document["version"] = json!(3);
    let forged = Signed::sign(&document, &stranger).expect("sign");
    let refused = host
        .keep
        .ceilings()
        .put(&host.operator, "alice", &forged)
        .await;
    assert!(refused.is_err());
    assert_eq!(
        attempt(host.last_entry().await),
        json!({"version": 3, "key_id": stranger.key_id(), "verified": false})
    );

    let manifest = Host::manifest("helper", 1);
    let mut deploy = host.deploy_request(&manifest, 1);
    deploy.policy = host.policy_for(&manifest, &deploy.bundle, &stranger);
    let refused = host.keep.agents().deploy(&host.operator, deploy).await;
    assert!(refused.is_err_and(|error| error.rule() == "untrusted_key"));
    assert_eq!(
        attempt(host.last_entry().await),
        json!({"version": 1, "key_id": stranger.key_id(), "verified": false})
    );
}
