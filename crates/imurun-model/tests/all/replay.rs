//! Replaying a script: order, streaming, delays, failures, stop, `max_tokens`, conditions,
//! running out, and the requests the model saw.

use std::time::Duration;

use imurun_core::{GenerateRequest, Message, Model, ModelError};
use imurun_model::{Reply, Script, ScriptedModel};
use tokio::time::Instant;

use crate::common::{answer, ask, generate};

#[tokio::test]
async fn replies_come_back_in_script_order() {
    let model = ScriptedModel::from_texts(["first", "second reply", "third"]).unwrap();
    for expect in ["first", "second reply", "third"] {
        assert_eq!(answer(&model, &ask("go")).await, expect);
    }
    assert_eq!(model.replies_left(), 0);
}

#[tokio::test]
async fn text_streams_word_by_word_and_tokens_stream_as_given() {
    let cases: Vec<(Reply, &[&str])> = vec![
        (
            Reply::text("Hello, big world"),
            &["Hello,", " big", " world"],
        ),
        (Reply::text(""), &[]),
        (
            Reply::tokens(["He", "llo", " wor", "ld"]),
            &["He", "llo", " wor", "ld"],
        ),
        (
            Reply::text("```tool\n{\"name\": \"get_time\", \"args\": {}}\n```"),
            &[
                "```tool",
                "\n{\"name\":",
                " \"get_time\",",
                " \"args\":",
                " {}}",
                "\n```",
            ],
        ),
    ];
    for (reply, expect) in cases {
        let model = Script::new([reply]).unwrap().model();
        let (result, pieces) = generate(&model, &ask("go")).await;
        assert_eq!(pieces, expect);
        assert_eq!(result.unwrap(), expect.concat());
    }
}

#[tokio::test(start_paused = true)]
async fn delays_come_before_the_first_piece_and_between_pieces() {
    let reply = Reply::tokens(["a", "b", "c"])
        .delay_ms(500)
        .token_delay_ms(30);
    let model = Script::new([reply]).unwrap().model();
    let start = Instant::now();
    let mut offsets_ms = Vec::new();
    let mut on_token = |_: &str| offsets_ms.push(start.elapsed().as_millis());
    let result = model.generate(&ask("go"), &mut on_token).await;
    assert_eq!(result.unwrap(), "abc");
    // The clock is Tokio's paused test clock, so these are exact and take no wall time.
    assert_eq!(offsets_ms, [500, 530, 560]);
    assert_eq!(
        start.elapsed().as_millis(),
        560,
        "no delay after the last piece"
    );
}

#[tokio::test]
async fn a_reply_fails_on_cue_with_its_error_after_its_pieces() {
    let errors = [
        ModelError::Transport {
            message: "connection reset".into(),
        },
        ModelError::RateLimited {
            retry_after_ms: Some(1500),
        },
        ModelError::RateLimited {
            retry_after_ms: None,
        },
        ModelError::ContextOverflow {
            tokens: 9000,
            limit: 8192,
        },
        ModelError::Protocol {
            message: "bad frame".into(),
        },
    ];
    for error in errors {
        let model = Script::new([
            Reply::error(error.clone()),
            Reply::text("partial answer").then_error(error.clone()),
            Reply::text("recovered"),
        ])
        .unwrap()
        .model();
        let (result, pieces) = generate(&model, &ask("go")).await;
        assert_eq!(result, Err(error.clone()));
        assert!(pieces.is_empty());
        let (result, pieces) = generate(&model, &ask("go")).await;
        assert_eq!(result, Err(error));
        assert_eq!(
            pieces,
            ["partial", " answer"],
            "pieces stream before the failure"
        );
        assert_eq!(answer(&model, &ask("go")).await, "recovered");
    }
}

#[tokio::test]
async fn stop_between_pieces_returns_what_was_streamed() {
    let model = Script::new([
        Reply::text("one two three four").then_error(ModelError::Protocol {
            message: "never raised: the stream was stopped first".into(),
        }),
        Reply::text("next"),
    ])
    .unwrap()
    .model();
    let request = ask("go");
    let stop = request.stop.clone();
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| {
        pieces.push(piece.to_owned());
        if pieces.len() == 2 {
            stop.stop();
        }
    };
    let result = model.generate(&request, &mut on_token).await;
    assert_eq!(result.unwrap(), "one two");
    assert_eq!(pieces, ["one", " two"]);
    assert_eq!(
        answer(&model, &ask("go")).await,
        "next",
        "the stopped reply was used"
    );
}

#[tokio::test]
async fn a_request_stopped_before_it_starts_streams_nothing() {
    let model = ScriptedModel::from_texts(["never streamed"]).unwrap();
    let request = ask("go");
    request.stop.stop();
    let (result, pieces) = generate(&model, &request).await;
    assert_eq!(result.unwrap(), "");
    assert!(pieces.is_empty());
}

#[tokio::test(start_paused = true)]
async fn stop_during_a_long_delay_ends_the_wait() {
    let model = Script::new([Reply::text("late").delay_ms(60_000)])
        .unwrap()
        .model();
    let request = ask("go");
    let stop = request.stop.clone();
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stop.stop();
    });
    let start = Instant::now();
    let (result, pieces) = generate(&model, &request).await;
    stopper.await.unwrap();
    assert_eq!(result.unwrap(), "");
    assert!(pieces.is_empty());
    // The delay ends as soon as the flag is set, on Tokio's paused clock.
    assert!(
        start.elapsed() < Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn max_tokens_counts_pieces() {
    let failing = || {
        Reply::text("a b c").then_error(ModelError::Transport {
            message: "dropped".into(),
        })
    };
    let cases: Vec<(Reply, Option<usize>, Result<&str, ()>)> = vec![
        (Reply::text("a b c d"), Some(2), Ok("a b")),
        (Reply::text("a b c d"), Some(0), Ok("")),
        (Reply::text("a b c d"), Some(4), Ok("a b c d")),
        (Reply::text("a b c d"), Some(99), Ok("a b c d")),
        (Reply::text("a b c d"), None, Ok("a b c d")),
        // Cut short before the failure, the reply does not fail.
        (failing(), Some(2), Ok("a b")),
        (failing(), Some(3), Err(())),
    ];
    for (reply, max_tokens, expect) in cases {
        let model = Script::new([reply]).unwrap().model();
        let mut request = ask("go");
        request.max_tokens = max_tokens;
        let (result, pieces) = generate(&model, &request).await;
        match expect {
            Ok(text) => {
                assert_eq!(result.unwrap(), text, "max_tokens {max_tokens:?}");
                assert_eq!(pieces.concat(), text);
            }
            Err(()) => assert!(result.is_err(), "max_tokens {max_tokens:?}"),
        }
    }
}

#[tokio::test]
async fn a_condition_picks_the_reply_for_the_prompt_and_others_wait_their_turn() {
    let model = Script::new([
        Reply::text("It is 14:05.").when_last_user_contains("[tool result: get_time]"),
        Reply::text("```tool\n{\"name\": \"get_time\", \"args\": {}}\n```")
            .when_last_user_contains("time"),
        Reply::text("Hello!"),
        Reply::text("Bye."),
    ])
    .unwrap()
    .model();
    let cases = [
        ("hi", "Hello!"),
        (
            "what time is it?",
            "```tool\n{\"name\": \"get_time\", \"args\": {}}\n```",
        ),
        ("[tool result: get_time]\n14:05", "It is 14:05."),
        ("what time is it now?", "Bye."),
    ];
    for (prompt, expect) in cases {
        assert_eq!(
            answer(&model, &ask(prompt)).await,
            expect,
            "prompt {prompt:?}"
        );
    }
}

#[tokio::test]
async fn running_out_is_a_protocol_error_and_uses_nothing() {
    let model = Script::new([Reply::text("only for weather").when_last_user_contains("weather")])
        .unwrap()
        .model();
    let (result, _) = generate(&model, &ask("hello")).await;
    assert_eq!(
        result,
        Err(ModelError::Protocol {
            message: "the script has no reply left for this request: none of the 1 unused \
                      replies matches its last user message"
                .into()
        })
    );
    assert_eq!(answer(&model, &ask("weather?")).await, "only for weather");
    let (result, _) = generate(&model, &ask("weather?")).await;
    assert_eq!(
        result,
        Err(ModelError::Protocol {
            message: "the script has no reply left: all 1 were used".into()
        })
    );
}

#[tokio::test]
async fn a_fallback_answers_whatever_the_script_has_no_reply_for() {
    let model = Script::from_texts(["scripted"])
        .unwrap()
        .with_fallback(Reply::text("I have nothing more to say."))
        .unwrap()
        .model();
    assert_eq!(answer(&model, &ask("a")).await, "scripted");
    for _ in 0..3 {
        assert_eq!(
            answer(&model, &ask("b")).await,
            "I have nothing more to say."
        );
    }
}

#[tokio::test]
async fn every_request_is_recorded_failed_ones_too() {
    let model = Script::from_texts(["a"])
        .unwrap()
        .with_context_limit(20)
        .model();
    let first = vec![Message::system("be brief"), Message::user("hi")];
    let too_long = vec![Message::user("x".repeat(100))];
    let after = vec![Message::user("still there?")];
    for messages in [&first, &too_long, &after] {
        let _ = generate(&model, &GenerateRequest::new(messages.clone())).await;
    }
    assert_eq!(model.requests(), [first, too_long, after]);
    assert_eq!(model.request_count(), 3);
}

#[tokio::test]
async fn only_the_newest_requests_are_kept() {
    let model = Script::new([])
        .unwrap()
        .with_fallback(Reply::text("ok"))
        .unwrap()
        .model();
    let total = imurun_model::REQUESTS_KEPT_MAX + 5;
    for call in 0..total {
        answer(&model, &ask(&call.to_string())).await;
    }
    let requests = model.requests();
    assert_eq!(requests.len(), imurun_model::REQUESTS_KEPT_MAX);
    assert_eq!(requests[0], [Message::user("5")]);
    assert_eq!(model.request_count(), total);
}

#[tokio::test]
async fn a_prompt_over_the_context_limit_fails_like_a_real_back_end_and_uses_no_reply() {
    // 15 characters -> 5 tokens, + 6 for the message: 11 tokens.
    let messages = vec![Message::user("fifteen chars!!")];
    let cases = [(11, true, true), (10, true, false), (10, false, true)];
    for (context_limit, enforce, answers) in cases {
        let model = Script::from_texts(["fine"])
            .unwrap()
            .with_context_limit(context_limit)
            .with_enforced_context_limit(enforce)
            .model();
        assert_eq!(model.count_tokens(&messages), 11, "the seed's estimate");
        let (result, _) = generate(&model, &GenerateRequest::new(messages.clone())).await;
        if answers {
            assert_eq!(result.unwrap(), "fine");
        } else {
            assert_eq!(
                result,
                Err(ModelError::ContextOverflow {
                    tokens: 11,
                    limit: 10
                })
            );
            assert_eq!(model.replies_left(), 1);
        }
    }
}

#[tokio::test]
async fn a_fresh_clone_replays_from_the_start_with_no_requests() {
    let model = Script::from_texts(["one", "two"])
        .unwrap()
        .with_name("demo")
        .model();
    assert_eq!(answer(&model, &ask("go")).await, "one");
    let fresh = model.clone_fresh();
    assert_eq!(fresh.name(), "demo");
    assert!(fresh.requests().is_empty());
    assert_eq!(answer(&fresh, &ask("go")).await, "one");
    assert_eq!(
        answer(&model, &ask("go")).await,
        "two",
        "the original is untouched"
    );
    assert_eq!(answer(&model.script().model(), &ask("go")).await, "one");
}

#[tokio::test]
async fn name_and_context_limit_come_from_the_script() {
    let model = Script::from_texts(["x"]).unwrap().model();
    assert_eq!((model.name(), model.context_limit()), ("scripted", 8192));
    let model = Script::from_texts(["x"])
        .unwrap()
        .with_name("tiny")
        .with_context_limit(512)
        .model();
    assert_eq!((model.name(), model.context_limit()), ("tiny", 512));
}

/// The loop holds models as `Arc<dyn Model>`.
#[test]
fn a_scripted_model_is_a_shareable_model() {
    fn shareable<T: Model + Send + Sync + 'static>() {}
    shareable::<ScriptedModel>();
    let _: std::sync::Arc<dyn Model> =
        std::sync::Arc::new(ScriptedModel::from_texts(["x"]).unwrap());
}

/// A script without delays needs no async runtime, and a generation completes in one poll:
/// the loop's benchmark measures the loop, not the model.
#[test]
fn a_reply_without_delays_completes_in_one_poll_without_a_runtime() {
    use std::task::{Context, Poll, Waker};

    let model = ScriptedModel::from_texts(["no runtime needed"]).unwrap();
    let request = ask("go");
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| pieces.push(piece.to_owned());
    let mut generation = model.generate(&request, &mut on_token);
    let mut context = Context::from_waker(Waker::noop());
    match generation.as_mut().poll(&mut context) {
        Poll::Ready(result) => assert_eq!(result.unwrap(), "no runtime needed"),
        Poll::Pending => panic!("a reply without delays waited"),
    }
    drop(generation);
    assert_eq!(pieces, ["no", " runtime", " needed"]);
}
