//! The SSE stream as a snapshot: scripted turns through the real server, watched by one real SSE
//! client on `GET /api/events`, in which every event type the server publishes today appears
//! with its fields. A change to any event's shape shows up as a readable diff of one line.
//!
//! Volatile values are normalised before the snapshot: ids become placeholders numbered by first
//! appearance (`[session-1]`, `[turn-2]`, `[call-3]`), so the snapshot still shows which events
//! belong together; times, the workspace path and the token counts of compaction (they depend
//! on the length of today's date in the system message) become fixed markers; long texts are
//! shortened. Besides the snapshot, the set of types seen must equal [`EXPECTED_EVENT_TYPES`],
//! so a scenario that stops producing an event fails even if its snapshot is accepted blindly.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use imurun_core::{BoxFuture, GenerateRequest, Model, ModelError};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::api_support::{Dirs, Reply, TestModel, TestServer, tool_reply, write_file};
use crate::support::SseClient;

/// Every event type the server publishes in this script (the hub's own `stream.*` notices
/// excepted: they belong to a client's connection, not to what the agent does, and `sse_wire`,
/// `replay` and `backpressure` cover them). The pre-fetch's `tools.*`/`web_search.*` (their
/// timings and the clock's text differ from run to run) are checked in imurun-agent's
/// `prefetch` tests and against their schemas in `openapi`; `agent.*` needs the binary's
/// `run_agent` and is checked over SSE by imurun's `serve_cli` end-to-end turn.
const EXPECTED_EVENT_TYPES: [&str; 20] = [
    "answer.checking",
    "compaction.done",
    "compaction.start",
    "grants.revoked",
    "permissions",
    "prompt.delivered",
    "session.created",
    "session.deleted",
    "session.updated",
    "skill.used",
    "step",
    "stop.all",
    "token",
    "tool.approval_needed",
    "tool.approved",
    "tool.call",
    "tool.denied",
    "tool.result",
    "turn.end",
    "turn.start",
];

/// Texts longer than this many characters are shortened in the snapshot.
const SNAPSHOT_TEXT_CHARS_MAX: usize = 160;

/// The answer that fills the history so that the next turn must compact it: about 1700
/// estimated tokens, far more than the margin the compaction turn is given.
fn long_answer() -> String {
    "The lighthouse keeper wrote down every ship that passed. ".repeat(105)
}

#[tokio::test]
async fn every_event_type_reaches_an_sse_client_with_its_documented_fields() {
    let dirs = Dirs::new();
    write_file(&dirs, "notes.txt", "buy milk");
    let gate = Arc::new(Semaphore::new(0));
    let replies = vec![
        // A prompt that invokes a skill, answered at once.
        Reply::text("Waves fold into foam."),
        // A tool step, then an answer.
        Reply::text(&tool_reply("file_read", json!({"path": "notes.txt"}))),
        Reply::text("The notes say: buy milk."),
        // A call to a tool that does not exist (retry), a thought alone (nudge), an answer.
        Reply::text(&tool_reply("no_such_tool", json!({}))),
        Reply::text("<think>The user wants a word.</think>"),
        Reply::text("A word."),
        // An answer held back until a second prompt is queued, then the queued prompt's answer.
        Reply::gated("First answer.", &gate),
        Reply::text("Second answer."),
        // In ask mode: approved (and remembered), then denied, which ends its turn.
        Reply::text(&tool_reply("file_read", json!({"path": "notes.txt"}))),
        Reply::text("Approved, and read: buy milk."),
        Reply::text(&tool_reply("file_read", json!({"path": "notes.txt"}))),
        // A long answer, then a turn whose history no longer fits.
        Reply::text(&long_answer()),
        Reply::text("Short again."),
    ];
    let model = Arc::new(LimitedModel::new(TestModel::new(replies)));
    let server = TestServer::start(&dirs, Some(model.clone() as Arc<dyn Model>)).await;
    let mut script = Script {
        events: server.events(None).await,
        seen: Vec::new(),
    };

    let (status, created) = server
        .post("/api/sessions", json!({"title": "snapshot"}))
        .await;
    assert_eq!(status, 201, "{created}");
    let session = created["id"].as_str().unwrap().to_owned();
    script.read_until("session.created").await;
    let (status, renamed) = server
        .patch(
            &format!("/api/sessions/{session}"),
            json!({"title": "renamed"}),
        )
        .await;
    assert_eq!(status, 200, "{renamed}");
    script.read_until("session.updated").await;

    let (status, skill) = server
        .post(
            "/api/skills",
            json!({"name": "haiku", "body": "Answer in a haiku."}),
        )
        .await;
    assert_eq!(status, 201, "{skill}");
    prompt(&server, &session, "/haiku the sea").await;
    script.turn_ended(&server, &session).await;
    prompt(&server, &session, "What do my notes say?").await;
    script.turn_ended(&server, &session).await;
    prompt(&server, &session, "Use the frobnicator").await;
    script.turn_ended(&server, &session).await;

    prompt(&server, &session, "first").await;
    script.read_until("turn.start").await;
    let queued = prompt(&server, &session, "second").await;
    assert_eq!(queued["queued"], true);
    gate.add_permits(1);
    script.turn_ended(&server, &session).await;

    let (status, permissions) = server
        .post("/api/permissions", json!({"mode": "ask"}))
        .await;
    assert_eq!(status, 200, "{permissions}");
    script.read_until("permissions").await;
    prompt(&server, &session, "Read my notes, with my approval").await;
    let approval = script.read_until("tool.approval_needed").await;
    decide(
        &server,
        &approval,
        json!({"approved": true, "remember": true}),
    )
    .await;
    script.turn_ended(&server, &session).await;
    let (status, revoked) = server.delete(&format!("/api/grants/{session}")).await;
    assert_eq!(
        (status, &revoked["sessions"]),
        (200, &json!(1)),
        "{revoked}"
    );
    script.read_until("grants.revoked").await;
    prompt(&server, &session, "Read my notes again").await;
    let approval = script.read_until("tool.approval_needed").await;
    decide(&server, &approval, json!({"approved": false})).await;
    script.turn_ended(&server, &session).await;

    // With nothing running, the kill switch stops nothing; a running turn would race its own
    // `turn.end` against `stop.all` and make the order of the snapshot a matter of luck.
    let (status, killed) = server.post("/api/stop", json!({})).await;
    assert_eq!(status, 200, "{killed}");
    script.read_until("stop.all").await;

    // Dropping (not summarising) keeps the compaction free of a side generation.
    let (status, agent) = server
        .post("/api/agent", json!({"summariseHistory": false}))
        .await;
    assert_eq!(status, 200, "{agent}");
    prompt(&server, &session, "Tell me everything").await;
    script.turn_ended(&server, &session).await;
    model.fit_only_system_and_prompt();
    prompt(&server, &session, "Sum it up in one sentence.").await;
    script.turn_ended(&server, &session).await;

    let (status, deleted) = server.delete(&format!("/api/sessions/{session}")).await;
    assert_eq!(status, 200, "{deleted}");
    script.read_until("session.deleted").await;

    let seen = script.seen;
    check_numbering(&seen);
    check_compaction(&seen);
    let types: BTreeSet<&str> = seen
        .iter()
        .map(|(_, event)| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, BTreeSet::from(EXPECTED_EVENT_TYPES));
    let step_kinds: BTreeSet<&str> = seen
        .iter()
        .filter(|(_, event)| event["type"] == "step")
        .map(|(_, event)| event["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        step_kinds,
        BTreeSet::from(["answer", "nudge", "retry", "tool"])
    );
    let events: Vec<Value> = seen.into_iter().map(|(_, event)| event).collect();
    insta::assert_snapshot!(normalised_lines(&events));
    server.stop().await;
}

/// The SSE client and every event it received, with the `id:` line of each message.
struct Script {
    events: SseClient,
    seen: Vec<(Option<u64>, Value)>,
}

impl Script {
    /// Reads events until `turn.end`, then waits until the turn's task has finished too.
    ///
    /// `turn.end` goes out before the task persists the turn and leaves the session: a prompt
    /// posted in between joins the ending turn's queue, and the kill switch counts that turn as
    /// stopped. Waiting keeps the snapshot free of that race.
    async fn turn_ended(&mut self, server: &TestServer, session: &str) {
        let end = self.read_until("turn.end").await;
        server
            .finished_turn(session, end["turn_id"].as_str().expect("a turn id"))
            .await;
    }

    /// Reads events (tokens included) until one of type `until`, and returns that one.
    async fn read_until(&mut self, until: &str) -> Value {
        loop {
            let message = self.events.next_event().await.expect("the stream goes on");
            let event = message.data();
            self.seen.push((message.id(), event.clone()));
            if event["type"] == until {
                return event;
            }
        }
    }
}

async fn prompt(server: &TestServer, session: &str, prompt: &str) -> Value {
    let (status, accepted) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": prompt}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    accepted
}

async fn decide(server: &TestServer, approval_needed: &Value, decision: Value) {
    let approval_id = approval_needed["approval_id"]
        .as_str()
        .expect("an approval id");
    let (status, decided) = server
        .post(&format!("/api/tools/approvals/{approval_id}"), decision)
        .await;
    assert_eq!(status, 200, "{decided}");
}

/// The client saw every event: ids 1, 2, 3, … in the data and on the `id:` line alike, each
/// with a `ts` in milliseconds.
fn check_numbering(seen: &[(Option<u64>, Value)]) {
    for (expected_id, (line_id, event)) in (1..).zip(seen) {
        assert_eq!(event["id"], expected_id, "{event}");
        assert_eq!(*line_id, Some(expected_id), "{event}");
        assert!(event["ts"].as_u64().is_some_and(|ts| ts > 0), "{event}");
    }
}

/// The compaction counts the snapshot hides: the request was over budget before, and fits
/// after.
fn check_compaction(seen: &[(Option<u64>, Value)]) {
    let find = |event_type: &str| {
        seen.iter()
            .map(|(_, event)| event)
            .find(|event| event["type"] == event_type)
            .unwrap_or_else(|| panic!("no {event_type}"))
    };
    let start = find("compaction.start");
    let done = find("compaction.done");
    let budget = start["budget"].as_u64().expect("a budget");
    assert!(
        start["tokens"].as_u64().expect("tokens") > budget,
        "{start}"
    );
    assert!(done["tokens"].as_u64().expect("tokens") <= budget, "{done}");
}

/// One line of compact JSON per event, normalised as the module documentation says.
fn normalised_lines(events: &[Value]) -> String {
    let mut placeholders = Placeholders::default();
    events
        .iter()
        .map(|event| {
            let Value::Object(fields) = event else {
                panic!("an event is an object: {event}");
            };
            let compaction = fields["type"]
                .as_str()
                .is_some_and(|event_type| event_type.starts_with("compaction."));
            normalise_object(fields, compaction, &mut placeholders).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn normalise_object(
    fields: &Map<String, Value>,
    compaction: bool,
    placeholders: &mut Placeholders,
) -> Value {
    let mut normalised = Map::new();
    for (key, value) in fields {
        let value = match (key.as_str(), value) {
            ("id" | "ts", _) if fields.contains_key("type") => json!(format!("[{key}]")),
            ("deadline_ms" | "created_at_ms" | "updated_at_ms", _) => json!("[ms]"),
            ("workspaceRoot", _) => json!("[workspace]"),
            ("tokens" | "budget", _) if compaction => json!("[tokens]"),
            ("session_id" | "turn_id" | "call_id" | "approval_id", Value::String(id)) => {
                json!(placeholders.of(key.trim_end_matches("_id"), id))
            }
            ("session_ids", Value::Array(ids)) => ids
                .iter()
                .map(|id| json!(placeholders.of("session", id.as_str().unwrap_or_default())))
                .collect(),
            // The session object inside `session.created` and `session.updated`.
            ("session", Value::Object(session)) => {
                let mut session = session.clone();
                if let Some(Value::String(id)) = session.get("id") {
                    let id = placeholders.of("session", id);
                    session.insert("id".to_owned(), json!(id));
                }
                normalise_object(&session, false, placeholders)
            }
            (_, Value::String(text)) => json!(shortened(text)),
            (_, value) => value.clone(),
        };
        normalised.insert(key.clone(), value);
    }
    Value::Object(normalised)
}

fn shortened(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= SNAPSHOT_TEXT_CHARS_MAX {
        return text.to_owned();
    }
    let head: String = text.chars().take(60).collect();
    format!("{head}[… {chars} characters in all]")
}

/// Stable names for volatile ids: `[kind-n]`, numbered per kind by first appearance.
#[derive(Default)]
struct Placeholders {
    names: HashMap<(String, String), String>,
    counts: HashMap<String, usize>,
}

impl Placeholders {
    fn of(&mut self, kind: &str, id: &str) -> String {
        let key = (kind.to_owned(), id.to_owned());
        if let Some(name) = self.names.get(&key) {
            return name.clone();
        }
        let count = self.counts.entry(kind.to_owned()).or_default();
        *count += 1;
        let name = format!("[{kind}-{count}]");
        self.names.insert(key, name.clone());
        name
    }
}

/// The test model behind a context limit the test can lower, so that a turn has to compact
/// its history. It remembers how many tokens the last system message took.
struct LimitedModel {
    inner: Arc<TestModel>,
    context_limit: AtomicUsize,
    system_tokens: AtomicUsize,
}

/// The test model's own limit, until [`LimitedModel::fit_only_system_and_prompt`].
const CONTEXT_LIMIT_DEFAULT: usize = 8192;

/// Tokens the budget keeps beyond the system message: room for a short prompt and a few short
/// history messages, none for [`long_answer`].
const BUDGET_MARGIN_TOKENS: usize = 300;

impl LimitedModel {
    fn new(inner: Arc<TestModel>) -> LimitedModel {
        LimitedModel {
            inner,
            context_limit: AtomicUsize::new(CONTEXT_LIMIT_DEFAULT),
            system_tokens: AtomicUsize::new(0),
        }
    }

    /// Lowers the limit so that the budget (limit − clamp(limit / 4, 256, 2048), as in
    /// `docs/agent-loop.md`) holds the last system message and [`BUDGET_MARGIN_TOKENS`] more.
    fn fit_only_system_and_prompt(&self) {
        let system_tokens = self.system_tokens.load(Ordering::SeqCst);
        assert!(system_tokens > 0, "a turn ran before");
        let target = system_tokens + BUDGET_MARGIN_TOKENS;
        let limit = (target..)
            .find(|limit| limit - (limit / 4).clamp(256, 2048) >= target)
            .expect("a budget grows with the limit");
        self.context_limit.store(limit, Ordering::SeqCst);
    }
}

impl Model for LimitedModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn context_limit(&self) -> usize {
        self.context_limit.load(Ordering::SeqCst)
    }

    fn generate<'a>(
        &'a self,
        request: &'a GenerateRequest,
        on_token: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<String, ModelError>> {
        let system_tokens = self.count_tokens(&request.messages[..1]);
        self.system_tokens.store(system_tokens, Ordering::SeqCst);
        self.inner.generate(request, on_token)
    }
}
