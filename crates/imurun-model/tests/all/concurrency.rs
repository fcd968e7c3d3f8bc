//! One model shared by concurrent sessions: every reply is given exactly once, in call order.

use std::sync::Arc;

use imurun_core::{Model, ModelError};
use imurun_model::{Reply, Script, ScriptedModel};

use crate::common::{answer, ask, generate};

const CALLS_PER_TASK: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_share_one_script_with_no_reply_lost_or_duplicated() {
    let texts: Vec<String> = (0..2 * CALLS_PER_TASK)
        .map(|n| format!("reply {n}"))
        .collect();
    let model = Arc::new(ScriptedModel::from_texts(&texts).unwrap());
    let task = |model: Arc<ScriptedModel>| async move {
        let mut numbers = Vec::new();
        for _ in 0..CALLS_PER_TASK {
            let text = answer(&model, &ask("go")).await;
            numbers.push(text["reply ".len()..].parse::<usize>().unwrap());
            tokio::task::yield_now().await;
        }
        numbers
    };
    let (first, second) = tokio::join!(
        tokio::spawn(task(Arc::clone(&model))),
        tokio::spawn(task(Arc::clone(&model)))
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    for numbers in [&first, &second] {
        assert!(
            numbers.is_sorted(),
            "each task gets replies in its call order"
        );
    }
    let mut all: Vec<usize> = first.into_iter().chain(second).collect();
    all.sort_unstable();
    assert_eq!(all, (0..2 * CALLS_PER_TASK).collect::<Vec<_>>());
    assert_eq!(model.replies_left(), 0);
    assert_eq!(model.request_count(), 2 * CALLS_PER_TASK);
    let (result, _) = generate(&model, &ask("go")).await;
    assert!(matches!(result, Err(ModelError::Protocol { .. })));
}

/// The reply is taken when `generate` is called, so a slow reply taken first does not let a
/// later call overtake it in the script.
#[tokio::test(start_paused = true)]
async fn replies_are_taken_in_call_order_not_completion_order() {
    let model = Script::new([Reply::text("slow").delay_ms(1000), Reply::text("fast")])
        .unwrap()
        .model();
    let (first_request, second_request) = (ask("one"), ask("two"));
    let mut ignore_first = |_: &str| {};
    let mut ignore_second = |_: &str| {};
    let first = model.generate(&first_request, &mut ignore_first);
    let second = model.generate(&second_request, &mut ignore_second);
    let (first, second) = tokio::join!(first, second);
    assert_eq!(
        (first.unwrap().as_str(), second.unwrap().as_str()),
        ("slow", "fast")
    );
}

#[tokio::test]
async fn fresh_models_from_one_script_replay_independently_across_tasks() {
    let script = Script::from_texts(["hello", "bye"]).unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let model = script.model();
        tasks.push(tokio::spawn(async move {
            vec![
                answer(&model, &ask("a")).await,
                answer(&model, &ask("b")).await,
            ]
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), ["hello", "bye"]);
    }
}
