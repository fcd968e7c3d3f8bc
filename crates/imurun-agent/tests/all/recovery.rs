//! What the loop does when the model goes wrong: unreadable and unknown calls, thoughts with
//! no answer, live data from memory, repeated calls, failed tools, too many calls, errors.

use imurun_agent::{
    AgentConfig, CALL_PREFILL, CallPrefill, FINAL_ANSWER_NUDGE, NO_ANSWER_SENTENCE,
    OFFLINE_SENTENCE, REALTIME_NUDGE, REPEATED_CALL_NOTE, TurnRequest,
};
use imurun_calls::parse_tool_calls;
use imurun_core::{CallShape, ModelError, ToolIndex, ToolSpec, TurnStatus};
use serde_json::json;

use crate::support::{Harness, Reply, TestModel, model, msgs};

/// The retry message the parser writes for `raw` with the harness's tools.
fn retry_for(raw: &str) -> String {
    let spec = |name: &str| {
        ToolSpec::new(
            name,
            "",
            json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
        )
    };
    let index = ToolIndex::offering(["lookup", "broken", "huge"].map(spec));
    parse_tool_calls(raw, &index).retry.unwrap()
}

const UNUSABLE: &str = "```tool\nnot json at all\n```";

#[tokio::test]
async fn an_unreadable_call_gets_one_retry_message() {
    let h = Harness::new(vec![Reply::text(UNUSABLE), Reply::text("Plain answer.")]);
    let result = h.run("Look it up").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, "Plain answer.");
    assert_eq!(
        h.sent(1),
        msgs(&[
            ("user", "Look it up"),
            ("assistant", UNUSABLE),
            ("user", &retry_for(UNUSABLE)),
        ])
    );
    assert_eq!(
        h.events.merged_types(),
        ["step:retry", "token", "step:answer", "turn.end"]
    );
}

#[tokio::test]
async fn a_second_failure_is_returned_as_plain_text() {
    let unknown = "Calling it.\n```tool\n{\"name\": \"nope\", \"args\": {}}\n```";
    let h = Harness::new(vec![Reply::text(UNUSABLE), Reply::text(unknown)]);
    let result = h.run("Look it up").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, unknown);
    assert_eq!(h.model.received().len(), 2);
    assert!(retry_for(unknown).contains("There is no tool called `nope`"));
}

#[tokio::test]
async fn a_thought_with_no_answer_gets_one_final_answer_nudge() {
    let h = Harness::new(vec![
        Reply::text("<think>Paris, surely.</think>"),
        Reply::text("Paris."),
    ]);
    let result = h.run("Capital of France?").await;
    assert_eq!(result.answer, "Paris.");
    assert_eq!(
        h.sent(1),
        msgs(&[
            ("user", "Capital of France?"),
            ("assistant", ""),
            ("user", FINAL_ANSWER_NUDGE),
        ])
    );
    assert_eq!(
        h.events.merged_types(),
        ["token", "step:nudge", "token", "step:answer", "turn.end"]
    );
}

#[tokio::test]
async fn a_second_thought_only_reply_is_not_nudged_again() {
    let h = Harness::new(vec![
        Reply::text("<think>Hmm.</think>"),
        Reply::text("<think>Still hmm.</think>"),
    ]);
    let result = h.run("Capital of France?").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, NO_ANSWER_SENTENCE);
    assert_eq!(h.model.received().len(), 2);
}

#[tokio::test]
async fn a_call_inside_the_thought_is_named_in_the_one_nudge_and_never_run() {
    let thought_call = "<think>I should call\n```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```</think>";
    let h = Harness::new(vec![
        Reply::text(thought_call),
        Reply::text(
            "<think>again\n```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"k\"}}\n```</think>",
        ),
    ]);
    let result = h.run("What is k?").await;
    let nudge = retry_for(thought_call);
    assert!(
        nudge.contains("`lookup`") && nudge.contains("inside your thinking"),
        "{nudge}"
    );
    assert_eq!(
        h.sent(1),
        msgs(&[("user", "What is k?"), ("assistant", ""), ("user", &nudge)])
    );
    // One nudge, never two: the second thought-only reply ends the turn.
    assert_eq!(h.model.received().len(), 2);
    assert_eq!(result.answer, NO_ANSWER_SENTENCE);
    assert_eq!(h.lookup.runs(), 0);
    assert_eq!(
        h.events.merged_types(),
        ["token", "step:nudge", "token", "step:answer", "turn.end"]
    );
}

#[tokio::test]
async fn live_data_from_memory_gets_one_realtime_nudge() {
    let h = Harness::new(vec![
        Reply::text("It is sunny and 20 degrees."),
        Reply::text("Live data can't be checked right now."),
    ]);
    let result = h.run("What's the weather in Oslo right now?").await;
    assert_eq!(result.answer, "Live data can't be checked right now.");
    assert_eq!(
        h.sent(1),
        msgs(&[
            ("user", "What's the weather in Oslo right now?"),
            ("assistant", "It is sunny and 20 degrees."),
            ("user", REALTIME_NUDGE),
        ])
    );
    assert_eq!(
        h.events.merged_types(),
        ["token", "step:nudge", "token", "step:answer", "turn.end"]
    );
}

#[tokio::test]
async fn the_realtime_nudge_is_given_once_and_not_after_an_admission_or_a_tool() {
    // Twice from memory: one nudge, then the answer stands.
    let h = Harness::new(vec![Reply::text("Sunny."), Reply::text("Still sunny.")]);
    assert_eq!(h.run("Weather in Oslo now?").await.answer, "Still sunny.");
    assert_eq!(h.model.received().len(), 2);
    // An admission needs no nudge.
    let h = Harness::new(vec![Reply::text("I can't check live weather right now.")]);
    h.run("Weather in Oslo now?").await;
    assert_eq!(h.model.received().len(), 1);
    // A tool result needs no nudge.
    let h = Harness::new(vec![
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"oslo weather\"}}\n```"),
        Reply::text("Sunny, 20 degrees."),
    ]);
    h.run("Weather in Oslo now?").await;
    assert_eq!(h.model.received().len(), 2);
    // A question about the past needs no nudge.
    let h = Harness::new(vec![Reply::text("France won.")]);
    h.run("Who won the World Cup in 1998?").await;
    assert_eq!(h.model.received().len(), 1);
}

#[tokio::test]
async fn pre_fetched_context_counts_as_a_tool_result_unless_it_is_the_offline_sentence() {
    let question = "What's the weather in Oslo right now?";
    let h = Harness::new(vec![Reply::text("Light rain, 4 °C.")]);
    h.run_request(TurnRequest {
        context: Some("get_weather: Oslo, light rain, 4 °C".into()),
        ..TurnRequest::new(question)
    })
    .await;
    assert_eq!(h.model.received().len(), 1, "no nudge");

    let h = Harness::new(vec![Reply::text("Light rain, 4 °C."), Reply::text("Rain.")]);
    h.run_request(TurnRequest {
        context: Some(OFFLINE_SENTENCE.into()),
        ..TurnRequest::new(question)
    })
    .await;
    assert_eq!(h.model.received().len(), 2, "nudged");
}

#[tokio::test]
async fn identical_calls_in_a_turn_are_served_from_the_cache() {
    let h = Harness::new(vec![
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"a\"}}\n```"),
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"a\"}}\n```"),
        Reply::text("```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"b\"}}\n```"),
        Reply::text("Done."),
    ]);
    let result = h.run("Look up a").await;
    assert_eq!(result.answer, "Done.");
    assert_eq!(h.lookup.runs(), 2);
    assert_eq!(result.tool_calls.len(), 3);
    let sent = h.sent(2);
    assert_eq!(sent[2].0, sent[4].0);
    assert_eq!(
        sent[4].1,
        format!("{}\n\n{REPEATED_CALL_NOTE}", sent[2].1),
        "the cached result is the same text, with a note that the call was made already"
    );
    // The cached call runs nothing, so the executor publishes nothing for it.
    assert_eq!(
        h.events.merged_types(),
        [
            "tool.call",
            "tool.result",
            "step:tool",
            "answer.checking",
            "step:tool",
            "answer.checking",
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
async fn a_failed_tool_result_says_not_to_guess_once() {
    let h = Harness::new(vec![
        Reply::text("```tool\n{\"name\": \"broken\", \"args\": {\"key\": \"x\"}}\n```"),
        Reply::text("```tool\n{\"name\": \"broken\", \"args\": {\"key\": \"x\"}}\n```"),
        Reply::text("It failed."),
    ]);
    h.run("Try it").await;
    let expected =
        "[tool result: broken]\nFAILED: no network Do not guess what the tool would have returned.";
    let sent = h.sent(2);
    assert_eq!(sent[2].1, expected);
    assert_eq!(
        sent[4].1,
        format!("{expected}\n\n{REPEATED_CALL_NOTE}"),
        "the cached failure is not suffixed twice"
    );
    let wire = h.events.wire();
    assert_eq!(wire[1]["type"], "tool.result");
    assert_eq!(wire[1]["ok"], false);
    assert_eq!(wire[1]["text"], "FAILED: no network");
}

#[tokio::test]
async fn at_most_three_calls_run_per_step() {
    let four = "```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"1\"}}\n```\n\
                ```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"2\"}}\n```\n\
                ```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"3\"}}\n```\n\
                ```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"4\"}}\n```";
    let h = Harness::new(vec![Reply::text(four), Reply::text("Done.")]);
    let result = h.run("Look up the keys 1, 2, 3 and 4").await;
    assert_eq!(h.lookup.runs(), 3);
    assert_eq!(result.tool_calls.len(), 3);
    let sent = h.sent(1);
    assert_eq!(sent.len(), 5, "prompt, the call message, three results");
    assert!(sent[4].1.ends_with(imurun_agent::CALLS_DROPPED_NOTE));
}

#[tokio::test]
async fn a_model_failure_ends_the_turn_with_an_error() {
    let failure = ModelError::Transport {
        message: "connection refused".into(),
    };
    let h = Harness::new(vec![Reply::fail(failure.clone())]);
    let result = h.run("Hi").await;
    assert_eq!(result.status, TurnStatus::Error);
    assert_eq!(result.error, Some(imurun_agent::AgentError::Model(failure)));
    assert!(result.transcript.is_empty());
    assert_eq!(h.events.merged_types(), ["answer.checking", "turn.end"]);
}

/// A prefilling model, a config with this prefill policy, and the prompt's run with a tool
/// for the present on offer (`fetch_url`: no pre-fetch intent looks anything up with it);
/// returns each request's prefill and the turn's calls.
async fn prefills_for(
    policy: CallPrefill,
    prompt: &str,
    context: Option<&str>,
    prefills: bool,
) -> (Vec<Option<String>>, usize) {
    prefills_with(policy, prompt, context, prefills, &["fetch_url"]).await
}

/// As `prefills_for`, with the lookup tools named `extra` on offer beside `lookup`.
async fn prefills_with(
    policy: CallPrefill,
    prompt: &str,
    context: Option<&str>,
    prefills: bool,
    extra: &[&str],
) -> (Vec<Option<String>>, usize) {
    let script = vec![
        Reply::text("{\"name\": \"lookup\", \"args\": {\"key\": \"now\"}}\n```"),
        Reply::text("It is 09:14."),
    ];
    let model = if prefills {
        TestModel::new(script).prefilling().shared()
    } else {
        model(script)
    };
    let h = Harness::build_with_tools(
        model.clone(),
        AgentConfig::default().with_call_prefill(policy),
        extra,
    );
    let result = h
        .run_request(TurnRequest {
            context: context.map(str::to_owned),
            ..TurnRequest::new(prompt)
        })
        .await;
    (model.prefills(), result.tool_calls.len())
}

#[tokio::test]
async fn a_live_question_starts_its_first_reply_with_the_call_marker() {
    let (prefills, calls) =
        prefills_for(CallPrefill::Live, "What time is it now?", None, true).await;
    assert_eq!(prefills, [Some(CALL_PREFILL.to_owned()), None]);
    assert_eq!(
        calls, 1,
        "the prefilled reply is read as the call it completes"
    );
}

#[tokio::test]
async fn a_live_question_with_no_tool_for_the_present_is_not_started_as_a_call() {
    // Only `lookup` is offered: no call could answer "what time is it", and a started one
    // would be a wrong one.
    let (prefills, _) =
        prefills_with(CallPrefill::Live, "What time is it now?", None, true, &[]).await;
    assert_eq!(prefills.first().cloned().flatten(), None);
}

#[tokio::test]
async fn a_question_that_names_an_offered_tool_starts_its_reply_as_a_call() {
    let (prefills, _) = prefills_with(
        CallPrefill::Live,
        "Convert 10 euros with the currency converter.",
        None,
        true,
        &["currency_converter.convert"],
    )
    .await;
    assert_eq!(
        prefills.first().cloned().flatten(),
        Some(CALL_PREFILL.to_owned())
    );
    // The same question with no such tool on offer is left to the model.
    let (prefills, _) = prefills_with(
        CallPrefill::Live,
        "Convert 10 euros with the currency converter.",
        None,
        true,
        &[],
    )
    .await;
    assert_eq!(prefills.first().cloned().flatten(), None);
}

#[tokio::test]
async fn a_started_call_keeps_to_the_tools_the_question_names() {
    let shapes = |prompt: &'static str| async move {
        let model = TestModel::new(vec![
            Reply::text("{\"name\": \"lookup\", \"args\": {\"key\": \"now\"}}\n```"),
            Reply::text("Done."),
        ])
        .prefilling()
        .shared();
        let h = Harness::build_with_tools(
            model.clone(),
            AgentConfig::default().with_call_prefill(CallPrefill::Live),
            &["currency_converter", "unit_converter"],
        );
        h.run_request(TurnRequest::new(prompt)).await;
        model
            .requests()
            .into_iter()
            .map(|request| request.calls)
            .collect::<Vec<_>>()
    };
    let asked = shapes("Convert 10 euros with the currency converter.").await;
    assert_eq!(
        asked.first().cloned().flatten(),
        Some(CallShape {
            tools: vec!["currency_converter".to_owned()],
            calls_min: 1,
        })
    );
    assert_eq!(
        asked.get(1).cloned().flatten(),
        None,
        "only the first reply"
    );
    let asked =
        shapes("Convert 10 euros with the currency converter, and the same for 20 euros.").await;
    assert_eq!(
        asked
            .first()
            .cloned()
            .flatten()
            .map(|shape| shape.calls_min),
        Some(2)
    );
    // Both converters match "Convert" as well: nothing to narrow to.
    let asked = shapes("Convert 10 euros.").await;
    assert_eq!(asked.first().cloned().flatten(), None);
}

#[tokio::test]
async fn the_call_prefill_follows_its_policy_the_context_and_the_back_end() {
    // (policy, prompt, context, back-end continues replies, first prefill expected)
    let cases = [
        (CallPrefill::Always, "Summarise our plan.", None, true, true),
        (CallPrefill::Live, "Summarise our plan.", None, true, false),
        (CallPrefill::Off, "What time is it now?", None, true, false),
        (
            CallPrefill::Live,
            "What time is it now?",
            Some("get_time: 09:14"),
            true,
            false,
        ),
        (
            CallPrefill::Always,
            "What time is it now?",
            None,
            false,
            false,
        ),
    ];
    for (policy, prompt, context, prefills, expected) in cases {
        let h_prefills = prefills_for(policy, prompt, context, prefills).await.0;
        let first = h_prefills.first().cloned().flatten();
        assert_eq!(
            first.is_some(),
            expected,
            "{policy:?} {prompt:?} context {context:?} back-end prefills {prefills}"
        );
        assert!(
            h_prefills.iter().skip(1).all(Option::is_none),
            "only the first reply is started: {h_prefills:?}"
        );
    }
}

#[tokio::test]
async fn the_same_call_twice_in_one_reply_runs_once() {
    let call = "```tool\n{\"name\": \"lookup\", \"args\": {\"key\": \"a\"}}\n```";
    let twice: &'static str = Box::leak(format!("{call}\n\n{call}").into_boxed_str());
    let h = Harness::new(vec![Reply::text(twice), Reply::text("Done.")]);
    let result = h.run("Look up a").await;
    assert_eq!(result.tool_calls.len(), 1, "{:?}", result.tool_calls);
    assert_eq!(h.lookup.runs(), 1);
}

#[tokio::test]
async fn a_first_call_with_nothing_of_the_question_in_it_does_not_run() {
    let run = |key: &'static str| async move {
        let model = TestModel::new(vec![
            Reply::text(&format!(
                "```tool\n{{\"name\": \"prime_numbers_in_range\", \"args\": {{\"key\": \"{key}\"}}}}\n```"
            )),
            Reply::text("I cannot plan routes."),
        ])
        .shared();
        let h =
            Harness::build_with_tools(model, AgentConfig::default(), &["prime_numbers_in_range"]);
        h.run("Find the fastest route from New York to Boston.")
            .await
    };
    // Neither the tool's name nor its description nor the value is in the question: the
    // model is told why nothing ran, and answers.
    let result = run("103256789").await;
    assert!(result.tool_calls.is_empty(), "{:?}", result.tool_calls);
    assert_eq!(result.answer, "I cannot plan routes.");
    // A value the person gave makes it their call.
    let result = run("Boston").await;
    assert_eq!(result.tool_calls.len(), 1);
}
