//! Grounded answers with a scripted model: an answer that leaves out what a tool returned is
//! sent back once with the result quoted, then made from the result; invented results,
//! copied headers, worked-example values and a wrong identity never become the answer.

use std::sync::Arc;

use imurun_agent::{AgentConfig, AgentLoop, DEFAULT_PERSONA, TurnRequest, TurnResult};
use imurun_core::{
    ClaimKind, Event, Facts, GroundingAction, Message, ToolCategory, TurnStatus, clock_time_forms,
    date_forms,
};
use imurun_exec::{Registry, ToolExecutor};
use imurun_policy::{Mode, Settings, Toggles};
use imurun_testkit::{Behaviour, FakeTool};

use crate::support::{RecordingAudit, RecordingEvents, Reply, TempWorkspace, TestModel, model};

const TIME_TEXT: &str = "Tuesday, 1 December 2026, 13:09:41 CET (Europe/Oslo, UTC+01:00)";
const TIME_SENTENCE: &str = "It is 13:09 on Tuesday, 1 December 2026 (Europe/Oslo).";

fn time_facts() -> Facts {
    Facts::new(TIME_SENTENCE)
        .require("the time", clock_time_forms(13, 9))
        .require("the date", date_forms(2026, 12, 1))
        .only(ClaimKind::ClockTime, vec!["13:09".into()])
        .only(ClaimKind::Weekday, vec!["Tuesday".into()])
        .only(ClaimKind::Date, vec!["2026-12-01".into()])
}

fn listing_facts() -> Facts {
    Facts::new("The workspace holds 2 entries: groceries.txt and notes/.")
        .require("the name groceries.txt", vec!["groceries.txt".into()])
        .require("the name notes/", vec!["notes".into()])
        .only(
            ClaimKind::FileName,
            vec!["groceries.txt".into(), "notes".into()],
        )
}

/// A real executor over fakes with the built-in specs of `get_time`, `list_dir` and
/// `file_read`, whose results carry facts as the real tools' do.
struct Setup {
    _ws: TempWorkspace,
    model: Arc<TestModel>,
    events: Arc<RecordingEvents>,
    file_read: Arc<FakeTool>,
    agent: AgentLoop,
}

impl Setup {
    fn new(script: Vec<Reply>) -> Self {
        Self::with_config(script, AgentConfig::default().with_prefetch(false))
    }

    fn with_config(script: Vec<Reply>, config: AgentConfig) -> Self {
        let ws = TempWorkspace::new();
        let model = model(script);
        let builtin = |spec: imurun_core::ToolSpec, category, behaviour| {
            Arc::new(FakeTool::with_spec(spec, category, behaviour))
        };
        let file_read = builtin(
            imurun_core::builtin::file_read(),
            ToolCategory::Read,
            Behaviour::Answer("milk, eggs".into()),
        );
        let mut registry = Registry::new();
        registry.insert(
            builtin(
                imurun_core::builtin::get_time(),
                ToolCategory::Compute,
                Behaviour::Grounded(TIME_TEXT.into(), time_facts()),
            ),
            true,
        );
        registry.insert(
            builtin(
                imurun_core::builtin::list_dir(),
                ToolCategory::Read,
                Behaviour::Grounded(
                    "the workspace root:\ngroceries.txt  (10 bytes)\nnotes/".into(),
                    listing_facts(),
                ),
            ),
            true,
        );
        registry.insert(file_read.clone(), true);
        let events = RecordingEvents::new(true);
        let executor = Arc::new(ToolExecutor::new(
            registry,
            Arc::clone(&ws.workspace),
            Settings {
                mode: Mode::AllowReads,
                toggles: Toggles::default(),
            },
            events.clone(),
            RecordingAudit::new(),
        ));
        let agent = AgentLoop::new(model.clone(), executor, events.clone()).with_config(config);
        Self {
            _ws: ws,
            model,
            events,
            file_read,
            agent,
        }
    }

    async fn run(&self, prompt: &str) -> TurnResult {
        self.agent
            .run(TurnRequest {
                session_id: Some("s1".into()),
                ..TurnRequest::new(prompt)
            })
            .await
    }

    /// The `answer.grounding` events, as (action, tool, reason).
    fn groundings(&self) -> Vec<(GroundingAction, Option<String>, String)> {
        self.events
            .all()
            .into_iter()
            .filter_map(|event| match event {
                Event::Grounding {
                    action,
                    tool,
                    reason,
                    ..
                } => Some((action, tool, reason)),
                _ => None,
            })
            .collect()
    }

    /// The last message of request `n`.
    fn last_sent(&self, n: usize) -> String {
        self.model.received()[n]
            .last()
            .map(|message| message.content.clone())
            .unwrap_or_default()
    }
}

const CALL_TIME: &str = "```tool\n{\"name\": \"get_time\", \"args\": {}}\n```";

#[tokio::test]
async fn an_answer_without_the_results_facts_is_retried_with_the_result_quoted() {
    let s = Setup::new(vec![
        Reply::text(CALL_TIME),
        Reply::text("It is Monday."),
        Reply::text("It is 13:09 on 1 December 2026."),
    ]);
    let result = s.run("What time is it?").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, "It is 13:09 on 1 December 2026.");
    assert_eq!(
        result.transcript,
        [Message::assistant("It is 13:09 on 1 December 2026.")]
    );
    let correction = s.last_sent(2);
    assert!(
        correction.starts_with(
            "[note] Your answer is not right: the answer left out the time that get_time \
             returned.\n[tool result: get_time] said:\nTuesday, 1 December 2026, 13:09:41"
        ),
        "{correction}"
    );
    assert_eq!(
        s.groundings(),
        [(
            GroundingAction::Retry,
            Some("get_time".into()),
            "the answer left out the time that get_time returned".into()
        )]
    );
    assert_eq!(
        s.events.merged_types(),
        [
            "tool.call",
            "tool.result",
            "step:tool",
            "answer.checking",
            "step:correction",
            "answer.grounding",
            "answer.checking",
            "token",
            "step:answer",
            "turn.end"
        ]
    );
    // The rejected answer never streamed: only the checked one did, in one piece.
    assert_eq!(s.events.streamed(), "It is 13:09 on 1 December 2026.");
}

#[tokio::test]
async fn a_second_answer_without_the_facts_falls_back_to_the_result() {
    let s = Setup::new(vec![
        Reply::text(CALL_TIME),
        Reply::text("It is Monday."),
        Reply::text("[tool result: get_time] 21:04, Monday (Asia/Tokyo)"),
    ]);
    let result = s.run("What time is it?").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, TIME_SENTENCE);
    assert_eq!(result.transcript, [Message::assistant(TIME_SENTENCE)]);
    let actions: Vec<GroundingAction> = s.groundings().into_iter().map(|(a, ..)| a).collect();
    assert_eq!(actions, [GroundingAction::Retry, GroundingAction::Fallback]);
    assert_eq!(s.events.streamed(), TIME_SENTENCE);
    assert_eq!(result.steps, 3);
}

#[tokio::test]
async fn on_the_last_step_a_failing_answer_falls_back_at_once() {
    let s = Setup::with_config(
        vec![Reply::text(CALL_TIME), Reply::text("No idea, sorry.")],
        AgentConfig::default()
            .with_prefetch(false)
            .with_max_steps(2),
    );
    let result = s.run("What time is it?").await;
    assert_eq!(result.answer, TIME_SENTENCE);
    let actions: Vec<GroundingAction> = s.groundings().into_iter().map(|(a, ..)| a).collect();
    assert_eq!(actions, [GroundingAction::Fallback]);
}

#[tokio::test]
async fn a_result_no_tool_returned_is_invented_and_never_the_answer() {
    let invented = "[tool result: list_dir] listing.txt, list.csv, list.json, …";
    let s = Setup::new(vec![
        Reply::text(invented),
        Reply::text(
            "```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"groceries.txt\"}}\n```",
        ),
        Reply::text("groceries.txt says: milk, eggs."),
    ]);
    let result = s.run("Read groceries.txt").await;
    assert_eq!(result.answer, "groceries.txt says: milk, eggs.");
    assert!(
        s.last_sent(1)
            .contains("No list_dir result exists in this conversation"),
        "{}",
        s.last_sent(1)
    );
    assert_eq!(
        s.groundings()[0].2,
        "the answer held a result of list_dir, which did not run"
    );
    assert!(!s.events.streamed().contains("listing.txt"));
}

#[tokio::test]
async fn a_copied_result_header_is_taken_out_of_a_right_answer() {
    let s = Setup::new(vec![
        Reply::text(CALL_TIME),
        Reply::text("```\n[tool result: get_time]\nIt is 13:09 on Tuesday, 1 December 2026.\n```"),
    ]);
    let result = s.run("What time is it?").await;
    assert_eq!(result.answer, "It is 13:09 on Tuesday, 1 December 2026.");
    assert!(s.groundings().is_empty());
}

#[tokio::test]
async fn a_worked_examples_values_never_answer_about_this_persons_world() {
    // The list_dir example shows example.txt and photos/.
    let s = Setup::new(vec![
        Reply::text("```tool\n{\"name\": \"list_dir\", \"args\": {}}\n```"),
        Reply::text("You have example.txt and a folder, photos/."),
        Reply::text("You have groceries.txt and a folder, notes/."),
    ]);
    let result = s.run("List the files in my workspace.").await;
    assert_eq!(
        result.answer,
        "You have groceries.txt and a folder, notes/."
    );
    assert_eq!(
        s.groundings()[0].2,
        "the answer held \"example.txt\" from a worked example, not from this conversation"
    );
}

#[tokio::test]
async fn a_call_holding_an_examples_argument_is_refused_and_nothing_runs() {
    // The file_read example reads example.txt; the person asked for groceries.txt.
    let s = Setup::new(vec![
        Reply::text(
            "```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"example.txt\"}}\n```",
        ),
        Reply::text(
            "```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"groceries.txt\"}}\n```",
        ),
        Reply::text("It says: milk, eggs."),
    ]);
    let result = s.run("What does groceries.txt say?").await;
    assert_eq!(result.answer, "It says: milk, eggs.");
    assert_eq!(s.file_read.runs(), 1, "only the person's file was read");
    assert!(
        s.last_sent(1).contains(
            "[tool result: file_read]\nFAILED: `path` \"example.txt\" comes from the worked \
             example, not from this conversation; nothing ran."
        ),
        "{}",
        s.last_sent(1)
    );
    // The same value is fine when the person said it.
    let s = Setup::new(vec![
        Reply::text(
            "```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"example.txt\"}}\n```",
        ),
        Reply::text("It says: milk, eggs."),
    ]);
    s.run("What does example.txt say?").await;
    assert_eq!(s.file_read.runs(), 1);
}

#[tokio::test]
async fn the_assistant_answers_a_greeting_as_itself() {
    let s = Setup::with_config(
        vec![
            Reply::text("Hello! I'm a human. What's your name?"),
            Reply::text("Hello! I am also human."),
        ],
        AgentConfig::default()
            .with_prefetch(false)
            .with_persona(DEFAULT_PERSONA),
    );
    let result = s.run("Hi! Who are you?").await;
    assert_eq!(
        result.answer,
        "Hello! I'm imurun, a helpful assistant running on your own computer."
    );
    let groundings = s.groundings();
    assert_eq!(groundings.len(), 2);
    assert_eq!(groundings[0].1, None);
    assert!(
        s.last_sent(1)
            .contains("You are imurun, an assistant, not a person"),
        "{}",
        s.last_sent(1)
    );
    // A right greeting passes as it is.
    let s = Setup::with_config(
        vec![Reply::text("Hello! I'm imurun. How can I help?")],
        AgentConfig::default()
            .with_prefetch(false)
            .with_persona(DEFAULT_PERSONA),
    );
    let result = s.run("Hi! Who are you?").await;
    assert_eq!(result.answer, "Hello! I'm imurun. How can I help?");
    assert!(s.groundings().is_empty());
}

/// The pre-fetch's lookup answers the whole prompt: a first answer that does not hold it is
/// made from the result at once, with no second generation.
#[tokio::test]
async fn the_prefetchs_lookup_is_what_a_first_answer_must_hold() {
    let s = Setup::with_config(
        vec![
            Reply::text("The time is 21:04."),
            Reply::text("It is 13:09 on Tuesday, 1 December 2026."),
        ],
        AgentConfig::default(),
    );
    let result = s.run("What time is it now?").await;
    assert_eq!(
        result.answer,
        "It is 13:09 on Tuesday, 1 December 2026 (Europe/Oslo)."
    );
    let groundings = s.groundings();
    assert_eq!(groundings.len(), 1);
    assert_eq!(groundings[0].0, GroundingAction::Fallback);
    assert_eq!(result.steps, 1);
}

#[tokio::test]
async fn answers_with_nothing_to_check_stream_as_before() {
    let s = Setup::new(vec![Reply::text("A poem: roses are red.")]);
    let result = s.run("Write a short poem").await;
    assert_eq!(result.answer, "A poem: roses are red.");
    assert!(s.groundings().is_empty());
    assert_eq!(s.events.streamed(), "A poem: roses are red.");
}

#[tokio::test]
async fn a_call_repeated_after_the_note_ends_the_turn_with_the_results_answer() {
    // The model reads its result, is told once that it repeated the call, and repeats it
    // again: the loop answers from the result instead of running to the step limit.
    let s = Setup::new(vec![
        Reply::text(CALL_TIME),
        Reply::text(CALL_TIME),
        Reply::text(CALL_TIME),
        Reply::text("never asked for"),
    ]);
    let result = s.run("What time is it?").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(result.answer, TIME_SENTENCE);
    assert_eq!(result.steps, 3);
    assert_eq!(s.model.received().len(), 3);
    assert!(
        s.last_sent(2).contains(imurun_agent::REPEATED_CALL_NOTE),
        "{}",
        s.last_sent(2)
    );
    let groundings = s.groundings();
    assert_eq!(groundings.len(), 1, "{groundings:?}");
    assert_eq!(groundings[0].0, GroundingAction::Fallback);
    assert_eq!(groundings[0].1.as_deref(), Some("get_time"));
    assert_eq!(s.events.streamed(), TIME_SENTENCE);
}

#[tokio::test]
async fn a_refused_call_asked_again_counts_as_a_repeat() {
    let example = "```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"example.txt\"}}\n```";
    let s = Setup::new(vec![
        Reply::text(example),
        Reply::text(example),
        Reply::text(example),
        Reply::text("never asked for"),
    ]);
    let result = s.run("What does groceries.txt say?").await;
    assert_eq!(result.status, TurnStatus::Done);
    assert_eq!(s.file_read.runs(), 0, "the example's file was never read");
    assert_eq!(s.model.received().len(), 3);
    // Nothing answered the question, and the answer says so; the refusal is the loop's own
    // note to the model, and its example value never reaches the person.
    assert_eq!(
        result.answer,
        "I could not find that out: no tool gave me the answer, and I will not guess."
    );
}

#[tokio::test]
async fn a_different_call_after_the_note_still_runs() {
    let s = Setup::new(vec![
        Reply::text(CALL_TIME),
        Reply::text(CALL_TIME),
        Reply::text("```tool\n{\"name\": \"list_dir\", \"args\": {}}\n```"),
        Reply::text("groceries.txt and notes/ are there, at 13:09 on 1 December 2026."),
    ]);
    let result = s.run("What time is it, and what is in my workspace?").await;
    assert_eq!(s.model.received().len(), 4);
    assert_eq!(result.status, TurnStatus::Done);
}
