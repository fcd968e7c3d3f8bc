//! People, as the operator manages them: listed with counts (never content), added with a
//! token and an enrolment code, revoked as a whole (tokens, codes, sessions, tools, devices,
//! each journaled as the operator's) without touching anyone else; none of it is a person's.

use imurun_keep::KeepError;
use imurun_testkit::Guest;
use serde_json::json;

use imurun_testkit::Upstream;

use super::attacks_tools::deploy_tool;
use super::session_bench::{Sessions, answer, fetch, manifest, rule, wait_for_approval};
use super::tools::Bench;

#[tokio::test]
async fn the_operator_revokes_a_person_whole_and_nobody_else() {
    let b = Bench::start().await;
    let s = &b.s;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    let bobs_session = s.keep.sessions().start(&s.bob, "maker").await.unwrap();

    // People are the operator's: a person's token lists, adds and revokes nobody.
    for refused in [
        s.keep.people().list(&s.alice).await.err(),
        s.keep.people().add(&s.alice, "carol", 900).await.err(),
        s.keep.people().revoke(&s.alice, "bob").await.err(),
    ] {
        assert!(
            matches!(refused, Some(KeepError::Forbidden(_))),
            "{refused:?}"
        );
    }
    let listed = s.keep.people().list(&s.host.operator).await.unwrap();
    let alice = listed.iter().find(|person| person.user == "alice").unwrap();
    assert_eq!(
        (
            alice.tokens,
            alice.devices,
            alice.tools,
            alice.live_sessions
        ),
        (1, 1, 1, 2),
        "{alice:?}"
    );

    // Adding makes a working token and a code for a first device.
    let carol = s
        .keep
        .people()
        .add(&s.host.operator, "carol", 900)
        .await
        .unwrap();
    let identity = s.keep.tokens().authenticate(&carol.token).await.unwrap();
    assert_eq!(identity.user(), Some("carol"));
    assert!(!carol.enrol_code.is_empty());

    // Alice has a device: no code is made for her, nor is she added again with one.
    let refused = s
        .keep
        .devices()
        .enrol_code(&s.host.operator, "alice", 900)
        .await;
    assert!(
        matches!(refused, Err(KeepError::Conflict(_))),
        "{refused:?}"
    );
    let refused = s.keep.people().add(&s.host.operator, "alice", 900).await;
    assert!(
        matches!(refused, Err(KeepError::Conflict(_))),
        "{refused:?}"
    );
    // Her agent proposes a tool she has not decided yet.
    let proposed = b
        .propose(Guest::PureTool, super::tools::tool("later", 1, json!({})))
        .await;
    assert_eq!(proposed, "emitted");
    let pending = s
        .keep
        .tool_proposals()
        .list(&s.alice)
        .await
        .unwrap()
        .into_iter()
        .find(|review| review.name == "later")
        .unwrap();
    assert_eq!(pending.state, "pending");
    let revoked = s
        .keep
        .people()
        .revoke(&s.host.operator, "alice")
        .await
        .unwrap();
    assert_eq!(revoked.tokens_revoked.len(), 1);
    assert_eq!(revoked.devices_retired.len(), 1);
    assert_eq!(revoked.tools_revoked, ["u/alice/echo"]);
    assert_eq!(revoked.sessions_stopped, 2);
    assert_eq!(revoked.enrol_codes_voided, 0, "her code was used");
    assert_eq!(revoked.proposals_closed, 1, "{revoked:?}");
    // Carol's code, never used, is voided with her.
    let carol_revoked = s
        .keep
        .people()
        .revoke(&s.host.operator, "carol")
        .await
        .unwrap();
    assert_eq!(carol_revoked.enrol_codes_voided, 1);

    // Added again, with a device enrolled by whoever holds her new token and code: the
    // proposal asked of her before is closed, and that device cannot decide it.
    let again = s
        .keep
        .people()
        .add(&s.host.operator, "alice", 900)
        .await
        .unwrap();
    let new_alice = s.keep.tokens().authenticate(&again.token).await.unwrap();
    let device = imurun_keep::keys::KeyPair::generate(&imurun_keep::random::OsRandom).unwrap();
    s.host
        .enrol(
            &new_alice,
            &device,
            "alice",
            imurun_keep::service::EnrolProof::Code(again.enrol_code.clone()),
        )
        .await
        .unwrap();
    let envelope = super::tools::decision(
        &device,
        "alice",
        &pending,
        imurun_keep::decision::DecisionKind::ApproveProposal,
        false,
    );
    let decided = s
        .keep
        .tool_proposals()
        .decide(&new_alice, &pending.id, &envelope)
        .await;
    assert!(
        decided.is_err(),
        "a closed proposal was approved: {decided:?}"
    );
    let shown = s
        .keep
        .tool_proposals()
        .get(&new_alice, &pending.id)
        .await
        .unwrap();
    assert_eq!(shown.state, "denied", "{shown:?}");
    assert!(
        s.keep
            .tools()
            .list(&new_alice)
            .await
            .unwrap()
            .iter()
            .all(|tool| tool.name != "later")
    );
    // Revoked again, for what follows: her new device is retired with her.
    s.keep
        .people()
        .revoke(&s.host.operator, "alice")
        .await
        .unwrap();

    // Her token works no more, her sessions and tool are gone, her device signs nothing.
    assert!(!s.keep.tokens().still_authorized(&s.alice).await);
    let session = s.keep.sessions().get(&s.alice, &b.session).await.unwrap();
    assert_eq!(session.end_reason.as_deref(), Some("stopped"));
    let tools = s.keep.tools().list(&s.alice).await.unwrap();
    assert!(
        tools.iter().all(|tool| tool.revoked_at_ms.is_some()),
        "{tools:?}"
    );
    let devices = s.keep.devices().list(&s.alice).await.unwrap();
    assert!(devices.iter().all(|device| device.retired_at_ms.is_some()));
    // Bob keeps everything: his token, his device and his live session.
    assert!(s.keep.tokens().still_authorized(&s.bob).await);
    assert!(
        s.keep
            .sessions()
            .get(&s.bob, &bobs_session.id)
            .await
            .unwrap()
            .live
    );
    assert!(
        s.keep
            .devices()
            .list(&s.bob)
            .await
            .unwrap()
            .iter()
            .all(|device| device.retired_at_ms.is_none())
    );

    // Each step is journaled as the operator's, and one entry sums them up.
    let entry = s.host.last_entry().await;
    assert_eq!(
        (entry.actor.as_str(), entry.subject.as_str(), &entry.detail),
        (
            "operator",
            "user:alice",
            &json!({"action": "revoke_person", "tokens": 1, "devices": 1,
                    "enrol_codes": 0, "sessions": 0, "tools": 0})
        )
    );
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    let first_revoke = journal
        .iter()
        .rev()
        .find(|entry| entry.detail["action"] == "revoke_person" && entry.subject == "user:alice")
        .unwrap();
    assert_eq!(
        first_revoke.detail["proposals"], 1,
        "{:?}",
        first_revoke.detail
    );
    let by_operator: Vec<(&str, &str)> = journal
        .iter()
        .filter(|entry| entry.user.as_deref() == Some("alice") && entry.actor == "operator")
        .map(|entry| {
            (
                entry.kind.as_str(),
                entry.detail["action"].as_str().unwrap_or(""),
            )
        })
        .collect();
    for step in [
        ("token", "revoke"),
        ("tool", "revoke"),
        ("device", "retire"),
    ] {
        assert!(by_operator.contains(&step), "{step:?} in {by_operator:?}");
    }

    // Again: nothing left to revoke, and a name tokens were never made for is not found.
    let again = s
        .keep
        .people()
        .revoke(&s.host.operator, "alice")
        .await
        .unwrap();
    assert!(again.tokens_revoked.is_empty() && again.tools_revoked.is_empty());
    let nobody = s.keep.people().revoke(&s.host.operator, "nobody").await;
    assert!(matches!(nobody, Err(KeepError::NotFound(_))), "{nobody:?}");
}

#[tokio::test]
async fn a_person_revoked_by_another_host_gets_no_cell_of_hers_here_again() {
    let b = Bench::start().await;
    let s = &b.s;
    // Another host on the same database (no cells of its own) revokes alice, then adds her
    // again: her session's cell on this host must not take the new token's messages.
    let other = other_host(&b.s).await;
    let revoked = other
        .people()
        .revoke(&s.host.operator, "alice")
        .await
        .unwrap();
    assert_eq!(revoked.sessions_stopped, 1, "{revoked:?}");
    let again = other
        .people()
        .add(&s.host.operator, "alice", 900)
        .await
        .unwrap();
    let alice = s.keep.tokens().authenticate(&again.token).await.unwrap();
    let free = s.free_slots();
    let said = s
        .keep
        .sessions()
        .send_message(
            &alice,
            &b.session,
            &json!({"reply": "still here?"}).to_string(),
        )
        .await;
    assert!(matches!(said, Err(KeepError::Conflict(_))), "{said:?}");
    assert_eq!(
        s.free_slots(),
        free + 1,
        "the cell here ended and freed its slot"
    );
    let view = s.keep.sessions().get(&alice, &b.session).await.unwrap();
    assert!(
        !view.live && view.end_reason.as_deref() == Some("stopped"),
        "{view:?}"
    );
}

/// Another host on `s`'s database and Keep folder, with no cells of its own.
async fn other_host(s: &Sessions) -> imurun_keep::service::KeepService {
    let store = imurun_store::Store::open_url(&s.host.url).await.unwrap();
    let clock: std::sync::Arc<dyn imurun_core::Clock> =
        std::sync::Arc::new(super::support::TestClock(s.host.now.clone()));
    imurun_keep::init::open(&s.host.dir.path().join("keep"), store, clock)
        .await
        .unwrap()
        .with_host_id("other")
}

#[tokio::test]
async fn a_use_waiting_when_its_person_is_revoked_elsewhere_is_refused_whatever_the_answer() {
    let upstream = Upstream::start(answer).await;
    let s = Sessions::start(vec![upstream.port]).await;
    let (session, pending, id) = a_use_waiting(&s, &upstream).await;

    // Another host revokes alice and adds her again: her new token neither sees nor approves
    // the use her old session's cell waits on here, and the cell sends nothing.
    let other = other_host(&s).await;
    other
        .people()
        .revoke(&s.host.operator, "alice")
        .await
        .unwrap();
    let again = other
        .people()
        .add(&s.host.operator, "alice", 900)
        .await
        .unwrap();
    let alice = s.keep.tokens().authenticate(&again.token).await.unwrap();
    assert!(s.keep.approvals().list(&alice).await.unwrap().is_empty());
    let answered = s.keep.approvals().answer(&alice, &id, true, None).await;
    assert!(answered.is_err(), "{answered:?}");
    nothing_went_out(pending, &upstream).await;
    let view = s.keep.sessions().get(&alice, &session).await.unwrap();
    assert!(!view.live, "an ended session is not live: {view:?}");
}

/// A person with more tokens than one read of the store holds is revoked whole, and her
/// detail counts every token while it lists the newest.
#[tokio::test]
async fn a_person_with_more_tokens_than_a_page_is_revoked_whole() {
    let b = Bench::start().await;
    let s = &b.s;
    let store = imurun_store::Store::open_url(&s.host.url).await.unwrap();
    let extra = usize::try_from(imurun_store::KEEP_LIST_ROWS_MAX).unwrap() + 5;
    let mut tx = store.keep_begin().await.unwrap();
    for n in 0..extra {
        let id = format!("kt-many-{n:05}");
        tx.insert_token(&id, &format!("hash-{id}"), "user", Some("alice"))
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    let detail = s
        .keep
        .people()
        .get(&s.host.operator, "alice")
        .await
        .unwrap();
    assert_eq!(detail.person.tokens, extra + 1);
    assert_eq!(
        detail.tokens.len(),
        usize::try_from(imurun_store::KEEP_LIST_ROWS_MAX).unwrap()
    );
    let revoked = s
        .keep
        .people()
        .revoke(&s.host.operator, "alice")
        .await
        .unwrap();
    assert_eq!(revoked.tokens_revoked.len(), extra + 1);
    // Her first token, older than every one made after it, works no more.
    assert!(!s.keep.tokens().still_authorized(&s.alice).await);
    assert!(
        store
            .keep_live_token_ids_of("alice")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.keep.tokens().still_authorized(&s.bob).await);
}

/// The operator's revoke of a tainted tool answers the tool without what tainted it (a file
/// or an address of its person's conversation), as the operator's view of her tools does;
/// its person still reads it.
#[tokio::test]
async fn the_operator_never_reads_what_tainted_a_persons_tool() {
    let b = Bench::start().await;
    let s = &b.s;
    let (url, _) = super::tools::tainted_reader(&b).await;
    let hers = s.keep.tools().get(&s.alice, "reader").await.unwrap();
    assert!(hers.taint_source.as_deref().unwrap().contains(&url));
    let detail = s
        .keep
        .people()
        .get(&s.host.operator, "alice")
        .await
        .unwrap();
    let listed = detail
        .tools
        .iter()
        .find(|tool| tool.name == "reader")
        .unwrap();
    assert!(listed.tainted && listed.taint_source.is_none() && listed.clear_taint.is_none());
    let revoked = s
        .keep
        .tools()
        .revoke(&s.host.operator, "u/alice/reader")
        .await
        .unwrap();
    assert!(
        revoked.tainted && revoked.taint_source.is_none(),
        "{revoked:?}"
    );
    assert!(!serde_json::to_string(&revoked).unwrap().contains(&url));
}

/// A person who retires her last device closes what waited for her decision and ends her
/// sessions in the same write: a device enrolled later (with a code, so by whoever holds her
/// token and a code) decides nothing asked of her before.
#[tokio::test]
async fn retiring_her_last_device_closes_what_waited_for_her() {
    let b = Bench::start().await;
    let s = &b.s;
    let proposed = b
        .propose(Guest::PureTool, super::tools::tool("before", 1, json!({})))
        .await;
    assert_eq!(proposed, "emitted");
    s.host
        .retire(&s.alice, &b.alice_device, &b.alice_device, "alice")
        .await
        .unwrap();
    let reviews = s.keep.tool_proposals().list(&s.alice).await.unwrap();
    let before = reviews
        .iter()
        .find(|review| review.name == "before")
        .unwrap();
    assert_eq!(before.state, "denied", "{before:?}");
    let session = s.keep.sessions().get(&s.alice, &b.session).await.unwrap();
    assert!(!session.live, "{session:?}");
    assert_eq!(session.end_reason.as_deref(), Some("stopped"));
    let journal = s.keep.journal().list(&s.host.operator).await.unwrap();
    let retired = journal
        .iter()
        .find(|entry| entry.detail["action"] == "retire")
        .unwrap();
    assert_eq!(
        retired.detail["proposals_closed"], 1,
        "{:?}",
        retired.detail
    );
    assert_eq!(retired.detail["sessions_ended"], 1, "{:?}", retired.detail);

    // A session started now proposes as any does.
    let later = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let proposed = b
        .propose_in(
            &later.id,
            Guest::PureTool,
            super::tools::tool("after", 1, json!({})),
        )
        .await;
    assert_eq!(proposed, "emitted");
}

/// A network use waiting for her when she retires her last device is refused whoever answers
/// it after, and nothing goes out.
#[tokio::test]
async fn a_use_waiting_when_she_retires_her_last_device_is_refused_whatever_the_answer() {
    let upstream = Upstream::start(answer).await;
    let s = Sessions::start(vec![upstream.port]).await;
    let device = super::tools::enrol(&s, &s.alice.clone(), "alice").await;
    let (_, pending, id) = a_use_waiting(&s, &upstream).await;
    s.host
        .retire(&s.alice, &device, &device, "alice")
        .await
        .unwrap();
    let answered = s.keep.approvals().answer(&s.alice, &id, true, None).await;
    assert!(answered.is_err(), "{answered:?}");
    nothing_went_out(pending, &upstream).await;
}

/// More rows left unended than one read of the store holds (hosts that died leave theirs):
/// retiring her last device ends every one, the newest included.
#[tokio::test]
async fn retiring_her_last_device_ends_every_session_however_many_were_left() {
    let b = Bench::start().await;
    let s = &b.s;
    let pool = super::support::pool(&s.host).await;
    for n in 0..1_001_i64 {
        sqlx::query(
            "INSERT INTO keep_sessions (id, user_name, agent, agent_version, created_at_ms) \
             VALUES ($1, 'alice', 'maker', 1, $2)",
        )
        .bind(format!("ks-left-{n}"))
        .bind(n + 1)
        .execute(&pool)
        .await
        .unwrap();
    }
    s.host
        .retire(&s.alice, &b.alice_device, &b.alice_device, "alice")
        .await
        .unwrap();
    let unended: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM keep_sessions WHERE user_name = 'alice' AND ended_at_ms IS NULL",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(unended, 0);
    let session = s.keep.sessions().get(&s.alice, &b.session).await.unwrap();
    assert!(!session.live, "the newest, running here: {session:?}");
}

/// Alice's session of the agent `asker` (its egress asks her) with a use of the upstream
/// waiting for her answer: the session, its message's task and the use's id.
async fn a_use_waiting(
    s: &Sessions,
    upstream: &Upstream,
) -> (
    String,
    tokio::task::JoinHandle<Result<Vec<String>, KeepError>>,
    String,
) {
    let rules = json!({"egress": {"mode": "ask", "rules": [rule(upstream.port, &["GET"])]}});
    s.deploy(Guest::ScriptedHttp, manifest("asker", rules))
        .await;
    let session = s.keep.sessions().start(&s.alice, "asker").await.unwrap().id;
    let url = format!("http://127.0.0.1:{}/api/waited", upstream.port);
    let pending = s.spawn_say(&s.alice, &session, fetch("GET", &url, ""));
    let id = wait_for_approval(&s.keep, &s.alice).await;
    (session, pending, id)
}

/// The message whose use waited ended in an error, and nothing reached the upstream.
async fn nothing_went_out(
    pending: tokio::task::JoinHandle<Result<Vec<String>, KeepError>>,
    upstream: &Upstream,
) {
    let said = pending.await.unwrap();
    assert!(
        said.as_ref()
            .map_or(true, |replies| replies[0].contains("error")),
        "{said:?}"
    );
    assert_eq!(upstream.hits(), 0);
}
