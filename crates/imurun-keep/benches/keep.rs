//! Keep's costs that a person waits on: verifying a pack (the signer's signature over the
//! SHA-256 of a 1 MB bundle, and the policy's signature over its canonical JSON), verifying a
//! device-signed decision, and appending to the journal in a database with `synchronous=FULL`
//! (one transaction and one fsync per entry). Baselines in the same run: hashing the 1 MB bundle
//! alone, and an empty write transaction.
//!
//! `cargo bench --workspace --bench keep`

use imurun_keep::random::OsRandom;
use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use imurun_keep::decision::{Decision, DecisionKind, DeviceKey, Expected, verify_decision};
use imurun_keep::documents::{
    KeyRole, POLICY_TYPE, Signed, TRUST_ROOT_TYPE, TrustRoot, TrustedKey,
};
use imurun_keep::journal_detail::SessionDetail;
use imurun_keep::keys::{KeyPair, sha256_hex};
use imurun_keep::service::{Identity, append};
use imurun_keep::trust::{Trust, sign_bundle};
use imurun_store::Store;
use serde_json::json;

const NOW: i64 = 1_800_000_000;

fn listed(pair: &KeyPair, role: KeyRole) -> TrustedKey {
    TrustedKey {
        key_id: pair.key_id(),
        public_key: pair.public().to_hex(),
        role,
        retired: false,
    }
}

fn pack(c: &mut Criterion) {
    let policy_key = KeyPair::from_seed(&[1; 32]);
    let signer = KeyPair::from_seed(&[2; 32]);
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version: 1,
        expires_at: NOW + 1_000,
        keys: vec![
            listed(&policy_key, KeyRole::Policy),
            listed(&signer, KeyRole::Signer),
        ],
    };
    let trust =
        Trust::install(&Signed::sign(&root, &policy_key).expect("sign"), NOW).expect("trust");
    let bundle: Vec<u8> = (0..1_000_000_u32).map(|i| (i % 251) as u8).collect();
    let signature = sign_bundle(&bundle, &signer);
    let policy = Signed::sign(&json!({
        "type": POLICY_TYPE, "agent": "helper", "version": 1, "expires_at": NOW + 60,
        "bundle_sha256": sha256_hex(&bundle),
        "manifest": {"name": "helper", "version": 1,
            "egress": {"mode": "allow", "rules": [{"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/v1"}]},
            "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000}, "approval_timeout_s": 30}
    }), &policy_key).expect("sign");
    let mut group = c.benchmark_group("pack");
    group.bench_function("sha256 of 1 MB (baseline)", |b| {
        b.iter(|| sha256_hex(&bundle))
    });
    group.bench_function("verify bundle 1 MB + policy", |b| {
        b.iter(|| {
            trust.verify_bundle(&bundle, &signature).expect("bundle");
            trust.verify_policy(&policy, NOW).expect("policy")
        })
    });
    group.finish();
}

fn decision(c: &mut Criterion) {
    let device = KeyPair::from_seed(&[3; 32]);
    let registered = DeviceKey {
        key_id: device.key_id(),
        public_key: device.public(),
        user: "alice".into(),
        retired: false,
    };
    let hashes = BTreeMap::from([
        ("bundle".to_owned(), sha256_hex(b"bundle")),
        ("manifest".to_owned(), sha256_hex(b"manifest")),
    ]);
    let expected = Expected {
        kind: DecisionKind::ApproveProposal,
        subject: "prop_1",
        hashes: &hashes,
        ceiling_version: 3,
        policy_version: 2,
        user: "alice",
    };
    let envelope = Signed::sign(
        &Decision::new(&OsRandom, &expected, &device, NOW, 300, false).expect("decision"),
        &device,
    )
    .expect("sign");
    c.bench_function("decision/verify", |b| {
        b.iter(|| {
            verify_decision(&envelope, &expected, |_| Some(registered.clone()), NOW).expect("valid")
        })
    });
}

fn journal(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let folder = tempfile::tempdir().expect("temp dir");
    let store = runtime
        .block_on(Store::open(folder.path().join("bench.db")))
        .expect("store");
    let operator = Identity::local_operator();
    let mut group = c.benchmark_group("journal (synchronous=FULL)");
    group.bench_function("empty write transaction (baseline)", |b| {
        b.iter(|| {
            runtime.block_on(async {
                store
                    .keep_begin()
                    .await
                    .expect("begin")
                    .commit()
                    .await
                    .expect("commit")
            })
        })
    });
    group.bench_function("append one entry", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut tx = store.keep_begin().await.expect("begin");
                let detail = SessionDetail::Start {
                    agent: "helper".into(),
                    version: 1,
                    bundle_sha256: sha256_hex(b"x"),
                };
                append(&mut tx, &operator, Some("alice"), "session:ks-1", detail)
                    .await
                    .expect("append");
                tx.commit().await.expect("commit");
            })
        })
    });
    group.finish();
}

criterion_group!(benches, pack, decision, journal);
criterion_main!(benches);
