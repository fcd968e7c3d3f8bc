//! `fit`: the order in which room is freed, and the property that it always ends correct.

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

use imurun_core::{Event, NullEvents, estimate_tokens};
use proptest::prelude::*;

use super::*;

/// Runs a future that never waits (no summariser, or one that answers at once).
fn now<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("fit waited on something in a test that never wakes it"),
    }
}

fn estimate(messages: &[Message]) -> usize {
    estimate_tokens(messages)
}

#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl EventSink for Recorder {
    fn publish(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
    fn has_subscriber(&self, _: Option<&str>) -> bool {
        false
    }
}

struct Fixed(&'static str);

impl Summariser for Fixed {
    fn summarise<'a>(&'a self, _: &'a [Message]) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move { Some(self.0.to_owned()) })
    }
}

/// An exact-looking counter that disagrees with the estimate: one token per character.
fn per_char(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|message| message.content.chars().count() + 4)
        .sum()
}

fn run(
    messages: &mut Vec<Message>,
    prompt_index: usize,
    limit: usize,
    summariser: Option<&dyn Summariser>,
    events: &dyn EventSink,
) -> Fitted {
    run_counting(messages, prompt_index, limit, summariser, events, &estimate)
}

fn run_counting(
    messages: &mut Vec<Message>,
    prompt_index: usize,
    limit: usize,
    summariser: Option<&dyn Summariser>,
    events: &dyn EventSink,
    count: &TokenCounter<'_>,
) -> Fitted {
    let options = Fit {
        limit,
        count,
        summariser,
        events,
        session_id: Some("s1"),
    };
    now(fit(messages, prompt_index, &options))
}

fn tool_result(name: &str, body_chars: usize) -> Message {
    Message::user(format!(
        "{TOOL_RESULT_HEADER}{name}]\n{}",
        "r".repeat(body_chars)
    ))
}

#[test]
fn the_reserve_budget_and_cap_follow_the_seed() {
    // (limit, reserve, budget, tool result chars)
    let table = [
        (512, 256, 256, 800),
        (2048, 512, 1536, 1792),
        (4096, 1024, 3072, 3584),
        (8192, 2048, 6144, 6000),
        (32768, 2048, 30720, 6000),
        (100, 256, 0, 800),
    ];
    for (limit, reserve_tokens, budget_tokens, chars) in table {
        assert_eq!(reserve(limit), reserve_tokens, "reserve({limit})");
        assert_eq!(budget(limit), budget_tokens, "budget({limit})");
        assert_eq!(tool_result_chars_max(limit), chars, "cap({limit})");
    }
}

#[test]
fn messages_that_fit_are_left_alone_except_the_tool_result_cap() {
    let mut messages = vec![
        Message::system("sys"),
        Message::user("hi"),
        Message::assistant("call"),
        tool_result("big", 10_000),
    ];
    let fitted = run(&mut messages, 1, 100_000, None, &NullEvents);
    assert!(fitted.fits);
    assert_eq!(fitted.compaction, None);
    assert_eq!(
        messages[3].content.chars().count(),
        6000 + CUT_MARKER.chars().count()
    );
    assert_eq!(messages[1].content, "hi");
}

#[test]
fn old_tool_results_are_cut_before_history_is_touched() {
    let mut messages = vec![
        Message::system("sys"),
        Message::user("old question"),
        Message::assistant("old answer"),
        Message::user("prompt"),
        Message::assistant("call one"),
        tool_result("one", 1500),
        Message::assistant("call two"),
        tool_result("two", 500),
    ];
    // 2048 → budget 1536 tokens: the two results (~430 + ~150) and the rest fit once the
    // old one is cut to 400 characters, but not before with a smaller window.
    let fitted = run(&mut messages, 3, 1100, None, &NullEvents);
    assert!(fitted.fits, "{fitted:?}");
    assert_eq!(fitted.compaction, None);
    assert_eq!(messages.len(), 8);
    assert!(messages[5].content.ends_with(CUT_MARKER));
    assert!(!messages[7].content.ends_with(CUT_MARKER));
}

#[test]
fn history_is_summarised_into_the_system_message_with_events() {
    let mut messages = vec![Message::system("sys")];
    for n in 0..40 {
        messages.push(Message::user(format!("question {n} {}", "q".repeat(100))));
        messages.push(Message::assistant(format!(
            "answer {n} {}",
            "a".repeat(100)
        )));
    }
    messages.push(Message::user("the prompt"));
    let prompt_index = messages.len() - 1;
    let events = Recorder::default();
    let fitted = run(
        &mut messages,
        prompt_index,
        1024,
        Some(&Fixed("we talked")),
        &events,
    );
    assert!(fitted.fits);
    assert_eq!(fitted.compaction, Some(CompactionMode::Summarised));
    assert_eq!(
        messages,
        vec![
            Message::system(format!("sys{SUMMARY_HEADING}we talked")),
            Message::user("the prompt"),
        ]
    );
    assert_eq!(fitted.prompt_index, 1);
    let events = events.0.into_inner().unwrap();
    assert!(matches!(
        events[..],
        [
            Event::CompactionStart { messages: 80, .. },
            Event::CompactionDone {
                mode: CompactionMode::Summarised,
                messages: 80,
                ..
            }
        ]
    ));
}

#[test]
fn without_a_summariser_only_the_oldest_history_needed_is_dropped() {
    let mut messages = vec![Message::system("sys")];
    for n in 0..20 {
        messages.push(Message::user(format!("m{n} {}", "x".repeat(200))));
    }
    messages.push(Message::user("the prompt"));
    let events = Recorder::default();
    let fitted = run(&mut messages, 21, 1024, None, &events);
    assert!(fitted.fits);
    assert_eq!(fitted.compaction, Some(CompactionMode::Dropped));
    // Budget 768 tokens; each history message is ~64 tokens: eleven of them stay.
    assert_eq!(messages.len(), 13);
    assert!(messages[1].content.starts_with("m9 "));
    assert_eq!(messages[fitted.prompt_index].content, "the prompt");
    // One more message would not have fitted: the fewest were dropped.
    let mut one_more = messages.clone();
    one_more.insert(1, Message::user(format!("m8 {}", "x".repeat(200))));
    assert!(estimate(&one_more) > fitted.budget);
}

#[test]
fn a_prompt_too_long_for_the_window_ends_trimmed_around_it_and_reported() {
    let prompt = "p".repeat(10_000);
    let mut messages = vec![
        Message::system("s".repeat(3000)),
        Message::user("old"),
        Message::user(prompt.clone()),
        Message::assistant("a".repeat(3000)),
    ];
    let fitted = run(&mut messages, 2, 1024, None, &NullEvents);
    assert!(!fitted.fits);
    assert_eq!(
        messages,
        vec![
            Message::system(TRIM_MARKER),
            Message::user(prompt),
            Message::assistant(TRIM_MARKER),
        ]
    );
}

#[test]
fn the_longest_message_is_trimmed_last_and_keeps_its_head() {
    let mut messages = vec![
        Message::system(format!("HEAD{}", "s".repeat(4000))),
        Message::user("prompt"),
    ];
    let fitted = run(&mut messages, 1, 1024, None, &NullEvents);
    assert!(fitted.fits);
    assert!(messages[0].content.starts_with("HEAD"));
    assert!(messages[0].content.ends_with(TRIM_MARKER));
    assert!(estimate(&messages) <= fitted.budget);
}

/// A message with an id, so the order can be checked after cuts and trims.
fn arbitrary_message(id: usize) -> impl Strategy<Value = Message> {
    (0..3u8, 0..3000usize).prop_map(move |(kind, chars)| {
        let body = "w".repeat(chars);
        match kind {
            0 => Message::user(format!("#{id} {body}")),
            1 => Message::assistant(format!("#{id} {body}")),
            _ => Message::user(format!("{TOOL_RESULT_HEADER}t]#{id} {body}")),
        }
    })
}

fn arbitrary_turn() -> impl Strategy<Value = (Vec<Message>, usize, usize)> {
    (
        0..30usize,
        0..6usize,
        0..4000usize,
        0..8000usize,
        300..9000usize,
    )
        .prop_flat_map(|(history, after, system_chars, prompt_chars, limit)| {
            let before: Vec<_> = (1..=history).map(arbitrary_message).collect();
            let tail: Vec<_> = (0..after)
                .map(|n| arbitrary_message(history + 2 + n))
                .collect();
            (before, tail).prop_map(move |(before, tail)| {
                let mut messages =
                    vec![Message::system(format!("#0 {}", "s".repeat(system_chars)))];
                messages.extend(before);
                let prompt_index = messages.len();
                messages.push(Message::user(format!("#P {}", "p".repeat(prompt_chars))));
                messages.extend(tail);
                (messages, prompt_index, limit)
            })
        })
}

/// The messages at their least: history gone, everything but the prompt at the marker.
fn least(messages: &[Message], prompt_index: usize) -> Vec<Message> {
    let marker_chars = TRIM_MARKER.chars().count();
    let at_least = |message: &Message| {
        let mut message = message.clone();
        if message.content.chars().count() > marker_chars {
            message.content = TRIM_MARKER.to_owned();
        }
        message
    };
    let mut out = vec![at_least(&messages[0])];
    out.extend(
        messages[prompt_index..]
            .iter()
            .enumerate()
            .map(|(at, message)| {
                if at == 0 {
                    message.clone()
                } else {
                    at_least(message)
                }
            }),
    );
    out
}

/// Each kept message's id, in order; a message trimmed to the marker has lost its id.
fn ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| {
            let at = message.content.find('#')?;
            let id: String = message.content[at + 1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            // A head trimmed inside the id leaves a partial one: too little to check.
            (!id.is_empty() && message.content[at + 1..].starts_with(&format!("{id} ")))
                .then_some(id)
        })
        .collect()
}

proptest! {
    #[test]
    fn fit_keeps_the_prompt_and_the_order_and_fits_whenever_the_prompt_can(
        (original, prompt_index, limit) in arbitrary_turn(),
        exact in any::<bool>(),
    ) {
        // Either the seed's estimate or a counter that disagrees with it: `fit` must hold
        // for whatever the model counts.
        let count: &TokenCounter<'_> = if exact { &per_char } else { &estimate };
        let mut messages = original.clone();
        let fitted = run_counting(&mut messages, prompt_index, limit, None, &NullEvents, count);

        prop_assert_eq!(&messages[fitted.prompt_index], &original[prompt_index]);
        prop_assert_eq!(fitted.tokens, count(&messages));
        prop_assert_eq!(fitted.fits, fitted.tokens <= fitted.budget);
        if count(&least(&original, prompt_index)) <= budget(limit) {
            prop_assert!(fitted.fits, "least fits but the result does not: {:?}", fitted);
        }
        // Order: the surviving ids are a subsequence of the original ids.
        let original_ids = ids(&original);
        let mut remaining = original_ids.iter();
        for id in ids(&messages) {
            prop_assert!(remaining.any(|candidate| *candidate == id), "{} out of order", id);
        }
        // Nothing after the prompt is ever removed.
        prop_assert_eq!(messages.len() - fitted.prompt_index, original.len() - prompt_index);
    }
}
