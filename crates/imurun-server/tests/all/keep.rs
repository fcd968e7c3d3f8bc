//! Keep mode against the real router: an operator and two users, over HTTP.

use imurun_keep::random::OsRandom;
use std::collections::BTreeMap;
use std::sync::Arc;

use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::Signed;
use imurun_keep::keys::KeyPair;
use imurun_testkit::SseClient;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use crate::api_support::{Dirs, Reply, TestModel, TestServer, WAIT_MAX};
use crate::openapi::{concrete_path, operations};
use crate::support::{Keep, possession};

const CANARY: &str = "canary-b7e1-4f0c-9d2a-keep-vault";

#[tokio::test]
async fn every_route_needs_a_token_and_the_assistant_is_the_operators() {
    let keep = Keep::start().await;
    let server = &keep.server;
    // Every /api route needs a token in Keep mode, the health check included.
    assert_eq!(
        server.request_as(None, "GET", "/api/health", None).await.0,
        401
    );
    assert_eq!(
        keep.call(&keep.alice, "GET", "/api/health", None).await.0,
        200,
        "any Keep token reaches the health check"
    );
    for (method, path) in [
        ("GET", "/v1/whoami"),
        ("GET", "/v1/agents"),
        ("GET", "/api/sessions"),
        ("GET", "/v1/models"),
    ] {
        let (status, body, _) = server.request_as(None, method, path, None).await;
        assert_eq!(status, 401, "{method} {path}: {body}");
        let (status, _, _) = server
            .request_as(Some("imk_wrong"), method, path, None)
            .await;
        assert_eq!(status, 401, "{method} {path} with a wrong token");
    }
    let (status, body) = keep.call(&keep.alice, "GET", "/v1/whoami", None).await;
    assert_eq!(
        (status, body["role"].as_str(), body["user"].as_str()),
        (200, Some("user"), Some("alice"))
    );
    for (method, path) in [
        ("GET", "/api/sessions"),
        ("GET", "/v1/models"),
        ("GET", "/api/tools"),
    ] {
        let (status, body) = keep.call(&keep.alice, method, path, None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
        let (status, _) = keep.call(&keep.operator, method, path, None).await;
        assert_eq!(status, 200, "{method} {path} as the operator");
    }
    // Operator routes answer 403 to a user token.
    let operator_only = [
        ("POST", "/v1/agents"),
        ("GET", "/v1/agents/helper"),
        ("PUT", "/v1/ceilings/alice"),
        ("GET", "/v1/trust-root"),
        ("POST", "/v1/trust-root"),
        ("POST", "/v1/tokens"),
        ("DELETE", "/v1/tokens/abc"),
        ("POST", "/v1/enrol-codes"),
    ];
    // Refused before the body is read, so none is sent: a server may reset a connection whose
    // body it never read.
    for (method, path) in operator_only {
        let (status, answer) = keep.call(&keep.alice, method, path, None).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}: {answer}"
        );
    }
    // A revoked token stops at once.
    let (_, made) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/tokens",
            Some(json!({"user": "carol"})),
        )
        .await;
    let carol = made["token"].as_str().expect("token");
    assert_eq!(keep.call(carol, "GET", "/v1/whoami", None).await.0, 200);
    let id = made["id"].as_str().expect("id");
    revoke_token(&keep, id).await;
    assert_eq!(keep.call(carol, "GET", "/v1/whoami", None).await.0, 401);
    keep.server.stop().await;
}

#[tokio::test]
async fn another_users_objects_read_byte_for_byte_like_ids_that_never_existed() {
    let keep = Keep::start().await;
    // Alice enrols a device, gets a ceiling, and so has journal entries of her own.
    let (_, code) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/enrol-codes",
            Some(json!({"user": "alice"})),
        )
        .await;
    let device = KeyPair::generate(&OsRandom).expect("key");
    let (status, enrolled) = keep
        .call(&keep.alice, "POST", "/v1/devices", Some(json!({"public_key": device.public().to_hex(), "label": "laptop", "possession": possession(&device, "alice"), "enrol_code": code["code"]})))
        .await;
    assert_eq!(status, 201, "{enrolled}");
    let key_id = enrolled["key_id"].as_str().expect("key id").to_owned();
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    let alice_seq = journal["entries"][0]["seq"]
        .as_i64()
        .expect("an entry about alice");

    let pairs = [
        (
            format!("/v1/devices/{key_id}"),
            format!("/v1/devices/{}", "0".repeat(32)),
        ),
        (
            "/v1/ceilings/alice".to_owned(),
            "/v1/ceilings/nobody".to_owned(),
        ),
        (
            format!("/v1/journal/{alice_seq}"),
            "/v1/journal/999999".to_owned(),
        ),
    ];
    for (theirs, never) in pairs {
        let (status_theirs, body_theirs) = keep.raw(&keep.bob, "GET", &theirs).await;
        let (status_never, body_never) = keep.raw(&keep.bob, "GET", &never).await;
        assert_eq!(
            (status_theirs, status_never),
            (404, 404),
            "{theirs}: {body_theirs}"
        );
        assert_eq!(body_theirs, body_never, "{theirs} against {never}");
        assert_eq!(
            keep.raw(&keep.alice, "GET", &theirs).await.0,
            200,
            "{theirs} is Alice's"
        );
    }
    // Retiring her key with a decision of his own reads as retiring a key that never existed.
    let bobs = KeyPair::generate(&OsRandom).expect("key");
    let retire = |id: &str| retire_named(&bobs, id, &bobs.public().sha256(), "bob").to_string();
    let never = "1".repeat(32);
    let (status, _, body_theirs) = keep
        .server
        .request_as(
            Some(&keep.bob),
            "POST",
            &format!("/v1/devices/{key_id}/retire"),
            Some(retire(&key_id)),
        )
        .await;
    let (_, _, body_never) = keep
        .server
        .request_as(
            Some(&keep.bob),
            "POST",
            &format!("/v1/devices/{never}/retire"),
            Some(retire(&key_id)),
        )
        .await;
    assert_eq!((status, body_theirs), (404, body_never));
    let (_, bob_journal) = keep.call(&keep.bob, "GET", "/v1/journal", None).await;
    assert!(
        bob_journal["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .all(|entry| entry["user"] == "bob"),
        "{bob_journal}"
    );
    // Every probe is journaled where only the operator reads it: real and random ids alike.
    let (_, journal) = keep.call(&keep.operator, "GET", "/v1/journal", None).await;
    let probes: Vec<&Value> = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["actor"] == "user:bob" && entry["kind"] == "refusal")
        .collect();
    assert_eq!(probes.len(), 8, "{journal}");
    for probe in probes {
        assert_eq!(probe["user"], Value::Null, "{probe}");
        assert_eq!(probe["detail"]["rule"], "not_found", "{probe}");
        assert_eq!(probe["detail"]["status"], 404, "{probe}");
    }
    assert!(
        journal["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|entry| entry["subject"] == format!("GET /v1/devices/{key_id}")),
        "the probed id is named for the operator: {journal}"
    );
    keep.server.stop().await;
}

#[tokio::test]
async fn a_user_on_an_operator_route_is_journaled_and_refusals_are_bounded_per_minute() {
    let keep = Keep::start().await;
    let (status, _) = keep
        .call(
            &keep.alice,
            "POST",
            "/v1/enrol-codes",
            Some(json!({"user": "alice"})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = keep.call(&keep.alice, "GET", "/api/sessions", None).await;
    assert_eq!(status, 403);
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    let subjects: Vec<&str> = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["kind"] == "refusal")
        .filter_map(|entry| entry["subject"].as_str())
        .collect();
    assert_eq!(
        subjects,
        ["GET /api/sessions", "POST /v1/enrol-codes"],
        "{journal}"
    );
    // Past 20 in a minute, one entry says the rest are events only.
    // An answer that quotes a huge body is still the 400 it is, and journaled one line short.
    let huge = format!(r#"{{"agent": "maker", "{}": 1}}"#, "F".repeat(70_000));
    let (status, body, _) = keep
        .server
        .request_as(Some(&keep.alice), "POST", "/v1/sessions", Some(huge))
        .await;
    assert_eq!(status, 400, "{body}");
    // Control and bidi characters the request sent reach no entry as they are.
    let hostile = json!({"public_key": "\u{202e}\u{1b}]0;title\u{7}\nkey", "label": "x",
                         "possession": "p", "enrol_code": "c"});
    let (status, _) = keep
        .call(&keep.alice, "POST", "/v1/devices", Some(hostile))
        .await;
    assert!(status >= 400, "{status}");
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    let refusals: Vec<&Value> = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["kind"] == "refusal")
        .collect();
    assert!(
        refusals.iter().any(
            |entry| entry["subject"] == "POST /v1/sessions" && entry["detail"]["status"] == 400
        ),
        "{journal}"
    );
    for entry in &refusals {
        let text = entry.to_string();
        let fields = [&entry["subject"], &entry["detail"]["reason"]];
        for field in fields {
            let field = field.as_str().unwrap_or_default();
            assert!(field.chars().count() <= 500, "{text}");
            assert!(
                !field.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{text}"
            );
        }
    }
    // 45: should a minute turn during the loop, one of the two still holds more than 21.
    for _ in 0..45 {
        let (status, _) = keep.call(&keep.bob, "GET", "/v1/devices/nope", None).await;
        assert_eq!(status, 404);
    }
    let (_, journal) = keep.call(&keep.operator, "GET", "/v1/journal", None).await;
    let bob: Vec<&Value> = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|entry| entry["actor"] == "user:bob")
        .collect();
    // At most 21 a minute (20 and the one that says so), over at most two minutes.
    assert!((21..=42).contains(&bob.len()), "{} entries", bob.len());
    assert!(
        bob.iter()
            .any(|entry| entry["detail"]["rule"] == "journal_bound"),
        "{journal}"
    );
    keep.server.stop().await;
}

#[tokio::test]
async fn deploys_over_http_are_strict_signed_and_journaled() {
    let keep = Keep::start().await;
    let (status, agent) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/agents",
            Some(keep.deploy_body("helper", 1)),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
    assert_eq!(agent["bundle_size"], 16);
    let (_, listed) = keep.call(&keep.alice, "GET", "/v1/agents", None).await;
    assert_eq!(
        listed["agents"],
        json!([{"name": "helper", "version": 1, "description": "A helper.",
                "reach": {"egress_mode": "deny", "egress": [], "credentials": [],
                          "memory": "none", "model_socket": false, "card": false,
                          "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000}}}])
    );

    let (status, body) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/agents",
            Some(keep.deploy_body("helper", 1)),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("rolled_back"))
    );
    let mut flipped = keep.deploy_body("helper", 2);
    flipped["policy"]["signed"]["manifest"]["memory"] = json!("write");
    let (status, body) = keep
        .call(&keep.operator, "POST", "/v1/agents", Some(flipped))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("bad_signature")),
        "{body}"
    );

    // Duplicate names and floats in the body are refused before anything is read.
    let text = keep.deploy_body("helper", 2).to_string();
    let duplicated = text.replacen("{\"bundle\":", "{\"bundle\":\"AAAA\",\"bundle\":", 1);
    let (status, body, _) = keep
        .server
        .request_as(Some(&keep.operator), "POST", "/v1/agents", Some(duplicated))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("appears twice"),
        "{body}"
    );
    let floated = text.replacen("\"version\":2", "\"version\":2.0", 1);
    let (status, body, _) = keep
        .server
        .request_as(Some(&keep.operator), "POST", "/v1/agents", Some(floated))
        .await;
    assert_eq!(status, 400, "{body}");

    let (_, journal) = keep.call(&keep.operator, "GET", "/v1/journal", None).await;
    let kinds: Vec<&str> = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    // Every refusal is journaled, those of the strict reader too: with the version and key id
    // the refused body claims, marked unverified.
    assert_eq!(
        &kinds[..5],
        ["refusal", "refusal", "refusal", "refusal", "deploy"],
        "{journal}"
    );
    let floated = &journal["entries"][0];
    assert_eq!(floated["subject"], "POST /v1/agents", "{floated}");
    assert_eq!(floated["detail"]["status"], 400, "{floated}");
    assert_eq!(floated["detail"]["claimed"]["version"], "2.0", "{floated}");
    assert_eq!(
        floated["detail"]["claimed"]["unverified"], true,
        "{floated}"
    );
    assert!(
        floated["detail"]["claimed"]["key_id"].is_string(),
        "{floated}"
    );
    let (_, check) = keep
        .call(&keep.operator, "GET", "/v1/journal/verify", None)
        .await;
    assert_eq!(check["intact"], true, "{check}");
    // A user checks the same whole chain and is told the entries about them it read.
    let (status, check) = keep
        .call(&keep.alice, "GET", "/v1/journal/verify", None)
        .await;
    assert_eq!(
        (
            status,
            &check["intact"],
            &check["first_bad_seq"],
            &check["reason"]
        ),
        (200, &json!(true), &Value::Null, &Value::Null),
        "{check}"
    );
    assert!(check["entries"].is_u64(), "{check}");
    keep.server.stop().await;
}

#[tokio::test]
async fn a_second_device_needs_a_decision_from_the_first_used_once() {
    let keep = Keep::start().await;
    let (_, code) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/enrol-codes",
            Some(json!({"user": "alice"})),
        )
        .await;
    let first = KeyPair::generate(&OsRandom).expect("key");
    let body = json!({"public_key": first.public().to_hex(), "possession": possession(&first, "alice"), "enrol_code": code["code"]});
    assert_eq!(
        keep.call(&keep.alice, "POST", "/v1/devices", Some(body.clone()))
            .await
            .0,
        201
    );
    assert_eq!(
        keep.call(&keep.alice, "POST", "/v1/devices", Some(body))
            .await
            .0,
        403,
        "a code works once"
    );

    let second = KeyPair::generate(&OsRandom).expect("key");
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
    let decision = Signed::sign(
        &Decision::new(
            &OsRandom,
            &expected,
            &first,
            imurun_core::now_unix_s(),
            300,
            false,
        )
        .expect("decision"),
        &first,
    )
    .expect("sign");
    let enrol = json!({"public_key": second.public().to_hex(), "possession": possession(&second, "alice"), "decision": decision});
    // Bob holding the new key too, with his own proof, still cannot use Alice's decision.
    let mut as_bob = enrol.clone();
    as_bob["possession"] = json!(possession(&second, "bob"));
    let (status, body) = keep
        .call(&keep.bob, "POST", "/v1/devices", Some(as_bob))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("untrusted_key")),
        "Bob cannot use Alice's decision: {body}"
    );
    let (status, body) = keep
        .call(&keep.alice, "POST", "/v1/devices", Some(enrol.clone()))
        .await;
    assert_eq!(status, 201, "{body}");
    let third = KeyPair::generate(&OsRandom).expect("key");
    let mut replay = enrol;
    replay["public_key"] = json!(third.public().to_hex());
    replay["possession"] = json!(possession(&third, "alice"));
    let (status, body) = keep
        .call(&keep.alice, "POST", "/v1/devices", Some(replay))
        .await;
    assert_eq!(status, 403, "{body}");
    keep.server.stop().await;
}

/// A `retire_device` decision for `target` (of `user`'s), signed by `signer` now.
fn retire_body(signer: &KeyPair, target: &KeyPair, user: &str) -> Value {
    retire_named(signer, &target.key_id(), &target.public().sha256(), user)
}

/// A `retire_device` decision naming key `key_id` with `public_key_sha256`, signed by `signer`.
fn retire_named(signer: &KeyPair, key_id: &str, public_key_sha256: &str, user: &str) -> Value {
    let hashes = BTreeMap::from([("public_key".to_owned(), public_key_sha256.to_owned())]);
    let expected = Expected {
        kind: DecisionKind::RetireDevice,
        subject: key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user,
    };
    let decision = Decision::new(
        &OsRandom,
        &expected,
        signer,
        imurun_core::now_unix_s(),
        300,
        false,
    )
    .expect("decision");
    json!({"decision": Signed::sign(&decision, signer).expect("sign")})
}

/// The operator can make a person a token and an enrolment code; with both he still cannot
/// take her device away, nor enrol one of his own beside it, so nothing is approved in her
/// name. Only a decision of one of her devices retires one.
#[tokio::test]
async fn a_token_made_for_a_person_cannot_retire_her_device_or_enrol_another() {
    let keep = Keep::start().await;
    // A code made before her first device, and not used: her enrolment voids it.
    let (_, code) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/enrol-codes",
            Some(json!({"user": "alice"})),
        )
        .await;
    let hers = crate::support::enrol(&keep, &keep.alice, "alice").await;
    let device_path = format!("/v1/devices/{}", hers.key_id());
    let retire_path = format!("{device_path}/retire");

    // A token the operator makes for her.
    let minted = keep.token_for("alice").await;
    let (status, _) = keep.call(&minted, "DELETE", &device_path, None).await;
    assert_eq!(status, 405, "a token alone retired a device");
    let (status, body) = keep
        .call(&minted, "POST", &retire_path, Some(json!({})))
        .await;
    assert_eq!(status, 400, "{body}");
    // A decision signed by a key of his own, naming her.
    let his = KeyPair::generate(&OsRandom).expect("key");
    let (status, body) = keep
        .call(
            &minted,
            "POST",
            &retire_path,
            Some(retire_body(&his, &hers, "alice")),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("untrusted_key")),
        "{body}"
    );
    // No code is issued while she has a device (nor is she added again with one), and the
    // one kept back enrols nothing.
    for path in ["/v1/enrol-codes", "/v1/people"] {
        let (status, body) = keep
            .call(&keep.operator, "POST", path, Some(json!({"user": "alice"})))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some("conflict")),
            "{path}: {body}"
        );
    }
    let body = json!({"public_key": his.public().to_hex(), "possession": possession(&his, "alice"), "enrol_code": code["code"]});
    let (status, body) = keep.call(&minted, "POST", "/v1/devices", Some(body)).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("forbidden")),
        "{body}"
    );
    // The operator's own token retires nothing of hers, nor issues a code while she has a
    // device (the one above was used and voided by her enrolment).
    let (status, body) = keep
        .call(
            &keep.operator,
            "POST",
            &retire_path,
            Some(retire_body(&hers, &hers, "alice")),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("forbidden")),
        "{body}"
    );
    let (_, device) = keep.call(&keep.alice, "GET", &device_path, None).await;
    assert_eq!(device["retired_at_ms"], Value::Null, "{device}");

    // Her own device's decision retires it, once; the journal names the device that decided.
    let decision = retire_body(&hers, &hers, "alice");
    let (status, retired) = keep
        .call(&keep.alice, "POST", &retire_path, Some(decision.clone()))
        .await;
    assert_eq!(status, 200, "{retired}");
    assert!(retired["retired_at_ms"].is_i64(), "{retired}");
    let (status, body) = keep
        .call(&keep.alice, "POST", &retire_path, Some(decision))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{body}"
    );
    let (_, journal) = keep.call(&keep.alice, "GET", "/v1/journal", None).await;
    let entry = journal["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|entry| entry["detail"]["action"] == "retire")
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["detail"]["decided_by"], hers.key_id(), "{journal}");
    keep.server.stop().await;
}

#[tokio::test]
async fn a_vault_canary_reaches_no_answer_and_no_byte_of_the_database() {
    let keep = Keep::start().await;
    let (status, body) = keep
        .call(
            &keep.alice,
            "PUT",
            "/v1/vault/github",
            Some(json!({"value": CANARY})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let mut answers = String::new();
    for (token, path) in [
        (&keep.alice, "/v1/vault"),
        (&keep.operator, "/v1/journal"),
        (&keep.alice, "/v1/journal"),
        (&keep.operator, "/v1/vault"),
    ] {
        answers.push_str(&keep.raw(token, "GET", path).await.1);
    }
    assert!(answers.contains("github"), "{answers}");
    assert!(!answers.contains(CANARY), "{answers}");
    // While the host runs, the write-ahead log holds the newest writes; after it stops, the
    // database file holds them. Both are scanned, with the shared-memory file.
    let data = keep.dirs.db.parent().expect("data dir").to_path_buf();
    let running = scan_for_canary(&data);
    assert!(
        running
            .iter()
            .any(|path| path.to_string_lossy().ends_with("-wal")),
        "the write-ahead log was scanned: {running:?}"
    );
    keep.server.stop().await;
    scan_for_canary(&data);
}

/// Every file in `folder` (not below it), each checked for the canary; the files scanned.
fn scan_for_canary(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut scanned = Vec::new();
    for entry in std::fs::read_dir(folder).expect("dir") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            let bytes = std::fs::read(&path).expect("read");
            assert!(
                !bytes
                    .windows(CANARY.len())
                    .any(|window| window == CANARY.as_bytes()),
                "{}",
                path.display()
            );
            scanned.push(path);
        }
    }
    scanned
}

/// A vault body the strict reader refuses (a number past 2^53 where a string belongs) was
/// answered with a 400 that quoted the number: a secret typed into the wrong shape.
#[tokio::test]
async fn a_refused_vault_body_is_never_quoted_back() {
    let keep = Keep::start().await;
    for body in [
        r#"{"value": 98765432109876543210}"#,
        r#"{"value": 1234.5678}"#,
        r#"{"value": 987654}"#,
        r#"{"value": "x", "value": "987654"}"#,
    ] {
        let (status, _, text) = keep
            .server
            .request_as(
                Some(&keep.alice),
                "PUT",
                "/v1/vault/bank",
                Some(body.to_owned()),
            )
            .await;
        assert_eq!(status, 400, "{body}: {text}");
        for digits in ["9876543210", "1234", "5678", "987654"] {
            assert!(!text.contains(digits), "{body}: {text}");
        }
    }
    keep.server.stop().await;
}

#[tokio::test]
async fn outside_keep_mode_the_keep_routes_reach_nothing() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    for (method, path) in [
        ("GET", "/v1/whoami"),
        ("GET", "/v1/agents"),
        ("POST", "/v1/tokens"),
        ("GET", "/v1/journal"),
    ] {
        let (status, body, _) = server
            .request_as(None, method, path, Some("{}".into()))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (404, Some("keep_off")),
            "{method} {path}: {body}"
        );
    }
    server.stop().await;
}

/// The checks `openapi::` runs outside Keep mode, on a Keep host with the operator's token:
/// every Keep operation reaches its handler and answers a documented status, and a body of the
/// wrong JSON type is a 400.
#[tokio::test]
async fn every_keep_operation_answers_as_documented() {
    let keep = Keep::start().await;
    let (status, document) = keep
        .call(&keep.operator, "GET", "/api/openapi.json", None)
        .await;
    assert_eq!(status, 200);
    let mut checked = 0;
    for (method, path, operation) in operations(&document) {
        if operation["tags"][0] != "keep" {
            continue;
        }
        checked += 1;
        let concrete = concrete_path(&path);
        let body = (method != "GET" && method != "DELETE").then(|| json!({}));
        let (status, answer) = keep.call(&keep.operator, &method, &concrete, body).await;
        assert_ne!(status, 405, "{method} {path}: {answer}");
        let responses = operation["responses"].as_object().expect("responses");
        assert!(
            responses.contains_key(&status.to_string()),
            "{method} {path} answered {status}: {answer}"
        );
        if operation.get("requestBody").is_some() {
            for wrong in ["[null, null]", "null", "\"text\"", "7", "[]", " "] {
                let (status, answer, _) = keep
                    .server
                    .request_as(
                        Some(&keep.operator),
                        &method,
                        &concrete,
                        Some(wrong.to_owned()),
                    )
                    .await;
                assert_eq!(
                    (status, answer["error"]["code"].as_str()),
                    (400, Some("bad_request")),
                    "{method} {path} with {wrong}: {answer}"
                );
            }
        }
    }
    assert!(checked >= 21, "{checked} Keep operations");
    keep.server.stop().await;
}

/// `GET /api/events` opened with `token`.
async fn operator_events(keep: &Keep, token: &str) -> SseClient {
    SseClient::connect_with(
        keep.server.addr,
        "/api/events",
        &format!("Authorization: Bearer {token}\r\n"),
    )
    .await
}

/// The operator's `GET /api/events` checks its token again before each event, as a person's
/// `GET /v1/events` does: once the token is revoked the stream sends nothing more and ends.
#[tokio::test]
async fn an_operators_event_stream_ends_when_its_token_is_revoked() {
    let keep = Keep::start().await;
    let (id, second) = second_operator(&keep).await;
    let mut stream = operator_events(&keep, &second).await;
    let hub = keep.server.state.hub();
    hub.publish_value(None, json!({"type": "note.before", "session_id": null}))
        .expect("published");
    assert_eq!(
        stream.next_event().await.expect("an event").data()["type"],
        "note.before"
    );
    revoke_token(&keep, &id).await;
    hub.publish_value(None, json!({"type": "note.after", "session_id": null}))
        .expect("published");
    assert!(
        stream.next_event().await.is_none(),
        "an event reached a revoked token"
    );
    // The first operator's stream goes on.
    let mut first = operator_events(&keep, &keep.operator).await;
    hub.publish_value(None, json!({"type": "note.later", "session_id": null}))
        .expect("published");
    assert_eq!(
        first.next_event().await.expect("an event").data()["type"],
        "note.later"
    );
    keep.server.stop().await;
}

/// Opens a streamed `POST /v1/chat/completions` of `prompt` with `token`, on a connection the
/// server closes when the response ends.
async fn stream_completion(keep: &Keep, token: &str, prompt: &str) -> TcpStream {
    let body = json!({
        "model": "imurun", "stream": true,
        "messages": [{"role": "user", "content": prompt}]
    })
    .to_string();
    let mut stream = TcpStream::connect(keep.server.addr).await.expect("connect");
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("sent");
    stream
}

/// Waits until no turn runs on the host (at most [`WAIT_MAX`]).
async fn turns_stopped(keep: &Keep) {
    wait_for_turns(keep, false, "the turn never stopped").await;
}

/// Waits until a turn runs on the host (at most [`WAIT_MAX`]).
async fn turn_started(keep: &Keep) {
    wait_for_turns(keep, true, "the turn never started").await;
}

async fn wait_for_turns(keep: &Keep, running: bool, failure: &str) {
    let deadline = tokio::time::Instant::now() + WAIT_MAX;
    while (keep.server.state.running_turns() > 0) != running {
        assert!(tokio::time::Instant::now() < deadline, "{failure}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A second operator token, made by the first: its id and the token.
async fn second_operator(keep: &Keep) -> (String, String) {
    let (status, made) = keep
        .call(
            &keep.operator,
            "POST",
            "/v1/tokens",
            Some(json!({"operator": true})),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    (
        made["id"].as_str().expect("id").to_owned(),
        made["token"].as_str().expect("token").to_owned(),
    )
}

/// Revokes the token `id` with the operator's.
async fn revoke_token(keep: &Keep, id: &str) {
    let (status, body) = keep
        .call(&keep.operator, "DELETE", &format!("/v1/tokens/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
}

/// What `stream` sends until the server closes it, after the bytes `seen` already read.
async fn read_rest(stream: &mut TcpStream, mut seen: Vec<u8>) -> String {
    tokio::time::timeout(WAIT_MAX, stream.read_to_end(&mut seen))
        .await
        .expect("the stream ended in time")
        .expect("read");
    String::from_utf8_lossy(&seen).into_owned()
}

/// A streamed `POST /v1/chat/completions` checks the operator's token again before each chunk:
/// once the token is revoked the rest of the answer is not sent, and the turn stops.
#[tokio::test]
async fn a_streamed_completion_ends_when_its_token_is_revoked() {
    let gate = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![
        Reply::pieces(&["First half. ", "Second half."]).held_before(1, &gate),
    ]);
    let keep = Keep::start_with_model(model).await;
    let (id, second) = second_operator(&keep).await;
    let mut stream = stream_completion(&keep, &second, "Tell me in two halves.").await;
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("First half.") {
        let mut buffer = [0_u8; 1024];
        let read = tokio::time::timeout(WAIT_MAX, stream.read(&mut buffer))
            .await
            .expect("the first half in time")
            .expect("read");
        assert!(
            read > 0,
            "the stream ended early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..read]);
    }
    revoke_token(&keep, &id).await;
    gate.add_permits(1);
    // The response ends (the server closes the connection) without the second half.
    let text = read_rest(&mut stream, seen).await;
    assert!(!text.contains("Second half."), "{text}");
    assert!(!text.contains("[DONE]"), "{text}");
    turns_stopped(&keep).await;
    keep.server.stop().await;
}

/// A streamed completion whose turn sends nothing (the model still thinking) ends soon after
/// its token is revoked, and the turn stops: the token is checked every second, not only
/// before a chunk.
#[tokio::test]
async fn a_silent_streamed_completion_ends_when_its_token_is_revoked() {
    let gate = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![Reply::gated("Never said.", &gate)]);
    let keep = Keep::start_with_model(model).await;
    let (id, second) = second_operator(&keep).await;
    let mut stream = stream_completion(&keep, &second, "Think about it.").await;
    turn_started(&keep).await;
    revoke_token(&keep, &id).await;
    let text = read_rest(&mut stream, Vec::new()).await;
    assert!(!text.contains("[DONE]"), "{text}");
    turns_stopped(&keep).await;
    keep.server.stop().await;
}

/// A whole (not streamed) completion is not handed to a token revoked while its turn runs:
/// the request is answered 401 soon after the revoke, though the model has said nothing yet,
/// and the turn stops.
#[tokio::test]
async fn a_whole_completion_is_refused_to_a_token_revoked_during_its_turn() {
    let gate = Arc::new(Semaphore::new(0));
    let model = TestModel::new(vec![Reply::gated("The secret answer.", &gate)]);
    let keep = Arc::new(Keep::start_with_model(model).await);
    let (id, second) = second_operator(&keep).await;
    let asking = {
        let keep = Arc::clone(&keep);
        tokio::spawn(async move {
            keep.server
                .request_as(
                    Some(&second),
                    "POST",
                    "/v1/chat/completions",
                    Some(
                        json!({"model": "imurun",
                            "messages": [{"role": "user", "content": "What is it?"}]})
                        .to_string(),
                    ),
                )
                .await
        })
    };
    turn_started(&keep).await;
    revoke_token(&keep, &id).await;
    let (status, body, text) = asking.await.expect("the request");
    assert_eq!(status, 401, "{body}");
    assert!(!text.contains("secret"), "{text}");
    turns_stopped(&keep).await;
    let Ok(keep) = Arc::try_unwrap(keep) else {
        panic!("the host is still shared")
    };
    keep.server.stop().await;
}
