//! Device-signed decisions: what verifies, and everything that must not.

use super::{Counter, device};
use std::collections::BTreeMap;

use imurun_keep_rules::decision::{Decision, DecisionKind, DeviceKey, Expected, verify_decision};
use imurun_keep_rules::documents::Signed;
use imurun_keep_rules::keys::{KeyPair, sha256_hex};
use serde_json::json;

const NOW: i64 = 1_800_000_000;

fn hashes() -> BTreeMap<String, String> {
    BTreeMap::from([("bundle".to_owned(), sha256_hex(b"bundle"))])
}

fn expected(hashes: &BTreeMap<String, String>) -> Expected<'_> {
    Expected {
        kind: DecisionKind::ApproveProposal,
        subject: "prop_1",
        hashes,
        ceiling_version: 3,
        policy_version: 2,
        user: "alice",
    }
}

fn verify(envelope: &Signed, registered: &[DeviceKey]) -> Result<Decision, String> {
    let hashes = hashes();
    verify_decision(
        envelope,
        &expected(&hashes),
        |key_id| registered.iter().find(|key| key.key_id == key_id).cloned(),
        NOW,
    )
    .map_err(|error| error.to_string())
}

fn refused(result: Result<Decision, String>, want: &str) {
    let error = result.expect_err(want);
    assert!(error.contains(want), "got {error:?}, want {want:?}");
}

#[test]
fn a_valid_decision_verifies_and_every_change_is_refused() {
    let (alice_pair, alice) = device(1, "alice", false);
    let (bob_pair, bob) = device(2, "bob", false);
    let (old_pair, old) = device(3, "alice", true);
    let registered = [alice.clone(), bob, old];
    let hashes = hashes();
    let decision = Decision::new(
        &Counter::default(),
        &expected(&hashes),
        &alice_pair,
        NOW,
        300,
        false,
    )
    .expect("new");
    let envelope = Signed::sign(&decision, &alice_pair).expect("sign");
    assert_eq!(
        verify(&envelope, &registered).expect("valid").nonce,
        decision.nonce
    );

    // Another user's key, a retired key, an unregistered key.
    let mut by_bob = decision.clone();
    by_bob.device_key_id = bob_pair.key_id();
    refused(
        verify(
            &Signed::sign(&by_bob, &bob_pair).expect("sign"),
            &registered,
        ),
        "not one of alice's registered devices",
    );
    let mut by_old = decision.clone();
    by_old.device_key_id = old_pair.key_id();
    refused(
        verify(
            &Signed::sign(&by_old, &old_pair).expect("sign"),
            &registered,
        ),
        "retired",
    );
    let stranger = KeyPair::from_seed(&[9; 32]);
    let mut by_stranger = decision.clone();
    by_stranger.device_key_id = stranger.key_id();
    refused(
        verify(
            &Signed::sign(&by_stranger, &stranger).expect("sign"),
            &registered,
        ),
        "not one of alice's registered devices",
    );
    refused(
        verify(
            &Signed::sign(&decision, &stranger).expect("sign"),
            &registered,
        ),
        "one device key and is signed by another",
    );

    // Decided against an older ceiling or policy, about another subject or bytes, another kind.
    for (field, value, want) in [
        ("ceiling_version", json!(2), "ceiling version 2"),
        ("policy_version", json!(1), "policy version 1"),
        ("subject", json!("prop_2"), "it is about prop_2"),
        (
            "hashes",
            json!({"bundle": sha256_hex(b"other")}),
            "hashes are not those",
        ),
        ("kind", json!("clear_taint"), "it decides clear_taint"),
        ("user", json!("bob"), "must be alice's"),
        ("auto", json!(true), "unknown field `auto`"),
    ] {
        let mut changed = serde_json::to_value(&decision).expect("json");
        changed[field] = value;
        refused(
            verify(
                &Signed::sign(&changed, &alice_pair).expect("sign"),
                &registered,
            ),
            want,
        );
    }

    // Expired, issued in the future, valid too long.
    let late = Decision::new(
        &Counter::default(),
        &expected(&hashes),
        &alice_pair,
        NOW - 301,
        300,
        false,
    )
    .expect("new");
    refused(
        verify(
            &Signed::sign(&late, &alice_pair).expect("sign"),
            &registered,
        ),
        "expired",
    );
    let early = Decision::new(
        &Counter::default(),
        &expected(&hashes),
        &alice_pair,
        NOW + 600,
        300,
        false,
    )
    .expect("new");
    refused(
        verify(
            &Signed::sign(&early, &alice_pair).expect("sign"),
            &registered,
        ),
        "in the future",
    );
    let long = Decision::new(
        &Counter::default(),
        &expected(&hashes),
        &alice_pair,
        NOW,
        2 * 86_400,
        false,
    )
    .expect("new");
    refused(
        verify(
            &Signed::sign(&long, &alice_pair).expect("sign"),
            &registered,
        ),
        "more than 86400 seconds",
    );

    // Any changed byte of the signed document, or of the signature.
    let mut flipped = envelope.clone();
    flipped.signed["confirm_tainted"] = json!(true);
    refused(verify(&flipped, &registered), "does not match");
    let mut bad_signature = envelope.clone();
    bad_signature.signature.sig.replace_range(
        0..2,
        if bad_signature.signature.sig.starts_with("00") {
            "01"
        } else {
            "00"
        },
    );
    refused(verify(&bad_signature, &registered), "does not match");
}
