//! `answer.grounding` and rejected answers (`step` of kind `correction`) in a turn: published
//! with the turn's id, and recorded into its view, which keeps them after the turn is stored.
//!
//! The events reach the turn's sink the way every event of a turn does. Here a tool of the
//! test publishes them through its call's sink (the turn's), so the server's recording is
//! tested whatever publishes them; the loop's own checks are tested in imurun-agent.

use std::sync::Arc;

use imurun_core::{
    BoxFuture, Event, GroundingAction, StepKind, Tool, ToolCategory, ToolContext, ToolOutput,
    ToolSpec,
};
use serde_json::{Map, Value, json};

use crate::api_support::{Dirs, Reply, TestModel, TestServer, events_until, tool_reply};

/// Publishes a retried and then a fallen-back answer, as the loop does, into the turn that
/// called it.
struct PublishesGrounding {
    spec: ToolSpec,
}

impl PublishesGrounding {
    fn shared() -> Arc<dyn Tool> {
        Arc::new(PublishesGrounding {
            spec: ToolSpec::new(
                "publish_grounding",
                "publishes the events of a grounded answer",
                json!({"type": "object", "properties": {}}),
            ),
        })
    }
}

impl Tool for PublishesGrounding {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Compute
    }

    fn run<'a>(
        &'a self,
        context: &'a ToolContext,
        _args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            for event in grounding_events(context.session_id.clone()) {
                context.events.publish(event);
            }
            ToolOutput::ok("published")
        })
    }
}

/// A rejected answer, a retry, a second rejected answer and a fallback.
fn grounding_events(session_id: Option<String>) -> Vec<Event> {
    vec![
        Event::Step {
            session_id: session_id.clone(),
            step: 2,
            kind: StepKind::Correction,
            text: "It is lunchtime.".into(),
        },
        Event::Grounding {
            session_id: session_id.clone(),
            step: 2,
            action: GroundingAction::Retry,
            tool: Some("get_time".into()),
            reason: "the answer left out the time that get_time returned".into(),
        },
        Event::Step {
            session_id: session_id.clone(),
            step: 3,
            kind: StepKind::Correction,
            text: "Still lunchtime.".into(),
        },
        Event::Grounding {
            session_id,
            step: 3,
            action: GroundingAction::Fallback,
            tool: None,
            reason: "the answer spoke as a person".into(),
        },
    ]
}

#[tokio::test]
async fn grounding_and_rejected_answers_are_published_and_kept_in_the_turn_view() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![
        Reply::text(&tool_reply("publish_grounding", json!({}))),
        Reply::text("Done."),
    ]);
    let server = TestServer::start_with_tools(
        &dirs,
        Some(model),
        Default::default(),
        vec![PublishesGrounding::shared()],
    )
    .await;
    let session = server.new_session().await;
    let mut events = server.events(Some(&session)).await;
    let (status, accepted) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": "Publish them"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let turn_id = accepted["turn_id"].as_str().expect("a turn id").to_owned();

    let seen = events_until(&mut events, "turn.end").await;
    let grounding: Vec<&Value> = seen
        .iter()
        .filter(|event| event["type"] == "answer.grounding")
        .collect();
    assert_eq!(grounding.len(), 2, "{seen:?}");
    assert_eq!(grounding[0]["turn_id"], turn_id.as_str());
    assert_eq!(grounding[0]["session_id"], session.as_str());
    assert_eq!(grounding[0]["action"], "retry");
    assert_eq!(grounding[0]["tool"], "get_time");
    assert_eq!(grounding[1]["action"], "fallback");
    assert_eq!(grounding[1]["tool"], Value::Null);
    let corrections: Vec<&Value> = seen
        .iter()
        .filter(|event| event["type"] == "step" && event["kind"] == "correction")
        .collect();
    assert_eq!(corrections.len(), 2, "{seen:?}");
    assert_eq!(corrections[0]["turn_id"], turn_id.as_str());

    let view = server.finished_turn(&session, &turn_id).await;
    assert_eq!(
        view["grounding"],
        json!([
            {"step": 2, "action": "retry", "tool": "get_time",
             "reason": "the answer left out the time that get_time returned"},
            {"step": 3, "action": "fallback", "tool": null,
             "reason": "the answer spoke as a person"},
        ]),
        "{view}"
    );
    let steps: Vec<(&str, &str)> = view["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|step| {
            (
                step["kind"].as_str().expect("a kind"),
                step["text"].as_str().expect("a text"),
            )
        })
        .collect();
    // The tool published them while it ran; its own step comes once it ended.
    assert_eq!(steps[0], ("correction", "It is lunchtime."), "{view}");
    assert_eq!(steps[1], ("correction", "Still lunchtime."), "{view}");
    assert_eq!(steps[2].0, "tool", "{view}");
    // A rejected answer is never the answer, and the fields the view had are all there.
    assert_eq!(view["answer"], "Done.");
    assert_eq!(view["status"], "done");
    for field in [
        "turn_id",
        "session_id",
        "prompt",
        "started_at_ms",
        "ended_at_ms",
        "tool_calls",
        "skills",
        "delivered_prompts",
    ] {
        assert!(view.get(field).is_some(), "{field} is missing: {view}");
    }
    // The list of turns carries the same view.
    let (status, list) = server.get(&format!("/api/sessions/{session}/turns")).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["turns"][0]["grounding"], view["grounding"]);
    server.stop().await;
}

/// A turn without grounding has an empty list, and so has a view stored before the field
/// existed (its JSON has no `grounding` key).
#[tokio::test]
async fn a_view_without_grounding_has_an_empty_list() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![Reply::text("Plain.")]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let session = server.new_session().await;
    let (_, accepted) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": "Say it plainly"}),
        )
        .await;
    let turn_id = accepted["turn_id"].as_str().expect("a turn id").to_owned();
    let view = server.finished_turn(&session, &turn_id).await;
    assert_eq!(view["grounding"], json!([]), "{view}");

    let old_view = json!({"answer": "From before.", "steps": [
        {"step": 1, "kind": "answer", "text": "From before."}
    ]});
    server
        .store
        .insert_turn(&session, "turn-old", "An old prompt", &old_view)
        .await
        .expect("an old turn");
    let (status, old) = server
        .get(&format!("/api/sessions/{session}/turns/turn-old"))
        .await;
    assert_eq!(status, 200, "{old}");
    assert_eq!(old["grounding"], json!([]), "{old}");
    assert_eq!(old["answer"], "From before.");
    server.stop().await;
}
