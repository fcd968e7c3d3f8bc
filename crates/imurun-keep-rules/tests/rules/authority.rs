//! The authority diff, case by case, and the clamp's promise over generated manifests and
//! ceilings: what deploys is within the ceiling and within what was proposed.

use imurun_keep_rules::authority::{ChangeClass, clamp, diff, rule_within};
use imurun_keep_rules::documents::Ceiling;
use imurun_keep_rules::host::HostAllowance;
use imurun_keep_rules::manifest::{Manifest, rule_covers};
use proptest::prelude::*;
use serde_json::{Value, json};

fn manifest(extra: Value) -> Manifest {
    let mut value = json!({
        "name": "m", "version": 1,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000},
        "approval_timeout_s": 30
    });
    if let (Some(target), Some(source)) = (value.as_object_mut(), extra.as_object()) {
        target.extend(source.clone());
    }
    Manifest::from_json(&value, HostAllowance::Operator).unwrap()
}

fn rule(host: &str, methods: &[&str], path: &str) -> Value {
    json!({"scheme": "https", "host": host, "port": 443, "methods": methods, "path_prefix": path})
}

fn allow(rules: Vec<Value>) -> Value {
    json!({"mode": "allow", "rules": rules})
}

fn credential(name: &str, host: &str) -> Value {
    json!({"name": name, "header": "Authorization",
           "bind": {"host": host, "port": 443, "methods": ["GET"], "path_prefix": "/"}})
}

/// A ceiling of alice's allowing `egress`, no credentials, memory or model socket, and the
/// default manifest's limits.
fn egress_ceiling(egress: Value) -> Ceiling {
    Ceiling::from_document(&json!({
        "type": "imurun.ceiling", "user": "alice", "version": 1, "expires_at": 1,
        "egress": egress,
        "credentials": [], "memory": "none", "model_socket": false,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}
    }))
    .unwrap()
}

#[test]
fn the_diff_names_each_new_authority_with_its_class() {
    let agent = manifest(json!({
        "egress": allow(vec![rule("api.example.com", &["GET"], "/v1")]),
        "memory": "read",
    }));
    let cases: Vec<(&str, Value, Vec<ChangeClass>)> = vec![
        ("nothing", json!({}), vec![]),
        (
            "the same host, methods and path",
            json!({"egress": allow(vec![rule("api.example.com", &["GET"], "/v1/items")])}),
            vec![],
        ),
        (
            "an added host",
            json!({"egress": allow(vec![rule("other.example.com", &["GET"], "/")])}),
            vec![ChangeClass::NewHost],
        ),
        (
            "a host under a name the agent has, not the name",
            json!({"egress": allow(vec![rule("x.api.example.com", &["GET"], "/v1")])}),
            vec![ChangeClass::NewHost],
        ),
        (
            "another method on the agent's host",
            json!({"egress": allow(vec![rule("api.example.com", &["GET", "POST"], "/v1")])}),
            vec![ChangeClass::Egress],
        ),
        (
            "a wider path on the agent's host",
            json!({"egress": allow(vec![rule("api.example.com", &["GET"], "/")])}),
            vec![ChangeClass::Egress],
        ),
        (
            "another port",
            json!({"egress": allow(vec![json!({"scheme": "https", "host": "api.example.com", "port": 8443, "methods": ["GET"], "path_prefix": "/v1"})])}),
            vec![ChangeClass::Egress],
        ),
        (
            "a credential",
            json!({"egress": allow(vec![rule("api.example.com", &["GET"], "/")]),
                   "credentials": [credential("github", "api.example.com")]}),
            vec![ChangeClass::Egress, ChangeClass::CredentialReach],
        ),
        (
            "memory read to write",
            json!({"memory": "write"}),
            vec![ChangeClass::Memory],
        ),
        (
            "memory read, as the agent",
            json!({"memory": "read"}),
            vec![],
        ),
        (
            "the model socket",
            json!({"model_socket": true}),
            vec![ChangeClass::Model],
        ),
        (
            "more memory and CPU",
            json!({"resources": {"memory_mb": 64, "cpu_ms": 600, "timeout_ms": 5000}}),
            vec![ChangeClass::Resources, ChangeClass::Resources],
        ),
        (
            "longer timeouts",
            json!({"resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 9000},
                   "approval_timeout_s": 60}),
            vec![ChangeClass::Timeouts, ChangeClass::Timeouts],
        ),
        (
            "asking when tainted where the agent is refused",
            json!({"egress": allow(vec![json!({"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/v1", "ask_when_tainted": true})])}),
            vec![ChangeClass::Egress],
        ),
    ];
    for (what, extra, wanted) in cases {
        let tool = manifest(extra);
        let classes: Vec<ChangeClass> = diff(&agent, &tool)
            .into_iter()
            .map(|change| change.class)
            .collect();
        assert_eq!(classes, wanted, "{what}");
    }
    // An agent that asks: the same rule without asking is more authority.
    let asking = manifest(
        json!({"egress": {"mode": "ask", "rules": [rule("api.example.com", &["GET"], "/")]}}),
    );
    let tool = manifest(json!({"egress": allow(vec![rule("api.example.com", &["GET"], "/")])}));
    let classes: Vec<ChangeClass> = diff(&asking, &tool).into_iter().map(|c| c.class).collect();
    assert_eq!(classes, [ChangeClass::Egress]);
    // A device signature the agent needs and the tool does not: more authority.
    let signed = manifest(
        json!({"egress": allow(vec![json!({"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/", "device_signature": true})])}),
    );
    let classes: Vec<ChangeClass> = diff(&signed, &tool).into_iter().map(|c| c.class).collect();
    assert_eq!(classes, [ChangeClass::Egress]);
}

#[test]
fn a_narrower_stricter_rule_keeps_its_friction_through_the_clamp_and_shows_in_the_diff() {
    let strict = json!({"scheme": "https", "host": "api.bank.example", "port": 443,
        "methods": ["POST"], "path_prefix": "/transfers", "device_signature": true});
    let ceiling = egress_ceiling(json!([
        rule("api.bank.example", &["GET", "POST"], "/"),
        strict.clone()
    ]));
    let proposed =
        manifest(json!({"egress": allow(vec![rule("api.bank.example", &["GET", "POST"], "/")])}));
    let clamped = clamp(&proposed, &ceiling).manifest;
    let guarded = clamped
        .egress
        .rules
        .iter()
        .find(|rule| rule.path_prefix == "/transfers")
        .expect("the stricter rule's friction is kept");
    assert!(guarded.device_signature);
    assert_eq!(guarded.methods, ["POST"]);
    // The same two rules in the agent: the tool's broad rule alone is new authority.
    let agent = manifest(
        json!({"egress": allow(vec![rule("api.bank.example", &["GET", "POST"], "/"), strict])}),
    );
    let classes: Vec<ChangeClass> = diff(&agent, &proposed)
        .into_iter()
        .map(|c| c.class)
        .collect();
    assert_eq!(classes, [ChangeClass::Egress]);
    assert!(
        diff(&agent, &clamped).is_empty(),
        "{:?}",
        diff(&agent, &clamped)
    );
}

/// Ceiling rules that overlap with different friction: a wildcard that asks when tainted, and
/// under it one host allowed both plainly and with a device signature. The narrowed rule the
/// clamp adds for that host carries the strictest of them, so clamping again changes nothing.
#[test]
fn overlapping_ceiling_rules_give_one_friction_and_clamping_again_changes_nothing() {
    let on = |host: &str, ask: bool, device: bool| {
        json!({"scheme": "http", "host": host, "port": 8443, "methods": ["GET"],
               "path_prefix": "/", "ask_when_tainted": ask, "device_signature": device})
    };
    let ceiling = Ceiling::from_document(&json!({
        "type": "imurun.ceiling", "user": "alice", "version": 1, "expires_at": 1,
        "egress": [on("x.a.example", false, false), on("*.a.example", true, false),
                   on("x.a.example", false, true)],
        "credentials": [], "memory": "none", "model_socket": false,
        "resources": {"memory_mb": 1, "cpu_ms": 1, "timeout_ms": 1}
    }))
    .unwrap();
    let mut wide = on("*.a.example", true, false);
    wide["methods"] = json!(["GET", "DELETE"]);
    let proposed = manifest(json!({"egress": allow(vec![wide])}));
    let clamped = clamp(&proposed, &ceiling).manifest;
    let host: Vec<(&str, bool, bool)> = clamped
        .egress
        .rules
        .iter()
        .map(|rule| {
            (
                rule.host.as_str(),
                rule.ask_when_tainted,
                rule.device_signature,
            )
        })
        .collect();
    assert_eq!(
        host,
        [("*.a.example", true, false), ("x.a.example", false, true)]
    );
    assert_eq!(clamp(&clamped, &ceiling).manifest, clamped);
}

/// `GET https://a.example` under `path`, with a device signature or not.
fn get(path: &str, device: bool) -> Value {
    json!({"scheme": "https", "host": "a.example", "port": 443, "methods": ["GET"],
           "path_prefix": path, "device_signature": device})
}

/// A proposed rule the ceiling drops keeps its friction on the narrower rules kept under it:
/// the broker applies the strictest rule that matches, so without it `GET /api` would lose
/// the device signature the proposal gave it.
#[test]
fn a_dropped_proposed_rule_keeps_its_friction_on_the_rules_kept_under_it() {
    let ceiling = egress_ceiling(json!([get("/api", false)]));
    let proposed = manifest(json!({"egress": allow(vec![get("/", true), get("/api", false)])}));
    let clamped = clamp(&proposed, &ceiling).manifest;
    assert!(
        clamped
            .egress
            .rules
            .iter()
            .all(|rule| rule.path_prefix == "/api")
    );
    assert!(
        clamped
            .egress
            .rules
            .iter()
            .any(|rule| rule.device_signature)
    );
    assert_eq!(clamp(&clamped, &ceiling).manifest, clamped);
}

/// Past the rule bound each kept rule takes the friction itself; rules that become the same
/// are kept once, so clamping again changes nothing.
#[test]
fn past_the_rule_bound_rules_take_the_friction_and_are_kept_once() {
    let mut egress = vec![get("/", false)];
    egress.extend((0..31).map(|at| get(&format!("/p{at}"), true)));
    let ceiling = egress_ceiling(json!(egress));
    let proposed = manifest(json!({"egress": allow(vec![get("/", false), get("/", true)])}));
    let clamped = clamp(&proposed, &ceiling).manifest;
    assert_eq!(clamped.egress.rules.len(), 1);
    assert!(clamped.egress.rules[0].device_signature);
    assert_eq!(clamp(&clamped, &ceiling).manifest, clamped);
}

fn arb_rule() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["https", "http"]),
        prop::sample::select(vec!["a.example", "b.example", "*.a.example", "x.a.example"]),
        prop::sample::select(vec![443_u16, 8443]),
        prop::sample::subsequence(vec!["GET", "HEAD", "POST", "PUT", "DELETE"], 1..=5),
        prop::sample::select(vec!["/", "/api", "/api/v1", "/other"]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(scheme, host, port, methods, path, ask, device)| {
            json!({"scheme": scheme, "host": host, "port": port, "methods": methods,
                   "path_prefix": path, "ask_when_tainted": ask, "device_signature": device})
        })
}

fn arb_manifest() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(arb_rule(), 0..6),
        prop::sample::subsequence(vec!["one", "two", "three"], 0..=3),
        prop::sample::select(vec!["none", "read", "write"]),
        any::<bool>(),
        (1_i64..100, 1_i64..1000, 1_i64..10_000),
    )
        .prop_map(|(rules, credentials, memory, model, (mb, cpu, wall))| {
            let host = "a.example";
            let binds: Vec<Value> = credentials
                .iter()
                .map(|name| credential(name, host))
                .collect();
            let mut rules = rules;
            if !binds.is_empty() {
                rules.push(rule(host, &["GET"], "/"));
            }
            json!({"egress": allow(rules), "credentials": binds, "memory": memory,
                   "model_socket": model,
                   "resources": {"memory_mb": mb, "cpu_ms": cpu, "timeout_ms": wall}})
        })
}

fn arb_ceiling() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(arb_rule(), 0..6),
        prop::sample::subsequence(vec!["one", "two", "four"], 0..=3),
        prop::sample::select(vec!["none", "read", "write"]),
        any::<bool>(),
        (1_i64..100, 1_i64..1000, 1_i64..10_000),
    )
        .prop_map(|(rules, credentials, memory, model, (mb, cpu, wall))| {
            json!({"type": "imurun.ceiling", "user": "alice", "version": 1, "expires_at": 1,
                   "egress": rules, "credentials": credentials, "memory": memory,
                   "model_socket": model,
                   "resources": {"memory_mb": mb, "cpu_ms": cpu, "timeout_ms": wall}})
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// deployed ⊆ ceiling ∩ proposed, and it is a valid manifest.
    #[test]
    fn what_deploys_is_within_the_ceiling_and_the_proposal(
        proposed in arb_manifest(),
        ceiling in arb_ceiling(),
    ) {
        let proposed = manifest(proposed);
        let ceiling = Ceiling::from_document(&ceiling).unwrap();
        let clamped = clamp(&proposed, &ceiling).manifest;
        let mut valid = clamped.clone();
        prop_assert!(valid.validate(HostAllowance::Operator).is_ok());
        for kept in &clamped.egress.rules {
            // Each method it allows, one ceiling rule allows, with at most its friction.
            for method in &kept.methods {
                let mut single = kept.clone();
                single.methods = vec![method.clone()];
                prop_assert!(
                    ceiling.egress.iter().any(|outer| rule_within(&single, outer)),
                    "{single:?} is beyond the ceiling"
                );
            }
            prop_assert!(
                proposed.egress.rules.iter().any(|outer| rule_within(kept, outer)),
                "{kept:?} was not proposed"
            );
        }
        for credential in &clamped.credentials {
            prop_assert!(ceiling.credentials.contains(&credential.name));
            prop_assert!(proposed.credentials.contains(credential));
            prop_assert!(clamped.egress.rules.iter().any(|rule| rule_covers(rule, &credential.bind)));
        }
        prop_assert!(clamped.memory <= ceiling.memory && clamped.memory <= proposed.memory);
        prop_assert!(!clamped.model_socket || (ceiling.model_socket && proposed.model_socket));
        prop_assert!(clamped.resources.memory_mb <= ceiling.resources.memory_mb.min(proposed.resources.memory_mb));
        prop_assert!(clamped.resources.cpu_ms <= ceiling.resources.cpu_ms.min(proposed.resources.cpu_ms));
        prop_assert!(clamped.resources.timeout_ms <= ceiling.resources.timeout_ms.min(proposed.resources.timeout_ms));
        prop_assert!(!clamped.card);
        // Clamping again changes nothing.
        prop_assert_eq!(clamp(&clamped, &ceiling).manifest, clamped);
    }
}
