//! Keep's decisions as tables: each row is a snapshot of the host's state and a signed
//! decision, and the check's answer, `Ok` or the rule that refused. No database: the snapshot
//! is what the host would have read under its lock.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use imurun_keep_rules::authority::manifest_sha256;
use imurun_keep_rules::checks::{
    Signer, clear_taint, egress_answer, enrol, retire_device, revoke, tool_decision,
};
use imurun_keep_rules::decision::{Decision, DecisionKind, DeviceKey, Expected};
use imurun_keep_rules::documents::Signed;
use imurun_keep_rules::host::HostAllowance;
use imurun_keep_rules::keys::{KeyPair, PublicKey};
use imurun_keep_rules::manifest::Manifest;
use imurun_keep_rules::seal::{ToolFields, ToolProposalFields, seal_tool, seal_tool_proposal};
use serde_json::json;

use super::{Counter, device};

const NOW: i64 = 1_800_000_000;
const ID: &str = "kt-1";
/// Two bundles' hashes.
const B1: &str = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1";
const B2: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";

fn host() -> KeyPair {
    KeyPair::from_seed(&[9; 32])
}

/// A signed decision by `pair`, `edit` applied to it before signing.
fn decide(pair: &KeyPair, expected: &Expected<'_>, edit: impl FnOnce(&mut Decision)) -> Signed {
    let mut decision =
        Decision::new(&Counter::default(), expected, pair, NOW, 300, false).expect("decision");
    edit(&mut decision);
    Signed::sign(&decision, pair).expect("sign")
}

fn proposal_fields(tainted: bool) -> ToolProposalFields<'static> {
    ToolProposalFields {
        id: ID,
        user: "alice",
        session_id: "ks-1",
        agent: "helper",
        agent_version: 2,
        signer_key_id: "k",
        name: "weather",
        version: 3,
        description: "the weather",
        manifest: "{}",
        bundle_sha256: B1,
        bundle_size: 10,
        tainted,
        taint_source: tainted.then_some("GET https://example.com/"),
        created_at_ms: 1,
    }
}

fn hashes() -> BTreeMap<String, String> {
    BTreeMap::from([("bundle".to_owned(), B1.to_owned())])
}

/// A tool decision's world: everything as the person reviewed it, nothing changed since.
struct ToolWorld {
    hashes: BTreeMap<String, String>,
    state: &'static str,
    refused: Option<&'static str>,
    tainted: bool,
    locked: Option<ToolProposalFields<'static>>,
    seal: String,
    ceiling_now: i64,
    agent_now: i64,
    deployed_same_version: Option<&'static str>,
    tool_highest: i64,
    device: DeviceKey,
}

impl ToolWorld {
    fn new(tainted: bool) -> ToolWorld {
        let fields = proposal_fields(tainted);
        ToolWorld {
            hashes: hashes(),
            state: "pending",
            refused: None,
            tainted,
            seal: seal_tool_proposal(&host(), &fields),
            locked: Some(fields),
            ceiling_now: 4,
            agent_now: 2,
            deployed_same_version: None,
            tool_highest: 2,
            device: device(1, "alice", false).1,
        }
    }

    fn expected(&self, kind: DecisionKind) -> Expected<'_> {
        Expected {
            kind,
            subject: ID,
            hashes: &self.hashes,
            ceiling_version: 4,
            policy_version: 2,
            user: "alice",
        }
    }

    fn check(&self, envelope: &Signed) -> Result<tool_decision::Plan, String> {
        let host = host().public();
        let snapshot = tool_decision::Snapshot {
            proposal_id: ID,
            reviewed: tool_decision::Reviewed {
                state: self.state,
                hashes: &self.hashes,
                ceiling_version: 4,
                policy_version: 2,
                tainted: self.tainted,
                taint_source: None,
                refused: self.refused,
            },
            locked: self.locked.map(|fields| tool_decision::Locked {
                fields,
                seal: &self.seal,
            }),
            host_key: &host,
            ceiling_now: self.ceiling_now,
            agent_now: self.agent_now,
            deployed_same_version: self.deployed_same_version,
            tool_highest: self.tool_highest,
            signer: Signer {
                user: "alice",
                device: Some(&self.device),
                now_s: NOW,
            },
        };
        tool_decision::check(&snapshot, envelope).map_err(|error| error.rule().to_owned())
    }
}

type ToolRow = (
    &'static str,
    fn(&mut ToolWorld),
    DecisionKind,
    fn(&mut Decision),
    Result<(), &'static str>,
);

#[test]
fn a_tool_decision_holds_only_for_the_state_it_was_made_against() {
    let alice = device(1, "alice", false).0;
    let same: fn(&mut ToolWorld) = |_| {};
    let signed: fn(&mut Decision) = |_| {};
    let approve = DecisionKind::ApproveProposal;
    let deny = DecisionKind::DenyProposal;
    let rows: &[ToolRow] = &[
        ("an approval", same, approve, signed, Ok(())),
        ("a denial", same, deny, signed, Ok(())),
        (
            "decided before the review",
            |w| w.state = "denied",
            approve,
            signed,
            Err("conflict"),
        ),
        (
            "decided under the lock",
            |w| w.locked = None,
            deny,
            signed,
            Err("conflict"),
        ),
        (
            "a review the host refused, approved",
            |w| w.refused = Some("edited"),
            approve,
            signed,
            Err("untrusted_key"),
        ),
        (
            "a review the host refused, denied",
            |w| w.refused = Some("edited"),
            deny,
            signed,
            Ok(()),
        ),
        (
            "a row edited after the review, approved",
            edit_row,
            approve,
            signed,
            Err("untrusted_key"),
        ),
        (
            "a row edited after the review, denied",
            edit_row,
            deny,
            signed,
            Ok(()),
        ),
        (
            "the ceiling changed",
            |w| w.ceiling_now = 5,
            approve,
            signed,
            Err("decision_refused"),
        ),
        (
            "the agent changed",
            |w| w.agent_now = 3,
            approve,
            signed,
            Err("decision_refused"),
        ),
        (
            "another subject",
            same,
            approve,
            |d| d.subject = "kt-2".into(),
            Err("decision_refused"),
        ),
        (
            "another bundle",
            same,
            approve,
            |d| d.hashes = BTreeMap::from([("bundle".into(), B2.into())]),
            Err("decision_refused"),
        ),
        (
            "an old ceiling",
            same,
            approve,
            |d| d.ceiling_version = 3,
            Err("decision_refused"),
        ),
        (
            "another agent version",
            same,
            approve,
            |d| d.policy_version = 1,
            Err("decision_refused"),
        ),
        (
            "another person's decision",
            same,
            approve,
            |d| d.user = "bob".into(),
            Err("untrusted_key"),
        ),
        (
            "expired",
            same,
            approve,
            |d| {
                d.issued_at = NOW - 600;
                d.expires_at = NOW - 1
            },
            Err("expired"),
        ),
        (
            "a device another person owns",
            |w| w.device.user = "bob".into(),
            approve,
            signed,
            Err("untrusted_key"),
        ),
        (
            "a retired device",
            |w| w.device.retired = true,
            approve,
            signed,
            Err("untrusted_key"),
        ),
        (
            "a version deployed already",
            |w| w.deployed_same_version = Some(B1),
            approve,
            signed,
            Err("conflict"),
        ),
        (
            "a version deployed already, denied",
            |w| w.deployed_same_version = Some(B1),
            deny,
            signed,
            Ok(()),
        ),
        (
            "a version below the highest",
            |w| w.tool_highest = 3,
            approve,
            signed,
            Err("rolled_back"),
        ),
    ];
    for (what, change, kind, edit, want) in rows {
        let mut world = ToolWorld::new(false);
        change(&mut world);
        let envelope = decide(&alice, &world.expected(*kind), edit);
        let got = world.check(&envelope).map(|_| ());
        assert_eq!(
            got.as_ref().map(|_| ()).map_err(String::as_str),
            *want,
            "{what}"
        );
    }
}

fn edit_row(world: &mut ToolWorld) {
    if let Some(fields) = &mut world.locked {
        fields.version = 9;
    }
}

#[test]
fn a_tainted_tool_deploys_only_with_the_explicit_confirm_and_says_where_a_denial_came_from() {
    let alice = device(1, "alice", false).0;
    let world = ToolWorld::new(true);
    let approve = world.expected(DecisionKind::ApproveProposal);
    let unconfirmed = decide(&alice, &approve, |_| {});
    assert_eq!(
        world.check(&unconfirmed).err().as_deref(),
        Some("confirm_tainted")
    );
    let confirmed = decide(&alice, &approve, |d| d.confirm_tainted = true);
    let plan = world.check(&confirmed).expect("confirmed");
    assert!(plan.approve && plan.decision.confirm_tainted && plan.unsealed.is_none());

    // A denial of a row edited after the review goes through, and says the row did not hold.
    let mut edited = ToolWorld::new(false);
    edit_row(&mut edited);
    let deny = decide(&alice, &edited.expected(DecisionKind::DenyProposal), |_| {});
    let plan = edited.check(&deny).expect("denied");
    assert!(!plan.approve);
    assert!(plan.unsealed.is_some_and(|why| why.contains("not sealed")));
}

/// Clearing a taint: the tool as shown, and its row under the lock.
struct TaintWorld {
    hashes: BTreeMap<String, String>,
    subject: String,
    refused: Option<&'static str>,
    shown: bool,
    fields: ToolFields<'static>,
    seal: String,
    revoked: bool,
    ceiling_now: i64,
}

/// A deployed tool's manifest as the host stores it: the clamped manifest, serialised.
static MANIFEST: LazyLock<String> = LazyLock::new(|| {
    let manifest = Manifest::from_json(
        &json!({
            "name": "weather", "version": 3, "description": "Tells the weather.",
            "egress": {"mode": "ask", "rules": [
                {"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}
            ]},
            "resources": {"memory_mb": 64, "cpu_ms": 1000, "timeout_ms": 5000},
            "approval_timeout_s": 60
        }),
        HostAllowance::Operator,
    )
    .expect("manifest");
    serde_json::to_string(&manifest).expect("text")
});

impl TaintWorld {
    fn new() -> TaintWorld {
        let fields = ToolFields {
            user: "alice",
            name: "weather",
            version: 3,
            bundle_sha256: B1,
            manifest: MANIFEST.as_str(),
            decision: "{}",
            tainted: true,
            taint_cleared: None,
        };
        let manifest: Manifest = serde_json::from_str(&MANIFEST).expect("stored manifest");
        let manifest_sha256 = manifest_sha256(&manifest);
        TaintWorld {
            hashes: BTreeMap::from([
                ("bundle".into(), B1.into()),
                ("manifest".into(), manifest_sha256),
            ]),
            subject: "u/alice/weather@3".into(),
            refused: None,
            shown: true,
            seal: seal_tool(&host(), &fields),
            fields,
            revoked: false,
            ceiling_now: 4,
        }
    }

    fn check(&self, envelope: &Signed, device: &DeviceKey, host: &PublicKey) -> Result<(), String> {
        let snapshot = clear_taint::Snapshot {
            name: "weather",
            shown: clear_taint::Shown {
                refused: self.refused,
                basis: self
                    .shown
                    .then_some((self.subject.as_str(), &self.hashes, 4)),
            },
            locked: clear_taint::Locked {
                fields: self.fields,
                seal: &self.seal,
                revoked: self.revoked,
            },
            host_key: host,
            ceiling_now: self.ceiling_now,
            signer: Signer {
                user: "alice",
                device: Some(device),
                now_s: NOW,
            },
        };
        clear_taint::check(&snapshot, envelope)
            .map(|_| ())
            .map_err(|error| error.rule().to_owned())
    }
}

type TaintRow = (&'static str, fn(&mut TaintWorld), Result<(), &'static str>);

#[test]
fn a_taint_is_cleared_only_on_the_row_the_person_was_shown() {
    let (alice, registered) = device(1, "alice", false);
    let host = host().public();
    let same: fn(&mut TaintWorld) = |_| {};
    let rows: &[TaintRow] = &[
        ("as shown", same, Ok(())),
        (
            "a row the host refuses",
            |w| w.refused = Some("edited"),
            Err("untrusted_key"),
        ),
        ("no taint shown", |w| w.shown = false, Err("conflict")),
        ("revoked", |w| w.revoked = true, Err("conflict")),
        ("not tainted", |w| w.fields.tainted = false, Err("conflict")),
        (
            "cleared already",
            |w| w.fields.taint_cleared = Some("{}"),
            Err("conflict"),
        ),
        (
            "a newer version deployed",
            |w| w.subject = "u/alice/weather@2".into(),
            Err("conflict"),
        ),
        (
            "a row edited in the database",
            |w| w.fields.bundle_sha256 = B2,
            Err("untrusted_key"),
        ),
        (
            "other code than shown",
            |w| {
                w.hashes.insert("bundle".into(), B2.into());
            },
            Err("decision_refused"),
        ),
        (
            "the ceiling changed",
            |w| w.ceiling_now = 5,
            Err("decision_refused"),
        ),
    ];
    for (what, change, want) in rows {
        let mut world = TaintWorld::new();
        change(&mut world);
        // The decision names what the person was shown.
        let expected = Expected {
            kind: DecisionKind::ClearTaint,
            subject: &world.subject,
            hashes: &world.hashes,
            ceiling_version: 4,
            policy_version: 0,
            user: "alice",
        };
        let envelope = decide(&alice, &expected, |_| {});
        let got = world.check(&envelope, &registered, &host);
        assert_eq!(
            got.as_ref().map(|_| ()).map_err(String::as_str),
            *want,
            "{what}"
        );
    }
    // A decision of another kind for the same tool.
    let world = TaintWorld::new();
    let approve = Expected {
        kind: DecisionKind::ApproveProposal,
        subject: &world.subject,
        hashes: &world.hashes,
        ceiling_version: 4,
        policy_version: 0,
        user: "alice",
    };
    let envelope = decide(&alice, &approve, |_| {});
    assert_eq!(
        world.check(&envelope, &registered, &host).err().as_deref(),
        Some("decision_refused")
    );
}

#[test]
fn a_device_enrols_only_with_its_own_possession_and_an_existing_devices_decision() {
    let new_key = KeyPair::from_seed(&[7; 32]);
    let public_key = new_key.public().to_hex();
    let possession = new_key.sign(&enrol::possession_message("alice", &new_key.public()));
    let request = enrol::Request {
        user: "alice",
        public_key: &public_key,
        label: "phone",
        possession: &possession,
    };
    let new_device = enrol::read(&request).expect("a request that holds");
    // The request's own rules.
    let bob_possession = new_key.sign(&enrol::possession_message("bob", &new_key.public()));
    let long_label = "x".repeat(enrol::DEVICE_LABEL_CHARS_MAX + 1);
    let cases: [(&str, enrol::Request<'_>, &str); 4] = [
        (
            "a possession over another user",
            enrol::Request {
                possession: &bob_possession,
                ..request
            },
            "bad_signature",
        ),
        (
            "a key that is not one",
            enrol::Request {
                public_key: "00",
                ..request
            },
            "invalid",
        ),
        (
            "a long label",
            enrol::Request {
                label: &long_label,
                ..request
            },
            "invalid",
        ),
        (
            "a hidden control in the label",
            enrol::Request {
                label: "ph\u{202e}one",
                ..request
            },
            "invalid",
        ),
    ];
    for (what, request, rule) in cases {
        assert_eq!(
            enrol::read(&request).err().map(|error| error.rule()),
            Some(rule),
            "{what}"
        );
    }
    // A hidden character is named, unassigned ones too.
    for (label, named) in [("ph\u{202e}one", "U+202E"), ("x\u{e0000}y", "U+E0000")] {
        let refusal = enrol::read(&enrol::Request { label, ..request })
            .expect_err(label)
            .to_string();
        assert!(refusal.contains(named), "{refusal}");
    }
    // The decision that lets it in.
    let (alice, registered) = device(1, "alice", false);
    let expected = Expected {
        kind: DecisionKind::EnrolDevice,
        subject: &new_device.key_id,
        hashes: &new_device.hashes,
        ceiling_version: 4,
        policy_version: 0,
        user: "alice",
    };
    let envelope = decide(&alice, &expected, |_| {});
    let check = |ceiling_now: i64, device_key: &DeviceKey, envelope: &Signed| {
        let snapshot = enrol::Snapshot {
            device: &new_device,
            ceiling_version: 4,
            ceiling_now,
            signer: Signer {
                user: "alice",
                device: Some(device_key),
                now_s: NOW,
            },
        };
        enrol::check(&snapshot, envelope)
            .map(|_| ())
            .map_err(|error| error.rule())
    };
    assert_eq!(check(4, &registered, &envelope), Ok(()));
    assert_eq!(
        check(5, &registered, &envelope),
        Err("conflict"),
        "the ceiling changed"
    );
    let retired = DeviceKey {
        retired: true,
        ..registered.clone()
    };
    assert_eq!(
        check(4, &retired, &envelope),
        Err("untrusted_key"),
        "a retired device"
    );
    let other_key = decide(&alice, &expected, |d| d.subject = "another-key".into());
    assert_eq!(
        check(4, &registered, &other_key),
        Err("decision_refused"),
        "another key"
    );
}

#[test]
fn a_device_is_retired_only_by_a_decision_of_one_of_her_live_devices() {
    let (phone, phone_key) = device(1, "alice", false);
    let (laptop, laptop_key) = device(2, "alice", false);
    let (bobs, bobs_key) = device(3, "bob", false);
    let hashes = imurun_keep_rules::checks::device_hashes(&phone_key.public_key);
    let expected = Expected {
        kind: DecisionKind::RetireDevice,
        subject: &phone_key.key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user: "alice",
    };
    let retired = |key: &DeviceKey| DeviceKey {
        retired: true,
        ..key.clone()
    };
    let by_phone = decide(&phone, &expected, |_| {});
    let by_laptop = decide(&laptop, &expected, |_| {});
    // (what, the device retired, the device that signed, the decision, the answer)
    type Case<'a> = (&'a str, DeviceKey, DeviceKey, Signed, Result<(), &'a str>);
    let cases: Vec<Case<'_>> = vec![
        (
            "the key itself",
            phone_key.clone(),
            phone_key.clone(),
            by_phone.clone(),
            Ok(()),
        ),
        (
            "another of hers",
            phone_key.clone(),
            laptop_key.clone(),
            by_laptop.clone(),
            Ok(()),
        ),
        (
            "a key of his own, naming her",
            phone_key.clone(),
            bobs_key.clone(),
            decide(&bobs, &expected, |_| {}),
            Err("untrusted_key"),
        ),
        (
            "a retired device of hers",
            phone_key.clone(),
            retired(&laptop_key),
            by_laptop.clone(),
            Err("untrusted_key"),
        ),
        (
            "a device retired already",
            retired(&phone_key),
            phone_key.clone(),
            by_phone.clone(),
            Err("conflict"),
        ),
        (
            "another person's device",
            bobs_key.clone(),
            phone_key.clone(),
            by_phone.clone(),
            Err("untrusted_key"),
        ),
        (
            "an enrol decision",
            phone_key.clone(),
            phone_key.clone(),
            decide(&phone, &expected, |d| d.kind = DecisionKind::EnrolDevice),
            Err("decision_refused"),
        ),
        (
            "another subject",
            phone_key.clone(),
            phone_key.clone(),
            decide(&phone, &expected, |d| d.subject = laptop_key.key_id.clone()),
            Err("decision_refused"),
        ),
        (
            "another key's hash",
            phone_key.clone(),
            phone_key.clone(),
            decide(&phone, &expected, |d| {
                d.hashes = imurun_keep_rules::checks::device_hashes(&laptop_key.public_key)
            }),
            Err("decision_refused"),
        ),
        (
            "a ceiling version",
            phone_key.clone(),
            phone_key.clone(),
            decide(&phone, &expected, |d| d.ceiling_version = 1),
            Err("decision_refused"),
        ),
        (
            "expired",
            phone_key.clone(),
            phone_key.clone(),
            decide(&phone, &expected, |d| {
                d.issued_at = NOW - 400;
                d.expires_at = NOW - 100;
            }),
            Err("expired"),
        ),
    ];
    for (what, target, signer, envelope, wanted) in cases {
        let snapshot = retire_device::Snapshot {
            device: &target,
            signer: Signer {
                user: "alice",
                device: Some(&signer),
                now_s: NOW,
            },
        };
        let got = retire_device::check(&snapshot, &envelope)
            .map(|_| ())
            .map_err(|error| error.rule());
        assert_eq!(got, wanted, "{what}");
    }
    // No device registered under the signing key: refused.
    let snapshot = retire_device::Snapshot {
        device: &phone_key,
        signer: Signer {
            user: "alice",
            device: None,
            now_s: NOW,
        },
    };
    assert_eq!(
        retire_device::check(&snapshot, &by_phone)
            .map_err(|error| error.rule())
            .err(),
        Some("untrusted_key")
    );
}

#[test]
fn an_egress_approval_holds_only_for_the_use_as_shown() {
    let (alice, registered) = device(1, "alice", false);
    let hashes = BTreeMap::from([
        ("request".to_owned(), B1.to_owned()),
        ("body".to_owned(), B2.to_owned()),
    ]);
    let expected = Expected {
        kind: DecisionKind::ApproveEgress,
        subject: "ea-1",
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 2,
        user: "alice",
    };
    let snapshot = |agent_version: i64, use_id: &'static str| egress_answer::Snapshot {
        use_id,
        hashes: &hashes,
        agent_version,
        signer: Signer {
            user: "alice",
            device: Some(&registered),
            now_s: NOW,
        },
    };
    let rule = |result: Result<Decision, imurun_keep_rules::RuleError>| {
        result.map(|_| ()).map_err(|error| error.rule())
    };
    let envelope = decide(&alice, &expected, |_| {});
    assert_eq!(
        rule(egress_answer::check(&snapshot(2, "ea-1"), &envelope, true)),
        Ok(())
    );
    assert_eq!(
        rule(egress_answer::check_recorded(
            &snapshot(2, "ea-1"),
            &envelope
        )),
        Ok(())
    );
    assert_eq!(
        rule(egress_answer::check(&snapshot(2, "ea-1"), &envelope, false)),
        Err("decision_refused"),
        "a denial by decision"
    );
    assert_eq!(
        rule(egress_answer::check(&snapshot(2, "ea-2"), &envelope, true)),
        Err("decision_refused"),
        "another use"
    );
    assert_eq!(
        rule(egress_answer::check(&snapshot(3, "ea-1"), &envelope, true)),
        Err("decision_refused"),
        "another agent version"
    );
    let other_body = decide(&alice, &expected, |d| {
        d.hashes.insert("body".into(), B1.into());
    });
    assert_eq!(
        rule(egress_answer::check_recorded(
            &snapshot(2, "ea-1"),
            &other_body
        )),
        Err("decision_refused"),
        "another body"
    );
}

#[test]
fn a_revoke_covers_every_version_ever_deployed_and_vouches_only_for_its_own() {
    use revoke::{Outcome, Plan, Row, Snapshot};
    let row = |version, sealed| Some(Row { version, sealed });
    let rows: &[(&str, Snapshot, Option<Plan>)] = &[
        (
            "nothing ever deployed",
            Snapshot {
                row: None,
                deployed: 0,
                deployed_here: 0,
            },
            None,
        ),
        (
            "a sealed row",
            Snapshot {
                row: row(3, true),
                deployed: 3,
                deployed_here: 3,
            },
            Some(Plan {
                revoked_version: 3,
                vouched: 3,
            }),
        ),
        (
            "a row lowered in the database",
            Snapshot {
                row: row(1, false),
                deployed: 3,
                deployed_here: 3,
            },
            Some(Plan {
                revoked_version: 3,
                vouched: 3,
            }),
        ),
        (
            "a row deleted in the database",
            Snapshot {
                row: None,
                deployed: 4,
                deployed_here: 4,
            },
            Some(Plan {
                revoked_version: 4,
                vouched: 4,
            }),
        ),
        (
            "a database mark raised by hand",
            Snapshot {
                row: row(2, true),
                deployed: 9,
                deployed_here: 2,
            },
            Some(Plan {
                revoked_version: 9,
                vouched: 2,
            }),
        ),
        (
            "an unsealed row above this host's mark",
            Snapshot {
                row: row(7, false),
                deployed: 2,
                deployed_here: 2,
            },
            Some(Plan {
                revoked_version: 7,
                vouched: 2,
            }),
        ),
    ];
    for (what, snapshot, want) in rows {
        assert_eq!(revoke::check(snapshot), *want, "{what}");
    }
    assert_eq!(revoke::outcome(true, true), Outcome::Revoked);
    assert_eq!(revoke::outcome(false, true), Outcome::Revoked);
    assert_eq!(revoke::outcome(true, false), Outcome::AlreadyRevoked);
    assert_eq!(revoke::outcome(false, false), Outcome::NoRow);
}
