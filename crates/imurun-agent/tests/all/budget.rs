//! The context budget inside a turn: the tool result cap, history compaction with the raw
//! model (or dropped), and a prompt that cannot fit.

use imurun_agent::{AgentConfig, AgentError, TurnRequest};
use imurun_core::{Message, ModelError, TurnStatus};

use crate::support::{Harness, Reply, TestModel, model_with_limit};

fn long_history() -> Vec<Message> {
    (0..6)
        .map(|n| {
            let text = format!("message {n} {}", "lorem ipsum ".repeat(125));
            if n % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect()
}

#[tokio::test]
async fn tool_results_are_capped_by_the_window() {
    let h = Harness::new(vec![
        Reply::text("```tool\n{\"name\": \"huge\", \"args\": {\"key\": \"k\"}}\n```"),
        Reply::text("Long."),
    ]);
    h.run("Get the big thing").await;
    let result = &h.sent(1)[2].1;
    // 8192-token window: clamp(8192 · 3.5 / 4, 800, 6000) = 6000 characters.
    let header = "[tool result: huge]\n";
    assert!(result.starts_with(header));
    assert_eq!(result.chars().count(), 6000 + "\n[…cut]".chars().count());
    assert_eq!(
        h.events.merged_types(),
        [
            "tool.call",
            "tool.result",
            "step:tool",
            "answer.checking",
            "token",
            "step:answer",
            "turn.end"
        ]
    );
}

#[tokio::test]
async fn over_budget_history_is_summarised_by_the_raw_model() {
    let model = model_with_limit(
        vec![
            Reply::text("We talked about lorem ipsum."),
            Reply::text("Answer."),
        ],
        2048,
    );
    let h = Harness::build(model, AgentConfig::default());
    let result = h
        .run_request(TurnRequest {
            history: long_history(),
            ..TurnRequest::new("Go on")
        })
        .await;
    assert_eq!(result.answer, "Answer.");
    let received = h.model.received();
    // The side generation: the raw model asked for a summary.
    assert!(
        received[0][0]
            .content
            .starts_with("Summarise the conversation")
    );
    // The step: one system message holding the summary, then the prompt.
    assert_eq!(received[1].len(), 2);
    assert!(
        received[1][0].content.ends_with(
            "## Earlier in this conversation (summarised)\nWe talked about lorem ipsum."
        )
    );
    assert_eq!(received[1][1], Message::user("Go on"));
    assert_eq!(
        h.events.merged_types(),
        [
            "compaction.start",
            "compaction.done",
            "token",
            "step:answer",
            "turn.end"
        ]
    );
    // The summary never streams into the answer.
    assert_eq!(h.events.streamed(), "Answer.");
}

#[tokio::test]
async fn without_a_summary_the_oldest_history_is_dropped() {
    let failure = ModelError::Transport {
        message: "busy".into(),
    };
    let model = model_with_limit(vec![Reply::fail(failure), Reply::text("Answer.")], 2048);
    let h = Harness::build(model, AgentConfig::default());
    h.run_request(TurnRequest {
        history: long_history(),
        ..TurnRequest::new("Go on")
    })
    .await;
    let sent = &h.model.received()[1];
    assert_eq!(sent.last(), Some(&Message::user("Go on")));
    assert!(sent.len() < 8, "some history was dropped");
    assert!(
        sent[1..sent.len() - 1]
            .iter()
            .all(|m| m.content.starts_with("message "))
    );
    assert_eq!(
        h.events.merged_types(),
        [
            "compaction.start",
            "compaction.done",
            "token",
            "step:answer",
            "turn.end"
        ]
    );
    let wire = h.events.wire();
    assert_eq!(wire[1]["type"], "compaction.done");
    assert_eq!(wire[1]["mode"], "dropped");
}

#[tokio::test]
async fn a_prompt_that_cannot_fit_ends_the_turn_before_the_model_runs() {
    let model = model_with_limit(vec![], 1024);
    let h = Harness::build(model, AgentConfig::default());
    let result = h.run(&"word ".repeat(2000)).await;
    assert_eq!(result.status, TurnStatus::Error);
    assert!(matches!(
        result.error,
        Some(AgentError::PromptTooLong { budget: 768, .. })
    ));
    assert!(h.model.received().is_empty());
    assert_eq!(h.events.merged_types(), ["turn.end"]);
    assert_eq!(h.events.wire()[0]["status"], "error");
}

#[tokio::test]
async fn the_budget_counts_with_the_models_own_counter() {
    // The history is ~2600 tokens by the estimate, which fits an 8192-token window's 6144
    // budget; by this model's count (one per character, ~9500) it does not.
    let history = long_history();
    assert!(imurun_core::estimate_tokens(&history) < 6144);
    let model = TestModel::new(vec![Reply::text("Summary."), Reply::text("Answer.")])
        .counting_characters()
        .with_context_limit(8192)
        .shared();
    let h = Harness::build(model, AgentConfig::default());
    h.run_request(TurnRequest {
        history,
        ..TurnRequest::new("Go on")
    })
    .await;
    assert_eq!(
        h.events.merged_types()[..2],
        ["compaction.start", "compaction.done"]
    );
    assert_eq!(h.model.received()[1].len(), 2);
}

#[tokio::test]
async fn with_summaries_off_history_is_dropped_without_a_side_generation() {
    let model = model_with_limit(vec![Reply::text("Answer.")], 2048);
    let h = Harness::build(model, AgentConfig::default().with_summarise_history(false));
    let result = h
        .run_request(TurnRequest {
            history: long_history(),
            ..TurnRequest::new("Go on")
        })
        .await;
    assert_eq!(result.answer, "Answer.");
    assert_eq!(h.model.received().len(), 1, "no summary was asked for");
    assert_eq!(h.events.wire()[1]["mode"], "dropped");
}
