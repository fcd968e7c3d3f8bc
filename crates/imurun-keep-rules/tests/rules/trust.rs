//! Trust roots, rotation, retirement, expiry and rollback; policies, ceilings and bundles.

use imurun_keep_rules::RuleError;
use imurun_keep_rules::documents::{
    CEILING_TYPE, KeyRole, POLICY_TYPE, Signed, TRUST_ROOT_TYPE, TrustRoot, TrustedKey,
};
use imurun_keep_rules::keys::{KeyPair, sha256_hex};
use imurun_keep_rules::trust::{Trust, sign_bundle};
use serde_json::{Value, json};

const NOW: i64 = 1_800_000_000;

fn key(seed: u8) -> KeyPair {
    KeyPair::from_seed(&[seed; 32])
}

fn root(version: i64, keys: Vec<TrustedKey>) -> TrustRoot {
    TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version,
        expires_at: NOW + 1_000,
        keys,
    }
}

/// Root version 1: policy key 1, signer key 2.
fn first() -> Trust {
    let document = root(
        1,
        vec![
            TrustedKey::listing(&key(1), KeyRole::Policy, false),
            TrustedKey::listing(&key(2), KeyRole::Signer, false),
        ],
    );
    Trust::install(&Signed::sign(&document, &key(1)).expect("sign"), NOW).expect("install")
}

fn policy(version: i64, expires_at: i64, bundle: &[u8]) -> Value {
    json!({
        "type": POLICY_TYPE,
        "agent": "helper",
        "version": version,
        "expires_at": expires_at,
        "bundle_sha256": sha256_hex(bundle),
        "manifest": {
            "name": "helper", "version": version,
            "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000},
            "approval_timeout_s": 30
        }
    })
}

fn refused(result: Result<impl std::fmt::Debug, RuleError>, want: &str) {
    let error = result.expect_err(want).to_string();
    assert!(error.contains(want), "got {error:?}, want {want:?}");
}

#[test]
fn policies_need_an_active_policy_key_and_time_left() {
    let trust = first();
    let bundle = b"\0asm bundle";
    let good = Signed::sign(&policy(1, NOW + 60, bundle), &key(1)).expect("sign");
    let (accepted, manifest) = trust.verify_policy(&good, NOW).expect("valid");
    assert_eq!((accepted.version, manifest.name.as_str()), (1, "helper"));

    let unsigned_key = Signed::sign(&policy(1, NOW + 60, bundle), &key(9)).expect("sign");
    refused(
        trust.verify_policy(&unsigned_key, NOW),
        "not in trust root version 1",
    );
    let signer_key = Signed::sign(&policy(1, NOW + 60, bundle), &key(2)).expect("sign");
    refused(trust.verify_policy(&signer_key, NOW), "needs a Policy key");
    let expired = Signed::sign(&policy(1, NOW, bundle), &key(1)).expect("sign");
    refused(trust.verify_policy(&expired, NOW), "expired at");

    let mut flipped = good.clone();
    flipped.signed["expires_at"] = json!(NOW + 61);
    refused(trust.verify_policy(&flipped, NOW), "does not match");
    let mut retyped = good.clone();
    retyped.signed["type"] = json!(CEILING_TYPE);
    refused(trust.verify_policy(&retyped, NOW), "not \"imurun.policy\"");
}

#[test]
fn bundles_need_an_active_signer_key_over_their_bytes() {
    let trust = first();
    let bundle = vec![7_u8; 1024];
    let signature = sign_bundle(&bundle, &key(2));
    assert_eq!(
        trust.verify_bundle(&bundle, &signature).expect("valid"),
        sha256_hex(&bundle)
    );
    let mut changed = bundle.clone();
    changed[512] ^= 1;
    refused(
        trust.verify_bundle(&changed, &signature),
        "does not match its bytes",
    );
    refused(
        trust.verify_bundle(&bundle, &sign_bundle(&bundle, &key(1))),
        "needs a Signer key",
    );
    refused(
        trust.verify_bundle(&bundle, &sign_bundle(&bundle, &key(3))),
        "not in trust root",
    );
}

#[test]
fn rotation_retires_keys_and_never_goes_back() {
    let trust = first();
    // Version 2 adds policy key 3 and retires policy key 1 and signer key 2, signed by key 1.
    let next = root(
        2,
        vec![
            TrustedKey::listing(&key(1), KeyRole::Policy, true),
            TrustedKey::listing(&key(2), KeyRole::Signer, true),
            TrustedKey::listing(&key(3), KeyRole::Policy, false),
            TrustedKey::listing(&key(4), KeyRole::Signer, false),
        ],
    );
    let rotated = trust
        .rotate(&Signed::sign(&next, &key(1)).expect("sign"), NOW)
        .expect("rotate");
    assert_eq!(rotated.root().version, 2);

    // The retired keys sign nothing new.
    let bundle = b"bundle";
    refused(
        rotated.verify_policy(
            &Signed::sign(&policy(1, NOW + 60, bundle), &key(1)).expect("sign"),
            NOW,
        ),
        "retired",
    );
    refused(
        rotated.verify_bundle(bundle, &sign_bundle(bundle, &key(2))),
        "retired",
    );
    assert!(
        rotated
            .verify_policy(
                &Signed::sign(&policy(1, NOW + 60, bundle), &key(3)).expect("sign"),
                NOW
            )
            .is_ok()
    );
    assert!(
        rotated
            .verify_bundle(bundle, &sign_bundle(bundle, &key(4)))
            .is_ok()
    );

    // A root signed by a retired key, one not above the current version, and an expired one.
    let third = root(
        3,
        vec![TrustedKey::listing(&key(3), KeyRole::Policy, false)],
    );
    refused(
        rotated.rotate(&Signed::sign(&third, &key(1)).expect("sign"), NOW),
        "retired",
    );
    let same = root(
        2,
        vec![TrustedKey::listing(&key(3), KeyRole::Policy, false)],
    );
    refused(
        rotated.rotate(&Signed::sign(&same, &key(3)).expect("sign"), NOW),
        "version 2 is refused: version 2 was accepted",
    );
    let old = root(
        1,
        vec![TrustedKey::listing(&key(3), KeyRole::Policy, false)],
    );
    refused(
        rotated.rotate(&Signed::sign(&old, &key(3)).expect("sign"), NOW),
        "version 1 is refused",
    );
    let mut late = third.clone();
    late.expires_at = NOW;
    refused(
        rotated.rotate(&Signed::sign(&late, &key(3)).expect("sign"), NOW),
        "expired",
    );
    assert!(
        rotated
            .rotate(&Signed::sign(&third, &key(3)).expect("sign"), NOW)
            .is_ok()
    );

    // A root that leaves no active policy key would lock the operator out.
    let locked = root(3, vec![TrustedKey::listing(&key(3), KeyRole::Policy, true)]);
    refused(
        rotated.rotate(&Signed::sign(&locked, &key(3)).expect("sign"), NOW),
        "no policy key is left active",
    );

    // A stored root older than the highest accepted version is a restored old file or row.
    let stored_v1 = Signed::sign(
        &root(
            1,
            vec![TrustedKey::listing(&key(1), KeyRole::Policy, false)],
        ),
        &key(1),
    )
    .expect("sign");
    refused(
        Trust::load(&stored_v1, 2, NOW),
        "version 1 is refused: version 2 was accepted",
    );
}

#[test]
fn ceilings_are_signed_versioned_documents() {
    let trust = first();
    let ceiling = json!({
        "type": CEILING_TYPE, "user": "alice", "version": 1, "expires_at": NOW + 60,
        "egress": [{"scheme": "https", "host": "*.Example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}],
        "credentials": ["github"], "memory": "read", "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 2000}
    });
    let accepted = trust
        .verify_ceiling(&Signed::sign(&ceiling, &key(1)).expect("sign"), NOW)
        .expect("valid");
    assert_eq!(accepted.egress[0].host, "*.example.com");
    refused(
        trust.verify_ceiling(&Signed::sign(&ceiling, &key(5)).expect("sign"), NOW),
        "not in trust root",
    );
    let mut expired = ceiling.clone();
    expired["expires_at"] = json!(NOW - 1);
    refused(
        trust.verify_ceiling(&Signed::sign(&expired, &key(1)).expect("sign"), NOW),
        "expired",
    );
    let mut unknown = ceiling.clone();
    unknown["auto_approve"] = json!(true);
    refused(
        trust.verify_ceiling(&Signed::sign(&unknown, &key(1)).expect("sign"), NOW),
        "unknown field `auto_approve`",
    );
}

#[test]
fn envelopes_are_read_strictly() {
    let text = br#"{"signed":{"type":"imurun.policy","type":"imurun.ceiling"},"signature":{"key_id":"00","sig":"00"}}"#;
    refused(Signed::from_text(text), "appears twice");
    let float = br#"{"signed":{"type":"imurun.policy","version":1.5},"signature":{"key_id":"00","sig":"00"}}"#;
    refused(Signed::from_text(float), "not an integer");
}
