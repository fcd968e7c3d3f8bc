//! The operator's signed documents as tables: a deploy, a ceiling and a trust-root rotation,
//! each verified against the trust root in force and then checked against what the write lock
//! shows (`Locked`). Each row is the document, the lock's snapshot and the rule that refuses,
//! or `Ok`. No database.

use std::collections::BTreeSet;

use imurun_keep_rules::RuleError;
use imurun_keep_rules::checks::documents::{
    self, Deploy, Locked, check_ceiling, check_deploy, check_rotation, verify_ceiling,
    verify_deploy,
};
use imurun_keep_rules::documents::{
    CEILING_TYPE, KeyRole, POLICY_TYPE, Signed, TRUST_ROOT_TYPE, TrustRoot, TrustedKey,
};
use imurun_keep_rules::keys::{KeyPair, sha256_hex};
use imurun_keep_rules::trust::{Trust, sign_bundle};
use serde_json::{Value, json};

const NOW: i64 = 1_800_000_000;
/// A component's header and a body: what a deploy's bundle must start with.
const BUNDLE: &[u8] = b"\0asm\x0d\x00\x01\x00 a component's bytes";

fn key(seed: u8) -> KeyPair {
    KeyPair::from_seed(&[seed; 32])
}

/// Trust root version 1: policy key 1, signer key 2, and the retired policy key 3.
fn trust() -> Trust {
    let root = TrustRoot {
        kind: TRUST_ROOT_TYPE.into(),
        version: 1,
        expires_at: NOW + 1_000,
        keys: vec![
            TrustedKey::listing(&key(1), KeyRole::Policy, false),
            TrustedKey::listing(&key(2), KeyRole::Signer, false),
            TrustedKey::listing(&key(3), KeyRole::Policy, true),
        ],
    };
    Trust::install(&Signed::sign(&root, &key(1)).expect("sign"), NOW).expect("install")
}

/// The lock's snapshot: the trust root checked against and in force, and the highest version.
fn locked(root_now: i64, highest: i64) -> Locked {
    Locked {
        root_checked: 1,
        root_now,
        highest,
    }
}

fn rule<T>(result: Result<T, RuleError>) -> Result<(), &'static str> {
    result.map(|_| ()).map_err(|error| error.rule())
}

fn policy(version: i64, edit: impl FnOnce(&mut Value)) -> Value {
    let mut policy = json!({
        "type": POLICY_TYPE, "agent": "helper", "version": version,
        "expires_at": NOW + 60, "bundle_sha256": sha256_hex(BUNDLE),
        "manifest": {
            "name": "helper", "version": version,
            "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000},
            "approval_timeout_s": 30,
            "egress": {"mode": "allow", "rules": [
                {"scheme": "https", "host": "mail.example.com", "port": 443,
                 "methods": ["GET"], "path_prefix": "/"}]},
            "credentials": [{"name": "mail", "header": "Authorization",
                             "bind": {"host": "mail.example.com", "port": 443,
                                      "methods": ["GET"], "path_prefix": "/"}}]
        }
    });
    edit(&mut policy);
    policy
}

/// A deploy of `bundle` signed by `signer`, its policy by `by`, checked against `lock`.
fn deploy(
    (bundle, signer): (&[u8], u8),
    (policy, by): (Value, u8),
    vault: &[&str],
    lock: Locked,
) -> Result<(), &'static str> {
    let signature = sign_bundle(bundle, &key(signer));
    let policy = Signed::sign(&policy, &key(by)).expect("sign");
    let request = Deploy {
        bundle,
        bundle_signature: &signature,
        policy: &policy,
    };
    let vault: BTreeSet<String> = vault.iter().map(|name| (*name).to_owned()).collect();
    let verified = verify_deploy(&trust(), &request, &vault, NOW).map_err(|error| error.rule())?;
    rule(check_deploy(&verified, &lock))
}

#[test]
fn a_deploy_holds_only_signed_by_the_trust_root_for_its_bundle_above_every_version() {
    let fine = || policy(3, |_| {});
    let mail = &["mail"][..];
    let rows: Vec<(&str, Result<(), &str>)> = vec![
        (
            "as sent",
            deploy((BUNDLE, 2), (fine(), 1), mail, locked(1, 2)),
        ),
        (
            "not a component",
            deploy(
                (b"\0asm\x01\x00\x00\x00 a module", 2),
                (fine(), 1),
                mail,
                locked(1, 2),
            ),
        ),
        (
            "a bundle signed by a policy key",
            deploy((BUNDLE, 1), (fine(), 1), mail, locked(1, 2)),
        ),
        (
            "a bundle signed by a key outside the root",
            deploy((BUNDLE, 9), (fine(), 1), mail, locked(1, 2)),
        ),
        (
            "a policy signed by the signer key",
            deploy((BUNDLE, 2), (fine(), 2), mail, locked(1, 2)),
        ),
        (
            "a policy signed by a retired key",
            deploy((BUNDLE, 2), (fine(), 3), mail, locked(1, 2)),
        ),
        (
            "a policy for another bundle",
            deploy(
                (BUNDLE, 2),
                (
                    policy(3, |p| p["bundle_sha256"] = json!(sha256_hex(b"other"))),
                    1,
                ),
                mail,
                locked(1, 2),
            ),
        ),
        (
            "an expired policy",
            deploy(
                (BUNDLE, 2),
                (policy(3, |p| p["expires_at"] = json!(NOW)), 1),
                mail,
                locked(1, 2),
            ),
        ),
        (
            "a credential the operator's vault lacks",
            deploy((BUNDLE, 2), (fine(), 1), &[], locked(1, 2)),
        ),
        (
            "the version deployed already",
            deploy((BUNDLE, 2), (fine(), 1), mail, locked(1, 3)),
        ),
        (
            "an older version",
            deploy((BUNDLE, 2), (fine(), 1), mail, locked(1, 7)),
        ),
        (
            "the trust root rotated meanwhile",
            deploy((BUNDLE, 2), (fine(), 1), mail, locked(2, 2)),
        ),
    ];
    let want = [
        Ok(()),
        Err("invalid"),
        Err("untrusted_key"),
        Err("untrusted_key"),
        Err("untrusted_key"),
        Err("untrusted_key"),
        Err("invalid"),
        Err("expired"),
        Err("missing_credential"),
        Err("rolled_back"),
        Err("rolled_back"),
        Err("conflict"),
    ];
    for ((what, got), want) in rows.into_iter().zip(want) {
        assert_eq!(got, want, "{what}");
    }
}

fn ceiling(user: &str, version: i64, expires_at: i64) -> Value {
    json!({
        "type": CEILING_TYPE, "user": user, "version": version, "expires_at": expires_at,
        "egress": [], "credentials": [], "memory": "none", "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 2000}
    })
}

/// `document` signed by policy key 1, then changed by `edit`: the signature no longer holds.
fn edited(document: Value, edit: impl FnOnce(&mut Value), user: &str) -> Result<(), &'static str> {
    let mut envelope = Signed::sign(&document, &key(1)).expect("sign");
    edit(&mut envelope.signed);
    rule(verify_ceiling(&trust(), user, &envelope, NOW))
}

#[test]
fn a_ceiling_holds_only_for_its_person_signed_by_a_policy_key_above_every_version() {
    let check = |document: Value, by: u8, for_user: &str, lock: Locked| {
        let envelope = Signed::sign(&document, &key(by)).expect("sign");
        let ceiling =
            verify_ceiling(&trust(), for_user, &envelope, NOW).map_err(|error| error.rule())?;
        rule(check_ceiling(&ceiling, &lock))
    };
    type Row<'a> = (&'a str, Result<(), &'a str>, Result<(), &'a str>);
    let rows: &[Row] = &[
        (
            "as sent",
            check(ceiling("alice", 2, NOW + 60), 1, "alice", locked(1, 1)),
            Ok(()),
        ),
        (
            "for another person",
            check(ceiling("bob", 2, NOW + 60), 1, "alice", locked(1, 1)),
            Err("invalid"),
        ),
        (
            "signed by the signer key",
            check(ceiling("alice", 2, NOW + 60), 2, "alice", locked(1, 1)),
            Err("untrusted_key"),
        ),
        (
            "signed by a retired policy key",
            check(ceiling("alice", 2, NOW + 60), 3, "alice", locked(1, 1)),
            Err("untrusted_key"),
        ),
        (
            "expired",
            check(ceiling("alice", 2, NOW), 1, "alice", locked(1, 1)),
            Err("expired"),
        ),
        (
            "edited after it was signed",
            edited(
                ceiling("alice", 2, NOW + 60),
                |c| c["version"] = json!(3),
                "alice",
            ),
            Err("bad_signature"),
        ),
        (
            "a version written as a fraction",
            edited(
                ceiling("alice", 2, NOW + 60),
                |c| c["version"] = json!(2.5),
                "alice",
            ),
            Err("not_canonical"),
        ),
        (
            "the version in force again",
            check(ceiling("alice", 2, NOW + 60), 1, "alice", locked(1, 2)),
            Err("rolled_back"),
        ),
        (
            "the trust root rotated meanwhile",
            check(ceiling("alice", 2, NOW + 60), 1, "alice", locked(2, 1)),
            Err("conflict"),
        ),
    ];
    for (what, got, want) in rows {
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn a_rotation_holds_only_above_the_root_it_was_checked_against_and_still_in_force() {
    let rows: &[(&str, i64, Locked, Result<(), &str>)] = &[
        ("to the next version", 2, locked(1, 1), Ok(())),
        ("skipping versions", 5, locked(1, 1), Ok(())),
        (
            "to the version in force",
            1,
            locked(1, 1),
            Err("rolled_back"),
        ),
        ("backwards", 0, locked(1, 1), Err("rolled_back")),
        (
            "another rotation landed meanwhile",
            2,
            locked(2, 2),
            Err("conflict"),
        ),
    ];
    for (what, next, lock, want) in rows {
        assert_eq!(rule(check_rotation(*next, lock)), *want, "{what}");
    }
}

#[test]
fn a_refused_documents_entry_names_its_version_key_and_whether_it_held() {
    let trust = trust();
    let signed = Signed::sign(&ceiling("alice", 4, NOW + 60), &key(1)).expect("sign");
    let attempt = documents::attempt(Some(&trust), &signed, CEILING_TYPE);
    assert_eq!(
        (attempt.version, attempt.key_id.as_str(), attempt.verified),
        (Some(4), key(1).key_id().as_str(), true)
    );
    let forged = Signed::sign(&ceiling("alice", 4, NOW + 60), &key(9)).expect("sign");
    let attempt = documents::attempt(Some(&trust), &forged, CEILING_TYPE);
    assert_eq!((attempt.version, attempt.verified), (Some(4), false));
    let attempt = documents::attempt(None, &signed, CEILING_TYPE);
    assert!(
        !attempt.verified,
        "no trust root in force: nothing verifies"
    );
}
