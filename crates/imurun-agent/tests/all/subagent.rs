//! Sub-agents (`run_agent`): a nested loop on the same model, its summary as the parent's tool
//! result, the depth rule, the tool intersection, the shared stop, events and the budget.

use imurun_agent::{
    DEFAULT_PERSONA, HELPER_DIRECTIVE, STEP_LIMIT_SENTENCE, SUB_AGENT_STEPS_MAX, TurnRequest,
};
use imurun_core::{Event, StopFlag, TurnStatus};
use serde_json::Value;

use crate::support::{Harness, Reply};

const DELEGATE: &str = "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"Find k.\", \"tools\": [\"lookup\", \"run_agent\"]}}\n```";
const DELEGATE_DEEPER: &str =
    "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"Go deeper.\"}}\n```";
const LOOKUP_K: &str = "```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```";

/// `(type, depth)` of every `tool.*` and `agent.*` event, with `name` for tool events.
fn depths(h: &Harness) -> Vec<(String, String, u64)> {
    h.events
        .wire()
        .iter()
        .filter(|event| {
            let kind = event["type"].as_str().unwrap();
            kind.starts_with("tool.") || kind.starts_with("agent.")
        })
        .map(|event| {
            (
                event["type"].as_str().unwrap().to_owned(),
                event["name"].as_str().unwrap_or_default().to_owned(),
                event["depth"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn agent_starts(h: &Harness) -> Vec<(u8, Vec<String>)> {
    h.events
        .all()
        .into_iter()
        .filter_map(|event| match event {
            Event::AgentStart { depth, tools, .. } => Some((depth, tools)),
            _ => None,
        })
        .collect()
}

fn agent_ends(h: &Harness) -> Vec<(u8, TurnStatus, usize)> {
    h.events
        .all()
        .into_iter()
        .filter_map(|event| match event {
            Event::AgentEnd {
                depth,
                status,
                steps,
                ..
            } => Some((depth, status, steps)),
            _ => None,
        })
        .collect()
}

fn owned(triples: &[(&str, &str, u64)]) -> Vec<(String, String, u64)> {
    triples
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), *c))
        .collect()
}

#[tokio::test]
async fn a_sub_agent_runs_and_its_summary_is_the_parents_tool_result() {
    let h = Harness::with_sub_agents(vec![
        Reply::text(DELEGATE),
        Reply::text(LOOKUP_K),
        Reply::text("k is 42."),
        Reply::text("The helper found that k is 42."),
    ]);
    let result = h.run("What is k? Ask a helper.").await;

    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, "The helper found that k is 42.");
    assert_eq!(h.lookup.runs(), 1);
    // The helper: a helper directive instead of the persona, no history, the task alone.
    let child = &h.model.received()[1];
    assert!(child[0].content.starts_with(HELPER_DIRECTIVE));
    assert!(!child[0].content.contains("test assistant"));
    assert!(!child[0].content.contains(DEFAULT_PERSONA));
    assert_eq!(child.len(), 2);
    assert_eq!(child[1].content, "Find k.");
    // Only the helper's answer comes back, as the run_agent result.
    assert_eq!(
        h.sent(3).last().unwrap().1,
        "[tool result: run_agent]\nk is 42."
    );
    assert_eq!(
        depths(&h),
        owned(&[
            ("tool.call", "run_agent", 0),
            ("agent.start", "", 1),
            ("tool.call", "lookup", 1),
            ("tool.result", "lookup", 1),
            ("agent.end", "", 1),
            ("tool.result", "run_agent", 0),
        ])
    );
    let sources: Vec<Value> = h
        .events
        .wire()
        .into_iter()
        .filter(|event| event["type"] == "tool.call")
        .map(|event| event["source"].clone())
        .collect();
    assert_eq!(sources, [Value::from("model"), Value::from("agent:1")]);
    assert_eq!(
        agent_starts(&h),
        [(1, vec!["lookup".to_owned(), "run_agent".to_owned()])]
    );
    assert_eq!(agent_ends(&h), [(1, TurnStatus::Done, 2)]);
    // The helper's tokens and turn.end stay out of the parent's stream.
    let types = h.events.merged_types();
    assert_eq!(types.iter().filter(|t| *t == "turn.end").count(), 1);
    assert_eq!(h.events.streamed().trim(), "The helper found that k is 42.");
}

#[tokio::test]
async fn at_depth_two_run_agent_is_neither_offered_nor_allowed() {
    let h = Harness::with_sub_agents(vec![
        Reply::text(DELEGATE),
        Reply::text(DELEGATE_DEEPER),
        Reply::text(DELEGATE_DEEPER),
        Reply::text("I cannot start another helper."),
        Reply::text("The deeper helper could not delegate."),
        Reply::text("Done."),
    ]);
    let result = h.run("Delegate twice.").await;
    assert_eq!(result.status, TurnStatus::Done);

    let received = h.model.received();
    // Depth 1 is offered run_agent; depth 2 is offered lookup but not run_agent.
    assert!(received[1][0].content.contains("- run_agent("));
    assert!(received[2][0].content.contains("- lookup("));
    assert!(!received[2][0].content.contains("- run_agent("));
    assert_eq!(
        agent_starts(&h),
        [
            (1, vec!["lookup".to_owned(), "run_agent".to_owned()]),
            (2, vec!["lookup".to_owned()]),
        ]
    );
    // The depth-2 call is refused: a FAILED result, and no third helper.
    let refused = h
        .events
        .all()
        .into_iter()
        .find_map(|event| match event {
            Event::ToolResult {
                depth: 2, ok, text, ..
            } => Some((ok, text)),
            _ => None,
        })
        .unwrap();
    assert!(!refused.0);
    assert!(refused.1.starts_with("FAILED:"), "{}", refused.1);
    assert!(
        received[3]
            .last()
            .unwrap()
            .content
            .starts_with("[tool result: run_agent]\nFAILED:")
    );
    assert_eq!(
        agent_ends(&h),
        [(2, TurnStatus::Done, 2), (1, TurnStatus::Done, 2)]
    );
}

#[tokio::test]
async fn a_sub_agent_asking_for_a_tool_its_parent_lacks_gets_none() {
    let ask_broken = "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"Use broken.\", \"tools\": [\"broken\", \"no_such_tool\"]}}\n```";
    let h = Harness::with_sub_agents(vec![
        Reply::text(DELEGATE),
        Reply::text(ask_broken),
        Reply::text("I have no tools."),
        Reply::text("The helper had no tools."),
        Reply::text("Done."),
    ]);
    h.run("Delegate.").await;

    assert_eq!(
        agent_starts(&h),
        [
            (1, vec!["lookup".to_owned(), "run_agent".to_owned()]),
            (2, Vec::new()),
        ]
    );
    // No tools: no tool prompt at all.
    assert!(!h.model.received()[2][0].content.contains("## Tools"));
}

#[tokio::test]
async fn the_parents_stop_stops_the_child_within_one_step() {
    let stop = StopFlag::new();
    let h = Harness::with_sub_agents(vec![
        Reply::text(DELEGATE),
        Reply::stop_during(LOOKUP_K, &stop),
    ]);
    let result = h
        .run_request(TurnRequest {
            session_id: Some("s1".into()),
            stop,
            ..TurnRequest::new("Delegate.")
        })
        .await;

    assert_eq!(result.status, TurnStatus::Stopped);
    assert_eq!(h.model.received().len(), 2, "nothing generated after Stop");
    assert_eq!(h.lookup.runs(), 0);
    assert_eq!(agent_ends(&h), [(1, TurnStatus::Stopped, 1)]);
}

#[tokio::test]
async fn the_sub_agent_budget_is_clamped() {
    let greedy = "```tool\n{\"name\": \"run_agent\", \"args\": {\"task\": \"Loop.\", \"max_steps\": 99}}\n```";
    let mut script = vec![Reply::text(greedy)];
    // A different lookup each step: a repeated call would end the sub-agent early.
    script.extend((0..SUB_AGENT_STEPS_MAX).map(|step| {
        Reply::text(&format!(
            "```tool\n{{\"name\": \"lookup\", \"args\": {{\"key\": \"k{step}\"}}}}\n```"
        ))
    }));
    script.push(Reply::text("Done."));
    let h = Harness::with_sub_agents(script);
    let result = h.run("Delegate.").await;

    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(
        agent_ends(&h),
        [(1, TurnStatus::MaxSteps, SUB_AGENT_STEPS_MAX)]
    );
    assert_eq!(h.model.received().len(), SUB_AGENT_STEPS_MAX + 2);
    assert_eq!(
        h.sent(SUB_AGENT_STEPS_MAX + 1).last().unwrap().1,
        format!("[tool result: run_agent]\n{STEP_LIMIT_SENTENCE}")
    );
}
