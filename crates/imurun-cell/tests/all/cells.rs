//! Cells against real guest components: answers, imports, every door, and every limit.

use std::sync::Arc;
use std::time::Duration;

use imurun_cell::{CellError, Imports, Limits, World};
use imurun_testkit::Guest;
use serde_json::json;

use crate::support::{RecordingHost, engine, hash, http_only, limits, start};

#[tokio::test]
async fn an_agent_answers_and_its_slot_is_freed_when_it_is_dropped() {
    let engine = engine(2);
    let host = Arc::new(RecordingHost::default());
    let mut cell = start(
        &engine,
        Guest::Echo,
        World::Agent,
        Imports::default(),
        limits(),
        host,
    )
    .await
    .unwrap();
    assert_eq!(engine.free_slots(), 1);
    assert_eq!(cell.handle("hello").await.unwrap(), vec!["echo: hello"]);
    assert_eq!(cell.handle("again").await.unwrap(), vec!["echo: again"]);
    drop(cell);
    assert_eq!(engine.free_slots(), 2);
}

#[tokio::test]
async fn every_door_out_of_the_cell_is_closed() {
    let engine = engine(2);
    let host = Arc::new(RecordingHost::default());
    let mut cell = start(
        &engine,
        Guest::Doors,
        World::Agent,
        http_only(),
        limits(),
        host.clone(),
    )
    .await
    .unwrap();
    let targets = json!({
        "deploy_url": "http://127.0.0.1:9/v1/agents",
        "manifest_url": "http://127.0.0.1:9/v1/agents/doors",
    });
    let lines = cell.handle(&targets.to_string()).await.unwrap();
    assert_eq!(lines.len(), 11, "{lines:#?}");
    for line in &lines {
        assert!(line.contains(": refused: "), "a door opened: {line}");
    }
    // The only way out it found was the host's own import, which answered for itself.
    assert_eq!(
        host.calls(),
        vec![
            "send POST http://127.0.0.1:9/v1/agents",
            "send GET http://127.0.0.1:9/v1/agents/doors",
        ]
    );
}

#[tokio::test]
async fn an_endless_loop_is_stopped_by_the_cpu_limit_and_the_host_stays_up() {
    let engine = engine(2);
    let host = Arc::new(RecordingHost::default());
    let limits = Limits::from_resources(64, 50, 60_000);
    let mut cell = start(
        &engine,
        Guest::Doors,
        World::Agent,
        http_only(),
        limits,
        host.clone(),
    )
    .await
    .unwrap();
    let error = cell.handle("spin").await.unwrap_err();
    assert_eq!(error, CellError::CpuLimit { cpu_ms: 50 });
    assert_eq!(error.kind(), "cpu_limit");
    // Its slot is free as soon as it ended, before the cell is dropped.
    assert_eq!(engine.free_slots(), 2);
    // The cell has ended; its slot is held until it is dropped, and the engine goes on.
    assert!(matches!(
        cell.handle("again").await,
        Err(CellError::Ended { .. })
    ));
    drop(cell);
    let mut next = start(
        &engine,
        Guest::Echo,
        World::Agent,
        Imports::default(),
        limits,
        host,
    )
    .await
    .unwrap();
    assert_eq!(
        next.handle("still up").await.unwrap(),
        vec!["echo: still up"]
    );
}

#[tokio::test]
async fn a_memory_bomb_is_stopped_by_the_memory_limit() {
    let engine = engine(2);
    let host = Arc::new(RecordingHost::default());
    let limits = Limits::from_resources(32, 60_000, 60_000);
    let mut cell = start(
        &engine,
        Guest::Doors,
        World::Agent,
        http_only(),
        limits,
        host,
    )
    .await
    .unwrap();
    let error = cell.handle("bomb").await.unwrap_err();
    assert_eq!(
        error,
        CellError::MemoryLimit {
            limit_bytes: 32 << 20
        }
    );
    assert_eq!(error.kind(), "memory_limit");
}

#[tokio::test]
async fn a_cell_waiting_past_its_wall_time_is_stopped() {
    let engine = engine(2);
    let host = Arc::new(RecordingHost::default());
    let limits = Limits::from_resources(64, 60_000, 300);
    let mut cell = start(
        &engine,
        Guest::Doors,
        World::Agent,
        http_only(),
        limits,
        host,
    )
    .await
    .unwrap();
    let error = cell.handle("sleep").await.unwrap_err();
    assert_eq!(
        error,
        CellError::Timeout {
            timeout: Duration::from_millis(300)
        }
    );
    assert_eq!(error.kind(), "timeout");
    drop(cell);
    assert_eq!(engine.free_slots(), 2);
}

#[tokio::test]
async fn a_panic_in_the_guest_ends_the_cell_with_a_trap() {
    let engine = engine(1);
    let host = Arc::new(RecordingHost::default());
    let mut cell = start(
        &engine,
        Guest::Scripted,
        World::Agent,
        Imports::default(),
        limits(),
        host,
    )
    .await
    .unwrap();
    let error = cell.handle(r#"{"trap": true}"#).await.unwrap_err();
    assert_eq!(error.kind(), "trap", "{error}");
    assert!(cell.ended().is_some());
}

#[tokio::test]
async fn a_component_importing_what_it_was_not_granted_does_not_start() {
    let engine = engine(2);
    let host = Arc::new(RecordingHost::default());
    let error = start(
        &engine,
        Guest::ScriptedHttp,
        World::Agent,
        Imports::default(),
        limits(),
        host.clone(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error,
        CellError::NotGranted {
            import: "imurun:cell/http@0.1.0".to_owned()
        }
    );
    let error = start(
        &engine,
        Guest::ScriptedFull,
        World::Agent,
        http_only(),
        limits(),
        host,
    )
    .await
    .unwrap_err();
    assert!(matches!(error, CellError::NotGranted { .. }), "{error}");
    assert_eq!(engine.free_slots(), 2, "a refused start kept its slot");
}

#[tokio::test]
async fn granted_imports_reach_the_host_and_its_refusals_reach_the_guest() {
    let engine = engine(1);
    let host = Arc::new(RecordingHost::default());
    let all = Imports {
        model: true,
        http: true,
        memory: true,
        tools: true,
    };
    let mut cell = start(
        &engine,
        Guest::ScriptedFull,
        World::Agent,
        all,
        limits(),
        host.clone(),
    )
    .await
    .unwrap();
    let script = json!({"steps": [
        {"generate": [{"role": "user", "content": "hi"}]},
        {"memory": true},
        {"tool": {"name": "add", "args": {"a": 1}}},
        {"emit": {"type": "plan", "title": "tidy up"}},
        {"emit": {"type": "card.propose", "title": "a card"}},
        {"fetch": {"method": "GET", "url": "https://example.org/"}},
    ]});
    let replies = cell.handle(&script.to_string()).await.unwrap();
    assert_eq!(replies[0], "model saw 1 messages");
    assert_eq!(replies[1], r#"["likes tea"]"#);
    assert_eq!(replies[2], "tool result");
    assert_eq!(replies[3], "emitted");
    assert_eq!(replies[4], "refused: card.propose needs `card: true`");
    assert!(
        replies[5].contains("is not in any egress rule"),
        "{}",
        replies[5]
    );
    assert_eq!(
        host.calls(),
        vec![
            "generate 1".to_owned(),
            "read_memory".to_owned(),
            r#"call_tool add {"a":1}"#.to_owned(),
            r#"emit plan {"title":"tidy up"}"#.to_owned(),
            r#"emit card.propose {"title":"a card"}"#.to_owned(),
            "send GET https://example.org/".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_pooled_slot_is_zeroed_before_its_next_tenant() {
    let engine = engine(1);
    let host = Arc::new(RecordingHost::default());
    let mut first = start(
        &engine,
        Guest::Scripted,
        World::Agent,
        Imports::default(),
        limits(),
        host.clone(),
    )
    .await
    .unwrap();
    let canary = "tenant one's secret canary 7f3a9c";
    first
        .handle(&json!({"canary_write": canary}).to_string())
        .await
        .unwrap();
    let seen = first.handle(r#"{"canary_read": true}"#).await.unwrap();
    assert!(
        seen[0].starts_with(&hex(canary)),
        "the canary was not written: {seen:?}"
    );
    drop(first);
    // One slot: the next tenant gets the same one.
    let mut second = start(
        &engine,
        Guest::Scripted,
        World::Agent,
        Imports::default(),
        limits(),
        host,
    )
    .await
    .unwrap();
    let seen = second.handle(r#"{"canary_read": true}"#).await.unwrap();
    assert_eq!(
        seen[0],
        "00".repeat(64),
        "the next tenant read the last one's memory"
    );
}

#[tokio::test]
async fn a_full_pool_refuses_a_new_cell_until_one_ends() {
    let engine = engine(1);
    let host = Arc::new(RecordingHost::default());
    let first = start(
        &engine,
        Guest::Echo,
        World::Agent,
        Imports::default(),
        limits(),
        host.clone(),
    )
    .await
    .unwrap();
    let error = start(
        &engine,
        Guest::Echo,
        World::Agent,
        Imports::default(),
        limits(),
        host.clone(),
    )
    .await
    .unwrap_err();
    assert_eq!(error, CellError::NoSlot { slots: 1 });
    drop(first);
    start(
        &engine,
        Guest::Echo,
        World::Agent,
        Imports::default(),
        limits(),
        host,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_bundle_that_is_not_its_hash_or_not_a_component_is_refused() {
    let engine = engine(1);
    let host = Arc::new(RecordingHost::default());
    let bytes = Guest::Echo.bytes();
    let wrong = hash(b"something else");
    let error = engine
        .start(
            &wrong,
            &bytes,
            World::Agent,
            Imports::default(),
            limits(),
            host.clone(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, CellError::Compile { .. }), "{error}");
    let garbage = b"\0asm not really".to_vec();
    let error = engine
        .start(
            &hash(&garbage),
            &garbage,
            World::Agent,
            Imports::default(),
            limits(),
            host.clone(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, CellError::Compile { .. }), "{error}");
    // An agent is not a tool.
    let error = engine
        .start(
            &hash(&bytes),
            &bytes,
            World::Tool,
            Imports::default(),
            limits(),
            host,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, CellError::Export { .. }), "{error}");
    assert_eq!(engine.free_slots(), 1);
}

#[tokio::test]
async fn a_tool_is_called_with_json_and_its_error_is_its_answer() {
    let engine = engine(1);
    let host = Arc::new(RecordingHost::default());
    let mut tool = start(
        &engine,
        Guest::FetchTool,
        World::Tool,
        http_only(),
        limits(),
        host.clone(),
    )
    .await
    .unwrap();
    let error = tool
        .call(r#"{"url": "https://example.org/data"}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, CellError::Guest { message } if message.contains("not in any egress rule")),
        "{error}"
    );
    // A guest's own error does not end it.
    assert!(tool.ended().is_none());
    let error = tool.call("not json").await.unwrap_err();
    assert!(
        matches!(&error, CellError::Guest { message } if message.contains("bad arguments")),
        "{error}"
    );
    assert_eq!(host.calls(), vec!["send GET https://example.org/data"]);
}

fn hex(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

/// A host whose model never answers, and whose waiting model call takes a while to let go
/// when it is dropped (as a host import's connection can).
struct SlowToLetGo;

struct LetsGoSlowly;

impl Drop for LetsGoSlowly {
    fn drop(&mut self) {
        std::thread::sleep(Duration::from_millis(300));
    }
}

impl imurun_cell::CellHost for SlowToLetGo {
    fn generate(
        &self,
        _messages: Vec<imurun_cell::ChatMessage>,
    ) -> imurun_core::BoxFuture<'_, Result<String, String>> {
        let held = LetsGoSlowly;
        Box::pin(async move {
            std::future::pending::<()>().await;
            drop(held);
            Err("never".to_owned())
        })
    }

    fn send<'a>(
        &'a self,
        _request: imurun_cell::HttpRequest,
        _clock: &'a imurun_cell::WallClock,
    ) -> imurun_core::BoxFuture<'a, Result<imurun_cell::HttpResponse, String>> {
        Box::pin(async { Err("no egress".to_owned()) })
    }

    fn read_memory(&self) -> imurun_core::BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async { Err("no memory".to_owned()) })
    }

    fn call_tool(
        &self,
        _name: String,
        _args_json: String,
    ) -> imurun_core::BoxFuture<'_, Result<String, String>> {
        Box::pin(async { Err("no tools".to_owned()) })
    }

    fn emit(
        &self,
        _kind: String,
        _payload_json: String,
    ) -> imurun_core::BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Err("no events".to_owned()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_dropped_in_flight_leaves_its_slot_to_the_next_cell_once_ended() {
    let engine = engine(1);
    let model = Imports {
        model: true,
        ..Imports::default()
    };
    for round in 0..3 {
        let bytes = Guest::ModelTool.bytes();
        let mut cell = engine
            .start(
                &hash(&bytes),
                &bytes,
                World::Tool,
                model,
                limits(),
                Arc::new(SlowToLetGo),
            )
            .await
            .unwrap();
        // The tool waits on the model; the call is dropped meanwhile (a person's stop).
        let args = r#"{"generate": [{"role": "user", "content": "hi"}]}"#;
        let dropped = tokio::time::timeout(Duration::from_millis(100), cell.call(args)).await;
        assert!(dropped.is_err(), "round {round}: the call answered");
        assert!(
            cell.end().await,
            "round {round}: the task outlived the wait"
        );
        assert_eq!(engine.free_slots(), 1, "round {round}");
        // The pool's instance went with the slot: the next cell starts at once.
        let next = start(
            &engine,
            Guest::Echo,
            World::Agent,
            Imports::default(),
            limits(),
            Arc::new(RecordingHost::default()),
        )
        .await;
        assert!(next.is_ok(), "round {round}: {next:?}");
    }
}
