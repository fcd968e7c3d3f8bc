//! Attacks on agent-proposed tools (docs/keep/tools.md). Each test states the guarantee it
//! attacks; a failing test is a guarantee that does not hold.

use imurun_keep::authority::{clamp, rule_within};
use imurun_keep::decision::DecisionKind;
use imurun_keep::documents::{CEILING_TYPE, Ceiling, Signed};
use imurun_keep::host::HostAllowance;
use imurun_keep::manifest::{Manifest, rule_covers};
use imurun_testkit::Guest;
use serde_json::{Value, json};

use super::support::{START, pool};
use super::tools::{Bench, decision, events_of, local, tool};

/// Proposes `guest` as `name` with `extra` from a fresh session of alice's, and approves it.
pub(crate) async fn deploy_tool(b: &Bench, guest: Guest, name: &str, extra: Value, confirm: bool) {
    deploy_version(b, guest, (name, 1), extra, confirm).await;
}

/// [`deploy_tool`] at `version`.
async fn deploy_version(
    b: &Bench,
    guest: Guest,
    (name, version): (&str, i64),
    extra: Value,
    confirm: bool,
) {
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b
        .propose_in(&session.id, guest, tool(name, version, extra))
        .await;
    assert_eq!(said, "emitted", "{name}");
    let review =
        b.s.keep
            .tool_proposals()
            .list(&b.s.alice)
            .await
            .unwrap()
            .into_iter()
            .find(|review| review.name == name && review.state == "pending")
            .unwrap();
    b.decide(&review, DecisionKind::ApproveProposal, confirm)
        .await
        .unwrap();
}

fn reader_manifest(port: u16) -> Value {
    json!({"egress": {"mode": "allow", "rules": [local(port, &["GET", "POST"], "/api")]}})
}

async fn put_ceiling(b: &Bench, document: Value) {
    let envelope = Signed::sign(&document, &b.s.host.policy).unwrap();
    b.s.keep
        .ceilings()
        .put(&b.s.host.operator, "alice", &envelope)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// deployed ⊆ ceiling: a ceiling lowered (or expired) after deploy.
// ---------------------------------------------------------------------------------------------

/// Guarantee: "a tool can never exceed the person's ceiling however it is approved"; the
/// ceiling is "the most authority a user may ever grant a tool". The operator lowers alice's
/// ceiling to no egress at all after her tool was deployed: the tool must not reach what the
/// ceiling no longer allows.
#[tokio::test]
async fn attack_ceiling_lowered_after_deploy_still_lets_the_tool_out() {
    let b = Bench::start().await;
    let port = b.upstream.port;
    deploy_tool(&b, Guest::FetchTool, "reader", reader_manifest(port), false).await;
    let url = format!("http://127.0.0.1:{port}/api/page");
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "reader", json!({"url": url})).await;
    assert!(said.contains("\"status\":200"), "baseline: {said}");
    let hits_before = b.upstream.hits();
    // The operator takes all egress away from alice's tools.
    put_ceiling(
        &b,
        json!({
            "type": CEILING_TYPE, "user": "alice", "version": 2, "expires_at": START + 86_400,
            "egress": [], "credentials": [], "memory": "none", "model_socket": false,
            "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}
        }),
    )
    .await;
    let fresh =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&fresh.id, "reader", json!({"url": url})).await;
    assert_eq!(
        b.upstream.hits(),
        hits_before,
        "the tool reached upstream beyond the ceiling in force: {said}"
    );
}

/// Same guarantee, with the ceiling expiring (the empty ceiling then applies, per documents.rs).
#[tokio::test]
async fn attack_ceiling_expired_after_deploy_still_lets_the_tool_out() {
    let b = Bench::start().await;
    let port = b.upstream.port;
    put_ceiling(
        &b,
        json!({
            "type": CEILING_TYPE, "user": "alice", "version": 2, "expires_at": START + 300,
            "egress": [local(port, &["GET", "POST"], "/api")], "credentials": [],
            "memory": "read", "model_socket": false,
            "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000}
        }),
    )
    .await;
    deploy_tool(&b, Guest::FetchTool, "reader", reader_manifest(port), false).await;
    b.s.host.advance(400);
    assert_eq!(
        b.s.keep
            .tools()
            .get(&b.s.alice, "reader")
            .await
            .unwrap()
            .name,
        "reader"
    );
    let url = format!("http://127.0.0.1:{port}/api/page");
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "reader", json!({"url": url})).await;
    assert_eq!(
        b.upstream.hits(),
        0,
        "the tool reached upstream after its person's ceiling expired: {said}"
    );
}

// ---------------------------------------------------------------------------------------------
// Rows edited in the database.
// ---------------------------------------------------------------------------------------------

/// Guarantee: "revoke is immediate ... the revoked versions never run again" and "a row edited
/// in the database does not verify and the tool does not run". `revoked_at_ms` is outside the
/// host's seal: clearing it in the database un-revokes the tool.
#[tokio::test]
async fn attack_db_cleared_revoked_at_brings_a_revoked_tool_back() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    b.s.keep.tools().revoke(&b.s.alice, "echo").await.unwrap();
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "echo", json!({"n": 1})).await;
    assert!(said.starts_with("refused: no tool named"), "{said}");
    let pool = pool(&b.s.host).await;
    sqlx::query("UPDATE keep_tools SET revoked_at_ms = NULL WHERE name = 'echo'")
        .execute(&pool)
        .await
        .unwrap();
    let said = b.call(&session.id, "echo", json!({"n": 2})).await;
    assert!(
        !said.contains("echo\":{\"n\":2"),
        "a revoked tool ran again after its row was edited: {said}"
    );
}

/// Guarantee: "a tainted proposal needs confirm_tainted and deploys in egress `ask` mode until a
/// device-signed clear_taint". A proposal row is not sealed: flipping its `tainted` column in
/// the database before the decision deploys a tainted session's tool without the confirm and
/// with egress `allow`.
#[tokio::test]
async fn attack_db_flipped_proposal_taint_deploys_without_confirm_and_without_asking() {
    let b = Bench::start().await;
    let s = &b.s;
    let port = b.upstream.port;
    let url = format!("http://127.0.0.1:{port}/api/page");
    s.say(
        &s.alice,
        &b.session,
        json!({"fetch": {"method": "GET", "url": url}}),
    )
    .await;
    let said = b
        .propose(Guest::FetchTool, tool("reader", 1, reader_manifest(port)))
        .await;
    assert_eq!(said, "emitted");
    assert!(b.only_review().await.tainted);
    let pool = pool(&s.host).await;
    sqlx::query("UPDATE keep_tool_proposals SET tainted = 0, taint_source = NULL")
        .execute(&pool)
        .await
        .unwrap();
    let review = b.only_review().await;
    let decided = b
        .decide(&review, DecisionKind::ApproveProposal, false)
        .await;
    let deployed = s.keep.tools().get(&s.alice, "reader").await;
    assert!(
        decided.is_err() && deployed.is_err(),
        "a tainted session's proposal deployed without confirm_tainted, egress {:?}",
        deployed.map(|view| view.egress_mode)
    );
}

/// Held check: the bundle column of a deployed tool swapped in the database does not run (the
/// engine re-hashes the bytes against the sealed hash).
#[tokio::test]
async fn attack_db_swapped_tool_bundle_does_not_run() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::KeyTool, "keys", json!({}), false).await;
    let pool = pool(&b.s.host).await;
    sqlx::query("UPDATE keep_tools SET bundle = $1 WHERE name = 'keys'")
        .bind(Guest::PureTool.bytes())
        .execute(&pool)
        .await
        .unwrap();
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "keys", json!({"n": 3})).await;
    assert!(!said.contains("\"echo\""), "swapped code ran: {said}");
}

/// Held check: the manifest, taint and taint_cleared columns are under the seal.
#[tokio::test]
async fn attack_db_edited_tool_manifest_or_taint_does_not_run() {
    let b = Bench::start().await;
    let port = b.upstream.port;
    deploy_tool(&b, Guest::FetchTool, "reader", reader_manifest(port), false).await;
    let pool = pool(&b.s.host).await;
    let edits = [
        "UPDATE keep_tools SET manifest = replace(manifest, '\"/api\"', '\"/\"')",
        "UPDATE keep_tools SET manifest = replace(manifest, '\"allow\"', '\"allow\" ')",
        "UPDATE keep_tools SET taint_cleared = '{}'",
        "UPDATE keep_tools SET tainted = 1",
    ];
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    for edit in edits {
        let saved: (String, i64, Option<String>) =
            sqlx::query_as("SELECT manifest, tainted, taint_cleared FROM keep_tools")
                .fetch_one(&pool)
                .await
                .unwrap();
        sqlx::query(edit).execute(&pool).await.unwrap();
        let url = format!("http://127.0.0.1:{port}/other");
        let said = b.call(&session.id, "reader", json!({"url": url})).await;
        assert!(
            said.contains("cannot be run") || said.starts_with("refused"),
            "{edit}: {said}"
        );
        assert!(!said.contains("\"status\""), "{edit}: {said}");
        sqlx::query("UPDATE keep_tools SET manifest = $1, tainted = $2, taint_cleared = $3")
            .bind(saved.0)
            .bind(saved.1)
            .bind(saved.2)
            .execute(&pool)
            .await
            .unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Bounds bypassed through tool calls.
// ---------------------------------------------------------------------------------------------

/// Guarantee (cells.rs): refusals are journaled up to REFUSALS_JOURNALED_PER_SESSION_MAX (64)
/// per session, then one `journal_bound` entry. A tool's cell starts from a copy of the
/// session's counter and never hands it back, so each tool call journals afresh: a session
/// journals as many refusals as it makes tool calls.
#[tokio::test]
async fn attack_tool_calls_bypass_the_per_session_refusal_journal_bound() {
    let b = Bench::start().await;
    let port = b.upstream.port;
    deploy_tool(&b, Guest::FetchTool, "reader", reader_manifest(port), false).await;
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let url = format!("http://127.0.0.1:{port}/outside");
    let step = json!({"tool": {"name": "reader", "args": {"url": url}}});
    for round in 0..8 {
        // Past a minute the person's own bound starts again; the session's does not.
        if round == 4 {
            b.s.host.advance(60);
        }
        let steps: Vec<Value> = std::iter::repeat_n(step.clone(), 10).collect();
        b.s.say(&b.s.alice, &session.id, json!({"steps": steps}))
            .await;
    }
    // Past the session's bound a refusal is still the person's event, never silence.
    let told = events_of(&b.s, "alice", "refusal").len();
    assert!(
        told >= 80 - imurun_keep::cells::REFUSALS_JOURNALED_PER_SESSION_MAX - 1,
        "{told} refusals told as events"
    );
    let journal = b.s.keep.journal().list(&b.s.host.operator).await.unwrap();
    let refusals = journal
        .iter()
        .filter(|entry| entry.kind == "refusal" && entry.detail["session"] == session.id)
        .count();
    assert!(
        refusals <= imurun_keep::cells::REFUSALS_JOURNALED_PER_SESSION_MAX + 1,
        "{refusals} refusals journaled for one session (bound {})",
        imurun_keep::cells::REFUSALS_JOURNALED_PER_SESSION_MAX
    );
}

// ---------------------------------------------------------------------------------------------
// Names.
// ---------------------------------------------------------------------------------------------

/// Guarantee: a tool's name "does not look like a name in use". The host's own tools (here the
/// test host's `search`, offered to agent `full`, whose result is untrusted and taints the
/// session) are not among the names compared: an agent can propose `search`, and once approved
/// it silently replaces the host's tool for every agent of the person, and its result no
/// longer taints the session.
#[tokio::test]
async fn attack_a_proposed_tool_takes_a_host_tools_name_and_shadows_it() {
    let b = Bench::start().await;
    let s = &b.s;
    s.deploy(
        Guest::ScriptedFull,
        super::sessions::manifest(
            "full",
            json!({
                "egress": {"mode": "ask", "rules": [super::sessions::rule(9, &["GET"])]},
                "memory": "write", "model_socket": true,
            }),
        ),
    )
    .await;
    let full = s.keep.sessions().start(&s.alice, "full").await.unwrap();
    let said = b.call(&full.id, "search", json!({})).await;
    assert_eq!(said, "a page from outside", "baseline");
    let said = b
        .propose(Guest::PureTool, tool("search", 1, json!({})))
        .await;
    if said.starts_with("refused") {
        return;
    }
    // Accepted: approve it (the review shows no new authority) and call `search` again from a
    // fresh session of the host-tool agent.
    let review = b.only_review().await;
    assert!(review.no_new_authority);
    b.decide(&review, DecisionKind::ApproveProposal, false)
        .await
        .unwrap();
    let fresh = s.keep.sessions().start(&s.alice, "full").await.unwrap();
    let said = b.call(&fresh.id, "search", json!({"q": "x"})).await;
    let tainted = s
        .keep
        .sessions()
        .get(&s.alice, &fresh.id)
        .await
        .unwrap()
        .tainted;
    panic!(
        "a tool named like one of the host's own tools was accepted and now answers the \
         host tool's calls: `search` said {said:?}, session tainted: {tainted}"
    );
}

/// Same, with a confusable of the host tool's name (Cyrillic `е`, `а`).
#[tokio::test]
async fn attack_a_proposed_tool_takes_a_look_alike_of_a_host_tools_name() {
    let b = Bench::start().await;
    let said = b
        .propose(Guest::PureTool, tool("s\u{0435}\u{0430}rch", 1, json!({})))
        .await;
    // The shape check (a-z0-9-) refuses non-ASCII anyway: held if refused.
    assert!(said.starts_with("refused"), "{said}");
    let said = b
        .propose(Guest::PureTool, tool("seareh", 1, json!({})))
        .await;
    let _ = said; // informative only: no skeleton collision intended.
}

/// Held check: path characters, other namespaces, case and agent look-alikes in a tool's name.
#[tokio::test]
async fn attack_names_with_namespaces_case_and_look_alikes_are_refused() {
    let b = Bench::start().await;
    for name in [
        "u/alice/x",
        "u/bob/x",
        "x/../y",
        "ECHO",
        "rnaker",
        "ｍaker",
        "m-a-k-e-r",
        "ma_ker",
        "maker\u{200b}",
        "\u{202e}rekam",
        "x:y",
        "~x",
        "x\\y",
        "",
    ] {
        let said = b.propose(Guest::PureTool, tool(name, 1, json!({}))).await;
        assert!(said.starts_with("refused"), "{name:?}: {said}");
    }
    assert!(
        b.s.keep
            .tool_proposals()
            .list(&b.s.alice)
            .await
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// The host itself in other address spellings.
// ---------------------------------------------------------------------------------------------

/// Held check (intake): the host's own API in spellings beyond tools.rs's list.
#[tokio::test]
async fn attack_the_host_itself_in_other_spellings_is_refused_at_intake() {
    use imurun_keep::cells::CellsConfig;
    let api = imurun_testkit::Upstream::start(super::sessions::answer).await;
    let config = CellsConfig {
        loopback_ports: vec![api.port],
        cell: imurun_cell::CellConfig::default(),
        api_port: Some(api.port),
    };
    let s = super::sessions::Sessions::build(config, &["x"]).await;
    s.deploy(
        Guest::ScriptedFull,
        super::sessions::manifest(
            "maker",
            json!({
                "egress": {"mode": "allow", "rules": [local(api.port, &["GET"], "/api")]},
                "memory": "read", "model_socket": true,
                "resources": {"memory_mb": 64, "cpu_ms": 2000, "timeout_ms": 20_000},
            }),
        ),
    )
    .await;
    let session = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let bundle = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(Guest::FetchTool.bytes())
    };
    let device = super::tools::enrol(&s, &s.alice.clone(), "alice").await;
    let mut accepted = Vec::new();
    for host in [
        "2130706433",
        "0x7f000001",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "127.1",
        "127.0.0.2",
        "LOCALHOST",
        "localhost.",
        "api.localhost",
        "*.localhost",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[::]",
        "0",
    ] {
        let mut payload = tool(
            "deployer",
            1,
            json!({"egress": {"mode": "allow", "rules": [
                {"scheme": "http", "host": host, "port": api.port, "methods": ["POST"], "path_prefix": "/"}
            ]}}),
        );
        let mut rest = bundle.as_str();
        while !rest.is_empty() {
            let (head, tail) = rest.split_at(rest.len().min(super::tools::CHUNK));
            s.say(&s.alice, &session.id, json!({"buffer": head})).await;
            rest = tail;
        }
        payload["bundle"] = json!("$buffer");
        payload["type"] = json!("tool.propose");
        let said = s.say(&s.alice, &session.id, json!({"emit": payload})).await;
        if !said[0].starts_with("refused") {
            accepted.push(host);
        }
        // Keep the pending count low.
        for review in s.keep.tool_proposals().list(&s.alice).await.unwrap() {
            if review.state == "pending" {
                let deny = decision(&device, "alice", &review, DecisionKind::DenyProposal, false);
                s.keep
                    .tool_proposals()
                    .decide(&s.alice, &review.id, &deny)
                    .await
                    .unwrap();
            }
        }
    }
    assert!(
        accepted.is_empty(),
        "proposals naming the host's API port accepted for hosts {accepted:?}"
    );
    assert_eq!(api.hits(), 0);
}

// ---------------------------------------------------------------------------------------------
// Taint through tool calls.
// ---------------------------------------------------------------------------------------------

/// Held check: an untainted tool called from a tainted session carries the session's taint (a
/// POST is refused without `ask_when_tainted`), and a tool's egress answer taints its caller.
#[tokio::test]
async fn attack_tainted_session_tool_call_cannot_write_and_taint_propagates() {
    let b = Bench::start().await;
    let s = &b.s;
    let port = b.upstream.port;
    deploy_tool(&b, Guest::FetchTool, "reader", reader_manifest(port), false).await;
    let url = format!("http://127.0.0.1:{port}/api/page");
    // Propagation: the tool reads from outside, the session is tainted.
    let clean = s.keep.sessions().start(&s.alice, "maker").await.unwrap();
    let said = b.call(&clean.id, "reader", json!({"url": url})).await;
    assert!(said.contains("\"status\":200"), "{said}");
    assert!(
        s.keep
            .sessions()
            .get(&s.alice, &clean.id)
            .await
            .unwrap()
            .tainted
    );
    // The same (now tainted) session asks its tool to POST.
    let hits = b.upstream.hits();
    let said = b
        .call(&clean.id, "reader", json!({"url": url, "method": "POST"}))
        .await;
    assert_eq!(
        b.upstream.hits(),
        hits,
        "a tainted session's tool wrote: {said}"
    );
    assert!(!events_of(s, "alice", "session.tainted").is_empty());
}

// ---------------------------------------------------------------------------------------------
// The clamp, case by case.
// ---------------------------------------------------------------------------------------------

fn m(extra: Value) -> Manifest {
    let mut value = json!({
        "name": "t", "version": 1,
        "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 5000},
        "approval_timeout_s": 30
    });
    if let (Some(target), Some(source)) = (value.as_object_mut(), extra.as_object()) {
        target.extend(source.clone());
    }
    Manifest::from_json(&value, HostAllowance::Operator).unwrap()
}

fn ceiling(egress: Value, credentials: &[&str]) -> Ceiling {
    serde_json::from_value(json!({
        "type": CEILING_TYPE, "user": "alice", "version": 1, "expires_at": START + 1,
        "egress": egress, "credentials": credentials, "memory": "read", "model_socket": false,
        "resources": {"memory_mb": 16, "cpu_ms": 100, "timeout_ms": 1000}
    }))
    .unwrap()
}

fn r(scheme: &str, host: &str, port: u16, methods: &[&str], path: &str) -> Value {
    json!({"scheme": scheme, "host": host, "port": port, "methods": methods, "path_prefix": path})
}

fn within_ceiling(clamped: &Manifest, ceiling: &Ceiling) -> Result<(), String> {
    for rule in &clamped.egress.rules {
        for method in &rule.methods {
            let single = imurun_keep::manifest::EgressRule {
                methods: vec![method.clone()],
                ..rule.clone()
            };
            if !ceiling
                .egress
                .iter()
                .any(|outer| rule_within(&single, outer))
            {
                return Err(format!("{single:?} is beyond the ceiling"));
            }
        }
    }
    for credential in &clamped.credentials {
        if !ceiling.credentials.contains(&credential.name) {
            return Err(format!("credential {} beyond the ceiling", credential.name));
        }
        if !clamped
            .egress
            .rules
            .iter()
            .any(|rule| rule_covers(rule, &credential.bind))
        {
            return Err(format!(
                "credential {} bound outside the rules",
                credential.name
            ));
        }
    }
    if clamped.resources.memory_mb > ceiling.resources.memory_mb
        || clamped.resources.cpu_ms > ceiling.resources.cpu_ms
        || clamped.resources.timeout_ms > ceiling.resources.timeout_ms
        || clamped.memory > ceiling.memory
        || (clamped.model_socket && !ceiling.model_socket)
    {
        return Err("a limit beyond the ceiling".into());
    }
    Ok(())
}

/// Held check: wildcard vs name vs IP literal, http vs https, path prefix tricks, ports, and
/// credentials bound beyond the kept rules.
#[test]
fn attack_clamp_host_scheme_path_and_credential_tricks() {
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        // A wildcard proposed under a ceiling naming one host.
        (
            json!([r("https", "api.example.com", 443, &["GET"], "/")]),
            json!({"egress": {"mode": "allow", "rules": [r("https", "*.example.com", 443, &["GET"], "/")]}}),
            vec![],
        ),
        // The parent of a ceiling wildcard.
        (
            json!([r("https", "*.example.com", 443, &["GET"], "/")]),
            json!({"egress": {"mode": "allow", "rules": [r("https", "example.com", 443, &["GET"], "/")]}}),
            vec![],
        ),
        // http where the ceiling says https; another port.
        (
            json!([r("https", "api.example.com", 443, &["GET", "POST"], "/")]),
            json!({"egress": {"mode": "allow", "rules": [
                r("http", "api.example.com", 443, &["POST"], "/"),
                r("https", "api.example.com", 8443, &["POST"], "/")]}}),
            vec![],
        ),
        // Path prefix tricks.
        (
            json!([r("https", "api.example.com", 443, &["GET"], "/api")]),
            json!({"egress": {"mode": "allow", "rules": [
                r("https", "api.example.com", 443, &["GET"], "/apix"),
                r("https", "api.example.com", 443, &["GET"], "/ap"),
                r("https", "api.example.com", 443, &["GET"], "/")]}}),
            vec![],
        ),
        // An IP literal of a name in the ceiling.
        (
            json!([r("https", "api.example.com", 443, &["GET"], "/")]),
            json!({"egress": {"mode": "allow", "rules": [r("https", "93.184.216.34", 443, &["GET"], "/")]}}),
            vec![],
        ),
        // A credential bound to a host beyond the kept rules, or with more methods.
        (
            json!([r("https", "api.example.com", 443, &["GET"], "/")]),
            json!({"egress": {"mode": "allow", "rules": [
                    r("https", "api.example.com", 443, &["GET", "POST"], "/"),
                    r("https", "api.example.com", 8443, &["GET"], "/"),
                    r("https", "evil.example.net", 443, &["GET"], "/")]},
                   "credentials": [
                    {"name": "gh1", "header": "Authorization",
                     "bind": {"host": "evil.example.net", "port": 443, "methods": ["GET"], "path_prefix": "/"}},
                    {"name": "gh2", "header": "Authorization",
                     "bind": {"host": "api.example.com", "port": 443, "methods": ["GET", "POST"], "path_prefix": "/"}},
                    {"name": "gh3", "header": "Authorization",
                     "bind": {"host": "api.example.com", "port": 8443, "methods": ["GET"], "path_prefix": "/"}}]}),
            vec!["gh1", "gh2", "gh3"],
        ),
        // A credential bound under a wildcard the ceiling does not reach.
        (
            json!([r("https", "a.example.com", 443, &["GET"], "/")]),
            json!({"egress": {"mode": "allow", "rules": [r("https", "*.example.com", 443, &["GET"], "/")]},
                   "credentials": [
                    {"name": "gh", "header": "Authorization",
                     "bind": {"host": "b.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}}]}),
            vec!["gh"],
        ),
        // Friction: the ceiling needs a device signature, and refuses tainted writes.
        (
            json!([{"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["POST"],
                    "path_prefix": "/", "device_signature": true}]),
            json!({"egress": {"mode": "allow", "rules": [
                {"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["POST"],
                 "path_prefix": "/", "ask_when_tainted": true}]},
                   "memory": "write", "model_socket": true,
                   "resources": {"memory_mb": 64, "cpu_ms": 5000, "timeout_ms": 60000}}),
            vec![],
        ),
    ];
    for (index, (ceiling_egress, proposed, credentials)) in cases.into_iter().enumerate() {
        let ceiling = ceiling(ceiling_egress, &credentials);
        let proposed = m(proposed);
        let clamped = clamp(&proposed, &ceiling);
        within_ceiling(&clamped.manifest, &ceiling)
            .unwrap_or_else(|error| panic!("case {index}: {error}: {:?}", clamped.manifest));
    }
}

/// HELD: deleting the newest version's row does not bring the older sealed version back: a
/// row below the highest version ever deployed is rolled back, refused for calls and shown
/// refused.
#[tokio::test]
async fn holds_deleting_the_newest_row_does_not_roll_a_tool_back() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    deploy_version(&b, Guest::FetchTool, ("echo", 2), json!({}), false).await;
    assert_eq!(
        b.s.keep
            .tools()
            .get(&b.s.alice, "echo")
            .await
            .unwrap()
            .version,
        2
    );
    edit(
        &b,
        "DELETE FROM keep_tools WHERE name = 'echo' AND version = 2",
    )
    .await;
    let shown = b.s.keep.tools().get(&b.s.alice, "echo").await.unwrap();
    assert_eq!(shown.version, 1);
    let refused = shown.refused.expect("an older row is refused");
    assert!(
        refused.contains("rolled back") || refused.contains("version"),
        "{refused}"
    );
    let fresh =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&fresh.id, "echo", json!({"n": 3})).await;
    assert!(
        !said.contains("\"n\":3"),
        "version 1, replaced by version 2, runs: {said}"
    );
}

/// HELD: a revoke whose tool row had its version lowered in the database still revokes every
/// version deployed: the row's version and revocation put back afterwards do not bring the
/// tool back.
#[tokio::test]
async fn holds_a_revoke_of_a_row_whose_version_was_lowered() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "kept", json!({}), false).await;
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "kept", json!({"n": 1})).await;
    assert!(
        said.contains("\"n\":1"),
        "the tool runs before the edits: {said}"
    );
    edit(&b, "UPDATE keep_tools SET version = 0 WHERE name = 'kept'").await;
    b.s.keep.tools().revoke(&b.s.alice, "kept").await.unwrap();
    // The row and the database's marks put back: only the mark outside it remains.
    edit(
        &b,
        "UPDATE keep_tools SET version = 1, revoked_at_ms = NULL WHERE name = 'kept'",
    )
    .await;
    edit(&b, "DELETE FROM keep_versions WHERE kind = 'tool_revoked'").await;
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "kept", json!({})).await;
    assert!(said.starts_with("refused: no tool named"), "{said}");
}

/// HELD: with the database's own marks deleted as well, a revoke of a row marked revoked or
/// deleted beforehand still holds: restoring the rows brings neither tool back on the host
/// that took the revoke (the mark kept outside the database). Each revoke is journaled and
/// told to the person's stream, though the database said there was nothing to revoke.
#[tokio::test]
async fn holds_a_revoke_the_database_said_was_done_survives_the_database_undone() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    deploy_tool(&b, Guest::PureTool, "gone", json!({}), false).await;
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "gone", json!({"n": 1})).await;
    assert!(
        said.contains("\"n\":1"),
        "the tool runs before the edits: {said}"
    );
    edit(
        &b,
        "UPDATE keep_tools SET revoked_at_ms = 1 WHERE name = 'echo'",
    )
    .await;
    edit(
        &b,
        "CREATE TABLE saved_gone AS SELECT * FROM keep_tools WHERE name = 'gone'",
    )
    .await;
    edit(&b, "DELETE FROM keep_tools WHERE name = 'gone'").await;
    let error =
        b.s.keep
            .tools()
            .revoke(&b.s.alice, "echo")
            .await
            .unwrap_err();
    assert_eq!(error.rule(), "conflict", "{error}");
    let error =
        b.s.keep
            .tools()
            .revoke(&b.s.alice, "gone")
            .await
            .unwrap_err();
    assert_eq!(error.rule(), "not_found", "{error}");
    // Everything undone in the database, its marks included: only the file remains.
    edit(
        &b,
        "UPDATE keep_tools SET revoked_at_ms = NULL WHERE name = 'echo'",
    )
    .await;
    edit(&b, "INSERT INTO keep_tools SELECT * FROM saved_gone").await;
    edit(
        &b,
        "DELETE FROM keep_versions WHERE kind IN ('tool', 'tool_revoked')",
    )
    .await;
    for name in ["echo", "gone"] {
        let said = b.call(&session.id, name, json!({"n": 2})).await;
        assert!(said.starts_with("refused: no tool named"), "{name}: {said}");
        // Shown as what it is: refused, with no taint to clear.
        let shown = b.s.keep.tools().get(&b.s.alice, name).await.unwrap();
        let refused = shown.refused.clone().expect("shown refused");
        assert!(refused.contains("revoked"), "{name}: {refused}");
        assert!(shown.clear_taint.is_none(), "{name}: {shown:?}");
    }
    let journal = b.s.keep.journal().list(&b.s.host.operator).await.unwrap();
    for name in ["echo", "gone"] {
        let subject = format!("tool:u/alice/{name}");
        assert!(
            journal.iter().any(|entry| entry.kind == "tool"
                && entry.subject == subject
                && entry.detail["action"] == "revoke"),
            "u/alice/{name} is revoked by the mark, and the journal has no revoke for it"
        );
    }
    let told = events_of(&b.s, "alice", "tool.revoked");
    assert_eq!(told.len(), 2, "tool.revoked events: {told:?}");
    // A name never deployed is simply not found, and leaves nothing behind.
    let error =
        b.s.keep
            .tools()
            .revoke(&b.s.alice, "never")
            .await
            .unwrap_err();
    assert_eq!(error.rule(), "not_found", "{error}");
    assert_eq!(events_of(&b.s, "alice", "tool.revoked").len(), 2);
}

/// HELD: deleting the newest row and the database's deploy mark together does not roll a
/// tool back either: the mark kept outside the database still says version 2 was deployed.
#[tokio::test]
async fn holds_a_rollback_with_the_database_mark_deleted_too() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    deploy_version(&b, Guest::FetchTool, ("echo", 2), json!({}), false).await;
    edit(
        &b,
        "DELETE FROM keep_tools WHERE name = 'echo' AND version = 2",
    )
    .await;
    edit(&b, "DELETE FROM keep_versions WHERE kind = 'tool'").await;
    let shown = b.s.keep.tools().get(&b.s.alice, "echo").await.unwrap();
    assert_eq!(shown.version, 1);
    assert!(shown.refused.is_some(), "{shown:?}");
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "echo", json!({"n": 3})).await;
    assert!(!said.contains("\"n\":3"), "{said}");
}

/// HELD: the database's deploy mark is not sealed, so a revoke does not copy it into the mark
/// kept outside the database: one raised to the highest version before a revoke does not
/// refuse, for good, every later version approved once the database is put right.
#[tokio::test]
async fn holds_a_database_mark_raised_before_a_revoke_does_not_burn_the_name() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    edit(
        &b,
        "UPDATE keep_versions SET version = 9007199254740991 \
         WHERE kind = 'tool' AND subject = 'alice/echo'",
    )
    .await;
    b.s.keep.tools().revoke(&b.s.alice, "echo").await.unwrap();
    // The operator puts the database's marks back (a restore, or by hand).
    edit(
        &b,
        "UPDATE keep_versions SET version = 1 WHERE subject = 'alice/echo'",
    )
    .await;
    deploy_version(&b, Guest::PureTool, ("echo", 2), json!({}), false).await;
    let shown = b.s.keep.tools().get(&b.s.alice, "echo").await.unwrap();
    assert_eq!((shown.version, shown.refused.as_deref()), (2, None));
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "echo", json!({"n": 2})).await;
    assert!(
        said.contains("\"n\":2"),
        "echo@2, approved after the revoke, does not run: {said}"
    );
}

/// HELD: a revoke whose request is dropped (its client went away) once its write has
/// committed still leaves its mark outside the database: undoing it in the database does not
/// bring the tool back.
#[tokio::test]
async fn holds_a_revoke_dropped_after_its_commit_still_marks_the_tool() {
    use std::future::Future;
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    let pool = pool(&b.s.host).await;
    {
        let mut revoke = std::pin::pin!(b.s.keep.tools().revoke(&b.s.alice, "echo"));
        loop {
            let done = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(revoke.as_mut().poll(cx).is_ready())
            })
            .await;
            if done {
                // It ran to its end between two looks (the commit runs in a task of its
                // own): nothing was dropped, and the check below holds all the same.
                break;
            }
            let committed: Option<i64> = sqlx::query_scalar(
                "SELECT revoked_at_ms FROM keep_tools WHERE name = 'echo' AND version = 1",
            )
            .fetch_one(&pool)
            .await
            .expect("read");
            if committed.is_some() {
                // The client goes away now: the future is dropped.
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
    edit(
        &b,
        "UPDATE keep_tools SET revoked_at_ms = NULL WHERE name = 'echo'",
    )
    .await;
    edit(&b, "DELETE FROM keep_versions WHERE kind = 'tool_revoked'").await;
    let session =
        b.s.keep
            .sessions()
            .start(&b.s.alice, "maker")
            .await
            .unwrap();
    let said = b.call(&session.id, "echo", json!({"n": 2})).await;
    assert!(
        !said.contains("\"n\":2"),
        "the tool revoked on this host runs again: {said}"
    );
}

/// HELD: a revoke whose write fails after the tool's row was read (here the journal's head
/// set back in the database, so the entry collides) still leaves its mark outside the
/// database: the tool is refused on this host though the database never took the revoke.
#[tokio::test]
async fn holds_a_revoke_whose_write_fails_still_marks_the_tool() {
    let b = Bench::start().await;
    deploy_tool(&b, Guest::PureTool, "echo", json!({}), false).await;
    edit(&b, "UPDATE keep_journal_head SET seq = 1 WHERE one = 1").await;
    assert!(b.s.keep.tools().revoke(&b.s.alice, "echo").await.is_err());
    // The view reads the marks as a call does (starting a session would journal, which the
    // edited head refuses).
    let shown = b.s.keep.tools().get(&b.s.alice, "echo").await.unwrap();
    assert!(shown.revoked_at_ms.is_none(), "the database took no revoke");
    let refused = shown.refused.expect("shown refused");
    assert!(refused.contains("revoked"), "{refused}");
}

/// Runs `sql` on the host's database, behind the service's back.
async fn edit(b: &Bench, sql: &'static str) {
    sqlx::query(sql)
        .execute(&pool(&b.s.host).await)
        .await
        .expect("edit");
}
