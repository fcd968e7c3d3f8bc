//! The main path of a turn: tool → answer, canonical history, the last-step rule,
//! `max_steps = 1`, stop, the prompt queue, the assembled prompt and the event sequence.

use imurun_agent::{AgentConfig, LAST_STEP_NOTE, PromptQueue, STEP_LIMIT_SENTENCE, TurnRequest};
use imurun_core::{Message, StopFlag, ToolCall, TurnStatus};
use serde_json::json;

use crate::support::{Harness, Reply, model, msgs};

const CALL_LOOKUP: &str = "Let me look.\n```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"answer\"}}\n```\nResult: 7";
const CANONICAL_LOOKUP: &str =
    "Let me look.\n```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"answer\"}}\n```";

fn lookup(key: &str) -> ToolCall {
    ToolCall::new("lookup", json!({"key": key}).as_object().cloned().unwrap())
}

#[tokio::test]
async fn tool_then_answer_feeds_the_result_back_as_a_user_message() {
    let h = Harness::new(vec![
        Reply::text(CALL_LOOKUP),
        Reply::text("The answer is 42."),
    ]);
    let result = h.run("What is the answer?").await;

    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, "The answer is 42.");
    assert_eq!(result.tool_calls, vec![lookup("answer")]);
    assert_eq!(
        result.transcript,
        vec![Message::assistant("The answer is 42.")]
    );
    assert_eq!(result.steps, 2);
    assert_eq!(h.sent(0), msgs(&[("user", "What is the answer?")]));
    // The call in canonical form, the invented "Result: 7" dropped, the result as a user
    // message headed with the tool's name.
    assert_eq!(
        h.sent(1),
        msgs(&[
            ("user", "What is the answer?"),
            ("assistant", CANONICAL_LOOKUP),
            ("user", "[tool result: lookup]\nanswer is 42"),
        ])
    );
    assert_eq!(
        h.events.merged_types(),
        [
            "token",
            "tool.call",
            "tool.result",
            "step:tool",
            "answer.checking",
            "token",
            "step:answer",
            "turn.end"
        ]
    );
    // Call syntax never reaches the answer stream.
    assert_eq!(
        h.events.streamed().trim(),
        "Let me look.\nThe answer is 42."
    );
}

#[tokio::test]
async fn the_event_sequence_of_a_tool_turn() {
    let h = Harness::new(vec![
        Reply::text(
            "<think>I need the value.</think>\n```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```",
        ),
        Reply::text("It is 42."),
    ]);
    h.run("What is k?").await;
    let lines: Vec<String> = h
        .events
        .wire()
        .iter()
        .filter(|event| event["type"] != "token")
        .map(|event| event.to_string())
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[tokio::test]
async fn the_whole_system_message_of_a_turn() {
    let h = Harness::new(vec![Reply::text("Hello.")]);
    h.run_request(TurnRequest {
        skills: vec![imurun_agent::Skill::new("terse", "Answer in one sentence.")],
        context: Some("get_time: 09:14, Monday (Europe/Oslo)".into()),
        ..TurnRequest::new("Hi")
    })
    .await;
    insta::assert_snapshot!(h.model.received()[0][0].content);
}

#[tokio::test]
async fn history_is_the_last_six_messages_with_thoughts_stripped() {
    let h = Harness::new(vec![Reply::text("Fine.")]);
    let mut history = Vec::new();
    for n in 0..4 {
        history.push(Message::user(format!("q{n}")));
        history.push(Message::assistant(format!("<think>secret {n}</think>a{n}")));
    }
    h.run_request(TurnRequest {
        history,
        ..TurnRequest::new("And then?")
    })
    .await;
    assert_eq!(
        h.sent(0),
        msgs(&[
            ("user", "q1"),
            ("assistant", "a1"),
            ("user", "q2"),
            ("assistant", "a2"),
            ("user", "q3"),
            ("assistant", "a3"),
            ("user", "And then?"),
        ])
    );
}

#[tokio::test]
async fn the_last_step_adds_the_note_and_never_runs_tools() {
    let model = model(vec![
        Reply::text(CALL_LOOKUP),
        Reply::text(
            "I will check once more.\n```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"again\"}}\n```",
        ),
    ]);
    let h = Harness::build(model, AgentConfig::default().with_max_steps(2));
    let result = h.run("What is the answer?").await;

    assert_eq!(result.status, TurnStatus::MaxSteps);
    assert_eq!(result.answer, "I will check once more.");
    assert_eq!(h.lookup.runs(), 1);
    assert_eq!(
        h.sent(1),
        msgs(&[
            ("user", "What is the answer?"),
            ("assistant", CANONICAL_LOOKUP),
            ("user", "[tool result: lookup]\nanswer is 42"),
            ("user", LAST_STEP_NOTE),
        ])
    );
    assert_eq!(
        result.transcript,
        vec![Message::assistant("I will check once more.")]
    );
    assert_eq!(
        h.events.merged_types(),
        [
            "token",
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
async fn a_last_step_call_with_no_text_ends_with_the_step_limit_sentence() {
    let model = model(vec![
        Reply::text(CALL_LOOKUP),
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"again\"}}\n```"),
    ]);
    let h = Harness::build(model, AgentConfig::default().with_max_steps(2));
    let result = h.run("What is the answer?").await;
    assert_eq!(result.status, TurnStatus::MaxSteps);
    assert_eq!(result.answer, STEP_LIMIT_SENTENCE);
    assert!(!h.events.streamed().contains("```"));
}

#[tokio::test]
async fn max_steps_one_sends_no_tool_prompt_and_holds_nothing_back() {
    let model = model(vec![Reply::text("Hello, {\"name\" is a word.")]);
    let h = Harness::build(model, AgentConfig::default().with_max_steps(1));
    let result = h.run("Hi").await;

    assert_eq!(result.status, TurnStatus::Done);
    let system = &h.model.received()[0][0].content;
    assert!(!system.contains("```tool"), "{system}");
    assert!(!system.contains("lookup"));
    assert_eq!(h.events.streamed(), "Hello, {\"name\" is a word.");
    assert_eq!(result.answer, "Hello, {\"name\" is a word.");
    assert_eq!(h.lookup.runs(), 0);
    assert_eq!(
        h.events.merged_types(),
        ["answer.checking", "token", "step:answer", "turn.end"]
    );
}

#[tokio::test]
async fn a_stopped_turn_ends_before_the_next_step() {
    let h = Harness::new(vec![]);
    let stop = StopFlag::new();
    stop.stop();
    let result = h
        .run_request(TurnRequest {
            stop,
            ..TurnRequest::new("Hi")
        })
        .await;
    assert_eq!(result.status, TurnStatus::Stopped);
    assert_eq!(result.steps, 0);
    assert!(h.model.received().is_empty());
    assert_eq!(h.events.merged_types(), ["turn.end"]);
}

#[tokio::test]
async fn a_stop_during_generation_runs_no_tool() {
    let stop = StopFlag::new();
    let h = Harness::new(vec![Reply::stop_during(CALL_LOOKUP, &stop)]);
    let result = h
        .run_request(TurnRequest {
            session_id: Some("s1".into()),
            stop,
            ..TurnRequest::new("What is the answer?")
        })
        .await;
    assert_eq!(result.status, TurnStatus::Stopped);
    assert_eq!(h.lookup.runs(), 0);
    assert_eq!(result.answer, "");
    assert!(result.transcript.is_empty());
    // The text before the call streamed; the call never did, and nothing ran.
    assert_eq!(h.events.merged_types(), ["token", "turn.end"]);
    assert_eq!(h.events.streamed().trim(), "Let me look.");
}

#[tokio::test]
async fn a_queued_prompt_is_delivered_at_the_answer_never_between_call_and_result() {
    let h = Harness::new(vec![
        Reply::text(CALL_LOOKUP),
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ]);
    let queue = PromptQueue::new();
    queue.push("And the second?").unwrap();
    let result = h
        .run_request(TurnRequest {
            queue: Some(queue.clone()),
            ..TurnRequest::new("What is the answer?")
        })
        .await;

    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, "Second answer.");
    assert!(queue.is_empty());
    assert_eq!(
        h.sent(1),
        msgs(&[
            ("user", "What is the answer?"),
            ("assistant", CANONICAL_LOOKUP),
            ("user", "[tool result: lookup]\nanswer is 42"),
        ])
    );
    assert_eq!(
        h.sent(2),
        msgs(&[
            ("user", "What is the answer?"),
            ("assistant", CANONICAL_LOOKUP),
            ("user", "[tool result: lookup]\nanswer is 42"),
            ("assistant", "First answer."),
            ("user", "And the second?"),
        ])
    );
    assert_eq!(
        result.transcript,
        vec![
            Message::assistant("First answer."),
            Message::user("And the second?"),
            Message::assistant("Second answer."),
        ]
    );
    assert_eq!(
        h.events.merged_types(),
        [
            "token",
            "tool.call",
            "tool.result",
            "step:tool",
            "answer.checking",
            "token",
            "step:answer",
            "prompt.delivered",
            "token",
            "step:answer",
            "turn.end"
        ]
    );
}

#[tokio::test]
async fn a_prompt_queued_at_the_last_step_waits_for_the_next_turn() {
    let model = model(vec![Reply::text("Only answer.")]);
    let h = Harness::build(model, AgentConfig::default().with_max_steps(1));
    let queue = PromptQueue::new();
    queue.push("Later").unwrap();
    let result = h
        .run_request(TurnRequest {
            queue: Some(queue.clone()),
            ..TurnRequest::new("Now")
        })
        .await;
    assert_eq!(result.answer, "Only answer.");
    assert_eq!(queue.pop().as_deref(), Some("Later"));
}

#[tokio::test]
async fn max_steps_is_clamped_to_one_through_twenty() {
    assert_eq!(AgentConfig::default().with_max_steps(0).max_steps, 1);
    assert_eq!(AgentConfig::default().with_max_steps(99).max_steps, 20);
    assert_eq!(AgentConfig::default().max_steps, 6);
}

#[test]
fn a_turn_can_be_spawned_on_a_multi_threaded_runtime() {
    fn is_send<T: Send>(_: &T) {}
    let h = Harness::new(vec![]);
    let turn = h.agent.run(TurnRequest::new("Hi"));
    is_send(&turn);
}

#[tokio::test]
async fn a_dry_run_reads_the_first_step_and_runs_nothing() {
    let h = Harness::new(vec![Reply::text(CALL_LOOKUP), Reply::text("never asked")]);
    let parsed = h
        .agent
        .plan(TurnRequest::new("What is the answer?"))
        .await
        .unwrap();

    assert_eq!(parsed.kind, imurun_calls::ParseKind::Calls);
    assert_eq!(parsed.calls, vec![lookup("answer")]);
    assert_eq!(h.lookup.runs(), 0, "a dry run never runs a tool");
    assert_eq!(h.model.received().len(), 1, "one generation only");
    assert_eq!(h.sent(0), msgs(&[("user", "What is the answer?")]));
    let types = h.events.merged_types();
    assert!(
        !types
            .iter()
            .any(|kind| kind.starts_with("tool.") || kind == "turn.end"),
        "{types:?}"
    );
}

/// A model that never finishes its step (a reply whose gate never opens): the step's time
/// bound stops it, and the turn ends with the sentence saying so, nothing of the step run.
#[tokio::test]
async fn a_step_past_its_time_bound_ends_the_turn_with_a_sentence() {
    let never = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let model = model(vec![Reply::text("It is forty-two.").gated(&never)]);
    let config = AgentConfig::default().with_step_time_max(std::time::Duration::from_secs(1));
    let h = Harness::build(model, config);
    let result = h.run("What is the answer?").await;

    let sentence = imurun_agent::STEP_TIME_SENTENCE.replace("{seconds}", "1");
    assert_eq!(result.status, TurnStatus::Stopped);
    assert_eq!(result.answer, sentence);
    assert_eq!(h.lookup.runs(), 0);
    assert_eq!(h.events.streamed(), sentence);
    assert_eq!(
        h.events.merged_types(),
        ["token", "step:answer", "turn.end"]
    );
}

/// An answer cut off by the step's token bound ends with a note saying so.
#[tokio::test]
async fn an_answer_cut_at_the_token_bound_says_so() {
    let h = Harness::build(
        model(vec![Reply::text(
            "One two three four five six seven eight nine ten eleven twelve.",
        )]),
        AgentConfig::default().with_step_tokens_max(Some(4)),
    );
    let result = h.run("Count for me.").await;
    let note = imurun_agent::STEP_TOKENS_NOTE.replace("{tokens}", "4");
    assert_eq!(result.status, TurnStatus::Done);
    assert!(
        result.answer.ends_with(&format!("\n\n{note}")),
        "{}",
        result.answer
    );
    assert!(h.events.streamed().ends_with(&note));
}

/// Each call of a step is shown with what became of it, once the step's calls ended, and
/// `turn.end` counts them apart: a call that ran, a repeat served from the cache, and a call
/// whose arguments do not fit its tool (refused, never run).
#[tokio::test]
async fn a_step_shows_what_became_of_each_call_and_the_end_counts_them() {
    let h = Harness::new(vec![
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```"),
        Reply::text(
            "```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```\n\
             ```tool\n{\"name\": \"lookup\", \"args\": {\"key\": {\"deep\": [1, 2]}}}\n```",
        ),
        Reply::text("It is 42."),
    ]);
    let result = h.run("What is the answer?").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(h.lookup.runs(), 1);
    let events = h.events.all();
    let steps: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            imurun_core::Event::Step { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(steps[0], "Using `lookup` {\"key\": \"k\"}");
    assert!(
        steps[1]
            .starts_with("Served from the cache: `lookup` {\"key\": \"k\"}\n\nNot run: `lookup`"),
        "{}",
        steps[1]
    );
    assert!(!steps[1].contains("Using"), "{}", steps[1]);
    let Some(imurun_core::Event::TurnEnd {
        tool_calls,
        calls_ran,
        calls_cached,
        calls_refused,
        ..
    }) = events.last()
    else {
        panic!("the turn ends with turn.end: {events:?}");
    };
    assert_eq!(
        (*tool_calls, *calls_ran, *calls_cached, *calls_refused),
        (3, 1, 1, 1)
    );
}

/// The steps' texts of a turn, in order.
fn step_texts(h: &Harness) -> Vec<String> {
    h.events
        .all()
        .iter()
        .filter_map(|event| match event {
            imurun_core::Event::Step { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// A call a person declines (here nobody is there to ask) ends the turn: the calls after it
/// in its step are not made, the model is not asked again, and the answer, made by the loop,
/// says what was declined.
#[tokio::test]
async fn a_declined_call_ends_the_turn_and_nothing_after_it_runs() {
    let h = Harness::with_write_tool(vec![
        Reply::text(
            "```tool\n{\"name\": \"save\", \"args\": {\"key\": \"milk\"}}\n```\n\
             ```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```",
        ),
        Reply::text("I saved it anyway."),
    ]);
    h.events.set_subscribed(false);
    let result = h.run("Save milk, then look up k.").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(
        result.answer,
        "Nothing was done: `save` was declined, so it did not run."
    );
    assert_eq!(h.model.received().len(), 1, "the model was asked again");
    assert_eq!(h.lookup.runs(), 0);
    let steps = step_texts(&h);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(steps[0].starts_with("Not run: `save`"), "{}", steps[0]);
    assert!(
        steps[0].ends_with(&format!(
            "Not run: `lookup` {{\"key\": \"k\"}} — {}",
            imurun_agent::AFTER_DECLINE_REASON
        )),
        "{}",
        steps[0]
    );
    assert_eq!(steps[1], result.answer);
    assert_eq!(h.events.streamed(), result.answer);
    let Some(imurun_core::Event::TurnEnd {
        tool_calls,
        calls_ran,
        calls_refused,
        ..
    }) = h.events.all().last().cloned()
    else {
        panic!("the turn ends with turn.end");
    };
    assert_eq!((tool_calls, calls_ran, calls_refused), (2, 0, 2));
}

/// Declined after other calls of the turn ran: the answer says the turn stopped there, and
/// what ran stands.
#[tokio::test]
async fn a_call_declined_after_work_says_the_turn_stopped_there() {
    let h = Harness::with_write_tool(vec![
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```"),
        Reply::text("```tool\n{\"name\": \"save\", \"args\": {\"key\": \"k is 42\"}}\n```"),
        Reply::text("Saved."),
    ]);
    h.events.set_subscribed(false);
    let result = h.run("Look up k and save what it is.").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(
        result.answer,
        imurun_agent::DECLINED_AFTER_WORK_SENTENCE.replace("{tool}", "`save`")
    );
    assert_eq!(h.lookup.runs(), 1);
    assert_eq!(h.model.received().len(), 2, "the model was asked again");
}
