//! Two Keep hosts on one PostgreSQL database (docs/keep/scaling.md): two `imurun serve --keep`
//! processes, each with its own home and a copy of one Keep folder, as two machines behind a
//! load balancer would run. What one host decided, revoked or journaled holds on the other;
//! a person's events and answers reach them wherever their connection landed.

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use imurun_testkit::{PostgresServer, TestDatabase, Upstream, ok};
use serde_json::{Value, json};

use crate::keep_hosts_kit::{
    Hosts, approve, call_tool, new_session, propose_tool, say, until_deployed,
};

/// What the local service answers every request with.
const UPSTREAM_BODY: &str = "the service behind host A answers";

/// How long a host may take to see what the other did.
const SEEN_WITHIN: Duration = Duration::from_secs(20);

fn expect(answer: (u16, String, Value), status: u16, what: &str) -> Value {
    assert_eq!(answer.0, status, "{what}: {}", answer.1);
    answer.2
}

/// `token`'s Keep events from the host at `addr`, read on a thread of their own.
fn keep_events(addr: &str, token: &str) -> Receiver<Value> {
    crate::serve_cli::sse_events(addr, "/v1/events", Some(token))
}

/// Waits for an event of `kind` on `events`; the events seen before it are skipped.
fn wait_for_event(events: &Receiver<Value>, kind: &str) -> Value {
    let deadline = Instant::now() + SEEN_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = events
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {kind} event within {SEEN_WITHIN:?}"));
        if event["type"] == kind {
            return event;
        }
    }
}

/// Everything a person meets on two hosts: a proposal made through host A shows on the event
/// stream held on host B; an egress use host A's cell waits on is listed by host B and
/// answered there, and the cell goes on; a device decision used on host A is refused when
/// replayed on host B; a token revoked through host A is refused by host B at the next call;
/// and the journal both hosts wrote is one chain.
#[test]
fn two_hosts_on_one_database_share_what_people_approved_revoked_and_were_shown() {
    let database = TestDatabase::create();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(Upstream::start(|_| ok(UPSTREAM_BODY)));
    let port_text = upstream.port.to_string();
    let hosts = Hosts::start(
        database.url(),
        &[("IMURUN_KEEP_EGRESS_LOOPBACK_PORTS", &port_text)],
    );
    let home = hosts.home_a.path().to_path_buf();
    hosts.deploy_agent(
        &json!({"mode": "ask", "rules": [{"scheme": "http", "host": "127.0.0.1",
        "port": upstream.port, "methods": ["GET"], "path_prefix": "/"}]}),
    );
    let (alice_id, alice) = hosts.user_token("alice");

    // A proposal made through host A reaches alice's stream on host B.
    let on_b = keep_events(&hosts.b.addr, &alice);
    let session = new_session(&hosts.a, &alice);
    let emitted = say(
        &hosts.a,
        &alice,
        &session,
        &json!({"emit": {"type": "suggestion", "title": "A walk", "text": "Go for a walk at noon."}}),
    );
    assert_eq!(emitted, "emitted");
    let created = wait_for_event(&on_b, "proposal.created");
    assert_eq!(created["proposal"]["kind"], "suggestion", "{created}");

    // An egress use host A's cell waits on: host B lists it, takes alice's answer, and the
    // cell's request goes out.
    let url = format!("http://127.0.0.1:{}/hello", upstream.port);
    std::thread::scope(|scope| {
        let fetch = scope.spawn(|| {
            say(
                &hosts.a,
                &alice,
                &session,
                &json!({"fetch": {"method": "GET", "url": url}}),
            )
        });
        let needed = wait_for_event(&on_b, "egress.approval_needed");
        let id = needed["approval"]["id"].as_str().unwrap().to_owned();
        let listed = expect(
            hosts.b.request(Some(&alice), "GET", "/v1/approvals", None),
            200,
            "the approvals host B lists",
        );
        assert_eq!(listed["approvals"][0]["id"], id.as_str(), "{listed}");
        expect(
            hosts.b.request(
                Some(&alice),
                "POST",
                &format!("/v1/approvals/{id}"),
                Some(&json!({"approve": true})),
            ),
            200,
            "alice approves on host B",
        );
        let reply = fetch.join().unwrap();
        let reply: Value = serde_json::from_str(reply.as_str().unwrap()).unwrap();
        assert_eq!(reply["status"], 200, "{reply}");
        assert_eq!(reply["body"], UPSTREAM_BODY, "{reply}");
        assert_eq!(upstream.hits(), 1, "the request left once");
        // Answered once: a second answer, on either host, finds nothing waiting.
        for host in [&hosts.a, &hosts.b] {
            let again = host.request(
                Some(&alice),
                "POST",
                &format!("/v1/approvals/{id}"),
                Some(&json!({"approve": true})),
            );
            assert_eq!(again.0, 404, "{}", again.1);
        }
    });

    // A use whose view (what alice is shown) was edited in the database: alice approves the
    // edited URL on host B, and host A, which checks the answer against the use as it showed
    // it, lets nothing leave.
    let hidden = format!("http://127.0.0.1:{}/exfiltrate?secret=1", upstream.port);
    std::thread::scope(|scope| {
        let fetch = scope.spawn(|| {
            say(
                &hosts.a,
                &alice,
                &session,
                &json!({"fetch": {"method": "GET", "url": hidden}}),
            )
        });
        let needed = wait_for_event(&on_b, "egress.approval_needed");
        let id = needed["approval"]["id"].as_str().unwrap().to_owned();
        database.sql(&format!(
            "UPDATE keep_egress_waits SET view = replace(view, '/exfiltrate?secret=1', \
             '/weather') WHERE id = '{id}'"
        ));
        let listed = expect(
            hosts.b.request(Some(&alice), "GET", "/v1/approvals", None),
            200,
            "the approvals host B lists",
        );
        assert!(
            listed["approvals"][0]["url"]
                .as_str()
                .is_some_and(|url| url.ends_with("/weather")),
            "{listed}"
        );
        expect(
            hosts.b.request(
                Some(&alice),
                "POST",
                &format!("/v1/approvals/{id}"),
                Some(&json!({"approve": true})),
            ),
            200,
            "alice approves what host B shows",
        );
        let reply = fetch.join().unwrap();
        assert!(
            !reply.to_string().contains(UPSTREAM_BODY),
            "the edited use was refused: {reply}"
        );
        assert_eq!(upstream.hits(), 1, "nothing more left");
    });

    // A notice sent on the events' channel by anyone who can reach the database, not sealed
    // by a host, reaches no stream: nothing of it comes before alice's next real event.
    database.sql(
        "SELECT pg_notify('imurun_keep_events', \
         '{\"h\":\"elsewhere\",\"u\":\"alice\",\"e\":{\"type\":\"session.reply\",\"forged\":true}}')",
    );
    database.sql("SELECT pg_notify('imurun_keep_events', '{\"h\":\"elsewhere\",\"missed\":true}')");
    say(
        &hosts.a,
        &alice,
        &session,
        &json!({"emit": {"type": "suggestion", "title": "Tea", "text": "Make tea."}}),
    );
    loop {
        let next = on_b.recv_timeout(SEEN_WITHIN).expect("alice's next event");
        assert!(
            next.get("forged").is_none() && next["type"] != "stream.missed",
            "a forged notice reached the stream: {next}"
        );
        if next["type"] == "proposal.created" {
            break;
        }
    }

    // A device decision used on host A is refused when replayed on host B.
    let code = hosts.imurun(&["keep", "enrol-code", "--user", "alice"])["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let first_key = home.join("first.key");
    let mut first = hosts.imurun(&[
        "keep",
        "device",
        "enrol",
        "--out",
        first_key.to_str().unwrap(),
        "--user",
        "alice",
    ]);
    first["enrol_code"] = json!(code);
    // The command prints the key's id beside the body; the body is the rest.
    first.as_object_mut().unwrap().remove("key_id");
    expect(
        hosts
            .a
            .request(Some(&alice), "POST", "/v1/devices", Some(&first)),
        201,
        "the first device, enrolled on host A",
    );
    let second_key = home.join("second.key");
    let mut second = hosts.imurun(&[
        "keep",
        "device",
        "enrol",
        "--out",
        second_key.to_str().unwrap(),
        "--user",
        "alice",
    ]);
    let public_key = hex_bytes(second["public_key"].as_str().unwrap());
    let decision = hosts.imurun(&[
        "keep",
        "decide",
        "--device",
        first_key.to_str().unwrap(),
        "--kind",
        "enrol_device",
        "--subject",
        second["key_id"].as_str().unwrap(),
        "--user",
        "alice",
        "--hash",
        &format!("public_key={}", crate::keep_cli::sha256_hex(&public_key)),
    ]);
    second["decision"] = decision;
    let second_key_id = second["key_id"].as_str().unwrap().to_owned();
    second.as_object_mut().unwrap().remove("key_id");
    expect(
        hosts
            .a
            .request(Some(&alice), "POST", "/v1/devices", Some(&second)),
        201,
        "the second device, approved by the first, on host A",
    );
    let replayed = hosts
        .b
        .request(Some(&alice), "POST", "/v1/devices", Some(&second));
    assert_eq!(replayed.0, 403, "{}", replayed.1);
    assert!(
        replayed.1.contains("nonce was used already"),
        "refused for its nonce: {}",
        replayed.1
    );
    // The first device retires the second with the command line, through host B; host A
    // lists it retired.
    let second_id = second_key_id.as_str();
    let said = crate::keep_hosts_kit::imurun(
        hosts.home_a.path(),
        &hosts.url,
        &[
            "keep",
            "device",
            "retire",
            second_id,
            "--device",
            first_key.to_str().unwrap(),
            "--url",
            &hosts.b.url(),
        ],
        &[("IMURUN_KEEP_TOKEN", alice.as_str())],
    );
    assert_eq!(said.trim(), format!("device {second_id}: retired"));
    let listed = expect(
        hosts.a.request(
            Some(&alice),
            "GET",
            &format!("/v1/devices/{second_id}"),
            None,
        ),
        200,
        "the retired device on host A",
    );
    assert!(listed["retired_at_ms"].is_i64(), "{listed}");

    // A NUL character (which PostgreSQL cannot hold) in an id is the request's fault.
    for path in ["/v1/sessions/s%00", "/v1/proposals/p%00", "/v1/tools/t%00"] {
        let answer = hosts.b.request(Some(&alice), "GET", path, None);
        assert_eq!(answer.0, 400, "{path}: {}", answer.1);
    }

    // A token revoked through host A is refused by host B at the next call.
    expect(
        hosts.b.request(Some(&alice), "GET", "/v1/sessions", None),
        200,
        "alice on host B before the revoke",
    );
    expect(
        hosts.a.request(
            Some(&hosts.operator),
            "DELETE",
            &format!("/v1/tokens/{alice_id}"),
            None,
        ),
        200,
        "the operator revokes alice's token on host A",
    );
    let after = hosts.b.request(Some(&alice), "GET", "/v1/sessions", None);
    assert_eq!(after.0, 401, "{}", after.1);

    // Both hosts wrote one journal: the chain holds.
    let verified = hosts.imurun(&["keep", "journal", "verify"]);
    assert!(verified["first_bad"].is_null(), "{verified}");
    drop(hosts);
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
        .collect()
}

/// 2 × 1 000 journaled writes sent to both hosts at once (the operator replacing vault
/// entries): every one is in the journal, and the journal is one valid chain.
#[test]
fn a_thousand_journal_appends_from_each_of_two_hosts_at_once_make_one_chain() {
    const PER_HOST: usize = 1_000;
    const THREADS_PER_HOST: usize = 8;
    let database = TestDatabase::create();
    let hosts = Hosts::start(database.url(), &[]);
    let before = hosts.imurun(&["keep", "journal", "verify"])["entries"]
        .as_u64()
        .unwrap();
    std::thread::scope(|scope| {
        for (name, host) in [("a", &hosts.a), ("b", &hosts.b)] {
            for thread in 0..THREADS_PER_HOST {
                let operator = hosts.operator.clone();
                scope.spawn(move || {
                    for at in (thread..PER_HOST).step_by(THREADS_PER_HOST) {
                        let answer = host.request(
                            Some(&operator),
                            "PUT",
                            &format!("/v1/vault/{name}-{}", at % 16),
                            Some(&json!({"value": format!("{name} {at}")})),
                        );
                        assert_eq!(answer.0, 200, "host {name}, write {at}: {}", answer.1);
                    }
                });
            }
        }
    });
    let verified = hosts.imurun(&["keep", "journal", "verify"]);
    assert!(verified["first_bad"].is_null(), "{verified}");
    assert_eq!(
        verified["entries"].as_u64().unwrap(),
        before + 2 * PER_HOST as u64,
        "{verified}"
    );
}

/// The database stops under both hosts and starts again: meanwhile a write is refused with a
/// clear 503 and the hosts stay up; nothing committed before is lost; once it is back both
/// hosts serve again, without a restart.
#[test]
fn the_database_stopped_and_started_again_under_two_hosts() {
    let server = PostgresServer::start();
    let database = server.database();
    let hosts = Hosts::start(database.url(), &[]);
    for (name, host) in [("a", &hosts.a), ("b", &hosts.b)] {
        expect(
            host.request(
                Some(&hosts.operator),
                "PUT",
                &format!("/v1/vault/before-{name}"),
                Some(&json!({"value": "kept"})),
            ),
            200,
            "a write before the stop",
        );
    }

    server.halt();
    for host in [&hosts.a, &hosts.b] {
        let refused = host.request(
            Some(&hosts.operator),
            "PUT",
            "/v1/vault/during",
            Some(&json!({"value": "never"})),
        );
        // The token check reads the database first: a request cannot be authenticated.
        assert_eq!(refused.0, 503, "{}", refused.1);
        assert_eq!(
            refused.2["error"]["code"], "database_unavailable",
            "{}",
            refused.1
        );
        // The host itself is up: what needs no database is served (the page).
        let page = host.request(None, "GET", "/", None);
        assert_eq!(page.0, 200, "{}", page.1);
    }

    server.resume();
    for host in [&hosts.a, &hosts.b] {
        let deadline = Instant::now() + SEEN_WITHIN;
        let listed = loop {
            let answer = host.request(Some(&hosts.operator), "GET", "/v1/vault", None);
            if answer.0 == 200 {
                break answer.2;
            }
            assert!(
                Instant::now() < deadline,
                "the host never served again: {}",
                answer.1
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let names: Vec<&str> = listed["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|entry| entry["name"].as_str())
            .collect();
        assert!(
            names.contains(&"before-a") && names.contains(&"before-b"),
            "{names:?}"
        );
        assert!(!names.contains(&"during"), "{names:?}");
    }
    expect(
        hosts.b.request(
            Some(&hosts.operator),
            "PUT",
            "/v1/vault/after",
            Some(&json!({"value": "written"})),
        ),
        200,
        "a write after the start",
    );
    let verified = hosts.imurun(&["keep", "journal", "verify"]);
    assert!(verified["first_bad"].is_null(), "{verified}");
}

/// A tool proposed through host A and approved on host B (a device-signed decision, checked
/// by B) answers calls on host A; revoked through host B, its call running on host A is
/// stopped, and it is refused at host A's next call.
#[test]
fn a_tool_approved_and_revoked_on_one_host_is_deployed_and_refused_on_the_other() {
    let database = TestDatabase::create();
    let hosts = Hosts::start(database.url(), &[]);
    // The agent's own egress is beside the point here; its rule reaches nothing.
    hosts.deploy_agent(&json!({"mode": "ask", "rules": [{"scheme": "https",
        "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}]}));
    hosts.set_ceiling("alice");
    let (_, alice) = hosts.user_token("alice");
    let device = hosts.enrol_device("alice", &alice);
    let id = propose_tool(&hosts.a, &alice, "echo");
    let caller = new_session(&hosts.a, &alice);
    assert!(
        call_tool(&hosts.a, &alice, &caller, "echo").starts_with("refused"),
        "not deployed before the approval"
    );
    approve(&hosts, &hosts.b, &alice, &device, &id);
    until_deployed(&hosts.a, &alice, &caller, "echo", Instant::now());
    // A call running on host A when the revoke commits on host B is stopped there: its
    // answer is "revoked", never the echo it would give at the end of its sleep.
    let slow = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            say(
                &hosts.a,
                &alice,
                &caller,
                &json!({"tool": {"name": "echo", "args": {"sleep_ms": 1900}}}),
            )
        });
        std::thread::sleep(Duration::from_millis(400));
        expect(
            hosts
                .b
                .request(Some(&alice), "POST", "/v1/tools/echo/revoke", None),
            200,
            "alice revokes echo on host B",
        );
        running.join().unwrap()
    });
    let slow = slow.as_str().unwrap_or_default();
    assert!(slow.starts_with("refused: revoked: u/alice/echo"), "{slow}");
    let after = call_tool(&hosts.a, &alice, &caller, "echo");
    assert!(after.starts_with("refused: no tool named"), "{after}");
    let verified = hosts.imurun(&["keep", "journal", "verify"]);
    assert!(verified["first_bad"].is_null(), "{verified}");
}

/// A host whose name another host took while its claim was down (its connection to the
/// database ended, as a restart ends it) stops at once, cells and all, rather than run beside
/// the other under one name; the hosts that kept their names serve on.
#[test]
fn a_host_whose_name_was_taken_while_its_claim_was_down_stops() {
    let database = TestDatabase::create();
    let hosts = Hosts::start(database.url(), &[]);
    let (_home, mut c) = hosts.another(&[("IMURUN_KEEP_HOST_ID", "web-c:1")]);
    database.sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _taken = runtime.block_on(async {
        let store = imurun_store::Store::open_url(database.url()).await.unwrap();
        let deadline = Instant::now() + SEEN_WITHIN;
        loop {
            if let Ok(Some(claim)) = store.claim_host("web-c:1").await {
                break claim;
            }
            assert!(Instant::now() < deadline, "the name was never free");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let status = c
        .exit_within(Duration::from_secs(30))
        .expect("the host whose name was taken stops");
    assert_eq!(status.code(), Some(3), "{status}");
    for host in [&hosts.a, &hosts.b] {
        expect(
            host.request(Some(&hosts.operator), "GET", "/v1/vault", None),
            200,
            "a host that kept its name serves on",
        );
    }
}
